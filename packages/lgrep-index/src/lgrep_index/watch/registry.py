"""The projects an index server keeps fresh: one ProjectWatcher each, whose batches become index jobs.

Watching a project first brings its index up to date (whatever changed while nobody watched), then
every debounced batch of changes is applied path by path (`Indexer.update`), vectors included, by
the server's single writer (`IndexJobs`). A project whose folder disappears stops being watched.

A project is watched for two reasons (ADR 0024): someone asked (`watch`: WatchProject, `lgrep
watch`), which lasts until `unwatch`; or a client holds a **lease** on it (`hold`: RenewWatchLease,
which every MCP server sends while it runs), which lasts while the client renews it: the last lease
to end (released, or expired because its holder died) stops a watch nobody asked for. A lease
watches only a project that has an index, and never one the user unwatched: `unwatch` stops the
watch whatever holds it and leases leave the project alone until the next `watch`.

The projects asked for and the ones the user unwatched are kept in the cache dir (`watched.json`),
so a daemon that restarts watches them again; leases are not (their holders renew them, which takes
them again on a new server).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lgrep_core.domain.errors import InvalidRequestError, LgrepError
from lgrep_core.domain.models import ProjectState, WatchLease, WatchResult
from lgrep_core.settings.config import LgrepSettings, load_settings
from lgrep_core.storage.layout import index_state, project_dir

from lgrep_index.changes import ChangeBatch
from lgrep_index.jobs import IndexJobs
from lgrep_index.pipeline import walk_options
from lgrep_index.watch.watcher import ProjectWatcher

__all__ = [
    "LEASE_TTL_MAX_S",
    "LEASE_TTL_MIN_S",
    "MAX_LEASED_FOLDERS",
    "MAX_LEASES",
    "MAX_LEASES_PER_FOLDER",
    "WATCHED_FILE",
    "Watches",
    "load_unwatched",
    "load_watched",
    "save_watched",
]

log = logging.getLogger(__name__)

WATCHED_FILE = "watched.json"
# A batch is flushed at the latest this long after its first event, however long the debounce.
MAX_DELAY_S = 1.0
# The ttl a lease may ask for: short enough that a killed holder's watch ends soon, long enough that
# a renewal every third of it is no load.
LEASE_TTL_MIN_S = 2.0
LEASE_TTL_MAX_S = 600.0
# Leases cost an idle daemon too: every tick walks them all and reads the index state of each leased
# folder not watched yet (2,000 folders kept it at ~20% of a core). A lease past the watch slots
# (server.max_watched_projects) can only wait for a first index or a free slot, so a daemon holds
# leases on at most the larger of this and that setting: at the default 16 slots, room for 48
# folders waiting beside them, at well under 1% of a core.
MAX_LEASED_FOLDERS = 64
# Holders are ids clients choose (one per MCP server, that is per agent session, and folder): far
# more sessions on one project than a person runs, and a bound on the whole table, which every tick
# walks, so that made-up holder ids cannot grow it without end. A project at the first bound is
# watched anyway: one more lease on it adds nothing.
MAX_LEASES_PER_FOLDER = 64
MAX_LEASES = 1024

_UNWATCHED = "the user stopped watching it (`lgrep unwatch`); `lgrep watch {root}` lets clients keep it fresh again"
_ENDED = "its leases ended (or the user unwatched it) while its watch was starting"
_NO_INDEX = "it has no index yet: it is watched once it has one (the first search or `lgrep index` builds it)"


class Watches:
    """Watchers of the projects one index server keeps fresh, and why it keeps them. Thread-safe."""

    def __init__(self, settings: LgrepSettings, jobs: IndexJobs, *, remember: bool = True) -> None:
        """`remember`: keep the list in the cache dir and restore it with `restore()`."""
        self.settings = settings
        self.jobs = jobs
        self.remember = remember
        self._watchers: dict[Path, ProjectWatcher] = {}
        self._asked: set[Path] = set()  # watched until unwatched (WatchProject)
        self._leases: dict[Path, dict[str, float]] = {}  # root -> holder -> monotonic expiry
        # The user unwatched them: leases do not watch them. Read now, not in `restore()`: a lease
        # may arrive before the server restores its watches.
        self._unwatched: set[Path] = set(load_unwatched(settings.cache_dir)) if remember else set()
        self._lock = threading.Lock()

    def watch(self, root: Path, debounce_ms: int | None = None) -> WatchResult:
        """Watch a project until `unwatch` (its root must exist); its index is brought up to date
        first. Lifts an earlier `unwatch` for the project's leases too.

        Raises:
            InvalidRequestError: it would be more than `server.max_watched_projects`.
            ConfigError: the project's settings file is invalid.
            NotFoundError: the root is not a folder.
        """

        def ask() -> bool:
            self._asked.add(root)
            self._unwatched.discard(root)
            return True

        result = self._start(root, ask, debounce_ms)
        self._save()
        return result

    def _start(self, root: Path, claim: Callable[[], bool], debounce_ms: int | None = None) -> WatchResult:
        """Start a watcher for `root` (or find the one running) if `claim()` still wants one.

        `claim` is called under the lock at the moment the watcher is registered (or found running),
        not before: what it checks (a lease is still held) cannot change between its answer and the
        registration, so a lease released while the watcher was starting leaves no watcher behind.
        It may record why the project is watched (`watch` does). False: the new watcher is stopped
        and the answer is "not watched".
        """
        with self._lock:
            if root in self._watchers:
                claim()
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
        try:
            with self._lock:
                if root in self._watchers:
                    claim()
                    result = WatchResult(watched=True, already_watched=True)
                else:
                    self._check_room()
                    result = WatchResult(watched=claim(), already_watched=False)
                    if result.watched:
                        self._watchers[root] = watcher
        except BaseException:
            watcher.stop()
            raise
        if not result.watched or result.already_watched:
            # Outside the lock: stopping joins the watcher's thread, which may wait for the lock.
            watcher.stop()
            return result
        self.jobs.submit(root)
        log.info("watching %s", root)
        return result

    def _check_room(self) -> None:
        limit = self.settings.server.max_watched_projects
        if len(self._watchers) >= limit:
            raise InvalidRequestError(
                f"this server already watches {len(self._watchers)} projects, the limit (server.max_watched_projects "
                f"= {limit}): stop watching one (`lgrep unwatch PATH`), or raise the setting; a folder inside a "
                "watched project needs no watch of its own"
            )

    def unwatch(self, root: Path) -> bool:
        """The user's unwatch: stop watching the project, whatever kept it watched, and let no lease
        watch it again until `watch`. True if it was watched."""
        with self._lock:
            self._asked.discard(root)
            self._unwatched.add(root)
        was = self._stop(root)
        self._save()
        return was

    def forget(self, root: Path) -> bool:
        """Stop watching a project whose index is going away (RemoveProject): the watch asked for
        ends; leases stay, and watch the project again once it has a new index."""
        with self._lock:
            self._asked.discard(root)
        was = self._stop(root)
        self._save()
        return was

    def hold(self, root: Path, holder: str, ttl_s: float) -> WatchLease:
        """Take or renew `holder`'s lease on `root` for `ttl_s` (bounded), and watch the project if
        a lease may: it has an index and the user did not unwatch it.

        Raises:
            InvalidRequestError: a new lease past the bounds (MAX_LEASED_FOLDERS, MAX_LEASES_PER_FOLDER,
                MAX_LEASES); a renewal is never refused.
        """
        ttl = min(max(ttl_s, LEASE_TTL_MIN_S), LEASE_TTL_MAX_S)
        with self._lock:
            holders = self._leases.get(root, {})
            new = holder not in holders
            if new:  # a renewal always succeeds, whatever the bounds
                self._check_lease_room(root, holders)
            holders[holder] = time.monotonic() + ttl
            self._leases[root] = holders
            count = len(holders)
        if new:
            log.info("%s holds a watch lease on %s (%d held)", holder, root, count)
        watched, detail = self._watch_leased(root)
        return WatchLease(str(root), watched=watched, ttl_s=ttl, leases=count, detail=detail)

    def _check_lease_room(self, root: Path, holders: dict[str, float]) -> None:
        """Refuse a new lease on `root` (whose `holders` are these) past the bounds. Under the lock."""
        end = (
            "end the MCP servers (agent sessions) you no longer use: their leases end with them, or expire in their ttl"
        )
        if len(holders) >= MAX_LEASES_PER_FOLDER:
            raise InvalidRequestError(
                f"{root} already has {len(holders)} watch leases, the limit ({MAX_LEASES_PER_FOLDER}) for a folder: "
                f"no lease is added (the project is watched while any of them lives); {end}"
            )
        total = sum(len(h) for h in self._leases.values())
        if total >= MAX_LEASES:
            raise InvalidRequestError(
                f"this server already holds {total} watch leases, the limit ({MAX_LEASES}): no lease on {root} is "
                f"taken; {end}"
            )
        limit = max(MAX_LEASED_FOLDERS, self.settings.server.max_watched_projects)
        if not holders and len(self._leases) >= limit:
            raise InvalidRequestError(
                f"this server already holds watch leases on {len(self._leases)} folders, the limit ({limit}: the "
                f"larger of {MAX_LEASED_FOLDERS} and server.max_watched_projects): no lease on {root} is taken; "
                f"{end}, or watch this project explicitly (`lgrep watch {root}`)"
            )

    def release(self, root: Path, holder: str) -> bool:
        """End `holder`'s lease on `root`; the last lease ends a watch nobody asked for."""
        with self._lock:
            holders = self._leases.get(root, {})
            had = holders.pop(holder, None) is not None
            if not holders:
                self._leases.pop(root, None)
        if had:
            log.info("%s released its watch lease on %s", holder, root)
            self._stop_unheld(root)
        return had

    def tick(self) -> None:
        """Expire the leases not renewed in time (their watches end with the last one), and watch
        the leased projects that may be watched now (one got its first index). Called every half
        second by the server's maintenance."""
        now = time.monotonic()
        ended: list[Path] = []
        with self._lock:
            for root, holders in list(self._leases.items()):
                for holder in [h for h, expiry in holders.items() if expiry <= now]:
                    del holders[holder]
                    log.info("the watch lease of %s on %s expired", holder, root)
                if not holders:
                    del self._leases[root]
                    ended.append(root)
            waiting = [r for r in self._leases if r not in self._watchers and r not in self._unwatched]
        for root in ended:
            self._stop_unheld(root)
        for root in waiting:
            self._watch_leased(root)  # it reads the index state (once a tick, the cost of a lease)

    def leases(self, root: Path) -> int:
        """Live leases on a project."""
        with self._lock:
            return len(self._leases.get(root, ()))

    def watched(self) -> set[Path]:
        with self._lock:
            return set(self._watchers)

    def asked(self) -> set[Path]:
        """The projects watched because someone asked (not only leased): they keep a server busy."""
        with self._lock:
            return self._asked & set(self._watchers)

    def close(self) -> None:
        """Stop every watcher (the list stays saved for the next start)."""
        with self._lock:
            watchers = list(self._watchers.values())
            self._watchers.clear()
        for watcher in watchers:
            watcher.stop()

    def restore(self) -> None:
        """Watch again the projects a previous server was asked to watch (those whose folder still
        exists)."""
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
                self._asked.discard(root)
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
            self._start(root, lambda: self._held(root))
        except LgrepError as exc:
            log.warning("cannot watch %s with its new settings: %s", root, exc.message)
            self._save()

    def _watch_leased(self, root: Path) -> tuple[bool, str]:
        """Watch a leased project if a lease may; (watched now, why not)."""
        with self._lock:
            if root in self._watchers:
                return True, ""
            if root in self._unwatched:
                return False, _UNWATCHED.format(root=root)
        if not _indexed(self.settings, root):
            return False, _NO_INDEX
        try:
            result = self._start(root, lambda: self._held(root))
        except LgrepError as exc:
            return False, exc.message
        return result.watched, "" if result.watched else _ENDED

    def _held(self, root: Path) -> bool:
        """Whether the project should be watched: asked, or leased and not unwatched. Under the lock."""
        return root in self._asked or (bool(self._leases.get(root)) and root not in self._unwatched)

    def _stop_unheld(self, root: Path) -> None:
        """Stop a watch that nothing holds any more (no lease left, nobody asked)."""
        with self._lock:
            held = root in self._asked or bool(self._leases.get(root))
        if not held and self._stop(root):
            log.info("the last watch lease on %s ended", root)

    def _stop(self, root: Path) -> bool:
        with self._lock:
            watcher = self._watchers.pop(root, None)
        if watcher is None:
            return False
        watcher.stop()
        log.info("stopped watching %s", root)
        return True

    def _save(self) -> None:
        if not self.remember:
            return
        with self._lock:
            roots = sorted(self._asked & set(self._watchers))
            unwatched = sorted(self._unwatched)
        try:
            save_watched(self.settings.cache_dir, roots, unwatched)
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


def load_unwatched(cache_dir: Path) -> list[Path]:
    """The projects the user unwatched, which leases leave alone until they are watched again."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        data = json.loads((cache_dir / WATCHED_FILE).read_text(encoding="utf-8"))
        return [Path(p) for p in data.get("unwatched", []) if isinstance(p, str) and Path(p).is_absolute()]
    return []


def save_watched(cache_dir: Path, roots: Iterable[Path], unwatched: Iterable[Path] = ()) -> None:
    """Replace the saved lists of watched and unwatched projects (atomically). Raises OSError."""
    path = cache_dir / WATCHED_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = {"projects": sorted(str(r) for r in roots), "unwatched": sorted(str(r) for r in unwatched)}
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    tmp.replace(path)


def _indexed(settings: LgrepSettings, root: Path) -> bool:
    """The project has a searchable index (a lease never starts a first index)."""
    return root.is_dir() and index_state(project_dir(settings.cache_dir, root)) is ProjectState.READY
