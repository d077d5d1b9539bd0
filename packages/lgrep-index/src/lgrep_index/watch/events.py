"""What passes between the watcher and its backends: a backend (`WatchBackend`) reports to a `Sink`,
on the watcher's thread, what happened to a path (`FileEvent`)."""

from __future__ import annotations

import enum
from typing import Protocol

from lgrep_index.walker import PathRules

__all__ = ["FileEvent", "Sink", "WatchBackend"]


class FileEvent(enum.Enum):
    """What happened to a file, as far as a batch cares."""

    CREATED = "created"  # came into being under this name (inotify IN_CREATE): it did not exist before
    CHANGED = "changed"  # modified, or appeared by a rename (possibly over an existing file)
    GONE = "gone"  # deleted or renamed away


class Sink(Protocol):
    """Where a backend reports, on the watcher's thread."""

    rules: PathRules

    def file(self, path: str, event: FileEvent, *, listed: bool = False) -> None: ...
    def folder_removed(self, path: str) -> None: ...
    def rescan(self, reason: str) -> None: ...
    def degrade(self, reason: str) -> None: ...
    def root_gone(self, reason: str) -> None: ...
    def request_resync(self) -> None: ...


class WatchBackend(Protocol):
    """An event source. `start` places the watches (from the caller's thread, before the watcher's
    thread runs); everything else runs on the watcher's thread."""

    def start(self, sink: Sink) -> None: ...
    def stop(self) -> None: ...
    def handle(self, item: object, sink: Sink) -> None: ...
    def resync(self, sink: Sink) -> bool: ...
    def problem(self) -> str | None: ...
    def watched(self) -> list[str]: ...
