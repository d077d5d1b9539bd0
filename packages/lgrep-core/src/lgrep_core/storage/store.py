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
import functools
import inspect
import json
import logging
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from lgrep_core.errors import (
    IndexBusyError,
    IndexMismatchError,
    LgrepError,
    NotFoundError,
    SchemaVersionMismatchError,
    StorageError,
)
from lgrep_core.storage.engine import col, lancedb, pyarrow
from lgrep_core.storage.layout import (
    CHANGES_FILE,
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
    CHUNK_COLUMNS,
    CHUNKS_TABLE,
    SCHEMA_VERSION,
    VECTORS_TABLE,
    IndexIdentity,
    chunks_schema,
    project_dir,
    vectors_schema,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CURRENT_POINTER",
    "ChunkColumns",
    "FileRecord",
    "IndexState",
    "ProjectStore",
    "WriteLock",
    "release_arrow_memory",
    "versions_lock",
]

# Chunks as writers hand them over: one list per column of `CHUNK_COLUMNS`, equally long.
ChunkColumns = Mapping[str, Sequence[object]]

log = logging.getLogger(__name__)

# Old table versions are kept this long so that a reader holding one keeps working while the writer
# compacts (lancedb.md section 6: cleanup at 0 broke live readers).
CLEANUP_OLDER_THAN = timedelta(minutes=10)
# Each commit adds fragments to the chunks table; past this many rows written since the last
# compaction, fold them together so a reader's full scan (the searcher's snapshot load) stays fast.
COMPACT_AFTER_ROWS = 1000
# What a generation's change log (changes.json) keeps for readers that refresh incrementally: the
# last this many commits, and at most this many file keys in all. A reader further behind reloads.
CHANGE_LOG_COMMITS = 256
CHANGE_LOG_KEYS = 20_000
# ... or past this many commits, whatever their size: the file watcher's updates commit a few rows
# each (a table compaction costs ~0.1 s, half of such an update), and every commit adds a fragment.
COMPACT_AFTER_COMMITS = 32


class WriteLock:
    """One writer per project: an advisory `flock` that the kernel drops if the holder dies."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def acquire(
        self,
        timeout_s: float,
        project_root: Path,
        *,
        doing: str = "indexing",
        advice: str = "wait for it to finish, or pass --wait SECONDS to queue behind it",
    ) -> None:
        """Raises:
        IndexBusyError: another process holds the lock for longer than `timeout_s`; the message says
            what it is `doing` and what the user can do (`advice`: only flags the caller has).
        """
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot open the lock file {self._path}: {exc.strerror}") from None
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
                        f"another lgrep process (pid {holder}) is indexing {project_root}, so lgrep cannot "
                        f"go on {doing} it now; {advice}"
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


_F = TypeVar("_F", bound=Callable[..., Any])


def _storage_errors(method: _F) -> _F:
    """LanceDB and SQLite raise many types (ValueError, OSError, RuntimeError, ...) for damaged or
    vanished files: turn them into the StorageError that says what to run. Generators too."""
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def gen_wrapper(self: ProjectStore, *args: Any, **kwargs: Any) -> Any:
            try:
                yield from method(self, *args, **kwargs)
            except LgrepError:
                raise
            except Exception as exc:
                raise self.damaged(exc) from exc

        return gen_wrapper  # type: ignore[return-value]

    @functools.wraps(method)
    def wrapper(self: ProjectStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except LgrepError:
            raise
        except Exception as exc:
            raise self.damaged(exc) from exc

    return wrapper  # type: ignore[return-value]


class ProjectStore:
    """Opens one project's index: readers the published generation, the writer the one it builds.

    Every build that starts from nothing (the first index, `--force`, a repair) writes a new
    generation folder beside the live one and publishes it by replacing the `CURRENT` pointer, so a
    search never sees a half-built or emptied index. Incremental runs write the live generation in
    place (LanceDB commits make each batch of files appear at once).
    """

    def __init__(self, cache_dir: Path, root: Path) -> None:
        self.root = root.resolve()
        self.dir = project_dir(cache_dir, self.root)
        self._gen: str | None = None  # the generation whose tables are open
        self._pinned: str | None = None  # the writer's generation (may not be published yet)
        self._db: Any = None
        self._chunks: Any = None
        self._vectors: Any = None
        self._manifest: sqlite3.Connection | None = None
        # What the writer changed since it last recorded a commit (the change log readers follow).
        self._changed_keys: set[str] = set()
        self._changed_vectors: set[str] = set()
        self._change_all = False

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
        gen = self._pinned or self._gen or self.published_generation()
        if gen is None:
            raise self._not_ready()
        return self.dir / gen

    def begin_write(self, identity: IndexIdentity, *, force: bool) -> bool:
        """Choose the generation this writer fills (the caller holds the write lock); True if new.

        Incremental runs continue the published generation, or an unfinished first build. A forced
        run, a first run, and a run over a damaged or outdated index start a fresh generation, which
        stays invisible to readers until `publish`.

        Raises:
            IndexMismatchError, SchemaVersionMismatchError: the published index was built
                differently (the caller asks for force).
        """
        self.close()
        self._pinned = None
        self._remove_outdated_layout()
        published: str | None
        try:
            published = self.published_generation()
        except StorageError as exc:
            log.warning("%s; building a new index", exc.message)
            published = None
        unfinished = [g for g in self.generations() if g != published]
        carry: str | None = None  # a generation whose vectors the new one starts with
        if not force:
            # Continue the live index (a different model needs the user's --force; damage is rebuilt
            # beside it), or else the first build a killed process left.
            if published is not None:
                try:
                    if self._continue(published, identity, mismatch_is_fatal=True):
                        return False
                except (IndexMismatchError, SchemaVersionMismatchError) as exc:
                    # Only the chunker or the table layout changed (a new lgrep): rebuild the chunks
                    # beside the live index and keep its vectors, so nothing is embedded again.
                    if not self._same_embeddings(published, identity):
                        raise
                    log.info("%s: re-chunking the index, its vectors are kept", exc.message)
                    carry = published
            elif unfinished and self._continue(unfinished[-1], identity, mismatch_is_fatal=False):
                return False
        self._remove_generations(keep={published} if published else set())
        self.create(identity, publish=False)
        if carry is not None:
            self._carry_vectors(carry)
        return True

    def _same_embeddings(self, gen: str, identity: IndexIdentity) -> bool:
        """Whether generation `gen` was embedded exactly as `identity` embeds (model, size, text)."""
        try:
            stored = dict(read_meta_file(self.dir / gen / META_FILE, self.root, self.dir).get("identity") or {})
        except LgrepError:
            return False
        stored.setdefault("embedding_text", "1")
        wanted = identity.as_dict()
        return all(stored.get(k) == wanted[k] for k in ("provider", "model", "dimension", "embedding_text"))

    def _carry_vectors(self, gen: str) -> None:
        """Copy every vector of generation `gen` into the pinned new one (batch by batch)."""
        try:
            old = lancedb().connect(str(self.dir / gen / "lance")).open_table(VECTORS_TABLE)
            copied = 0
            for batch in old.search().select(["vec_key", "vector"]).limit(None).to_batches(65536):
                if batch.num_rows:
                    self.vectors.add(pyarrow().Table.from_batches([batch]))
                    copied += batch.num_rows
        except Exception as exc:  # the old index is unreadable: embed again rather than fail
            log.warning("could not keep the vectors of the previous index (%s); embedding again", exc)
            return
        self.record_versions()
        log.info("kept %d vectors of the previous index", copied)

    def _continue(self, gen: str, identity: IndexIdentity, *, mismatch_is_fatal: bool) -> bool:
        """Pin an existing generation for writing if it is usable; otherwise leave nothing pinned."""
        self._pinned = gen
        try:
            self.check_identity(identity)
            self.open()
            self._check_manifest()
            recorded = [int(v) for v in self.read_meta().get("table_versions") or [-1, -1]]
            # A writer killed between a commit and recording it: readers cannot know what changed.
            self._change_all = recorded != [int(self._chunks.version), int(self._vectors.version)]
        except (IndexMismatchError, SchemaVersionMismatchError):
            self._pinned = None
            if mismatch_is_fatal:
                raise
            return False
        except (StorageError, NotFoundError) as exc:
            # Damaged, or a build killed before it wrote its metadata: start a fresh generation.
            log.warning("%s; building a new index beside it", exc.message)
            self.close()
            self._pinned = None
            return False
        self._remove_generations(keep={gen})
        return True

    @property
    def is_published(self) -> bool:
        try:
            return self._pinned is not None and self._pinned == self.published_generation()
        except StorageError:
            return False

    @_storage_errors
    def publish(self) -> None:
        """Make the writer's generation the live one and delete the others. A reader that was
        loading an old one notices the pointer changed and reloads (see `open`)."""
        if self._pinned is None or self.is_published:
            return
        tmp = self.dir / f"{CURRENT_POINTER}.{os.getpid()}.tmp"
        with tmp.open("w", encoding="ascii") as f:
            f.write(self._pinned + "\n")
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.pointer_path)
        _fsync_dir(self.dir)
        self._remove_generations(keep={self._pinned})

    def end_write(self) -> None:
        self.close()
        self._pinned = None

    def _remove_generations(self, keep: set[str]) -> None:
        for gen in self.generations():
            if gen not in keep:
                shutil.rmtree(self.dir / gen, ignore_errors=True)

    def _remove_outdated_layout(self) -> None:
        """Drop an index in the single-folder layout of lgrep before generations (writer only)."""
        for name in ("lance", "manifest.sqlite", "manifest.sqlite-wal", "manifest.sqlite-shm", "meta.json"):
            target = self.dir / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            elif target.exists() or target.is_symlink():
                target.unlink(missing_ok=True)

    # ----------------------------------------------------------------- lifecycle

    @property
    def meta_path(self) -> Path:
        return self.data_dir / META_FILE

    def exists(self) -> bool:
        """Whether a generation is published (searchable)."""
        return self.state() is IndexState.READY

    def read_meta(self) -> dict[str, Any]:
        return read_meta_file(self.meta_path, self.root, self.dir)

    @_storage_errors
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

    def create(self, identity: IndexIdentity, *, publish: bool = True) -> None:
        """Start a fresh, empty generation for this writer (and publish it at once unless told not to).

        Raises:
            StorageError: the cache folder cannot be written.
        """
        self.close()
        gen = f"gen-{time.time_ns():x}-{os.getpid()}"
        _make_dir(self.dir)
        tag = self.dir.parent / "CACHEDIR.TAG"
        try:
            if not tag.exists():
                # The standard marker: backup tools and our own walker skip the cache dir.
                tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# lgrep index cache\n")
            (self.dir / gen).mkdir(mode=0o700)
            self._pinned = gen
            db = lancedb().connect(str(self.dir / gen / "lance"))
            db.create_table(CHUNKS_TABLE, schema=chunks_schema())
            db.create_table(VECTORS_TABLE, schema=vectors_schema(identity.dimension))
        except OSError as exc:
            raise disk_full_error(exc, self.dir, f"lgrep index {self.root}") or StorageError(
                f"cannot write the index of {self.root} under {self.dir}: {exc.strerror}"
            ) from None
        self.write_meta(
            identity=identity.as_dict(),
            project_root=str(self.root),
            created_at=time.time(),
            last_indexed_at=None,
        )
        if publish:
            self.publish()

    def open(self) -> None:
        """Open the tables of the generation to read (the published one) or write (the pinned one).
        A reader whose generation was replaced since it opened it closes it and opens the new one.

        Raises:
            NotFoundError: there is no index.
            StorageError: the index is damaged.
        """
        while True:
            gen = self._pinned or self.published_generation()
            if gen is None:
                raise self._not_ready()
            if self._db is not None and gen == self._gen:
                return
            try:
                self._open_generation(gen)
                return
            except LgrepError:
                # A rebuild published and deleted this generation between reading the pointer and
                # opening it: follow the pointer again. A writer's own generation is never retried.
                if self._pinned is not None or self.published_generation() == gen:
                    raise

    def _open_generation(self, gen: str) -> None:
        self.close()
        self._gen = gen
        meta = self.read_meta()
        try:
            self._db = lancedb().connect(str(self.dir / gen / "lance"), read_consistency_interval=timedelta(0))
            self._chunks = self._db.open_table(CHUNKS_TABLE)
            self._vectors = self._db.open_table(VECTORS_TABLE)
            versions = (int(self._chunks.version), int(self._vectors.version))
            self._chunks.count_rows()
            self._vectors.count_rows()
        except Exception as exc:  # lancedb raises a variety of types for damaged data
            self._db = self._gen = None
            raise self.damaged(exc) from None
        expected = meta.get("table_versions") or [0, 0]
        if any(have < int(want) for have, want in zip(versions, expected, strict=False)):
            self._db = self._gen = None
            raise StorageError(
                f"the index of {self.root} is damaged (its tables are at versions {list(versions)}, older than "
                f"the {expected} last written: files are missing): run `lgrep index --force {self.root}`"
            )

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

    @_storage_errors
    def record_versions(self) -> None:
        """Record a commit for readers (writer): the tables' versions and a commit number in the
        metadata, and which files changed in the change log. A reader that finds older table versions
        than these knows that files of the index went missing instead of silently reading an older,
        emptier table; a reader that is a few commits behind re-reads only the files they name."""
        versions = [int(self.chunks.version), int(self.vectors.version)]
        commit = int(self.read_meta().get("commit") or 0) + 1
        self._log_change(commit)
        self.write_meta(table_versions=versions, commit=commit)

    def _log_change(self, commit: int) -> None:
        path = self.data_dir / CHANGES_FILE
        try:
            entries = list(json.loads(path.read_text(encoding="utf-8"))["entries"])
        except (OSError, ValueError, KeyError, TypeError):
            entries = []
        entry: dict[str, Any]
        if self._change_all or len(self._changed_keys) + len(self._changed_vectors) > CHANGE_LOG_KEYS:
            entry = {"commit": commit, "all": True}
        else:
            entry = {"commit": commit, "keys": sorted(self._changed_keys), "vec_keys": sorted(self._changed_vectors)}
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
        self._changed_keys.clear()
        self._changed_vectors.clear()
        self._change_all = False

    def close(self) -> None:
        if self._manifest is not None:
            self._manifest.close()
            self._manifest = None
        self._db = self._chunks = self._vectors = None
        self._gen = None

    def lock(self) -> WriteLock:
        _make_dir(self.dir)
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
        """The per-file manifest of the open generation.

        Raises:
            StorageError: it is damaged (a writer drops and re-derives it; see `_check_manifest`).
        """
        if self._manifest is None:
            if self._pinned is None and self._gen is not None and self._gen != self.published_generation():
                self.open()  # a reader whose generation was replaced (and deleted) moves to the new one
            path = self.data_dir / "manifest.sqlite"
            try:
                conn = sqlite3.connect(path, timeout=30, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
                    "sha256 TEXT, language TEXT, chunks INTEGER)"
                )
            except sqlite3.Error as exc:
                raise StorageError(
                    f"the file manifest {path} is damaged ({exc}): run `lgrep index {self.root}` to repair it"
                ) from None
            self._manifest = conn
        return self._manifest

    def _check_manifest(self) -> None:
        """Writer: the manifest only lets a run skip unchanged files, so a damaged one is dropped
        and rebuilt from the files (each is re-read once; the tables keep what they hold)."""
        try:
            ok = self.manifest.execute("PRAGMA quick_check").fetchone()
            rows = self.manifest.execute("SELECT path, size, mtime_ns, sha256, language, chunks FROM files LIMIT 1")
            rows.fetchall()
            if ok is None or ok[0] != "ok":
                raise sqlite3.DatabaseError(str(ok))
        except (sqlite3.Error, StorageError) as exc:
            log.warning("the file manifest of %s is damaged (%s): rebuilding it", self.root, exc)
            if self._manifest is not None:
                self._manifest.close()
                self._manifest = None
            for suffix in ("", "-wal", "-shm"):
                (self.data_dir / f"manifest.sqlite{suffix}").unlink(missing_ok=True)

    @_storage_errors
    def manifest_records(self) -> dict[str, FileRecord]:
        rows = self.manifest.execute("SELECT path, size, mtime_ns, sha256, language, chunks FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    @_storage_errors
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

    @_storage_errors
    def manifest_paths_under(self, folders: Iterable[str]) -> list[str]:
        """Paths of the manifest inside any of these project-relative folders (at any depth)."""
        out: list[str] = []
        for folder in folders:
            # Every path under `folder/` sorts between `folder/` and `folder0` ('0' follows '/'):
            # a range scan of the primary key, and no pattern syntax to escape.
            rows = self.manifest.execute(
                "SELECT path FROM files WHERE path >= ? AND path < ?", (folder + "/", folder + "0")
            )
            out.extend(r[0] for r in rows)
        return out

    @_storage_errors
    def manifest_put(self, records: Iterable[FileRecord]) -> None:
        conn = self.manifest
        with _transaction(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                [(r.path, r.size, r.mtime_ns, r.sha256, r.language, r.chunks) for r in records],
            )

    @_storage_errors
    def manifest_delete(self, paths: Iterable[str]) -> None:
        conn = self.manifest
        with _transaction(conn):
            conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in paths])

    # -------------------------------------------------------------- chunk writes

    @_storage_errors
    def replace_files(self, rows: ChunkColumns, path_keys: Sequence[str]) -> None:
        """Atomically make `rows` (one list per column of `CHUNK_COLUMNS`) the only chunks of the
        files named by `path_keys`.

        One commit: readers see either the old chunks of a file or the new ones, never a mix.
        `path_keys` are hex digests, so the predicate below cannot carry user text.
        """
        if not path_keys:
            return
        self._changed_keys.update(path_keys)
        table = self.chunks
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

    @_storage_errors
    def append_chunks(self, rows: ChunkColumns) -> None:
        """Add chunks (one list per column) of files the table holds nothing for (the caller knows)."""
        self._changed_keys.update(str(k) for k in rows["path_key"])
        self.chunks.add(_chunk_table(rows))

    @_storage_errors
    def delete_files(self, path_keys: Sequence[str]) -> None:
        if path_keys:
            self._changed_keys.update(path_keys)
            self.chunks.delete(col("path_key").isin(list(path_keys)))

    @_storage_errors
    def path_keys_with_chunks(self, path_keys: Sequence[str]) -> set[str]:
        """Which of these files (by `path_key`) have chunks in the table."""
        found: set[str] = set()
        for start in range(0, len(path_keys), 5000):
            part = list(path_keys[start : start + 5000])
            rows = self.chunks.search().where(col("path_key").isin(part)).select(["path_key"]).limit(None).to_arrow()
            found.update(rows.column("path_key").to_pylist())
        return found

    @_storage_errors
    def indexed_path_keys(self) -> dict[str, str]:
        """path_key -> path for every file that has chunks in the table."""
        out: dict[str, str] = {}
        reader = self.chunks.search().select(["path_key", "path"]).to_batches(65536)
        for batch in reader:
            for key, path in zip(batch.column("path_key").to_pylist(), batch.column("path").to_pylist(), strict=True):
                out[key] = path
        return out

    @_storage_errors
    def note_chunk_writes(self, rows: int) -> None:
        """Count rows written to the chunks table; compact it once enough have piled up."""
        self._note_writes(self.chunks, "", rows)

    @_storage_errors
    def note_vector_writes(self, rows: int) -> None:
        """Count vectors added (phase 2 appends one fragment per batch); compact the table once enough
        have piled up, so loading stays fast."""
        self._note_writes(self.vectors, "vector_", rows)

    def _note_writes(self, table: Any, prefix: str, rows: int) -> None:
        meta = self.read_meta()
        pending = int(meta.get(f"{prefix}rows_since_compaction", 0)) + rows
        commits = int(meta.get(f"{prefix}commits_since_compaction", 0)) + (1 if rows else 0)
        if pending >= COMPACT_AFTER_ROWS or commits >= COMPACT_AFTER_COMMITS:
            table.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
            pending = commits = 0
        self.write_meta(**{f"{prefix}rows_since_compaction": pending, f"{prefix}commits_since_compaction": commits})
        self.record_versions()

    @_storage_errors
    def compact_vectors(self) -> None:
        """Fold the vectors table's fragments together now."""
        self.vectors.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
        self.record_versions()

    @_storage_errors
    def optimize(self) -> None:
        for table in (self.chunks, self.vectors):
            table.optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
        self.record_versions()

    # ------------------------------------------------------------------- vectors

    @_storage_errors
    def count_chunks(self) -> int:
        return int(self.chunks.count_rows())

    @_storage_errors
    def stored_vector_keys(self) -> set[str]:
        keys: set[str] = set()
        for batch in self.vectors.search().select(["vec_key"]).to_batches(65536):
            keys.update(batch.column("vec_key").to_pylist())
        return keys

    @_storage_errors
    def chunk_vector_keys(self) -> set[str]:
        keys: set[str] = set()
        for batch in self.chunks.search().select(["vec_key"]).to_batches(65536):
            keys.update(batch.column("vec_key").to_pylist())
        return keys

    @_storage_errors
    def count_pending_chunks(self, stored: set[str] | None = None) -> int:
        """Chunks whose embedding key has no vector yet (BM25 still finds them)."""
        stored = self.stored_vector_keys() if stored is None else stored
        pending = 0
        for batch in self.iter_chunk_rows(["vec_key"], 65536):
            pending += sum(1 for k in batch["vec_key"] if k not in stored)
        return pending

    @_storage_errors
    def missing_vector_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of these embedding keys have no stored vector (a lookup, not a scan of all keys)."""
        missing = set(keys)
        for start in range(0, len(keys), 5000):
            part = list(keys[start : start + 5000])
            rows = self.vectors.search().where(col("vec_key").isin(part)).select(["vec_key"]).limit(None).to_arrow()
            missing.difference_update(rows.column("vec_key").to_pylist())
        return missing

    def pending_vector_keys(self) -> set[str]:
        return self.chunk_vector_keys() - self.stored_vector_keys()

    def generation(self) -> tuple[object, ...]:
        """A token that changes whenever a new generation is published or either table commits a new
        version: a reader's snapshot is current while it is unchanged. Costs a few stats and tiny reads
        (the pointer, Lance's version hint and its versions folder), not a round trip through LanceDB,
        so a searcher can check it per query. Call `open` first: it follows the pointer."""
        self.open()
        assert self._gen is not None
        token: list[object] = [self._gen]
        for table in (CHUNKS_TABLE, VECTORS_TABLE):
            versions = self.dir / self._gen / "lance" / f"{table}.lance" / "_versions"
            try:
                token.append(versions.stat().st_mtime_ns)
                token.append((versions / "latest_version_hint.json").read_bytes())
            except OSError:
                token.append(int((self.chunks if table == CHUNKS_TABLE else self.vectors).version))
        return tuple(token)

    @_storage_errors
    def iter_chunk_rows(self, columns: Sequence[str], batch_rows: int = 4096) -> Iterator[dict[str, list[Any]]]:
        """The chunks table in batches of up to `batch_rows` rows: one list per requested column."""
        for batch in self.chunks.search().select(list(columns)).to_batches(batch_rows):
            yield {c: batch.column(c).to_pylist() for c in columns}

    @_storage_errors
    def add_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        self._add_vectors(keys, vectors)
        self.record_versions()

    def _add_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        self._changed_vectors.update(keys)
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
        self.vectors.add(table)

    @_storage_errors
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

    @_storage_errors
    def delete_vectors(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), 5000):
            self.vectors.delete(col("vec_key").isin(list(keys[start : start + 5000])))

    # ------------------------------------------------------------------- reading

    @_storage_errors
    def chunks_by_vector_keys(self, keys: Sequence[str], columns: Sequence[str]) -> pa.Table:
        if not keys:
            return pyarrow().table({c: [] for c in columns})
        return self.chunks.search().where(col("vec_key").isin(list(keys))).select(list(columns)).limit(None).to_arrow()


def _chunk_table(rows: ChunkColumns) -> pa.Table:
    return pyarrow().table({c: list(rows[c]) for c in CHUNK_COLUMNS}, schema=chunks_schema())


def versions_lock(cache_dir: Path, root: Path) -> WriteLock:
    """The lock of the one writer of a repository's release index (`lgrep index --tags`), in the
    project's folder whatever store the index lives in; `lgrep clean` takes it too."""
    folder = project_dir(cache_dir, root.resolve())
    _make_dir(folder)
    return WriteLock(folder / "versions.lock")


def release_arrow_memory() -> None:
    """Hand Arrow's pooled buffers back (after a phase whose tables are gone). A no-op before the
    first table was read or written."""
    if "pyarrow" in sys.modules:
        pyarrow().default_memory_pool().release_unused()


def _make_dir(path: Path) -> None:
    """Create a folder of the cache (0700), or say clearly why it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:
        raise StorageError(f"cannot use the cache folder {path}: a file of that name is in the way") from None
    except OSError as exc:
        raise StorageError(
            f"cannot use the cache folder {path}: {exc.strerror}; set LGREP_CACHE_DIR (or index.cache_dir in "
            "your config file) to a folder you can write"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise StorageError(f"cannot use the cache folder {path}: it is not writable")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
