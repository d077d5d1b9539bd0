"""One JSON shape for search results, shared by every front end that prints or returns JSON: the
CLI's `--json` today, the MCP server's structured content next. The shape is the stable interface
the README documents: fields may be added, none removed or renamed.
"""

from __future__ import annotations

from typing import Any

from lgrep_core.models import (
    ComponentInfo,
    FileList,
    FileSlice,
    Location,
    RelatedResult,
    Release,
    SearchHit,
    SearchResponse,
    Skeleton,
    SymbolMatch,
    TraceEdge,
    TraceResult,
)

__all__ = [
    "component_json",
    "file_list_json",
    "file_slice_json",
    "location_json",
    "related_json",
    "release_json",
    "search_hit_json",
    "search_response_json",
    "skeleton_json",
    "symbol_match_json",
    "trace_edge_json",
    "trace_json",
]


def search_hit_json(hit: SearchHit, *, explain: bool = False) -> dict[str, Any]:
    """One result: where it is, what it is, how well and why it matched, and its snippet.
    `explain` adds the per-channel and per-signal numbers (`signals`) and the reasons in words (`why`)."""
    out: dict[str, Any] = {
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "symbol": hit.symbol,
        "kind": hit.kind.value if hit.kind is not None else "",
        "language": hit.language,
        "score": hit.score,
        "match": hit.match_label,
        "stale": hit.stale,
        "content": hit.content,
        "truncated": hit.truncated,
    }
    if explain:
        out["signals"] = dict(hit.scores)
        out["why"] = list(hit.why)
    return out


def search_response_json(response: SearchResponse, *, query: str, root: str, explain: bool = False) -> dict[str, Any]:
    """A whole answer: the query, the project root, the results, and how the search went."""
    return {
        "query": query,
        "root": root,
        "results": [search_hit_json(hit, explain=explain) for hit in response.results],
        "query_kind": response.query_kind,
        "search_type": response.search_type.value if response.search_type is not None else "",
        "timings_ms": dict(response.timings_ms),
        "chunks_searched": response.chunks_searched,
        "vectors_pending": response.vectors_pending,
        "notes": list(response.notes),
        **({"release": release_json(response.release)} if response.release is not None else {}),
    }


def location_json(location: Location) -> dict[str, Any]:
    """Where a chunk is and what it defines (a symbol's match, a related search's anchor)."""
    return {
        "path": location.path,
        "start_line": location.start_line,
        "end_line": location.end_line,
        "symbol": location.symbol,
        "kind": location.kind.value if location.kind is not None else "",
        "language": location.language,
        "scope": list(location.scope),
        "signature": location.signature,
    }


def symbol_match_json(match: SymbolMatch) -> dict[str, Any]:
    """A definition found by name: its location, score and whether the name matched exactly."""
    return {**location_json(match.location), "score": match.score, "exact": match.exact}


def related_json(result: RelatedResult, *, root: str) -> dict[str, Any]:
    """The chunk at a place (`anchor`) and the chunks related to it, best first."""
    return {
        "project": root,
        "anchor": location_json(result.anchor),
        "related": [{**search_hit_json(h), "why": list(h.why)} for h in result.related],
    }


def file_slice_json(piece: FileSlice) -> dict[str, Any]:
    """Lines of a file as they are on disk now."""
    return {
        "path": piece.path,
        "language": piece.language,
        "content": piece.content,
        "start_line": piece.start_line,
        "end_line": piece.end_line,
        "total_lines": piece.total_lines,
        "stale": piece.stale,
        "truncated": piece.truncated,
        **({"release": release_json(piece.release)} if piece.release is not None else {}),
    }


def release_json(release: Release) -> dict[str, Any]:
    """A component@version: the tag it comes from and what it holds."""
    return {
        "component": release.component,
        "version": release.version,
        "tag": release.tag,
        "commit": release.commit,
        "files": release.files,
        "prerelease": release.prerelease,
        "indexed_at": release.indexed_at,
    }


def component_json(component: ComponentInfo) -> dict[str, Any]:
    return {"name": component.name, "versions": component.versions, "latest": component.latest}


def file_list_json(listed: FileList, *, root: str) -> dict[str, Any]:
    """The files of an index (or of a released version), by path."""
    return {
        "project": root,
        "total": listed.total,
        "files": [
            {
                "path": f.path,
                "language": f.language,
                "content_type": f.content_type.value if f.content_type is not None else "",
                "chunks": f.chunks,
                "last_line": f.last_line,
            }
            for f in listed.files
        ],
        **({"release": release_json(listed.release)} if listed.release is not None else {}),
    }


def skeleton_json(skeleton: Skeleton) -> dict[str, Any]:
    """A file's skeleton, its definitions and what it saves against reading the whole file."""
    return {
        "path": skeleton.path,
        "language": skeleton.language,
        "content": skeleton.content,
        "definitions": [location_json(d) for d in skeleton.definitions],
        "total_lines": skeleton.total_lines,
        "tokens": skeleton.tokens,
        "file_tokens": skeleton.file_tokens,
        "tokens_saved": skeleton.tokens_saved,
        "tokenizer": skeleton.tokenizer,
    }


def trace_edge_json(edge: TraceEdge) -> dict[str, Any]:
    """One call relation: who calls what, where, and how that was resolved."""
    return {
        "direction": edge.direction.value,
        "depth": edge.depth,
        "caller": location_json(edge.caller),
        "callee": location_json(edge.callee) if edge.callee is not None else None,
        "path": edge.path,
        "line": edge.line,
        "resolution": edge.resolution.value,
        "sites": edge.sites,
        **({"candidates": [location_json(c) for c in edge.candidates]} if edge.candidates else {}),
    }


def trace_json(result: TraceResult, *, root: str) -> dict[str, Any]:
    """Callers and callees of a symbol, breadth first, with how to ask for more."""
    return {
        "project": root,
        "symbol": result.symbol,
        "definitions": [location_json(d) for d in result.definitions],
        "ambiguous": result.ambiguous,
        "edges": [trace_edge_json(e) for e in result.edges],
        "total": result.total,
        "next_offset": result.next_offset,
        "resolve_imports": result.resolve_imports,
    }
