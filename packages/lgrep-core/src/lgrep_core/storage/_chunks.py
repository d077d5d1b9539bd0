"""The chunks table of the open generation: writing a file's chunks (one commit per batch of files,
merge_insert and deletes by `path_key`) and reading them back."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lgrep_core.storage._errors import StorePart, storage_errors
from lgrep_core.storage._keys import KeySet
from lgrep_core.storage.engine import col, pyarrow
from lgrep_core.storage.schema import CHUNK_COLUMNS, chunks_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ChunkColumns", "ChunkRows"]

# Chunks as writers hand them over: one list per column of `CHUNK_COLUMNS`, equally long.
ChunkColumns = Mapping[str, Sequence[object]]


class ChunkRows(StorePart):
    """Writes and reads the rows of the store's `chunks` table; notes the files it changes in the change log."""

    @storage_errors
    def replace_files(self, rows: ChunkColumns, path_keys: Sequence[str]) -> None:
        """Atomically make `rows` (one list per column of `CHUNK_COLUMNS`) the only chunks of the
        files named by `path_keys`.

        One commit: readers see either the old chunks of a file or the new ones, never a mix.
        `path_keys` are hex digests, so the predicate below cannot carry user text.
        """
        if not path_keys:
            return
        self._store.changes.keys.update(path_keys)
        table = self._store.chunks
        if table.count_rows() == 0:
            if rows["id"]:
                table.add(_chunk_table(rows))
            return
        keys = ",".join(f"'{k}'" for k in path_keys if _is_hex(k))
        (
            table.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"path_key IN ({keys})")
            .execute(_chunk_table(rows))
        )

    @storage_errors
    def append_chunks(self, rows: ChunkColumns) -> None:
        """Add chunks (one list per column) of files the table holds nothing for (the caller knows)."""
        self._store.changes.keys.update(str(k) for k in rows["path_key"])
        self._store.chunks.add(_chunk_table(rows))

    @storage_errors
    def delete_files(self, path_keys: Sequence[str]) -> None:
        if path_keys:
            self._store.changes.keys.update(path_keys)
            self._store.chunks.delete(col("path_key").isin(list(path_keys)))

    @storage_errors
    def path_keys_with_chunks(self, path_keys: Sequence[str]) -> set[str]:
        """Which of these files (by `path_key`) have chunks in the table."""
        found: set[str] = set()
        for start in range(0, len(path_keys), 5000):
            part = list(path_keys[start : start + 5000])
            rows = (
                self._store.chunks.search()
                .where(col("path_key").isin(part))
                .select(["path_key"])
                .limit(None)
                .to_arrow()
            )
            found.update(rows.column("path_key").to_pylist())
        return found

    @storage_errors
    def indexed_path_keys(self) -> dict[str, str]:
        """path_key -> path for every file that has chunks in the table."""
        out: dict[str, str] = {}
        reader = self._store.chunks.search().select(["path_key", "path"]).to_batches(65536)
        for batch in reader:
            for key, path in zip(batch.column("path_key").to_pylist(), batch.column("path").to_pylist(), strict=True):
                out[key] = path
        return out

    @storage_errors
    def count_chunks(self) -> int:
        return int(self._store.chunks.count_rows())

    @storage_errors
    def chunk_vector_keys(self) -> KeySet:
        return KeySet.from_batches(b["vec_key"] for b in self.iter_chunk_rows(["vec_key"], 65536))

    @storage_errors
    def iter_chunk_rows(self, columns: Sequence[str], batch_rows: int = 4096) -> Iterator[dict[str, list[Any]]]:
        """The chunks table in batches of up to `batch_rows` rows: one list per requested column.

        Read a page at a time (offset and limit), not as one stream: LanceDB's stream reads ahead
        across fragments, which held ~180 MB of chunk text while the vector phase read a 250k-chunk
        table 4,096 rows at a time (a page: ~60 MB, and as fast). The table must not change
        meanwhile (the writer holds it; a reader reads a version it checked out)."""
        table = self._store.chunks
        total = int(table.count_rows())
        for start in range(0, total, batch_rows):
            page = table.search().select(list(columns)).offset(start).limit(batch_rows).to_arrow()
            if page.num_rows == 0:
                return
            yield {c: page.column(c).to_pylist() for c in columns}

    @storage_errors
    def chunks_by_vector_keys(self, keys: Sequence[str], columns: Sequence[str]) -> pa.Table:
        if not keys:
            return pyarrow().table({c: [] for c in columns})
        return (
            self._store.chunks.search()
            .where(col("vec_key").isin(list(keys)))
            .select(list(columns))
            .limit(None)
            .to_arrow()
        )


def _chunk_table(rows: ChunkColumns) -> pa.Table:
    return pyarrow().table({c: list(rows[c]) for c in CHUNK_COLUMNS}, schema=chunks_schema())


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdef" for c in text)
