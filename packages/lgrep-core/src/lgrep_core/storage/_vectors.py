"""The vectors table of the open generation: embeddings stored once per embedding key (the content
hash), so unchanged text is never embedded again; which keys still wait for a vector."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from lgrep_core.storage._errors import StorePart, storage_errors
from lgrep_core.storage._keys import KeySet
from lgrep_core.storage.engine import col, connect, pyarrow
from lgrep_core.storage.schema import VECTORS_TABLE, vectors_schema

__all__ = ["VectorRows"]

log = logging.getLogger(__name__)


class VectorRows(StorePart):
    """Writes and reads the rows of the store's `vectors` table; notes the keys it adds in the change log."""

    @storage_errors
    def stored_vector_keys(self) -> KeySet:
        table = self._store.vectors
        total = int(table.count_rows())
        pages = (
            table.search().select(["vec_key"]).offset(start).limit(65536).to_arrow().column("vec_key").to_pylist()
            for start in range(0, total, 65536)
        )
        return KeySet.from_batches(pages)

    @storage_errors
    def count_pending_chunks(self, stored: KeySet | None = None) -> int:
        """Chunks whose embedding key has no vector yet (BM25 still finds them)."""
        stored = self.stored_vector_keys() if stored is None else stored
        pending = 0
        for batch in self._store.iter_chunk_rows(["vec_key"], 65536):
            pending += int((stored.positions(batch["vec_key"]) < 0).sum())
        return pending

    @storage_errors
    def missing_vector_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of these embedding keys have no stored vector (a lookup, not a scan of all keys)."""
        missing = set(keys)
        for start in range(0, len(keys), 5000):
            part = list(keys[start : start + 5000])
            rows = (
                self._store.vectors.search().where(col("vec_key").isin(part)).select(["vec_key"]).limit(None).to_arrow()
            )
            missing.difference_update(rows.column("vec_key").to_pylist())
        return missing

    @storage_errors
    def add_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        self._add_vectors(keys, vectors)
        self._store.record_versions()

    def _add_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        self._store.changes.vec_keys.update(keys)
        dim = vectors.shape[1]
        pa = pyarrow()
        flat = pa.array(vectors.astype(np.float32, copy=False).reshape(-1), type=pa.float32())
        table = pa.table(
            {
                "vec_key": pa.array(list(keys), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
            },
            schema=vectors_schema(dim),
        )
        self._store.vectors.add(table)

    @storage_errors
    def load_vectors(self, keys: set[str] | None = None) -> tuple[list[str], np.ndarray]:
        """All stored vectors (optionally only those whose key is in `keys`), as a dense matrix."""
        out_keys: list[str] = []
        parts: list[np.ndarray] = []
        seen: set[str] = set()
        dim = int(self._store.read_meta()["identity"]["dimension"])
        for batch in self._store.vectors.search().select(["vec_key", "vector"]).to_batches(65536):
            batch_keys = batch.column("vec_key").to_pylist()
            matrix = batch.column("vector").flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
            take = [i for i, k in enumerate(batch_keys) if k not in seen and (keys is None or k in keys)]
            for i in take:
                seen.add(batch_keys[i])
                out_keys.append(batch_keys[i])
            if take:
                parts.append(matrix[take])
        matrix = np.vstack(parts).astype(np.float32, copy=False) if parts else np.zeros((0, dim), np.float32)
        return out_keys, matrix

    @storage_errors
    def delete_vectors(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), 5000):
            self._store.vectors.delete(col("vec_key").isin(list(keys[start : start + 5000])))

    def carry_vectors(self, gen: str) -> None:
        """Copy every vector of generation `gen` into the pinned new one (batch by batch)."""
        try:
            old = connect(str(self._store.dir / gen / "lance")).open_table(VECTORS_TABLE)
            copied = 0
            for batch in old.search().select(["vec_key", "vector"]).limit(None).to_batches(65536):
                if batch.num_rows:
                    self._store.vectors.add(pyarrow().Table.from_batches([batch]))
                    copied += batch.num_rows
        except Exception as exc:  # the old index is unreadable: embed again rather than fail
            log.warning("could not keep the vectors of the previous index (%s); embedding again", exc)
            return
        self._store.record_versions()
        log.info("kept %d vectors of the previous index", copied)
