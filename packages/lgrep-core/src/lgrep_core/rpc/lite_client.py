"""The CLI's light client of the daemon: every unary call as gRPC over HTTP/2, spoken with the
pure-Python `h2` on the daemon's unix socket, without importing grpcio (ADR 0027).

A `lgrep search` through the warm daemon is a process that starts, imports, makes two short calls
and exits; `import grpc` (with the asyncio it pulls in) was a fifth of its time (docs/benchmarks.md).
This client speaks the same gRPC wire protocol to the same server (the same paths, protobuf
messages, `grpc-timeout`, the `lgrep-client-id` metadata, `grpc-status` / `grpc-message` /
`lgrep-error-bin` trailers) and raises the same LgrepError for the same failure, through
lgrep_core.rpc.grpc_common, which lgrep_core.rpc.client shares. It is an lgrep_core.domain.engine.Engine: the
handshake (`server_info`) and every use case (`call`, on the routes of lgrep_core.rpc.wire.ROUTES) are
its own; only the IndexProject stream, which a search makes when a project has no index yet, goes
through an lgrep_core.rpc.client.LgrepClient on the same socket, made (and grpc imported) on first use.

It connects over a unix socket only (no bearer token: that is for TCP, ADR 0007), one connection,
one call at a time (a lock), the connection opened by the first call and kept for the next.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar
from urllib.parse import unquote

from lgrep_core.domain.engine import anchored
from lgrep_core.domain.errors import ContractMismatchError, InvalidRequestError, LgrepError
from lgrep_core.rpc import grpc_common
from lgrep_core.rpc.grpc_common import STATUS_NAMES, error_from_status, unix_target

if TYPE_CHECKING:
    from h2.connection import H2Connection

    from lgrep_core.domain.models import IndexProjectRequest, Request, ServerInfo
    from lgrep_core.rpc.client import IndexStream, LgrepClient

__all__ = ["LiteClient"]

A = TypeVar("A")

DEFAULT_TIMEOUT_S = 30.0
"""Deadline of each call (as lgrep_core.rpc.client.DEFAULT_TIMEOUT_S); None: no deadline."""

_SERVER_INFO_PATH = "/lgrep.v1.ServerService/GetServerInfo"
_READ_BYTES = 65536
# Receive windows as large as HTTP/2 allows, so the server never waits on this client for credit
# (an answer is at most MAX_MESSAGE_BYTES; the whole answer is read before it is parsed).
_WINDOW = 2**31 - 1

_CANCELLED = STATUS_NAMES.index("CANCELLED")
_UNKNOWN = STATUS_NAMES.index("UNKNOWN")
_INTERNAL = STATUS_NAMES.index("INTERNAL")
_UNAVAILABLE = STATUS_NAMES.index("UNAVAILABLE")
_DEADLINE = STATUS_NAMES.index("DEADLINE_EXCEEDED")
_EXHAUSTED = STATUS_NAMES.index("RESOURCE_EXHAUSTED")
_UNIMPLEMENTED = STATUS_NAMES.index("UNIMPLEMENTED")
_UNAUTHENTICATED = STATUS_NAMES.index("UNAUTHENTICATED")
_PERMISSION_DENIED = STATUS_NAMES.index("PERMISSION_DENIED")

# A response that is not gRPC's: its HTTP status says what went wrong (gRPC's http-grpc-status-mapping.md).
_HTTP_STATUS = {400: _INTERNAL, 401: _UNAUTHENTICATED, 403: _PERMISSION_DENIED, 404: _UNIMPLEMENTED}
_HTTP_UNAVAILABLE = (429, 502, 503, 504)


class _Failed(Exception):
    """A call that ended without an answer: its gRPC status, message and trailers."""

    def __init__(self, code: int, details: str, trailers: Sequence[tuple[str, object]] = ()) -> None:
        super().__init__(details)
        self.code = code
        self.details = details
        self.trailers = trailers


def _timeout_header(seconds: float) -> bytes:
    """gRPC's `grpc-timeout`: at most 8 digits and a unit, rounded up."""
    for unit, per_second in ((b"m", 1_000), (b"S", 1), (b"M", 1 / 60), (b"H", 1 / 3600)):
        value = max(1, int(-(-seconds * per_second // 1)))
        if value < 100_000_000:
            return str(value).encode() + unit
    return b"99999999H"


def _binary_value(text: bytes) -> bytes | None:
    """A `-bin` metadata value: base64, padded or not (None when it is not base64)."""
    import binascii

    try:
        return base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


class _Connection:
    """One HTTP/2 connection to the daemon's socket, making one unary call at a time."""

    def __init__(self, path: str, deadline: float | None) -> None:
        from h2.config import H2Configuration
        from h2.connection import H2Connection
        from h2.settings import SettingCodes, Settings

        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with self._io(deadline, "timed out connecting", f"failed to connect to {path}"):
            self._sock.connect(path)
        self._h2: H2Connection = H2Connection(H2Configuration(client_side=True, header_encoding=None))
        # Sent with the preface (settings changed after it would wait for the server's ack).
        self._h2.local_settings = Settings(
            client=True,
            initial_values={SettingCodes.INITIAL_WINDOW_SIZE: _WINDOW, SettingCodes.ENABLE_PUSH: 0},
        )
        self._h2.initiate_connection()
        self._h2.increment_flow_control_window(_WINDOW - self._h2.inbound_flow_control_window)
        self.broken = False  # not to be used for another call
        self._pending: list[Any] = []  # events read while sending, for the answer to see
        self._send(deadline)

    def close(self) -> None:
        self.broken = True
        self._sock.close()

    def reusable(self) -> bool:
        """Whether this idle connection can take another call. What the server sent while it sat idle
        is read and answered first: settings and pings are acknowledged; a GOAWAY or the end of the
        connection (a server closes connections idle for long, as a command's light connection is
        while its first index streams over the gRPC client) makes it unusable, and it is closed."""
        from h2.events import ConnectionTerminated
        from h2.exceptions import H2Error

        if self.broken:
            return False
        try:
            self._sock.setblocking(False)
            try:
                while data := self._sock.recv(_READ_BYTES):
                    if any(isinstance(e, ConnectionTerminated) for e in self._h2.receive_data(data)):
                        self.close()
                        return False
            except BlockingIOError:  # nothing more to read: the connection is open
                pass
            else:  # recv returned b"": the server closed it
                self.close()
                return False
            finally:
                if not self.broken:
                    self._sock.setblocking(True)
            self._send(None)  # the acknowledgements owed
        except (OSError, H2Error, _Failed):
            self.close()
            return False
        return True

    @contextlib.contextmanager
    def _io(self, deadline: float | None, timed_out: str, broke: str) -> Iterator[None]:
        """One socket operation within `deadline`: a timeout is DEADLINE_EXCEEDED, any other socket
        error UNAVAILABLE; either closes the connection."""
        try:
            self._sock.settimeout(_left(deadline))
            yield
        except TimeoutError:
            self.close()
            raise _Failed(_DEADLINE, timed_out) from None
        except OSError as exc:
            self.close()
            raise _Failed(_UNAVAILABLE, f"{broke}: {exc.strerror or exc}") from None

    def _send(self, deadline: float | None) -> None:
        data = self._h2.data_to_send()
        if not data:
            return
        with self._io(deadline, "timed out sending", "the connection broke"):
            self._sock.sendall(data)

    def _receive(self, deadline: float | None) -> list[Any]:
        from h2.exceptions import H2Error

        self._send(deadline)  # what is owed first (window updates), so the server never waits on it
        with self._io(deadline, "deadline exceeded", "the connection broke"):
            data = self._sock.recv(_READ_BYTES)
        if not data:
            self.close()
            raise _Failed(_UNAVAILABLE, "the server closed the connection before it answered")
        try:
            events = self._h2.receive_data(data)
        except H2Error as exc:
            self.close()
            raise _Failed(_INTERNAL, f"the server broke the HTTP/2 protocol: {exc}") from None
        self._send(deadline)  # acknowledgements: settings, pings, window updates
        return events

    def call(self, path: str, request: bytes, metadata: Sequence[tuple[bytes, bytes]], timeout: float | None) -> bytes:
        """The answer of one unary call (the serialized message), or _Failed."""
        from h2.exceptions import H2Error

        deadline = None if timeout is None else time.monotonic() + timeout
        headers = [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", path.encode("ascii")),
            (b":authority", b"localhost"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            (b"user-agent", b"lgrep-lite/1"),
        ]
        if timeout is not None:
            headers.append((b"grpc-timeout", _timeout_header(timeout)))
        headers.extend(metadata)
        try:
            stream = self._h2.get_next_available_stream_id()
            self._h2.send_headers(stream, headers)
            self._send_body(stream, struct.pack(">?I", False, len(request)) + request, deadline)
            return self._answer(stream, deadline)
        except H2Error as exc:  # a call the connection's state does not allow (the server closed it)
            self.close()
            raise _Failed(_UNAVAILABLE, f"the connection cannot carry the call: {exc}") from None

    def _send_body(self, stream: int, body: bytes, deadline: float | None) -> None:
        from h2.events import ConnectionTerminated, StreamEnded, StreamReset

        view = memoryview(body)
        while True:
            size = min(len(view), self._h2.local_flow_control_window(stream), self._h2.max_outbound_frame_size)
            if size or not view:
                self._h2.send_data(stream, bytes(view[:size]), end_stream=size == len(view))
                self._send(deadline)
                view = view[size:]
                if not view:
                    return
                continue
            events = self._receive(deadline)  # no credit left: wait for the server's window update
            self._pending.extend(events)
            for event in events:
                if isinstance(event, ConnectionTerminated) or (
                    isinstance(event, StreamReset | StreamEnded) and event.stream_id == stream
                ):
                    return  # it answered (an error) before reading the whole request: read that answer

    def _answer(self, stream: int, deadline: float | None) -> bytes:
        from h2.events import (
            ConnectionTerminated,
            DataReceived,
            ResponseReceived,
            StreamEnded,
            StreamReset,
            TrailersReceived,
        )

        headers: list[tuple[bytes, bytes]] = []
        body = bytearray()
        events, self._pending = self._pending, []
        while True:
            for event in events:
                if isinstance(event, ConnectionTerminated):
                    self.broken = True  # no new call on it; one it already took is still answered
                    if event.last_stream_id is None or event.last_stream_id < stream:
                        self.close()
                        raise _Failed(_UNAVAILABLE, "the server is shutting down (GOAWAY)")
                elif getattr(event, "stream_id", None) != stream:
                    continue
                elif isinstance(event, ResponseReceived | TrailersReceived):
                    headers.extend(event.headers)
                elif isinstance(event, DataReceived):
                    body += event.data
                    self._h2.acknowledge_received_data(event.flow_controlled_length, stream)
                    if len(body) > grpc_common.MAX_MESSAGE_BYTES + 5:
                        self._h2.reset_stream(stream)
                        self._send(deadline)
                        raise _Failed(_EXHAUSTED, "the answer is larger than the largest message lgrep accepts")
                elif isinstance(event, StreamReset):
                    code = _CANCELLED if event.error_code == 8 else _UNAVAILABLE if event.error_code == 7 else _INTERNAL
                    raise _Failed(code, f"the server reset the call (HTTP/2 error {int(event.error_code)})")
                elif isinstance(event, StreamEnded):
                    return _message(headers, bytes(body))
            events = self._receive(deadline)


def _left(deadline: float | None) -> float | None:
    """Seconds to the deadline (a socket timeout), None for none; never 0, which would not block."""
    return None if deadline is None else max(deadline - time.monotonic(), 1e-3)


def _message(headers: Sequence[tuple[bytes, bytes]], body: bytes) -> bytes:
    """The message of a finished call, or _Failed with its status and trailers."""
    fields = dict(headers)
    http_status = int(fields.get(b":status", b"0") or 0)
    if http_status != 200:
        code = _UNAVAILABLE if http_status in _HTTP_UNAVAILABLE else _HTTP_STATUS.get(http_status, _UNKNOWN)
        raise _Failed(code, f"HTTP status {http_status}")
    status = fields.get(b"grpc-status")
    if status is None:
        raise _Failed(_UNKNOWN, "the server's answer had no grpc-status")
    if status != b"0":
        trailers: list[tuple[str, object]] = []
        for key, value in headers:
            name = key.decode("ascii", "replace")
            if not name.endswith("-bin"):
                trailers.append((name, value.decode("utf-8", "replace")))
            elif (decoded := _binary_value(value)) is not None:
                trailers.append((name, decoded))
        details = unquote(fields.get(b"grpc-message", b"").decode("utf-8", "replace"))
        code = int(status) if status.isdigit() else _UNKNOWN
        raise _Failed(code, details, trailers)
    if len(body) < 5:
        raise _Failed(_INTERNAL, "the server's answer had no message")
    compressed, size = struct.unpack(">?I", body[:5])
    if compressed:
        raise _Failed(_INTERNAL, "the server compressed its answer, which this client did not ask for")
    if size != len(body) - 5:
        raise _Failed(_INTERNAL, "the server's answer is not one whole message")
    return body[5:]


class LiteClient:
    """A client of the daemon on a unix socket whose handshake and search need no grpcio (see the
    module's docstring). Thread-safe (one call at a time); close it when done."""

    def __init__(self, socket_path: str | os.PathLike[str], *, timeout: float | None = DEFAULT_TIMEOUT_S) -> None:
        """No call is made yet: `server_info()` is the first. Raises ConfigError for a socket path the
        OS cannot use."""
        self.target = unix_target(socket_path)
        self._path = self.target.removeprefix("unix:")
        self._timeout = timeout
        self._lock = threading.Lock()
        self._connection: _Connection | None = None
        self._full: LgrepClient | None = None
        self._closed = False
        self._metadata = ((grpc_common.CLIENT_ID_KEY.encode("ascii"), str(os.getpid()).encode("ascii")),)

    @classmethod
    def connect(cls, socket_path: str | os.PathLike[str], *, timeout: float | None = DEFAULT_TIMEOUT_S) -> LiteClient:
        """As lgrep_core.rpc.client.LgrepClient.connect, for a unix socket."""
        return cls(socket_path, timeout=timeout)

    @property
    def timeout(self) -> float | None:
        """Each call's deadline in seconds (None: none); also the gRPC client's, once it is made."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._timeout = value
        if self._full is not None:
            self._full.timeout = value

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the connection (and the gRPC client's channel); later calls raise LgrepError."""
        self._closed = True
        if self._connection is not None:
            self._connection.close()
        if self._full is not None:
            self._full.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LiteClient({self.target!r})"

    def wait_ready(self, timeout: float) -> bool:
        """Wait until a server listens on the socket (a daemon just started); False when none does
        within `timeout` seconds. No call is made."""
        self._open()
        deadline = time.monotonic() + timeout
        while True:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self._path)
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
            finally:
                probe.close()
            time.sleep(0.05)

    def grpc_client(self) -> LgrepClient:
        """The gRPC client on the same socket, for the one stream, IndexProject (made, and grpc
        imported, on first use)."""
        self._open()
        if self._full is None:
            from lgrep_core.rpc.client import LgrepClient

            self._full = LgrepClient.connect(socket_path=self._path, timeout=self._timeout)
        return self._full

    # ------------------------------------------------------------------ plumbing

    def _open(self) -> None:
        if self._closed:
            raise LgrepError(f"this client of the lgrep server at {self.target} is closed")

    def _call(self, path: str, request: bytes) -> bytes:
        self._open()
        with self._lock:
            try:
                if self._connection is None or not self._connection.reusable():
                    timeout = self._timeout
                    self._connection = _Connection(self._path, None if timeout is None else time.monotonic() + timeout)
                return self._connection.call(path, request, self._metadata, self._timeout)
            except _Failed as failed:
                raise error_from_status(failed.code, failed.details, failed.trailers, target=self.target) from None

    # ------------------------------------------------------------------ the light calls

    def server_info(self, *, check_contract: bool = True) -> ServerInfo:
        """Who is answering; as lgrep_core.rpc.client.LgrepClient.server_info (ContractMismatchError when
        the server speaks another revision of the contract)."""
        from lgrep.v1 import server_pb2

        from lgrep_core.rpc import wire

        answer = self._call(_SERVER_INFO_PATH, server_pb2.GetServerInfoRequest().SerializeToString())
        info = wire.server_info_from_proto(server_pb2.GetServerInfoResponse.FromString(answer))
        if check_contract and info.contract_revision != wire.CONTRACT_REVISION:
            raise ContractMismatchError(
                grpc_common.contract_mismatch_message(info, self.target, wire.CONTRACT_REVISION)
            )
        return info

    def call(self, request: Request[A]) -> A:
        """The answer to one request (lgrep_core.domain.engine.Engine.call), as a unary call over h2 on the
        route lgrep_core.rpc.wire.ROUTES names; as lgrep_core.rpc.client.LgrepClient.call."""
        from lgrep_core.rpc import wire

        route = wire.ROUTES.get(type(request))
        if route is None:
            raise InvalidRequestError(f"{type(request).__name__} is not a use case of the lgrep server")
        request = anchored(request).validate()
        answer: A = route.answer(self._call(route.path, route.to_proto(request).SerializeToString()))
        grpc_common.check_files_answer(request, answer, lambda: self.server_info(check_contract=False), self.target)
        return answer

    # ------------------------------------------------------------------ through the gRPC client

    def index(self, request: IndexProjectRequest, *, timeout: float | None = None) -> IndexStream:
        """Index a project (a server stream: through the gRPC client); as LgrepClient.index."""
        return self.grpc_client().index(request, timeout=timeout)
