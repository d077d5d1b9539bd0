"""`Indexer.update`: applying a batch of changed paths must leave exactly what a full incremental run
leaves. Each test builds two indexes of the same folder (two cache dirs): one brought up to date by
`update`, the other by `run`, and compares every chunk row, the manifest and the stored vectors."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from lgrep_core.domain.errors import IndexBusyError, NotFoundError
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.schema import CHUNK_COLUMNS
from lgrep_core.storage.store import ProjectStore
from lgrep_core.testing import FakeEmbedder
from lgrep_index import pipeline
from lgrep_index.changes import ChangeBatch
from lgrep_index.pipeline import Indexer

_rng = random.Random(3)
AWS_KEY_ID = "AK" + "IA" + "".join(_rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
AWS_SECRET = "".join(_rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/") for _ in range(40))


def _settings(tmp_path: Path, name: str):
    return load_settings(None, env={"LGREP_CACHE_DIR": str(tmp_path / name)}, user_config=tmp_path / "none").settings


def _write(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def _function(name: str, body: str = "return 1") -> str:
    return f"def {name}(value):\n    '''Compute {name.replace('_', ' ')}.'''\n    {body}\n\n\n"


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _write(root, "a.py", _function("alpha") + _function("beta"))
    _write(root, "b.py", _function("gamma"))
    _write(root, "c.go", "package c\n\nfunc Delta() int {\n\treturn 4\n}\n")
    _write(root, "data.txt", "plain notes about the project\n")
    _write(root, "docs/guide.md", "# Guide\n\nHow to use it.\n\n## Install\n\nRun it.\n")
    _write(root, "lib/x.py", _function("parse_config"))
    _write(root, "lib/sub/y.py", _function("render_page"))
    _write(root, "keep/z.py", _function("zeta"))
    _write(root, "library/not_under_lib.py", _function("library_helper"))
    return root


def _contents(settings, root: Path) -> tuple[list[dict[str, object]], list[tuple[object, ...]], set[str]]:
    store = ProjectStore(settings.cache_dir, root)
    store.open()
    try:
        rows = [
            r
            for b in store.iter_chunk_rows(CHUNK_COLUMNS)
            for r in (dict(zip(b, row, strict=True)) for row in zip(*b.values(), strict=True))
        ]
        manifest = sorted(
            (r.path, r.size, r.mtime_ns, r.sha256, r.language, r.chunks) for r in store.manifest_records().values()
        )
        vectors = store.stored_vector_keys()
    finally:
        store.close()
    return sorted(rows, key=lambda r: str(r["id"])), manifest, vectors


def _twins(tmp_path: Path) -> tuple[Path, Indexer, Indexer]:
    """The same repository indexed twice: `updated` will get batches, `walked` full runs."""
    root = _repo(tmp_path)
    updated = Indexer(_settings(tmp_path, "cache-update"), root, FakeEmbedder())
    walked = Indexer(_settings(tmp_path, "cache-run"), root, FakeEmbedder())
    updated.run()
    walked.run()
    return root, updated, walked


def _same_index(tmp_path: Path, root: Path, updated: Indexer, walked: Indexer) -> None:
    a = _contents(updated.settings, root)
    b = _contents(walked.settings, root)
    assert [r["path"] for r in a[0]] == [r["path"] for r in b[0]]
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]


def test_update_matches_a_full_run(tmp_path: Path) -> None:
    root, updated, walked = _twins(tmp_path)
    _write(root, "a.py", _function("alpha", "return 2") + _function("beta"))  # changed
    _write(root, "new.py", _function("epsilon"))  # added
    (root / "b.py").unlink()  # deleted
    _write(root, ".lgrepignore", "c.go\n")  # c.go is now ignored
    shutil.rmtree(root / "lib")  # a folder removed
    _write(root, "data.txt", b"\x00\x01binary now\x00" * 50)  # turned binary
    (root / "keep").rename(root / "moved")  # a folder renamed
    _write(root, "creds.py", f'AWS_ACCESS_KEY_ID = "{AWS_KEY_ID}"\naws_secret_access_key = "{AWS_SECRET}"\n')
    _write(root, "docs/guide.md", "# Guide\n\nHow to use it.\n\n## Install\n\nRun it.\n")  # touched, same text
    batch = ChangeBatch(
        changed=frozenset(
            {"a.py", "new.py", "b.py", ".lgrepignore", "c.go", "data.txt", "moved/z.py", "creds.py", "docs/guide.md"}
        ),
        removed_prefixes=frozenset({"lib", "keep"}),
    )
    summary = updated.update(batch)
    full = walked.run()
    _same_index(tmp_path, root, updated, walked)

    assert summary.files_indexed == full.files_indexed == 4  # a.py, new.py, .lgrepignore, moved/z.py
    assert summary.files_deleted == full.files_deleted == 6  # b.py, c.go, data.txt, lib/x.py, lib/sub/y.py, keep/z.py
    assert summary.skipped["secret"] == 1 and summary.skipped["binary"] == 1
    assert summary.files_seen < full.files_seen  # no walk of the rest
    assert summary.vectors_pending == 0 and not summary.created
    paths = {r["path"] for r in _contents(updated.settings, root)[0]}
    assert "library/not_under_lib.py" in paths and not {p for p in paths if p.startswith(("lib/", "keep/"))}


def test_update_embeds_only_new_chunks(tmp_path: Path) -> None:
    root, updated, walked = _twins(tmp_path)
    embedder = FakeEmbedder()
    updater = Indexer(updated.settings, root, embedder)
    _write(root, "a.py", _function("alpha", "return 9") + _function("beta"))
    summary = updater.update(ChangeBatch(changed=frozenset({"a.py"})))
    assert summary.files_indexed == 1 and summary.vectors_embedded == 1  # beta's chunk kept its vector
    assert len(embedder.embedded_texts) == 1 and "alpha" in embedder.embedded_texts[0]
    walked.run()
    _same_index(tmp_path, root, updater, walked)


def test_update_reads_a_named_file_whose_size_and_mtime_did_not_change(tmp_path: Path) -> None:
    # The watcher saw the file written: a rewrite that keeps its size and mtime is still a change.
    root, updated, _ = _twins(tmp_path)
    target = root / "b.py"
    before = target.stat()
    target.write_text(target.read_text().replace("gamma", "omega"))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert target.stat().st_size == before.st_size and target.stat().st_mtime_ns == before.st_mtime_ns
    summary = updated.update(ChangeBatch(changed=frozenset({"b.py"})))
    assert summary.files_indexed == 1
    assert any("omega" in str(r["content"]) for r in _contents(updated.settings, root)[0] if r["path"] == "b.py")
    # Named again with the same content: read, compared by hash, nothing written.
    assert updated.update(ChangeBatch(changed=frozenset({"b.py"}))).files_indexed == 0


def test_unchanged_paths_cost_no_write(tmp_path: Path) -> None:
    root, updated, _ = _twins(tmp_path)
    store = ProjectStore(updated.settings.cache_dir, root)
    store.open()
    before = store.generation()
    store.close()
    summary = updated.update(ChangeBatch(changed=frozenset({"a.py", "gone.py", "node_modules/x.js"})))
    assert (summary.files_indexed, summary.files_deleted, summary.files_unchanged) == (0, 0, 1)
    store.open()
    assert store.generation() == before  # no table commit: readers have nothing to reload
    store.close()


def test_a_newly_ignored_folder_and_a_now_ignored_file(tmp_path: Path) -> None:
    root, updated, walked = _twins(tmp_path)
    _write(root, ".gitignore", "lib/\n*.md\n")
    batch = ChangeBatch(changed=frozenset({".gitignore", "lib/x.py", "lib/sub/y.py", "docs/guide.md"}))
    updated.update(batch)
    walked.run()
    _same_index(tmp_path, root, updated, walked)
    paths = {r["path"] for r in _contents(updated.settings, root)[0]}
    assert not {p for p in paths if p.startswith("lib/") or p.endswith(".md")}


def test_rescan_is_a_full_run(tmp_path: Path) -> None:
    root, updated, walked = _twins(tmp_path)
    _write(root, "quiet.py", _function("unreported"))  # nobody says it changed
    summary = updated.update(ChangeBatch(rescan=True, reasons=(".gitignore changed",)))
    walked.run()
    _same_index(tmp_path, root, updated, walked)
    assert summary.files_indexed == 1 and summary.files_seen == 10  # walked: the whole repository


def test_update_without_an_index_builds_it_whole(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    updated = Indexer(_settings(tmp_path, "cache-update"), root, FakeEmbedder())
    walked = Indexer(_settings(tmp_path, "cache-run"), root, FakeEmbedder())
    summary = updated.update(ChangeBatch(changed=frozenset({"a.py"})))
    walked.run()
    assert summary.created and summary.files_indexed == 9
    _same_index(tmp_path, root, updated, walked)


def test_update_reads_nothing_outside_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, updated, _ = _twins(tmp_path)
    _write(tmp_path, "outside.py", _function("stolen"))
    (root / "escape").symlink_to(tmp_path, target_is_directory=True)
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    opened: list[Path] = []
    real = pipeline.read_text

    def spy(file, max_bytes):
        opened.append(file.abs_path)
        return real(file, max_bytes)

    monkeypatch.setattr(pipeline, "read_text", spy)
    batch = ChangeBatch(
        changed=frozenset({"../outside.py", str(tmp_path / "outside.py"), "escape/outside.py", "link.py", "./a.py"}),
        removed_prefixes=frozenset({"..", "", "/"}),
    )
    summary = updated.update(batch)
    assert opened == [] and summary.files_indexed == 0
    assert summary.skipped["symlink"] == 1
    assert not [r for r in _contents(updated.settings, root)[0] if "stolen" in str(r["content"])]


def test_update_of_a_vanished_root(tmp_path: Path) -> None:
    root, updated, _ = _twins(tmp_path)
    with pytest.raises(NotFoundError):
        updated.update(ChangeBatch(root_gone=True))
    shutil.rmtree(root)
    with pytest.raises(NotFoundError):
        updated.update(ChangeBatch(changed=frozenset({"a.py"})))


def test_update_takes_the_write_lock(tmp_path: Path) -> None:
    root, updated, _ = _twins(tmp_path)
    lock = ProjectStore(updated.settings.cache_dir, root).lock()
    lock.acquire(1, root)
    try:
        with pytest.raises(IndexBusyError):
            updated.update(ChangeBatch(changed=frozenset({"a.py"})), lock_timeout_s=0)
    finally:
        lock.release()


@pytest.mark.timeout(120)
def test_watcher_batches_applied_by_update_match_a_full_run(tmp_path: Path) -> None:
    """The daemon's loop in small: a watcher feeds `update`; the index ends as a full run leaves it."""
    import queue

    from lgrep_index.pipeline import walk_options
    from lgrep_index.watch.watcher import ProjectWatcher

    root, updated, walked = _twins(tmp_path)
    applied: queue.Queue[ChangeBatch] = queue.Queue()

    def on_batch(batch: ChangeBatch) -> None:
        updated.update(batch)
        applied.put(batch)

    with ProjectWatcher(root, walk_options(updated.settings), on_batch, debounce_s=0.1):
        _write(root, "a.py", _function("alpha", "return 7") + _function("beta"))
        _write(root, "fresh/new.py", _function("brand_new"))
        (root / "b.py").unlink()
        (root / "keep").rename(root / "kept")
        shutil.rmtree(root / "lib")
        temp = root / ".c.go.swp"
        temp.write_text("package c\n\nfunc Delta() int {\n\treturn 5\n}\n")
        temp.replace(root / "c.go")
        _write(root, "data.txt", b"\x00binary\x00" * 40)
        _write(root, "zz_sentinel.py", _function("sentinel"))
        seen: set[str] = set()
        while "zz_sentinel.py" not in seen:
            seen |= applied.get(timeout=60).changed
    walked.run()
    _same_index(tmp_path, root, updated, walked)
    paths = {r["path"] for r in _contents(updated.settings, root)[0]}
    assert {"fresh/new.py", "kept/z.py", "zz_sentinel.py"} <= paths
    assert not {p for p in paths if p.startswith(("lib/", "keep/"))} and "b.py" not in paths


def test_update_embeds_its_chunks_without_scanning_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, updated, walked = _twins(tmp_path)

    def no_scan(self):
        raise AssertionError("update scanned the tables for pending vectors")

    monkeypatch.setattr(ProjectStore, "pending_vector_keys", no_scan)
    _write(root, "b.py", _function("gamma", "return 3") + _function("gamma_two"))
    summary = updated.update(ChangeBatch(changed=frozenset({"b.py"})))
    assert summary.vectors_embedded >= 1 and summary.vectors_pending == 0
    monkeypatch.undo()
    walked.run()
    _same_index(tmp_path, root, updated, walked)


def test_update_also_embeds_what_an_earlier_run_left_pending(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    settings = _settings(tmp_path, "cache-update")
    quick = Indexer(settings, root, FakeEmbedder()).run(wait_vectors=False)
    assert quick.vectors_pending > 0
    _write(root, "a.py", _function("alpha", "return 5") + _function("beta"))
    summary = Indexer(settings, root, FakeEmbedder()).update(ChangeBatch(changed=frozenset({"a.py"})))
    assert summary.vectors_pending == 0 and summary.vectors_embedded >= quick.vectors_pending


def test_a_large_update_falls_back_to_scanning_for_pending_vectors(tmp_path: Path, monkeypatch) -> None:
    root, updated, walked = _twins(tmp_path)
    monkeypatch.setattr(pipeline, "MAX_WRITTEN_TEXTS", 1)
    for name in ["a.py", "b.py", "keep/z.py"]:
        _write(root, name, (root / name).read_text() + _function(f"extra_{name[0]}"))
    summary = updated.update(ChangeBatch(changed=frozenset({"a.py", "b.py", "keep/z.py"})))
    assert summary.files_indexed == 3 and summary.vectors_pending == 0
    walked.run()
    _same_index(tmp_path, root, updated, walked)
