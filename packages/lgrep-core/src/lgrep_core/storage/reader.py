"""Read-only access to one project's index, for search readers.

A `ProjectReader` never creates, repairs or locks anything, holds no open handles between calls, and
so may be shared by any number of threads (and any number of processes over the same cache). What it
returns are plain Python lists, numpy arrays and dataclasses: Arrow stays inside storage.

Which state of the index a reader sees is an `IndexVersion`, read from two small files lgrep itself
writes (the `CURRENT` pointer and the generation's `meta.json`), never from LanceDB's private files:
the writer records the tables' versions there after every commit, so the same token works on a local
disk and on object storage. Every read names the version it wants and gets exactly that version's
rows (LanceDB time travel), so a snapshot assembled from several reads is consistent even while the
writer commits.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lgrep_core.domain.errors import LgrepError, StorageError
from lgrep_core.storage._manifest import manifest_columns
from lgrep_core.storage.engine import col, connect, lancedb
from lgrep_core.storage.layout import (
    CHANGES_FILE,
    META_FILE,
    FileRecord,
    IndexState,
    disk_full_error,
    index_state,
    not_ready_error,
    read_meta_file,
    read_pointer,
)
from lgrep_core.storage.schema import CHUNKS_TABLE, VECTORS_TABLE, project_dir

__all__ = ["ChangeSet", "IndexVersion", "ProjectReader"]

# Keys per `isin` predicate: LanceDB parses the predicate, so very long lists are split.
_KEYS_PER_FILTER = 5000


@dataclass(frozen=True, slots=True)
class IndexVersion:
    """One committed state of a project's index. Equal versions hold equal rows.

    `commit` counts the writer's recorded commits within the generation; `tables` are the LanceDB
    versions of the chunks and vectors tables at that commit (None for an index written before they
    were recorded: reads then take the tables' latest versions)."""

    generation: str
    commit: int
    tables: tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """What changed between two versions: files (by path key) whose chunks were replaced or
    removed, and embedding keys whose vectors were added."""

    path_keys: frozenset[str]
    vec_keys: frozenset[str]


class ProjectReader:
    """Reads the published index of one project (see the module docstring)."""

    def __init__(self, cache_dir: Path, root: Path) -> None:
        self.root = root.resolve()
        self.dir = project_dir(cache_dir, self.root)

    # ----------------------------------------------------------------------------- versions

    def state(self) -> IndexState:
        return index_state(self.dir)

    def version(self) -> IndexVersion:
        """The version readers should see now: the published generation at its last recorded commit.

        Raises:
            NotFoundError: nothing is published (the message says whether a build is running).
            StorageError: the pointer or the metadata is damaged.
        """
        gen = read_pointer(self.dir, self.root)
        if gen is None:
            raise not_ready_error(self.dir, self.root)
        meta = self.meta(gen)
        tables = meta.get("table_versions")
        versions = (int(tables[0]), int(tables[1])) if isinstance(tables, list) and len(tables) == 2 else None
        return IndexVersion(gen, int(meta.get("commit") or 0), versions)

    def meta(self, generation: str | IndexVersion) -> dict[str, Any]:
        gen = generation.generation if isinstance(generation, IndexVersion) else generation
        return read_meta_file(self.dir / gen / META_FILE, self.root, self.dir)

    def changes(self, old: IndexVersion, new: IndexVersion) -> ChangeSet | None:
        """What changed from `old` to `new`, or None when that is not known (another generation, a
        change too large to list, a log that no longer reaches back while chunks changed): the
        caller then reads everything again."""
        if old.generation != new.generation or old.commit > new.commit or old.tables is None:
            return None
        if old.commit == new.commit:
            return ChangeSet(frozenset(), frozenset())
        try:
            data = json.loads((self.dir / new.generation / CHANGES_FILE).read_text(encoding="utf-8"))
            covered = {int(e["commit"]): e for e in data["entries"]}
        except (OSError, ValueError, KeyError, TypeError):
            return self._vectors_only(old, new)
        paths: set[str] = set()
        vecs: set[str] = set()
        for commit in range(old.commit + 1, new.commit + 1):
            entry = covered.get(commit)
            if entry is None or entry.get("all"):
                return self._vectors_only(old, new)
            paths.update(str(k) for k in entry.get("keys", ()))
            vecs.update(str(k) for k in entry.get("vec_keys", ()))
        return ChangeSet(frozenset(paths), frozenset(vecs))

    def _vectors_only(self, old: IndexVersion, new: IndexVersion) -> ChangeSet | None:
        """The log cannot say what changed. If the chunks table did not move, only vectors were
        added (a vector fill, which commits many small batches and outruns the log while a big
        project's snapshot loads): every key with a vector now, of which the reader takes those it
        lacks. Without this a reader of a 538k-chunk fill reloaded everything again and again (2-3 GB
        each time), never catching up. Raises StorageError when the vectors cannot be read."""
        if old.tables is None or new.tables is None or old.tables[0] != new.tables[0]:
            return None
        return ChangeSet(frozenset(), frozenset(self.vector_keys(new)))

    # -------------------------------------------------------------------------------- reads

    def _tables(self, version: IndexVersion) -> tuple[Any, Any]:
        lancedb()  # imported first: the first import takes a second, the check below must not
        lance_dir = self.dir / version.generation / "lance"
        # LanceDB's connect creates a missing folder: a reader that connected to a generation a
        # rebuild had just deleted would leave it behind. A reader never creates anything.
        if not lance_dir.is_dir():
            raise StorageError(f"the index generation {version.generation} of {self.root} was replaced")
        try:
            db = connect(str(lance_dir))
            chunks = db.open_table(CHUNKS_TABLE)
            vectors = db.open_table(VECTORS_TABLE)
            if version.tables is not None:
                chunks.checkout(version.tables[0])
                vectors.checkout(version.tables[1])
        except LgrepError:
            raise
        except Exception as exc:  # LanceDB raises many types for missing or damaged files
            raise self.damaged(exc) from None
        return chunks, vectors

    def read_chunks(
        self, version: IndexVersion, columns: Sequence[str], path_keys: Sequence[str] | None = None
    ) -> dict[str, list[Any]]:
        """Columns of every chunk at `version` (only the files named by `path_keys`, when given)."""
        chunks, _ = self._tables(version)
        out: dict[str, list[Any]] = {c: [] for c in columns}
        try:
            # An index of an older layout lacks newer columns (`refs`): they read as None.
            have = set(chunks.schema.names)
            present = [c for c in columns if c in have]
            absent = [c for c in columns if c not in have]
            for query in self._filtered(chunks, "path_key", path_keys):
                for batch in query.select(present).to_batches(65536):
                    for c in present:
                        out[c].extend(batch.column(c).to_pylist())
                    for c in absent:
                        out[c].extend([None] * batch.num_rows)
        except Exception as exc:
            raise self.damaged(exc) from None
        return out

    def iter_chunk_pages(
        self, version: IndexVersion, columns: Sequence[str], rows: int = 1024
    ) -> Iterator[dict[str, list[Any]]]:
        """Columns of every chunk at `version`, a page of up to `rows` rows at a time, in the order
        `read_chunks` returns them (a column an older index lacks reads as None)."""
        chunks, _ = self._tables(version)
        have = set(chunks.schema.names)
        for page in self._pages(chunks, [c for c in columns if c in have], rows):
            yield {c: page.column(c).to_pylist() if c in have else [None] * page.num_rows for c in columns}

    def iter_vector_pages(self, version: IndexVersion, rows: int = 4096) -> Iterator[tuple[list[str], np.ndarray]]:
        """Every stored vector at `version`, a page at a time: its keys and a float32 matrix (a key
        may repeat across pages; the first is the one `read_vectors` keeps)."""
        _, vectors = self._tables(version)
        dim = int(self.meta(version)["identity"]["dimension"])
        for page in self._pages(vectors, ["vec_key", "vector"], rows):
            matrix = page.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            yield page.column("vec_key").to_pylist(), np.asarray(matrix, dtype=np.float32).reshape(-1, dim)

    def _pages(self, table: Any, columns: list[str], rows: int) -> Iterator[Any]:
        """A checked-out table's rows as Arrow tables of up to `rows` rows, read a page at a time
        (offset and limit), not as one stream: LanceDB's stream reads ahead across fragments, which
        holds tens of MB of chunk text."""
        try:
            total = int(table.count_rows())
            for start in range(0, total, rows):
                page = table.search().select(columns).offset(start).limit(rows).to_arrow()
                if page.num_rows == 0:
                    return
                yield page
        except Exception as exc:
            raise self.damaged(exc) from None

    def read_vectors(self, version: IndexVersion, keys: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Stored vectors at `version` (only those named by `keys`, when given): their keys and a
        float32 matrix, one row each, each key once."""
        _, vectors = self._tables(version)
        dim = int(self.meta(version)["identity"]["dimension"])
        out_keys: list[str] = []
        parts: list[np.ndarray] = []
        seen: set[str] = set()
        try:
            for query in self._filtered(vectors, "vec_key", keys):
                for batch in query.select(["vec_key", "vector"]).to_batches(65536):
                    batch_keys = batch.column("vec_key").to_pylist()
                    matrix = batch.column("vector").flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
                    take = [i for i, k in enumerate(batch_keys) if k not in seen]
                    seen.update(batch_keys[i] for i in take)
                    out_keys.extend(batch_keys[i] for i in take)
                    if take:
                        parts.append(np.asarray(matrix[take], dtype=np.float32))
        except Exception as exc:
            raise self.damaged(exc) from None
        matrix = np.vstack(parts) if parts else np.zeros((0, dim), np.float32)
        return out_keys, matrix

    @staticmethod
    def _filtered(table: Any, column: str, values: Sequence[str] | None) -> list[Any]:
        if values is None:
            return [table.search()]
        values = list(values)
        return [
            table.search().where(col(column).isin(values[i : i + _KEYS_PER_FILTER])).limit(None)
            for i in range(0, len(values), _KEYS_PER_FILTER)
        ]

    def vector_keys(self, version: IndexVersion) -> set[str]:
        """The embedding keys that have a stored vector at `version`."""
        _, vectors = self._tables(version)
        keys: set[str] = set()
        try:
            for batch in vectors.search().select(["vec_key"]).to_batches(65536):
                keys.update(batch.column("vec_key").to_pylist())
        except Exception as exc:
            raise self.damaged(exc) from None
        return keys

    def count_pending(self, version: IndexVersion) -> int:
        """Chunks whose vector is not stored yet (BM25 finds them meanwhile)."""
        stored = self.vector_keys(version)
        return sum(1 for k in self.read_chunks(version, ["vec_key"])["vec_key"] if k not in stored)

    def count_chunks(self, version: IndexVersion) -> int:
        chunks, _ = self._tables(version)
        try:
            return int(chunks.count_rows())
        except Exception as exc:
            raise self.damaged(exc) from None

    def manifest(self, version: IndexVersion, paths: Sequence[str] | None = None) -> dict[str, FileRecord]:
        """Manifest records of the given files (all files when None): size, mtime, ctime, inode and hash
        at index time. Opened read-only: a missing manifest is an empty one here (a writer re-derives
        it), and one an older lgrep wrote gives records without ctime and inode (a writer adds them)."""
        path = self.dir / version.generation / "manifest.sqlite"
        if not path.is_file():
            if not path.parent.is_dir():
                raise (
                    not_ready_error(self.dir, self.root)
                    if self.state() is not IndexState.READY
                    else StorageError(f"the index generation {version.generation} of {self.root} was replaced")
                )
            return {}
        out: dict[str, FileRecord] = {}
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30, check_same_thread=False)
            try:
                select = f"SELECT {manifest_columns(conn)} FROM files"
                if paths is None:
                    out.update({r[0]: FileRecord(*r) for r in conn.execute(select)})
                else:
                    for start in range(0, len(paths), 500):
                        part = list(paths[start : start + 500])
                        rows = conn.execute(f"{select} WHERE path IN ({','.join('?' * len(part))})", part)
                        out.update({r[0]: FileRecord(*r) for r in rows})
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise StorageError(
                f"the file manifest {path} is damaged ({exc}): run `lgrep index {self.root}` to repair it"
            ) from None
        return out

    def damaged(self, exc: BaseException) -> StorageError:
        """The error for a read that failed on damaged or vanished data (or a full disk: DiskFullError)."""
        full = disk_full_error(exc, self.dir, f"lgrep index {self.root}")
        if full is not None:
            return full
        detail = str(exc).splitlines()[0][:300] if str(exc) else ""
        return StorageError(
            f"the index of {self.root} cannot be read ({type(exc).__name__}: {detail}); "
            f"run `lgrep index --force {self.root}` to rebuild it"
        )
