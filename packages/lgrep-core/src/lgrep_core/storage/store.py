"""Safe access to one project's index: LanceDB tables, the file manifest, metadata and the write lock.

Layout under `project_dir(cache_dir, root)`:
  meta.json        identity (provider, model, dimension, chunker, schema) and bookkeeping
  lance/           LanceDB database: `chunks` (text, spans, metadata) and `vectors` (by embedding key)
  manifest.sqlite  per-file size, mtime, ctime, inode and content hash: what the index holds, for incremental runs
  writer.lock      advisory lock held by the one writer

The tables are the truth about what is searchable; the manifest only tells a re-run which files it
may skip. Every write commits the tables first and the manifest after, so a process killed between
the two re-does a little work and never leaves a file half-indexed.

`ProjectStore` is the one door to all of it. It opens the generation to read or write and checks it
for damage, keeps its meta.json, and hands each other job to a part:
  _generations.py  which generation a writer fills; create, publish, remove (ADR 0006)
  _chunks.py       the chunks table: a file's chunks replaced, appended, deleted; read back
  _vectors.py      the vectors table: embeddings by content hash; which keys still wait
  _manifest.py     manifest.sqlite: per-file stat (size, mtime, ctime, inode) and hash
  _compaction.py   folding the tables' fragments together and dropping old versions
  _changes.py      changes.json: which files each recent commit changed, for readers
  _lock.py         writer.lock (and the release index's versions.lock)
  _errors.py       what LanceDB and SQLite raise, as the StorageError that says what to run
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lgrep_core.domain.errors import (
    IndexMismatchError,
    LgrepError,
    NotFoundError,
    SchemaVersionMismatchError,
    StorageError,
)
from lgrep_core.runtime.memory import release_free_heap
from lgrep_core.storage._changes import ChangeLog
from lgrep_core.storage._chunks import ChunkColumns, ChunkRows
from lgrep_core.storage._compaction import Compaction
from lgrep_core.storage._errors import storage_errors
from lgrep_core.storage._generations import Generations
from lgrep_core.storage._keys import KeySet
from lgrep_core.storage._lock import WriteLock, make_dir, versions_lock
from lgrep_core.storage._manifest import Manifest
from lgrep_core.storage._vectors import VectorRows
from lgrep_core.storage.engine import connect, pyarrow
from lgrep_core.storage.layout import (
    CURRENT_POINTER,
    META_FILE,
    FileRecord,
    IndexState,
    disk_full_error,
    generations,
    index_state,
    not_ready_error,
    read_meta_file,
    read_pointer,
    writer_pid,
)
from lgrep_core.storage.schema import (
    CHUNKS_TABLE,
    SCHEMA_VERSION,
    VECTORS_TABLE,
    IndexIdentity,
    project_dir,
)

if TYPE_CHECKING:
    import pyarrow as pa


__all__ = [
    "CURRENT_POINTER",
    "ChunkColumns",
    "FileRecord",
    "IndexState",
    "KeySet",
    "ProjectStore",
    "WriteLock",
    "release_arrow_memory",
    "release_free_memory",
    "versions_lock",
]


class ProjectStore:
    """Opens one project's index: readers the published generation, the writer the one it builds
    (see `_generations.Generations`). Each job is done by a part; this class is their one facade."""

    def __init__(self, cache_dir: Path, root: Path) -> None:
        self.root = root.resolve()
        self.dir = project_dir(cache_dir, self.root)
        self.opened: str | None = None  # the generation whose tables are open
        self.pinned: str | None = None  # the writer's generation (may not be published yet)
        self._db: Any = None
        self._chunks: Any = None
        self._vectors: Any = None
        # What the writer changed since it last recorded a commit (the change log readers follow).
        self.changes = ChangeLog()
        self._manifest = Manifest(self)
        self._chunk_rows = ChunkRows(self)
        self._vector_rows = VectorRows(self)
        self._compaction = Compaction(self)
        self._generations = Generations(self, self._manifest, self._vector_rows)

    # ---------------------------------------------------------------- generations

    @property
    def pointer_path(self) -> Path:
        return self.dir / CURRENT_POINTER

    def published_generation(self) -> str | None:
        """The name of the live generation, or None when nothing is published.

        Raises:
            StorageError: the pointer is damaged.
        """
        return read_pointer(self.dir, self.root)

    def generations(self) -> list[str]:
        """Every generation folder on disk, oldest first."""
        return generations(self.dir)

    def state(self) -> IndexState:
        return index_state(self.dir)

    def writer_pid(self) -> str | None:
        return writer_pid(self.dir)

    def _not_ready(self) -> NotFoundError:
        return not_ready_error(self.dir, self.root)

    @property
    def data_dir(self) -> Path:
        """The folder of the generation this store reads or writes.

        Raises:
            NotFoundError: nothing is published (the message says whether a build is running).
            StorageError: the pointer is damaged.
        """
        gen = self.pinned or self.opened or self.published_generation()
        if gen is None:
            raise self._not_ready()
        return self.dir / gen

    def begin_write(self, identity: IndexIdentity, *, force: bool) -> bool:
        """Choose the generation this writer fills (the caller holds the write lock); True if new.
        See `Generations.begin_write`."""
        return self._generations.begin_write(identity, force=force)

    @property
    def is_published(self) -> bool:
        return self._generations.is_published

    def publish(self) -> None:
        """Make the writer's generation the live one and delete the others."""
        self._generations.publish()

    def end_write(self) -> None:
        self._generations.end_write()

    def create(self, identity: IndexIdentity, *, publish: bool = True) -> None:
        """Start a fresh, empty generation for this writer (and publish it at once unless told not to)."""
        self._generations.create(identity, publish=publish)

    # ------------------------------------------------------- meta.json and the open tables

    @property
    def meta_path(self) -> Path:
        return self.data_dir / META_FILE

    def exists(self) -> bool:
        """Whether a generation is published (searchable)."""
        return self.state() is IndexState.READY

    def read_meta(self) -> dict[str, Any]:
        return read_meta_file(self.meta_path, self.root, self.dir)

    @storage_errors
    def write_meta(self, **updates: Any) -> None:
        meta_path = self.meta_path
        meta = self.read_meta() if meta_path.is_file() else {}
        meta.update(updates)
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(meta_path)

    def check_identity(self, identity: IndexIdentity) -> None:
        """Raises:
        SchemaVersionMismatchError, IndexMismatchError: the index was built differently.
        StorageError: its metadata is damaged.
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

    def open(self) -> None:
        """Open the tables of the generation to read (the published one) or write (the pinned one).
        A reader whose generation was replaced since it opened it closes it and opens the new one.

        Raises:
            NotFoundError: there is no index.
            StorageError: the index is damaged.
        """
        while True:
            gen = self.pinned or self.published_generation()
            if gen is None:
                raise self._not_ready()
            if self._db is not None and gen == self.opened:
                return
            try:
                self._open_generation(gen)
                return
            except LgrepError:
                # A rebuild published and deleted this generation between reading the pointer and
                # opening it: follow the pointer again. A writer's own generation is never retried.
                if self.pinned is not None or self.published_generation() == gen:
                    raise

    def _open_generation(self, gen: str) -> None:
        self.close()
        self.opened = gen
        meta = self.read_meta()
        try:
            self._db = connect(str(self.dir / gen / "lance"), read_consistency_interval=timedelta(0))
            self._chunks = self._db.open_table(CHUNKS_TABLE)
            self._vectors = self._db.open_table(VECTORS_TABLE)
            versions = (int(self._chunks.version), int(self._vectors.version))
            self._chunks.count_rows()
            self._vectors.count_rows()
        except Exception as exc:  # lancedb raises a variety of types for damaged data
            self._db = self.opened = None
            raise self.damaged(exc) from None
        expected = meta.get("table_versions") or [0, 0]
        if any(have < int(want) for have, want in zip(versions, expected, strict=False)):
            self._db = self.opened = None
            raise StorageError(
                f"the index of {self.root} is damaged (its tables are at versions {list(versions)}, older than "
                f"the {expected} last written: files are missing): run `lgrep index --force {self.root}`"
            )

    def generation(self) -> tuple[object, ...]:
        """A token that changes whenever a new generation is published or either table commits a new
        version: a reader's snapshot is current while it is unchanged. Costs a few stats and tiny reads
        (the pointer, Lance's version hint and its versions folder), not a round trip through LanceDB,
        so a searcher can check it per query. Call `open` first: it follows the pointer."""
        self.open()
        assert self.opened is not None
        token: list[object] = [self.opened]
        for table in (CHUNKS_TABLE, VECTORS_TABLE):
            versions = self.dir / self.opened / "lance" / f"{table}.lance" / "_versions"
            try:
                token.append(versions.stat().st_mtime_ns)
                token.append((versions / "latest_version_hint.json").read_bytes())
            except OSError:
                token.append(int((self.chunks if table == CHUNKS_TABLE else self.vectors).version))
        return tuple(token)

    def damaged(self, exc: BaseException) -> StorageError:
        """The error for a read or write that failed: on damaged data, or on a full disk (DiskFullError)."""
        full = disk_full_error(exc, self.dir, f"lgrep index {self.root}")
        if full is not None:
            return full
        detail = str(exc).splitlines()[0][:300] if str(exc) else ""
        return StorageError(
            f"the index of {self.root} cannot be read ({type(exc).__name__}: {detail}); "
            f"run `lgrep index --force {self.root}` to rebuild it"
        )

    @storage_errors
    def record_versions(self) -> None:
        """Record a commit for readers (writer): the tables' versions and a commit number in the
        metadata, and which files changed in the change log. A reader that finds older table versions
        than these knows that files of the index went missing instead of silently reading an older,
        emptier table; a reader that is a few commits behind re-reads only the files they name."""
        versions = [int(self.chunks.version), int(self.vectors.version)]
        commit = int(self.read_meta().get("commit") or 0) + 1
        self.changes.write(self.data_dir, commit)
        self.write_meta(table_versions=versions, commit=commit)

    def close(self) -> None:
        self._manifest.close()
        self._db = self._chunks = self._vectors = None
        self.opened = None

    def lock(self) -> WriteLock:
        make_dir(self.dir)
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

    def manifest_records(self) -> dict[str, FileRecord]:
        return self._manifest.records()

    def manifest_get(self, paths: Sequence[str]) -> dict[str, FileRecord]:
        return self._manifest.get(paths)

    def manifest_paths_under(self, folders: Iterable[str]) -> list[str]:
        """Paths of the manifest inside any of these project-relative folders (at any depth)."""
        return self._manifest.paths_under(folders)

    def manifest_put(self, records: Iterable[FileRecord]) -> None:
        self._manifest.put(records)

    def manifest_delete(self, paths: Iterable[str]) -> None:
        self._manifest.delete(paths)

    # -------------------------------------------------------------------- chunks

    def replace_files(self, rows: ChunkColumns, path_keys: Sequence[str]) -> None:
        """Atomically make `rows` the only chunks of the files named by `path_keys` (one commit)."""
        self._chunk_rows.replace_files(rows, path_keys)

    def append_chunks(self, rows: ChunkColumns) -> None:
        """Add chunks of files the table holds nothing for (the caller knows)."""
        self._chunk_rows.append_chunks(rows)

    def delete_files(self, path_keys: Sequence[str]) -> None:
        self._chunk_rows.delete_files(path_keys)

    def path_keys_with_chunks(self, path_keys: Sequence[str]) -> set[str]:
        """Which of these files (by `path_key`) have chunks in the table."""
        return self._chunk_rows.path_keys_with_chunks(path_keys)

    def indexed_path_keys(self) -> dict[str, str]:
        """path_key -> path for every file that has chunks in the table."""
        return self._chunk_rows.indexed_path_keys()

    def count_chunks(self) -> int:
        return self._chunk_rows.count_chunks()

    def chunk_vector_keys(self) -> KeySet:
        """The embedding key of every chunk (each once)."""
        return self._chunk_rows.chunk_vector_keys()

    def iter_chunk_rows(self, columns: Sequence[str], batch_rows: int = 4096) -> Iterator[dict[str, list[Any]]]:
        """The chunks table in batches of up to `batch_rows` rows: one list per requested column."""
        return self._chunk_rows.iter_chunk_rows(columns, batch_rows)

    def chunks_by_vector_keys(self, keys: Sequence[str], columns: Sequence[str]) -> pa.Table:
        return self._chunk_rows.chunks_by_vector_keys(keys, columns)

    # ---------------------------------------------------------------- compaction

    def note_chunk_writes(self, rows: int) -> None:
        """Count rows written to the chunks table; compact it once enough have piled up."""
        self._compaction.note_chunk_writes(rows)

    def note_vector_writes(self, rows: int) -> None:
        """Count vectors added; compact the table once enough have piled up."""
        self._compaction.note_vector_writes(rows)

    def compact_vectors(self) -> None:
        """Fold the vectors table's fragments together now."""
        self._compaction.compact_vectors()

    def optimize(self) -> None:
        self._compaction.optimize()

    # ------------------------------------------------------------------- vectors

    def stored_vector_keys(self) -> KeySet:
        """The key of every stored vector."""
        return self._vector_rows.stored_vector_keys()

    def count_pending_chunks(self, stored: KeySet | None = None) -> int:
        """Chunks whose embedding key has no vector yet (BM25 still finds them)."""
        return self._vector_rows.count_pending_chunks(stored)

    def missing_vector_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of these embedding keys have no stored vector (a lookup, not a scan of all keys)."""
        return self._vector_rows.missing_vector_keys(keys)

    def pending_vector_keys(self) -> KeySet:
        """Embedding keys of chunks that have no vector yet (a compact set: see `_keys.KeySet`)."""
        return self.chunk_vector_keys().difference(self.stored_vector_keys())

    def add_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        self._vector_rows.add_vectors(keys, vectors)

    def load_vectors(self, keys: set[str] | None = None) -> tuple[list[str], np.ndarray]:
        """All stored vectors (optionally only those whose key is in `keys`), as a dense matrix."""
        return self._vector_rows.load_vectors(keys)

    def delete_vectors(self, keys: Sequence[str]) -> None:
        self._vector_rows.delete_vectors(keys)


def release_arrow_memory() -> None:
    """Hand Arrow's pooled buffers back (after a phase whose tables are gone). A no-op before the
    first table was read or written."""
    if "pyarrow" in sys.modules:
        pyarrow().default_memory_pool().release_unused()


def release_free_memory() -> None:
    """Hand back what a finished piece of work left free: Arrow's pooled buffers, then the C heap's
    free pages (which count as resident until trimmed)."""
    release_arrow_memory()
    release_free_heap()
