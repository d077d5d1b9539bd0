"""A typed Python client of a running lgrep server (`lgrep serve`): domain types in, domain types out.

    from lgrep_core.rpc.client import LgrepClient
    from lgrep_core.domain.models import GetFileRequest, SearchRequest

    with LgrepClient.connect(socket_path="~/.cache/lgrep/lgrep.sock") as client:
        client.server_info()  # the handshake: refuses a server of another contract revision
        response = client.call(SearchRequest(query="where are tokens verified?", project_root="."))
        piece = client.call(GetFileRequest(".", "src/auth.py", 10, 40))  # every use case: one request type

Every failed call raises an LgrepError whose message a CLI can print as it is: the error the server
raised (same class, same message), or ServerUnavailableError, DeadlineExceededError,
AuthenticationError, ContractMismatchError. Relative project roots and paths are resolved here, in
the client's working directory, before they are sent.

It imports grpc, protobuf and lgrep_core's wire code only, no numpy, LanceDB, pyarrow or model
runtime, so that a CLI call or an MCP server starts in a few tens of milliseconds (import-linter
and tests/contract/test_client.py keep it so).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc
from lgrep.v1 import index_pb2_grpc, server_pb2, server_pb2_grpc

from lgrep_core.domain.engine import anchored
from lgrep_core.domain.errors import ConfigError, ContractMismatchError, InvalidRequestError, LgrepError
from lgrep_core.domain.models import (
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    Request,
    ServerInfo,
)
from lgrep_core.rpc import grpc_common, grpc_support, grpc_tokens, wire

__all__ = ["DEFAULT_TIMEOUT_S", "IndexStream", "LgrepClient"]

A = TypeVar("A")

DEFAULT_TIMEOUT_S = 30.0
"""Deadline of each call but IndexProject (whose stream lasts as long as the run)."""


class LgrepClient:
    """One channel to one lgrep server. Thread-safe (gRPC channels are); close it when done."""

    def __init__(
        self,
        channel: grpc.Channel,
        *,
        target: str,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        token: str | None = None,
    ) -> None:
        """Wrap a channel made elsewhere (custom options); most callers use `connect`. With a `token`,
        every call carries it. `target` names the server in error messages."""
        self.target = target
        self.timeout = timeout
        self._channel = channel
        self._closed = False
        # Every call names this process, so the server's stream allowance is this process's own
        # (lgrep_core.rpc.grpc_interceptors.StreamLimitInterceptor), and carries the token when there is one.
        metadata = [(grpc_support.CLIENT_ID_KEY, str(os.getpid()))]
        if token is not None:
            metadata += grpc_tokens.bearer_metadata(token)
        self._calls = grpc.intercept_channel(channel, grpc_support.CallMetadataInterceptor(metadata))
        self._server = server_pb2_grpc.ServerServiceStub(self._calls)
        self._index = index_pb2_grpc.IndexServiceStub(self._calls)
        self._methods: dict[str, Any] = {}

    @classmethod
    def connect(
        cls,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        token: str | None = None,
        token_file: str | os.PathLike[str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
    ) -> LgrepClient:
        """A client of the server on a unix socket (`socket_path`), or on loopback TCP (`port`, with
        the server's `token` or the `token_file` it wrote). No call is made yet: `server_info()`
        is the first, and says whether a server answers and whether it speaks this contract.

        Raises ConfigError for an unusable endpoint (both or neither given, a socket path too long
        for the OS, a host that is not loopback, TCP without a token, a token file that is not
        private).
        """
        if (socket_path is None) == (port is None):
            raise ConfigError("connect to an lgrep server through either socket_path or port (with a token)")
        if token is None and token_file is not None:
            token = grpc_tokens.read_token_file(token_file)
        if socket_path is not None:
            target = grpc_support.unix_target(socket_path)
        else:
            assert port is not None
            target = grpc_support.tcp_target(port, host)
            if token is None:
                raise ConfigError(
                    f"the lgrep server at {target} needs its token over TCP: pass token= or token_file= "
                    "(or connect through its unix socket)"
                )
        if token is not None:
            grpc_tokens.bearer_metadata(token)  # a malformed token is a ConfigError now, not at the first call
        channel = grpc.insecure_channel(target, options=grpc_support.channel_options())
        return cls(channel, target=target, timeout=timeout, token=token)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the channel; calls in flight are cancelled, later calls raise LgrepError."""
        self._closed = True
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LgrepClient({self.target!r})"

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the channel connects to a listening server (a daemon just started); False
        when none listens within `timeout` seconds. No call is made."""
        self._open()
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ plumbing

    def _open(self) -> None:
        if self._closed:
            raise LgrepError(f"this client of the lgrep server at {self.target} is closed")

    def _call(self, method: Any, request: Any, timeout: float | None = None) -> Any:
        self._open()
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as exc:
            raise grpc_support.error_from_rpc(exc, target=self.target) from exc

    # ------------------------------------------------------------------ ServerService

    def server_info(self, *, check_contract: bool = True) -> ServerInfo:
        """Who is answering. With `check_contract` (the default), raises ContractMismatchError when the
        server speaks another revision of the lgrep.v1 contract than this client, saying which side is
        older and what to do."""
        info = wire.server_info_from_proto(self._call(self._server.GetServerInfo, server_pb2.GetServerInfoRequest()))
        if check_contract and info.contract_revision != wire.CONTRACT_REVISION:
            raise ContractMismatchError(
                grpc_common.contract_mismatch_message(info, self.target, wire.CONTRACT_REVISION)
            )
        return info

    # ------------------------------------------------------------------ lgrep_core.domain.engine.Engine

    def call(self, request: Request[A]) -> A:
        """The answer to one request (lgrep_core.rpc.wire.ROUTES names its RPC). Its relative (or `~`)
        project root and paths are resolved here first (lgrep_core.domain.engine.anchored)."""
        route = wire.ROUTES.get(type(request))
        if route is None:
            raise InvalidRequestError(f"{type(request).__name__} is not a use case of the lgrep server")
        request = anchored(request).validate()
        answer: A = route.answer(self._call(self._unary(route.path), route.to_proto(request).SerializeToString()))
        grpc_common.check_files_answer(request, answer, lambda: self.server_info(check_contract=False), self.target)
        return answer

    def _unary(self, path: str) -> Any:
        method = self._methods.get(path)
        if method is None:
            # Bytes in, bytes out: the route's own messages serialize and parse.
            method = self._methods[path] = self._calls.unary_unary(path)
        return method

    def index(self, request: IndexProjectRequest, *, timeout: float | None = None) -> IndexStream:
        """Index a project: yields progress events, then the summary, last. The run starts at once;
        stopping the iteration early, closing the iterator or calling its `cancel()` (from any
        thread) ends the call; the server's run goes on for anyone else who asked for it. `timeout`
        bounds the call (default: none, a first index of a large repository takes minutes): past
        it, iterating raises DeadlineExceededError and the run goes on in the server.

        Raises LgrepError (IndexBusyError, NotFoundError, ...) while iterating, and LgrepError if the
        stream ends without its summary."""
        request = anchored(request).validate()
        self._open()
        try:
            call = self._index.IndexProject(wire.index_project_request_to_proto(request), timeout=timeout)
        except grpc.RpcError as exc:
            raise grpc_support.error_from_rpc(exc, target=self.target) from exc
        return IndexStream(call, self._index_events(call, request.project_root))

    def _index_events(self, call: Any, root: str) -> Iterator[IndexProgress | IndexSummary]:
        summary = False
        try:
            for message in call:
                event = wire.index_event_from_proto(message)
                if event is None:
                    continue  # an event a newer server sends that this client does not know
                summary = isinstance(event, IndexSummary)
                yield event
        except grpc.RpcError as exc:
            raise grpc_support.error_from_rpc(exc, target=self.target) from exc
        finally:
            call.cancel()  # nothing to do after a finished stream; stops the run if the caller stopped early
        if not summary:
            raise LgrepError(f"the lgrep server at {self.target} ended indexing {root} without its summary")


class IndexStream(Iterator[IndexProgress | IndexSummary]):
    """The events of one IndexProject call (LgrepClient.index). `cancel()` may be called from any
    thread, while another iterates: that iteration then ends with the call's cancellation."""

    def __init__(self, call: Any, events: Iterator[IndexProgress | IndexSummary]) -> None:
        self._call = call
        self._events = events

    def __next__(self) -> IndexProgress | IndexSummary:
        return next(self._events)

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if close is not None:
            close()

    def cancel(self) -> None:
        self._call.cancel()
