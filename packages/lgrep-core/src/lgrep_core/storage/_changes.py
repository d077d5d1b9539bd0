"""The writer's change log: which files and vectors each recent commit changed (`changes.json`), so a
reader a few commits behind re-reads only those."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lgrep_core.storage.layout import CHANGES_FILE

__all__ = ["CHANGE_LOG_COMMITS", "CHANGE_LOG_KEYS", "ChangeLog"]

# What a generation's change log (changes.json) keeps for readers that refresh incrementally: the
# last this many commits, and at most this many keys (of files and of vectors) in all. A reader
# further behind reloads, unless only vectors were added (`ProjectReader.changes`). The keys are the
# bound that matters: a vector fill whose memory governor cut its batches to 16 chunks made 256
# commits in ~70 s, less than a 538k-chunk snapshot takes to load.
CHANGE_LOG_COMMITS = 2048
CHANGE_LOG_KEYS = 20_000


class ChangeLog:
    """What the writer changed since it last recorded a commit, and the log of recent commits readers follow."""

    def __init__(self) -> None:
        self.keys: set[str] = set()  # path keys of files whose chunks changed
        self.vec_keys: set[str] = set()  # embedding keys of vectors added
        self.all = False  # readers cannot know what changed: they reload

    def write(self, data_dir: Path, commit: int) -> None:
        """Append the entry of `commit` to the generation's log (trimmed) and start counting afresh."""
        path = data_dir / CHANGES_FILE
        try:
            entries = list(json.loads(path.read_text(encoding="utf-8"))["entries"])
        except (OSError, ValueError, KeyError, TypeError):
            entries = []
        entry: dict[str, Any]
        if self.all or len(self.keys) + len(self.vec_keys) > CHANGE_LOG_KEYS:
            entry = {"commit": commit, "all": True}
        else:
            entry = {"commit": commit, "keys": sorted(self.keys), "vec_keys": sorted(self.vec_keys)}
        entries.append(entry)
        entries = entries[-CHANGE_LOG_COMMITS:]
        total = 0
        for i in range(len(entries) - 1, -1, -1):
            total += len(entries[i].get("keys", ())) + len(entries[i].get("vec_keys", ()))
            if total > CHANGE_LOG_KEYS:
                entries = entries[i + 1 :]
                break
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"entries": entries}), encoding="utf-8")
        tmp.replace(path)
        self.keys.clear()
        self.vec_keys.clear()
        self.all = False
