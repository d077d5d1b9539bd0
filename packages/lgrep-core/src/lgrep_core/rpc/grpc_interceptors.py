"""What every lgrep server does around each handler: its interceptors.

- Errors: `ErrorInterceptor` ends a call whose handler raised an LgrepError with that error's status
  code, message and ErrorDetail (`abort_with_error`, which a handler may also call itself); any other
  exception is logged and ends the call as INTERNAL.
- Auth: unix-socket peers are trusted (the socket is 0600: only its owner can connect); TCP peers must
  send the bearer token of `lgrep_core.rpc.grpc_tokens` (`TokenAuthInterceptor`).
- Streams: `StreamLimitInterceptor` bounds the streaming calls that run at once, in all and per client.
"""

from __future__ import annotations

import collections
import contextlib
import hmac
import logging
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import grpc

from lgrep_core.domain import errors
from lgrep_core.rpc.grpc_support import CLIENT_ID_KEY, error_trailing_metadata, status_code_for
from lgrep_core.rpc.grpc_tokens import AUTHORIZATION_KEY, check_token

__all__ = [
    "ErrorInterceptor",
    "StreamLimitInterceptor",
    "TokenAuthInterceptor",
    "abort_with_error",
    "is_trusted_peer",
]

log = logging.getLogger(__name__)


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


class _WrappingInterceptor(grpc.ServerInterceptor):
    """Every handler of the service rebuilt around `self._wrap` (set by the subclass)."""

    _wrap: Any

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        return None if handler is None else _rebuild(handler, self._wrap)


class ErrorInterceptor(_WrappingInterceptor):
    """Sync servers: an LgrepError raised by a handler ends the call with its status code, message and
    ErrorDetail; any other exception is logged (with its traceback, on the server) and ends the call
    as INTERNAL with a one-line message. Handlers then simply raise."""

    def __init__(self) -> None:
        self._wrap = _sync_wrapper(None, translate=True)


# --- streams -------------------------------------------------------------------------------------


class StreamLimitInterceptor(grpc.ServerInterceptor):
    """Sync servers: a streaming call (health Watch, IndexProject waiting for vectors, reflection)
    holds a worker thread for as long as it lasts, so enough of them would leave no worker for
    anyone's short calls. This bounds the streams that run at once, to `total` and to `per_client`
    per client (`CLIENT_ID_KEY`), and ends any further one at once as RESOURCE_EXHAUSTED with a
    message saying why; unary calls are never refused here. Give the server `total` workers plus
    the ones kept for unary calls (lgrep_core.rpc.server)."""

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


def is_trusted_peer(peer: str) -> bool:
    """Whether a caller may skip the token: unix-socket peers ("unix:..."), whom the socket's 0600 mode
    already limits to its owner. Abstract unix sockets ("unix-abstract:") have no file mode: not trusted."""
    return peer.startswith("unix:")


def _authenticator(token: str, token_file: str | os.PathLike[str] | None) -> _Check:
    expected = check_token(token).encode("ascii")
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


class TokenAuthInterceptor(_WrappingInterceptor):
    """Sync servers: calls over TCP must carry `authorization: Bearer <token>`; unix-socket calls are
    trusted. Others end as UNAUTHENTICATED (with an ErrorDetail) before any handler runs.
    `token_file` only makes the refusal say where the token is. Put it first in the interceptor list."""

    def __init__(self, token: str, *, token_file: str | os.PathLike[str] | None = None) -> None:
        self._wrap = _sync_wrapper(_authenticator(token, token_file), translate=False)
