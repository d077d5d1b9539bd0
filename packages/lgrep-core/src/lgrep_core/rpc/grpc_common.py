"""What lgrep's two client transports share, written once and free of `import grpc`: the gRPC client
(lgrep_core.rpc.client, over grpcio) and the CLI's light client (lgrep_core.rpc.lite_client, gRPC's wire
protocol over HTTP/2 with h2, ADR 0027) must raise the same LgrepError for the same failure and
check the same things, so both call these.

- `error_from_status`: the LgrepError behind a failed call, from its status code (a number), its
  message and its trailing metadata (the server's `lgrep.v1.ErrorDetail` in `lgrep-error-bin`).
- Endpoints and limits: `unix_target`, `MAX_UNIX_SOCKET_PATH_BYTES`, `MAX_MESSAGE_BYTES`,
  `CLIENT_ID_KEY` (re-exported by lgrep_core.rpc.grpc_support, where servers find them).
- Client checks: `resolve_root`, `contract_mismatch_message`, `no_files_message`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from lgrep_core.domain import errors

if TYPE_CHECKING:
    from lgrep_core.domain.models import ServerInfo

__all__ = [
    "CLIENT_ID_KEY",
    "FILES_REVISION",
    "MAX_MESSAGE_BYTES",
    "MAX_UNIX_SOCKET_PATH_BYTES",
    "STATUS_NAMES",
    "contract_mismatch_message",
    "error_from_status",
    "no_files_message",
    "resolve_root",
    "unix_target",
]

CLIENT_ID_KEY = "lgrep-client-id"
"""Metadata key naming the calling client for the per-client stream allowance (`StreamLimitInterceptor`).
lgrep's own client sends its process id; a caller that sends none is known by its gRPC peer, which on a
unix socket is the same for every caller (all such callers share one allowance)."""

MAX_UNIX_SOCKET_PATH_BYTES = 103 if sys.platform == "darwin" else 107
"""The longest unix socket path the OS accepts (sun_path is 104 bytes on macOS, 108 on Linux, with a NUL)."""

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""Largest message either side sends or accepts: a whole source file (GetFile) or a search with long
snippets fits many times over; gRPC's default of 4 MiB could refuse a large file read."""

FILES_REVISION = 8
"""The contract revision that brought files answers (SearchRequest.files); an older server ignores the field."""

STATUS_NAMES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
"""gRPC's status codes by number (grpc.StatusCode.X.value[0] is X's index here)."""


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


# --- errors ----------------------------------------------------------------------------------------


def _error_detail(metadata: Iterable[tuple[str, object]] | None) -> errors.LgrepError | None:
    from google.protobuf.message import DecodeError
    from lgrep.v1 import common_pb2

    from lgrep_core.rpc import wire

    for key, value in metadata or ():
        if key == wire.ERROR_METADATA_KEY and isinstance(value, bytes):
            try:
                return wire.error_from_proto(common_pb2.ErrorDetail.FromString(value))
            except DecodeError:
                return None
    return None


def error_from_status(
    code: int | None,
    details: str,
    trailing_metadata: Iterable[tuple[str, object]] | None = None,
    *,
    target: str | None = None,
) -> errors.LgrepError:
    """The LgrepError behind a failed call, for a client to raise or print.

    The server's ErrorDetail (in `trailing_metadata`, `lgrep-error-bin` decoded to bytes), when it
    sent one, gives back the very class and message it raised. Otherwise the status `code` (gRPC's
    number; None when there was none) decides: a server that cannot be reached, a deadline, a refused
    token and the other codes each become an error whose message says what happened and what to do.
    `target` (the address called) makes those messages name the server.
    """
    raised = _error_detail(trailing_metadata)
    if raised is not None:
        return raised
    name = STATUS_NAMES[code] if code is not None and 0 <= code < len(STATUS_NAMES) else None
    where = f" at {target}" if target else ""
    if name == "UNAVAILABLE":
        return errors.ServerUnavailableError(
            f"cannot reach the lgrep server{where} ({details or 'unavailable'}): is `lgrep serve` running?"
        )
    if name == "DEADLINE_EXCEEDED":
        return errors.DeadlineExceededError(
            f"the lgrep server{where} did not answer in time: it may be busy (indexing, loading a model); "
            "try again, or give the call a longer timeout"
        )
    if name == "UNAUTHENTICATED":
        return errors.AuthenticationError(
            details or f"the lgrep server{where} refused the call: calls over TCP need its token"
        )
    if name == "INVALID_ARGUMENT":
        return errors.InvalidRequestError(details or "the server rejected the request as malformed")
    if name == "NOT_FOUND":
        return errors.NotFoundError(details or "not found")
    if name == "UNIMPLEMENTED":
        return errors.LgrepError(
            f"the lgrep server{where} does not offer this call ({details or 'unimplemented'}): it hosts "
            "other lgrep services, or it is another version of lgrep (see its `lgrep serve --version`)"
        )
    if name == "CANCELLED":
        return errors.LgrepError(f"the call to the lgrep server{where} was cancelled")
    if name == "RESOURCE_EXHAUSTED":
        return errors.LgrepError(f"the lgrep server{where} refused the call: {details or 'resources exhausted'}")
    return errors.LgrepError(f"the lgrep server{where} failed ({name or 'no status'}): {details or 'no details'}")


# --- what every client checks ----------------------------------------------------------------------


def resolve_root(project_root: str | os.PathLike[str]) -> str:
    """A project root as sent to the server: absolute, `~` expanded, resolved in this process's
    working directory. Raises InvalidRequestError for an empty one."""
    if not os.fspath(project_root):
        raise errors.InvalidRequestError("project_root is empty: name the project's root directory")
    return str(Path(project_root).expanduser().resolve())


def _client_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lgrep-core")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "unknown"


def _server(info: ServerInfo, target: str) -> str:
    return f"the lgrep server at {target} (lgrep {info.version or 'unknown'}, pid {info.pid})"


def contract_mismatch_message(info: ServerInfo, target: str, revision: int) -> str:
    """What a client of contract `revision` says of a server of another one: which side is older,
    and what to do."""
    server = _server(info, target)
    ours = f"this client (lgrep {_client_version()}) speaks revision {revision}"
    if info.contract_revision <= 0:
        return f"{server} did not report a contract revision; {ours}: is it an lgrep server of this kind?"
    if info.contract_revision < revision:
        return (
            f"{server} speaks contract revision {info.contract_revision}, {ours}: the server is older. "
            "Stop it and start it again from this version (`lgrep serve`)"
        )
    return (
        f"{server} speaks contract revision {info.contract_revision}, {ours}: the server is newer. "
        "Upgrade lgrep where this client runs, or run the server of this version"
    )


def check_files_answer(request: object, answer: object, server_info: Callable[[], ServerInfo], target: str) -> None:
    """Raise ContractMismatchError when a files search was answered with chunks: only a server that
    does not know `files` (before revision 8) does that."""
    from lgrep_core.domain.models import SearchRequest, SearchResponse

    chunks_for_files = (
        isinstance(request, SearchRequest)
        and isinstance(answer, SearchResponse)
        and request.files
        and not answer.files
        and answer.results
    )
    if chunks_for_files:
        raise errors.ContractMismatchError(no_files_message(server_info(), target))


def no_files_message(info: ServerInfo, target: str) -> str:
    """What a client says of a server that answered a files search with chunks (one before revision 8)."""
    return (
        f"{_server(info, target)} answered a files search with chunks: it speaks contract revision "
        f"{info.contract_revision}, and files answers need revision {FILES_REVISION} or later. Stop it and "
        "start it again from this version (`lgrep serve`)"
    )
