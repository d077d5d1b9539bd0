"""lgrep_core's gRPC plumbing (grpc_support, grpc_tokens, grpc_interceptors, grpc_server_setup): status
codes and error details, auth, token files, endpoints, health and reflection, on real gRPC servers over
unix sockets and loopback TCP."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
from lgrep.v1 import common_pb2, index_pb2, index_pb2_grpc, search_pb2, search_pb2_grpc, server_pb2, server_pb2_grpc
from lgrep_core.domain import errors
from lgrep_core.rpc import grpc_interceptors, grpc_server_setup, grpc_support, grpc_tokens, wire
from lgrep_core.testing.grpc_fakes import BOOM_PATH, BUSY_ROOT, SERVICE_NAMES, FakeLgrep, RunningServer

# --- the status table -----------------------------------------------------------------------------


def test_every_error_class_has_a_status_code() -> None:
    classes = {getattr(errors, name) for name in errors.__all__}
    assert classes == set(grpc_support.STATUS_CODES)
    assert grpc.StatusCode.OK not in grpc_support.STATUS_CODES.values()


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (errors.InvalidRequestError, grpc.StatusCode.INVALID_ARGUMENT),
        (errors.NotFoundError, grpc.StatusCode.NOT_FOUND),
        (errors.IndexBusyError, grpc.StatusCode.ABORTED),
        (errors.IndexMismatchError, grpc.StatusCode.FAILED_PRECONDITION),
        (errors.SchemaVersionMismatchError, grpc.StatusCode.FAILED_PRECONDITION),
        (errors.ProviderUnavailableError, grpc.StatusCode.UNAVAILABLE),
        (errors.ConfigError, grpc.StatusCode.FAILED_PRECONDITION),
        (errors.StorageError, grpc.StatusCode.FAILED_PRECONDITION),
        (errors.EmbeddingError, grpc.StatusCode.INTERNAL),
        (errors.IndexingError, grpc.StatusCode.INTERNAL),
        (errors.SearchError, grpc.StatusCode.INTERNAL),
        (errors.AuthenticationError, grpc.StatusCode.UNAUTHENTICATED),
        (errors.LgrepError, grpc.StatusCode.UNKNOWN),
    ],
)
def test_status_code_for(cls: type[errors.LgrepError], code: grpc.StatusCode) -> None:
    assert grpc_support.status_code_for(cls("x")) == code


def test_a_subclass_takes_the_code_of_its_nearest_ancestor() -> None:
    class LockTimeoutError(errors.IndexBusyError):
        pass

    assert grpc_support.status_code_for(LockTimeoutError("x")) == grpc.StatusCode.ABORTED


class _FailedCall(grpc.RpcError):
    """What a failed call raises, as far as error_from_rpc looks at it."""

    def __init__(self, code: grpc.StatusCode, details: str = "", trailing: tuple[tuple[str, Any], ...] = ()) -> None:
        self._code, self._details, self._trailing = code, details, trailing

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self._trailing


@pytest.mark.parametrize("name", errors.__all__)
def test_error_from_rpc_uses_the_error_detail(name: str) -> None:
    error = getattr(errors, name)("index built with X, config says Y: run `lgrep index --force`")
    failed = _FailedCall(
        grpc_support.status_code_for(error), error.message, grpc_support.error_trailing_metadata(error)
    )
    back = grpc_support.error_from_rpc(failed)
    assert type(back) is type(error)
    assert back.message == error.message


@pytest.mark.parametrize(
    ("code", "cls", "words"),
    [
        (grpc.StatusCode.UNAVAILABLE, errors.ServerUnavailableError, "is `lgrep serve` running?"),
        (grpc.StatusCode.DEADLINE_EXCEEDED, errors.DeadlineExceededError, "did not answer in time"),
        (grpc.StatusCode.UNAUTHENTICATED, errors.AuthenticationError, "bad token"),
        (grpc.StatusCode.INVALID_ARGUMENT, errors.InvalidRequestError, "bad token"),
        (grpc.StatusCode.NOT_FOUND, errors.NotFoundError, "bad token"),
        (grpc.StatusCode.UNIMPLEMENTED, errors.LgrepError, "does not offer this call"),
        (grpc.StatusCode.CANCELLED, errors.LgrepError, "cancelled"),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, errors.LgrepError, "bad token"),
        (grpc.StatusCode.DATA_LOSS, errors.LgrepError, "failed (DATA_LOSS): bad token"),
    ],
)
def test_error_from_rpc_without_a_detail_reads_the_status(
    code: grpc.StatusCode, cls: type[errors.LgrepError], words: str
) -> None:
    error = grpc_support.error_from_rpc(_FailedCall(code, "bad token"), target="unix:/tmp/x.sock")
    assert type(error) is cls
    assert words in error.message


def test_error_from_rpc_names_the_target_and_ignores_a_damaged_detail() -> None:
    failed = _FailedCall(grpc.StatusCode.UNAVAILABLE, "connection refused", ((wire.ERROR_METADATA_KEY, b"\xff\xff"),))
    error = grpc_support.error_from_rpc(failed, target="127.0.0.1:7781")
    assert type(error) is errors.ServerUnavailableError
    assert "127.0.0.1:7781" in error.message and "connection refused" in error.message


# --- a real server: errors, auth, standard services -----------------------------------------------


@pytest.fixture
def unix_channel(lgrep_server: RunningServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(grpc_support.unix_target(lgrep_server.socket_path)) as channel:
        yield channel


@pytest.fixture
def tcp_channel(lgrep_server: RunningServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(grpc_support.tcp_target(lgrep_server.port)) as channel:
        yield channel


def test_a_raised_lgrep_error_arrives_with_its_status_message_and_detail(unix_channel: grpc.Channel) -> None:
    stub = search_pb2_grpc.SearchServiceStub(unix_channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Search(search_pb2.SearchRequest(project_root=BUSY_ROOT, query="verify"), timeout=10)
    call: Any = caught.value
    assert call.code() == grpc.StatusCode.ABORTED
    assert call.details() == f"{BUSY_ROOT} is being indexed by pid 77; try again when it is done"
    detail = dict(call.trailing_metadata())[wire.ERROR_METADATA_KEY]
    assert common_pb2.ErrorDetail.FromString(detail).code == common_pb2.ERROR_CODE_INDEX_BUSY


def test_a_wire_validation_error_is_invalid_argument(unix_channel: grpc.Channel) -> None:
    stub = search_pb2_grpc.SearchServiceStub(unix_channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Search(search_pb2.SearchRequest(project_root="relative/root", query="verify"), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert type(grpc_support.error_from_rpc(caught.value)) is errors.InvalidRequestError


def test_abort_with_error_called_by_a_handler(unix_channel: grpc.Channel) -> None:
    stub = index_pb2_grpc.IndexServiceStub(unix_channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.UnwatchProject(index_pb2.UnwatchProjectRequest(project_root=""), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    error = grpc_support.error_from_rpc(caught.value)
    assert type(error) is errors.InvalidRequestError and "project_root is empty" in error.message


def test_an_unexpected_exception_is_internal_with_one_line(unix_channel: grpc.Channel) -> None:
    stub = search_pb2_grpc.SearchServiceStub(unix_channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetFile(search_pb2.GetFileRequest(project_root="/p", path=BOOM_PATH), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INTERNAL  # type: ignore[attr-defined]
    message = grpc_support.error_from_rpc(caught.value).message
    assert message.startswith("internal error in the lgrep server (RuntimeError: the fake failed on purpose)")
    assert "\n" not in message


def test_an_error_in_the_middle_of_a_stream(unix_channel: grpc.Channel) -> None:
    stub = index_pb2_grpc.IndexServiceStub(unix_channel)
    call = stub.IndexProject(index_pb2.IndexProjectRequest(project_root=BUSY_ROOT), timeout=10)
    first = next(call)
    assert first.progress.phase == index_pb2.INDEX_PHASE_WALK
    with pytest.raises(grpc.RpcError) as caught:
        next(call)
    assert type(grpc_support.error_from_rpc(caught.value)) is errors.IndexBusyError


def test_unix_socket_peers_need_no_token(unix_channel: grpc.Channel) -> None:
    reply = server_pb2_grpc.ServerServiceStub(unix_channel).GetServerInfo(server_pb2.GetServerInfoRequest(), timeout=10)
    assert reply.contract_revision == wire.CONTRACT_REVISION


def test_tcp_without_a_token_is_unauthenticated(lgrep_server: RunningServer, tcp_channel: grpc.Channel) -> None:
    stub = server_pb2_grpc.ServerServiceStub(tcp_channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetServerInfo(server_pb2.GetServerInfoRequest(), timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
    error = grpc_support.error_from_rpc(caught.value)
    assert type(error) is errors.AuthenticationError
    assert "authorization: Bearer <token>" in error.message and str(lgrep_server.token_file) in error.message
    assert lgrep_server.fake.requests == []


@pytest.mark.parametrize("value", ["Bearer wrong-token-0123456789", "Basic {token}", "{token}", "Bearer  "])
def test_tcp_with_another_token_is_unauthenticated(
    lgrep_server: RunningServer, tcp_channel: grpc.Channel, value: str
) -> None:
    stub = search_pb2_grpc.SearchServiceStub(tcp_channel)
    metadata = (("authorization", value.format(token=lgrep_server.token)),)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Search(search_pb2.SearchRequest(project_root="/p", query="q"), metadata=metadata, timeout=10)
    error = grpc_support.error_from_rpc(caught.value)
    assert type(error) is errors.AuthenticationError and "not this lgrep server's token" in error.message
    assert lgrep_server.fake.requests == []  # refused before the handler ran


def test_tcp_with_the_token_is_served(lgrep_server: RunningServer, tcp_channel: grpc.Channel) -> None:
    stub = search_pb2_grpc.SearchServiceStub(tcp_channel)
    reply = stub.Search(
        search_pb2.SearchRequest(project_root="/p", query="q"),
        metadata=grpc_tokens.bearer_metadata(lgrep_server.token),
        timeout=10,
    )
    assert [h.location.path for h in reply.results] == ["src/auth.py", "src/session.py"]
    intercepted = grpc.intercept_channel(
        tcp_channel, grpc_support.CallMetadataInterceptor(grpc_tokens.bearer_metadata(lgrep_server.token))
    )
    events = list(
        index_pb2_grpc.IndexServiceStub(intercepted).IndexProject(index_pb2.IndexProjectRequest(project_root="/p"))
    )
    assert events[-1].WhichOneof("event") == "summary"


def test_a_token_the_interceptor_cannot_send_is_refused_up_front() -> None:
    for token in ("", "short", "has space in it and is long", "ünïcode-token-0123456789"):
        with pytest.raises(errors.ConfigError, match="16 to 512 characters"):
            grpc_interceptors.TokenAuthInterceptor(token)
        with pytest.raises(errors.ConfigError):
            grpc_tokens.bearer_metadata(token)


def test_peers_trusted_without_a_token() -> None:
    assert grpc_interceptors.is_trusted_peer("unix:")
    assert grpc_interceptors.is_trusted_peer("unix:/home/dev/.cache/lgrep/lgrep.sock")
    assert not grpc_interceptors.is_trusted_peer("unix-abstract:lgrep")
    assert not grpc_interceptors.is_trusted_peer("ipv4:127.0.0.1:5555")
    assert not grpc_interceptors.is_trusted_peer("ipv6:[::1]:5555")


def test_health_reports_each_service_and_the_shutdown(lgrep_server: RunningServer, unix_channel: grpc.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(unix_channel)
    for name in ("", *SERVICE_NAMES):
        reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
    with pytest.raises(grpc.RpcError) as caught:
        stub.Check(health_pb2.HealthCheckRequest(service="lgrep.v1.NoSuchService"), timeout=10)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    lgrep_server.health.enter_graceful_shutdown()
    reply = stub.Check(health_pb2.HealthCheckRequest(service=grpc_support.SEARCH_SERVICE_NAME), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


def test_health_watch_streams_through_the_interceptors(lgrep_server: RunningServer, unix_channel: grpc.Channel) -> None:
    watch = health_pb2_grpc.HealthStub(unix_channel).Watch(
        health_pb2.HealthCheckRequest(service=grpc_support.INDEX_SERVICE_NAME), timeout=10
    )
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    lgrep_server.health.set(grpc_support.INDEX_SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
    assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
    watch.cancel()


def test_reflection_lists_and_describes_the_services(unix_channel: grpc.Channel) -> None:
    """What a generic client (grpcurl list / describe) asks through the reflection API."""
    database = ProtoReflectionDescriptorDatabase(unix_channel)
    services = set(database.get_services())
    assert services == {
        *SERVICE_NAMES,
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    }
    search_file = database.FindFileContainingSymbol("lgrep.v1.SearchService")
    assert search_file.name == "lgrep/v1/search.proto"
    assert {m.name for m in search_file.service[0].method} == {
        "Search",
        "GetFile",
        "FindSymbol",
        "FindRelated",
        "ListFiles",
        "ListComponents",
        "ListVersions",
        "GetSkeleton",
        "Trace",
    }
    assert "lgrep/v1/common.proto" in search_file.dependency
    assert database.FindFileByName("lgrep/v1/common.proto").package == "lgrep.v1"
    index_file = database.FindFileContainingSymbol("lgrep.v1.IndexService")
    assert {m.name for m in index_file.service[0].method} == {
        "IndexProject",
        "GetStatus",
        "WatchProject",
        "UnwatchProject",
        "ListProjects",
        "RemoveProject",
        "CancelIndex",
        "RenewWatchLease",
        "ReleaseWatchLease",
    }


def test_reflection_over_tcp_needs_the_token(lgrep_server: RunningServer, tcp_channel: grpc.Channel) -> None:
    with pytest.raises(grpc.RpcError):
        list(ProtoReflectionDescriptorDatabase(tcp_channel).get_services())
    intercepted = grpc.intercept_channel(
        tcp_channel, grpc_support.CallMetadataInterceptor(grpc_tokens.bearer_metadata(lgrep_server.token))
    )
    assert "lgrep.v1.SearchService" in set(ProtoReflectionDescriptorDatabase(intercepted).get_services())


# --- token files ----------------------------------------------------------------------------------


def test_token_file_round_trip_is_private(tmp_path: Path) -> None:
    token = grpc_tokens.new_token()
    assert len(token) >= 43 and token != grpc_tokens.new_token()
    path = grpc_tokens.write_token_file(tmp_path / "lgrep.token", token)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert grpc_tokens.read_token_file(path) == token
    newer = grpc_tokens.new_token()
    grpc_tokens.write_token_file(path, newer)  # a restarted server replaces it
    assert grpc_tokens.read_token_file(path) == newer
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lgrep.token"]  # no temporary file left


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = grpc_tokens.write_token_file(tmp_path / "lgrep.token", grpc_tokens.new_token())
    for mode in (0o640, 0o604, 0o620):
        path.chmod(mode)
        with pytest.raises(errors.ConfigError, match=rf"mode 0{mode:o}\): run `chmod 600 {path}`"):
            grpc_tokens.read_token_file(path)


def test_a_symlinked_token_file_is_refused(tmp_path: Path) -> None:
    real = grpc_tokens.write_token_file(tmp_path / "real.token", grpc_tokens.new_token())
    link = tmp_path / "lgrep.token"
    link.symlink_to(real)
    with pytest.raises(errors.ConfigError, match="is a symbolic link"):
        grpc_tokens.read_token_file(link)


def test_writing_over_a_symlink_replaces_the_link_not_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "lgrep.token"
    link.symlink_to(victim)
    token = grpc_tokens.new_token()
    grpc_tokens.write_token_file(link, token)
    assert victim.read_text() == "keep me\n"
    assert not link.is_symlink() and grpc_tokens.read_token_file(link) == token


@pytest.mark.parametrize(
    ("content", "words"),
    [(None, "no token file at"), ("", "does not hold an lgrep token"), ("not a token!\n", "does not hold")],
)
def test_a_missing_or_empty_token_file_is_refused(tmp_path: Path, content: str | None, words: str) -> None:
    path = tmp_path / "lgrep.token"
    if content is not None:
        path.write_text(content)
        path.chmod(0o600)
    with pytest.raises(errors.ConfigError, match=words):
        grpc_tokens.read_token_file(path)


def test_a_token_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "lgrep.token"
    folder.mkdir(mode=0o700)
    with pytest.raises(errors.ConfigError, match="not a regular file"):
        grpc_tokens.read_token_file(folder)


def test_a_token_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = grpc_tokens.write_token_file(tmp_path / "lgrep.token", grpc_tokens.new_token())
    monkeypatch.setattr(os, "geteuid", lambda: path.stat().st_uid + 1)
    with pytest.raises(errors.ConfigError, match="belongs to user id"):
        grpc_tokens.read_token_file(path)


# --- endpoints ------------------------------------------------------------------------------------


def test_unix_target_is_absolute_and_checks_the_length(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(short_dir)
    assert grpc_support.unix_target("lgrep.sock") == f"unix:{short_dir}/lgrep.sock"
    longest = short_dir / ("x" * (grpc_support.MAX_UNIX_SOCKET_PATH_BYTES - len(str(short_dir)) - 1))
    assert grpc_support.unix_target(longest) == f"unix:{longest}"
    too_long = Path(str(longest) + "y")
    with pytest.raises(errors.ConfigError, match=rf"{too_long} is {len(str(too_long))} bytes long") as caught:
        grpc_support.unix_target(too_long)
    assert "LGREP_CACHE_DIR" in caught.value.message


def test_default_paths_live_in_the_cache_dir(tmp_path: Path) -> None:
    assert grpc_support.default_socket_path(tmp_path) == tmp_path / "lgrep.sock"
    assert grpc_support.default_token_path(tmp_path) == tmp_path / "lgrep.token"


@pytest.mark.parametrize(
    ("host", "port", "target"),
    [("127.0.0.1", 7781, "127.0.0.1:7781"), ("127.1.2.3", 1, "127.1.2.3:1"), ("::1", 65535, "[::1]:65535")],
)
def test_tcp_target_is_loopback(host: str, port: int, target: str) -> None:
    assert grpc_support.tcp_target(port, host) == target
    assert grpc_support.tcp_target(7781, "localhost") == "localhost:7781"


@pytest.mark.parametrize(("host", "port"), [("0.0.0.0", 7781), ("192.168.1.5", 7781), ("example.com", 7781)])
def test_tcp_target_refuses_other_hosts(host: str, port: int) -> None:
    with pytest.raises(errors.ConfigError, match="for this machine only"):
        grpc_support.tcp_target(port, host)


@pytest.mark.parametrize("port", [0, -1, 65536, True])
def test_tcp_target_refuses_bad_ports(port: int) -> None:
    with pytest.raises(errors.ConfigError, match="TCP port"):
        grpc_support.tcp_target(port)


def _bare_server() -> grpc.Server:
    return grpc.server(futures.ThreadPoolExecutor(max_workers=1), options=grpc_support.server_options())


def test_the_socket_is_private_from_the_start(lgrep_server: RunningServer) -> None:
    info = lgrep_server.socket_path.lstat()
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600


def test_a_second_server_on_a_live_socket_is_refused(lgrep_server: RunningServer) -> None:
    other = _bare_server()
    try:
        with pytest.raises(errors.ConfigError, match="another server is listening on it"):
            grpc_server_setup.add_unix_port(other, lgrep_server.socket_path)
    finally:
        other.stop(None)
    with grpc.insecure_channel(grpc_support.unix_target(lgrep_server.socket_path)) as channel:  # still served
        server_pb2_grpc.ServerServiceStub(channel).GetServerInfo(server_pb2.GetServerInfoRequest(), timeout=10)


def test_a_stale_socket_is_replaced_and_other_files_are_not(short_dir: Path) -> None:
    import socket

    stale = short_dir / "stale.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(stale))
    dead.close()  # bound, never listening: what a killed server leaves
    regular = short_dir / "notes.txt"
    regular.write_text("not a socket\n")
    server = _bare_server()
    try:
        assert grpc_server_setup.add_unix_port(server, stale) == f"unix:{stale}"
        with pytest.raises(errors.ConfigError, match="something other than a socket is there"):
            grpc_server_setup.add_unix_port(server, regular)
        with pytest.raises(errors.ConfigError, match="its folder does not exist"):
            grpc_server_setup.add_unix_port(server, short_dir / "missing" / "lgrep.sock")
    finally:
        server.stop(None)
    assert regular.read_text() == "not a socket\n"


def test_a_taken_tcp_port_is_refused(lgrep_server: RunningServer) -> None:
    other = _bare_server()
    try:
        with pytest.raises(errors.ConfigError, match=rf"127.0.0.1:{lgrep_server.port}: the port is in use"):
            grpc_server_setup.add_tcp_port(other, lgrep_server.port)
        with pytest.raises(errors.ConfigError, match="for this machine only"):
            grpc_server_setup.add_tcp_port(other, 0, "0.0.0.0")
    finally:
        other.stop(None)


def test_client_and_server_options_agree_on_keepalive_and_sizes() -> None:
    client, server = dict(grpc_support.channel_options()), dict(grpc_support.server_options())
    assert client["grpc.keepalive_time_ms"] >= server["grpc.http2.min_recv_ping_interval_without_data_ms"]
    assert client["grpc.max_receive_message_length"] == server["grpc.max_send_message_length"]
    assert server["grpc.so_reuseport"] == 0


def test_a_large_file_read_fits_in_a_message(lgrep_server: RunningServer, unix_channel: grpc.Channel) -> None:
    """gRPC's default 4 MiB limit would refuse this response; the lgrep options allow it."""
    big = "x" * (6 * 1024 * 1024)
    original = lgrep_server.fake.GetFile

    def get_big(request: Any, context: Any) -> Any:
        reply = original(request, context)
        reply.content = big
        return reply

    lgrep_server.fake.GetFile = get_big  # type: ignore[method-assign]
    with grpc.insecure_channel(
        grpc_support.unix_target(lgrep_server.socket_path), options=grpc_support.channel_options()
    ) as channel:
        reply = search_pb2_grpc.SearchServiceStub(channel).GetFile(
            search_pb2.GetFileRequest(project_root="/p", path="big.txt"), timeout=30
        )
    assert len(reply.content) == len(big)


def test_the_fake_services_cover_every_rpc_of_the_contract() -> None:
    """The servers in these tests implement the whole contract (a new RPC needs a fake too)."""
    services = [s for m in (index_pb2, search_pb2, server_pb2) for s in m.DESCRIPTOR.services_by_name.values()]
    assert {s.full_name for s in services} == set(SERVICE_NAMES)
    missing = [
        f"{s.name}.{m.name}" for s in services for m in s.methods if not callable(getattr(FakeLgrep, m.name, None))
    ]
    assert missing == []
