"""The index of a repository's released versions: git tags as component@version, content-addressed.

One LanceDB database, on local disk or on object storage (`s3://bucket/prefix`), so that a scheduled
writer job and any number of search readers on other machines share it (ADR 0015). Its tables:

  meta     one row: what the index was built with (model, chunker) and the next entry id, as JSON
  tags     one row per indexed tag: tag, commit, component, version, and the ids of its entries
  entries  one row per distinct (path, blob): the file a tag lists, with its language and lines
  blobs    one row per distinct file content: the text (secrets redacted) or why it is left out
  chunks   the chunks of each blob, written once whatever number of tags hold it
  vectors  one vector per embedding key, computed once

A tag is the set of its entry ids (zoekt keeps, per document, the set of branches it is in; this is
the same relation stored the other way round, so a new tag appends one row and touches nothing that
older tags hold). What a chunk belongs to is therefore blob -> entries -> tags. Storage and embedding
work grow with distinct content, not with tags x files.

Writes commit in dependency order (blobs and chunks, entries, vectors, then the tag row), so a reader
that sees a tag finds everything it names; a killed writer leaves rows no tag names yet, which the
next run reuses or collects.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from lgrep_core.domain.errors import IndexMismatchError, LgrepError, NotFoundError, StorageError
from lgrep_core.storage.engine import col, connect, pyarrow
from lgrep_core.storage.layout import disk_full_error, is_remote_location, project_dir
from lgrep_core.storage.schema import IndexIdentity

__all__ = [
    "BlobRow",
    "EntryRow",
    "TagRow",
    "VersionStore",
    "blob_key",
    "is_remote_location",
    "repository_name",
    "store_location",
]

log = logging.getLogger(__name__)

# Bump when the tables change shape; an older index then asks for `lgrep index --tags --force`.
VERSIONS_SCHEMA = 1
_KEYS_PER_FILTER = 5000
CLEANUP_OLDER_THAN = timedelta(minutes=10)


def blob_key(blob_sha: str, path: str) -> str:
    """What a blob's chunks depend on: its content (git's id of it) and its file name, which picks the
    language and names the file's anchor chunk. A file moved to another folder keeps its key."""
    name = path.rsplit("/", 1)[-1]
    return hashlib.sha256(f"{blob_sha}\x00{name}".encode("utf-8", "surrogateescape")).hexdigest()[:32]


def repository_name(root: Path) -> str:
    """A repository's name from its folder: `~/src/cua` and `/mirrors/cua.git` are both `cua`."""
    name = root.name
    if name == ".git":
        name = root.parent.name
    return name.removesuffix(".git") or "root"


def store_location(cache_dir: Path, store: str, root: Path) -> str:
    """Where the versions of the repository at `root` live: under the cache dir (keyed by its path),
    or under the `versions.store` prefix in a folder of the repository's name."""
    if not store:
        return str(project_dir(cache_dir, root) / "versions")
    if store.startswith("file://"):
        store = store.removeprefix("file://")
    return f"{store.rstrip('/')}/{repository_name(root)}"


@dataclass(frozen=True, slots=True)
class TagRow:
    tag: str
    commit: str
    component: str
    version: str
    entry_ids: tuple[int, ...]
    indexed_at: float


@dataclass(frozen=True, slots=True)
class EntryRow:
    entry_id: int
    path: str
    blob_key: str
    language: str
    lines: int
    size: int


@dataclass(frozen=True, slots=True)
class BlobRow:
    blob_key: str
    path: str  # where it was first seen
    language: str
    content_type: str
    lines: int
    content: str  # "" when skipped
    skip: str  # why it is not indexed (binary, too large, secret, ...), "" when it is


def _schemas(dimension: int) -> dict[str, Any]:
    pa = pyarrow()
    s, i32, i64 = pa.string(), pa.int32(), pa.int64()
    return {
        "meta": pa.schema([pa.field("key", s, nullable=False), pa.field("value", s)]),
        "tags": pa.schema(
            [
                pa.field("tag", s, nullable=False),
                pa.field("tag_key", s, nullable=False),
                pa.field("commit", s),
                pa.field("component", s),
                pa.field("version", s),
                pa.field("entry_ids", pa.list_(i64)),
                pa.field("indexed_at", pa.float64()),
            ]
        ),
        "entries": pa.schema(
            [
                pa.field("entry_id", i64, nullable=False),
                pa.field("path", s),
                pa.field("blob_key", s),
                pa.field("language", s),
                pa.field("lines", i32),
                pa.field("size", i64),
            ]
        ),
        "blobs": pa.schema(
            [
                pa.field("blob_key", s, nullable=False),
                pa.field("path", s),
                pa.field("language", s),
                pa.field("content_type", s),
                pa.field("lines", i32),
                pa.field("content", s),
                pa.field("skip", s),
            ]
        ),
        "chunks": pa.schema(
            [
                pa.field("blob_key", s, nullable=False),
                pa.field("path", s),
                pa.field("language", s),
                pa.field("content_type", s),
                pa.field("kind", s),
                pa.field("symbol", s),
                pa.field("scope", pa.list_(s)),
                pa.field("signature", s),
                pa.field("start_line", i32),
                pa.field("end_line", i32),
                pa.field("content", s),
                pa.field("search_text", s),
                pa.field("vec_key", s, nullable=False),
            ]
        ),
        "vectors": pa.schema(
            [pa.field("vec_key", s, nullable=False), pa.field("vector", pa.list_(pa.float32(), dimension))]
        ),
    }


_TABLES = ("meta", "tags", "entries", "blobs", "chunks", "vectors")


def tag_key(tag: str) -> str:
    """A hex key for a tag name: deletes filter on it, so no tag text reaches a predicate."""
    return hashlib.sha256(tag.encode("utf-8", "surrogateescape")).hexdigest()[:32]


class VersionStore:
    """Opens the versions index at `location` (a folder, or an object-store URI with `storage_options`)."""

    def __init__(self, location: str, *, storage_options: Mapping[str, str] | None = None, label: str = "") -> None:
        self.location = location
        self.storage_options = dict(storage_options or {})
        self.label = label or location  # how messages name it (the repository, usually)
        self._db: Any = None
        self._tables: dict[str, Any] = {}

    # ------------------------------------------------------------------------------- open/create

    def _connect(self) -> Any:
        if self._db is None:
            kwargs: dict[str, Any] = {"read_consistency_interval": timedelta(0)}
            if self.storage_options:
                kwargs["storage_options"] = self.storage_options
            try:
                self._db = connect(self.location, **kwargs)
            except Exception as exc:
                raise StorageError(f"cannot open the versions index at {self.location}: {_first_line(exc)}") from None
        return self._db

    def exists(self) -> bool:
        """Whether an index is there. Never creates anything on local disk."""
        if not is_remote_location(self.location) and not Path(self.location).is_dir():
            return False
        try:
            return "meta" in self._table_names()
        except StorageError:
            return False

    def _table_names(self) -> set[str]:
        db = self._connect()
        try:
            listed = db.list_tables()
            names = getattr(listed, "tables", listed)
            return {str(n) for n in names}
        except Exception as exc:
            raise self.damaged(exc) from None

    def open(self) -> None:
        """Open the tables for reading.

        Raises:
            NotFoundError: no versions index is there.
            StorageError: it cannot be read.
        """
        if self._tables:
            return
        if not self.exists():
            raise NotFoundError(
                f"no release versions are indexed for {self.label}: run `lgrep index --tags {self.label}` first"
            )
        db = self._connect()
        try:
            self._tables = {name: db.open_table(name) for name in _TABLES}
        except Exception as exc:
            self._tables = {}
            raise self.damaged(exc) from None

    def create_or_check(self, identity: IndexIdentity, *, force: bool) -> bool:
        """Writer: open the index, creating it when there is none (or `force`). True when created.

        Raises:
            IndexMismatchError: it was built with another model or chunker (pass force).
        """
        db = self._connect()
        if self.exists() and not force:
            self.open()
            meta = self.meta()
            built = meta.get("identity")
            if meta.get("schema") != VERSIONS_SCHEMA or built != identity.as_dict():
                was = IndexIdentity(**built).describe() if isinstance(built, dict) and _fits(built) else "another lgrep"
                raise IndexMismatchError(
                    f"the versions index of {self.label} was built with {was}, the configuration asks for "
                    f"{identity.describe()}: run `lgrep index --tags --force {self.label}` to rebuild it"
                )
            return False
        self.close()
        try:
            names = self._table_names()
            for name in _TABLES:
                if name in names:
                    db.drop_table(name)
            schemas = _schemas(identity.dimension)
            for name in _TABLES:
                if name != "meta":
                    db.create_table(name, schema=schemas[name])
            # meta last: its presence says the index exists
            db.create_table("meta", schema=schemas["meta"])
        except Exception as exc:
            raise self._write_failed(
                exc, f"cannot create the versions index at {self.location}: {_first_line(exc)}"
            ) from None
        self.open()
        self.write_meta(identity=identity.as_dict(), schema=VERSIONS_SCHEMA, next_entry_id=0)
        return True

    def close(self) -> None:
        self._tables = {}
        self._db = None

    def _write_failed(self, exc: BaseException, message: str) -> StorageError:
        """A write that failed: on a full disk (DiskFullError, which says so), or for `message`."""
        full = disk_full_error(
            exc, self.location, f"lgrep index --tags {self.label}", local=not is_remote_location(self.location)
        )
        return full if full is not None else StorageError(message)

    def damaged(self, exc: BaseException) -> StorageError:
        full = disk_full_error(
            exc, self.location, f"lgrep index --tags {self.label}", local=not is_remote_location(self.location)
        )
        if full is not None:
            return full
        return StorageError(
            f"the versions index of {self.label} cannot be read ({type(exc).__name__}: {_first_line(exc)}); "
            f"run `lgrep index --tags --force {self.label}` to rebuild it"
        )

    def _table(self, name: str) -> Any:
        self.open()
        return self._tables[name]

    def table_version(self, name: str) -> int:
        """The latest version of one table: readers cache what they built from it until it moves."""
        try:
            return int(self._table(name).version)
        except LgrepError:
            raise
        except Exception as exc:
            raise self.damaged(exc) from None

    # ---------------------------------------------------------------------------------- meta

    def meta(self) -> dict[str, Any]:
        rows = self._scan("meta", ["key", "value"])
        out: dict[str, Any] = {}
        for key, value in zip(rows["key"], rows["value"], strict=True):
            try:
                out[key] = json.loads(value)
            except (TypeError, ValueError):
                raise self.damaged(ValueError(f"meta value {key!r} is not JSON")) from None
        return out

    def write_meta(self, **updates: Any) -> None:
        table = self._table("meta")
        pa = pyarrow()
        rows = pa.table(
            {"key": list(updates), "value": [json.dumps(v, sort_keys=True) for v in updates.values()]},
            schema=_schemas(1)["meta"],
        )
        try:
            table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(rows)
        except Exception as exc:
            raise self.damaged(exc) from None

    def identity(self) -> IndexIdentity:
        built = self.meta().get("identity")
        if not isinstance(built, dict) or not _fits(built):
            raise self.damaged(ValueError("no identity in meta"))
        return IndexIdentity(**built)

    # ---------------------------------------------------------------------------------- reads

    def _queries(self, name: str, where: tuple[str, Sequence[Any]] | None) -> list[Any]:
        """Scans of a table: all of it, or the rows whose `column` is one of `values`, a slice of
        values per query (the values are keys this code made, never user text)."""
        table = self._table(name)
        if where is None:
            return [table.search()]
        column, values = where
        values = list(values)
        return [
            table.search().where(col(column).isin(values[i : i + _KEYS_PER_FILTER])).limit(None)
            for i in range(0, len(values), _KEYS_PER_FILTER)
        ]

    def _scan(
        self, name: str, columns: Sequence[str], where: tuple[str, Sequence[Any]] | None = None
    ) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {c: [] for c in columns}
        queries = self._queries(name, where)  # NotFoundError as is: only reads are "damage"
        try:
            for query in queries:
                for batch in query.select(list(columns)).to_batches(65536):
                    for c in columns:
                        out[c].extend(batch.column(c).to_pylist())
        except Exception as exc:
            raise self.damaged(exc) from None
        return out

    def tags(self) -> list[TagRow]:
        rows = self._scan("tags", ["tag", "commit", "component", "version", "entry_ids", "indexed_at"])
        return [
            TagRow(t, c, comp, v, tuple(ids or ()), float(at or 0.0))
            for t, c, comp, v, ids, at in zip(
                rows["tag"],
                rows["commit"],
                rows["component"],
                rows["version"],
                rows["entry_ids"],
                rows["indexed_at"],
                strict=True,
            )
        ]

    def entries(self, ids: Sequence[int] | None = None) -> dict[int, EntryRow]:
        columns = ["entry_id", "path", "blob_key", "language", "lines", "size"]
        rows = self._scan("entries", columns, ("entry_id", ids) if ids is not None else None)
        return {
            int(i): EntryRow(int(i), p, b, lang or "", int(n or 0), int(sz or 0))
            for i, p, b, lang, n, sz in zip(*(rows[c] for c in columns), strict=True)
        }

    def blob_infos(self) -> dict[str, tuple[str, str, int]]:
        """Every stored blob's key: its skip reason ("" when indexed), language and lines."""
        rows = self._scan("blobs", ["blob_key", "skip", "language", "lines"])
        return {
            k: (s or "", lang or "", int(n or 0))
            for k, s, lang, n in zip(rows["blob_key"], rows["skip"], rows["language"], rows["lines"], strict=True)
        }

    def blob(self, key: str) -> BlobRow | None:
        columns = ["blob_key", "path", "language", "content_type", "lines", "content", "skip"]
        rows = self._scan("blobs", columns, ("blob_key", [key]))
        if not rows["blob_key"]:
            return None
        k, p, lang, ct, n, content, skip = (rows[c][0] for c in columns)
        return BlobRow(k, p, lang or "", ct or "", int(n or 0), content or "", skip or "")

    def chunks_of(self, blob_keys: Sequence[str], columns: Sequence[str]) -> dict[str, list[Any]]:
        return self._scan("chunks", columns, ("blob_key", blob_keys))

    def vectors(self, keys: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Stored vectors (those named by `keys`, when given): their keys and a float32 matrix."""
        dim = self.identity().dimension
        out_keys: list[str] = []
        parts: list[np.ndarray] = []
        queries = self._queries("vectors", ("vec_key", keys) if keys is not None else None)
        try:
            for query in queries:
                for batch in query.select(["vec_key", "vector"]).to_batches(65536):
                    out_keys.extend(batch.column("vec_key").to_pylist())
                    parts.append(batch.column("vector").flatten().to_numpy(zero_copy_only=False).reshape(-1, dim))
        except Exception as exc:
            raise self.damaged(exc) from None
        matrix = np.vstack(parts).astype(np.float32) if parts else np.zeros((0, dim), np.float32)
        return out_keys, matrix

    def vector_keys(self) -> set[str]:
        return set(self._scan("vectors", ["vec_key"])["vec_key"])

    def pending_vector_keys(self) -> list[str]:
        """The embedding keys of stored chunks that have no vector yet, sorted."""
        chunk_keys = set(self._scan("chunks", ["vec_key"])["vec_key"])
        return sorted(chunk_keys - self.vector_keys())

    def chunk_texts(self, keys: Sequence[str]) -> Iterator[tuple[str, str, list[str], str]]:
        """(vec_key, path, scope, content) of one chunk per key, read a slice of keys at a time so
        memory stays bounded whatever the index holds."""
        seen: set[str] = set()
        step = 1024
        for start in range(0, len(keys), step):
            part = keys[start : start + step]
            rows = self._scan("chunks", ["vec_key", "path", "scope", "content"], ("vec_key", part))
            for key, path, scope, content in zip(
                rows["vec_key"], rows["path"], rows["scope"], rows["content"], strict=True
            ):
                if key not in seen:
                    seen.add(key)
                    yield key, path, scope or [], content or ""

    def counts(self) -> dict[str, int]:
        try:
            return {name: int(self._table(name).count_rows()) for name in _TABLES if name != "meta"}
        except LgrepError:
            raise
        except Exception as exc:
            raise self.damaged(exc) from None

    # ---------------------------------------------------------------------------------- writes

    def _write(self, name: str, rows: Mapping[str, Sequence[Any]]) -> None:
        if not next(iter(rows.values()), None):
            return
        pa = pyarrow()
        table = self._table(name)
        schema = table.schema
        try:
            table.add(pa.table({f.name: rows[f.name] for f in schema}, schema=schema))
        except Exception as exc:
            raise self._write_failed(
                exc, f"writing the versions index of {self.label} failed: {_first_line(exc)}"
            ) from None

    def _delete(self, name: str, column: str, values: Sequence[Any]) -> None:
        table = self._table(name)
        values = list(values)
        try:
            for i in range(0, len(values), _KEYS_PER_FILTER):
                table.delete(col(column).isin(values[i : i + _KEYS_PER_FILTER]))
        except Exception as exc:
            raise self._write_failed(
                exc, f"writing the versions index of {self.label} failed: {_first_line(exc)}"
            ) from None

    def add_blobs(self, blobs: Sequence[BlobRow], chunks: Mapping[str, Sequence[Any]]) -> None:
        """Store new blobs and their chunks (chunks first: a blob row says its chunks are complete).
        A writer calls `drop_unfinished` once before, so no chunk of these blobs is stored yet."""
        keys = [b.blob_key for b in blobs]
        if not keys:
            return
        self._write("chunks", chunks)
        self._write(
            "blobs",
            {
                "blob_key": keys,
                "path": [b.path for b in blobs],
                "language": [b.language for b in blobs],
                "content_type": [b.content_type for b in blobs],
                "lines": [b.lines for b in blobs],
                "content": [b.content for b in blobs],
                "skip": [b.skip for b in blobs],
            },
        )

    def drop_unfinished(self) -> int:
        """Writer, before it adds blobs: drop the chunks a killed run wrote for blobs it never
        recorded (their blob row comes after them), so they are not stored twice. Returns how many."""
        done = set(self._scan("blobs", ["blob_key"])["blob_key"])
        orphans = sorted(set(self._scan("chunks", ["blob_key"])["blob_key"]) - done)
        self._delete("chunks", "blob_key", orphans)
        return len(orphans)

    def add_entries(self, entries: Sequence[EntryRow]) -> None:
        self._write(
            "entries",
            {
                "entry_id": [e.entry_id for e in entries],
                "path": [e.path for e in entries],
                "blob_key": [e.blob_key for e in entries],
                "language": [e.language for e in entries],
                "lines": [e.lines for e in entries],
                "size": [e.size for e in entries],
            },
        )

    def put_tags(self, rows: Sequence[TagRow]) -> None:
        """Publish tags (replacing older rows of the same names), in two commits whatever their
        number: readers see them from now on."""
        if not rows:
            return
        self._delete("tags", "tag_key", [tag_key(r.tag) for r in rows])
        self._write(
            "tags",
            {
                "tag": [r.tag for r in rows],
                "tag_key": [tag_key(r.tag) for r in rows],
                "commit": [r.commit for r in rows],
                "component": [r.component for r in rows],
                "version": [r.version for r in rows],
                "entry_ids": [list(r.entry_ids) for r in rows],
                "indexed_at": [r.indexed_at or time.time() for r in rows],
            },
        )

    def delete_tags(self, tags: Sequence[str]) -> None:
        self._delete("tags", "tag_key", [tag_key(t) for t in tags])

    def add_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not len(keys):
            return
        pa = pyarrow()
        dim = vectors.shape[1]
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        table = pa.table(
            {"vec_key": pa.array(list(keys), pa.string()), "vector": pa.FixedSizeListArray.from_arrays(flat, dim)}
        )
        try:
            self._table("vectors").add(table)
        except Exception as exc:
            raise self._write_failed(exc, f"writing vectors of {self.label} failed: {_first_line(exc)}") from None

    def collect_garbage(self) -> dict[str, int]:
        """Drop entries no tag names, and blobs and chunks no entry names (a deleted or moved tag's
        content that no other tag shares). Vectors stay: they are the embedding cache, as in a
        working-tree index. Returns how many rows of each went."""
        named: set[int] = set()
        for tag in self.tags():
            named.update(tag.entry_ids)
        entries = self.entries()
        dead_entries = [i for i in entries if i not in named]
        live_blobs = {e.blob_key for i, e in entries.items() if i in named}
        states = self.blob_infos()
        dead_blobs = [k for k in states if k not in live_blobs]
        self._delete("entries", "entry_id", dead_entries)
        self._delete("chunks", "blob_key", dead_blobs)
        self._delete("blobs", "blob_key", dead_blobs)
        return {"entries": len(dead_entries), "blobs": len(dead_blobs)}

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables of a versions index, in the order `optimize` compacts them."""
        return tuple(_TABLES)

    def optimize(self, names: Sequence[str] | None = None) -> None:
        """Compact the tables (`names`, or all of them) and drop their old versions."""
        for name in names if names is not None else _TABLES:
            try:
                self._table(name).optimize(cleanup_older_than=CLEANUP_OLDER_THAN)
            except Exception as exc:  # compaction is housekeeping: a failure must not fail the run
                log.warning("compacting the %s table of %s failed: %s", name, self.label, _first_line(exc))

    def size_bytes(self) -> int | None:
        """Bytes on local disk (None for object storage, which this does not list)."""
        if is_remote_location(self.location):
            return None
        root = Path(self.location)
        return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


def _fits(built: dict[str, Any]) -> bool:
    return set(built) == set(IndexIdentity.__dataclass_fields__)


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0][:300] if text else type(exc).__name__
