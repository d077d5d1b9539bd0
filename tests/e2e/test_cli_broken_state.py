"""Broken state through the `lgrep` command: damaged index files, an unusable cache folder, and
searches that run while an index is rebuilt or built for the first time. Always a clear message,
never a traceback, and a way back."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from lgrep_core.storage.store import ProjectStore

pytestmark = [pytest.mark.slow, pytest.mark.model]

POLL_TIMEOUT_S = 120.0


def _clean_failure(result, *, allow_ok: bool = True) -> None:
    """Exit 0, or exit 1 with one `lgrep: error:` line; never a traceback."""
    assert "Traceback" not in result.err, result.err
    if result.code == 0 and allow_ok:
        return
    assert result.code == 1, (result.code, result.err)
    assert result.err.startswith("lgrep: error:"), result.err


# ------------------------------------------------------------------------------- damaged files


def _roles(index_dir: Path) -> dict[str, Path]:
    """One file per role in an index folder (numbers, hashes and UUIDs in names stand for any), the
    newest of each: every kind of file a damaged disk, a bad copy or a hand edit can hit."""
    roles: dict[str, Path] = {}
    for path in sorted(index_dir.rglob("*"), key=lambda p: p.stat().st_mtime_ns):
        if path.is_file():
            role = re.sub(r"[0-9a-f][0-9a-f-]{5,}|\d+", "#", path.relative_to(index_dir).as_posix())
            roles[role] = path
    return roles


# The roles are dealt round-robin to this many tests (~15 roles of three processes each made one
# test of 2-5 min), which pytest-xdist's workers run side by side.
DAMAGE_SHARDS = 5


@pytest.mark.parametrize("shard", range(DAMAGE_SHARDS))
def test_every_damaged_index_file_gives_a_clear_message_and_force_recovers(
    lgrep, lgrep_here, mini_repo: Path, shard: int
) -> None:
    lgrep("index", str(mini_repo))
    index_dir = ProjectStore(lgrep.cache, mini_repo).dir
    pristine = index_dir.parent / "pristine"
    shutil.copytree(index_dir, pristine)
    roles = _roles(index_dir)
    assert any("manifest.sqlite" in r for r in roles) and any("data/#.lance" in r for r in roles), roles
    assert len(roles) >= DAMAGE_SHARDS, roles
    for role in sorted(roles)[shard::DAMAGE_SHARDS]:
        path = roles[role]
        size = path.stat().st_size
        if role.endswith((".lance", ".manifest", ".sqlite", ".txn")):
            with path.open("r+b") as f:  # a torn write: the first half of the file
                f.truncate(size // 2)
        else:  # a hand edit or a bad copy: bytes that parse as nothing
            path.write_bytes(os.urandom(max(size, 64)))
        searched = lgrep("search", "verify token", str(mini_repo), "--json", check=False)
        _clean_failure(searched)
        _clean_failure(lgrep("status", str(mini_repo), check=False))
        if searched.code == 0:  # whatever still answers must be well-formed
            assert isinstance(searched.json()["results"], list), role
        # Reading the damage takes a process of its own (above); the rebuild, which never reads the
        # damaged files' contents, and its answer run in this one (a native crash there would still
        # fail the run: pytest-xdist reports a worker that dies).
        lgrep_here("index", str(mini_repo), "--force")
        # The rebuilt index answers.
        assert lgrep_here("search", "verify_jwt", str(mini_repo), "--json", "--type", "bm25").json()["results"], role
        shutil.rmtree(index_dir)
        shutil.copytree(pristine, index_dir)


def test_a_missing_table_version_is_detected_and_index_repairs_it(lgrep, mini_repo: Path) -> None:
    lgrep("index", str(mini_repo))
    store = ProjectStore(lgrep.cache, mini_repo)
    versions = store.data_dir / "lance" / "chunks.lance" / "_versions"
    manifests = sorted(versions.glob("*.manifest"), key=lambda p: p.stat().st_mtime_ns)
    assert len(manifests) >= 2
    manifests[-1].unlink()  # the table would open at an older (emptier) version, silently
    broken = lgrep("search", "verify token", str(mini_repo), check=False)
    assert broken.code == 1 and "lgrep index --force" in broken.err and "Traceback" not in broken.err
    # A plain `lgrep index` rebuilds what it cannot trust, beside the damaged one.
    repaired = lgrep("index", str(mini_repo), "--json")
    assert repaired.json()["files_indexed"] == repaired.json()["files_seen"]
    assert lgrep("search", "verify_jwt", str(mini_repo), "--json").json()["results"]


def test_a_damaged_manifest_is_rebuilt_by_a_plain_index(lgrep, mini_repo: Path) -> None:
    first = lgrep("index", str(mini_repo), "--json").json()
    store = ProjectStore(lgrep.cache, mini_repo)
    (store.data_dir / "manifest.sqlite").write_bytes(b"this is not a database" * 100)
    again = lgrep("index", str(mini_repo), "--json").json()
    assert again["chunks_total"] == first["chunks_total"]
    assert again["vectors_embedded"] == 0  # the tables were kept: nothing is embedded twice
    assert lgrep("search", "verify_jwt", str(mini_repo), "--json").json()["results"]


def test_an_unusable_cache_dir_is_a_clear_error(lgrep, mini_repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for cache in (blocker, blocker / "below"):
        lgrep.env["LGREP_CACHE_DIR"] = str(cache)
        for args in (("index", str(mini_repo)), ("search", "token", str(mini_repo)), ("status", str(mini_repo))):
            result = lgrep(*args, check=False)
            _clean_failure(result, allow_ok=args[0] == "status")
            assert result.code == 1, (args, result.err)
    assert blocker.read_text() == "not a folder"


# ------------------------------------------------------------------ searches while it changes


def test_searches_keep_answering_during_a_forced_rebuild(make_repo, lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 120)  # a rebuild long enough (~10 s of embedding) for searches to run beside it
    lgrep("index", str(repo))
    lgrep.env["LGREP_INDEX__EMBED_BATCH_CHUNKS"] = "16"
    rebuild = lgrep.popen("index", str(repo), "--force", "--quiet")
    overlapped = 0
    try:
        while rebuild.poll() is None:
            answer = lgrep("search", "handler for request kind 2 of module 7", str(repo), "--json").json()
            assert answer["results"], "a search during a rebuild found nothing"
            assert answer["vectors_pending"] == 0, "a search during a rebuild saw the half-built index"
            overlapped += rebuild.poll() is None
    finally:
        _, err = rebuild.communicate(timeout=POLL_TIMEOUT_S)
    assert rebuild.returncode == 0, err
    assert overlapped >= 1, "no search ran while the rebuild did"
    store = ProjectStore(lgrep.cache, repo)
    assert len(store.generations()) == 1, "the replaced index must be deleted"


def test_a_search_during_the_first_index_says_it_is_being_built(make_repo, lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    # Many files for a long first phase; functions repeated across them (distinct=False), so the
    # vector phase that follows the check embeds a few dozen chunks, not 3,000.
    make_repo(repo, 1500, funcs=2, distinct=False)
    store = ProjectStore(lgrep.cache, repo)
    indexer = lgrep.popen("index", str(repo), "--quiet")
    try:
        deadline = time.monotonic() + POLL_TIMEOUT_S
        while not store.generations():  # the build has started: freeze it there
            assert indexer.poll() is None and time.monotonic() < deadline, "the indexer did not start a build"
            time.sleep(0.01)
        indexer.send_signal(signal.SIGSTOP)
        assert not store.exists(), "the repository is too small: phase 1 finished before the test could stop it"
        busy = lgrep("search", "handler_0_1", str(repo), check=False)
        assert busy.code == 1 and "being indexed for the first time" in busy.err, busy.err
        assert str(indexer.pid) in busy.err
        status = lgrep("status", str(repo), "--json").json()
        assert status["state"] == "building"
    finally:
        indexer.send_signal(signal.SIGCONT)
        _, err = indexer.communicate(timeout=600)
    assert indexer.returncode == 0, err
    assert lgrep("search", "handler_0_1", str(repo), "--json", "--type", "bm25").json()["results"]


def test_search_of_an_index_in_the_old_layout_rebuilds_it(lgrep, mini_repo: Path) -> None:
    lgrep("index", str(mini_repo))
    store = ProjectStore(lgrep.cache, mini_repo)
    # The layout before generations: the index files directly in the project's folder.
    gen = store.data_dir
    for item in gen.iterdir():
        item.rename(store.dir / item.name)
    gen.rmdir()
    (store.dir / "CURRENT").unlink()
    assert lgrep("status", str(mini_repo), "--json").json()["state"] == "outdated"
    answer = lgrep("search", "verify_jwt", str(mini_repo), "--json")
    assert "older lgrep" in answer.err
    assert answer.json()["results"]
    assert not (store.dir / "lance").exists()


def test_clean_while_indexing_does_not_suggest_flags_it_lacks(lgrep, mini_repo: Path) -> None:
    lgrep("index", str(mini_repo))
    lock = ProjectStore(lgrep.cache, mini_repo).lock()
    lock.acquire(0, mini_repo)
    try:
        busy = lgrep("clean", str(mini_repo), check=False)
    finally:
        lock.release()
    assert busy.code == 1 and "another lgrep process" in busy.err
    assert "--wait" not in busy.err and "lgrep clean" in busy.err


def test_broken_pipe_exits_quietly(lgrep, mini_repo: Path) -> None:
    lgrep("index", str(mini_repo))
    for args in (("search", "token", str(mini_repo)), ("search", "token", str(mini_repo), "--json")):
        with subprocess.Popen(
            [*lgrep.command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=lgrep.env
        ) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()  # the reader is gone before lgrep writes a byte (`| head -0`)
            err = proc.stderr.read().decode()
            proc.wait(timeout=POLL_TIMEOUT_S)
        assert "Traceback" not in err and "BrokenPipe" not in err, err
        assert proc.returncode == 141


# ------------------------------------------------------------------------------------ a full disk


@pytest.mark.parametrize(
    "failure",
    [
        OSError(28, "No space left on device"),
        # what LanceDB raises when its object store cannot write a fragment
        RuntimeError(
            "lance error: LanceError(IO): Generic LocalFileSystem error: No space left on device (os error 28)"
        ),
        OSError(122, "Disk quota exceeded"),
    ],
    ids=["ENOSPC", "lance", "EDQUOT"],
)
def test_a_full_disk_is_not_called_damage(
    tmp_path: Path,
    model_dir: Path,
    mini_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    failure: Exception,
) -> None:
    """A write of the index that fails for want of space says the disk is full, how much is free and
    how much the index takes, that nothing was lost, and never advises `--force` (a rebuild needs more
    space). The fault is injected where chunks are handed to LanceDB, in an in-process `lgrep index`."""
    from lgrep_cli.cli import main
    from lgrep_core.storage import _chunks

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(model_dir, target_is_directory=True)
    for name in [k for k in os.environ if k.startswith("LGREP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LGREP_CACHE_DIR", str(cache))
    monkeypatch.setenv("LGREP_SERVER__AUTOSTART", "0")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["index", "-q", str(mini_repo)]) == 0
    capsys.readouterr()

    (mini_repo / "auth" / "tokens.py").write_text("def rotate_signing_keys(old):\n    return old[::-1]\n")

    def no_space(*_args: object, **_kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(_chunks, "_chunk_table", no_space)
    assert main(["index", "-q", str(mini_repo)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lgrep: error: the disk holding the index at ") and "is full" in err, err
    assert "MB free there" in err and "the index takes" in err and "nothing indexed so far was lost" in err
    assert f"lgrep index {mini_repo.resolve()}" in err and "--force" not in err and "damaged (" not in err
    assert "Traceback" not in err

    monkeypatch.undo()  # room again: the index is as it was, and the next run goes on
    monkeypatch.setenv("LGREP_CACHE_DIR", str(cache))
    monkeypatch.setenv("LGREP_SERVER__AUTOSTART", "0")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["search", "verify a JWT token", str(mini_repo), "--type", "bm25", "--json"]) == 0
    assert "auth/tokens.py" in capsys.readouterr().out
    assert main(["index", "-q", str(mini_repo)]) == 0
    capsys.readouterr()
    assert main(["search", "rotate signing keys", str(mini_repo), "--type", "bm25", "--json"]) == 0
    assert "rotate_signing_keys" in capsys.readouterr().out
