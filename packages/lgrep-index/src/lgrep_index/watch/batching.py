"""The batch being gathered: path events coalesced per path, the debounce and maximum delay that end
it, and the `ChangeBatch` it becomes (ADR 0008).

A batch is due once no event arrived for the debounce time, and at the latest the maximum delay after
its first event. A file created and deleted again within one batch leaves nothing in it; a removed
folder covers every path under it; past `MAX_BATCH_PATHS` paths the batch becomes a rescan."""

from __future__ import annotations

from lgrep_index.changes import ChangeBatch
from lgrep_index.watch.events import FileEvent

__all__ = ["DEFAULT_DEBOUNCE_S", "DEFAULT_MAX_DELAY_S", "MAX_BATCH_PATHS", "PendingBatch"]

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


class PendingBatch:
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

    def file(self, path: str, event: FileEvent, now: float) -> None:
        self._touch(now)
        if self._rescan:
            return
        if event is FileEvent.GONE:
            if self._changed.get(path):
                # Created and gone within this batch (a temp file): the index never held it.
                del self._changed[path]
                return
            self._changed[path] = False
        else:
            self._changed.setdefault(path, event is FileEvent.CREATED)
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
