"""The per-file manifest of a generation (`manifest.sqlite`): size, mtime and content hash of every
file the index holds, so an incremental run knows which files it may skip."""

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

__all__ = ["Manifest"]

log = logging.getLogger(__name__)


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
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
                    "sha256 TEXT, language TEXT, chunks INTEGER)"
                )
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
            rows = self.connection.execute("SELECT path, size, mtime_ns, sha256, language, chunks FROM files LIMIT 1")
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
        rows = self.connection.execute("SELECT path, size, mtime_ns, sha256, language, chunks FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    @storage_errors
    def get(self, paths: Sequence[str]) -> dict[str, FileRecord]:
        out: dict[str, FileRecord] = {}
        for start in range(0, len(paths), 500):
            part = list(paths[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self.connection.execute(
                f"SELECT path, size, mtime_ns, sha256, language, chunks FROM files WHERE path IN ({marks})",
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
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                [(r.path, r.size, r.mtime_ns, r.sha256, r.language, r.chunks) for r in records],
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
