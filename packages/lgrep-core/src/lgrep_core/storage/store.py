"""Safe access to one project's index: LanceDB tables, the file manifest, metadata and the write lock.

Layout under `project_dir(cache_dir, root)`:
  meta.json        identity (provider, model, dimension, chunker, schema) and bookkeeping
  lance/           LanceDB database: `chunks` (text, spans, metadata) and `vectors` (by embedding key)
  manifest.sqlite  per-file size, mtime and content hash: what the index holds, for incremental runs
  writer.lock      advisory lock held by the one writer

The tables are the truth about what is searchable; the manifest only tells a re-run which files it
may skip. Every write commits the tables first and the manifest after, so a process killed between
the two re-does a little work and never leaves a file half-indexed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

try:
    import lancedb
    from lancedb.expr import col
except ImportError as _exc:  # pragma: no cover - install hint
    raise ImportError("lgrep storage needs LanceDB: install lgrep-core[storage]") from _exc

from lgrep_core.errors import (
    IndexBusyError,
    IndexMismatchError,
    NotFoundError,
    SchemaVersionMismatchError,
    StorageError,
)
from lgrep_core.storage.schema import (
    CHUNKS_TABLE,
    SCHEMA_VERSION,
    VECTORS_TABLE,
    IndexIdentity,
    chunks_schema,
    project_dir,
    vectors_schema,
)

__all__ = ["FileRecord", "ProjectStore", "WriteLock"]

log = logging.getLogger(__name__)

# Old table versions are kept this long so that a reader holding one keeps working while the writer
# compacts (lancedb.md section 6: cleanup at 0 broke live readers).
CLEANUP_OLDER_THAN = timedelta(minutes=10)
# Each commit adds fragments to the chunks table; past this many rows written since the last
# compaction, fold them together so a reader's full scan (the searcher's snapshot load) stays fast.
COMPACT_AFTER_ROWS = 1000


@dataclass(frozen=True, slots=True)
class FileRecord:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    language: str
    chunks: int


class WriteLock:
    """One writer per project: an advisory `flock` that the kernel drops if the holder dies."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def acquire(self, timeout_s: float, project_root: Path) -> None:
        """Raises:
        IndexBusyError: another process holds the lock for longer than `timeout_s`.
        """
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + timeout_s
        delay = 0.05
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise StorageError(f"cannot lock {self._path}: {exc.strerror}") from None
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise IndexBusyError(
                        f"another lgrep process (pid {holder}) is indexing {project_root}; "
                        "wait for it to finish, or pass --wait SECONDS to queue behind it"
                    ) from None
                if delay == 0.05:
                    log.warning("waiting for another lgrep process (pid %s) indexing %s", holder, project_root)
                # Polling, not sleeping to paper over a race: flock has no timed wait.
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class ProjectStore:
    """Opens (and with `create=True`, initialises) the index of one project root."""

    def __init__(self, cache_dir: Path, root: Path) -> None:
        self.root = root.resolve()
        self.dir = project_dir(cache_dir, self.root)
        self._db: Any = None
        self._chunks: Any = None
        self._vectors: Any = None
        self._manifest: sqlite3.Connection | None = None

    # ----------------------------------------------------------------- lifecycle

    @property
    def meta_path(self) -> Path:
        return self.dir / "meta.json"

    def exists(self) -> bool:
        return self.meta_path.is_file()

    def read_meta(self) -> dict[str, Any]:
        try:
            data = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NotFoundError(f"{self.root} has no index yet: run `lgrep index {self.root}`") from None
        except (OSError, ValueError) as exc:
            raise StorageError(
                f"index metadata {self.meta_path} is unreadable ({exc}): run `lgrep index --force {self.root}`"
            ) from None
        if not isinstance(data, dict):
            raise StorageError(f"index metadata {self.meta_path} is damaged: run `lgrep index --force`")
        return data  # pyright: ignore[reportUnknownVariableType]

    def write_meta(self, **updates: Any) -> None:
        meta = self.read_meta() if self.exists() else {}
        meta.update(updates)
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(self.meta_path)

    def check_identity(self, identity: IndexIdentity) -> None:
        """Raises:
        SchemaVersionMismatchError, IndexMismatchError: the index was built differently.
        """
        meta = self.read_meta()
        stored = dict(meta.get("identity") or {})
        stored.setdefault("embedding_text", "1")  # indexes from before the field existed used text 1
        if stored.get("schema_version") != SCHEMA_VERSION:
            raise SchemaVersionMismatchError(
                f"the index of {self.root} has storage schema {stored.get('schema_version')}, this lgrep "
                f"writes {SCHEMA_VERSION}: run `lgrep index --force {self.root}`"
            )
        if stored != identity.as_dict():
            try:
                was = IndexIdentity(**stored).describe()
            except TypeError:
                was = str(stored)
            raise IndexMismatchError(
                f"index built with {was}, config says {identity.describe()}: run `lgrep index --force {self.root}`"
            )

    def create(self, identity: IndexIdentity) -> None:
        """Start a fresh, empty index (wiping whatever was there)."""
        self.close()
        if self.dir.exists():
            for name in (
                "lance",
                "manifest.sqlite",
                "manifest.sqlite-wal",
                "manifest.sqlite-shm",
                "meta.json",
            ):
                target = self.dir / name
                if target.is_dir():
                    import shutil

                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tag = self.dir.parent / "CACHEDIR.TAG"
        if not tag.exists():
            # The standard marker: backup tools and our own walker skip the cache dir.
            tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# lgrep index cache\n")
        db = lancedb.connect(str(self.dir / "lance"))
        db.create_table(CHUNKS_TABLE, schema=chunks_schema())
        db.create_table(VECTORS_TABLE, schema=vectors_schema(identity.dimension))
        self.write_meta(
            identity=identity.as_dict(),
            project_root=str(self.root),
            created_at=time.time(),
            last_indexed_at=None,
        )

    def open(self) -> None:
        """Open the tables.

        Raises:
            NotFoundError: there is no index.
            StorageError: the index is damaged.
        """
        if self._db is not None:
            return
        self.read_meta()
        try:
            self._db = lancedb.connect(str(self.dir / "lance"), read_consistency_interval=timedelta(0))
            self._chunks = self._db.open_table(CHUNKS_TABLE)
            self._vectors = self._db.open_table(VECTORS_TABLE)
            self._chunks.count_rows()
        except Exception as exc:  # lancedb raises a variety of types for damaged data
            self._db = None
            raise StorageError(
                f"the index of {self.root} cannot be opened ({type(exc).__name__}: {exc}); "
                f"run `lgrep index --force {self.root}` to rebuild it"
            ) from None

    def close(self) -> None:
        if self._manifest is not None:
            self._manifest.close()
            self._manifest = None
        self._db = self._chunks = self._vectors = None

    def lock(self) -> WriteLock:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return WriteLock(self.dir / "writer.lock")

    @property
    def chunks(self) -> Any:
        self.open()
        return self._chunks

    @property
    def vectors(self) -> Any:
        self.open()
        return self._vectors

    # ------------------------------------------------------------------ manifest

    @property
    def manifest(self) -> sqlite3.Connection:
        if self._manifest is None:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            conn = sqlite3.connect(self.dir / "manifest.sqlite", timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
                "sha256 TEXT, language TEXT, chunks INTEGER)"
            )
            self._manifest = conn
        return self._manifest

    def manifest_records(self) -> dict[str, FileRecord]:
        rows = self.manifest.execute("SELECT path, size, mtime_ns, sha256, language, chunks FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    def manifest_get(self, paths: Sequence[str]) -> dict[str, FileRecord]:
        out: dict[str, FileRecord] = {}
        for start in range(0, len(paths), 500):
            part = list(paths[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self.manifest.execute(
                f"SELECT path, size, mtime_ns, sha256, language, chunks FROM files WHERE path IN ({marks})",
                part,
            )
            out.update({r[0]: FileRecord(*r) for r in rows})
        return out

    def manifest_put(self, records: Iterable[FileRecord]) -> None:
        conn = self.manifest
        with _transaction(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                [(r.path, r.size, r.mtime_ns, r.sha256, r.language, r.chunks) for r in records],
            )

    def manifest_delete(self, paths: Iterable[str]) -> None:
        conn = self.manifest
        with _transaction(conn):
            conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in paths])

    # -------------------------------------------------------------- chunk writes

    def replace_files(self, rows: pa.Table, path_keys: Sequence[str]) -> None:
        """Atomically make `rows` the only chunks of the files named by `path_keys`.

        One commit: readers see either the old chunks of a file or the new ones, never a mix.
        `path_keys` are hex digests, so the predicate below cannot carry user text.
        """
        if not path_keys:
            return
        table = self.chunks
        if table.count_rows() == 0:
            if rows.num_rows:
                table.add(rows)
            return
        keys = ",".join(f"'{k}'" for k in path_keys if _is_hex(k))
        (
            table.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"path_key IN ({keys})")
            .execute(rows)
        )

    def append_chunks(self, rows: pa.Table) -> None:
        """Add chunks of files the table holds nothing for (the caller knows)."""
        self.chunks.add(rows)

    def delete_files(self, path_keys: Sequence[str]) -> None:
        if path_keys:
            self.chunks.delete(col("path_key").isin(list(path_keys)))

    def indexed_path_keys(self) -> dict[str, str]:
        """path_key -> path for every file that has chunks in the table."""
        out: dict[str, str] = {}
        reader = self.chunks.search().select(["path_key", "path"]).to_batches(65536)
        for batch in reader:
            for key, path in zip(batch.column("path_key").to_pylist(), batch.column("path").to_pylist(), strict=True):
                out[key] = path
        return out

    def note_chunk_writes(self, rows: int) -> None:
        """Count rows written to the chunks table; compact it once enough have piled up."""
        pending = int(self.read_meta().get("rows_since_compaction", 0)) + rows
        if pending >= COMPACT_AFTER_ROWS:
            self.chunks.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
            pending = 0
        self.write_meta(rows_since_compaction=pending)

    def compact_vectors(self) -> None:
        """Phase 2 appends one fragment per batch; fold them together so loading stays fast."""
        self.vectors.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)

    def optimize(self) -> None:
        for table in (self.chunks, self.vectors):
            table.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)

    # ------------------------------------------------------------------- vectors

    def stored_vector_keys(self) -> set[str]:
        keys: set[str] = set()
        for batch in self.vectors.search().select(["vec_key"]).to_batches(65536):
            keys.update(batch.column("vec_key").to_pylist())
        return keys

    def chunk_vector_keys(self) -> set[str]:
        keys: set[str] = set()
        for batch in self.chunks.search().select(["vec_key"]).to_batches(65536):
            keys.update(batch.column("vec_key").to_pylist())
        return keys

    def count_pending_chunks(self, stored: set[str] | None = None) -> int:
        """Chunks whose embedding key has no vector yet (BM25 still finds them)."""
        stored = self.stored_vector_keys() if stored is None else stored
        pending = 0
        for batch in self.iter_chunk_rows(["vec_key"], 65536):
            pending += sum(1 for k in batch.column("vec_key").to_pylist() if k not in stored)
        return pending

    def pending_vector_keys(self) -> set[str]:
        return self.chunk_vector_keys() - self.stored_vector_keys()

    def generation(self) -> tuple[object, ...]:
        """A token that changes whenever either table commits a new version: a reader's snapshot is
        current while it is unchanged. Costs two stats and two tiny reads (Lance's version hint and
        its versions folder), not a round trip through LanceDB, so a searcher can check it per query."""
        token: list[object] = []
        for table in (CHUNKS_TABLE, VECTORS_TABLE):
            versions = self.dir / "lance" / f"{table}.lance" / "_versions"
            try:
                token.append(versions.stat().st_mtime_ns)
                token.append((versions / "latest_version_hint.json").read_bytes())
            except OSError:
                token.append(int((self.chunks if table == CHUNKS_TABLE else self.vectors).version))
        return tuple(token)

    def iter_chunk_rows(self, columns: Sequence[str], batch_rows: int = 4096) -> Iterator[pa.RecordBatch]:
        yield from self.chunks.search().select(list(columns)).to_batches(batch_rows)

    def add_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        dim = vectors.shape[1]
        flat = pa.array(vectors.astype(np.float32, copy=False).reshape(-1), type=pa.float32())
        table = pa.table(
            {
                "vec_key": pa.array(list(keys), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
            },
            schema=vectors_schema(dim),
        )
        self.vectors.add(table)

    def load_vectors(self, keys: set[str] | None = None) -> tuple[list[str], np.ndarray]:
        """All stored vectors (optionally only those whose key is in `keys`), as a dense matrix."""
        out_keys: list[str] = []
        parts: list[np.ndarray] = []
        seen: set[str] = set()
        dim = int(self.read_meta()["identity"]["dimension"])
        for batch in self.vectors.search().select(["vec_key", "vector"]).to_batches(65536):
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

    def delete_vectors(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), 5000):
            self.vectors.delete(col("vec_key").isin(list(keys[start : start + 5000])))

    # ------------------------------------------------------------------- reading

    def chunks_by_vector_keys(self, keys: Sequence[str], columns: Sequence[str]) -> pa.Table:
        if not keys:
            return pa.table({c: [] for c in columns})
        return self.chunks.search().where(col("vec_key").isin(list(keys))).select(list(columns)).limit(None).to_arrow()


def _is_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdef" for c in text)


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
