"""Catching at the next query what changed while nobody watched: a branch switch, a pull, a reset.

A watched project is kept fresh by its watcher. One that is not (no agent, no `lgrep watch`, the
daemon stopped meanwhile) can change wholesale with one `git checkout`, and a search would answer
from the other branch. So each full index run records the repository's git state as it was when
the run started (`git_state`: what HEAD names and the commit of its branch; two small reads, no git
process), in `git_state.json` beside the project's generations. Before the daemon answers a
search of a project it does not watch, it compares the state now with the recorded one
(`Freshness.freshen`): when they differ, an incremental run (BM25 first; vectors follow in the
background) brings the index up to date before the search is answered, waiting at most
`FRESHEN_WAIT_S`.

Edits that move no ref (a file saved while nobody watched, `git stash`, `git checkout -- FILE`) are
not caught here: results in those files say `stale`, and a watch (an MCP server's lease, `lgrep
watch`) catches them. A project outside git has no state to compare: the same holds for it. Cost:
docs/benchmarks.md ("Fresh by default").
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lgrep_core.app.scope import git_root
from lgrep_core.domain.errors import LgrepError
from lgrep_core.domain.models import IndexSummary, ProjectState
from lgrep_core.storage.layout import index_state, project_dir

if TYPE_CHECKING:
    from .jobs import IndexJobs

__all__ = ["FRESHEN_WAIT_S", "GIT_STATE_FILE", "Freshness", "git_state", "record_git_state"]

log = logging.getLogger(__name__)

GIT_STATE_FILE = "git_state.json"
# A search waits at most this long for the run that catches up with a branch switch (its BM25
# part: a checkout of a few hundred changed files takes ~1-3 s here); past it, the search answers
# from the index as it is and the run goes on.
FRESHEN_WAIT_S = 15.0

GitState = list[object]


def git_state(root: Path) -> GitState | None:
    """What identifies the commit checked out in the repository holding `root` now, or None outside
    git (or when it cannot be read): what HEAD names and, for a branch, the commit it is at. Equal
    states mean no checkout, pull, reset or commit happened between. The index file is left out on
    purpose: `git status` rewrites it, and every one would cost a needless run."""
    dirs = _git_dirs(root)
    if dirs is None:
        return None
    git_dir, common = dirs
    head = _read(git_dir / "HEAD")
    if head is None:
        _GIT_DIRS.pop(root, None)  # the repository moved or went: look again next time
        return None
    state: GitState = [head]
    if head.startswith("ref: "):
        ref = head[5:].strip()
        commit = _read(common / ref) if ".." not in Path(ref).parts else None
        # A branch whose ref is packed has no file of its own: packed-refs changes when it moves.
        state.append(commit if commit is not None else _stat(common / "packed-refs"))
    return state


def record_git_state(cache_dir: Path, root: Path, state: GitState | None) -> None:
    """Record the git state a full index run of `root` started from (none: forget it)."""
    path = project_dir(cache_dir, root) / GIT_STATE_FILE
    try:
        if state is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"git": state}), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        log.debug("cannot record the git state of %s: %s", root, exc.strerror)


def recorded_git_state(cache_dir: Path, root: Path) -> GitState | None:
    """The git state the last full index run of `root` started from (None: never recorded)."""
    path = _STATE_FILES.get((cache_dir, root))
    if path is None:
        path = _STATE_FILES[(cache_dir, root)] = project_dir(cache_dir, root) / GIT_STATE_FILE
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _RECORDED.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        state = json.loads(path.read_text(encoding="utf-8"))["git"]
        if isinstance(state, list):
            _RECORDED[path] = (key, state)
            return state
    return None


# Where each project's repository keeps HEAD and its refs, found once (a search asks every time);
# and the recorded states, read again only when their file changed.
_GIT_DIRS: dict[Path, tuple[Path, Path]] = {}
_STATE_FILES: dict[tuple[Path, Path], Path] = {}
_RECORDED: dict[Path, tuple[tuple[int, int, int], GitState]] = {}


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of the repository holding `root`, or None outside git."""
    found = _GIT_DIRS.get(root)
    if found is not None:
        return found
    top = git_root(root)
    git_dir = _git_dir(top / ".git") if top is not None else None
    if git_dir is None:
        return None  # not cached: a `git init` later is seen
    found = (git_dir, _common_dir(git_dir))
    _GIT_DIRS[root] = found
    return found


class Freshness:
    """Brings a project that nobody watches up to date before a search when its git state moved."""

    def __init__(
        self,
        cache_dir: Path,
        jobs: IndexJobs,
        watched: Callable[[], set[Path]],
        *,
        writer: Callable[[], bool] = lambda: True,
        wait_s: float = FRESHEN_WAIT_S,
    ) -> None:
        self.cache_dir = cache_dir
        self.jobs = jobs
        self.watched = watched
        self.writer = writer
        self.wait_s = wait_s
        # The states a search already waited for in vain (its run goes on): later searches of the
        # same state answer at once instead of each waiting again.
        self._waited: dict[Path, GitState] = {}
        self._lock = threading.Lock()

    def freshen(self, root: Path) -> bool:
        """Before a search of `root`: True when an index run changed the index first (the caller
        then reads the newest version). Never raises: a search is answered however this goes."""
        try:
            if root in self.watched() or not self.writer():
                return False
            now = git_state(root)
            if now is None or _json_equal(now, recorded_git_state(self.cache_dir, root)):
                with self._lock:
                    self._waited.pop(root, None)
                return False
            if index_state(project_dir(self.cache_dir, root)) is not ProjectState.READY:
                return False  # a first index is the search's own business (lgrep_core.app.api)
            with self._lock:
                if self._waited.get(root) == now and self.jobs.busy(root):
                    return False  # an earlier search waited for this run; it goes on
            log.info("%s changed in git since its last index (a checkout, pull or reset): updating it first", root)
            changed, finished = self._run(root)
            if not finished:
                with self._lock:
                    self._waited[root] = now
            return changed
        except LgrepError as exc:
            log.warning("bringing %s up to date before a search failed: %s", root, exc.message)
        except Exception:
            log.exception("bringing %s up to date before a search failed", root)
        return False

    def _run(self, root: Path) -> tuple[bool, bool]:
        """Run the catch-up and wait for it (at most `wait_s`): (it changed the index, it finished)."""
        # A vector fill going on behind would make the search wait for all of it: it stops at its
        # next commit, and this run's own fill takes over after it.
        self.jobs.cancel_fills(root, "a search needs the index brought up to date first; the vectors follow")
        # A run under way may have walked the tree before the checkout: a new one is needed.
        stream = self.jobs.index(root, wait_vectors=False, join_running=False)
        # Past the wait the search goes on with the index as it is; the run goes on too.
        timer = threading.Timer(self.wait_s, lambda: stream.leave(cancel=False))
        timer.daemon = True
        timer.start()
        try:
            for event in stream:
                if isinstance(event, IndexSummary):
                    return bool(event.files_indexed or event.files_deleted or event.created), True
            return False, False
        finally:
            timer.cancel()


def _git_dir(dot_git: Path) -> Path | None:
    """The git dir a `.git` names: the folder itself, or the one a worktree's `.git` file points at."""
    if dot_git.is_dir():
        return dot_git
    with contextlib.suppress(OSError):
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[7:].strip())
            target = target if target.is_absolute() else dot_git.parent / target
            return target if target.is_dir() else None
    return None


def _common_dir(git_dir: Path) -> Path:
    """Where refs live: a worktree's git dir names the main one in `commondir`."""
    with contextlib.suppress(OSError):
        text = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
        if text:
            common = Path(text)
            return common if common.is_absolute() else git_dir / common
    return git_dir


def _read(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            return f.read(4096).decode("utf-8", errors="replace").strip()
    except OSError:
        return None


def _stat(path: Path) -> list[int]:
    try:
        st = path.stat()
    except OSError:
        return [0, 0, 0]
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _json_equal(state: GitState, recorded: GitState | None) -> bool:
    return recorded is not None and json.loads(json.dumps(state)) == recorded
