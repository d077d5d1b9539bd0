"""Which project a path belongs to, decided once for every shell (CLI, MCP, gRPC): the nearest
folder at or above it that has an index (or is watched), else its git repository's root, else the
folder itself. A search, an index or a watch of a folder inside a project uses that project's index
and, for a search, keeps to the folder asked for, instead of building a second index of the folder.

`project_for` is the one way from a path a user or a client names to the project a command works
on: every command of the CLI, the MCP server (through lgrep_core.app.api.Lgrep.scope) and the gRPC
services call it with what they are about to do (`Purpose`), and the few rules that differ by
purpose (a file, a folder that no longer exists, a repository's releases, removing an index) are
written once, in `_RULES`.

ADR 0017 records the rule and its limits (a git root that is the home folder or `/` is never taken).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from lgrep_core.domain.errors import InvalidRequestError, NotFoundError
from lgrep_core.domain.models import ProjectState
from lgrep_core.storage.layout import index_state, is_remote_location, project_dir

__all__ = ["Purpose", "Scope", "git_root", "project_for", "resolve_project", "scoped_glob"]


@dataclass(frozen=True, slots=True)
class Scope:
    """A folder as a project sees it: the project's root, and the folder inside it (None when the
    folder is the root) to which a search keeps. `note` is what the user is told when the folder
    named is answered by the project around it ("" when it is the project itself)."""

    project: Path
    within: str | None = None
    note: str = field(default="", compare=False)

    @property
    def folder(self) -> Path:
        return self.project / self.within if self.within else self.project

    def inside(self, folder: Path, doing: str) -> str:
        """What a user is told when the folder they named is answered by the project around it."""
        return f"{folder} is inside the project {self.project}: {doing} that one"


class Purpose(StrEnum):
    """What a command is about to do with the project a path names (see `project_for`)."""

    SEARCH = "search"  # lgrep search, lgrep_search, gRPC Search: kept to the folder named
    SYMBOL = "symbol"  # lgrep symbol (kept to the folder)
    TRACE = "trace"  # lgrep trace
    FILES = "files"  # lgrep files (kept to the folder)
    FILE = "file"  # lgrep file, skeleton, related: a file, or the folder --project names
    INDEX = "index"
    CANCEL = "cancel"  # lgrep index --cancel, gRPC CancelIndex
    WATCH = "watch"  # also a watch lease (the MCP server's)
    UNWATCH = "unwatch"
    STATUS = "status"
    STATS = "stats"
    CONFIG = "config"  # lgrep config show: the project's settings
    CLEAN = "clean"  # lgrep clean, gRPC RemoveProject
    RELEASES = "releases"  # components, versions, --component: a repository's indexed releases
    TAGS = "tags"  # lgrep index --tags: index a repository's releases from its git tags


@dataclass(frozen=True, slots=True)
class _Rule:
    """How one purpose takes the path it is given (the defaults: an existing folder, answered by
    the project around it)."""

    doing: str  # the note's words: "<folder> is inside the project <project>: <doing> that one"
    file: bool = False  # a file names the project of the folder it is in (so does a missing path)
    missing: bool = False  # a path that does not exist is taken as named (exact, no project around it)
    around: bool = True  # False: the folder as named (a repository's releases are named by its folder)
    own_index: bool = False  # only the folder's own index: one inside another project's index is refused


_RULES: dict[Purpose, _Rule] = {
    Purpose.SEARCH: _Rule("searching"),
    Purpose.SYMBOL: _Rule("searching"),
    Purpose.TRACE: _Rule("tracing in"),
    Purpose.FILES: _Rule("listing from"),
    # A file deleted since it was indexed still names its project (the engine says it is gone).
    Purpose.FILE: _Rule("reading", file=True),
    Purpose.INDEX: _Rule("indexing"),
    # Runs of a folder deleted meanwhile can still be cancelled, a deleted project still unwatched,
    # and its index removed.
    Purpose.CANCEL: _Rule("cancelling the index runs of", missing=True),
    Purpose.WATCH: _Rule("watching"),
    Purpose.UNWATCH: _Rule("unwatching", missing=True),
    Purpose.STATUS: _Rule("showing"),
    Purpose.STATS: _Rule("showing"),
    Purpose.CONFIG: _Rule("showing the settings of"),
    # Removing a parent's index because a subfolder was named would surprise (ADR 0017): refused,
    # naming the project to remove instead.
    Purpose.CLEAN: _Rule("removing the index of", missing=True, own_index=True),
    # With versions on object storage a repository needs no checkout here: its folder's name
    # picks its folder in the store (`versions_store`).
    Purpose.RELEASES: _Rule("", around=False),
    Purpose.TAGS: _Rule("", around=False),
}


def project_for(
    cache_dir: Path,
    path: Path,
    purpose: Purpose,
    *,
    watched: Collection[Path] = (),
    versions_store: str = "",
) -> Scope:
    """The project a command with `purpose` works on for the `path` a user or a client named
    (relative to the working folder, `~` allowed), and where in it that path is.

    For every purpose, an existing folder is answered by the project it belongs to
    (`resolve_project`: the nearest folder at or above it with an index or in `watched`, else its
    git root, else itself), and the scope's `note` says so when that is not the folder itself. What
    differs by purpose:

    - a file (FILE): the project of the folder the file is in; so is a path that does not exist (a
      file deleted since it was indexed: the engine says so). Any other purpose needs a folder;
    - a path that does not exist: taken as named for CANCEL, UNWATCH and CLEAN (what a deleted
      folder left behind can still be stopped or removed); for RELEASES too when `versions_store`
      (the `versions.store` setting) is on object storage; else a NotFoundError;
    - RELEASES and TAGS: the folder as named, never the project around it (a repository's releases
      are stored under its folder, or its folder's name);
    - CLEAN: the folder's own index only. A folder inside another project's index is an
      InvalidRequestError naming that project, so its index is never removed by naming a subfolder.

    Raises:
        NotFoundError: the path does not exist, or is not a folder, where the purpose needs one.
        InvalidRequestError: CLEAN of a folder inside another project's index.
    """
    rule = _RULES[purpose]
    given = path.expanduser()
    try:
        exists = given.exists()
        named = given.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        raise NotFoundError(f"{given} cannot be resolved: {exc}") from None
    if not exists:
        if rule.missing or (purpose is Purpose.RELEASES and is_remote_location(versions_store)):
            return Scope(named)
        if not rule.file:
            raise NotFoundError(f"{given} is not a directory (nothing is there)")
    if not named.is_dir():
        if not rule.file:
            raise NotFoundError(f"{given} is not a directory")
        folder = next(p for p in named.parents if p.is_dir())  # `/` at least
        return Scope(resolve_project(cache_dir, folder, watched).project)
    if not rule.around:
        return Scope(named)
    scope = resolve_project(cache_dir, named, watched)
    if rule.own_index and scope.within:
        if index_state(project_dir(cache_dir, scope.project)) is ProjectState.ABSENT:
            return Scope(named)  # no index around it either: nothing of another project's is at stake
        raise InvalidRequestError(
            f"{named} has no index of its own: it is inside the project {scope.project}, whose index "
            f"`lgrep clean {scope.project}` removes"
        )
    if scope.within:
        return Scope(scope.project, scope.within, scope.inside(named, rule.doing))
    return scope


def resolve_project(cache_dir: Path, folder: Path, watched: Collection[Path] = ()) -> Scope:
    """The project `folder` (absolute, resolved) belongs to, and where in it the folder is.

    1. the folder itself or the nearest folder above it with an index, or that the daemon watches;
    2. else the root of the git repository it is in (a `.git` folder or file: worktrees and
       submodules have a file), unless that root is the home folder or `/`;
    3. else the folder itself (a new project).

    Commands call `project_for`, which checks the path and applies their purpose's rule first.
    """
    project = _indexed_at_or_above(cache_dir, folder, watched)
    if project is None:
        project = git_root(folder) or folder
    rel = folder.relative_to(project).as_posix()
    return Scope(project, None if rel == "." else rel)


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
