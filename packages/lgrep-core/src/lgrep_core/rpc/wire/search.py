"""Conversions of search.proto: searches and their hits, files and their slices, symbols, related
code, skeletons and call traces, file lists, components and released versions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lgrep.v1 import common_pb2, search_pb2

from lgrep_core.domain import errors
from lgrep_core.domain.models import (
    ChunkKind,
    ComponentInfo,
    ContentType,
    FileHit,
    FileList,
    FileSlice,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexedFile,
    LineRange,
    ListComponentsRequest,
    ListFilesRequest,
    ListVersionsRequest,
    MatchType,
    RelatedResult,
    Release,
    Resolution,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SearchType,
    Skeleton,
    SkeletonRequest,
    SymbolMatch,
    TraceDirection,
    TraceEdge,
    TraceRequest,
    TraceResult,
    check_project_root,
)
from lgrep_core.rpc.wire.common import (
    chunk_kind_from_proto,
    chunk_kind_to_proto,
    content_type_from_proto,
    content_type_to_proto,
    location_from_proto,
    location_to_proto,
)

TIMING_KEYS = ("query_embedding_ms", "retrieval_ms", "ranking_ms", "total_ms")
"""`SearchResponse.timings_ms` keys that have their own (optional) `lgrep.v1.Timings` field, of the same name.

Any other key travels in `Timings.other_ms`; a stage missing from the dict stays unset on the wire.
"""

# Enum tables, built from the domain enums (a domain value without a wire name fails at import).
_MATCH_TO_PB: dict[MatchType, search_pb2.MatchType.ValueType] = {
    match: search_pb2.MatchType.Value(f"MATCH_TYPE_{match.name}") for match in MatchType
}
_MATCH_FROM_PB: dict[int, MatchType] = {number: match for match, number in _MATCH_TO_PB.items()}
_SEARCH_TYPE_TO_PB: dict[SearchType, search_pb2.SearchType.ValueType] = {
    st: search_pb2.SearchType.Value(f"SEARCH_TYPE_{st.name}") for st in SearchType
}
_SEARCH_TYPE_FROM_PB: dict[int, SearchType] = {number: st for st, number in _SEARCH_TYPE_TO_PB.items()}


# --- enums ---------------------------------------------------------------------------------------


def search_type_to_proto(search_type: SearchType | None) -> search_pb2.SearchType.ValueType:
    """A domain search type as the wire enum (None: unspecified, the server's default)."""
    return search_pb2.SEARCH_TYPE_UNSPECIFIED if search_type is None else _SEARCH_TYPE_TO_PB[SearchType(search_type)]


def search_type_from_proto(number: int) -> SearchType | None:
    """The domain search type of a wire enum number; unset means HYBRID, unknown means None."""
    if number == search_pb2.SEARCH_TYPE_UNSPECIFIED:
        return SearchType.HYBRID
    return _SEARCH_TYPE_FROM_PB.get(number)


# --- search results ------------------------------------------------------------------------------


def search_hit_to_proto(hit: SearchHit) -> search_pb2.SearchHit:
    """A domain search hit as `lgrep.v1.SearchHit`.

    The domain hit has no scope, signature or content type, so those location fields stay unset.
    """
    return search_pb2.SearchHit(
        location=common_pb2.Location(
            path=hit.path,
            start_line=hit.start_line,
            end_line=hit.end_line,
            symbol=hit.symbol,
            kind=chunk_kind_to_proto(hit.kind),
            language=hit.language,
        ),
        score=hit.score,
        content=hit.content,
        match_types=[_MATCH_TO_PB[MatchType(m)] for m in hit.match],
        signal_scores=dict(hit.scores),
        stale=hit.stale,
        why=list(hit.why),
        truncated=hit.truncated,
    )


def search_hit_from_proto(message: search_pb2.SearchHit) -> SearchHit:
    """An `lgrep.v1.SearchHit` as a domain search hit (unknown kinds and channels are dropped)."""
    loc = message.location
    return SearchHit(
        path=loc.path,
        start_line=loc.start_line,
        end_line=loc.end_line,
        symbol=loc.symbol,
        kind=chunk_kind_from_proto(loc.kind),
        language=loc.language,
        score=message.score,
        content=message.content,
        match=tuple(_MATCH_FROM_PB[n] for n in message.match_types if n in _MATCH_FROM_PB),
        scores=dict(message.signal_scores),
        stale=message.stale,
        why=tuple(message.why),
        truncated=message.truncated,
    )


def _timings_to_proto(timings_ms: Mapping[str, float]) -> search_pb2.Timings:
    timings = search_pb2.Timings(other_ms={k: v for k, v in timings_ms.items() if k not in TIMING_KEYS})
    if "query_embedding_ms" in timings_ms:
        timings.query_embedding_ms = timings_ms["query_embedding_ms"]
    if "retrieval_ms" in timings_ms:
        timings.retrieval_ms = timings_ms["retrieval_ms"]
    if "ranking_ms" in timings_ms:
        timings.ranking_ms = timings_ms["ranking_ms"]
    if "total_ms" in timings_ms:
        timings.total_ms = timings_ms["total_ms"]
    return timings


def _timings_from_proto(timings: search_pb2.Timings) -> dict[str, float]:
    result: dict[str, float] = {}
    if timings.HasField("query_embedding_ms"):
        result["query_embedding_ms"] = timings.query_embedding_ms
    if timings.HasField("retrieval_ms"):
        result["retrieval_ms"] = timings.retrieval_ms
    if timings.HasField("ranking_ms"):
        result["ranking_ms"] = timings.ranking_ms
    if timings.HasField("total_ms"):
        result["total_ms"] = timings.total_ms
    result.update((k, v) for k, v in timings.other_ms.items() if k not in TIMING_KEYS)
    return result


def search_response_to_proto(response: SearchResponse) -> search_pb2.SearchResponse:
    """A domain search response as `lgrep.v1.SearchResponse`."""
    return search_pb2.SearchResponse(
        results=[search_hit_to_proto(hit) for hit in response.results],
        timings=_timings_to_proto(response.timings_ms),
        chunks_searched=response.chunks_searched,
        vectors_pending=response.vectors_pending,
        files_changed=response.files_changed,
        query_kind=response.query_kind,
        search_type=search_type_to_proto(response.search_type),
        notes=list(response.notes),
        release=release_to_proto(response.release) if response.release is not None else None,
        project_root=response.project_root,
        scope=response.scope,
        files=[file_hit_to_proto(hit) for hit in response.files],
    )


def search_response_from_proto(message: search_pb2.SearchResponse) -> SearchResponse:
    """An `lgrep.v1.SearchResponse` as a domain response."""
    return SearchResponse(
        results=[search_hit_from_proto(hit) for hit in message.results],
        timings_ms=_timings_from_proto(message.timings),
        chunks_searched=message.chunks_searched,
        vectors_pending=message.vectors_pending,
        query_kind=message.query_kind,
        search_type=_SEARCH_TYPE_FROM_PB.get(message.search_type),
        files_changed=message.files_changed,
        notes=tuple(message.notes),
        release=release_from_proto(message.release) if message.HasField("release") else None,
        project_root=message.project_root,
        scope=message.scope,
        files=[file_hit_from_proto(hit) for hit in message.files],
    )


def file_hit_to_proto(hit: FileHit) -> search_pb2.FileHit:
    """A ranked file of a files answer as `lgrep.v1.FileHit`."""
    return search_pb2.FileHit(
        path=hit.path,
        score=hit.score,
        language=hit.language,
        ranges=[
            search_pb2.LineRange(start_line=r.start_line, end_line=r.end_line, symbol=r.symbol) for r in hit.ranges
        ],
        why=list(hit.why),
        stale=hit.stale,
    )


def file_hit_from_proto(message: search_pb2.FileHit) -> FileHit:
    """An `lgrep.v1.FileHit` as a domain file hit."""
    return FileHit(
        path=message.path,
        score=message.score,
        language=message.language,
        ranges=tuple(LineRange(r.start_line, r.end_line, r.symbol) for r in message.ranges),
        why=tuple(message.why),
        stale=message.stale,
    )


# --- search requests -----------------------------------------------------------------------------


def search_request_to_proto(request: SearchRequest) -> search_pb2.SearchRequest:
    """A domain search request as `lgrep.v1.SearchRequest` (unset limit and weight stay unset)."""
    message = search_pb2.SearchRequest(
        project_root=request.project_root,
        query=request.query,
        limit=request.limit or 0,
        search_type=search_type_to_proto(request.search_type),
        path_glob=request.path_glob or "",
        languages=list(request.languages),
        content_types=[content_type_to_proto(t) for t in request.content_types],
        explain=request.explain,
        component=request.component,
        version=request.version,
        files=request.files,
    )
    if request.bm25_weight is not None:
        message.bm25_weight = request.bm25_weight
    return message


def search_request_from_proto(message: search_pb2.SearchRequest) -> SearchRequest:
    """An `lgrep.v1.SearchRequest` as a validated domain request.

    Raises InvalidRequestError for what a request may not hold (a relative project root, an unknown
    search or content type, an empty query, a limit out of range, a negative weight)."""
    check_project_root(message.project_root)
    search_type = search_type_from_proto(message.search_type)
    if search_type is None:
        raise errors.InvalidRequestError(f"unknown search type (enum value {message.search_type})")
    content_types: list[ContentType] = []
    for number in message.content_types:
        content_type = None if number == common_pb2.CONTENT_TYPE_UNSPECIFIED else content_type_from_proto(number)
        if content_type is None:
            raise errors.InvalidRequestError(f"unknown content type (enum value {number})")
        content_types.append(content_type)
    if message.limit < 0:
        raise errors.InvalidRequestError(f"limit must be 1 to 1000 (0 for the default), got {message.limit}")
    return SearchRequest(
        query=message.query,
        project_root=message.project_root,
        limit=message.limit or None,
        search_type=search_type,
        path_glob=message.path_glob or None,
        languages=tuple(message.languages),
        content_types=tuple(content_types),
        bm25_weight=message.bm25_weight if message.HasField("bm25_weight") else None,
        explain=message.explain,
        component=message.component,
        version=message.version,
        files=message.files,
    ).validate()


# --- files, symbols, related code ----------------------------------------------------------------


def get_file_request_to_proto(request: GetFileRequest) -> search_pb2.GetFileRequest:
    """A domain file request as `lgrep.v1.GetFileRequest`."""
    return search_pb2.GetFileRequest(
        project_root=request.project_root,
        path=request.path,
        start_line=request.start_line,
        end_line=request.end_line,
        component=request.component,
        version=request.version,
    )


def get_file_request_from_proto(message: search_pb2.GetFileRequest) -> GetFileRequest:
    """An `lgrep.v1.GetFileRequest` as a validated domain request (InvalidRequestError if not)."""
    return GetFileRequest(
        project_root=message.project_root,
        path=message.path,
        start_line=message.start_line,
        end_line=message.end_line,
        component=message.component,
        version=message.version,
    ).validate()


def file_slice_to_proto(file: FileSlice) -> search_pb2.GetFileResponse:
    """Lines of a file as `lgrep.v1.GetFileResponse`."""
    return search_pb2.GetFileResponse(
        path=file.path,
        language=file.language,
        content=file.content,
        start_line=file.start_line,
        end_line=file.end_line,
        total_lines=file.total_lines,
        stale=file.stale,
        truncated=file.truncated,
        release=release_to_proto(file.release) if file.release is not None else None,
    )


def file_slice_from_proto(message: search_pb2.GetFileResponse) -> FileSlice:
    """An `lgrep.v1.GetFileResponse` as a domain file slice."""
    return FileSlice(
        path=message.path,
        language=message.language,
        content=message.content,
        start_line=message.start_line,
        end_line=message.end_line,
        total_lines=message.total_lines,
        stale=message.stale,
        truncated=message.truncated,
        release=release_from_proto(message.release) if message.HasField("release") else None,
    )


def find_symbol_request_to_proto(request: FindSymbolRequest) -> search_pb2.FindSymbolRequest:
    """A domain symbol request as `lgrep.v1.FindSymbolRequest` (unset limit and glob stay unset)."""
    return search_pb2.FindSymbolRequest(
        project_root=request.project_root,
        name=request.name,
        limit=request.limit or 0,
        kinds=[chunk_kind_to_proto(kind) for kind in request.kinds],
        languages=list(request.languages),
        path_glob=request.path_glob or "",
    )


def find_symbol_request_from_proto(message: search_pb2.FindSymbolRequest) -> FindSymbolRequest:
    """An `lgrep.v1.FindSymbolRequest` as a validated domain request.

    Raises InvalidRequestError for a relative root, an empty name, a limit out of range or a kind
    filter this server does not know (filtering by it would silently match nothing)."""
    kinds: list[ChunkKind] = []
    for number in message.kinds:
        kind = chunk_kind_from_proto(number)
        if kind is None:
            raise errors.InvalidRequestError(f"unknown chunk kind (enum value {number})")
        kinds.append(kind)
    if message.limit < 0:
        raise errors.InvalidRequestError(f"limit must be 1 to 1000 (0 for the default), got {message.limit}")
    return FindSymbolRequest(
        project_root=message.project_root,
        name=message.name,
        limit=message.limit or None,
        kinds=tuple(kinds),
        languages=tuple(message.languages),
        path_glob=message.path_glob or None,
    ).validate()


def symbol_match_to_proto(match: SymbolMatch) -> search_pb2.SymbolMatch:
    """A domain symbol match as `lgrep.v1.SymbolMatch`."""
    return search_pb2.SymbolMatch(location=location_to_proto(match.location), score=match.score, exact=match.exact)


def symbol_match_from_proto(message: search_pb2.SymbolMatch) -> SymbolMatch:
    """An `lgrep.v1.SymbolMatch` as a domain symbol match."""
    return SymbolMatch(location=location_from_proto(message.location), score=message.score, exact=message.exact)


def find_symbol_response_to_proto(matches: Iterable[SymbolMatch]) -> search_pb2.FindSymbolResponse:
    """Symbol matches, best first, as the FindSymbol response."""
    return search_pb2.FindSymbolResponse(matches=[symbol_match_to_proto(m) for m in matches])


def find_symbol_response_from_proto(message: search_pb2.FindSymbolResponse) -> list[SymbolMatch]:
    """The matches of a FindSymbol response, best first."""
    return [symbol_match_from_proto(m) for m in message.matches]


def find_related_request_to_proto(request: FindRelatedRequest) -> search_pb2.FindRelatedRequest:
    """A domain related-code request as `lgrep.v1.FindRelatedRequest` (an unset limit stays unset)."""
    return search_pb2.FindRelatedRequest(
        project_root=request.project_root, path=request.path, line=request.line, limit=request.limit or 0
    )


def find_related_request_from_proto(message: search_pb2.FindRelatedRequest) -> FindRelatedRequest:
    """An `lgrep.v1.FindRelatedRequest` as a validated domain request (InvalidRequestError if not)."""
    if message.limit < 0:
        raise errors.InvalidRequestError(f"limit must be 1 to 1000 (0 for the default), got {message.limit}")
    return FindRelatedRequest(
        project_root=message.project_root, path=message.path, line=message.line, limit=message.limit or None
    ).validate()


def related_result_to_proto(result: RelatedResult) -> search_pb2.FindRelatedResponse:
    """A domain related-code result as `lgrep.v1.FindRelatedResponse`."""
    return search_pb2.FindRelatedResponse(
        anchor=location_to_proto(result.anchor), related=[search_hit_to_proto(hit) for hit in result.related]
    )


def related_result_from_proto(message: search_pb2.FindRelatedResponse) -> RelatedResult:
    """An `lgrep.v1.FindRelatedResponse` as a domain related-code result."""
    return RelatedResult(
        anchor=location_from_proto(message.anchor),
        related=tuple(search_hit_from_proto(hit) for hit in message.related),
    )


# --- code structure ------------------------------------------------------------------------------

_DIRECTION_TO_PB: dict[TraceDirection, search_pb2.TraceDirection.ValueType] = {
    d: search_pb2.TraceDirection.Value(f"TRACE_DIRECTION_{d.name}") for d in TraceDirection
}
_DIRECTION_FROM_PB: dict[int, TraceDirection] = {number: d for d, number in _DIRECTION_TO_PB.items()}
_RESOLUTION_TO_PB: dict[Resolution, search_pb2.Resolution.ValueType] = {
    r: search_pb2.Resolution.Value(f"RESOLUTION_{r.name}") for r in Resolution
}
_RESOLUTION_FROM_PB: dict[int, Resolution] = {number: r for r, number in _RESOLUTION_TO_PB.items()}


def skeleton_request_to_proto(request: SkeletonRequest) -> search_pb2.GetSkeletonRequest:
    return search_pb2.GetSkeletonRequest(project_root=request.project_root, path=request.path)


def skeleton_request_from_proto(message: search_pb2.GetSkeletonRequest) -> SkeletonRequest:
    """An `lgrep.v1.GetSkeletonRequest` as a validated domain request (InvalidRequestError if not)."""
    return SkeletonRequest(project_root=message.project_root, path=message.path).validate()


def skeleton_to_proto(skeleton: Skeleton) -> search_pb2.GetSkeletonResponse:
    return search_pb2.GetSkeletonResponse(
        path=skeleton.path,
        language=skeleton.language,
        content=skeleton.content,
        definitions=[location_to_proto(d) for d in skeleton.definitions],
        total_lines=skeleton.total_lines,
        tokens=skeleton.tokens,
        file_tokens=skeleton.file_tokens,
        tokens_saved=skeleton.tokens_saved,
        tokenizer=skeleton.tokenizer,
    )


def skeleton_from_proto(message: search_pb2.GetSkeletonResponse) -> Skeleton:
    return Skeleton(
        path=message.path,
        language=message.language,
        content=message.content,
        definitions=tuple(location_from_proto(d) for d in message.definitions),
        total_lines=message.total_lines,
        tokens=message.tokens,
        file_tokens=message.file_tokens,
        tokens_saved=message.tokens_saved,
        tokenizer=message.tokenizer,
    )


def trace_request_to_proto(request: TraceRequest) -> search_pb2.TraceRequest:
    return search_pb2.TraceRequest(
        project_root=request.project_root,
        symbol=request.symbol,
        path=request.path,
        depth=request.depth,
        direction=_DIRECTION_TO_PB[TraceDirection(request.direction)],
        limit=request.limit or 0,
        offset=request.offset,
        names_only=not request.resolve_imports,
    )


def trace_request_from_proto(message: search_pb2.TraceRequest) -> TraceRequest:
    """An `lgrep.v1.TraceRequest` as a validated domain request (InvalidRequestError if not)."""
    if message.limit < 0:
        raise errors.InvalidRequestError(f"limit must be 1 to 1000 (0 for the default), got {message.limit}")
    return TraceRequest(
        project_root=message.project_root,
        symbol=message.symbol,
        path=message.path,
        depth=message.depth or 1,
        direction=_DIRECTION_FROM_PB.get(message.direction, TraceDirection.BOTH),
        limit=message.limit or None,
        offset=message.offset,
        resolve_imports=not message.names_only,
    ).validate()


def _trace_edge_to_proto(edge: TraceEdge) -> search_pb2.TraceEdge:
    return search_pb2.TraceEdge(
        direction=_DIRECTION_TO_PB[edge.direction],
        depth=edge.depth,
        caller=location_to_proto(edge.caller),
        callee=location_to_proto(edge.callee) if edge.callee is not None else None,
        path=edge.path,
        line=edge.line,
        resolution=_RESOLUTION_TO_PB[edge.resolution],
        sites=edge.sites,
        candidates=[location_to_proto(c) for c in edge.candidates],
    )


def _trace_edge_from_proto(message: search_pb2.TraceEdge) -> TraceEdge:
    return TraceEdge(
        direction=_DIRECTION_FROM_PB.get(message.direction, TraceDirection.BOTH),
        depth=message.depth,
        caller=location_from_proto(message.caller),
        callee=location_from_proto(message.callee) if message.HasField("callee") else None,
        path=message.path,
        line=message.line,
        resolution=_RESOLUTION_FROM_PB.get(message.resolution, Resolution.NAME),
        sites=message.sites,
        candidates=tuple(location_from_proto(c) for c in message.candidates),
    )


def trace_result_to_proto(result: TraceResult) -> search_pb2.TraceResponse:
    return search_pb2.TraceResponse(
        symbol=result.symbol,
        definitions=[location_to_proto(d) for d in result.definitions],
        ambiguous=result.ambiguous,
        edges=[_trace_edge_to_proto(e) for e in result.edges],
        total=result.total,
        next_offset=result.next_offset,
        resolve_imports=result.resolve_imports,
    )


def trace_result_from_proto(message: search_pb2.TraceResponse) -> TraceResult:
    return TraceResult(
        symbol=message.symbol,
        definitions=tuple(location_from_proto(d) for d in message.definitions),
        ambiguous=message.ambiguous,
        edges=tuple(_trace_edge_from_proto(e) for e in message.edges),
        total=message.total,
        next_offset=message.next_offset,
        resolve_imports=message.resolve_imports,
    )


# --- file lists ----------------------------------------------------------------------------------


def list_files_request_to_proto(request: ListFilesRequest) -> search_pb2.ListFilesRequest:
    """A domain file-list request as `lgrep.v1.ListFilesRequest` (unset glob and limit stay unset)."""
    return search_pb2.ListFilesRequest(
        project_root=request.project_root,
        path_glob=request.path_glob or "",
        languages=list(request.languages),
        limit=request.limit or 0,
        component=request.component,
        version=request.version,
    )


def list_files_request_from_proto(message: search_pb2.ListFilesRequest) -> ListFilesRequest:
    """An `lgrep.v1.ListFilesRequest` as a validated domain request (InvalidRequestError if not)."""
    if message.limit < 0:
        raise errors.InvalidRequestError(f"limit must be 1 or more (0 for all), got {message.limit}")
    return ListFilesRequest(
        project_root=message.project_root,
        path_glob=message.path_glob or None,
        languages=tuple(message.languages),
        limit=message.limit or None,
        component=message.component,
        version=message.version,
    ).validate()


def list_files_response_to_proto(files: FileList) -> search_pb2.ListFilesResponse:
    """A project's files as the ListFiles response."""
    return search_pb2.ListFilesResponse(
        files=[
            search_pb2.IndexedFile(
                path=f.path,
                language=f.language,
                content_type=content_type_to_proto(f.content_type or ContentType.CODE),
                chunks=f.chunks,
                last_line=f.last_line,
            )
            for f in files.files
        ],
        total=files.total,
        release=release_to_proto(files.release) if files.release is not None else None,
    )


def list_files_response_from_proto(message: search_pb2.ListFilesResponse) -> FileList:
    """The files of a ListFiles response, by path."""
    return FileList(
        files=tuple(
            IndexedFile(f.path, f.language, content_type_from_proto(f.content_type), f.chunks, f.last_line)
            for f in message.files
        ),
        total=message.total,
        release=release_from_proto(message.release) if message.HasField("release") else None,
    )


# --- released versions ---------------------------------------------------------------------------


def release_to_proto(release: Release) -> search_pb2.Release:
    """A component@version as `lgrep.v1.Release`."""
    return search_pb2.Release(
        component=release.component,
        version=release.version,
        tag=release.tag,
        commit=release.commit,
        files=release.files,
        prerelease=release.prerelease,
        indexed_at=release.indexed_at,
    )


def release_from_proto(message: search_pb2.Release) -> Release:
    """An `lgrep.v1.Release` as a domain release."""
    return Release(
        component=message.component,
        version=message.version,
        tag=message.tag,
        commit=message.commit,
        files=message.files,
        prerelease=message.prerelease,
        indexed_at=message.indexed_at,
    )


def list_components_response_to_proto(components: Iterable[ComponentInfo]) -> search_pb2.ListComponentsResponse:
    """A repository's components as the ListComponents response."""
    return search_pb2.ListComponentsResponse(
        components=[search_pb2.Component(name=c.name, versions=c.versions, latest=c.latest) for c in components]
    )


def list_components_response_from_proto(message: search_pb2.ListComponentsResponse) -> list[ComponentInfo]:
    """The components of a ListComponents response, by name."""
    return [ComponentInfo(c.name, c.versions, c.latest) for c in message.components]


def list_versions_request_to_proto(request: ListVersionsRequest) -> search_pb2.ListVersionsRequest:
    """The ListVersions request of one component."""
    return search_pb2.ListVersionsRequest(project_root=request.project_root, component=request.component)


def list_versions_request_from_proto(message: search_pb2.ListVersionsRequest) -> ListVersionsRequest:
    """A ListVersions request, validated (InvalidRequestError if unusable)."""
    return ListVersionsRequest(message.project_root, message.component).validate()


def list_components_request_to_proto(request: ListComponentsRequest) -> search_pb2.ListComponentsRequest:
    """The ListComponents request of one repository."""
    return search_pb2.ListComponentsRequest(project_root=request.project_root)


def list_components_request_from_proto(message: search_pb2.ListComponentsRequest) -> ListComponentsRequest:
    """A ListComponents request, validated (InvalidRequestError if its root is not absolute)."""
    return ListComponentsRequest(message.project_root).validate()


def list_versions_response_to_proto(releases: Iterable[Release]) -> search_pb2.ListVersionsResponse:
    """A component's versions as the ListVersions response, newest first."""
    return search_pb2.ListVersionsResponse(versions=[release_to_proto(r) for r in releases])


def list_versions_response_from_proto(message: search_pb2.ListVersionsResponse) -> list[Release]:
    """The versions of a ListVersions response, newest first."""
    return [release_from_proto(r) for r in message.versions]
