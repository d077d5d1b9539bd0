"""The daemon through real processes: `lgrep serve`, commands that use and start it, a kill -9 in
the middle of indexing, a second daemon, TCP with a token, and the socket's permissions."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lgrep_core.domain.errors import AuthenticationError, ConfigError, ServerUnavailableError
from lgrep_core.domain.models import SearchRequest, UnwatchProjectRequest, WatchProjectRequest
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.rpc.grpc_tokens import read_token_file
from lgrep_core.runtime.priority import BACKGROUND_NICE
from lgrep_core.storage.layout import project_dir, writer_pid
from lgrep_core.testing.standins import EmbeddingStandIn

pytestmark = [pytest.mark.slow, pytest.mark.model]


def test_serve_listens_on_a_private_socket_and_a_second_one_refuses(daemon) -> None:
    pid = daemon.start()
    mode = stat.S_IMODE(daemon.socket.stat().st_mode)
    assert stat.S_ISSOCK(daemon.socket.stat().st_mode) and mode == 0o600, oct(mode)
    second = daemon.lgrep("serve", check=False, timeout=120)
    assert second.code == 3 and f"pid {pid}" in second.err and "already serving" in second.err, second.err
    status = daemon.lgrep("serve", "--status")
    assert f"pid {pid}" in status.out and "all-MiniLM-L6-v2 (int8)" in status.out
    stopped = daemon.lgrep("serve", "--stop")
    assert f"pid {pid}" in stopped.err
    assert daemon.process is not None and daemon.process.wait(timeout=30) == 0
    assert not daemon.socket.exists()


def test_serve_status_says_what_the_daemon_holds(daemon, mini_repo: Path) -> None:
    nothing = daemon.lgrep("serve", "--status", "--json", check=False)
    assert nothing.code == 1 and nothing.json() == {"running": False, "socket": str(daemon.socket)}
    pid = daemon.start()
    daemon.lgrep("index", str(mini_repo))  # every vector written: indexing releases the model no more
    daemon.lgrep("watch", str(mini_repo))
    daemon.lgrep("search", "verify the token signature", str(mini_repo), "--type", "vector")
    status = daemon.lgrep("serve", "--status", "--json").json()
    assert status["running"] is True and status["pid"] == pid and status["roles"] == ["index", "search"]
    assert status["models_loaded"] == 1 and status["resident_projects"] == 1
    assert status["watched_projects"] == [str(mini_repo.resolve())]
    assert status["contract_revision"] >= 2 and status["started_at"].endswith("+00:00")
    text = daemon.lgrep("serve", "--status").out
    assert "models    1 loaded" in text and "1 in memory, 1 watched" in text, text
    assert f"watching  {mini_repo.resolve()}" in text, text
    assert daemon.lgrep("--version").out == f"lgrep {importlib.metadata.version('lgrep')}\n"


def test_commands_start_the_daemon_and_search_through_it(daemon, mini_repo: Path) -> None:
    first = daemon.lgrep("search", "verify token signature", str(mini_repo), "--json")
    assert "starting the lgrep daemon" in first.err
    assert first.json()["results"], first.err
    # The next command finds it running: no start, and the project's snapshot is already in memory.
    again = daemon.lgrep("search", "verify token signature", str(mini_repo), "--json")
    assert "starting" not in again.err and again.json()["results"] == first.json()["results"]
    assert "1 in memory" in daemon.lgrep("serve", "--status").out
    status = daemon.lgrep("status", str(mini_repo), "--json").json()
    assert status["state"] == "ready" and status["files"] > 0
    # The same search in-process gives the same answer.
    local = daemon.lgrep("search", "verify token signature", str(mini_repo), "--json", "--no-daemon")
    assert [(h["path"], h["start_line"]) for h in local.json()["results"]] == [
        (h["path"], h["start_line"]) for h in first.json()["results"]
    ]
    removed = daemon.lgrep("clean", str(mini_repo))
    assert "removed the index" in removed.err
    assert daemon.lgrep("status", str(mini_repo), check=False).code == 1


def _mapped_libraries(pid: int) -> set[str]:
    """The site-packages folders whose native libraries the process has mapped."""
    found = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        path = line.split(maxsplit=5)[-1]
        if ".so" in path and "site-packages/" in path:
            found.add(path.split("site-packages/", 1)[1].split("/", 1)[0])
    return found


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
def test_the_daemon_loads_lancedb_only_when_a_project_is_opened(daemon, mini_repo: Path) -> None:
    # LanceDB and Arrow are ~105 MB of a daemon's memory: one that serves no project yet has neither.
    pid = daemon.start()
    idle = _mapped_libraries(pid)
    assert "onnxruntime" in idle  # the model is loaded at start...
    assert not idle & {"lancedb", "pyarrow"}, idle
    daemon.lgrep("search", "verify token signature", str(mini_repo), "--json")
    assert "lancedb" in _mapped_libraries(pid)  # ...storage when a project needs it


def test_the_daemon_never_imports_from_the_project_it_was_started_in(daemon, mini_repo: Path) -> None:
    markers = mini_repo.parent / "markers"
    markers.mkdir()
    for name in ("lgrep_cli", "lgrep_core", "grpc", "numpy", "sitecustomize", "usercustomize"):
        (mini_repo / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').write('ran')\n")
    # The installed `lgrep` script, run from inside the project: the command does not put its working
    # directory on sys.path, and the daemon it starts must not either (`-P`, cwd = the cache dir).
    script = Path(sys.executable).with_name("lgrep")
    proc = subprocess.run(
        [str(script), "search", "verify token", "--json"],
        cwd=mini_repo,
        env=daemon.lgrep.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0 and "starting the lgrep daemon" in proc.stderr, proc.stderr
    assert sorted(p.name for p in markers.iterdir()) == []


def test_kill_9_while_indexing_then_restart_completes_the_job(wait_for, daemon, tmp_path: Path, make_repo) -> None:
    repo = tmp_path / "big"
    make_repo(repo, 400)
    pid = daemon.start()
    index = daemon.lgrep.popen("index", str(repo), "--json")
    # Kill the daemon once its first generation exists on disk (it is writing the index).
    wait_for(lambda: any(daemon.cache.glob("*/gen-*")), 120, "the daemon to start writing the index")
    os.kill(pid, signal.SIGKILL)
    _out, err = index.communicate(timeout=120)
    assert index.returncode == 1 and "Traceback" not in err and "lgrep: error:" in err, err
    assert daemon.socket.exists()  # the killed daemon left its socket behind
    # A new daemon removes the stale socket, and the next index finishes the interrupted build.
    daemon.start()
    done = daemon.lgrep("index", str(repo), "--json").json()
    assert done["files_seen"] == 400 and done["vectors_pending"] == 0
    hits = daemon.lgrep("search", "handle request kind 3 for module 217", str(repo), "--json").json()["results"]
    assert any("module_217" in h["path"] for h in hits)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_tcp_needs_the_token(daemon, mini_repo: Path) -> None:
    daemon.start("--tcp-port", str(_free_port()))
    daemon.lgrep("index", str(mini_repo))
    with LgrepClient.connect(socket_path=daemon.socket) as local:
        port = local.server_info().tcp_port
    assert port > 0
    token_file = daemon.cache / "lgrep.token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    request = SearchRequest("verify token", project_root=str(mini_repo))
    with LgrepClient.connect(port=port, token=read_token_file(token_file)) as good:
        assert good.call(request).results
    with LgrepClient.connect(port=port, token="x" * 43) as bad, pytest.raises(AuthenticationError):
        bad.call(request)
    with pytest.raises(ConfigError, match="token"):
        LgrepClient.connect(port=port)


def test_a_daemon_serving_another_model_is_a_clear_error(daemon, mini_repo: Path, tmp_path: Path) -> None:
    indexed = tmp_path / "indexed"
    shutil.copytree(mini_repo, indexed)
    daemon.lgrep("index", str(indexed), "--no-daemon")
    daemon.start(extra_env={"LGREP_EMBEDDING__QUANTIZED": "false"})
    # A project without an index: the handshake comes first, before the daemon would build it.
    refused = daemon.lgrep("search", "verify token", str(mini_repo), check=False)
    assert refused.code == 1 and "serves local/all-MiniLM-L6-v2 (fp32)" in refused.err, refused.err
    assert "lgrep serve --stop" in refused.err
    # A project with one: the same refusal, before any search.
    again = daemon.lgrep("search", "verify token", str(indexed), check=False)
    assert again.code == 1 and again.out == "" and "serves local/all-MiniLM-L6-v2 (fp32)" in again.err, again.err


def test_a_stopped_daemon_gives_a_clear_error_to_a_waiting_client(daemon, mini_repo: Path) -> None:
    daemon.start()
    client = LgrepClient.connect(socket_path=daemon.socket)
    client.server_info()
    daemon.lgrep("serve", "--stop")
    with pytest.raises(ServerUnavailableError):
        client.call(SearchRequest("verify", project_root=str(mini_repo)))
    client.close()


def test_a_daemon_whose_socket_is_deleted_stops(daemon) -> None:
    daemon.start()
    daemon.socket.unlink()  # as when its cache dir is deleted: no client can reach it any more
    assert daemon.process is not None and daemon.process.wait(timeout=60) == 0


# --- cancelling, the watch list without a daemon, resumed fills, nested projects -----------------
# A stand-in OpenAI server on 127.0.0.1 answers each embedding request after `latency` seconds: a
# first index of a few hundred chunks then takes minutes, deterministically, and the daemon loads
# no model (it starts in a second).


@pytest.fixture
def slow_embedder(daemon) -> Iterator[EmbeddingStandIn]:  # type: ignore[no-untyped-def]
    with EmbeddingStandIn("openai", dimension=64, latency=0.5) as server:
        daemon.lgrep.env.update(
            {
                "LGREP_EMBEDDING_PROVIDER": "openai",
                "LGREP_EMBEDDING_BASE_URL": server.base_url,
                "LGREP_EMBEDDING_DIMENSIONS": "64",
                "OPENAI_API_KEY": "test-key",
                "LGREP_INDEX__EMBED_BATCH_CHUNKS": "8",  # a commit every 8 chunks: one request each
            }
        )
        yield server


def _documents_sent(server: EmbeddingStandIn) -> int:
    return sum(1 for r in server.requests if r.answered == "ok")


def _lock_free(daemon, root: Path) -> bool:  # type: ignore[no-untyped-def]
    return writer_pid(project_dir(daemon.cache, root)) is None


def test_ctrl_c_cancels_the_daemons_run_and_clean_then_works(
    wait_for, daemon, slow_embedder: EmbeddingStandIn, tmp_path: Path, make_repo
) -> None:
    repo = tmp_path / "big"
    make_repo(repo, 120)  # ~600 chunks: 75 requests of 0.5 s, were nobody to stop it
    daemon.start()
    index = daemon.lgrep.popen("index", str(repo), "--yes")
    wait_for(lambda: _documents_sent(slow_embedder) >= 2, 60, "the daemon to embed its first batches")
    index.send_signal(signal.SIGINT)
    _out, err = index.communicate(timeout=30)
    assert index.returncode == 130 and "Traceback" not in err, err
    assert "interrupted: the daemon cancels its index of" in err and "goes on from there" in err, err
    # Nobody else waits for the run: the daemon stops it at its next commit and lets the project go.
    wait_for(lambda: _lock_free(daemon, repo), 20, "the daemon to stop the cancelled run")
    sent = _documents_sent(slow_embedder)
    status = daemon.lgrep("status", str(repo), "--json").json()
    assert status["state"] == "ready" and status["files"] == 120 and status["vectors_pending"] > 0, status
    assert _documents_sent(slow_embedder) == sent  # nothing more is embedded behind the user's back
    removed = daemon.lgrep("clean", str(repo), timeout=60)
    assert "removed the index" in removed.err, removed.err


def test_ctrl_c_stops_an_in_process_run_at_a_commit_and_keeps_what_it_committed(
    wait_for, daemon, slow_embedder: EmbeddingStandIn, tmp_path: Path, make_repo
) -> None:
    """`--no-daemon`: the run works on a thread of its own (lgrep_cli.local.LocalIndexRun); Ctrl-C
    cancels it, the command waits for its next commit boundary and exits 130, the lock is free."""
    repo = tmp_path / "big"
    make_repo(repo, 120)
    index = daemon.lgrep.popen("index", str(repo), "--yes", "--no-daemon")
    wait_for(lambda: _documents_sent(slow_embedder) >= 2, 60, "the command to embed its first batches")
    index.send_signal(signal.SIGINT)
    _out, err = index.communicate(timeout=30)
    assert index.returncode == 130 and "Traceback" not in err, err
    assert f"interrupted: indexing {repo.resolve()} stopped" in err and "at the next commit" in err, err
    assert _lock_free(daemon, repo)  # the process ended after its run released the project
    sent = _documents_sent(slow_embedder)
    status = daemon.lgrep("status", str(repo), "--json", "--no-daemon").json()
    assert status["state"] == "ready" and status["files"] == 120 and 0 < status["vectors_pending"] < status["chunks"]
    assert _documents_sent(slow_embedder) == sent


def test_index_cancel_and_clean_stop_a_run_another_command_waits_for(
    wait_for, daemon, slow_embedder: EmbeddingStandIn, tmp_path: Path, make_repo
) -> None:
    repo = tmp_path / "big"
    make_repo(repo, 120)
    daemon.start()
    first = daemon.lgrep.popen("index", str(repo), "--yes")
    wait_for(lambda: _documents_sent(slow_embedder) >= 2, 60, "the daemon to embed its first batches")
    cancelled = daemon.lgrep("index", "--cancel", str(repo), timeout=60)
    assert "cancelled the daemon's index of" in cancelled.err, cancelled.err
    _out, err = first.communicate(timeout=30)
    assert first.returncode == 1 and "was cancelled (asked to stop by `lgrep index --cancel`)" in err, err
    assert _lock_free(daemon, repo)
    assert "nothing is indexing" in daemon.lgrep("index", "--cancel", str(repo)).err
    # What was committed stays; the next run goes on from there and finishes.
    slow_embedder.state.latency = 0.0
    sent = _documents_sent(slow_embedder)
    done = daemon.lgrep("index", str(repo), "--yes", "--json").json()
    assert done["vectors_pending"] == 0 and 0 < done["vectors_embedded"] < 600 and _documents_sent(slow_embedder) > sent
    # `lgrep clean` while the daemon is indexing: it cancels the run instead of refusing.
    slow_embedder.state.latency = 0.5
    second = daemon.lgrep.popen("index", str(repo), "--force", "--yes")
    wait_for(lambda: _documents_sent(slow_embedder) >= sent + 2 + done["vectors_embedded"] // 8, 60, "the rebuild")
    removed = daemon.lgrep("clean", str(repo), timeout=60)
    assert "removed the index" in removed.err, removed.err
    _out, err = second.communicate(timeout=30)
    assert second.returncode == 1 and "cancelled" in err and "Traceback" not in err, err
    assert not project_dir(daemon.cache, repo).exists()


def _nice(pid: int, tid: int) -> int:
    # /proc/PID/task/TID/stat: the 19th field is the nice value; the command name (2nd) may hold spaces.
    stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_index_work_runs_below_the_answers_cpu_priority(
    wait_for, daemon, slow_embedder: EmbeddingStandIn, tmp_path: Path, make_repo
) -> None:
    repo = tmp_path / "big"
    make_repo(repo, 120)
    daemon.start()
    assert daemon.process is not None
    pid = daemon.process.pid
    base = _nice(pid, pid)
    index = daemon.lgrep.popen("index", str(repo), "--yes")
    try:
        wait_for(lambda: _documents_sent(slow_embedder) >= 2, 60, "the daemon to embed its first batches")
        nices = {int(task.name): _nice(pid, int(task.name)) for task in Path(f"/proc/{pid}/task").iterdir()}
        # The job's thread and the threads it started (the provider's requests) run at +10; the main
        # thread and the threads that answer calls keep the daemon's own priority.
        assert nices[pid] == base
        assert sum(1 for n in nices.values() if n == min(19, base + BACKGROUND_NICE)) >= 1, nices
        assert sum(1 for n in nices.values() if n == base) >= 2, nices
        hits = daemon.lgrep("search", "handle request kind", str(repo), "--json", timeout=60).json()["results"]
        assert hits  # answers go on while the index runs
    finally:
        daemon.lgrep("index", "--cancel", str(repo), timeout=60)
        index.communicate(timeout=30)


def test_unwatch_without_a_daemon_edits_the_list_the_next_one_watches(daemon, mini_repo: Path) -> None:
    daemon.start()
    daemon.lgrep("watch", str(mini_repo))
    daemon.lgrep("serve", "--stop")
    gone = daemon.lgrep("unwatch", str(mini_repo))
    assert "is no longer watched" in gone.err, gone.err
    assert "was not watched" in daemon.lgrep("unwatch", str(mini_repo)).err
    daemon.start()
    assert daemon.lgrep("serve", "--status", "--json").json()["watched_projects"] == []


def test_a_daemon_start_resumes_an_unfinished_vector_fill(
    wait_for, daemon, slow_embedder: EmbeddingStandIn, tmp_path: Path, make_repo
) -> None:
    repo = tmp_path / "big"
    make_repo(repo, 60)
    daemon.start()
    summary = daemon.lgrep("index", str(repo), "--yes", "--no-wait", "--json").json()
    assert summary["vectors_pending"] > 0
    wait_for(lambda: _documents_sent(slow_embedder) >= 1, 60, "the background fill to start")
    daemon.lgrep("serve", "--stop")  # the fill stops at its next commit, unfinished
    assert daemon.lgrep("status", str(repo), "--json", "--no-daemon").json()["vectors_pending"] > 0
    slow_embedder.state.latency = 0.0
    daemon.start()  # nobody asks for the project: the daemon finishes its fill by itself
    wait_for(
        lambda: daemon.lgrep("status", str(repo), "--json").json()["vectors_pending"] == 0,
        60,
        "the restarted daemon to finish the vector fill",
    )


def test_a_watched_file_rewritten_with_its_size_and_mtime_is_seen(wait_for, daemon, mini_repo: Path) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    daemon.lgrep("watch", str(mini_repo))
    target = mini_repo / "auth" / "tokens.py"
    before = target.stat()
    text = target.read_text()
    assert "TokenSigner" in text
    target.write_text(text.replace("TokenSigner", "QuxWarbler1"))  # the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert target.stat().st_size == before.st_size and target.stat().st_mtime_ns == before.st_mtime_ns

    def found() -> bool:
        hits = daemon.lgrep("search", "QuxWarbler1", str(mini_repo), "--type", "bm25", "--json").json()["results"]
        return any(h["path"] == "auth/tokens.py" for h in hits)

    wait_for(found, 30, "the watcher to index the rewritten file")


def test_a_folder_inside_an_indexed_project_is_that_project(daemon, mini_repo: Path, tmp_path: Path) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    inside = mini_repo / "auth"
    found = daemon.lgrep("search", "verify the token signature", str(inside), "--json")
    assert f"inside the project {mini_repo.resolve()}" in found.err, found.err
    hits = found.json()["results"]
    assert hits and all(h["path"].startswith("auth/") for h in hits)
    narrowed = daemon.lgrep("search", "token", str(inside), "--path", "*.py", "--json").json()["results"]
    assert narrowed and all(h["path"].startswith("auth/") and h["path"].endswith(".py") for h in narrowed)
    daemon.lgrep("index", str(inside))
    watched = daemon.lgrep("watch", str(inside))
    assert "now watched" in watched.err and str(mini_repo.resolve()) in watched.err, watched.err
    # One index and one watcher, whichever folder was named.
    assert len([p for p in daemon.cache.iterdir() if re.fullmatch(r"[0-9a-f]{12}", p.name)]) == 1
    assert daemon.lgrep("serve", "--status", "--json").json()["watched_projects"] == [str(mini_repo.resolve())]
    # Through gRPC too: a client naming a folder inside a watched project gets no second watcher.
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        assert client.call(WatchProjectRequest(str(mini_repo / "cmd"))).already_watched
        assert [p for p in client.server_info().watched_projects] == [str(mini_repo.resolve())]
    # Unwatching the folder stops the watch that watching it started: the project's.
    unwatched = daemon.lgrep("unwatch", str(inside))
    assert f"inside the project {mini_repo.resolve()}" in unwatched.err, unwatched.err
    assert f"{mini_repo.resolve()} is no longer watched" in unwatched.err, unwatched.err
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        assert not client.server_info().watched_projects
        assert not client.call(WatchProjectRequest(str(mini_repo / "cmd"))).already_watched
        assert client.call(
            UnwatchProjectRequest(str(mini_repo / "cmd"))
        )  # a gRPC client naming a folder in it: the project too
        assert not client.server_info().watched_projects


def test_the_number_of_watched_projects_is_capped(daemon, tmp_path: Path) -> None:
    folders = [tmp_path / f"p{i}" for i in range(3)]
    for folder in folders:
        folder.mkdir()
        (folder / "main.py").write_text(f"def main_{folder.name}():\n    return 1\n")
    daemon.start(extra_env={"LGREP_SERVER__MAX_WATCHED_PROJECTS": "2"})
    for folder in folders[:2]:
        daemon.lgrep("watch", str(folder))
    refused = daemon.lgrep("watch", str(folders[2]), check=False)
    assert refused.code == 1 and "server.max_watched_projects" in refused.err and "Traceback" not in refused.err
    daemon.lgrep("unwatch", str(folders[0]))
    assert "now watched" in daemon.lgrep("watch", str(folders[2])).err


# ------------------------------------------------------------------ stopping, and whom it signals


def test_stopping_a_busy_daemon_waits_for_its_exit_and_stops_once(wait_for, daemon, tmp_path: Path, make_repo) -> None:
    repo = tmp_path / "big"
    make_repo(repo, 400)
    daemon.start()
    index = daemon.lgrep.popen("index", str(repo), "--json")
    try:
        wait_for(lambda: any(daemon.cache.glob("*/gen-*")), 120, "the daemon to start writing the index")
        stopped = daemon.lgrep("serve", "--stop", check=False, timeout=300)
        # It answers once the process has ended, and says so truthfully.
        assert stopped.code == 0 and "stopped the lgrep daemon" in stopped.err, stopped.err + _daemon_log_tail(daemon)
        assert daemon.process is not None and daemon.process.poll() == 0, _daemon_log_tail(daemon)
        _out, err = index.communicate(timeout=120)
    finally:
        if index.poll() is None:
            index.kill()
            index.communicate()
    assert "Traceback" not in err, err
    log = (daemon.cache / "serve-test.log").read_text()
    assert "Traceback" not in log and "is gone; stopping" not in log, log[-3000:]


def _threads_taking(pid: int, signum: int) -> list[int]:
    """The ids of the threads of `pid`, but its main one, that do not block `signum`."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = (task / "status").read_text()
        blocked = int(re.search(r"^SigBlk:\s*([0-9a-f]+)$", status, re.M).group(1), 16)  # type: ignore[union-attr]
        if int(task.name) != pid and not blocked & (1 << (signum - 1)):
            found.append(int(task.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_sigterm_that_another_thread_receives_still_stops_the_daemon(wait_for, daemon) -> None:
    # The kernel hands a process's signal to any thread that does not block it. One that lands on a
    # grpc or onnxruntime thread only sets Python's flag; the daemon's main thread must still run
    # the handler (it waited with no timeout, and about one stop in a full suite went unheard).
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    tgkill = getattr(libc, "tgkill", None)
    if tgkill is None:
        pytest.skip("no tgkill in this C library")
    daemon.start()
    assert daemon.process is not None
    pid = daemon.process.pid
    others = _threads_taking(pid, signal.SIGTERM)
    assert others, "the daemon runs threads besides its main one"
    assert tgkill(pid, others[0], signal.SIGTERM) == 0, os.strerror(ctypes.get_errno())
    wait_for(lambda: daemon.process.poll() is not None, 60, "the daemon to stop on a SIGTERM another thread got")
    assert daemon.process.returncode == 0


def test_sigusr1_writes_every_threads_stack_to_the_log_and_the_daemon_goes_on(wait_for, daemon) -> None:
    # What a daemon that will not stop waits for, without a debugger: `kill -USR1 PID`.
    daemon.start()
    assert daemon.process is not None
    log = daemon.cache / "serve-test.log"
    os.kill(daemon.process.pid, signal.SIGUSR1)
    # the main thread waits in run_server until it is stopped; the maintenance loop beside it
    wait_for(lambda: " in run_server" in log.read_text(errors="replace"), 30, "the main thread's stack in the log")
    assert "most recent call first" in log.read_text(errors="replace")
    assert daemon.process.poll() is None
    assert daemon.lgrep("serve", "--status").code == 0


def test_a_daemon_stopped_while_its_model_warms_up_never_aborts(daemon) -> None:
    # The model loads on a thread once the daemon listens; a stop that came meanwhile used to let the
    # interpreter finalize under onnxruntime's session build ("terminate called...", SIGABRT).
    for _ in range(8):  # the old race aborted about half of such stops
        daemon.start(extra_env={"LGREP_LOG_LEVEL": "INFO"})  # its stop steps in the log, should one hang
        stopped = daemon.lgrep("serve", "--stop", check=False, timeout=300)
        assert stopped.code == 0, stopped.err + _daemon_log_tail(daemon)
        assert daemon.process is not None and daemon.process.wait(timeout=5) == 0, _daemon_log_tail(daemon)
    log = (daemon.cache / "serve-test.log").read_text()
    assert "terminate called" not in log and "Traceback" not in log, log[-3000:]


_HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, sys.argv[2].encode())
print("held", flush=True)
sys.stdin.read()
"""


def test_serve_stop_never_signals_a_process_it_cannot_tell_is_the_daemon(daemon) -> None:
    # A lock beside the socket, held, that names another process of the user (as a user who can
    # write the folder could plant): `--stop` must not signal that process.
    victim = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(daemon.cache / "lgrep.sock.lock"), str(victim.pid)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = daemon.lgrep("serve", "--stop", check=False, timeout=120)
        assert refused.code == 1 and f"names pid {victim.pid}" in refused.err and "will not signal" in refused.err
        assert "Traceback" not in refused.err, refused.err
        assert victim.poll() is None, "serve --stop signalled a process that is not the daemon"
    finally:
        for proc in (victim, holder):
            proc.kill()
            proc.communicate(timeout=30)  # also closes its pipes


NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda cache: cache.chmod(0o777), "can be written by other users (mode 0777)"),
        (lambda cache: cache.chmod(0o770), "chmod go-w"),
        (lambda cache: os.chown(cache, NOBODY, NOBODY), f"belongs to user id {NOBODY}"),
    ],
    ids=["world-writable", "group-writable", "another-users"],
)
def test_a_cache_dir_that_is_not_private_is_refused(daemon, mini_repo: Path, damage, says: str) -> None:
    damage(daemon.cache)
    for args in (("search", "token", str(mini_repo)), ("serve",), ("serve", "--stop"), ("index", str(mini_repo))):
        refused = daemon.lgrep(*args, check=False, timeout=120)
        assert refused.code == 1 and says in refused.err and "Traceback" not in refused.err, (args, refused.err)
    assert not daemon.socket.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_socket_or_lock_of_another_user_is_refused(daemon, mini_repo: Path) -> None:
    # Another user's socket in the cache dir: the command must not talk to it (nor fall back quietly).
    planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    planted.bind(str(daemon.socket))
    planted.listen()
    try:
        os.chown(daemon.socket, NOBODY, NOBODY)
        refused = daemon.lgrep("search", "token", str(mini_repo), check=False, timeout=120)
        assert refused.code == 1 and f"belongs to user id {NOBODY}" in refused.err, refused.err
    finally:
        planted.close()
        daemon.socket.unlink()
    # Another user's lock beside the socket: the daemon refuses to use it.
    lock = daemon.cache / "lgrep.sock.lock"
    lock.write_text("1\n")
    os.chown(lock, NOBODY, NOBODY)
    refused = daemon.lgrep("serve", check=False, timeout=120)
    assert refused.code == 1 and f"belongs to user id {NOBODY}" in refused.err, refused.err
    stop = daemon.lgrep("serve", "--stop", check=False, timeout=120)
    assert stop.code == 1 and f"belongs to user id {NOBODY}" in stop.err, stop.err


# ------------------------------------------------------------------------------ streaming calls


def _open_watches(channel, count: int, *, distinct_ids: bool) -> tuple[list, list]:
    """`count` health Watch streams; (the open ones, the refusals' status details)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from lgrep_core.rpc.grpc_support import CLIENT_ID_KEY

    stub: Any = health_pb2_grpc.HealthStub(channel)  # the generated stub declares Watch at run time only
    calls = [
        stub.Watch(
            health_pb2.HealthCheckRequest(service=""),
            timeout=STREAM_DEADLINE_S,
            metadata=((CLIENT_ID_KEY, f"flood-{n}"),) if distinct_ids else None,
        )
        for n in range(count)
    ]
    opened, refused = [], []
    for call in calls:
        try:
            next(call)  # an accepted stream answers with the current status at once
            opened.append(call)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, exc
            refused.append(exc.details())
    return opened, refused


STREAM_DEADLINE_S = 90.0


def test_a_flood_of_streams_never_starves_short_calls(wait_for, daemon, mini_repo: Path) -> None:
    import grpc
    from lgrep_core.rpc.grpc_support import channel_options, unix_target
    from lgrep_core.rpc.server import MAX_STREAMS, MAX_STREAMS_PER_CLIENT

    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    request = SearchRequest("verify token", project_root=str(mini_repo))
    flood = grpc.insecure_channel(unix_target(daemon.socket), options=channel_options())
    other = LgrepClient.connect(socket_path=daemon.socket, timeout=60)
    try:
        # One client (no id: known by its peer) opens far more streams than it may.
        opened, refused = _open_watches(flood, 100, distinct_ids=False)
        assert len(opened) == MAX_STREAMS_PER_CLIENT and len(refused) == 100 - MAX_STREAMS_PER_CLIENT
        assert all("limit per client" in text for text in refused), refused[:2]
        assert other.call(request).results  # another client is answered
        # Many clients (each its own id): the total limit holds, and short calls are still answered.
        more, refused = _open_watches(flood, 100, distinct_ids=True)
        assert len(more) == MAX_STREAMS - MAX_STREAMS_PER_CLIENT
        assert all("streaming calls (its limit" in text for text in refused), refused[:2]
        assert other.call(request).results
        assert other.server_info().pid == daemon.process.pid
        for call in opened + more:
            call.cancel()

        # Ended streams give their places back: as many as one client may have are accepted again.
        def reopened() -> bool:
            again, _ = _open_watches(flood, MAX_STREAMS_PER_CLIENT, distinct_ids=False)
            for call in again:
                call.cancel()
            return len(again) == MAX_STREAMS_PER_CLIENT

        wait_for(reopened, 30, "the cancelled streams' places to be given back")
    finally:
        other.close()
        flood.close()


def _daemon_log_tail(daemon) -> str:  # type: ignore[no-untyped-def]
    """The end of the daemon's log, for a failure message; a daemon still running is first asked
    for every thread's stack (SIGUSR1), so a stop that hangs says where."""
    log = daemon.cache / "serve-test.log"
    process = daemon.process
    if process is not None and process.poll() is None:
        size = log.stat().st_size if log.exists() else 0
        os.kill(process.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not log.exists() or log.stat().st_size == size):
            time.sleep(0.1)  # waiting for the dump to reach the log (a diagnostic, not a race)
    return "\n--- daemon log ---\n" + (log.read_text(errors="replace")[-12000:] if log.exists() else "(none)")
