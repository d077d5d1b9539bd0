"""The watcher's backend on platforms other than Linux: watchdog's recursive observer
(`ObserverBackend`), whose events become path events. watchdog's threads only queue its events
(`put`); they are handled on the watcher's thread."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from lgrep_core.domain.pathnames import display_path
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

from lgrep_index.watch.events import FileEvent, Sink
from lgrep_index.watch.listing import list_folder_tree

__all__ = ["ObserverBackend"]

log = logging.getLogger(__name__)


class _Forwarder(FileSystemEventHandler):
    def __init__(self, put: Callable[[object], None]) -> None:
        super().__init__()
        self._put = put

    def on_any_event(self, event: FileSystemEvent) -> None:
        self._put(event)


class ObserverBackend:
    """Other platforms: watchdog's recursive observer (FSEvents on macOS), its events filtered by the
    rules. Such observers watch a whole tree at no per-folder cost, so ignored folders are not
    excluded from the watch, only from the batches."""

    def __init__(self, root: Path, put: Callable[[object], None]) -> None:
        self._root = root
        self._root_s = str(root)
        self._put = put
        self._observer: BaseObserver | None = None

    def start(self, sink: Sink) -> None:
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

    def resync(self, sink: Sink) -> bool:
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

    def handle(self, item: object, sink: Sink) -> None:
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
                    list_folder_tree(
                        self._root,
                        sink.rules,
                        added,
                        enter=lambda _folder: True,
                        on_file=lambda p: sink.file(p, FileEvent.CHANGED, listed=True),
                    )
            return
        # watchdog reports a file renamed in from outside as created, which may replace a file: never
        # CREATED here, so a create-then-delete pair is reported (the indexer finds it gone).
        if kind in (EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED, EVENT_TYPE_CLOSED) and src:
            sink.file(src, FileEvent.CHANGED)
        elif kind in (EVENT_TYPE_DELETED, EVENT_TYPE_MOVED) and src:
            sink.file(src, FileEvent.GONE)
        if dest:
            sink.file(dest, FileEvent.CHANGED)
