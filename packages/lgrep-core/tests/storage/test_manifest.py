"""The file manifest across lgrep versions: one an older lgrep wrote (no `ctime_ns` and `inode`
columns) is read as it is by a read-only reader and extended in place by a writer, keeping its rows;
and `FileRecord.matches`, the stat rule every caller decides "changed" by."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from lgrep_core.storage.layout import FileRecord
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.storage.schema import IndexIdentity
from lgrep_core.storage.store import ProjectStore

IDENTITY = IndexIdentity("local", "all-MiniLM-L6-v2 (int8)", 4, "c1", "512/64/ast")
OLD_ROWS = [("a.py", 10, 111, "h-a", "python", 2), ("docs/b.md", 20, 222, "h-b", "markdown", 1)]


def _old_manifest(tmp_path: Path) -> tuple[ProjectStore, Path]:
    """A published generation whose manifest has the first release's table and rows."""
    root = tmp_path / "proj"
    root.mkdir()
    store = ProjectStore(tmp_path / "cache", root)
    store.create(IDENTITY)
    store.open()
    store.record_versions()
    path = store.data_dir / "manifest.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
        "sha256 TEXT, language TEXT, chunks INTEGER)"
    )
    conn.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)", OLD_ROWS)
    conn.commit()
    conn.close()
    return store, path


def _columns(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(r[1]) for r in conn.execute("PRAGMA table_info(files)")]
    finally:
        conn.close()


def _old_records() -> dict[str, FileRecord]:
    return {r[0]: FileRecord(*r) for r in OLD_ROWS}


def test_a_reader_reads_an_old_manifest_without_changing_it(tmp_path: Path) -> None:
    store, path = _old_manifest(tmp_path)
    reader = ProjectReader(tmp_path / "cache", tmp_path / "proj")
    version = reader.version()
    assert reader.manifest(version) == _old_records()
    assert reader.manifest(version, ["docs/b.md", "gone.py"]) == {"docs/b.md": _old_records()["docs/b.md"]}
    assert all(r.ctime_ns is None and r.inode is None for r in reader.manifest(version).values())
    assert "ctime_ns" not in _columns(path)  # read-only: the table is left as it is
    store.close()


def test_a_writer_extends_an_old_manifest_in_place_and_keeps_its_rows(tmp_path: Path) -> None:
    store, path = _old_manifest(tmp_path)
    assert store.manifest_records() == _old_records()  # opening it adds the columns, NULL in old rows
    assert _columns(path) == ["path", "size", "mtime_ns", "sha256", "language", "chunks", "ctime_ns", "inode"]

    fresh = FileRecord("a.py", 11, 333, "h-a2", "python", 3, 444, 555)
    store.manifest_put([fresh])
    assert store.manifest_get(["a.py", "docs/b.md"]) == {"a.py": fresh, "docs/b.md": _old_records()["docs/b.md"]}
    store.close()

    # A second opening finds nothing to add; a reader now sees ctime and inode.
    again = ProjectStore(tmp_path / "cache", tmp_path / "proj")
    again.open()
    assert again.manifest_records()["a.py"] == fresh
    again.close()
    reader = ProjectReader(tmp_path / "cache", tmp_path / "proj")
    assert reader.manifest(reader.version())["a.py"] == fresh


def test_a_writer_that_finds_the_columns_added_meanwhile_adds_nothing(tmp_path: Path) -> None:
    # Two processes opening the same old manifest: the second sees the first's columns.
    store, path = _old_manifest(tmp_path)
    other = ProjectStore(tmp_path / "cache", tmp_path / "proj")
    other.open()
    assert other.manifest_records() == _old_records()
    assert store.manifest_records() == _old_records()
    assert _columns(path).count("ctime_ns") == 1
    other.close()
    store.close()


def test_a_new_manifest_round_trips_ctime_and_inode(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    store = ProjectStore(tmp_path / "cache", root)
    store.create(IDENTITY)
    store.open()
    record = FileRecord("x.py", 1, 2, "h", "python", 1, 3, 4)
    store.manifest_put([record])
    assert store.manifest_records() == {"x.py": record}
    store.close()


@pytest.mark.parametrize(
    ("stat", "expected"),
    [
        ((10, 111, 5, 7), True),
        ((11, 111, 5, 7), False),  # size
        ((10, 112, 5, 7), False),  # mtime
        ((10, 111, 6, 7), False),  # ctime: an mtime set back, a chmod
        ((10, 111, 5, 8), False),  # inode: a rename over the path
    ],
)
def test_matches_compares_size_mtime_ctime_and_inode(stat: tuple[int, int, int, int], expected: bool) -> None:
    record = FileRecord("a.py", 10, 111, "h", "python", 1, 5, 7)
    assert record.matches(*stat) is expected
    assert record.matches(*stat, unknown_matches=True) is expected


def test_a_record_without_ctime_or_inode_matches_only_when_unknown_may() -> None:
    old = FileRecord("a.py", 10, 111, "h", "python", 1)
    assert not old.matches(10, 111, 5, 7)  # a full run re-reads it once
    assert old.matches(10, 111, 5, 7, unknown_matches=True)  # a `stale` hint goes by size and mtime
    assert not old.matches(10, 112, 5, 7, unknown_matches=True)
