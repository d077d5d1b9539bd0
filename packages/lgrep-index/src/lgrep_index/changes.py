"""What changed in a project: the unit of work the file watcher hands to the indexer.

A `ChangeBatch` names paths to look at again, not what happened to them: by the time the indexer
reads a batch, a file reported as created may be gone again, so `Indexer.update` stats every path
it is given and decides from what is on disk now. That keeps the batch small (one entry per path,
whatever sequence of events it saw) and makes applying it idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ChangeBatch"]


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """Changes seen in one project since the previous batch.

    Paths are relative to the project root, '/'-separated, with names shown as the walker shows them
    (`lgrep_core.domain.pathnames`); none lies outside the root.

    - `changed`: files created, modified, deleted, or renamed from or to, that the walk would
      consider: each is to be checked again (index it if it is there and differs, drop it otherwise).
    - `removed_prefixes`: folders deleted or renamed away. The watcher cannot know which files the
      index holds under them, so every indexed path under each is to be checked again (the files
      that now sit at a folder's new name are in `changed`).
    - `rescan`: the batch cannot be trusted to be complete, so the whole project is to be walked
      again: an ignore file changed (the set of files worth indexing changed), events were lost (the
      kernel's queue overflowed, too many events arrived at once, a watch could not be placed), or
      more paths changed at once than are worth checking one by one (a branch switch).
      `changed` and `removed_prefixes` are then empty. `reasons` says why, for the log.
    - `config_changed`: the project's `.lgrep.yaml` changed: reload the settings before the rescan
      this batch also asks for (an `Indexer` built with them), and replace the watcher by one with the
      new walk options (its ignore patterns and size cap are the watcher's rules too).
    - `root_gone`: the project folder was deleted or moved away; the watcher has stopped itself.
    - `first_event_at`: `time.monotonic()` when the batch's first event was handled, to measure how
      long a change takes to become searchable.
    """

    changed: frozenset[str] = frozenset()
    removed_prefixes: frozenset[str] = frozenset()
    rescan: bool = False
    config_changed: bool = False
    root_gone: bool = False
    reasons: tuple[str, ...] = ()
    first_event_at: float = field(default=0.0, compare=False)

    @property
    def path_count(self) -> int:
        return len(self.changed) + len(self.removed_prefixes)
