"""The light client (lgrep_core.rpc.lite_client, ADR 0027) against the fake services on a real gRPC
server: every answer and every error the same as the gRPC client's (lgrep_core.rpc.client), including
the calls the fake fails on purpose, a server of another contract revision, and raw requests that
only the server's wire checks refuse. The real daemon: tests/e2e/test_cli_lite_client.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from lgrep.v1 import search_pb2
from lgrep_core.domain import errors
from lgrep_core.domain.models import GetFileRequest, IndexProjectRequest, IndexSummary, SearchRequest
from lgrep_core.rpc import grpc_support, lite_client
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.rpc.lite_client import LiteClient
from lgrep_core.testing.grpc_fakes import BUSY_ROOT, MISSING_ROOT, FakeLgrep, RunningServer, serve_fakes


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except errors.LgrepError as exc:
        return type(exc), exc.message


@pytest.mark.parametrize(
    "request_",
    [
        SearchRequest("verify token", project_root="/p"),
        SearchRequest("verify token", project_root="/p", files=True, limit=2),
        SearchRequest("verify token", project_root=BUSY_ROOT),  # IndexBusyError
        SearchRequest("verify token", project_root=MISSING_ROOT),  # NotFoundError
        SearchRequest("verify token", project_root="/p", path_glob="["),  # the server's InvalidRequestError
        SearchRequest("   ", project_root="/p"),  # refused before sending
    ],
    ids=["hits", "files", "busy", "missing", "bad-glob", "empty"],
)
def test_a_search_answers_or_fails_as_through_grpc(lgrep_server: RunningServer, request_: SearchRequest) -> None:
    with (
        LiteClient.connect(lgrep_server.socket_path) as lite,
        LgrepClient.connect(socket_path=lgrep_server.socket_path) as full,
    ):
        assert lite.server_info() == full.server_info()
        assert _outcome(lambda: lite.call(request_)) == _outcome(lambda: full.call(request_))


def test_the_fakes_failures_are_the_expected_classes(lgrep_server: RunningServer) -> None:
    with LiteClient.connect(lgrep_server.socket_path) as lite:
        with pytest.raises(errors.IndexBusyError, match="pid 77"):
            lite.call(SearchRequest("q", project_root=BUSY_ROOT))
        with pytest.raises(errors.NotFoundError, match="has no index yet"):
            lite.call(SearchRequest("q", project_root=MISSING_ROOT))
        assert lite.call(SearchRequest("q", project_root="/p")).results  # the connection is still good


def test_a_server_of_another_revision_is_refused_alike(short_dir: Path) -> None:
    with (
        serve_fakes(short_dir, FakeLgrep(contract_revision=7)) as old,
        LiteClient.connect(old.socket_path) as lite,
        LgrepClient.connect(socket_path=old.socket_path) as full,
    ):
        refused = _outcome(lite.server_info)
        assert refused == _outcome(full.server_info) and refused[0] is errors.ContractMismatchError
        files = SearchRequest("q", project_root="/p", files=True)
        no_files = _outcome(lambda: lite.call(files))
        assert no_files == _outcome(lambda: full.call(files))
        assert no_files[0] is errors.ContractMismatchError and "revision 8" in no_files[1]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/lgrep.v1.SearchService/Search", search_pb2.SearchRequest(project_root="relative/root", query="q")),
        ("/lgrep.v1.SearchService/Nope", search_pb2.SearchRequest(project_root="/p", query="q")),
    ],
    ids=["wire-check", "unimplemented"],
)
def test_raw_calls_the_server_refuses_read_alike(lgrep_server: RunningServer, path: str, message: Any) -> None:
    payload = message.SerializeToString()
    with LiteClient.connect(lgrep_server.socket_path) as lite:
        ours = _outcome(lambda: lite._call(path, payload))
    target = grpc_support.unix_target(lgrep_server.socket_path)
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_unary(path, request_serializer=None, response_deserializer=None)
        try:
            call(payload, timeout=10)
            theirs: Any = "answered"
        except grpc.RpcError as exc:
            error = grpc_support.error_from_rpc(exc, target=target)
            theirs = type(error), error.message
    assert ours == theirs and ours != "answered"


def test_a_closed_client_and_no_server(lgrep_server: RunningServer, short_dir: Path) -> None:
    lite = LiteClient.connect(lgrep_server.socket_path)
    lite.server_info()
    lite.close()
    with pytest.raises(errors.LgrepError, match="is closed"):
        lite.call(SearchRequest("q", project_root="/p"))
    with LiteClient.connect(short_dir / "none.sock") as nowhere, pytest.raises(errors.ServerUnavailableError):
        nowhere.server_info()
    with pytest.raises(errors.ConfigError, match="bytes long"):
        LiteClient.connect("/tmp/" + "x" * 200)


def test_every_use_case_is_a_light_call_and_only_indexing_goes_through_the_grpc_client(
    lgrep_server: RunningServer,
) -> None:
    with LiteClient.connect(lgrep_server.socket_path, timeout=5) as lite:
        piece = lite.call(GetFileRequest("/p", "src/auth.py", 2, 3))
        assert piece.content == "line 2\nline 3\n"
        assert lite._full is None  # answered over h2: no gRPC client made
        with LgrepClient.connect(socket_path=lgrep_server.socket_path) as full:
            assert piece == full.call(GetFileRequest("/p", "src/auth.py", 2, 3))
        with pytest.raises(errors.InvalidRequestError, match="is not a use case of the lgrep server"):
            lite.call(IndexProjectRequest("/p"))  # type: ignore[arg-type]
        lite.timeout = 7
        assert lite.grpc_client().timeout == 7
        assert isinstance(list(lite.index(IndexProjectRequest("/p")))[-1], IndexSummary)


@pytest.mark.parametrize(
    ("seconds", "header"),
    [
        (10.0, b"10000m"),
        (0.0001, b"1m"),
        (0.5, b"500m"),
        (200_000.0, b"200000S"),
        (1e9, b"16666667M"),
        (1e13, b"99999999H"),
    ],
)
def test_grpc_timeout_is_at_most_eight_digits_rounded_up(seconds: float, header: bytes) -> None:
    assert lite_client._timeout_header(seconds) == header


def test_a_search_request_keeps_its_fields(lgrep_server: RunningServer) -> None:
    request = SearchRequest("verify", project_root="/p", limit=3, languages=("python",), explain=True)
    with LiteClient.connect(lgrep_server.socket_path) as lite:
        lite.call(request)
    name, seen = lgrep_server.fake.requests[-1]
    assert name == "Search" and seen == replace(request, project_root="/p")


def test_a_connection_the_server_closed_while_idle_is_replaced(short_dir: Path) -> None:
    """A command's first search waits on the index stream (the gRPC client) for minutes while the
    light client's connection sits idle; a server may close that connection meanwhile (here: after
    0.3 s idle, as grpc's max_connection_idle does). The next call opens a new one instead of
    failing with "the connection broke"."""
    import select

    with (
        serve_fakes(short_dir, options=[("grpc.max_connection_idle_ms", 300)]) as server,
        LiteClient.connect(server.socket_path) as lite,
    ):
        request = SearchRequest("q", project_root="/p")
        assert lite.call(request).results
        idle = lite._connection  # pyright: ignore[reportPrivateUsage]
        assert idle is not None
        # the server's GOAWAY and close arrive on the idle socket (waited for, not slept on)
        assert select.select([idle._sock], [], [], 30)[0]  # pyright: ignore[reportPrivateUsage]
        assert lite.call(request).results
        assert lite._connection is not idle  # pyright: ignore[reportPrivateUsage]
