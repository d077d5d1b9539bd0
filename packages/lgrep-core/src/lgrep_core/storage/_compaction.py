"""Keeping the open generation's tables fast to read: fold their fragments together (LanceDB
`optimize`) once enough writes piled up, and drop old table versions no reader can still hold."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from lgrep_core.storage._errors import StorePart, storage_errors

__all__ = ["CLEANUP_OLDER_THAN", "COMPACT_AFTER_COMMITS", "COMPACT_AFTER_ROWS", "Compaction"]

# Old table versions are kept this long so that a reader holding one keeps working while the writer
# compacts (lancedb.md section 6: cleanup at 0 broke live readers).
CLEANUP_OLDER_THAN = timedelta(minutes=10)
# Each commit adds fragments to the chunks table; past this many rows written since the last
# compaction, fold them together so a reader's full scan (the searcher's snapshot load) stays fast.
COMPACT_AFTER_ROWS = 1000
# ... or past this many commits, whatever their size: the file watcher's updates commit a few rows
# each (a table compaction costs ~0.1 s, half of such an update), and every commit adds a fragment.
COMPACT_AFTER_COMMITS = 32


class Compaction(StorePart):
    """Counts the writes to the store's tables (in meta.json) and compacts them when due."""

    @storage_errors
    def note_chunk_writes(self, rows: int) -> None:
        """Count rows written to the chunks table; compact it once enough have piled up."""
        self._note_writes(self._store.chunks, "", rows)

    @storage_errors
    def note_vector_writes(self, rows: int) -> None:
        """Count vectors added (phase 2 appends one fragment per batch); compact the table once enough
        have piled up, so loading stays fast."""
        self._note_writes(self._store.vectors, "vector_", rows)

    def _note_writes(self, table: Any, prefix: str, rows: int) -> None:
        meta = self._store.read_meta()
        pending = int(meta.get(f"{prefix}rows_since_compaction", 0)) + rows
        commits = int(meta.get(f"{prefix}commits_since_compaction", 0)) + (1 if rows else 0)
        if pending >= COMPACT_AFTER_ROWS or commits >= COMPACT_AFTER_COMMITS:
            table.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
            pending = commits = 0
        self._store.write_meta(
            **{f"{prefix}rows_since_compaction": pending, f"{prefix}commits_since_compaction": commits}
        )
        self._store.record_versions()

    @storage_errors
    def compact_vectors(self) -> None:
        """Fold the vectors table's fragments together now."""
        self._store.vectors.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
        self._store.record_versions()

    @storage_errors
    def optimize(self) -> None:
        for table in (self._store.chunks, self._store.vectors):
            table.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
        self._store.record_versions()
