"""The team store: a repository's vectors, published from CI per commit, read by every member (ADR 0034).

One LanceDB database per repository, on object storage (`s3://bucket/prefix/<repository>`, also
MinIO, R2, GCS, Azure as LanceDB supports them) or in a local folder. Its tables:

  publications      one row per published commit: the repository, the commit, what the index was
                    built with (model, chunker), the walker's rules, the time, and its checksum
                    manifest: the sorted embedding keys of every chunk of the commit's tree, the
                    checksum of each key's vector, and each file's path, content hash and chunks
  vectors_<fp>      one row per embedding key (content-addressed: model, scope chain and chunk
                    content), with the checksum of its vector; `fp` names the model and chunker, so
                    a team that changes model keeps the two apart

What a publication holds is vectors, not text: a member's daemon chunks its own files, and takes from
the store the vectors of the chunks whose content key the publication lists. So nothing a store holds
is ever shown as code, a hit always comes from the member's own file, and a change the member made
is indexed as any local change is (lgrep_index.team).

Write order is the consistency model: vectors first, the publication row last, so a reader that sees
a publication finds its vectors (unless a later prune raced it: a reader then embeds what is missing).
A reader pins the vectors table's version when it opens the store, and a prune deletes rows that no
kept publication names but cleans up the files only after a grace period, so a read in progress
finishes from the version it started on. One publisher at a time (a CI concurrency group): Lance
commits with conditional puts, so two would not corrupt the tables, but a prune could race another
publisher's upload.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from lgrep_core.domain.errors import StorageError
from lgrep_core.storage.engine import col, connect, pyarrow
from lgrep_core.storage.layout import is_remote_location
from lgrep_core.storage.schema import IndexIdentity

__all__ = [
    "PublicationInfo",
    "PublishedFile",
    "TeamRefusal",
    "TeamStore",
    "identity_fingerprint",
    "vector_checks",
]

log = logging.getLogger(__name__)

# Bump when the tables change shape; a reader refuses a store of another schema (and builds locally).
TEAM_SCHEMA = 1
PUBLICATIONS_TABLE = "publications"
_KEYS_PER_FILTER = 4096
_KEY_BYTES = 32  # an embedding key is 32 hex digits, packed as they are (numpy reads them as S32)
_CHECK_BYTES = 16
# Timeouts of the object-store client unless the user set them: an unreachable store must not hold a
# first search for the minutes its default retries take (10 retries, up to 3 minutes).
_CLIENT_DEFAULTS = {"connect_timeout": "5s", "timeout": "60s", "client_max_retries": "2", "client_retry_timeout": "20"}


class TeamRefusal(StorageError):
    """The team store cannot seed this project: why (`reason`) and what to do, in the message.

    Reasons: `unreachable` (network, credentials, missing bucket), `empty` (nothing published for the
    repository), `not_in_history` (no publication is HEAD or an ancestor of it), `other_repository`,
    `other_model` (another model, chunker or store schema), `damaged` (checksums do not match)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def identity_fingerprint(identity: IndexIdentity) -> str:
    """A short name for what vectors mean (model, dimension, chunker, embedding text): publications
    with the same fingerprint share one vectors table."""
    text = json.dumps(identity.as_dict(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def vector_checks(keys: Sequence[str], vectors: np.ndarray) -> list[str]:
    """The checksum of each key's vector: sha256 of the key and the vector's float32 bytes, 16 hex digits."""
    matrix = np.ascontiguousarray(vectors, dtype="<f4")
    return [
        hashlib.sha256(key.encode("ascii", "replace") + matrix[i].tobytes()).hexdigest()[:_CHECK_BYTES]
        for i, key in enumerate(keys)
    ]


@dataclass(frozen=True, slots=True)
class PublishedFile:
    path: str  # relative to the repository's top folder
    sha256: str  # of the text lgrep read (lgrep_core.storage.store.FileRecord.sha256)
    chunks: int


@dataclass(frozen=True, slots=True)
class PublicationInfo:
    """One publication, as listed (its key and check arrays are read on demand)."""

    commit: str
    repository: str
    root_commit: str  # the repository's first commit ("" when the publisher's clone was shallow)
    created: float  # seconds since the epoch
    identity: dict[str, Any]
    fingerprint: str
    rules: dict[str, Any]
    files: int
    chunks: int
    vectors: int
    vector_bytes: int
    lgrep_version: str
    pub_key: str = field(default="", repr=False)

    @property
    def short(self) -> str:
        return self.commit[:12]


@dataclass(slots=True)
class Manifest:
    """A publication's checksum manifest: sorted keys, the check of each, and its files."""

    keys: np.ndarray  # sorted unique S32 (the hex keys' bytes)
    checks: np.ndarray  # S16 (hex), the check of keys[i]
    files: list[PublishedFile]

    def check_of(self, keys: Sequence[str]) -> list[str | None]:
        wanted = np.array([k.encode("ascii", "replace") for k in keys], dtype=f"S{_KEY_BYTES}")
        at = np.searchsorted(self.keys, wanted)
        out: list[str | None] = []
        for key, i in zip(wanted.tolist(), at.tolist(), strict=True):
            if i < self.keys.size and self.keys[i] == key:
                out.append(bytes(self.checks[i]).decode("ascii"))
            else:
                out.append(None)
        return out

    def contains(self, keys: Sequence[str]) -> list[str]:
        return [k for k, c in zip(keys, self.check_of(keys), strict=True) if c is not None]


def _pack_manifest(
    keys: Sequence[str], checks: Sequence[str], files: Sequence[PublishedFile]
) -> tuple[bytes, bytes, bytes]:
    order = sorted(range(len(keys)), key=keys.__getitem__)
    packed_keys = b"".join(keys[i].encode("ascii") for i in order)
    packed_checks = b"".join(checks[i].encode("ascii") for i in order)
    listing = json.dumps([[f.path, f.sha256, f.chunks] for f in files], separators=(",", ":"))
    return packed_keys, packed_checks, zlib.compress(listing.encode("utf-8", "surrogateescape"), 6)


def _digest(keys: bytes, checks: bytes, files: bytes) -> str:
    h = hashlib.sha256()
    for part in (keys, checks, files):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _publications_schema() -> Any:
    pa = pyarrow()
    s = pa.string()
    return pa.schema(
        [
            pa.field("pub_key", s, nullable=False),
            pa.field("schema", pa.int32()),
            pa.field("commit", s),
            pa.field("repository", s),
            pa.field("root_commit", s),
            pa.field("created", pa.float64()),
            pa.field("identity", s),
            pa.field("fingerprint", s),
            pa.field("rules", s),
            pa.field("files", pa.int64()),
            pa.field("chunks", pa.int64()),
            pa.field("vectors", pa.int64()),
            pa.field("vector_bytes", pa.int64()),
            pa.field("lgrep_version", s),
            pa.field("keys", pa.large_binary()),
            pa.field("checks", pa.large_binary()),
            pa.field("file_list", pa.large_binary()),
            pa.field("digest", s),
        ]
    )


def _vectors_schema(dimension: int) -> Any:
    pa = pyarrow()
    return pa.schema(
        [
            pa.field("vec_key", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            pa.field("check", pa.string()),
        ]
    )


_LISTED = [
    "pub_key",
    "schema",
    "commit",
    "repository",
    "root_commit",
    "created",
    "identity",
    "fingerprint",
    "rules",
    "files",
    "chunks",
    "vectors",
    "vector_bytes",
    "lgrep_version",
]


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0][:300] if text else type(exc).__name__


def display_location(location: str) -> str:
    """A store location as messages show it: no credentials (`s3://key:secret@bucket` is unusual, but
    a URI with a userinfo part is cut to its host)."""
    if "://" in location:
        scheme, _, rest = location.partition("://")
        host, sep, path = rest.partition("/")
        host = host.rpartition("@")[2]
        return f"{scheme}://{host}{sep}{path}"
    return location


class TeamStore:
    """The team store of one repository at `location` (a folder, or an object-store URI)."""

    def __init__(self, location: str, *, storage_options: Mapping[str, str] | None = None) -> None:
        self.location = location.removeprefix("file://") if location.startswith("file://") else location
        options = dict(storage_options or {})
        if is_remote_location(self.location):
            for key, value in _CLIENT_DEFAULTS.items():
                options.setdefault(key, value)
        self.storage_options = options
        self.shown = display_location(self.location)
        self._db: Any = None
        self._tables: dict[str, Any] = {}
        self._pinned: dict[str, int] = {}
        self.bytes_read = 0

    # ------------------------------------------------------------------------------ connection

    def _unreachable(self, exc: BaseException, doing: str) -> TeamRefusal:
        return TeamRefusal(
            "unreachable",
            f"the team store {self.shown} cannot be {doing} ({_first_line(exc)}): check team.store, "
            "team.storage_options and the provider's credentials (AWS_ACCESS_KEY_ID, ...)",
        )

    def _connect(self) -> Any:
        if self._db is None:
            kwargs: dict[str, Any] = {"read_consistency_interval": timedelta(0)}
            if self.storage_options:
                kwargs["storage_options"] = self.storage_options
            try:
                self._db = connect(self.location, **kwargs)
            except Exception as exc:
                raise self._unreachable(exc, "opened") from None
        return self._db

    def _names(self) -> set[str]:
        try:
            listed = self._connect().list_tables()
            names = getattr(listed, "tables", listed)
            return {str(n) for n in names}
        except TeamRefusal:
            raise
        except Exception as exc:
            raise self._unreachable(exc, "read") from None

    def exists(self) -> bool:
        """Whether anything was ever published here. Never creates anything on local disk."""
        if not is_remote_location(self.location) and not Path(self.location).is_dir():
            return False
        return PUBLICATIONS_TABLE in self._names()

    def _table(self, name: str) -> Any:
        table = self._tables.get(name)
        if table is None:
            try:
                table = self._connect().open_table(name)
            except TeamRefusal:
                raise
            except Exception as exc:
                raise self._unreachable(exc, "read") from None
            self._tables[name] = table
        return table

    def close(self) -> None:
        self._tables = {}
        self._pinned = {}
        self._db = None

    # ---------------------------------------------------------------------------------- reads

    def publications(self) -> list[PublicationInfo]:
        """Every publication, newest first (without their manifests)."""
        if not self.exists():
            return []
        try:
            table = self._table(PUBLICATIONS_TABLE)
            rows = table.search().select(_LISTED).limit(None).to_arrow().to_pydict()
        except TeamRefusal:
            raise
        except Exception as exc:
            raise self._unreachable(exc, "read") from None
        out: list[PublicationInfo] = []
        for i in range(len(rows["pub_key"])):
            if rows["schema"][i] != TEAM_SCHEMA:
                continue
            try:
                identity = json.loads(rows["identity"][i] or "{}")
                rules = json.loads(rows["rules"][i] or "{}")
            except ValueError:
                continue
            out.append(
                PublicationInfo(
                    commit=rows["commit"][i] or "",
                    repository=rows["repository"][i] or "",
                    root_commit=rows["root_commit"][i] or "",
                    created=float(rows["created"][i] or 0.0),
                    identity=identity if isinstance(identity, dict) else {},
                    fingerprint=rows["fingerprint"][i] or "",
                    rules=rules if isinstance(rules, dict) else {},
                    files=int(rows["files"][i] or 0),
                    chunks=int(rows["chunks"][i] or 0),
                    vectors=int(rows["vectors"][i] or 0),
                    vector_bytes=int(rows["vector_bytes"][i] or 0),
                    lgrep_version=rows["lgrep_version"][i] or "",
                    pub_key=rows["pub_key"][i],
                )
            )
        out.sort(key=lambda p: p.created, reverse=True)
        return out

    def other_schemas(self) -> int:
        """How many publications were written by a store schema this lgrep does not read."""
        if not self.exists():
            return 0
        try:
            rows = self._table(PUBLICATIONS_TABLE).search().select(["schema"]).limit(None).to_arrow()
        except Exception as exc:
            raise self._unreachable(exc, "read") from None
        return sum(1 for s in rows.column("schema").to_pylist() if s != TEAM_SCHEMA)

    def manifest(self, publication: PublicationInfo) -> Manifest:
        """The publication's checksum manifest, checked against its digest.

        Raises:
            TeamRefusal: `damaged` when it does not match its digest.
        """
        try:
            table = self._table(PUBLICATIONS_TABLE)
            found = (
                table.search()
                .where(col("pub_key") == publication.pub_key)
                .select(["keys", "checks", "file_list", "digest"])
                .limit(None)
                .to_arrow()
                .to_pydict()
            )
        except TeamRefusal:
            raise
        except Exception as exc:
            raise self._unreachable(exc, "read") from None
        if not found["digest"]:
            raise TeamRefusal("damaged", f"publication {publication.short} went from {self.shown} while it was read")
        keys, checks, listing = (found[c][0] or b"" for c in ("keys", "checks", "file_list"))
        self.bytes_read += len(keys) + len(checks) + len(listing)
        damaged = TeamRefusal(
            "damaged",
            f"publication {publication.short} in {self.shown} does not match its checksums: the store is damaged "
            "or was written by something else; publish again (`lgrep publish`)",
        )
        if _digest(keys, checks, listing) != found["digest"][0]:
            raise damaged
        n = len(keys) // _KEY_BYTES
        if len(keys) % _KEY_BYTES or len(checks) != n * _CHECK_BYTES or n != publication.vectors:
            raise damaged
        try:
            listed = json.loads(zlib.decompress(listing).decode("utf-8", "surrogateescape"))
            files = [PublishedFile(str(p), str(s), int(n)) for p, s, n in listed]
        except (ValueError, TypeError, zlib.error):
            raise damaged from None
        key_array = np.frombuffer(keys, dtype=f"S{_KEY_BYTES}")
        check_array = np.frombuffer(checks, dtype=f"S{_CHECK_BYTES}")
        if n > 1 and not bool(np.all(key_array[1:] > key_array[:-1])):
            raise damaged
        return Manifest(key_array, check_array, files)

    def pin(self, fingerprint: str) -> None:
        """Read the vectors table of `fingerprint` at its current version from now on: a prune that
        runs meanwhile does not pull rows from under this reader."""
        name = f"vectors_{fingerprint}"
        if name not in self._names():
            return
        try:
            table = self._table(name)
            self._pinned[name] = int(table.version)
            table.checkout(self._pinned[name])
        except Exception as exc:
            raise self._unreachable(exc, "read") from None

    def read_vectors(
        self, publication: PublicationInfo, manifest: Manifest, keys: Sequence[str]
    ) -> Iterator[tuple[list[str], np.ndarray]]:
        """The vectors of `keys` (which the manifest lists), a batch at a time, each checked against the
        manifest. Keys the store no longer holds are left out (the caller embeds them).

        Raises:
            TeamRefusal: `damaged` at the first vector that does not match its checksum.
        """
        name = f"vectors_{publication.fingerprint}"
        if name not in self._names():
            return
        dimension = int(publication.identity.get("dimension", 0))
        table = self._table(name)
        for start in range(0, len(keys), _KEYS_PER_FILTER):
            part = list(keys[start : start + _KEYS_PER_FILTER])
            try:
                got = (
                    table.search().where(col("vec_key").isin(part)).select(["vec_key", "vector"]).limit(None).to_arrow()
                )
            except Exception as exc:
                raise self._unreachable(exc, "read") from None
            if got.num_rows == 0:
                continue
            found = got.column("vec_key").to_pylist()
            matrix = got.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            if dimension <= 0 or matrix.size != len(found) * dimension:
                raise TeamRefusal("damaged", f"the vectors of publication {publication.short} have the wrong shape")
            matrix = matrix.reshape(len(found), dimension).astype(np.float32, copy=False)
            self.bytes_read += matrix.nbytes + 32 * len(found)
            actual = vector_checks(found, matrix)
            expected = manifest.check_of(found)
            taken: dict[str, int] = {}
            bad = 0
            for i, (key, have, want) in enumerate(zip(found, actual, expected, strict=True)):
                if key in taken:
                    continue
                if want is not None and have == want:
                    taken[key] = i
                else:
                    bad += 1
            # A key can have two rows (two publishers uploaded it); one matching row is enough.
            if bad and len(taken) < len(set(found)):
                raise TeamRefusal(
                    "damaged",
                    f"a vector of publication {publication.short} in {self.shown} does not match its checksum: the "
                    "store is damaged or was written by something else; publish again (`lgrep publish`)",
                )
            if taken:
                rows = list(taken.values())
                yield list(taken), matrix[rows]

    # --------------------------------------------------------------------------------- writes

    def _write_failed(self, exc: BaseException) -> StorageError:
        return StorageError(f"cannot write to the team store {self.shown}: {_first_line(exc)}")

    def stored_keys(self, fingerprint: str) -> set[str]:
        """Every embedding key the vectors table of `fingerprint` holds."""
        name = f"vectors_{fingerprint}"
        if name not in self._names():
            return set()
        try:
            table = self._table(name)
            out: set[str] = set()
            for batch in table.search().select(["vec_key"]).limit(None).to_batches(65536):
                out.update(batch.column("vec_key").to_pylist())
            return out
        except Exception as exc:
            raise self._unreachable(exc, "read") from None

    def stored_checks(self, fingerprint: str, keys: Iterable[str]) -> dict[str, str]:
        """The checksums the store holds for `keys` (one per key; the first row's)."""
        name = f"vectors_{fingerprint}"
        keys = list(keys)
        if not keys or name not in self._names():
            return {}
        table = self._table(name)
        out: dict[str, str] = {}
        try:
            for start in range(0, len(keys), _KEYS_PER_FILTER):
                part = keys[start : start + _KEYS_PER_FILTER]
                got = (
                    table.search().where(col("vec_key").isin(part)).select(["vec_key", "check"]).limit(None).to_arrow()
                )
                for key, check in zip(got.column("vec_key").to_pylist(), got.column("check").to_pylist(), strict=True):
                    out.setdefault(key, check)
        except Exception as exc:
            raise self._unreachable(exc, "read") from None
        return out

    def add_vectors(self, fingerprint: str, keys: Sequence[str], vectors: np.ndarray) -> list[str]:
        """Upload vectors (keys the store does not hold); returns their checksums."""
        if not keys:
            return []
        dimension = int(vectors.shape[1])
        name = f"vectors_{fingerprint}"
        checks = vector_checks(keys, vectors)
        pa = pyarrow()
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1), type=pa.float32())
        rows = pa.table(
            {
                "vec_key": pa.array(list(keys), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, dimension),
                "check": pa.array(checks, pa.string()),
            },
            schema=_vectors_schema(dimension),
        )
        try:
            if name in self._names():
                self._table(name).add(rows)
            else:
                self._tables[name] = self._connect().create_table(name, data=rows, schema=_vectors_schema(dimension))
        except TeamRefusal:
            raise
        except Exception as exc:
            raise self._write_failed(exc) from None
        return checks

    def add_publication(
        self,
        info: PublicationInfo,
        keys: Sequence[str],
        checks: Sequence[str],
        files: Sequence[PublishedFile],
    ) -> PublicationInfo:
        """Write the publication row (last: its vectors must be in). A publication of the same
        commit and fingerprint is replaced."""
        packed_keys, packed_checks, listing = _pack_manifest(keys, checks, files)
        pub_key = hashlib.sha256(f"{info.commit}\x00{info.fingerprint}".encode()).hexdigest()[:32]
        pa = pyarrow()
        values: dict[str, Any] = {
            "pub_key": pub_key,
            "schema": TEAM_SCHEMA,
            "commit": info.commit,
            "repository": info.repository,
            "root_commit": info.root_commit,
            "created": info.created,
            "identity": json.dumps(info.identity, sort_keys=True),
            "fingerprint": info.fingerprint,
            "rules": json.dumps(info.rules, sort_keys=True),
            "files": len(files),
            "chunks": info.chunks,
            "vectors": len(keys),
            "vector_bytes": info.vector_bytes,
            "lgrep_version": info.lgrep_version,
            "keys": packed_keys,
            "checks": packed_checks,
            "file_list": listing,
            "digest": _digest(packed_keys, packed_checks, listing),
        }
        schema = _publications_schema()
        row = pa.table({k: [v] for k, v in values.items()}, schema=schema)
        try:
            if PUBLICATIONS_TABLE in self._names():
                table = self._table(PUBLICATIONS_TABLE)
                table.merge_insert("pub_key").when_matched_update_all().when_not_matched_insert_all().execute(row)
            else:
                self._tables[PUBLICATIONS_TABLE] = self._connect().create_table(
                    PUBLICATIONS_TABLE, data=row, schema=schema
                )
        except TeamRefusal:
            raise
        except Exception as exc:
            raise self._write_failed(exc) from None
        return PublicationInfo(
            **{**{f: getattr(info, f) for f in PublicationInfo.__dataclass_fields__}, "pub_key": pub_key}
        )

    def prune(self, keep: int, grace: timedelta) -> tuple[int, int]:
        """Keep the newest `keep` publications of each fingerprint; drop the others and the vectors no
        kept publication names. Old table versions stay readable for `grace` (a read in progress).
        Returns (publications dropped, vectors dropped)."""
        publications = self.publications()
        kept: list[PublicationInfo] = []
        dropped: list[PublicationInfo] = []
        per_fingerprint: dict[str, int] = {}
        for pub in publications:  # newest first
            n = per_fingerprint.get(pub.fingerprint, 0)
            (kept if n < keep else dropped).append(pub)
            per_fingerprint[pub.fingerprint] = n + 1
        if not dropped:
            return 0, 0
        try:
            table = self._table(PUBLICATIONS_TABLE)
            table.delete(col("pub_key").isin([p.pub_key for p in dropped]))
        except Exception as exc:
            raise self._write_failed(exc) from None
        vectors_dropped = 0
        for fingerprint in {p.fingerprint for p in dropped}:
            named: set[bytes] = set()
            for pub in kept:
                if pub.fingerprint == fingerprint:
                    named.update(self.manifest(pub).keys.tolist())
            stored = self.stored_keys(fingerprint)
            unnamed = sorted(k for k in stored if k.encode() not in named)
            name = f"vectors_{fingerprint}"
            try:
                if unnamed:
                    vtable = self._table(name)
                    for start in range(0, len(unnamed), _KEYS_PER_FILTER):
                        vtable.delete(col("vec_key").isin(unnamed[start : start + _KEYS_PER_FILTER]))
                    vectors_dropped += len(unnamed)
                self._table(name).optimize(cleanup_older_than=grace)
            except Exception as exc:
                raise self._write_failed(exc) from None
        try:
            table.optimize(cleanup_older_than=grace)
        except Exception as exc:  # compaction is housekeeping: the publication stands
            log.warning("compacting the team store's publications failed: %s", _first_line(exc))
        return len(dropped), vectors_dropped
