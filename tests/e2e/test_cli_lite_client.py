"""`lgrep search` through the light client (lgrep_core.rpc.lite_client, ADR 0027), with real processes:
the command prints what the gRPC client's answer printed, imports no grpc, and fails as it did;
and the light client and the gRPC client, asked the same things of one daemon, give the same
answers and raise the same errors (deadlines, a daemon stopped or killed mid-call included)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from lgrep_core.app.api import Lgrep
from lgrep_core.domain.errors import (
    DeadlineExceededError,
    LgrepError,
    NotFoundError,
    ServerUnavailableError,
)
from lgrep_core.domain.models import SearchRequest, SearchResponse, SearchType
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.rpc.lite_client import LiteClient

pytestmark = [pytest.mark.slow, pytest.mark.model]

QUERY = "verify token signature"


def _printed(daemon: Any, request: SearchRequest, *, as_json: bool) -> str:
    """What `lgrep search` printed before the light client: the gRPC client's answer, rendered by
    the command's own output code."""
    from lgrep_cli import output

    with LgrepClient.connect(socket_path=daemon.socket) as client:
        client.server_info()
        outcome = Lgrep(client, daemon.cache).search(request)
    assert outcome.response is not None
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        output.print_search(
            outcome.response,
            query=request.query,
            root=str(outcome.scope.project),
            as_json=as_json,
            explain=request.explain,
            files=request.files,
        )
    return buffer.getvalue()


def _no_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_timings(v) for k, v in value.items() if k != "timings_ms"}
    if isinstance(value, list):
        return [_no_timings(v) for v in value]
    return value


@pytest.fixture
def served(daemon: Any, mini_repo: Path) -> Any:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    return daemon


@pytest.mark.parametrize(
    ("args", "fields"),
    [
        ((), {}),
        (("--json",), {}),
        (("--files",), {"files": True}),
        (("--files", "--json"), {"files": True}),
        (("--explain", "-n", "3", "--lang", "python"), {"explain": True, "limit": 3, "languages": ("python",)}),
    ],
    ids=["hits", "json", "files", "files-json", "explain-limit-lang"],
)
def test_search_prints_what_it_printed_through_grpc(
    served: Any, mini_repo: Path, args: tuple[str, ...], fields: dict[str, Any]
) -> None:
    env = {**served.lgrep.env, "PYTHONPROFILEIMPORTTIME": "1"}
    run = type(served.lgrep)(served.lgrep.cache, env)
    got = run("search", QUERY, str(mini_repo), *args)
    expected = _printed(served, SearchRequest(QUERY, project_root=str(mini_repo.resolve()), **fields), as_json=False)
    if "--json" in args:
        expected = _printed(served, SearchRequest(QUERY, project_root=str(mini_repo.resolve()), **fields), as_json=True)
        assert _no_timings(json.loads(got.out)) == _no_timings(json.loads(expected))
        assert json.loads(got.out)["results" if "--files" not in args else "files"]
    else:
        assert got.out == expected and got.out.strip()
    # The command reached the daemon without grpcio (or asyncio, which it pulls in).
    imported = {line.rsplit("|", 1)[-1].strip() for line in got.err.splitlines() if line.startswith("import time:")}
    assert "lgrep_core.rpc.lite_client" in imported and "h2.connection" in imported, got.err[-2000:]
    assert not {m for m in imported if m == "grpc" or m.startswith(("grpc.", "asyncio"))}, sorted(imported)


def test_search_errors_from_the_daemon_read_as_they_did(served: Any, mini_repo: Path) -> None:
    # A release of a component the project does not have: the daemon's NotFoundError, word for word.
    got = served.lgrep("search", QUERY, str(mini_repo), "--component", "nosuch", check=False)
    request = SearchRequest(QUERY, project_root=str(mini_repo.resolve()), component="nosuch")
    with LgrepClient.connect(socket_path=served.socket) as client, pytest.raises(NotFoundError) as caught:
        client.call(request)
    assert got.code == 1 and got.out == "" and got.err == f"lgrep: error: {caught.value.message}\n", got.err
    # A query the command refuses before any call, as it always did.
    empty = served.lgrep("search", "", str(mini_repo), check=False)
    assert empty.code != 0 and "query" in empty.err and "Traceback" not in empty.err


def test_a_stopped_daemon_is_a_deadline_and_a_killed_one_is_replaced(served: Any, mini_repo: Path) -> None:
    env = {**served.lgrep.env, "LGREP_SERVER__AUTOSTART": "0"}
    pid = served.process.pid
    os.kill(pid, signal.SIGSTOP)  # it accepts connections (the kernel does) but answers nothing
    try:
        stuck = type(served.lgrep)(served.lgrep.cache, env)("search", QUERY, str(mini_repo), check=False, timeout=120)
        with (
            LgrepClient.connect(socket_path=served.socket, timeout=0.5) as client,
            pytest.raises(DeadlineExceededError) as caught,
        ):
            client.server_info()
    finally:
        os.kill(pid, signal.SIGCONT)
    # The handshake's deadline (10 s), said as the gRPC client says it.
    assert stuck.code == 1 and stuck.err == f"lgrep: error: {caught.value.message}\n", stuck.err

    # Killed while the command waits for its handshake: the command starts another daemon and answers.
    os.kill(pid, signal.SIGSTOP)
    command = served.lgrep.popen("search", QUERY, str(mini_repo), "--json")
    try:
        _wait_connected(command.pid, served.socket)
        os.kill(pid, signal.SIGKILL)
        out, err = command.communicate(timeout=300)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == 0 and json.loads(out)["results"], err
    assert "starting the lgrep daemon" in err


def _wait_connected(pid: int, socket_path: Path, timeout: float = 60.0) -> None:
    """Wait until process `pid` holds a connected unix socket (its connection to the stopped daemon,
    queued by the kernel): /proc/net/unix lists each socket's inode and state (03: connected)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inodes = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = str(fd.readlink())
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 7 and parts[6] in inodes and parts[5] == "03":
                return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} did not connect to {socket_path}")


# --- conformance: the same questions through both clients -------------------------------------------


def _client(name: str, socket_path: Path, **kwargs: Any) -> Any:
    if name == "lite":
        return LiteClient.connect(socket_path, **kwargs)
    return LgrepClient.connect(socket_path=socket_path, **kwargs)


def _both(socket_path: Path, **kwargs: Any) -> Iterator[tuple[str, Any]]:
    for name in ("lite", "grpc"):
        yield name, _client(name, socket_path, **kwargs)


def _outcome(call: Callable[[], SearchResponse]) -> Any:
    """An answer without its timings, or the error's class and message."""
    try:
        return replace(call(), timings_ms={})
    except LgrepError as exc:
        return type(exc), exc.message


def test_both_clients_answer_alike(served: Any, mini_repo: Path, tmp_path: Path) -> None:
    root = str(mini_repo)
    requests = [
        SearchRequest(QUERY, project_root=root),
        SearchRequest(QUERY, project_root=root, files=True, explain=True),
        SearchRequest("parse config", project_root=root, limit=2, search_type=SearchType.BM25, path_glob="*.py"),
        SearchRequest(QUERY, project_root=root, component="nosuch"),  # the daemon's NotFoundError
        SearchRequest(QUERY, project_root=str(tmp_path / "missing")),  # the daemon's answer for no folder
        # 32,768 characters of 3 bytes each: the request is larger than HTTP/2's first flow-control window.
        SearchRequest("検索" * 16_384, project_root=root),
        SearchRequest(QUERY + " " + "x" * 40_000, project_root=root),  # too long: refused before sending
    ]
    answers: dict[str, list[Any]] = {}
    for name, client in _both(served.socket):
        with client:
            info = replace(client.server_info(), resident_projects=0)  # the first client loads it
            answers[name] = [info, *(_outcome(lambda r=r, c=client: c.call(r)) for r in requests)]
    for lite, grpc in zip(answers["lite"], answers["grpc"], strict=True):
        assert lite == grpc
    kinds = [a if isinstance(a, tuple) else "answer" for a in answers["lite"][1:]]
    assert kinds[0] == kinds[1] == kinds[2] == "answer" and answers["lite"][1].results
    assert kinds[3][0] is NotFoundError and isinstance(kinds[6], tuple)


def test_both_clients_fail_alike(served: Any, mini_repo: Path, tmp_path: Path) -> None:
    request = SearchRequest(QUERY, project_root=str(mini_repo))
    # No server on the socket.
    nowhere = Path(tempfile.mkdtemp(prefix="lgn-", dir="/tmp"))
    try:
        for _, client in _both(nowhere / "lgrep.sock"):
            with client, pytest.raises(ServerUnavailableError):
                client.server_info()
    finally:
        nowhere.rmdir()
    # A closed client.
    closed = {}
    for name, client in _both(served.socket):
        client.close()
        with pytest.raises(LgrepError) as caught:
            client.call(request)
        closed[name] = caught.value.message
    assert closed["lite"] == closed["grpc"]
    # A daemon that answers nothing within the deadline.
    late = {}
    os.kill(served.process.pid, signal.SIGSTOP)
    try:
        for name, client in _both(served.socket, timeout=0.5):
            with client, pytest.raises(DeadlineExceededError) as caught:
                client.call(request)
            late[name] = caught.value.message
    finally:
        os.kill(served.process.pid, signal.SIGCONT)
    assert late["lite"] == late["grpc"]
    # A daemon killed while a search waits for its answer (after the handshake).
    for name in ("lite", "grpc"):
        with _client(name, served.socket) as client:
            client.server_info()
            os.kill(served.process.pid, signal.SIGSTOP)
            raised: list[BaseException] = []

            def search(c: Any = client, out: list[BaseException] = raised) -> None:
                try:
                    c.call(request)
                except BaseException as exc:  # handed to the test's thread
                    out.append(exc)

            waiting = threading.Thread(target=search)
            waiting.start()
            os.kill(served.process.pid, signal.SIGKILL)
            waiting.join(timeout=60)
            served.process.wait(timeout=30)
        assert not waiting.is_alive() and len(raised) == 1 and type(raised[0]) is ServerUnavailableError, (name, raised)
        served.start()
