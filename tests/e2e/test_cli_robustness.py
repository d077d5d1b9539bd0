"""Bad input, killed indexers, concurrent writers and damaged indexes, through the `lgrep` command."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.storage.store import ProjectStore

pytestmark = [pytest.mark.slow, pytest.mark.model]

POLL_TIMEOUT_S = 120.0


def _wait_for(condition, what: str, proc: subprocess.Popen[str] | None = None) -> None:
    """Poll a condition on the index while another process works; fail loudly after a timeout."""
    deadline = time.monotonic() + POLL_TIMEOUT_S
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"indexer exited ({proc.returncode}) before {what}: {proc.stderr.read() if proc.stderr else ''}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_hostile_file_names(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    names = [
        'it\'s "quoted".py',
        "x' OR '1'='1.py",
        "back\\slash.py",
        "ünïcode 🎉.py",
        "-leading-dash.py",
        "semi;colon --.py",
    ]
    for n, name in enumerate(names):
        (repo / name).write_text(f"def hostile_function_{n}():\n    return {n}\n")
    summary = lgrep("index", str(repo), "--json").json()
    assert summary["files_indexed"] == len(names)
    (repo / "x' OR '1'='1.py").unlink()
    after = lgrep("index", str(repo), "--json").json()
    assert after["files_deleted"] == 1
    assert after["chunks_total"] == summary["chunks_total"] - (summary["chunks_total"] // len(names))
    hits = lgrep("search", "hostile_function_0", str(repo), "--json", "--type", "bm25", "-n", "20").json()["results"]
    found = {h["path"] for h in hits}
    assert found == set(names) - {"x' OR '1'='1.py"}


def test_bad_files_are_skipped_not_fatal(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src/good.py").write_text("def fine():\n    return 'ok'\n")
    (repo / "src/latin1.py").write_bytes("# caf\xe9 r\xe9sum\xe9\ndef accented_name():\n    pass\n".encode("latin-1"))
    (repo / "src/blob.bin").write_bytes(bytes(range(256)) * 40)
    (repo / "src/image.py").write_bytes(b"\x00\x01binary\x00" * 100)
    (repo / "src/huge.py").write_text("x = 1\n" * 400_000)
    (repo / ".env").write_text("API_KEY=secret\n")
    (repo / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (repo / "loop").symlink_to(repo, target_is_directory=True)
    (repo / "outside.py").symlink_to("/etc/passwd")
    (repo / "node_modules/lib").mkdir(parents=True)
    (repo / "node_modules/lib/index.js").write_text("function vendored() {}\n")
    summary = lgrep("index", str(repo), "--json").json()
    assert summary["files_seen"] == 2
    skipped = summary["files_skipped"]
    assert skipped["too-large"] == 1
    assert skipped["binary"] >= 1
    assert skipped["secret"] == 2
    assert skipped["symlink"] == 2
    hits = lgrep("search", "accented_name", str(repo), "--json", "--type", "bm25").json()["results"]
    assert hits[0]["path"] == "src/latin1.py"
    everything = lgrep("search", "API_KEY secret passwd root vendored", str(repo), "--json", "-n", "50").json()
    assert {h["path"] for h in everything["results"]} <= {"src/good.py", "src/latin1.py"}


def test_second_writer_gets_clear_error_or_waits(lgrep, mini_repo: Path) -> None:
    lgrep("index", str(mini_repo))
    store = ProjectStore(lgrep.cache, mini_repo)
    lock = store.lock()
    lock.acquire(0, mini_repo)
    try:
        busy = lgrep("index", str(mini_repo), check=False)
        assert busy.code == 1
        assert "another lgrep process" in busy.err and str(os.getpid()) in busy.err
        # A queued writer proceeds as soon as the first lets go.
        waiter = lgrep.popen("index", str(mini_repo), "--wait", "60", "--json")
        assert waiter.stderr is not None
        first_line = waiter.stderr.readline()  # blocks until the waiter reports that it queues
        assert "waiting for another lgrep process" in first_line
        lock.release()
        _, err = waiter.communicate(timeout=POLL_TIMEOUT_S)
        assert waiter.returncode == 0, err
    finally:
        lock.release()


def _unpublished_files(store: ProjectStore) -> int:
    """Files a first build committed to its (not yet published) generation, from its manifest."""
    for gen in store.generations():
        manifest = store.dir / gen / "manifest.sqlite"
        if manifest.is_file():
            try:
                with contextlib.closing(sqlite3.connect(manifest, timeout=1)) as conn:
                    return int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
            except sqlite3.Error:
                return 0
    return 0


def test_kill_during_chunk_phase_then_resume(make_repo, lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 1300, distinct=False)
    proc = lgrep.popen("index", str(repo), "--quiet")
    store = ProjectStore(lgrep.cache, repo)
    _wait_for(lambda: _unpublished_files(store) > 0, "the first chunk batch", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=POLL_TIMEOUT_S)
    assert not store.exists(), "a half-built first index must not be published"
    # Status and search say what happened instead of answering "no results".
    assert lgrep("status", str(repo), "--json").json()["state"] == "interrupted"
    # The next run resumes the build: the committed batches are not redone, and nothing is doubled.
    done = lgrep("index", str(repo), "--json").json()
    assert done["files_seen"] == 1300
    assert done["files_unchanged"] >= 400
    assert done["vectors_pending"] == 0
    assert lgrep("search", "handler_0_1", str(repo), "--json", "--type", "bm25").json()["results"]
    fresh = lgrep("index", str(repo), "--json", "--force").json()
    assert done["chunks_total"] == fresh["chunks_total"]


def test_kill_during_embedding_then_resume(make_repo, lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 60)
    lgrep.env["LGREP_INDEX__EMBED_BATCH_CHUNKS"] = "8"
    proc = lgrep.popen("index", str(repo), "--quiet")

    def some_vectors_committed() -> bool:
        # Committed and recorded for readers (the version a search or `lgrep status` reads).
        try:
            reader = ProjectReader(lgrep.cache, repo)
            version = reader.version()
            return len(reader.vector_keys(version)) >= 8
        except Exception:
            return False

    _wait_for(some_vectors_committed, "the first vector batch", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=POLL_TIMEOUT_S)
    status = lgrep("status", str(repo), "--json").json()
    assert 0 < status["vectors_pending"] < status["chunks"]
    answer = lgrep("search", "handle request kind 2", str(repo), "--json").json()
    assert answer["results"] and answer["vectors_pending"] == status["vectors_pending"]
    resumed = lgrep("index", str(repo), "--json").json()
    assert resumed["files_indexed"] == 0
    # A batch the killed run committed but had not yet recorded is not shown as embedded, and is
    # reused rather than embedded again.
    assert 0 < resumed["vectors_embedded"] <= status["vectors_pending"]
    assert resumed["vectors_pending"] == 0


def test_no_wait_returns_after_bm25_and_fills_vectors_behind(make_repo, lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 40)
    quick = lgrep("index", str(repo), "--no-wait", "--json").json()
    assert quick["vectors_embedded"] == 0
    assert quick["vectors_pending"] == quick["chunks_total"] > 0
    early = lgrep("search", "handler_7_2", str(repo), "--json", "--type", "bm25").json()
    assert early["results"][0]["symbol"] == "handler_7_2"

    def filled() -> bool:
        return lgrep("status", str(repo), "--json").json()["vectors_pending"] == 0

    _wait_for(filled, "the background vector fill")
    assert lgrep("search", "handler_7_2", str(repo), "--json").json()["vectors_pending"] == 0


def test_damaged_index_is_a_clear_error_and_force_recovers(lgrep, mini_repo: Path) -> None:
    lgrep("index", str(mini_repo))
    store = ProjectStore(lgrep.cache, mini_repo)
    shutil.rmtree(store.data_dir / "lance" / "chunks.lance" / "_versions")
    broken = lgrep("search", "token", str(mini_repo), check=False)
    assert broken.code == 1
    assert "lgrep index --force" in broken.err
    lgrep("index", str(mini_repo), "--force")
    assert lgrep("search", "verify_jwt", str(mini_repo), "--json").json()["results"]
