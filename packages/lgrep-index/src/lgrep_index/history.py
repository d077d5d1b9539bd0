"""The project's recent git history, mined at index time and kept beside its index
(lgrep_core.domain.history; lgrep_search.history reads it as evidence for task questions).

Each index run compares HEAD with the head of the history it keeps: unchanged, nothing is read; a
descendant (a commit, a pull), only the new commits are read and put in front; anything else (a
branch switch, a rewrite, no history yet), the newest MAX_COMMITS are read again. git runs as
lgrep_index.git runs it for a hostile repository (no hooks, no fsmonitor, no filters). A folder
outside git, a repository without commits, or git failing leaves the project without history: it
is evidence, never needed. A shallow clone gives what it has.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lgrep_core.domain.errors import LgrepError
from lgrep_core.domain.history import MAX_COMMITS, MAX_FILES_PER_COMMIT, MAX_MESSAGE_CHARS, Commit, History
from lgrep_core.storage.layout import read_history, write_history

from .git import GitRepo

__all__ = ["mine_history", "refresh_history"]

log = logging.getLogger(__name__)


def mine_history(root: Path, previous: History | None = None, *, rev: str = "HEAD") -> History | None:
    """The history of `root` (a project folder, perhaps inside a larger repository) at `rev`,
    reusing `previous` when `rev` descends from its head; None outside git or without commits."""
    try:
        repo = GitRepo(root)
        if not _own_git_dir(repo.git_dir, repo.toplevel(root)):
            # A `.git` file can name any repository on the machine; its messages are not this
            # project's to keep (nothing outside the project is read).
            log.debug("no history for %s: its git dir %s belongs to another repository", root, repo.git_dir)
            return None
        head = repo.commit_of(rev)
        if head is None:
            return None
        if previous is not None and previous.head == head:
            return previous
        prefix = repo.prefix(root) if root.is_dir() else ""
        since = previous.head if previous is not None and repo.is_ancestor(previous.head, head) else None
        new = [_commit(c, prefix) for c in repo.log_files(head, MAX_COMMITS, since)]
        kept = previous.commits if since is not None and previous is not None else ()
        commits = tuple([c for c in new if c is not None] + list(kept))[:MAX_COMMITS]
        return History(head, commits, repo.is_shallow())
    except (LgrepError, OSError) as exc:
        log.debug("no history for %s: %s", root, exc)
        return None


def _own_git_dir(git_dir: Path, top: Path) -> bool:
    """Whether the git dir is the work tree's own: inside it (`.git`), a submodule's in a
    superproject's `.git/modules/`, or a linked worktree's in a clone's `.git/worktrees/`."""
    git_dir, top = git_dir.resolve(), top.resolve()
    if git_dir.is_relative_to(top):
        return True
    parts = git_dir.parts
    if ".git" in parts:
        at = len(parts) - 1 - parts[::-1].index(".git")
        kind = parts[at + 1] if at + 1 < len(parts) else ""
        owner = Path(*parts[:at])
        if kind == "modules" and top.is_relative_to(owner):
            return True  # a submodule inside its superproject
        if kind == "worktrees" and at + 3 == len(parts):
            return True  # a linked worktree: .git/worktrees/<name> of a clone
    return False


def _commit(raw: tuple[str, int, str, list[str]], prefix: str) -> Commit | None:
    """A mined commit with its paths made project-relative; None when it changed nothing in the project."""
    sha, when, message, names = raw
    files = [n[len(prefix) :] for n in names if n.startswith(prefix)]
    if not files:
        return None
    return Commit(sha, when, message[:MAX_MESSAGE_CHARS], tuple(files) if len(files) <= MAX_FILES_PER_COMMIT else ())


def refresh_history(index_dir: Path, root: Path) -> History | None:
    """Bring the history kept in `index_dir` up to HEAD (written only when it moved)."""
    previous = read_history(index_dir)
    history = mine_history(root, previous)
    if history is not None and history is not previous:
        try:
            write_history(index_dir, history)
        except OSError as exc:
            log.debug("cannot keep the history of %s: %s", root, exc)
    return history
