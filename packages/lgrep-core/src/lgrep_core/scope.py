"""Which project a path belongs to, decided once for every shell (CLI, MCP, gRPC): the nearest
folder at or above it that has an index (or is watched), else its git repository's root, else the
folder itself. A search, an index or a watch of a folder inside a project uses that project's index
and, for a search, keeps to the folder asked for, instead of building a second index of the folder.

ADR 0017 records the rule and its limits (a git root that is the home folder or `/` is never taken).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from lgrep_core.models import ProjectState
from lgrep_core.storage.layout import index_state, project_dir

__all__ = ["Scope", "git_root", "project_of_file", "resolve_project", "scoped_glob"]


@dataclass(frozen=True, slots=True)
class Scope:
    """A folder as a project sees it: the project's root, and the folder inside it (None when the
    folder is the root) to which a search keeps."""

    project: Path
    within: str | None = None

    @property
    def folder(self) -> Path:
        return self.project / self.within if self.within else self.project

    def inside(self, folder: Path, doing: str) -> str:
        """What a user is told when the folder they named is answered by the project around it."""
        return f"{folder} is inside the project {self.project}: {doing} that one"


def resolve_project(cache_dir: Path, folder: Path, watched: Collection[Path] = ()) -> Scope:
    """The project `folder` (absolute, resolved) belongs to, and where in it the folder is.

    1. the folder itself or the nearest folder above it with an index, or that the daemon watches;
    2. else the root of the git repository it is in (a `.git` folder or file: worktrees and
       submodules have a file), unless that root is the home folder or `/`;
    3. else the folder itself (a new project).
    """
    project = _indexed_at_or_above(cache_dir, folder, watched)
    if project is None:
        project = git_root(folder) or folder
    rel = folder.relative_to(project).as_posix()
    return Scope(project, None if rel == "." else rel)


def project_of_file(cache_dir: Path, file: Path) -> Path:
    """The project a file (absolute) belongs to: the nearest folder above it with an index, else
    the project of the working directory (a file of a project not indexed yet is named from there)."""
    for folder in file.parents:
        if index_state(project_dir(cache_dir, folder)) is not ProjectState.ABSENT:
            return folder
    return resolve_project(cache_dir, Path.cwd().resolve()).project


def _indexed_at_or_above(cache_dir: Path, folder: Path, watched: Collection[Path]) -> Path | None:
    for candidate in (folder, *folder.parents):
        if candidate in watched or index_state(project_dir(cache_dir, candidate)) is not ProjectState.ABSENT:
            return candidate
    return None


def git_root(folder: Path) -> Path | None:
    """The nearest folder at or above `folder` holding `.git`, unless it is the home folder or `/`
    (a dotfiles repository in the home folder must not turn every folder below it into one project)."""
    home = _home()
    for candidate in (folder, *folder.parents):
        if candidate in (home, candidate.parent):
            return None
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError):  # no HOME and no passwd entry
        return None


def scoped_glob(within: str | None, path_glob: str | None) -> str | None:
    """A search's path filter inside the folder `within`: the folder alone, or the glob below it."""
    if not within:
        return path_glob
    if not path_glob:
        return within
    return f"{within}/{path_glob.strip().removeprefix('./')}"
