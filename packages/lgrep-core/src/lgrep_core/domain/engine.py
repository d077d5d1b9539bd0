"""What serves lgrep's use cases, as one interface: `Engine.call(request) -> answer`.

Each use case is a request type (lgrep_core.domain.models: `GetFileRequest` is a `Request[FileSlice]`), so
every engine is a table from request types to what answers them, and every wrapper forwards one value:

    engine.call(GetFileRequest(root, "src/auth.py", 10, 40))   # -> FileSlice
    engine.call(StatusRequest(root, brief=True))               # -> ProjectStatus

The engines: the daemon's gRPC client (lgrep_core.rpc.client.LgrepClient: a route per request type,
lgrep_core.rpc.wire.ROUTES), the CLI's light client (lgrep_core.rpc.lite_client: the same routes over h2),
the MCP server's reconnecting daemon engine (lgrep_mcp.daemon_engine), and the in-process engine
(lgrep_cli.local.LocalEngine: a table of handlers). Indexing is the one use case that streams
events, so it is `Engine.index`.

A request names paths as a user typed them; `anchored` makes its project root absolute (in this
process's working directory, `~` expanded) and a path inside it relative, once, before it is sent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from lgrep_core.domain.errors import InvalidRequestError
from lgrep_core.domain.models import IndexProgress, IndexProjectRequest, IndexSummary, Request

__all__ = ["Engine", "Handlers", "IndexRun", "anchored", "relative_path"]

A = TypeVar("A")
R = TypeVar("R", bound="Request[Any] | IndexProjectRequest")


class IndexRun(Protocol):
    """The events of one index run, the summary last; `cancel()` (from any thread) ends it for
    this caller: the run stops unless someone else waits for it."""

    def __iter__(self) -> Iterator[IndexProgress | IndexSummary]: ...
    def __next__(self) -> IndexProgress | IndexSummary: ...
    def cancel(self) -> None: ...


class Engine(Protocol):
    """What serves lgrep's use cases (see the module docstring). Paths in requests are absolute, or
    relative to the working directory; an engine anchors them (`anchored`) before it answers."""

    def call(self, request: Request[A]) -> A:
        """The answer to one request. Raises the LgrepError its use case raises; InvalidRequestError
        for a request type this engine does not serve."""
        ...

    def index(self, request: IndexProjectRequest, *, timeout: float | None = None) -> IndexRun:
        """Start indexing a project: its events, the summary last. Past `timeout`, iterating raises
        DeadlineExceededError (the run goes on)."""
        ...

    def close(self) -> None: ...


class Handlers:
    """A table from request types to the functions that answer them: an engine's `call`."""

    def __init__(self, table: Mapping[type[Request[Any]], Callable[[Any], Any]], *, engine: str) -> None:
        self._table = dict(table)
        self._engine = engine

    def __contains__(self, kind: type[Request[Any]]) -> bool:
        return kind in self._table

    def __call__(self, request: Request[A]) -> A:
        try:
            handler = self._table[type(request)]
        except KeyError:
            raise InvalidRequestError(f"{type(request).__name__} is not a use case {self._engine} serves") from None
        return handler(request)


def anchored(request: R) -> R:
    """`request` with its project root absolute (in this process's working directory, `~` expanded,
    symlinks resolved) and its `path`, when it has one, relative to that root.

    Raises InvalidRequestError for an empty root, or an absolute path outside the root."""
    if not is_dataclass(request):
        raise InvalidRequestError(f"{request!r} is not a request: pass one of lgrep_core.domain.models' request types")
    names = {f.name for f in fields(request)}
    if "project_root" not in names:
        return request
    given = os.fspath(request.project_root)  # pyright: ignore[reportAttributeAccessIssue]
    if not given:
        raise InvalidRequestError("project_root is empty: name the project's root directory")
    root = str(Path(given).expanduser().resolve())
    changes: dict[str, Any] = {"project_root": root}
    path = getattr(request, "path", "") if "path" in names else ""
    if path:
        changes["path"] = relative_path(root, path)
    return replace(request, **changes)  # pyright: ignore[reportArgumentType]


def relative_path(root: str, path: str | os.PathLike[str]) -> str:
    """A path relative to `root`, '/'-separated; an absolute path must lie inside the root."""
    given = Path(path).expanduser()
    if not given.is_absolute():
        return given.as_posix()
    try:
        return given.resolve().relative_to(root).as_posix()
    except ValueError:
        raise InvalidRequestError(f"{given} is not inside the project {root}") from None
