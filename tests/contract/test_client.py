"""lgrep_core.rpc.client.LgrepClient against the fake lgrep services on a real gRPC server: every call,
the handshake, streamed indexing, error mapping, and auth over unix sockets and loopback TCP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.domain import errors
from lgrep_core.domain.models import (
    ChunkKind,
    FileChanges,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexPhase,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    LineRange,
    ListFilesRequest,
    ListProjectsRequest,
    MatchType,
    ProjectState,
    ReleaseWatchLeaseRequest,
    RemoveProjectRequest,
    SearchRequest,
    SearchType,
    ServerRole,
    StatusRequest,
    UnwatchProjectRequest,
    WatchLeaseRequest,
    WatchProjectRequest,
)
from lgrep_core.rpc import wire
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.testing.grpc_fakes import (
    BOOM_PATH,
    BUSY_ROOT,
    HANG_LINE,
    MISSING_ROOT,
    NO_SUMMARY_ROOT,
    SLOW_ROOT,
    RunningServer,
)


@pytest.fixture
def client(lgrep_server: RunningServer) -> Iterator[LgrepClient]:
    with LgrepClient.connect(socket_path=lgrep_server.socket_path, timeout=10) as connected:
        yield connected


def _seen(server: RunningServer, name: str) -> list[object]:
    return [request for rpc, request in server.fake.requests if rpc == name]


# --- handshake ------------------------------------------------------------------------------------


def test_server_info_is_the_handshake(client: LgrepClient) -> None:
    info = client.server_info()
    assert info.contract_revision == wire.CONTRACT_REVISION
    assert info.roles == (ServerRole.INDEX, ServerRole.SEARCH)
    assert (info.embedding_model, info.embedding_dimension, info.pid) == ("all-MiniLM-L6-v2", 384, 1234)
    assert info.started_at is not None and info.started_at.tzinfo is not None


@pytest.mark.parametrize(
    ("revision", "words"),
    [
        (2, "the server is older. Stop it and start it again"),
        (4, "the server is newer. Upgrade lgrep"),
        (0, "did not report a contract revision"),
    ],
)
def test_a_server_of_another_contract_revision_is_refused(
    lgrep_server: RunningServer, client: LgrepClient, monkeypatch: pytest.MonkeyPatch, revision: int, words: str
) -> None:
    monkeypatch.setattr(wire, "CONTRACT_REVISION", 3)  # this client, as if built from revision 3
    lgrep_server.fake.contract_revision = revision
    with pytest.raises(errors.ContractMismatchError) as caught:
        client.server_info()
    message = caught.value.message
    assert words in message
    assert "speaks revision 3" in message and client.target in message
    if revision > 0:
        assert f"speaks contract revision {revision}," in message
    assert client.server_info(check_contract=False).contract_revision == revision


# --- search and reads -----------------------------------------------------------------------------


def test_search_round_trip(lgrep_server: RunningServer, client: LgrepClient) -> None:
    response = client.call(SearchRequest(query="where are tokens verified?", project_root="/p", limit=5))
    assert [h.path for h in response.results] == ["src/auth.py", "src/session.py"]
    assert response.results[0].match == (MatchType.BM25, MatchType.VECTOR)
    assert response.timings_ms == {"total_ms": 3.5}
    assert response.search_type is SearchType.HYBRID
    (sent,) = _seen(lgrep_server, "Search")
    assert sent == SearchRequest(query="where are tokens verified?", project_root="/p", limit=5)


def test_a_files_search_answers_with_files(lgrep_server: RunningServer, client: LgrepClient) -> None:
    response = client.call(SearchRequest(query="verify", project_root="/p", limit=2, files=True))
    assert not response.results
    assert [f.path for f in response.files] == ["src/auth.py", "src/session.py"]
    assert response.files[0].ranges[0] == LineRange(1, 4, "verify")
    (sent,) = _seen(lgrep_server, "Search")
    assert sent.files


def test_a_server_that_ignores_files_is_named_not_believed(lgrep_server: RunningServer, client: LgrepClient) -> None:
    """A daemon of revision 7, reached without the handshake, answers a files search with chunks:
    the client says so, and what to do, rather than hand chunks on as if they were the files."""
    lgrep_server.fake.contract_revision = 7
    with pytest.raises(errors.ContractMismatchError) as caught:
        client.call(SearchRequest(query="verify", project_root="/p", files=True))
    message = caught.value.message
    assert "answered a files search with chunks" in message and "contract revision 7" in message
    assert "need revision 8" in message and "start it again" in message
    assert client.call(SearchRequest(query="verify", project_root="/p")).results  # chunk searches still work


def test_relative_roots_and_paths_are_resolved_by_the_client(
    lgrep_server: RunningServer, client: LgrepClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    client.call(SearchRequest(query="verify", project_root="project"))
    client.call(GetFileRequest("project", str(project / "src" / "a.py")))
    (search,) = _seen(lgrep_server, "Search")
    (get_file,) = _seen(lgrep_server, "GetFile")
    assert search.project_root == str(project.resolve())  # type: ignore[attr-defined]
    assert (get_file.project_root, get_file.path) == (str(project.resolve()), "src/a.py")  # type: ignore[attr-defined]
    with pytest.raises(errors.InvalidRequestError, match="is not inside the project"):
        client.call(GetFileRequest("project", str(tmp_path / "elsewhere.py")))
    with pytest.raises(errors.InvalidRequestError, match="project_root is empty"):
        client.call(StatusRequest(""))


def test_a_request_the_client_can_tell_is_wrong_never_leaves(lgrep_server: RunningServer, client: LgrepClient) -> None:
    with pytest.raises(errors.InvalidRequestError, match="query is empty"):
        client.call(SearchRequest(query=" ", project_root="/p"))
    with pytest.raises(errors.InvalidRequestError, match="inside the project root"):
        client.call(GetFileRequest("/p", "../etc/passwd"))
    with pytest.raises(errors.InvalidRequestError, match="line must be 1 or more"):
        client.call(FindRelatedRequest("/p", "a.py", 0))
    with pytest.raises(errors.InvalidRequestError, match="debounce_ms"):
        client.call(WatchProjectRequest("/p", debounce_ms=-5))
    assert lgrep_server.fake.requests == []


def test_get_file(client: LgrepClient) -> None:
    whole = client.call(GetFileRequest("/p", "src/a.py"))
    assert (whole.start_line, whole.end_line, whole.total_lines, whole.stale) == (1, 10, 10, True)
    part = client.call(GetFileRequest("/p", "src/a.py", 3, 4))
    assert part.content == "line 3\nline 4\n"
    assert (part.path, part.language) == ("src/a.py", "python")


def test_find_symbol(lgrep_server: RunningServer, client: LgrepClient) -> None:
    matches = client.call(
        FindSymbolRequest("/p", "verify", kinds=(ChunkKind.FUNCTION,), languages=("python",), path_glob="src/**")
    )
    assert [(m.location.symbol, m.exact) for m in matches] == [("verify", True), ("verifys", False)]
    assert matches[0].location.signature == "def verify():"
    assert len(client.call(FindSymbolRequest("/p", "verify", limit=1))) == 1
    first = _seen(lgrep_server, "FindSymbol")[0]
    assert first.kinds == (ChunkKind.FUNCTION,) and first.path_glob == "src/**"  # type: ignore[attr-defined]


def test_find_related(client: LgrepClient) -> None:
    result = client.call(FindRelatedRequest("/p", "src/auth.py", 12, limit=3))
    assert (result.anchor.path, result.anchor.start_line, result.anchor.kind) == ("src/auth.py", 12, ChunkKind.FUNCTION)
    assert [h.path for h in result.related] == ["src/jwt.py"]


# --- indexing -------------------------------------------------------------------------------------


def test_index_streams_progress_then_the_summary(lgrep_server: RunningServer, client: LgrepClient) -> None:
    events = list(client.index(IndexProjectRequest("/p", force=True, wait_for_vectors=False)))
    assert [type(e) for e in events] == [IndexProgress, IndexProgress, IndexProgress, IndexSummary]
    assert [e.phase for e in events[:3]] == [IndexPhase.WALK, IndexPhase.CHUNK, IndexPhase.EMBED]  # type: ignore[union-attr]
    assert events[2] == IndexProgress(IndexPhase.EMBED, 2, 2, 5, 10, rate=2.5, eta_seconds=2.0)
    summary = events[-1]
    assert isinstance(summary, IndexSummary)
    assert (summary.root, summary.created, summary.vectors_pending, summary.skipped) == ("/p", True, 10, {"binary": 1})
    (sent,) = _seen(lgrep_server, "IndexProject")
    assert (sent.force, sent.wait_for_vectors) == (True, False)  # type: ignore[attr-defined]


def test_an_error_during_indexing_is_raised_while_iterating(client: LgrepClient) -> None:
    events = client.index(IndexProjectRequest(BUSY_ROOT))
    assert next(events) == IndexProgress(IndexPhase.WALK)
    with pytest.raises(errors.IndexBusyError, match="another lgrep"):
        next(events)


def test_a_stream_without_its_summary_is_an_error(client: LgrepClient) -> None:
    with pytest.raises(errors.LgrepError, match="without its summary"):
        list(client.index(IndexProjectRequest(NO_SUMMARY_ROOT)))


def test_stopping_early_cancels_the_run(lgrep_server: RunningServer, client: LgrepClient) -> None:
    events = client.index(IndexProjectRequest(SLOW_ROOT))
    assert next(events).phase is IndexPhase.WALK  # type: ignore[union-attr]
    events.close()  # type: ignore[attr-defined]
    assert lgrep_server.fake.cancelled.wait(10), "the server never saw the call end"


# --- index management -----------------------------------------------------------------------------


def test_status(client: LgrepClient) -> None:
    status = client.call(StatusRequest("/p"))
    assert status.state is ProjectState.READY and status.indexed
    assert status.changes == FileChanges(added=1) and status.files_changed_since == 1
    assert (status.files, status.chunks, status.languages) == (2, 10, {"python": 2})
    assert status.project_spend is not None and status.project_spend.tokens == 1200
    assert status.total_spend is not None and status.total_spend.cost_usd == 5.4
    assert status.spend_warnings and "$5.00" in status.spend_warnings[0]


def test_watch_then_unwatch(client: LgrepClient) -> None:
    first = client.call(WatchProjectRequest("/p", debounce_ms=200))
    again = client.call(WatchProjectRequest("/p"))
    assert (first.watched, first.already_watched, again.already_watched) == (True, False, True)
    assert client.call(StatusRequest("/p")).watched
    assert client.call(UnwatchProjectRequest("/p")) is True
    assert client.call(UnwatchProjectRequest("/p")) is False


def test_watch_lease_renew_and_release(client: LgrepClient) -> None:
    lease = client.call(WatchLeaseRequest("/p", "holder-1", 9.0))
    assert (lease.project_root, lease.watched, lease.ttl_s, lease.leases) == ("/p", True, 9.0, 1)
    assert client.call(ReleaseWatchLeaseRequest("/p", "holder-1")) is True
    assert client.call(ReleaseWatchLeaseRequest("/p", "holder-1")) is False
    with pytest.raises(errors.InvalidRequestError):
        client.call(WatchLeaseRequest("/p", "not a holder id", 9.0))


def test_list_and_remove(client: LgrepClient) -> None:
    projects = client.call(ListProjectsRequest())
    assert [(p.project_root, p.state, p.resident) for p in projects] == [
        ("/a", ProjectState.READY, True),
        ("/b", ProjectState.INTERRUPTED, False),
    ]
    removed = client.call(RemoveProjectRequest("/p"))
    assert (removed.removed, removed.bytes_freed) == (True, 4096)


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.call(SearchRequest(query="q", project_root=MISSING_ROOT)),
        lambda c: c.call(StatusRequest(MISSING_ROOT)),
        lambda c: c.call(GetFileRequest(MISSING_ROOT, "a.py")),
        lambda c: list(c.index(IndexProjectRequest(MISSING_ROOT))),
        lambda c: c.call(RemoveProjectRequest(MISSING_ROOT)),
    ],
)
def test_a_server_error_arrives_as_the_same_error(client: LgrepClient, call: object) -> None:
    with pytest.raises(errors.NotFoundError) as caught:
        call(client)  # type: ignore[operator]
    assert caught.value.message == f"{MISSING_ROOT} has no index yet: run `lgrep index {MISSING_ROOT}`"


def test_server_side_validation_and_bugs(client: LgrepClient) -> None:
    with pytest.raises(errors.InvalidRequestError, match="not a valid glob"):
        client.call(SearchRequest(query="q", project_root="/p", path_glob="["))
    with pytest.raises(errors.IndexBusyError):
        client.call(SearchRequest(query="q", project_root=BUSY_ROOT))
    with pytest.raises(errors.LgrepError, match=r"^internal error in the lgrep server \(RuntimeError"):
        client.call(GetFileRequest("/p", BOOM_PATH))


def test_a_call_past_its_deadline(lgrep_server: RunningServer) -> None:
    with (
        LgrepClient.connect(socket_path=lgrep_server.socket_path, timeout=0.5) as quick,
        pytest.raises(errors.DeadlineExceededError, match="did not answer in time"),
    ):
        quick.call(FindRelatedRequest("/p", "a.py", HANG_LINE))
    assert lgrep_server.fake.hanging.is_set()  # it reached the server, which did not answer in time


def test_no_server_on_the_socket(short_dir: Path) -> None:
    with (
        LgrepClient.connect(socket_path=short_dir / "lgrep.sock", timeout=10) as client,
        pytest.raises(errors.ServerUnavailableError) as caught,
    ):
        client.server_info()
    message = caught.value.message
    assert f"unix:{short_dir}/lgrep.sock" in message and "is `lgrep serve` running?" in message


def test_a_closed_client_says_so(lgrep_server: RunningServer) -> None:
    client = LgrepClient.connect(socket_path=lgrep_server.socket_path)
    client.close()
    with pytest.raises(errors.LgrepError):
        client.call(StatusRequest("/p"))


# --- endpoints and auth ---------------------------------------------------------------------------


def test_tcp_with_the_token(lgrep_server: RunningServer) -> None:
    with LgrepClient.connect(port=lgrep_server.port, token=lgrep_server.token) as client:
        assert client.server_info().pid == 1234
        assert isinstance(list(client.index(IndexProjectRequest("/p")))[-1], IndexSummary)
    with LgrepClient.connect(port=lgrep_server.port, token_file=lgrep_server.token_file) as client:
        assert client.call(StatusRequest("/p")).indexed


def test_tcp_with_another_token_is_refused(lgrep_server: RunningServer) -> None:
    with LgrepClient.connect(port=lgrep_server.port, token="A" * 43) as client:
        with pytest.raises(errors.AuthenticationError, match="not this lgrep server's token"):
            client.server_info()
        with pytest.raises(errors.AuthenticationError):
            list(client.index(IndexProjectRequest("/p")))
    assert lgrep_server.fake.requests == []


def test_tcp_without_a_token_is_refused(lgrep_server: RunningServer) -> None:
    with pytest.raises(errors.ConfigError, match="needs its token over TCP"):
        LgrepClient.connect(port=lgrep_server.port)


def test_the_unix_socket_needs_no_token(lgrep_server: RunningServer) -> None:
    with LgrepClient.connect(socket_path=lgrep_server.socket_path) as client:
        assert client.server_info().version == "0.1.0"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({}, "either socket_path or port"),
        ({"socket_path": "/tmp/x.sock", "port": 7781}, "either socket_path or port"),
        ({"port": 7781, "host": "10.0.0.2", "token": "A" * 43}, "for this machine only"),
        ({"port": 7781, "token": "short"}, "16 to 512 characters"),
        ({"socket_path": "/tmp/" + "x" * 200}, "bytes long"),
    ],
)
def test_unusable_endpoints_are_config_errors(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(errors.ConfigError, match=words):
        LgrepClient.connect(**kwargs)  # type: ignore[arg-type]


# --- stays light ----------------------------------------------------------------------------------


def test_importing_the_client_loads_no_storage_ml_or_settings_library() -> None:
    heavy = ["numpy", "lancedb", "pyarrow", "onnxruntime", "tokenizers", "tree_sitter", "pydantic", "yaml", "re2"]
    code = (
        "import sys, lgrep_core.rpc.client, lgrep_core.rpc.grpc_support\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == ""


# --- the documented example -----------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "client.py"


def test_the_documented_example_searches_through_a_server(lgrep_server: RunningServer, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "verify tokens",
            "--root",
            str(tmp_path),
            "--socket",
            str(lgrep_server.socket_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "src/auth.py:1-4  verify (function)  score=0.900"
    assert "lgrep 0.1.0 (pid 1234" in proc.stderr
    (sent,) = _seen(lgrep_server, "Search")
    assert sent.project_root == str(tmp_path.resolve())  # type: ignore[attr-defined]


def test_the_documented_example_without_a_server_prints_one_line(short_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "q", "--socket", str(short_dir / "lgrep.sock")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: cannot reach the lgrep server at unix:")
    assert "Traceback" not in proc.stderr


def test_list_files(lgrep_server: RunningServer, client: LgrepClient) -> None:
    listed = client.call(ListFilesRequest("/p", path_glob="src/**", languages=("python",), limit=1))
    assert listed.total == 2 and [f.path for f in listed.files] == ["README.md"]
    first = _seen(lgrep_server, "ListFiles")[0]
    assert first.path_glob == "src/**" and first.languages == ("python",) and first.limit == 1  # type: ignore[attr-defined]


def test_wait_ready_says_whether_a_server_listens(tmp_path: Path) -> None:
    with LgrepClient.connect(socket_path=tmp_path / "nobody.sock") as client:
        assert client.wait_ready(0.2) is False
