"""gRPC plumbing that clients and servers agree on; the services themselves live in the leaves.

- Errors: one table maps each LgrepError class to a gRPC status code (`STATUS_CODES`); the status
  message is the error's message and the serialized `lgrep.v1.ErrorDetail` rides in the trailing
  metadata entry `lgrep-error-bin` (`error_trailing_metadata`). Clients turn any `grpc.RpcError` back
  into the same LgrepError with `error_from_rpc` (lgrep_core.rpc.grpc_common holds what needs no grpc
  import, shared with the CLI's light client: the status mapping, unix targets, limits, the client id key).
- Endpoints: `unix_target` / `tcp_target` for clients (`lgrep_core.rpc.grpc_server_setup` listens on
  them), `channel_options` / `server_options` that agree with each other (message sizes, keepalive),
  the daemon's default socket and token paths.
- Call metadata: `CallMetadataInterceptor` adds metadata (the client id `CLIENT_ID_KEY`, the bearer
  token of `lgrep_core.rpc.grpc_tokens`) to every call of a channel.

Servers: `lgrep_core.rpc.grpc_interceptors` (errors, auth, stream limits) and `lgrep_core.rpc.grpc_server_setup`
(ports, health and reflection). Decisions and the status table:
docs/adr/0007-grpc-contract-errors-and-auth.md, docs/grpc.md.
"""

from __future__ import annotations

import collections
import ipaddress
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
from lgrep.v1 import index_pb2, search_pb2, server_pb2

from lgrep_core.domain import errors
from lgrep_core.rpc import wire
from lgrep_core.rpc.grpc_common import (
    CLIENT_ID_KEY,
    MAX_MESSAGE_BYTES,
    MAX_UNIX_SOCKET_PATH_BYTES,
    error_from_status,
    unix_target,
)

__all__ = [
    "CLIENT_ID_KEY",
    "INDEX_SERVICE_NAME",
    "MAX_MESSAGE_BYTES",
    "MAX_UNIX_SOCKET_PATH_BYTES",
    "SEARCH_SERVICE_NAME",
    "SERVER_SERVICE_NAME",
    "SOCKET_FILE_NAME",
    "STATUS_CODES",
    "TOKEN_FILE_NAME",
    "CallMetadataInterceptor",
    "channel_options",
    "check_port",
    "default_socket_path",
    "default_token_path",
    "error_from_rpc",
    "error_trailing_metadata",
    "loopback_host",
    "server_options",
    "status_code_for",
    "tcp_target",
    "unix_target",
]

SERVER_SERVICE_NAME: str = server_pb2.DESCRIPTOR.services_by_name["ServerService"].full_name
INDEX_SERVICE_NAME: str = index_pb2.DESCRIPTOR.services_by_name["IndexService"].full_name
SEARCH_SERVICE_NAME: str = search_pb2.DESCRIPTOR.services_by_name["SearchService"].full_name

# --- errors <-> status codes -----------------------------------------------------------------------

STATUS_CODES: Mapping[type[errors.LgrepError], grpc.StatusCode] = {
    # An lgrep error of no listed class: gRPC's own "unknown error".
    errors.LgrepError: grpc.StatusCode.UNKNOWN,
    # The server's settings or the project's .lgrep.yaml are wrong: no request fixes that.
    errors.ConfigError: grpc.StatusCode.FAILED_PRECONDITION,
    # A damaged or unreadable index: the message says what to run (`lgrep index --force`).
    errors.StorageError: grpc.StatusCode.FAILED_PRECONDITION,
    errors.SchemaVersionMismatchError: grpc.StatusCode.FAILED_PRECONDITION,
    errors.IndexMismatchError: grpc.StatusCode.FAILED_PRECONDITION,
    # Another writer holds the project's lock: a concurrency conflict that the same call may win
    # later. ABORTED, not UNAVAILABLE, so that a busy index never reads as "the server is down".
    errors.IndexBusyError: grpc.StatusCode.ABORTED,
    errors.EmbeddingError: grpc.StatusCode.INTERNAL,
    # The model cannot be loaded or the cloud provider cannot be reached: retry later.
    errors.ProviderUnavailableError: grpc.StatusCode.UNAVAILABLE,
    errors.IndexingError: grpc.StatusCode.INTERNAL,
    errors.SearchError: grpc.StatusCode.INTERNAL,
    errors.NotFoundError: grpc.StatusCode.NOT_FOUND,
    errors.InvalidRequestError: grpc.StatusCode.INVALID_ARGUMENT,
    errors.ServerUnavailableError: grpc.StatusCode.UNAVAILABLE,
    errors.DeadlineExceededError: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.AuthenticationError: grpc.StatusCode.UNAUTHENTICATED,
    errors.ContractMismatchError: grpc.StatusCode.FAILED_PRECONDITION,
}
"""The gRPC status code of each LgrepError class; a subclass takes that of its nearest listed ancestor."""


def status_code_for(error: errors.LgrepError) -> grpc.StatusCode:
    """The gRPC status code a server answers with when it raises `error`."""
    return next(
        (STATUS_CODES[cls] for cls in type(error).__mro__ if cls in STATUS_CODES),
        grpc.StatusCode.UNKNOWN,
    )


def error_trailing_metadata(error: errors.LgrepError) -> tuple[tuple[str, bytes]]:
    """The trailing metadata that carries `error` as a serialized `lgrep.v1.ErrorDetail`."""
    return ((wire.ERROR_METADATA_KEY, wire.error_to_proto(error).SerializeToString()),)


def _call_attr(exc: grpc.RpcError, name: str) -> Any:
    method = getattr(exc, name, None)
    return method() if callable(method) else None


def error_from_rpc(exc: grpc.RpcError, *, target: str | None = None) -> errors.LgrepError:
    """The LgrepError behind a failed call (sync or grpc.aio), for a client to raise or print: the
    server's ErrorDetail when it sent one, else what its status code means
    (lgrep_core.rpc.grpc_common.error_from_status, which the CLI's light client shares). `target` (the
    address called) makes the messages name the server.
    """
    code = _call_attr(exc, "code")
    return error_from_status(
        code.value[0] if isinstance(code, grpc.StatusCode) else None,
        _call_attr(exc, "details") or "",
        _call_attr(exc, "trailing_metadata"),
        target=target,
    )


# --- call metadata -------------------------------------------------------------------------------


class _CallDetails(
    collections.namedtuple(
        "_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")
    ),
    grpc.ClientCallDetails,
):
    pass


class CallMetadataInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds `metadata` to every call of a sync channel: `grpc.intercept_channel(channel, ...)`."""

    def __init__(self, metadata: Sequence[tuple[str, str]]) -> None:
        self._metadata = tuple(metadata)

    def _details(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = [*(details.metadata or ()), *self._metadata]
        return _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(self._details(client_call_details), request)

    def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(self._details(client_call_details), request)

    def intercept_stream_unary(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return continuation(self._details(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return continuation(self._details(client_call_details), request_iterator)


# --- endpoints -----------------------------------------------------------------------------------

SOCKET_FILE_NAME = "lgrep.sock"
"""The daemon's unix socket, in the cache directory (`default_socket_path`)."""
TOKEN_FILE_NAME = "lgrep.token"
"""The daemon's bearer token for TCP clients, in the cache directory (`default_token_path`)."""

# Keepalive: on loopback and unix sockets a dead peer is seen at once, so pings only guard long,
# quiet calls (an IndexProject stream while a batch embeds) against a hung server. The server must
# accept pings at least as often as clients send them, or it answers GOAWAY "too_many_pings".
_CLIENT_KEEPALIVE_MS = 120_000
_SERVER_MIN_PING_INTERVAL_MS = 60_000


def default_socket_path(cache_dir: str | os.PathLike[str]) -> Path:
    """Where the daemon of a cache directory listens: `<cache_dir>/lgrep.sock`."""
    return Path(cache_dir) / SOCKET_FILE_NAME


def default_token_path(cache_dir: str | os.PathLike[str]) -> Path:
    """Where the daemon of a cache directory keeps its TCP token: `<cache_dir>/lgrep.token`."""
    return Path(cache_dir) / TOKEN_FILE_NAME


def loopback_host(host: str) -> str:
    if host == "localhost":
        return host
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise errors.ConfigError(
            f"lgrep's TCP endpoint is for this machine only (it carries its token in plain text): "
            f"use 127.0.0.1, ::1 or localhost, not {host!r}"
        )
    return f"[{address}]" if address.version == 6 else str(address)


def check_port(port: int, *, allow_zero: bool) -> int:
    low = 0 if allow_zero else 1
    if isinstance(port, bool) or not isinstance(port, int) or not low <= port <= 65535:
        raise errors.ConfigError(f"a TCP port must be {low} to 65535, got {port!r}")
    return port


def tcp_target(port: int, host: str = "127.0.0.1") -> str:
    """The gRPC target of a loopback TCP endpoint (`127.0.0.1:7781`, `[::1]:7781`). Raises ConfigError
    for a host that is not loopback: the endpoint is plaintext and carries a bearer token."""
    return f"{loopback_host(host)}:{check_port(port, allow_zero=False)}"


def channel_options() -> list[tuple[str, int]]:
    """Options for every lgrep client channel (sync or aio); they agree with server_options()."""
    return [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.keepalive_time_ms", _CLIENT_KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", 20_000),
        ("grpc.keepalive_permit_without_calls", 0),  # an idle channel does not ping
        ("grpc.http2.max_pings_without_data", 0),  # a long quiet stream may ping as often as it needs
    ]


def server_options() -> list[tuple[str, int]]:
    """Options for every lgrep server."""
    return [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", _SERVER_MIN_PING_INTERVAL_MS),
        ("grpc.keepalive_permit_without_calls", 0),
        # gRPC sets SO_REUSEPORT by default on Linux: a second server on the same port would then
        # share it silently instead of failing. One port, one server.
        ("grpc.so_reuseport", 0),
    ]
