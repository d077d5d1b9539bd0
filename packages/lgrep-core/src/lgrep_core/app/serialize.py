"""One JSON vocabulary for every answer, shared by every front end that prints or returns JSON: the
CLI's `--json`, the `lgrep://` resources and the MCP server's structured content, with the names of
the gRPC contract's fields (`project_root`, `files_seen`, `chunks_total`, ...), so a field has one name
wherever an agent or a script meets it. Each function builds one shape of lgrep_core.app.shapes
(their one definition, from which the MCP server derives its output schemas); docs/json.md lists
them. Fields may be added, none removed or renamed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lgrep_core.app.shapes import (
    ChangesJSON,
    ComponentJSON,
    ComponentsJSON,
    FileEntryJSON,
    FileHitJSON,
    FileJSON,
    FileListJSON,
    FileSliceJSON,
    IndexedJSON,
    IndexProgressJSON,
    IndexSummaryJSON,
    LocationJSON,
    ProjectFileHitJSON,
    ProjectPartJSON,
    ProjectReceiptsJSON,
    ProjectSearchHitJSON,
    ProjectsSearchJSON,
    ReceiptsJSON,
    ReceiptSumsJSON,
    RelatedJSON,
    ReleaseJSON,
    SearchHitJSON,
    SearchJSON,
    SeedJSON,
    SkeletonJSON,
    SpendJSON,
    StatusJSON,
    SymbolMatchJSON,
    SymbolsJSON,
    TagsSummaryJSON,
    TraceEdgeJSON,
    TraceJSON,
    UnwatchJSON,
    VersionsJSON,
    WatchJSON,
)
from lgrep_core.domain.models import (
    ComponentInfo,
    FileHit,
    FileList,
    FileSlice,
    IndexProgress,
    IndexSummary,
    Location,
    ProjectState,
    ProjectStatus,
    RelatedResult,
    Release,
    SearchHit,
    SearchResponse,
    SeedReport,
    Skeleton,
    SpendTotals,
    SymbolMatch,
    TagsSummary,
    TraceEdge,
    TraceResult,
    WatchResult,
)

if TYPE_CHECKING:
    from lgrep_core.app.api import ProjectsOutcome
    from lgrep_core.storage.receipts import ClientReceipts, ProjectReceipts

__all__ = [
    "component_json",
    "components_json",
    "file_hit_json",
    "file_json",
    "file_list_json",
    "file_slice_json",
    "index_progress_json",
    "index_summary_json",
    "indexed_json",
    "location_json",
    "project_status_json",
    "projects_search_json",
    "receipt_sums_json",
    "receipts_json",
    "related_json",
    "release_json",
    "search_hit_json",
    "search_response_json",
    "skeleton_json",
    "spend_json",
    "symbol_match_json",
    "symbols_json",
    "tags_summary_json",
    "trace_edge_json",
    "trace_json",
    "unwatch_json",
    "versions_json",
    "watch_json",
]


def search_hit_json(hit: SearchHit, *, explain: bool = False) -> SearchHitJSON:
    """One result: where it is, what it is, how well and why it matched, and its snippet.
    `explain` adds the per-channel and per-signal numbers (`signals`) and the reasons in words (`why`)."""
    out: SearchHitJSON = {
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


def file_hit_json(hit: FileHit) -> FileHitJSON:
    """One file of a files answer: where it is, how well it ranked, the line ranges to read first
    (best first) and the evidence that ranked it, in words."""
    return {
        "path": hit.path,
        "score": hit.score,
        "language": hit.language,
        "ranges": [{"start_line": r.start_line, "end_line": r.end_line, "symbol": r.symbol} for r in hit.ranges],
        "why": list(hit.why),
        "stale": hit.stale,
    }


def search_response_json(response: SearchResponse, *, query: str, root: str, explain: bool = False) -> SearchJSON:
    """A whole answer: the query, the project that answered (and the folder in it the search kept
    to, `scope`), the results (chunks) or, for a files search, the files, and how the search went."""
    out: SearchJSON = {
        "query": query,
        "project_root": response.project_root or root,
        "scope": response.scope,
        "results": [search_hit_json(hit, explain=explain) for hit in response.results],
        "files": [file_hit_json(hit) for hit in response.files],
        "query_kind": response.query_kind,
        "search_type": response.search_type.value if response.search_type is not None else "",
        "timings_ms": dict(response.timings_ms),
        "chunks_searched": response.chunks_searched,
        "vectors_pending": response.vectors_pending,
        "notes": list(response.notes),
    }
    if response.release is not None:
        out["release"] = release_json(response.release)
    return out


def projects_search_json(outcome: ProjectsOutcome, *, query: str, explain: bool = False) -> ProjectsSearchJSON:
    """One question asked of several projects (ADR 0026): each project's part of the answer
    (`projects`: where it answered, how the search went there), and one ranking of results (or, for
    a files search, files), each naming its `project_root`; paths stay relative to it. A project
    still being indexed has `indexing` instead of its numbers, and no results."""
    projects: list[ProjectPartJSON] = []
    for o in outcome.outcomes:
        part: ProjectPartJSON = {"project_root": str(o.scope.project), "scope": o.scope.within or ""}
        if o.response is None:
            part["indexing"] = index_progress_json(o.progress)
        else:
            part["query_kind"] = o.response.query_kind
            part["search_type"] = o.response.search_type.value if o.response.search_type is not None else ""
            part["timings_ms"] = dict(o.response.timings_ms)
            part["chunks_searched"] = o.response.chunks_searched
            part["vectors_pending"] = o.response.vectors_pending
            part["notes"] = list(o.response.notes)
        projects.append(part)
    answered = [o.response for o in outcome.outcomes if o.response is not None]
    first = answered[0] if answered else None
    return {
        "query": query,
        "projects": projects,
        "results": [
            ProjectSearchHitJSON(project_root=str(project), **search_hit_json(hit, explain=explain))
            for project, hit in outcome.results
        ],
        "files": [
            ProjectFileHitJSON(project_root=str(project), **file_hit_json(hit)) for project, hit in outcome.files
        ],
        "query_kind": first.query_kind if first else "",
        "search_type": first.search_type.value if first and first.search_type is not None else "",
        "chunks_searched": sum(r.chunks_searched for r in answered),
        "vectors_pending": sum(r.vectors_pending for r in answered),
    }


def location_json(location: Location) -> LocationJSON:
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


def symbol_match_json(match: SymbolMatch) -> SymbolMatchJSON:
    """A definition found by name: its location, score and whether the name matched exactly."""
    return SymbolMatchJSON(**location_json(match.location), score=match.score, exact=match.exact)


def symbols_json(matches: Sequence[SymbolMatch], *, name: str, root: str) -> SymbolsJSON:
    """The definitions found for a name, exact matches first."""
    return {"project_root": root, "query": name, "matches": [symbol_match_json(m) for m in matches]}


def related_json(result: RelatedResult, *, root: str) -> RelatedJSON:
    """The chunk at a place (`anchor`) and the chunks related to it, best first."""
    related: list[SearchHitJSON] = []
    for h in result.related:
        hit = search_hit_json(h)
        hit["why"] = list(h.why)
        related.append(hit)
    return {"project_root": root, "anchor": location_json(result.anchor), "related": related}


def file_slice_json(piece: FileSlice) -> FileSliceJSON:
    """Lines of a file as they are on disk now."""
    out: FileSliceJSON = {
        "path": piece.path,
        "language": piece.language,
        "content": piece.content,
        "start_line": piece.start_line,
        "end_line": piece.end_line,
        "total_lines": piece.total_lines,
        "stale": piece.stale,
        "truncated": piece.truncated,
    }
    if piece.release is not None:
        out["release"] = release_json(piece.release)
    return out


def file_json(piece: FileSlice, *, root: str) -> FileJSON:
    """Lines of a file of the project at `root` (`lgrep file --json`)."""
    return FileJSON(project_root=root, **file_slice_json(piece))


def release_json(release: Release) -> ReleaseJSON:
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


def component_json(component: ComponentInfo) -> ComponentJSON:
    return {"name": component.name, "versions": component.versions, "latest": component.latest}


def components_json(found: Sequence[ComponentInfo], *, root: str) -> ComponentsJSON:
    """The components of a project's indexed releases."""
    return {"project_root": root, "components": [component_json(c) for c in found]}


def versions_json(found: Sequence[Release], *, component: str, root: str) -> VersionsJSON:
    """A component's indexed versions, newest first."""
    return {"project_root": root, "component": component, "versions": [release_json(r) for r in found]}


def file_list_json(listed: FileList, *, root: str) -> FileListJSON:
    """The files of an index (or of a released version), by path."""
    out: FileListJSON = {
        "project_root": root,
        "total": listed.total,
        "files": [
            FileEntryJSON(
                path=f.path,
                language=f.language,
                content_type=f.content_type.value if f.content_type is not None else "",
                chunks=f.chunks,
                last_line=f.last_line,
            )
            for f in listed.files
        ],
    }
    if listed.release is not None:
        out["release"] = release_json(listed.release)
    return out


def skeleton_json(skeleton: Skeleton, *, root: str) -> SkeletonJSON:
    """A file's skeleton, its definitions and what it saves against reading the whole file."""
    return {
        "project_root": root,
        "path": skeleton.path,
        "language": skeleton.language,
        "content": skeleton.content,
        "definitions": [location_json(d) for d in skeleton.definitions],
        "total_lines": skeleton.total_lines,
        "skeleton_tokens": skeleton.tokens,
        "file_tokens": skeleton.file_tokens,
        "tokens_saved": skeleton.tokens_saved,
        "tokenizer": skeleton.tokenizer,
    }


def trace_edge_json(edge: TraceEdge) -> TraceEdgeJSON:
    """One call relation: who calls what, where, and how that was resolved (`candidates` when the
    called name has several definitions)."""
    out: TraceEdgeJSON = {
        "direction": edge.direction.value,
        "depth": edge.depth,
        "caller": location_json(edge.caller),
        "callee": location_json(edge.callee) if edge.callee is not None else None,
        "path": edge.path,
        "line": edge.line,
        "resolution": edge.resolution.value,
        "sites": edge.sites,
    }
    if edge.candidates:
        out["candidates"] = [location_json(c) for c in edge.candidates]
    return out


def trace_json(result: TraceResult, *, root: str) -> TraceJSON:
    """Callers and callees of a symbol, breadth first, with how to ask for more."""
    return {
        "project_root": root,
        "symbol": result.symbol,
        "definitions": [location_json(d) for d in result.definitions],
        "ambiguous": result.ambiguous,
        "edges": [trace_edge_json(e) for e in result.edges],
        "total": result.total,
        "next_offset": result.next_offset,
        "resolve_imports": result.resolve_imports,
    }


def index_summary_json(summary: IndexSummary) -> IndexSummaryJSON:
    """What an index run did (the fields of lgrep.v1.IndexSummary; seconds as numbers)."""
    return {
        "project_root": summary.root,
        "files_seen": summary.files_seen,
        "files_indexed": summary.files_indexed,
        "files_unchanged": summary.files_unchanged,
        "files_deleted": summary.files_deleted,
        "files_skipped": dict(summary.skipped),
        "chunks_written": summary.chunks_written,
        "chunks_total": summary.chunks_total,
        "vectors_embedded": summary.vectors_embedded,
        "vectors_pending": summary.vectors_pending,
        "seconds_bm25": round(summary.seconds_bm25, 3),
        "seconds_vectors": round(summary.seconds_vectors, 3),
        "created": summary.created,
        "tokens_billed": summary.tokens_billed,
        "seed": seed_json(summary.seed),
    }


def seed_json(report: SeedReport | None) -> SeedJSON | None:
    """Where a seed came from, or why there was none (None: the team store was not asked)."""
    if report is None:
        return None
    published = datetime.fromtimestamp(report.published_at, UTC) if report.published_at else None
    return {
        "store": report.store,
        "repository": report.repository,
        "commit": report.commit,
        "published_at": published.isoformat() if published else None,
        "age_seconds": round(max(0.0, time.time() - report.published_at), 1) if report.published_at else None,
        "vectors_copied": report.vectors_copied,
        "bytes_copied": report.bytes_copied,
        "files_overlaid": report.files_overlaid,
        "reason": report.reason,
        "refused": report.refused,
    }


def indexed_json(summary: IndexSummary, *, index_dir: str, spend_warnings: Sequence[str] = ()) -> IndexedJSON:
    """`lgrep index --json` (and `lgrep init`'s `index`): the run's summary, the index's folder and
    the money warnings."""
    return IndexedJSON(**index_summary_json(summary), index_dir=index_dir, spend_warnings=list(spend_warnings))


def index_progress_json(event: IndexProgress | None) -> IndexProgressJSON:
    """How far an index run is (None: queued, nothing reported yet)."""
    if event is None:
        return {
            "phase": "queued",
            "files_done": 0,
            "files_total": 0,
            "chunks_done": 0,
            "chunks_total": 0,
            "eta_seconds": None,
        }
    return {
        "phase": event.phase.value if event.phase is not None else "working",
        "files_done": event.files_done,
        "files_total": event.files_total,
        "chunks_done": event.chunks_done,
        "chunks_total": event.chunks_total,
        "eta_seconds": event.eta_seconds,
    }


def spend_json(totals: SpendTotals | None) -> SpendJSON | None:
    """Cloud embedding spend (None: nothing in the ledger, as with the local model)."""
    if totals is None:
        return None
    return {
        "tokens": totals.tokens,
        "requests": totals.requests,
        "cost_usd": round(totals.cost_usd, 6),
        "cost_known": totals.cost_known,
        "unpriced_models": list(totals.unpriced_models),
    }


def project_status_json(status: ProjectStatus) -> StatusJSON:
    """Where a project's index stands (the fields of lgrep.v1.GetStatusResponse). When the index is
    not ready, only where it is, its state and `detail` (why, and what to run)."""
    out: StatusJSON = {
        "project_root": status.project_root,
        "state": status.state.value if status.state is not None else "",
        "index_dir": status.index_dir,
        "watched": status.watched,
        "watch_leases": status.watch_leases,
        "detail": status.detail,
        "project_spend": spend_json(status.project_spend),
        "total_spend": spend_json(status.total_spend),
        "spend_warnings": list(status.spend_warnings),
    }
    if status.state is ProjectState.READY:
        changes = status.changes
        out.update(
            files=status.files,
            chunks=status.chunks,
            vectors_pending=status.vectors_pending,
            languages=dict(status.languages),
            provider=status.provider,
            model=status.model,
            dimension=status.dimension,
            chunker_version=status.chunker_version,
            seed=seed_json(status.seed),
            last_indexed=status.last_indexed.isoformat() if status.last_indexed else None,
            changes=None
            if changes is None
            else ChangesJSON(
                added=changes.added, modified=changes.modified, deleted=changes.deleted, total=changes.total
            ),
        )
    return out


def watch_json(result: WatchResult, *, root: str) -> WatchJSON:
    return {"project_root": root, "watched": result.watched, "already_watched": result.already_watched}


def unwatch_json(was_watched: bool, *, root: str) -> UnwatchJSON:
    return {"project_root": root, "was_watched": was_watched}


def tags_summary_json(summary: TagsSummary) -> TagsSummaryJSON:
    """What `lgrep index --tags` did (its fields, with the names the index summary uses)."""
    return {
        "project_root": summary.root,
        "tags_seen": summary.tags_seen,
        "tags_indexed": summary.tags_indexed,
        "tags_unchanged": summary.tags_unchanged,
        "tags_removed": summary.tags_removed,
        "unparsed": list(summary.unparsed),
        "tag_file_pairs": summary.tag_file_pairs,
        "blobs_read": summary.blobs_read,
        "chunks_written": summary.chunks_written,
        "vectors_embedded": summary.vectors_embedded,
        "files_skipped": dict(summary.skipped),
        "tags_total": summary.tags_total,
        "tag_file_pairs_total": summary.tag_file_pairs_total,
        "blobs_total": summary.blobs_total,
        "chunks_total": summary.chunks_total,
        "vectors_total": summary.vectors_total,
        "seconds": round(summary.seconds, 3),
        "store": summary.store,
    }


def receipt_sums_json(sums: ClientReceipts) -> ReceiptSumsJSON:
    """Receipts summed (one client on one project, a project, a client, everything): answers that
    carried one, the tokens they held, the tokens of the whole files their results come from, and
    the difference."""
    return {
        "calls": sums.calls,
        "tokens_returned": sums.tokens_returned,
        "file_tokens": sums.file_tokens,
        "saved": sums.saved,
        "files": sums.files,
    }


def receipts_json(projects: Sequence[ProjectReceipts], notes: Sequence[str] = ()) -> ReceiptsJSON:
    """`lgrep stats --json` and the `lgrep://stats` resource: per project (and per client in it), per
    client across projects, the total, and `notes` on ledger files that could not be read (a
    damaged one is named there, not an error: receipts are a by-product)."""
    from lgrep_core.storage.receipts import ClientReceipts

    per_client: dict[str, ClientReceipts] = {}
    total = ClientReceipts()
    rows: list[ProjectReceiptsJSON] = []
    for project in projects:
        for name, sums in project.clients.items():
            per_client.setdefault(name, ClientReceipts()).add(sums)
            total.add(sums)
        rows.append(
            ProjectReceiptsJSON(
                project_root=project.project_root,
                clients={name: receipt_sums_json(s) for name, s in sorted(project.clients.items())},
                **receipt_sums_json(project.total),
            )
        )
    return {
        "projects": rows,
        "clients": {name: receipt_sums_json(s) for name, s in sorted(per_client.items())},
        "total": receipt_sums_json(total),
        "tokenizer": "cl100k_base",
        "notes": list(notes),
    }
