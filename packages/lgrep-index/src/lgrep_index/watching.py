"""The projects an index server keeps fresh: one ProjectWatcher each, whose batches become index jobs.

Watching a project first brings its index up to date (whatever changed while nobody watched), then
every debounced batch of changes is applied path by path (`Indexer.update`), vectors included, by
the server's single writer (`IndexJobs`). A project whose folder disappears stops being watched.
The list of watched projects is kept in the cache dir (`watched.json`), so a daemon that restarts
watches them again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from lgrep_core.config import LgrepSettings, load_settings
from lgrep_core.errors import InvalidRequestError, LgrepError
from lgrep_core.models import WatchResult

from .changes import ChangeBatch
from .jobs import IndexJobs
from .pipeline import walk_options
from .watcher import ProjectWatcher

__all__ = ["WATCHED_FILE", "Watches", "load_watched", "save_watched"]

log = logging.getLogger(__name__)

WATCHED_FILE = "watched.json"
# A batch is flushed at the latest this long after its first event, however long the debounce.
MAX_DELAY_S = 1.0


class Watches:
    """Watchers of the projects one index server keeps fresh. Thread-safe."""

    def __init__(self, settings: LgrepSettings, jobs: IndexJobs, *, remember: bool = True) -> None:
        """`remember`: keep the list in the cache dir and restore it with `restore()`."""
        self.settings = settings
        self.jobs = jobs
        self.remember = remember
        self._watchers: dict[Path, ProjectWatcher] = {}
        self._lock = threading.Lock()

    def watch(self, root: Path, debounce_ms: int | None = None) -> WatchResult:
        """Start watching a project (its root must exist); its index is brought up to date first.

        Raises:
            InvalidRequestError: it would be more than `server.max_watched_projects`.
            ConfigError: the project's settings file is invalid.
            NotFoundError: the root is not a folder.
        """
        with self._lock:
            if root in self._watchers:
                return WatchResult(watched=True, already_watched=True)
            self._check_room()
        project = load_settings(root).settings
        debounce_s = (debounce_ms if debounce_ms else self.settings.server.watch_debounce_ms) / 1000
        watcher = ProjectWatcher(
            root,
            walk_options(project),
            lambda batch: self._apply(root, batch),
            debounce_s=debounce_s,
            max_delay_s=max(MAX_DELAY_S, debounce_s),
        )
        watcher.start()  # the watches are in place before the catch-up run below walks the tree
        with self._lock:
            if root in self._watchers:
                watcher.stop()
                return WatchResult(watched=True, already_watched=True)
            try:
                self._check_room()
            except LgrepError:
                watcher.stop()
                raise
            self._watchers[root] = watcher
        self._save()
        self.jobs.submit(root)
        log.info("watching %s", root)
        return WatchResult(watched=True, already_watched=False)

    def _check_room(self) -> None:
        limit = self.settings.server.max_watched_projects
        if len(self._watchers) >= limit:
            raise InvalidRequestError(
                f"this server already watches {len(self._watchers)} projects, the limit (server.max_watched_projects "
                f"= {limit}): stop watching one (`lgrep unwatch PATH`), or raise the setting; a folder inside a "
                "watched project needs no watch of its own"
            )

    def unwatch(self, root: Path) -> bool:
        with self._lock:
            watcher = self._watchers.pop(root, None)
        if watcher is None:
            return False
        watcher.stop()
        self._save()
        log.info("stopped watching %s", root)
        return True

    def watched(self) -> set[Path]:
        with self._lock:
            return set(self._watchers)

    def close(self) -> None:
        """Stop every watcher (the list stays saved for the next start)."""
        with self._lock:
            watchers = list(self._watchers.values())
            self._watchers.clear()
        for watcher in watchers:
            watcher.stop()

    def restore(self) -> None:
        """Watch again the projects a previous server watched (those whose folder still exists)."""
        for root in self._load():
            try:
                if root.is_dir():
                    self.watch(root)
            except LgrepError as exc:
                log.warning("cannot watch %s again: %s", root, exc.message)

    # ------------------------------------------------------------------------------ internals

    def _apply(self, root: Path, batch: ChangeBatch) -> None:
        """A watcher's batch (on the watcher's thread): queue it for the project's writer."""
        if batch.root_gone:
            log.warning("%s is gone: no longer watching it", root)
            with self._lock:
                self._watchers.pop(root, None)  # the watcher has stopped itself
            self._save()
            return
        try:
            self.jobs.submit(root, batch=batch)
        except LgrepError as exc:
            log.warning("cannot index the changes in %s: %s", root, exc.message)
        if batch.config_changed:
            # The project's .lgrep.yaml changed: its ignore patterns and size cap are the watcher's
            # too, so a new watcher replaces this one (from another thread: this is the watcher's own).
            threading.Thread(target=self._rewatch, args=(root,), name="lgrep-rewatch", daemon=True).start()

    def _rewatch(self, root: Path) -> None:
        with self._lock:
            watcher = self._watchers.pop(root, None)
        if watcher is None:
            return
        watcher.stop()
        try:
            self.watch(root)
        except LgrepError as exc:
            log.warning("cannot watch %s with its new settings: %s", root, exc.message)
            self._save()

    def _save(self) -> None:
        if not self.remember:
            return
        with self._lock:
            roots = sorted(self._watchers)
        try:
            save_watched(self.settings.cache_dir, roots)
        except OSError as exc:
            log.warning(
                "cannot save the watched projects in %s: %s", self.settings.cache_dir / WATCHED_FILE, exc.strerror
            )

    def _load(self) -> list[Path]:
        return load_watched(self.settings.cache_dir) if self.remember else []


def load_watched(cache_dir: Path) -> list[Path]:
    """The projects the index server of a cache dir watches (and watches again when it starts)."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        data = json.loads((cache_dir / WATCHED_FILE).read_text(encoding="utf-8"))
        return [Path(p) for p in data["projects"] if isinstance(p, str) and Path(p).is_absolute()]
    return []


def save_watched(cache_dir: Path, roots: Iterable[Path]) -> None:
    """Replace the saved list of watched projects (atomically). Raises OSError."""
    path = cache_dir / WATCHED_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"projects": sorted(str(r) for r in roots)}, indent=2), encoding="utf-8")
    tmp.replace(path)
