"""The Linux backend of the file watcher: one inotify watch per folder the walk enters.

watchdog's recursive inotify observer watches every folder under the root, `.git`, `node_modules`
and `target/` included: a build writing thousands of files there costs a watch per folder, floods the
kernel's event queue (16,384 events by default) and forces a rescan of the whole project. So this
backend places the watches itself, with watchdog's inotify reader (`InotifyFD`: one inotify instance
and one thread reading it) and the walker's rules (`PathRules`): a folder the walk skips has no watch
and sends no event. `.git/info` gets a watch too, for `.git/info/exclude`.

Everything here except the reader's own thread runs on the watcher's thread: the reader only queues
raw events (`put`), so watch descriptors are mapped to folders by the same thread that adds and
removes them.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lgrep_core.domain.pathnames import disk_path, display_name
from watchdog.observers.inotify_c import CallbackId, InotifyConstants, InotifyEvent, InotifyFD, Mask, WatchDescriptor

from lgrep_index.walker import PathRules
from lgrep_index.watch.events import FileEvent, Sink
from lgrep_index.watch.listing import list_folder_tree

__all__ = ["InotifyBackend"]

log = logging.getLogger(__name__)

_C = InotifyConstants
# What a folder watch reports. IN_ONLYDIR and IN_DONT_FOLLOW: a name that became a symlink or a file
# since it was listed is not watched (nor what a symlink points to). IN_EXCL_UNLINK: no events of
# files already deleted but still open.
WATCH_MASK = Mask(
    _C.IN_MODIFY
    | _C.IN_ATTRIB
    | _C.IN_CLOSE_WRITE
    | _C.IN_MOVED_FROM
    | _C.IN_MOVED_TO
    | _C.IN_CREATE
    | _C.IN_DELETE
    | _C.IN_DELETE_SELF
    | _C.IN_MOVE_SELF
    | _C.IN_ONLYDIR
    | _C.IN_DONT_FOLLOW
    | _C.IN_EXCL_UNLINK
)
_GONE_MASK = _C.IN_DELETE | _C.IN_MOVED_FROM
_ADDED_MASK = _C.IN_CREATE | _C.IN_MOVED_TO
_GIT_INFO = ".git/info"


@dataclass(frozen=True, slots=True)
class WatchGone:
    """The kernel removed a watch (its folder was deleted, or its file system unmounted)."""

    wd: int


@dataclass(frozen=True, slots=True)
class Overflow:
    """The kernel's event queue overflowed: events were lost."""


@dataclass(frozen=True, slots=True)
class ReaderFailed:
    error: str


class _Reader(InotifyFD):
    """watchdog's inotify reader thread; it reports its own failure instead of dying with a traceback."""

    def __init__(self, put: Callable[[object], None], name: str) -> None:
        super().__init__()
        self.name = name
        self._put = put

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self._put(ReaderFailed(f"{type(exc).__name__}: {exc}"))


class _Forward:
    """watchdog's `WatchCallback`: queues what the reader sees for the watcher's thread."""

    def __init__(self, put: Callable[[object], None]) -> None:
        self._put = put

    def on_event(self, event: InotifyEvent) -> None:
        self._put(event)

    def on_watch_deleted(self, wd: WatchDescriptor) -> None:
        self._put(WatchGone(wd))

    def on_queue_overflow(self) -> None:
        self._put(Overflow())


def _watch_limit() -> str:
    try:
        return Path("/proc/sys/fs/inotify/max_user_watches").read_text().strip()
    except OSError:
        return "unknown"


class InotifyBackend:
    def __init__(self, root: Path, rules: PathRules, put: Callable[[object], None]) -> None:
        self._root = root
        self._root_real = os.path.realpath(root)
        self._rules = rules
        self._put = put
        self._forward = _Forward(put)
        self._reader: _Reader | None = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # guards the maps for `watched`, read from other threads
        self._by_wd: dict[int, tuple[str, CallbackId]] = {}
        self._by_path: dict[str, int] = {}
        self._unreadable: set[str] = set()
        self._complete = True  # no watch failed for want of resources since the last resync began
        self._stopping = False

    # ---------------------------------------------------------------- lifecycle

    def start(self, sink: Sink) -> None:
        """Start the reader and watch every folder the walk enters (what fails is reported to `sink`)."""
        if not self.resync(sink):
            log.debug("not every folder of %s could be watched", self._root)

    def stop(self) -> None:
        self._stopping = True
        reader = self._reader
        if reader is not None and reader.is_alive():
            reader.stop()
            reader.join()

    def watched(self) -> list[str]:
        with self._lock:
            return sorted(self._by_path)

    def problem(self) -> str | None:
        reader = self._reader
        if reader is not None and not reader.is_alive() and not self._stopping:
            return "the inotify reader stopped"
        return None

    def resync(self, sink: Sink) -> bool:
        """Watch every folder the walk enters now and drop the watches of the others (after the
        rules changed, events were lost, or watches could not be placed). True when every folder has
        its watch."""
        if not self._ensure_reader(sink):
            return False
        self._complete = True
        self._unreadable.clear()
        sink.rules.clear()
        wanted: set[str] = set()

        def enter(folder: str) -> bool:
            wanted.add(folder)
            return folder in self._by_path or self._watch(folder, sink)

        list_folder_tree(self._root, sink.rules, "", enter=enter, on_file=None)
        if "" in self._by_path and sink.rules.options.respect_gitignore and self._is_real_git_info():
            wanted.add(_GIT_INFO)
            if _GIT_INFO not in self._by_path:
                self._watch(_GIT_INFO, sink)
        with self._lock:
            stale = [path for path in self._by_path if path not in wanted]
        for path in stale:
            self._unwatch(path)
        reader = self._reader
        return self._complete and reader is not None and reader.is_alive()

    def _ensure_reader(self, sink: Sink) -> bool:
        """A running reader: the first one, or a new one after the last failed (its watches went with it)."""
        reader = self._reader
        if reader is not None and reader.is_alive():
            return True
        if self._stopping:
            return False
        if reader is not None:
            reader.stop()
        with self._lock:
            self._by_wd.clear()
            self._by_path.clear()
        try:
            reader = _Reader(self._put, f"lgrep-inotify {self._root.name}")
        except OSError as exc:
            # The per-user instance limit (fs.inotify.max_user_instances), most likely.
            self._reader = None
            sink.degrade(f"cannot use inotify ({exc.strerror or exc}; fs.inotify.max_user_instances)")
            return False
        self._reader = reader
        reader.start()
        return True

    def _is_real_git_info(self) -> bool:
        git = self._root / ".git"
        return git.is_dir() and not git.is_symlink() and (git / "info").is_dir() and not (git / "info").is_symlink()

    # ------------------------------------------------------------------ watches

    def _watch(self, folder: str, sink: Sink) -> bool:
        """Place the watch of one folder; False when it could not be placed."""
        reader = self._reader
        if reader is None:
            return False
        abs_path = str(disk_path(self._root, folder)) if folder else str(self._root)
        cid = CallbackId(next(self._ids))
        try:
            wd = int(reader.add_callback(os.fsencode(abs_path), WATCH_MASK, self._forward, cid))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return False  # gone, or no longer a folder, since it was listed: nothing to watch
            self._complete = False
            if exc.errno == errno.ENOSPC:
                sink.degrade(
                    f"the inotify watch limit is reached ({_watch_limit()} watches, fs.inotify.max_user_watches): "
                    f"{folder or self._root} and other folders are not watched; raise it with "
                    "`sudo sysctl fs.inotify.max_user_watches=524288`"
                )
            else:
                sink.degrade(f"cannot watch {folder or self._root}: {exc.strerror or exc}")
            return False
        if wd < 0:
            # watchdog gives up silently (wd -1) when the folder cannot be read; the walk cannot list it
            # either. A change of its permissions is reported to its parent's watch (IN_ATTRIB).
            reader.remove_callbacks([(WatchDescriptor(wd), cid)])
            if folder not in self._unreadable:
                self._unreadable.add(folder)
                log.warning("cannot watch %s: permission denied; its files are not indexed", folder or self._root)
            return False
        if wd in self._by_wd:
            # The same folder under a second name (a bind mount of an ancestor): watched once only.
            reader.remove_callbacks([(WatchDescriptor(wd), cid)])
            log.warning("not watching %s: it is %s again", folder, self._by_wd[wd][0] or "the project root")
            return False
        real = os.path.realpath(abs_path)
        if real != self._root_real and not real.startswith(self._root_real + os.sep):
            # A folder above it was swapped for a symlink since it was listed: never watch outside.
            reader.remove_callbacks([(WatchDescriptor(wd), cid)])
            log.warning("not watching %s: it leads outside the project (%s)", folder, real)
            return False
        with self._lock:
            self._by_wd[wd] = (folder, cid)
            self._by_path[folder] = wd
        return True

    def _unwatch(self, folder: str) -> None:
        """Remove the watches of a folder and of every folder under it."""
        below = folder + "/"
        with self._lock:
            paths = [p for p in self._by_path if p == folder or p.startswith(below)]
            pairs: list[tuple[WatchDescriptor, CallbackId]] = []
            for path in paths:
                wd = self._by_path.pop(path)
                _, cid = self._by_wd.pop(wd)
                pairs.append((WatchDescriptor(wd), cid))
        reader = self._reader
        if pairs and reader is not None:
            reader.remove_callbacks(pairs)

    def _watch_gone(self, wd: int, sink: Sink) -> None:
        with self._lock:
            entry = self._by_wd.pop(wd, None)
            if entry is not None and self._by_path.get(entry[0]) == wd:
                del self._by_path[entry[0]]
        if entry is not None and entry[0] == "":
            sink.root_gone(f"{self._root} was deleted or unmounted")

    # ------------------------------------------------------------------- events

    def handle(self, item: object, sink: Sink) -> None:
        if isinstance(item, InotifyEvent):
            self._event(item, sink)
        elif isinstance(item, WatchGone):
            self._watch_gone(item.wd, sink)
        elif isinstance(item, Overflow):
            sink.rescan("the kernel dropped file events (its inotify queue overflowed: fs.inotify.max_queued_events)")
            sink.request_resync()
        elif isinstance(item, ReaderFailed) and not self._stopping:
            sink.degrade(f"the inotify reader failed ({item.error})")

    def _event(self, event: InotifyEvent, sink: Sink) -> None:
        with self._lock:
            entry = self._by_wd.get(event.wd)
        if entry is None:
            return  # a watch removed since the event was queued
        folder = entry[0]
        mask = event.mask
        if mask & (_C.IN_DELETE_SELF | _C.IN_MOVE_SELF):
            if folder == "":
                sink.root_gone(f"{self._root} was deleted or moved")
            return  # any other folder: its parent's watch reports it
        if not event.name:
            return
        name = display_name(os.fsdecode(event.name))
        path = f"{folder}/{name}" if folder else name
        if mask & _C.IN_ISDIR:
            if mask & _GONE_MASK:
                self._unwatch(path)
                sink.folder_removed(path)
            if mask & _ADDED_MASK or (mask & _C.IN_ATTRIB and path in self._unreadable):
                self._unreadable.discard(path)
                sink.rules.forget(path)
                if sink.rules.considers(path, is_dir=True):
                    self._add_tree(path, sink)
            return
        if mask & _GONE_MASK:
            sink.file(path, FileEvent.GONE)
        elif mask & _C.IN_CREATE:
            sink.file(path, FileEvent.CREATED)
        else:
            sink.file(path, FileEvent.CHANGED)

    def _add_tree(self, folder: str, sink: Sink) -> None:
        """A folder appeared (created, moved in, or readable at last): watch it and what is under it
        before listing it, and report its files."""
        list_folder_tree(
            self._root,
            sink.rules,
            folder,
            enter=lambda f: f in self._by_path or self._watch(f, sink),
            on_file=lambda path: sink.file(path, FileEvent.CHANGED, listed=True),
        )
