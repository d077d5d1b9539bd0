"""The daemon through real processes: `lgrep serve`, commands that use and start it, a kill -9 in
the middle of indexing, a second daemon, TCP with a token, and the socket's permissions."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lgrep_core.client import LgrepClient
from lgrep_core.errors import AuthenticationError, ConfigError, ServerUnavailableError
from lgrep_core.grpc_support import read_token_file
from lgrep_core.models import SearchRequest

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
    assert done["files"] == 400 and done["vectors_pending"] == 0
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
        assert good.search(request).results
    with LgrepClient.connect(port=port, token="x" * 43) as bad, pytest.raises(AuthenticationError):
        bad.search(request)
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
        client.search(SearchRequest("verify", project_root=str(mini_repo)))
    client.close()


def test_a_daemon_whose_socket_is_deleted_stops(daemon) -> None:
    daemon.start()
    daemon.socket.unlink()  # as when its cache dir is deleted: no client can reach it any more
    assert daemon.process is not None and daemon.process.wait(timeout=60) == 0


# ------------------------------------------------------------------ stopping, and whom it signals


def test_stopping_a_busy_daemon_waits_for_its_exit_and_stops_once(wait_for, daemon, tmp_path: Path, make_repo) -> None:
    repo = tmp_path / "big"
    make_repo(repo, 400)
    daemon.start()
    index = daemon.lgrep.popen("index", str(repo), "--json")
    wait_for(lambda: any(daemon.cache.glob("*/gen-*")), 120, "the daemon to start writing the index")
    stopped = daemon.lgrep("serve", "--stop", check=False, timeout=300)
    # It answers once the process has ended, and says so truthfully.
    assert stopped.code == 0 and "stopped the lgrep daemon" in stopped.err, stopped.err
    assert daemon.process is not None and daemon.process.poll() == 0
    _out, err = index.communicate(timeout=120)
    assert "Traceback" not in err, err
    log = (daemon.cache / "serve-test.log").read_text()
    assert "Traceback" not in log and "is gone; stopping" not in log, log[-3000:]


def test_a_daemon_stopped_while_its_model_warms_up_never_aborts(daemon) -> None:
    # The model loads on a thread once the daemon listens; a stop that came meanwhile used to let the
    # interpreter finalize under onnxruntime's session build ("terminate called...", SIGABRT).
    for _ in range(8):  # the old race aborted about half of such stops
        daemon.start()
        stopped = daemon.lgrep("serve", "--stop", check=False, timeout=300)
        assert stopped.code == 0, stopped.err
        assert daemon.process is not None and daemon.process.wait(timeout=5) == 0
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
    from lgrep_core.grpc_support import CLIENT_ID_KEY

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
    from lgrep_core.grpc_support import channel_options, unix_target
    from lgrep_core.server import MAX_STREAMS, MAX_STREAMS_PER_CLIENT

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
        assert other.search(request).results  # another client is answered
        # Many clients (each its own id): the total limit holds, and short calls are still answered.
        more, refused = _open_watches(flood, 100, distinct_ids=True)
        assert len(more) == MAX_STREAMS - MAX_STREAMS_PER_CLIENT
        assert all("streaming calls (its limit" in text for text in refused), refused[:2]
        assert other.search(request).results
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
