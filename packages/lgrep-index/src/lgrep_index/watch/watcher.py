"""Watch a project folder and hand what changed to the indexer, in debounced batches.

`ProjectWatcher(root, walk_options, on_batch)` calls `on_batch(ChangeBatch)` from a thread of its
own (never from watchdog's threads) with the project-relative paths to index again. The daemon runs
one per watched project and feeds the batches to the project's single writer (`Indexer.update`).

**Debounce.** A batch is handed over once no relevant event arrived for `debounce_s` (250 ms), and at
the latest `max_delay_s` (1 s) after its first event, so a stream of edits (a formatter rewriting a
tree, a build touching sources) still flushes every second. Events are coalesced per path: a file
created and deleted again within one batch (an editor's temp file) leaves nothing in it; an atomic
save (write a temp file, rename it over the target) reports the target. While `on_batch` runs, new
events gather for the next batch.

**Only what the walk would index.** Events are judged by the walker's own rules (`PathRules`): a
path in a folder the walk skips (`.git`, `node_modules`, build output, `.gitignore`d folders, a
virtualenv, ...) or a file its ignore rules leave out never reaches a batch, and on Linux such folders
are not even watched. The checks the walk makes on content (binary, size, minified, secrets) and on
the type of a file (symlinks) stay with the indexer, which stats each path.

**When to walk again (`batch.rescan`).** A change to an ignore file, `.git/info/exclude`, or a
folder's cache-tag or virtualenv marker (what the walk considers changed); a change to the
project's `.lgrep.yaml` (also `config_changed`); lost events (the kernel's queue overflowed, more than
`MAX_QUEUED_EVENTS` waiting, an event that could not be handled, a watch that could not be placed);
more than `max_batch_paths` (`MAX_BATCH_PATHS`) paths in one batch, such as a branch switch.

**Folders.** A folder deleted or renamed away is reported in `removed_prefixes` (every indexed path
under it is to be checked again); a folder created or moved in is listed at once and its files are
reported as changed (watchdog's own answer, synthesized `created` events, sometimes twice, is not
relied on).

**The root.** If the project folder is deleted, moved away or replaced, the watcher hands over one
batch with `root_gone`, stops itself and does not raise. Its identity (device, inode) is checked
every `ROOT_CHECK_S` as well, which also catches a parent folder being renamed.

**Nothing outside the root.** Symlinks are never followed: a symlinked folder is not watched or
listed (watchdog's recursive inotify observer skips them unless `follow_symlink=True`, with which a
`loop -> ..` link makes it add watches down `loop/loop/loop/...` and a link to `/etc` watches
`/etc`; measured with watchdog 7.1). A symlink is reported as a changed file at its own path inside
the root (the indexer skips it, as the walk does); a folder watch that would resolve outside the root
is removed again.

**Backends.** On Linux each folder the walk enters gets its own inotify watch (watchdog's inotify
reader, `inotify.py`), so ignored folders cost no watch and no events: a `cargo build` writing
thousands of files under `target/` does not overflow the queue and force a rescan. Elsewhere
watchdog's recursive observer (FSEvents on macOS) watches the tree and events are filtered.

**Degraded mode.** When watches cannot be placed (the inotify watch limit `fs.inotify.max_user_watches`
is reached, the instance limit, an observer that died), the watcher logs one warning, asks for a
rescan and from then on asks for one every `degraded_rescan_s` (each time trying to place the missing
watches again), so the index stays fresh, only slower. `ProjectWatcher.degraded` says why.
"""

from __future__ import annotations

import logging
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Literal

from lgrep_core.domain.errors import NotFoundError
from lgrep_core.settings.config import PROJECT_CONFIG_NAME

from lgrep_index.changes import ChangeBatch
from lgrep_index.walker import PathRules, WalkOptions
from lgrep_index.watch.batching import DEFAULT_DEBOUNCE_S, DEFAULT_MAX_DELAY_S, MAX_BATCH_PATHS, PendingBatch
from lgrep_index.watch.events import FileEvent, WatchBackend
from lgrep_index.watch.observer import ObserverBackend

__all__ = [
    "DEFAULT_DEBOUNCE_S",
    "DEFAULT_MAX_DELAY_S",
    "MAX_BATCH_PATHS",
    "ChangeBatch",
    "ProjectWatcher",
]

log = logging.getLogger(__name__)

# Events waiting for the watcher's thread (while `on_batch` runs, say). Past this, events are dropped
# and the next batch is a rescan: memory stays bounded whatever happens on disk.
MAX_QUEUED_EVENTS = 100_000
# How often the root's identity is checked (a parent renamed sends no event to the root's watch).
ROOT_CHECK_S = 1.0
# In degraded mode (watches missing), a rescan is asked for this often.
DEFAULT_DEGRADED_RESCAN_S = 30.0
# Events handled in a row before the deadlines are looked at again.
_DRAIN = 512

_Backend = Literal["auto", "inotify", "observer"]
_BatchCallback = Callable[[ChangeBatch], None]


class _Stop:
    pass


_STOP = _Stop()


class ProjectWatcher:
    """Watches one project root and calls `on_batch(ChangeBatch)` from its own thread.

    `start()` places the watches before it returns, so a full index run started afterwards misses
    nothing: start the watcher first, then index. `start()` and `stop()` are idempotent; `stop()`
    waits for a running `on_batch` to return and joins the watcher's threads (called from `on_batch`
    itself, it lets the thread end after the call). A stopped watcher cannot be started again. Usable
    as a context manager.

    `on_batch` should not raise: an exception is logged and that batch is dropped.

    Raises (from `start`):
        NotFoundError: `root` is not a folder.
    """

    def __init__(
        self,
        root: Path,
        walk_options: WalkOptions | None,
        on_batch: _BatchCallback,
        *,
        debounce_s: float = DEFAULT_DEBOUNCE_S,
        max_delay_s: float = DEFAULT_MAX_DELAY_S,
        max_batch_paths: int = MAX_BATCH_PATHS,
        degraded_rescan_s: float = DEFAULT_DEGRADED_RESCAN_S,
        backend: _Backend = "auto",
    ) -> None:
        if not 0 < debounce_s <= max_delay_s:
            raise ValueError(f"need 0 < debounce_s <= max_delay_s, got {debounce_s} and {max_delay_s}")
        if max_batch_paths < 1 or degraded_rescan_s <= 0:
            raise ValueError("max_batch_paths and degraded_rescan_s must be positive")
        self.root = Path(root).resolve()
        self.walk_options = walk_options or WalkOptions()
        self._on_batch = on_batch
        self._debounce_s = debounce_s
        self._max_delay_s = max_delay_s
        self._degraded_rescan_s = degraded_rescan_s
        self._backend_kind = backend
        self._pending = PendingBatch(max_batch_paths)
        self._rules = PathRules(self.root, self.walk_options)
        self._sink = _WatcherSink(self)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._queued = 0
        self._dropped = False
        self._count_lock = threading.Lock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._backend: WatchBackend | None = None
        self._root_id: tuple[int, int] = (0, 0)
        self._root_gone: str | None = None
        self._resync_wanted = False
        self._degraded: str | None = None
        self._next_degraded_rescan = 0.0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Place the watches and start the watcher's thread. Raises NotFoundError if the root is not a folder."""
        with self._lock:
            if self._stop.is_set():
                raise RuntimeError("a stopped ProjectWatcher cannot be started again; create a new one")
            if self._thread is not None:
                return
            try:
                st = self.root.stat()
            except OSError as exc:
                raise NotFoundError(f"cannot watch {self.root}: {exc.strerror}") from None
            if not stat.S_ISDIR(st.st_mode):
                raise NotFoundError(f"cannot watch {self.root}: not a folder")
            self._root_id = (st.st_dev, st.st_ino)
            backend = self._make_backend()
            self._backend = backend
            try:
                backend.start(self._sink)
            except OSError as exc:
                self._sink.degrade(f"cannot watch {self.root} ({exc.strerror or exc})")
            thread = threading.Thread(target=self._run, name=f"lgrep-watch {self.root.name}", daemon=True)
            try:
                thread.start()
            except BaseException:
                backend.stop()  # no thread of ours left behind
                raise
            self._thread = thread

    def stop(self) -> None:
        """Stop watching and join the watcher's threads (see the class doc). Idempotent."""
        with self._lock:
            self._stop.set()
            thread = self._thread
        if thread is None:
            return
        self._queue.put(_STOP)
        if thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> ProjectWatcher:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive() and not self._stop.is_set()

    @property
    def degraded(self) -> str | None:
        """Why changes are only picked up by periodic rescans, or None when every watch is in place."""
        return self._degraded

    def watched_folders(self) -> list[str]:
        """The project-relative folders with a watch of their own ('' is the root); on platforms
        whose observer watches a whole tree, just the root."""
        backend = self._backend
        return backend.watched() if backend is not None else []

    # ------------------------------------------------------------------ the thread

    def _make_backend(self) -> WatchBackend:
        kind = self._backend_kind
        if kind == "inotify" or (kind == "auto" and sys.platform.startswith("linux")):
            from lgrep_index.watch.inotify import InotifyBackend

            return InotifyBackend(self.root, self._rules, self._put)
        return ObserverBackend(self.root, self._put)

    def _put(self, item: object) -> None:
        """Queue an item for the watcher's thread (called from the backends' threads)."""
        with self._count_lock:
            if self._queued >= MAX_QUEUED_EVENTS:
                self._dropped = True
                return
            self._queued += 1
        self._queue.put(item)

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # a bug here must not take the daemon down or print a traceback
            log.error("the watcher of %s stopped after an error: %s: %s", self.root, type(exc).__name__, exc)
            log.debug("watcher failure", exc_info=True)
        finally:
            backend = self._backend
            if backend is not None:
                try:
                    backend.stop()
                except Exception as exc:
                    log.warning("stopping the watcher of %s: %s", self.root, exc)

    def _loop(self) -> None:
        clock = time.monotonic
        next_root_check = clock() + ROOT_CHECK_S
        carry: object | None = None
        while not self._stop.is_set():
            if carry is None:
                now = clock()
                wake = next_root_check
                due = self._pending.due_at(self._debounce_s, self._max_delay_s)
                if due is not None:
                    wake = min(wake, due)
                if self._degraded is not None:
                    wake = min(wake, self._next_degraded_rescan)
                try:
                    item = self._queue.get(timeout=max(0.0, wake - now))
                except queue.Empty:
                    item = None
            else:
                item, carry = carry, None
            handled = 0
            while item is not None:
                if isinstance(item, _Stop):
                    return
                with self._count_lock:
                    self._queued -= 1
                self._handle(item)
                handled += 1
                try:
                    following: object | None = self._queue.get_nowait()
                except queue.Empty:
                    following = None
                if handled >= _DRAIN:
                    carry = following  # handled first on the next turn, after the deadlines
                    break
                item = following
            if self._dropped:
                with self._count_lock:
                    self._dropped = False
                self._sink.rescan(f"more than {MAX_QUEUED_EVENTS} events waited to be handled; some were dropped")
                self._sink.request_resync()

            now = clock()
            if now >= next_root_check:
                next_root_check = now + ROOT_CHECK_S
                self._check_root()
            if self._root_gone is not None:
                self._deliver(ChangeBatch(root_gone=True, reasons=(self._root_gone,), first_event_at=now))
                self._stop.set()
                return
            self._check_backend(now)
            due = self._pending.due_at(self._debounce_s, self._max_delay_s)
            if due is not None and now >= due:
                batch = self._pending.take()
                if batch.rescan and self._resync_wanted:
                    # Place the watches the new rules call for before anyone walks the project again.
                    self._resync()
                if batch.path_count or batch.rescan:
                    self._deliver(batch)

    def _handle(self, item: object) -> None:
        backend = self._backend
        if backend is None:
            return
        try:
            backend.handle(item, self._sink)
        except Exception as exc:
            log.warning("the watcher of %s could not handle an event (%s: %s)", self.root, type(exc).__name__, exc)
            log.debug("event failure", exc_info=True)
            self._sink.rescan(f"an event could not be handled ({type(exc).__name__}: {exc})")
            self._sink.request_resync()

    def _resync(self) -> None:
        backend = self._backend
        if backend is None:
            return
        self._resync_wanted = False
        try:
            complete = backend.resync(self._sink)
        except Exception as exc:
            log.warning("the watcher of %s could not renew its watches: %s: %s", self.root, type(exc).__name__, exc)
            log.debug("resync failure", exc_info=True)
            complete = False
        if complete and self._degraded is not None:
            log.warning("watching %s again: every folder has its watch", self.root)
            self._degraded = None
        elif not complete:
            self._sink.degrade(self._degraded or "some folders could not be watched")

    def _check_root(self) -> None:
        try:
            st = self.root.stat()
        except OSError as exc:
            self._sink.root_gone(f"{self.root} is gone ({exc.strerror})")
            return
        if (st.st_dev, st.st_ino) != self._root_id or not stat.S_ISDIR(st.st_mode):
            self._sink.root_gone(f"{self.root} was replaced by another folder or file")

    def _check_backend(self, now: float) -> None:
        backend = self._backend
        problem = backend.problem() if backend is not None else None
        if problem is not None and self._degraded is None:
            self._sink.degrade(problem)
        if self._degraded is not None and now >= self._next_degraded_rescan:
            self._next_degraded_rescan = now + self._degraded_rescan_s
            self._resync()
            if self._degraded is not None:
                self._pending.set_rescan(f"watching is degraded ({self._degraded})", now)

    def _deliver(self, batch: ChangeBatch) -> None:
        try:
            self._on_batch(batch)
        except Exception as exc:
            log.error(
                "handling a batch of %d changes of %s failed: %s: %s",
                batch.path_count,
                self.root,
                type(exc).__name__,
                exc,
            )
            log.debug("on_batch failure", exc_info=True)


class _WatcherSink:
    """The watcher's side of `Sink`: decides by the walker's rules what an event means for the index."""

    def __init__(self, watcher: ProjectWatcher) -> None:
        self._watcher = watcher
        self._pending = watcher._pending
        self.rules = watcher._rules

    def file(self, path: str, event: FileEvent, *, listed: bool = False) -> None:
        """A file event, or a file found by listing a new folder (`listed`: the folder's own ignore
        files were read for it, so they change nothing already reported)."""
        now = time.monotonic()
        if path == PROJECT_CONFIG_NAME:
            self._pending.config_changed(f"{PROJECT_CONFIG_NAME} changed", now)
            return
        if not listed and self.rules.is_rule_source(path):
            folder = path.rpartition("/")[0] if not path.startswith(".git/") else ""
            self.rules.forget(folder)
            self.request_resync()
            self._pending.set_rescan(f"{path} changed", now)
            return
        if self.rules.considers(path):
            self._pending.file(path, event, now)

    def folder_removed(self, path: str) -> None:
        self.rules.forget(path)
        if self.rules.considers(path, is_dir=True):
            self._pending.folder_removed(path, time.monotonic())

    def rescan(self, reason: str) -> None:
        self._pending.set_rescan(reason, time.monotonic())

    def degrade(self, reason: str) -> None:
        watcher = self._watcher
        now = time.monotonic()
        if watcher._degraded is None:
            log.warning(
                "%s; lgrep re-indexes %s every %g s instead until it can watch every folder",
                reason,
                watcher.root,
                watcher._degraded_rescan_s,
            )
            watcher._degraded = reason
            watcher._next_degraded_rescan = now + watcher._degraded_rescan_s
        self._pending.set_rescan(reason, now)

    def root_gone(self, reason: str) -> None:
        if self._watcher._root_gone is None:
            log.info("%s: no longer watching it", reason)
            self._watcher._root_gone = reason

    def request_resync(self) -> None:
        self._watcher._resync_wanted = True
