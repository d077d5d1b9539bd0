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
reader, `_inotify.py`), so ignored folders cost no watch and no events: a `cargo build` writing
thousands of files under `target/` does not overflow the queue and force a rescan. Elsewhere
watchdog's recursive observer (FSEvents on macOS) watches the tree and events are filtered.

**Degraded mode.** When watches cannot be placed (the inotify watch limit `fs.inotify.max_user_watches`
is reached, the instance limit, an observer that died), the watcher logs one warning, asks for a
rescan and from then on asks for one every `degraded_rescan_s` (each time trying to place the missing
watches again), so the index stays fresh, only slower. `ProjectWatcher.degraded` says why.
"""

from __future__ import annotations

import enum
import logging
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

from lgrep_core.config import PROJECT_CONFIG_NAME
from lgrep_core.errors import NotFoundError
from lgrep_core.pathnames import disk_path, display_name, display_path
from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from lgrep_index.changes import ChangeBatch
from lgrep_index.walker import PathRules, WalkOptions

__all__ = [
    "DEFAULT_DEBOUNCE_S",
    "DEFAULT_MAX_DELAY_S",
    "MAX_BATCH_PATHS",
    "ChangeBatch",
    "ProjectWatcher",
]

log = logging.getLogger(__name__)

# Quiet time that ends a batch: long enough to gather an editor's save (temp file, rename, chmod) and
# a tool rewriting several files, short enough to leave most of the 2 s budget to indexing.
DEFAULT_DEBOUNCE_S = 0.25
# A batch is handed over at the latest this long after its first event, so continuous edits flush.
DEFAULT_MAX_DELAY_S = 1.0
# Past this many paths in one batch (a branch switch, say), the batch becomes a rescan: checking paths
# one by one costs ~0.05 s + 0.11 ms a path, a full run ~0.07 ms per file of the project, so at this
# size a walk costs the same on the projects lgrep targets (5,000 paths of a 5,308-file project:
# 0.64 s against 0.59 s; docs/benchmarks.md), and it also catches what a flood of events lost.
# Also bounds the memory of a batch.
MAX_BATCH_PATHS = 5_000
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


class _FileEvent(enum.Enum):
    """What happened to a file, as far as a batch cares."""

    CREATED = "created"  # came into being under this name (inotify IN_CREATE): it did not exist before
    CHANGED = "changed"  # modified, or appeared by a rename (possibly over an existing file)
    GONE = "gone"  # deleted or renamed away


class _Stop:
    pass


_STOP = _Stop()


class _Sink(Protocol):
    """Where a backend reports, on the watcher's thread."""

    rules: PathRules

    def file(self, path: str, event: _FileEvent, *, listed: bool = False) -> None: ...
    def folder_removed(self, path: str) -> None: ...
    def rescan(self, reason: str) -> None: ...
    def degrade(self, reason: str) -> None: ...
    def root_gone(self, reason: str) -> None: ...
    def request_resync(self) -> None: ...


class _WatchBackend(Protocol):
    """An event source. `start` places the watches (from the caller's thread, before the watcher's
    thread runs); everything else runs on the watcher's thread."""

    def start(self, sink: _Sink) -> None: ...
    def stop(self) -> None: ...
    def handle(self, item: object, sink: _Sink) -> None: ...
    def resync(self, sink: _Sink) -> bool: ...
    def problem(self) -> str | None: ...
    def watched(self) -> list[str]: ...


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
        self._pending = _PendingBatch(max_batch_paths)
        self._rules = PathRules(self.root, self.walk_options)
        self._sink = _WatcherSink(self)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._queued = 0
        self._dropped = False
        self._count_lock = threading.Lock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._backend: _WatchBackend | None = None
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

    def _make_backend(self) -> _WatchBackend:
        kind = self._backend_kind
        if kind == "inotify" or (kind == "auto" and sys.platform.startswith("linux")):
            from lgrep_index._inotify import InotifyBackend

            return InotifyBackend(self.root, self._rules, self._put)
        return _ObserverBackend(self.root, self._put)

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
    """The watcher's side of `_Sink`: decides by the walker's rules what an event means for the index."""

    def __init__(self, watcher: ProjectWatcher) -> None:
        self._watcher = watcher
        self._pending = watcher._pending
        self.rules = watcher._rules

    def file(self, path: str, event: _FileEvent, *, listed: bool = False) -> None:
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


class _PendingBatch:
    """Changes gathered for the next batch, coalesced per path. Pure: the clock is passed in, so the
    debounce rules are tested with a clock the test drives."""

    def __init__(self, max_paths: int = MAX_BATCH_PATHS) -> None:
        self.max_paths = max_paths
        self._reset()

    def _reset(self) -> None:
        self._changed: dict[str, bool] = {}  # path -> created within this batch
        self._removed: set[str] = set()
        self._rescan = False
        self._config_changed = False
        self._reasons: list[str] = []
        self._first: float | None = None
        self._last = 0.0

    def _touch(self, now: float) -> None:
        if self._first is None:
            self._first = now
        self._last = now

    def file(self, path: str, event: _FileEvent, now: float) -> None:
        self._touch(now)
        if self._rescan:
            return
        if event is _FileEvent.GONE:
            if self._changed.get(path):
                # Created and gone within this batch (a temp file): the index never held it.
                del self._changed[path]
                return
            self._changed[path] = False
        else:
            self._changed.setdefault(path, event is _FileEvent.CREATED)
        self._check_size(now)

    def folder_removed(self, path: str, now: float) -> None:
        self._touch(now)
        if self._rescan:
            return
        below = path + "/"
        for p in [p for p in self._changed if p.startswith(below)]:
            del self._changed[p]  # events of the folder's files before it went: the prefix covers them
        if any(path.startswith(p + "/") for p in self._removed):
            return  # a folder above it is already reported: that prefix covers this one
        self._removed = {p for p in self._removed if not p.startswith(below)}
        self._removed.add(path)
        self._check_size(now)

    def set_rescan(self, reason: str, now: float) -> None:
        self._touch(now)
        self._rescan = True
        self._changed.clear()
        self._removed.clear()
        if reason not in self._reasons:
            self._reasons.append(reason)

    def config_changed(self, reason: str, now: float) -> None:
        self._config_changed = True
        self.set_rescan(reason, now)

    def _check_size(self, now: float) -> None:
        if len(self._changed) + len(self._removed) > self.max_paths:
            self.set_rescan(f"more than {self.max_paths} paths changed at once", now)

    def due_at(self, debounce_s: float, max_delay_s: float) -> float | None:
        """When the batch is to be handed over (a `now` value), or None while it is empty."""
        if self._first is None:
            return None
        return min(self._last + debounce_s, self._first + max_delay_s)

    def take(self) -> ChangeBatch:
        """The batch so far (possibly empty: everything in it cancelled out); starts a new one."""
        batch = ChangeBatch(
            changed=frozenset(self._changed),
            removed_prefixes=frozenset(self._removed),
            rescan=self._rescan,
            config_changed=self._config_changed,
            reasons=tuple(self._reasons),
            first_event_at=self._first or 0.0,
        )
        self._reset()
        return batch


# --- shared by the backends -------------------------------------------------------------------------


def _list_folder_tree(
    root: Path,
    rules: PathRules,
    folder: str,
    *,
    enter: Callable[[str], bool],
    on_file: Callable[[str], None] | None,
) -> None:
    """Visit `folder` and every folder under it that the walk enters, never through a symlink.

    `enter(folder)` runs before a folder is listed (the inotify backend places its watch there, so
    nothing created while it is listed goes unseen); False skips the folder. `on_file` gets every
    file (or symlink, or other non-folder) the walk would consider."""
    stack = [folder]
    while stack:
        current = stack.pop()
        if not enter(current):
            continue
        try:
            with os.scandir(disk_path(root, current) if current else root) as scan:
                entries = list(scan)
        except OSError as exc:
            log.debug("cannot list %s: %s", current or ".", exc)
            continue
        prefix = current + "/" if current else ""
        for entry in entries:
            child = prefix + display_name(entry.name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if rules.considers(child, is_dir=True):
                    stack.append(child)
            elif on_file is not None and rules.considers(child):
                on_file(child)


class _Forwarder(FileSystemEventHandler):
    def __init__(self, put: Callable[[object], None]) -> None:
        super().__init__()
        self._put = put

    def on_any_event(self, event: FileSystemEvent) -> None:
        self._put(event)


class _ObserverBackend:
    """Other platforms: watchdog's recursive observer (FSEvents on macOS), its events filtered by the
    rules. Such observers watch a whole tree at no per-folder cost, so ignored folders are not
    excluded from the watch, only from the batches."""

    def __init__(self, root: Path, put: Callable[[object], None]) -> None:
        self._root = root
        self._root_s = str(root)
        self._put = put
        self._observer: BaseObserver | None = None

    def start(self, sink: _Sink) -> None:
        observer = Observer()
        observer.schedule(_Forwarder(self._put), self._root_s, recursive=True)  # never follows symlinks
        self._observer = observer
        observer.start()

    def stop(self) -> None:
        observer = self._observer
        if observer is not None and observer.is_alive():
            observer.stop()
            observer.join()

    def watched(self) -> list[str]:
        return [""]

    def problem(self) -> str | None:
        observer = self._observer
        if observer is None:
            return None
        if not observer.is_alive() or any(not emitter.is_alive() for emitter in observer.emitters):
            return "the file watcher of this platform stopped"
        return None

    def resync(self, sink: _Sink) -> bool:
        if self.problem() is None:
            return True
        self.stop()
        try:
            self.start(sink)
        except OSError as exc:
            log.debug("restarting the observer: %s", exc)
            return False
        return self.problem() is None

    def _rel(self, path: bytes | str) -> str | None:
        text = os.fsdecode(path)
        if text == self._root_s:
            return ""
        if not text.startswith(self._root_s + "/"):
            return None
        return display_path(text[len(self._root_s) + 1 :])

    def handle(self, item: object, sink: _Sink) -> None:
        if not isinstance(item, FileSystemEvent):
            return
        kind = item.event_type
        src = self._rel(item.src_path)
        dest = self._rel(item.dest_path) if kind == EVENT_TYPE_MOVED and item.dest_path else None
        if src == "" and kind in (EVENT_TYPE_DELETED, EVENT_TYPE_MOVED):
            sink.root_gone(f"{self._root} was deleted or moved")
            return
        if item.is_directory:
            if src and kind in (EVENT_TYPE_DELETED, EVENT_TYPE_MOVED):
                sink.folder_removed(src)
            added = dest if kind == EVENT_TYPE_MOVED else src if kind == EVENT_TYPE_CREATED else None
            if added:
                sink.rules.forget(added)
                if sink.rules.considers(added, is_dir=True):
                    _list_folder_tree(
                        self._root,
                        sink.rules,
                        added,
                        enter=lambda _folder: True,
                        on_file=lambda p: sink.file(p, _FileEvent.CHANGED, listed=True),
                    )
            return
        # watchdog reports a file renamed in from outside as created, which may replace a file: never
        # CREATED here, so a create-then-delete pair is reported (the indexer finds it gone).
        if kind in (EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED, EVENT_TYPE_CLOSED) and src:
            sink.file(src, _FileEvent.CHANGED)
        elif kind in (EVENT_TYPE_DELETED, EVENT_TYPE_MOVED) and src:
            sink.file(src, _FileEvent.GONE)
        if dest:
            sink.file(dest, _FileEvent.CHANGED)
