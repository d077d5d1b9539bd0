"""What a full run (`Indexer.run`) re-reads: a file whose size, mtime, ctime or inode differs from its
manifest record, as git decides it. A rewrite that keeps the size and sets the mtime back changes the
ctime (no process can set that back), and a rename over the path changes the inode: both are read.
A change of metadata only is read once and compared by hash: nothing is re-chunked or re-embedded.
An index whose manifest an older lgrep wrote (no ctime and inode columns) is extended in place: its
files are read once, nothing is rebuilt. `lgrep status` and `lgrep index --dry-run` use the same rule."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.store import ProjectStore
from lgrep_core.testing import FakeEmbedder
from lgrep_index import pipeline
from lgrep_index.pipeline import Indexer
from lgrep_index.plan import plan_index
from lgrep_index.projects import project_status
from lgrep_index.walker import WalkedFile

GO = "package b\n\nfunc Gamma() int {\n\treturn 3\n}\n"


def _settings(tmp_path: Path):
    return load_settings(None, env={"LGREP_CACHE_DIR": str(tmp_path / "cache")}, user_config=tmp_path / "none").settings


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n")
    (root / "b.go").write_text(GO)
    (root / "notes.md").write_text("# Notes\n\nNothing to see.\n")
    return root


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the indexer reads whole (the walk's sniff of a file's head is not counted)."""
    seen: list[str] = []
    real = pipeline.read_text

    def read_text(file: WalkedFile, max_file_bytes: int) -> str | None:
        seen.append(file.path)
        return real(file, max_file_bytes)

    monkeypatch.setattr(pipeline, "read_text", read_text)
    return seen


def _chunks(settings, root: Path) -> list[tuple[str, str]]:
    store = ProjectStore(settings.cache_dir, root)
    store.open()
    try:
        return sorted(
            (str(p), str(c))
            for b in store.iter_chunk_rows(["path", "content"])
            for p, c in zip(b["path"], b["content"], strict=True)
        )
    finally:
        store.close()


def _rewrite_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    before = path.stat()
    text = path.read_text()
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_full_run_reads_a_same_size_rewrite_whose_mtime_was_restored(tmp_path: Path, reads: list[str]) -> None:
    root = _repo(tmp_path)
    settings = _settings(tmp_path)
    Indexer(settings, root, FakeEmbedder()).run()
    reads.clear()
    assert Indexer(settings, root, FakeEmbedder()).run().files_indexed == 0
    assert reads == []  # nothing changed: a stat of each file, no read

    _rewrite_keeping_size_and_mtime(root / "b.go", "Gamma", "Omega")
    status = project_status(settings, root)
    assert status.changes is not None and (status.changes.added, status.changes.modified) == (0, 1)
    assert plan_index(settings, root, FakeEmbedder()).files_to_read == 1

    summary = Indexer(settings, root, FakeEmbedder()).run()
    assert reads == ["b.go"]
    assert (summary.files_indexed, summary.created) == (1, False)
    contents = [c for p, c in _chunks(settings, root) if p == "b.go"]
    assert any("Omega" in c for c in contents) and not any("Gamma" in c for c in contents)
    status = project_status(settings, root)
    assert status.changes is not None and status.changes.total == 0

    reads.clear()
    assert Indexer(settings, root, FakeEmbedder()).run().files_indexed == 0
    assert reads == []


def test_a_rename_over_the_path_with_the_same_size_and_mtime_is_read(tmp_path: Path, reads: list[str]) -> None:
    # An atomic save, `rsync -t`, a `git checkout`: a new file (another inode) takes the path.
    root = _repo(tmp_path)
    settings = _settings(tmp_path)
    Indexer(settings, root, FakeEmbedder()).run()
    target = root / "b.go"
    before = target.stat()
    replacement = root / "b.go.tmp"
    replacement.write_text(GO.replace("Gamma", "Delta"))
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    replacement.replace(target)
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ino != before.st_ino

    reads.clear()
    assert Indexer(settings, root, FakeEmbedder()).run().files_indexed == 1
    assert reads == ["b.go"]
    assert any("Delta" in c for p, c in _chunks(settings, root) if p == "b.go")


def test_a_metadata_change_is_read_once_and_nothing_is_re_embedded(tmp_path: Path, reads: list[str]) -> None:
    root = _repo(tmp_path)
    settings = _settings(tmp_path)
    Indexer(settings, root, FakeEmbedder()).run()
    before = _chunks(settings, root)
    (root / "a.py").chmod(0o600)  # changes the ctime only

    reads.clear()
    embedder = FakeEmbedder()
    summary = Indexer(settings, root, embedder).run()
    assert reads == ["a.py"]  # its content hash is compared...
    assert (summary.files_indexed, summary.vectors_embedded, embedder.embedded_texts) == (0, 0, [])  # ...and equal
    assert _chunks(settings, root) == before
    reads.clear()
    Indexer(settings, root, FakeEmbedder()).run()
    assert reads == []  # the record took the new ctime


def _to_the_old_manifest(settings, root: Path) -> Path:
    """Turn the index's manifest into the table an older lgrep wrote: no ctime_ns and inode."""
    store = ProjectStore(settings.cache_dir, root)
    store.open()
    path = store.data_dir / "manifest.sqlite"
    store.close()
    conn = sqlite3.connect(path)
    conn.executescript(
        "BEGIN;"
        "CREATE TABLE old (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, sha256 TEXT, language TEXT, "
        "chunks INTEGER);"
        "INSERT INTO old SELECT path, size, mtime_ns, sha256, language, chunks FROM files;"
        "DROP TABLE files;"
        "ALTER TABLE old RENAME TO files;"
        "COMMIT;"
    )
    conn.close()
    return path


def _columns(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(r[1]) for r in conn.execute("PRAGMA table_info(files)")]
    finally:
        conn.close()


def test_an_index_with_an_old_manifest_is_updated_without_a_rebuild(tmp_path: Path, reads: list[str]) -> None:
    root = _repo(tmp_path)
    settings = _settings(tmp_path)
    Indexer(settings, root, FakeEmbedder()).run()
    before = _chunks(settings, root)
    path = _to_the_old_manifest(settings, root)
    assert "ctime_ns" not in _columns(path)

    # Read as it is (status reads it read-only): every file is one the next run reads again.
    status = project_status(settings, root)
    assert status.files == 3
    assert status.changes is not None and (status.changes.added, status.changes.modified) == (0, 3)
    assert "ctime_ns" not in _columns(path)

    reads.clear()
    embedder = FakeEmbedder()
    summary = Indexer(settings, root, embedder).run()
    assert sorted(reads) == ["a.py", "b.go", "notes.md"]  # each read once, for its hash
    assert not summary.created  # no rebuild
    assert (summary.files_indexed, summary.files_unchanged, summary.vectors_embedded) == (0, 3, 0)
    assert embedder.embedded_texts == []
    assert _chunks(settings, root) == before
    assert _columns(path)[-2:] == ["ctime_ns", "inode"]
    store = ProjectStore(settings.cache_dir, root)
    store.open()
    records = store.manifest_records()
    store.close()
    for rel, rec in records.items():
        st = (root / rel).stat()
        assert (rec.ctime_ns, rec.inode) == (st.st_ctime_ns, st.st_ino)
    status = project_status(settings, root)
    assert status.changes is not None and status.changes.total == 0

    reads.clear()
    assert Indexer(settings, root, FakeEmbedder()).run().files_indexed == 0
    assert reads == []
    _rewrite_keeping_size_and_mtime(root / "b.go", "Gamma", "Sigma")
    assert Indexer(settings, root, FakeEmbedder()).run().files_indexed == 1
    assert any("Sigma" in c for p, c in _chunks(settings, root) if p == "b.go")
