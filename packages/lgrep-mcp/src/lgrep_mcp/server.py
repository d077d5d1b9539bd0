"""lgrep's MCP server: the tools an agent calls, as a thin client of the lgrep daemon.

It imports no storage, model or index code (import-linter keeps it so): it starts in well under a
second, connects to the daemon on the first tool call (starting it when none runs, like the CLI)
and forwards each call over gRPC. Paths are checked against the allowed roots before anything is
sent (`roots.py`). Every failure reaches the agent as a tool error with lgrep's own message; logs go
to stderr, since a stdio server's stdout carries only protocol frames.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from lgrep_core.errors import LgrepError, NotFoundError, ServerUnavailableError
from lgrep_core.models import ContentType, IndexProgress, IndexSummary, SearchRequest, SearchType
from lgrep_core.serialize import search_hit_json
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from .roots import AllowedRoots

__all__ = ["build_server", "main"]

log = logging.getLogger("lgrep.mcp")

T = TypeVar("T")

INSTRUCTIONS = (
    "lgrep searches this project's code by meaning and by name. Use lgrep_search for questions "
    "('where do we verify JWTs?'), lgrep_find_symbol for a name you know (typos are fine), "
    "lgrep_get_file to read lines a result points at, lgrep_find_related for code like a given place. "
    "Results carry path, line range, symbol, a snippet and why they matched."
)

# The `path` argument of the tools that act on a whole project.
ProjectPath = Annotated[str | None, Field(description="The project folder (default: this project)")]

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITES_INDEX = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class DaemonLink:
    """One connection to the daemon, made on first use and made again if the daemon went away."""

    def __init__(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()

    def call(self, fn: Callable[[Any], T]) -> T:
        try:
            return fn(self._connected())
        except ServerUnavailableError:
            self.reset()  # the daemon stopped (or was restarted): one more try starts or finds it
            return fn(self._connected())

    def _connected(self) -> Any:
        with self._lock:
            if self._client is None:
                from lgrep_core.daemon_client import connect_daemon
                from lgrep_core.endpoints import client_settings

                cs = client_settings()
                client = connect_daemon(cs, start=True)
                if client is None:
                    raise ServerUnavailableError(
                        f"the lgrep daemon is not running and could not be started (see {cs.cache_dir / 'serve.log'}; "
                        "`lgrep serve` starts it by hand)"
                    )
                self._client = client
            return self._client

    def reset(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client = None


def _plain(value: Any) -> Any:
    """A models.py value as JSON: dataclasses as objects, enums by value, datetimes in ISO 8601."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """lgrep's errors reach the agent as tool errors with their own message (never a traceback)."""

    def wrapped(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except LgrepError as exc:
            raise ToolError(exc.message) from None

    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    wrapped.__annotations__ = fn.__annotations__
    wrapped.__wrapped__ = fn  # type: ignore[attr-defined]  # keeps the signature for the input schema
    return wrapped


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def build_server(roots: AllowedRoots, link: DaemonLink | None = None) -> MCPServer:
    """The MCP server with lgrep's tools, for the project `roots.default` (and the other roots)."""
    link = link or DaemonLink()
    server = MCPServer("lgrep", instructions=INSTRUCTIONS)

    def build_index(project: Path, ctx: Context | None, *, force: bool = False) -> IndexSummary:
        """Index `project` until it is searchable by BM25 (vectors follow in the daemon), reporting
        progress to the client. The indexer finishes an interrupted first index and rebuilds one an
        older lgrep wrote."""

        def run(client: Any) -> IndexSummary:
            summary = None
            for event in client.index(project, force=force, wait_vectors=False):
                if isinstance(event, IndexSummary):
                    summary = event
                elif isinstance(event, IndexProgress) and ctx is not None and event.files_total:
                    _progress(ctx, event)
            if summary is None:  # the client raises when the stream ends without one
                raise LgrepError(f"indexing {project} ended without a summary")
            return summary

        return link.call(run)

    def locate(path: str) -> tuple[Path, str]:
        """(project root, project-relative path) of a file an agent names, inside an allowed root."""
        target = roots.resolve(path)
        project = roots.root_of(target)
        return project, target.relative_to(project).as_posix()

    def scope(path: str | None) -> tuple[Path, str | None]:
        """(project root, path filter) for a search's `path`: a folder or file in an allowed root,
        or a glob inside the default project."""
        if not path or not path.strip():
            return roots.default, None
        if _is_glob(path):
            if ".." in Path(path).parts or Path(path).is_absolute():
                raise ToolError(f"{path}: a glob must stay inside the project (no '..', not absolute)")
            return roots.default, path
        target = roots.resolve(path)
        project = roots.root_of(target)
        rel = target.relative_to(project).as_posix()
        return project, (None if rel == "." else rel)

    @server.tool(annotations=_READ_ONLY, structured_output=True)
    @_tool_errors
    def lgrep_search(
        query: Annotated[
            str, Field(description="What to find, in words or names: 'where are JWTs verified', 'parseConfig'")
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="Results to return")] = 10,
        search_type: Annotated[
            Literal["hybrid", "vector", "bm25", "fuzzy"],
            Field(description="hybrid (default) combines meaning, words and names"),
        ] = "hybrid",
        path: Annotated[
            str | None, Field(description="Only under this folder or file, or matching this glob (src/auth, **/*.py)")
        ] = None,
        language: Annotated[str | None, Field(description="Only this language (python, go, typescript, ...)")] = None,
        content: Annotated[
            Literal["code", "docs", "config", "text"] | None, Field(description="Only this kind of file")
        ] = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search the project's code by meaning and by name. Each result has the file, the line
        range, the symbol, a snippet, a score and why it matched; `stale_files` lists result files
        that changed since they were indexed (re-read them with lgrep_get_file)."""
        project, path_glob = scope(path)
        request = SearchRequest(
            query,
            project_root=str(project),
            limit=limit,
            search_type=SearchType(search_type),
            path_glob=path_glob,
            languages=(language,) if language else (),
            content_types=(ContentType(content),) if content else (),
        )
        note = ""
        try:
            response = link.call(lambda c: c.search(request))
        except NotFoundError:
            # No index yet (or an interrupted or outdated one): build it up to BM25 search, which the
            # daemon does once however many agents ask, then answer; vectors are filled in behind.
            summary = build_index(project, ctx)
            note = f"indexed {project} first ({summary.files_seen} files, {summary.chunks_total} chunks); "
            response = link.call(lambda c: c.search(request))
        results = []
        for hit in response.results:
            item = search_hit_json(hit)
            item["why"] = list(hit.why)
            results.append(item)
        stale = sorted({h.path for h in response.results if h.stale})
        answer: dict[str, Any] = {"project": str(project), "results": results, "stale_files": stale}
        if response.vectors_pending:
            note += (
                f"{response.vectors_pending} chunks are still waiting for their vectors: results lean on words "
                "and names until they are in"
            )
        if note:
            answer["note"] = note.rstrip("; ")
        return answer

    @server.tool(annotations=_WRITES_INDEX, structured_output=True)
    @_tool_errors
    def lgrep_index(
        path: ProjectPath = None,
        force: Annotated[bool, Field(description="Rebuild the index from scratch")] = False,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Index a project, or bring its index up to date (only changed files are redone). Returns
        once the project is searchable by words and names; vectors are filled in behind it."""
        return _plain(build_index(roots.project(path), ctx, force=force))

    @server.tool(annotations=_READ_ONLY, structured_output=True)
    @_tool_errors
    def lgrep_status(
        path: ProjectPath = None,
    ) -> dict[str, Any]:
        """Where the project's index stands: files, chunks, vectors still pending, model, when it
        was last indexed, whether it is watched, and which files changed since (stale)."""
        project = roots.project(path)
        return _plain(link.call(lambda c: c.status(project)))

    @server.tool(annotations=_WRITES_INDEX, structured_output=True)
    @_tool_errors
    def lgrep_watch_start(
        path: ProjectPath = None,
    ) -> dict[str, Any]:
        """Keep the project's index fresh as files change (a saved file is searchable within ~2 s)."""
        project = roots.project(path)
        return _plain(link.call(lambda c: c.watch(project)))

    @server.tool(annotations=_WRITES_INDEX, structured_output=True)
    @_tool_errors
    def lgrep_watch_stop(
        path: ProjectPath = None,
    ) -> dict[str, Any]:
        """Stop keeping the project's index fresh."""
        project = roots.project(path)
        return {"project": str(project), "was_watched": link.call(lambda c: c.unwatch(project))}

    @server.tool(annotations=_READ_ONLY, structured_output=True)
    @_tool_errors
    def lgrep_get_file(
        path: Annotated[str, Field(description="A file of the project (relative to it, or absolute inside it)")],
        start_line: Annotated[int, Field(ge=0, description="First line, 1-based (0: from the start)")] = 0,
        end_line: Annotated[int, Field(ge=0, description="Last line, inclusive (0: to the end)")] = 0,
    ) -> dict[str, Any]:
        """Lines of an indexed file as it is on disk now (secrets redacted as in the index)."""
        project, rel = locate(path)
        return _plain(link.call(lambda c: c.get_file(project, rel, start_line, end_line)))

    @server.tool(annotations=_READ_ONLY, structured_output=True)
    @_tool_errors
    def lgrep_find_symbol(
        name: Annotated[str, Field(description="A name, typos allowed: getUserById, Auth.verify")],
        kind: Annotated[str | None, Field(description="Only this kind: function, method, class, ...")] = None,
        path: ProjectPath = None,
    ) -> dict[str, Any]:
        """Where a symbol is defined: exact names first, then typo-tolerant and partial matches."""
        from lgrep_core.models import ChunkKind

        project = roots.project(path)
        try:
            kinds = (ChunkKind(kind),) if kind else ()
        except ValueError:
            raise ToolError(f"unknown kind {kind!r}; one of {', '.join(k.value for k in ChunkKind)}") from None
        matches = link.call(lambda c: c.find_symbol(project, name, kinds=kinds))
        return {"project": str(project), "matches": _plain(matches)}

    @server.tool(annotations=_READ_ONLY, structured_output=True)
    @_tool_errors
    def lgrep_find_related(
        path: Annotated[str, Field(description="A file of the project")],
        line: Annotated[int, Field(ge=1, description="A line in it, 1-based")],
        limit: Annotated[int, Field(ge=1, le=50, description="Results to return")] = 10,
    ) -> dict[str, Any]:
        """Code related to a place: the chunks nearest by meaning to the one spanning `line`."""
        project, rel = locate(path)
        related = link.call(lambda c: c.find_related(project, rel, line, limit=limit))
        return {
            "project": str(project),
            "anchor": _plain(related.anchor),
            "related": [search_hit_json(h) for h in related.related],
        }

    # ------------------------------------------------------------------------------ resources

    @server.resource("lgrep://status", mime_type="application/json", description="This project's index status")
    def status_resource() -> str:
        try:
            status = _plain(link.call(lambda c: c.status(roots.default)))
        except LgrepError as exc:  # no index yet: say so, and what to run
            status = {"project_root": str(roots.default), "state": "absent", "detail": exc.message}
        return json.dumps(status, indent=1)

    @server.resource(
        "lgrep://config", mime_type="application/json", description="Effective settings, each with where it came from"
    )
    def config_resource() -> str:
        from lgrep_core.config import load_settings

        try:
            loaded = load_settings(roots.default)
        except LgrepError as exc:
            return json.dumps({"error": exc.message})
        return json.dumps(
            {key: {"value": value, "source": source} for key, value, source in loaded.effective()}, indent=1
        )

    # -------------------------------------------------------------------------------- prompts

    @server.prompt(description="Review a file with lgrep's tools: read it, then what it calls and what resembles it")
    def code_review(path: str) -> str:
        return (
            f"Review {path} of this project. Read it with lgrep_get_file. For each function it defines, "
            "use lgrep_find_symbol on the names it calls that you do not know, and lgrep_find_related on "
            "its definition lines to find code that does the same thing elsewhere (duplication, a helper "
            "it should use, a convention it breaks). Report concrete problems with file and line."
        )

    @server.prompt(description="Explain how this codebase is organised, found with lgrep's tools")
    def explain_codebase() -> str:
        return (
            "Explain how this project is organised. Start with lgrep_status (size, languages). Then use "
            "lgrep_search for its entry points ('main entry point', 'command line parsing'), how it is "
            "configured ('load configuration'), its storage and its external interfaces; read the best "
            "results with lgrep_get_file. Describe the main parts, how data flows between them, and "
            "where to start reading, citing files and line ranges."
        )

    @server.prompt(description="Find code similar to a place in the project")
    def find_similar(path: str, line: int) -> str:
        return (
            f"Find code similar to {path} line {line}. Call lgrep_find_related with that path and line, "
            "then read the closest results with lgrep_get_file and say how each one differs (a copy to "
            "merge, a variant with a reason, or unrelated despite the score)."
        )

    return server


def _progress(ctx: Context, event: IndexProgress) -> None:
    import anyio.from_thread

    phase = event.phase.value if event.phase is not None else "working"
    done, total = (
        (event.chunks_done, event.chunks_total) if event.chunks_total else (event.files_done, event.files_total)
    )
    try:
        anyio.from_thread.run(lambda: ctx.report_progress(done, total or None, f"{phase}: {done}/{total}"))
    except Exception:  # progress is a courtesy: a client that went away must not fail the index
        log.debug("progress notification failed", exc_info=True)


def main(argv: Sequence[str] | None = None) -> int:
    """`lgrep-mcp [--root DIR]... [--http PORT] [PROJECT]`: stdio by default."""
    parser = argparse.ArgumentParser(prog="lgrep-mcp", description="lgrep's MCP server (stdio unless --http)")
    parser.add_argument("project", nargs="?", default=".", help="the project it serves (default: the current folder)")
    parser.add_argument("--root", action="append", default=[], help="another folder its tools may read (repeatable)")
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="lgrep-mcp: %(message)s")
    project = Path(args.project).expanduser()
    if not project.is_dir():
        print(f"lgrep-mcp: {args.project} is not a folder", file=sys.stderr)
        return 2
    server = build_server(AllowedRoots(project, [Path(r) for r in args.root]))
    if args.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
