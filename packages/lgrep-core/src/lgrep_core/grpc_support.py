"""gRPC plumbing shared by every lgrep server and client; the services themselves live in the leaves.

- Errors: one table maps each LgrepError class to a gRPC status code (`STATUS_CODES`); the status
  message is the error's message and the serialized `lgrep.v1.ErrorDetail` rides in the trailing
  metadata entry `lgrep-error-bin`. Servers abort with `abort_with_error`, or let `ErrorInterceptor`
  do it for every handler; clients turn any `grpc.RpcError` back into the same LgrepError with
  `error_from_rpc`.
- Auth: unix-socket peers are trusted (the socket is 0600: only its owner can connect); TCP peers must
  send `authorization: Bearer <token>` (`TokenAuthInterceptor`). Clients send it with
  `bearer_metadata` (on every call: `CallMetadataInterceptor`). Tokens live in a 0600 file
  (`new_token`, `write_token_file`, `read_token_file`).
- Endpoints: `unix_target` / `tcp_target` for clients, `add_unix_port` / `add_tcp_port` for servers,
  `channel_options` / `server_options` that agree with each other (message sizes, keepalive).
- Standard services: `add_standard_services` registers grpc health checking and server reflection.

Decisions and the status table: docs/adr/0007-grpc-contract-errors-and-auth.md, docs/grpc.md.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hmac
import ipaddress
import logging
import os
import re
import secrets
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import grpc
from google.protobuf.message import DecodeError
from lgrep.v1 import common_pb2, index_pb2, search_pb2, server_pb2

from lgrep_core import errors, wire

if TYPE_CHECKING:
    from grpc_health.v1.health import HealthServicer

__all__ = [
    "AUTHORIZATION_KEY",
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
    "ErrorInterceptor",
    "StreamLimitInterceptor",
    "TokenAuthInterceptor",
    "abort_with_error",
    "add_standard_services",
    "add_tcp_port",
    "add_unix_port",
    "bearer_metadata",
    "channel_options",
    "default_socket_path",
    "default_token_path",
    "error_from_rpc",
    "error_trailing_metadata",
    "is_trusted_peer",
    "new_token",
    "read_token_file",
    "server_options",
    "status_code_for",
    "tcp_target",
    "unix_target",
    "write_token_file",
]

log = logging.getLogger(__name__)

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


def abort_with_error(context: grpc.ServicerContext, error: errors.LgrepError) -> NoReturn:
    """End a call of a sync gRPC server with `error`: its status code, its message, its ErrorDetail."""
    context.set_trailing_metadata(error_trailing_metadata(error))
    context.abort(status_code_for(error), error.message)


def _internal_error_message(exc: BaseException) -> str:
    return f"internal error in the lgrep server ({type(exc).__name__}: {exc}); the server's log has the details"


def _abort_internal(context: grpc.ServicerContext, exc: Exception) -> NoReturn:
    """An exception that is no LgrepError is a bug: log its traceback here, send one line as INTERNAL."""
    log.error("unexpected error in an lgrep gRPC handler", exc_info=exc)
    context.set_trailing_metadata(error_trailing_metadata(errors.LgrepError(_internal_error_message(exc))))
    context.abort(grpc.StatusCode.INTERNAL, _internal_error_message(exc))


def _error_detail(metadata: Any) -> common_pb2.ErrorDetail | None:
    for key, value in metadata or ():
        if key == wire.ERROR_METADATA_KEY and isinstance(value, bytes):
            try:
                return common_pb2.ErrorDetail.FromString(value)
            except DecodeError:
                return None
    return None


def _call_attr(exc: grpc.RpcError, name: str) -> Any:
    method = getattr(exc, name, None)
    return method() if callable(method) else None


def error_from_rpc(exc: grpc.RpcError, *, target: str | None = None) -> errors.LgrepError:
    """The LgrepError behind a failed call (sync or grpc.aio), for a client to raise or print.

    The server's ErrorDetail, when it sent one, gives back the very class and message it raised.
    Otherwise the status code decides: a server that cannot be reached, a deadline, a refused
    token and the other codes each become an error whose message says what happened and what to
    do. `target` (the address called) makes those messages name the server.
    """
    detail = _error_detail(_call_attr(exc, "trailing_metadata"))
    if detail is not None:
        return wire.error_from_proto(detail)
    code = _call_attr(exc, "code")
    details = _call_attr(exc, "details") or ""
    where = f" at {target}" if target else ""
    if code == grpc.StatusCode.UNAVAILABLE:
        return errors.ServerUnavailableError(
            f"cannot reach the lgrep server{where} ({details or 'unavailable'}): is `lgrep serve` running?"
        )
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return errors.DeadlineExceededError(
            f"the lgrep server{where} did not answer in time: it may be busy (indexing, loading a model); "
            "try again, or give the call a longer timeout"
        )
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return errors.AuthenticationError(
            details or f"the lgrep server{where} refused the call: calls over TCP need its token"
        )
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return errors.InvalidRequestError(details or "the server rejected the request as malformed")
    if code == grpc.StatusCode.NOT_FOUND:
        return errors.NotFoundError(details or "not found")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return errors.LgrepError(
            f"the lgrep server{where} does not offer this call ({details or 'unimplemented'}): it hosts "
            "other lgrep services, or it is another version of lgrep (see its `lgrep serve --version`)"
        )
    if code == grpc.StatusCode.CANCELLED:
        return errors.LgrepError(f"the call to the lgrep server{where} was cancelled")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return errors.LgrepError(f"the lgrep server{where} refused the call: {details or 'resources exhausted'}")
    name = code.name if isinstance(code, grpc.StatusCode) else "no status"
    return errors.LgrepError(f"the lgrep server{where} failed ({name}): {details or 'no details'}")


# --- server interceptors ---------------------------------------------------------------------------

_Check = Callable[[Any], "errors.LgrepError | None"]


def _rebuild(handler: grpc.RpcMethodHandler[Any, Any], wrap: Callable[[Callable[..., Any], bool], Any]) -> Any:
    """The same method handler with its behavior replaced by wrap(behavior, streams_responses)."""
    kinds = (
        ("unary_unary", grpc.unary_unary_rpc_method_handler),
        ("unary_stream", grpc.unary_stream_rpc_method_handler),
        ("stream_unary", grpc.stream_unary_rpc_method_handler),
        ("stream_stream", grpc.stream_stream_rpc_method_handler),
    )
    for kind, make in kinds:
        behavior = getattr(handler, kind, None)
        if behavior is not None:
            return make(
                wrap(behavior, handler.response_streaming),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler


def _already_ended(context: grpc.ServicerContext) -> bool:
    """The handler (or an inner interceptor) aborted the call itself: let gRPC finish it."""
    code = getattr(context, "code", lambda: None)()  # None until a handler sets a status (not in the stubs)
    return code is not None and code != grpc.StatusCode.OK


@contextlib.contextmanager
def _sync_guard(context: grpc.ServicerContext, check: _Check | None, translate: bool) -> Iterator[None]:
    if check is not None and (refusal := check(context)) is not None:
        abort_with_error(context, refusal)
    if not translate:
        yield
        return
    try:
        yield
    except errors.LgrepError as exc:
        abort_with_error(context, exc)
    except Exception as exc:
        if _already_ended(context):
            raise
        _abort_internal(context, exc)


def _sync_wrapper(check: _Check | None, translate: bool) -> Callable[[Callable[..., Any], bool], Any]:
    def wrap(behavior: Callable[..., Any], streams: bool) -> Any:
        if streams:

            def stream_behavior(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                with _sync_guard(context, check, translate):
                    yield from behavior(request, context)

            return stream_behavior

        def unary_behavior(request: Any, context: grpc.ServicerContext) -> Any:
            with _sync_guard(context, check, translate):
                return behavior(request, context)
            raise AssertionError("unreachable: the guard returns or aborts")  # pragma: no cover

        return unary_behavior

    return wrap


class ErrorInterceptor(grpc.ServerInterceptor):
    """Sync servers: an LgrepError raised by a handler ends the call with its status code, message and
    ErrorDetail; any other exception is logged (with its traceback, on the server) and ends the call
    as INTERNAL with a one-line message. Handlers then simply raise."""

    def __init__(self) -> None:
        self._wrap = _sync_wrapper(None, translate=True)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        return None if handler is None else _rebuild(handler, self._wrap)


# --- streams -------------------------------------------------------------------------------------

CLIENT_ID_KEY = "lgrep-client-id"
"""Metadata key naming the calling client for the per-client stream allowance (`StreamLimitInterceptor`).
lgrep's own client sends its process id; a caller that sends none is known by its gRPC peer, which on a
unix socket is the same for every caller (all such callers share one allowance)."""


class StreamLimitInterceptor(grpc.ServerInterceptor):
    """Sync servers: a streaming call (health Watch, IndexProject waiting for vectors, reflection)
    holds a worker thread for as long as it lasts, so enough of them would leave no worker for
    anyone's short calls. This bounds the streams that run at once, to `total` and to `per_client`
    per client (`CLIENT_ID_KEY`), and ends any further one at once as RESOURCE_EXHAUSTED with a
    message saying why; unary calls are never refused here. Give the server `total` workers plus
    the ones kept for unary calls (lgrep_core.server)."""

    def __init__(self, *, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = per_client
        self._lock = threading.Lock()
        self._running: collections.Counter[str] = collections.Counter()

    def running(self) -> int:
        """Streams running now."""
        with self._lock:
            return sum(self._running.values())

    def _client(self, context: grpc.ServicerContext) -> str:
        for key, value in context.invocation_metadata() or ():
            if key == CLIENT_ID_KEY:
                text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                return f"id:{text[:64]}"
        return f"peer:{context.peer()}"

    def _enter(self, client: str) -> str | None:
        """Take a slot for `client`; the refusal's message when there is none."""
        with self._lock:
            if sum(self._running.values()) >= self.total:
                return (
                    f"this lgrep server already runs {self.total} streaming calls (its limit, so that short "
                    "calls always find a worker): try again once one ends"
                )
            if self._running[client] >= self.per_client:
                return (
                    f"this client already has {self.per_client} streaming calls open on this lgrep server (the "
                    f"limit per client): end one first (clients are told apart by the '{CLIENT_ID_KEY}' metadata)"
                )
            self._running[client] += 1
            return None

    def _leave(self, client: str) -> None:
        with self._lock:
            self._running[client] -= 1
            if self._running[client] <= 0:
                del self._running[client]

    def _wrap(self, behavior: Callable[..., Any], streams: bool) -> Any:
        if streams:

            def stream_behavior(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                client = self._client(context)
                if (refusal := self._enter(client)) is not None:
                    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal)
                try:
                    yield from behavior(request, context)
                finally:
                    self._leave(client)

            return stream_behavior

        def unary_behavior(request_iterator: Any, context: grpc.ServicerContext) -> Any:
            client = self._client(context)
            if (refusal := self._enter(client)) is not None:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal)
            try:
                return behavior(request_iterator, context)
            finally:
                self._leave(client)

        return unary_behavior

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        if handler is None or not (handler.request_streaming or handler.response_streaming):
            return handler
        return _rebuild(handler, self._wrap)


# --- auth ----------------------------------------------------------------------------------------

AUTHORIZATION_KEY = "authorization"
"""Metadata key of the bearer token (`authorization: Bearer <token>`); gRPC metadata keys are lowercase."""

_TOKEN_RE = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")
_TOKEN_BYTES = 32  # 256 bits, 43 characters


def is_trusted_peer(peer: str) -> bool:
    """Whether a caller may skip the token: unix-socket peers ("unix:..."), whom the socket's 0600 mode
    already limits to its owner. Abstract unix sockets ("unix-abstract:") have no file mode: not trusted."""
    return peer.startswith("unix:")


def _check_token(token: str) -> str:
    if not _TOKEN_RE.fullmatch(token):
        raise errors.ConfigError(
            "an lgrep token must be 16 to 512 characters of letters, digits and ._~+/=- (make one with new_token())"
        )
    return token


def _authenticator(token: str, token_file: str | os.PathLike[str] | None) -> _Check:
    expected = _check_token(token).encode("ascii")
    where = f"from {token_file}" if token_file is not None else "from the server's token file"

    def check(context: Any) -> errors.LgrepError | None:
        if is_trusted_peer(context.peer()):
            return None
        values = [v for k, v in context.invocation_metadata() or () if k == AUTHORIZATION_KEY]
        if not values:
            return errors.AuthenticationError(
                "this lgrep server needs its token for calls over TCP: send the metadata "
                f"'authorization: Bearer <token>' with the token {where} (or connect through its unix socket)"
            )
        value = values[0].decode("latin-1") if isinstance(values[0], bytes) else str(values[0])
        scheme, _, credential = value.strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode("utf-8"), expected):
            return errors.AuthenticationError(
                f"the token sent is not this lgrep server's token (a restarted server makes a new one): "
                f"read it again {where}"
            )
        return None

    return check


class TokenAuthInterceptor(grpc.ServerInterceptor):
    """Sync servers: calls over TCP must carry `authorization: Bearer <token>`; unix-socket calls are
    trusted. Others end as UNAUTHENTICATED (with an ErrorDetail) before any handler runs.
    `token_file` only makes the refusal say where the token is. Put it first in the interceptor list."""

    def __init__(self, token: str, *, token_file: str | os.PathLike[str] | None = None) -> None:
        self._wrap = _sync_wrapper(_authenticator(token, token_file), translate=False)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        return None if handler is None else _rebuild(handler, self._wrap)


def bearer_metadata(token: str) -> tuple[tuple[str, str]]:
    """The call metadata that carries `token` (pass as `metadata=` to a stub call)."""
    return ((AUTHORIZATION_KEY, f"Bearer {_check_token(token)}"),)


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


# --- token files ---------------------------------------------------------------------------------


def new_token() -> str:
    """A fresh random bearer token (256 bits, URL-safe text)."""
    return secrets.token_urlsafe(_TOKEN_BYTES)


def write_token_file(path: str | os.PathLike[str], token: str) -> Path:
    """Write `token` to `path`, readable by its owner only (0600), atomically: readers see the old
    token or the new one. Whatever was at `path` (a file, a symlink) is replaced, not followed."""
    target = Path(path)
    _check_token(token)
    temp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, 0o600)
    except OSError as exc:
        raise errors.ConfigError(f"cannot write the token file {target}: {exc.strerror}") from None
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{token}\n".encode("ascii"))
        os.fsync(fd)
        os.close(fd)
        fd = -1
        temp.replace(target)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        temp.unlink(missing_ok=True)
        raise errors.ConfigError(f"cannot write the token file {target}: {exc.strerror}") from None
    return target


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token in `path`. Refuses, with a message that says what to do, a symlink, anything but a
    regular file, a file another user owns, and a file that its group or others may read or write."""
    target = Path(path)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise errors.ConfigError(
            f"no token file at {target}: the lgrep server writes it when it listens on TCP; is it running with TCP on?"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise errors.ConfigError(
                f"the token file {target} is a symbolic link; lgrep reads a token only from a regular file: "
                "remove the link and let the server write the file"
            ) from None
        raise errors.ConfigError(f"cannot read the token file {target}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise errors.ConfigError(f"the token file {target} is not a regular file")
        if info.st_uid != os.geteuid():
            raise errors.ConfigError(
                f"the token file {target} belongs to user id {info.st_uid}, not to you ({os.geteuid()}): "
                "lgrep only trusts a token file you own"
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise errors.ConfigError(
                f"the token file {target} can be used by other users (mode {mode:04o}): run `chmod 600 {target}`"
            )
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if not _TOKEN_RE.fullmatch(token):
        raise errors.ConfigError(f"the token file {target} does not hold an lgrep token")
    return token


# --- endpoints -----------------------------------------------------------------------------------

SOCKET_FILE_NAME = "lgrep.sock"
"""The daemon's unix socket, in the cache directory (`default_socket_path`)."""
TOKEN_FILE_NAME = "lgrep.token"
"""The daemon's bearer token for TCP clients, in the cache directory (`default_token_path`)."""

MAX_UNIX_SOCKET_PATH_BYTES = 103 if sys.platform == "darwin" else 107
"""The longest unix socket path the OS accepts (sun_path is 104 bytes on macOS, 108 on Linux, with a NUL)."""

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""Largest message either side sends or accepts: a whole source file (GetFile) or a search with long
snippets fits many times over; gRPC's default of 4 MiB could refuse a large file read."""

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


def unix_target(path: str | os.PathLike[str]) -> str:
    """The gRPC target of a unix socket (`unix:/abs/path`). Raises ConfigError for a path the OS
    cannot bind or connect to (too long, or with a NUL), naming it."""
    absolute = Path(path).expanduser().absolute()
    text = str(absolute)
    if "\x00" in text:
        raise errors.ConfigError(f"the unix socket path {text!r} contains a NUL character")
    size = len(os.fsencode(text))
    if size > MAX_UNIX_SOCKET_PATH_BYTES:
        raise errors.ConfigError(
            f"the unix socket path {text} is {size} bytes long, but the OS allows at most "
            f"{MAX_UNIX_SOCKET_PATH_BYTES}: use a shorter cache directory (LGREP_CACHE_DIR) or socket path"
        )
    return f"unix:{text}"


def _loopback_host(host: str) -> str:
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


def _check_port(port: int, *, allow_zero: bool) -> int:
    low = 0 if allow_zero else 1
    if isinstance(port, bool) or not isinstance(port, int) or not low <= port <= 65535:
        raise errors.ConfigError(f"a TCP port must be {low} to 65535, got {port!r}")
    return port


def tcp_target(port: int, host: str = "127.0.0.1") -> str:
    """The gRPC target of a loopback TCP endpoint (`127.0.0.1:7781`, `[::1]:7781`). Raises ConfigError
    for a host that is not loopback: the endpoint is plaintext and carries a bearer token."""
    return f"{_loopback_host(host)}:{_check_port(port, allow_zero=False)}"


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


def _socket_in_use(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def add_unix_port(server: grpc.Server, path: str | os.PathLike[str]) -> str:
    """Listen on a unix socket that only this user can connect to (mode 0600 from its creation on);
    returns its target. Raises ConfigError, naming the path, when it is too long, when its folder is
    missing, when something other than a socket is there, or when a server already answers on it (a
    stale socket left by a server that died is replaced).

    The socket is created under a umask of 0177, which is process-wide for that moment: call this
    before starting threads that create files.
    """
    target = unix_target(path)
    socket_path = Path(target.removeprefix("unix:"))
    if not socket_path.parent.is_dir():
        raise errors.ConfigError(f"cannot listen on {socket_path}: its folder does not exist")
    try:
        info = socket_path.lstat()
    except FileNotFoundError:
        info = None
    if info is not None:
        if not stat.S_ISSOCK(info.st_mode):
            raise errors.ConfigError(f"cannot listen on {socket_path}: something other than a socket is there")
        if _socket_in_use(socket_path):
            raise errors.ConfigError(f"cannot listen on {socket_path}: another server is listening on it")
    old_umask = os.umask(0o177)
    try:
        bound = server.add_insecure_port(target)
    except RuntimeError as exc:
        raise errors.ConfigError(f"cannot listen on {socket_path}: {exc}") from None
    finally:
        os.umask(old_umask)
    if not bound:
        raise errors.ConfigError(f"cannot listen on {socket_path}")
    socket_path.chmod(0o600)
    return target


def add_tcp_port(server: grpc.Server, port: int = 0, host: str = "127.0.0.1") -> int:
    """Listen on a loopback TCP port (0: any free port); returns the port. Raises ConfigError for a
    host that is not loopback or a port that is taken. Calls over TCP need the token: give the server
    a TokenAuthInterceptor."""
    address = f"{_loopback_host(host)}:{_check_port(port, allow_zero=True)}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if not bound:
        raise errors.ConfigError(f"cannot listen on {address}: the port is in use, or not allowed")
    return bound


# --- standard services ---------------------------------------------------------------------------


def add_standard_services(server: grpc.Server, service_names: Iterable[str]) -> HealthServicer:
    """Register gRPC health checking (every name in `service_names`, and "" for the whole server,
    SERVING) and server reflection (those services, health and reflection itself) on `server`.

    Returns the health servicer, so that the server can report NOT_SERVING when it shuts down:
    `servicer.enter_graceful_shutdown()`.
    """
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection

    names: Sequence[str] = list(dict.fromkeys(service_names))
    serving = health_pb2.HealthCheckResponse.SERVING
    servicer = health.HealthServicer()
    for name in names:
        servicer.set(name, serving)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    return servicer
