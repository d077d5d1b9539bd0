"""lgrep_trace, lgrep_find_symbol and lgrep_find_related: the code's structure, as call edges, symbol
definitions and code related to a place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from lgrep_core.app.serialize import location_json, symbol_match_json, trace_json
from lgrep_core.domain.models import FindRelatedRequest, FindSymbolRequest, TraceRequest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from lgrep_mcp.answers import RelatedAnswer, SymbolAnswer, TraceAnswer
from lgrep_mcp.app import Unit
from lgrep_mcp.budget import DEFAULT_MAX_TOKENS
from lgrep_mcp.shaping import tool_errors
from lgrep_mcp.tools.params import MaxTokens, ProjectPath

__all__ = ["StructureTools"]


class StructureTools(Unit):
    @tool_errors
    def lgrep_trace(
        self,
        symbol: Annotated[str, Field(description="A function, method or class: verify, Auth.verify")],
        direction: Annotated[
            Literal["both", "callers", "callees"], Field(description="Who calls it, what it calls, or both")
        ] = "both",
        depth: Annotated[int, Field(ge=1, le=3, description="Hops to follow (2: callers of callers)")] = 1,
        path: Annotated[
            str | None, Field(description="The file that defines it, when the name has several definitions")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Edges to return")] = 30,
        offset: Annotated[int, Field(ge=0, description="Skip this many edges (a previous answer's next_offset)")] = 0,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
    ) -> Annotated[CallToolResult, TraceAnswer]:
        """Callers and callees of a symbol, each edge with the call site (path, line), the calling
        definition and how it was resolved: import (through the file's imports), local (same file,
        class or package) or name (the name alone; a name with several definitions lists them as
        candidates and is not followed). A name defined in several places is listed, not guessed:
        ask again with `path`."""
        from lgrep_core.domain.models import TraceDirection

        if path:
            project, rel = self.app.locate(path)
        else:
            project, rel = self.app.default_project, ""
        result = self.app.engine.call(
            TraceRequest(
                str(project),
                symbol,
                path=rel,
                depth=depth,
                direction=TraceDirection(direction),
                limit=limit,
                offset=offset,
            )
        )
        data: dict[str, Any] = {**trace_json(result, root=str(project))}
        readable = self.app.readable(project)
        data["definitions"] = [d for d in data["definitions"] if readable(d["path"])]
        data["edges"] = [
            _brief_edge(e)
            for e in data["edges"]
            if readable(e["path"])
            and readable(e["caller"]["path"])
            and (e["callee"] is None or readable(e["callee"]["path"]))
        ]
        if result.next_offset:
            data["notes"] = [
                f"{result.total - result.next_offset} more edges: call again with offset={result.next_offset}"
            ]
        elif result.ambiguous:
            data["notes"] = ["several definitions: call again with path= the file of the one you mean"]
        return self.app.budgeted(
            TraceAnswer, data, "edges", max_tokens, snippet_field=None, receipt=project, sources=_trace_files
        )

    @tool_errors
    def lgrep_find_symbol(
        self,
        name: Annotated[str, Field(description="A name, typos allowed: getUserById, Auth.verify")],
        kind: Annotated[str | None, Field(description="Only this kind: function, method, class, ...")] = None,
        path: ProjectPath = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Matches to return")] = 20,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
    ) -> Annotated[CallToolResult, SymbolAnswer]:
        """Where a symbol is defined: exact names first, then typo-tolerant and partial matches,
        each with its file, lines, scope and signature."""
        from lgrep_core.domain.models import ChunkKind

        project, path_glob, _ = self.app.scope(path)
        try:
            kinds = (ChunkKind(kind),) if kind else ()
        except ValueError:
            raise ToolError(f"unknown kind {kind!r}; one of {', '.join(k.value for k in ChunkKind)}") from None
        matches = self.app.engine.call(FindSymbolRequest(str(project), name, limit, kinds, path_glob=path_glob))
        uri = self.app.file_uris(project)
        rows = [{**symbol_match_json(m), "uri": uri(m.location.path)} for m in matches]
        return self.app.budgeted(
            SymbolAnswer,
            {"project_root": str(project), "matches": rows},
            "matches",
            max_tokens,
            snippet_field=None,
            receipt=project,
        )

    @tool_errors
    def lgrep_find_related(
        self,
        path: Annotated[str, Field(description="A file of the project")],
        line: Annotated[int, Field(ge=1, description="A line in it, 1-based")],
        limit: Annotated[int, Field(ge=1, le=50, description="Results to return")] = 10,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
    ) -> Annotated[CallToolResult, RelatedAnswer]:
        """Code related to a place: the chunk spanning `line`, its callers and callees, and the
        chunks nearest in meaning or referencing the same names; each result's `match` says which."""
        project, rel = self.app.locate(path)
        related = self.app.engine.call(FindRelatedRequest(str(project), rel, line, limit))
        readable = self.app.readable(project)
        hits = self.app.hit_items([h for h in related.related if readable(h.path)], project)
        data = {"project_root": str(project), "anchor": location_json(related.anchor), "related": hits}
        return self.app.budgeted(RelatedAnswer, data, "related", max_tokens, receipt=project)


def _trace_files(data: dict[str, Any]) -> list[str]:
    """The files a trace answer points into: its definitions' and its call sites'."""
    return [d["path"] for d in data["definitions"]] + [e["path"] for e in data["edges"]]


# The fields of a trace edge's ends an agent needs to go there (answers.Place, answers.CallerPlace:
# the caller is in the call site's file).
PLACE = ("path", "start_line", "scope")
CALLER_PLACE = ("start_line", "scope")


def _place(loc: Mapping[str, Any] | None, fields: tuple[str, ...] = PLACE) -> dict[str, Any] | None:
    return None if loc is None else {k: loc[k] for k in fields}


def _brief_edge(edge: Mapping[str, Any]) -> dict[str, Any]:
    """A trace edge with its ends as places (where each definition starts and its qualified name);
    a resolved edge whose called name has other definitions counts them (`others`) instead of
    listing them again on every edge, an unresolved one lists up to five."""
    candidates = edge.get("candidates") or []
    out = {k: v for k, v in edge.items() if k != "candidates"}
    out.update(caller=_place(edge["caller"], CALLER_PLACE), callee=_place(edge["callee"]))
    if candidates and edge["callee"] is None:
        out["candidates"] = [_place(c) for c in candidates[:5]]
    elif candidates:
        out["others"] = len(candidates) - 1
    return out
