"""The per-file manifest of a generation (`manifest.sqlite`): size, mtime, ctime, inode and content
hash of every file the index holds, so an incremental run knows which files it may skip.

A manifest an older lgrep wrote has no `ctime_ns` and `inode` columns: a writer adds them in place
on opening it (NULL in the old rows, which `FileRecord.matches` takes as unknown: each such file is
re-read once, and re-chunked only if its content changed), and a read-only reader reads NULL for them
(`manifest_columns`). No rebuild."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from lgrep_core.domain.errors import StorageError
from lgrep_core.storage._errors import StorePart, storage_errors
from lgrep_core.storage.layout import FileRecord

if TYPE_CHECKING:
    from lgrep_core.storage.store import ProjectStore

__all__ = ["Manifest", "manifest_columns"]

log = logging.getLogger(__name__)

# The columns of a manifest row, in FileRecord's order. The last two were added after the first
# release: `_ADDED` are added to an older table on opening it.
_COLUMNS = ("path", "size", "mtime_ns", "sha256", "language", "chunks", "ctime_ns", "inode")
_ADDED = ("ctime_ns", "inode")
_SELECT = ", ".join(_COLUMNS)
_CREATE = (
    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
    "sha256 TEXT, language TEXT, chunks INTEGER, ctime_ns INTEGER, inode INTEGER)"
)


def manifest_columns(conn: sqlite3.Connection) -> str:
    """The select list of a `files` row as a FileRecord, for this manifest: NULL for a column an
    older manifest lacks (a read-only reader cannot add it)."""
    have = _columns_of(conn)
    return ", ".join(c if c in have else "NULL" for c in _COLUMNS)


def _columns_of(conn: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in conn.execute("PRAGMA table_info(files)")}


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Bring an older manifest's table to the current columns, in place (new columns are NULL in the
    rows it holds). Checked again under the write lock: another process may have just done it."""
    if all(c in _columns_of(conn) for c in _ADDED):
        return
    with _transaction(conn):
        have = _columns_of(conn)
        for column in _ADDED:
            if column not in have:
                conn.execute(f"ALTER TABLE files ADD COLUMN {column} INTEGER")


class Manifest(StorePart):
    """The manifest of the store's open generation: one SQLite connection, opened on first use."""

    def __init__(self, store: ProjectStore) -> None:
        super().__init__(store)
        self._conn: sqlite3.Connection | None = None

    @property
    def connection(self) -> sqlite3.Connection:
        """The per-file manifest of the open generation.

        Raises:
            StorageError: it is damaged (a writer drops and re-derives it; see `check`).
        """
        if self._conn is None:
            s = self._store
            if s.pinned is None and s.opened is not None and s.opened != s.published_generation():
                s.open()  # a reader whose generation was replaced (and deleted) moves to the new one
            path = self._store.data_dir / "manifest.sqlite"
            try:
                conn = sqlite3.connect(path, timeout=30, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_CREATE)
                _add_missing_columns(conn)
            except sqlite3.Error as exc:
                raise StorageError(
                    f"the file manifest {path} is damaged ({exc}): run `lgrep index {self._store.root}` to repair it"
                ) from None
            self._conn = conn
        return self._conn

    def check(self) -> None:
        """Writer: the manifest only lets a run skip unchanged files, so a damaged one is dropped
        and rebuilt from the files (each is re-read once; the tables keep what they hold)."""
        try:
            ok = self.connection.execute("PRAGMA quick_check").fetchone()
            rows = self.connection.execute(f"SELECT {_SELECT} FROM files LIMIT 1")
            rows.fetchall()
            if ok is None or ok[0] != "ok":
                raise sqlite3.DatabaseError(str(ok))
        except (sqlite3.Error, StorageError) as exc:
            log.warning("the file manifest of %s is damaged (%s): rebuilding it", self._store.root, exc)
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            for suffix in ("", "-wal", "-shm"):
                (self._store.data_dir / f"manifest.sqlite{suffix}").unlink(missing_ok=True)

    @storage_errors
    def records(self) -> dict[str, FileRecord]:
        rows = self.connection.execute(f"SELECT {_SELECT} FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    @storage_errors
    def get(self, paths: Sequence[str]) -> dict[str, FileRecord]:
        out: dict[str, FileRecord] = {}
        for start in range(0, len(paths), 500):
            part = list(paths[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self.connection.execute(
                f"SELECT {_SELECT} FROM files WHERE path IN ({marks})",
                part,
            )
            out.update({r[0]: FileRecord(*r) for r in rows})
        return out

    @storage_errors
    def paths_under(self, folders: Iterable[str]) -> list[str]:
        """Paths of the manifest inside any of these project-relative folders (at any depth)."""
        out: list[str] = []
        for folder in folders:
            # Every path under `folder/` sorts between `folder/` and `folder0` ('0' follows '/'):
            # a range scan of the primary key, and no pattern syntax to escape.
            rows = self.connection.execute(
                "SELECT path FROM files WHERE path >= ? AND path < ?", (folder + "/", folder + "0")
            )
            out.extend(r[0] for r in rows)
        return out

    @storage_errors
    def put(self, records: Iterable[FileRecord]) -> None:
        conn = self.connection
        with _transaction(conn):
            conn.executemany(
                f"INSERT OR REPLACE INTO files ({_SELECT}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                [(r.path, r.size, r.mtime_ns, r.sha256, r.language, r.chunks, r.ctime_ns, r.inode) for r in records],
            )

    @storage_errors
    def delete(self, paths: Iterable[str]) -> None:
        conn = self.connection
        with _transaction(conn):
            conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in paths])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
