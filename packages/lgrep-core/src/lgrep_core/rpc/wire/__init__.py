"""The only module that converts between lgrep_core domain types and lgrep.v1 wire messages.

Servicers and clients call these functions at the edge; nothing else touches both worlds.

Conventions:
- Domain -> wire never loses information the contract can carry; a domain value the contract has
  no name for (an unknown chunk kind or match channel, a naive datetime) is a programming error
  (`ValueError`).
- Wire -> domain accepts anything a newer peer may send. Enum numbers this reader does not know
  become the "unknown" value of the domain field where it has one (`SearchHit.kind is None`,
  `ProjectStatus.state is None`, dropped match channels and server roles, `ErrorDetail` -> plain
  `LgrepError`). A `Chunk` cannot be built without a kind, so an unset or unknown kind there is an
  `InvalidRequestError`.
- Requests are what a server receives from other processes: `*_request_from_proto` validates them
  (an absolute project root, a path that stays inside it, limits in range, known enum values) and
  raises `InvalidRequestError` naming what is wrong. Requests that hold only a project root convert
  to and from that string; requests without fields (ListProjects, GetServerInfo) need no conversion.
- Times are timezone-aware `datetime`s (UTC) and seconds as `float`; on the wire, `Timestamp` and
  `Duration` (nanosecond resolution).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf import duration_pb2, timestamp_pb2
from lgrep.v1 import common_pb2, index_pb2, search_pb2, server_pb2

from lgrep_core.domain import errors
from lgrep_core.domain.models import (
    CancelIndexRequest,
    CancelResult,
    Chunk,
    ChunkKind,
    ComponentInfo,
    ContentType,
    FileChanges,
    FileHit,
    FileList,
    FileSlice,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexedFile,
    IndexPhase,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    LineRange,
    ListComponentsRequest,
    ListFilesRequest,
    ListProjectsRequest,
    ListVersionsRequest,
    Location,
    MatchType,
    ProjectInfo,
    ProjectState,
    ProjectStatus,
    RelatedResult,
    Release,
    ReleaseWatchLeaseRequest,
    RemoveProjectRequest,
    RemoveResult,
    Request,
    Resolution,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SearchType,
    ServerInfo,
    ServerRole,
    Skeleton,
    SkeletonRequest,
    SpendTotals,
    StatusRequest,
    SymbolMatch,
    TraceDirection,
    TraceEdge,
    TraceRequest,
    TraceResult,
    UnwatchProjectRequest,
    WatchLease,
    WatchLeaseRequest,
    WatchProjectRequest,
    WatchResult,
    check_project_root,
)

__all__ = [
    "CONTRACT_REVISION",
    "ERROR_METADATA_KEY",
    "ROUTES",
    "TIMING_KEYS",
    "Route",
    "cancel_index_request_from_proto",
    "cancel_index_request_to_proto",
    "cancel_result_from_proto",
    "cancel_result_to_proto",
    "chunk_from_proto",
    "chunk_kind_from_proto",
    "chunk_kind_to_proto",
    "chunk_to_proto",
    "content_type_from_proto",
    "content_type_to_proto",
    "error_from_proto",
    "error_to_proto",
    "file_hit_from_proto",
    "file_hit_to_proto",
    "file_slice_from_proto",
    "file_slice_to_proto",
    "find_related_request_from_proto",
    "find_related_request_to_proto",
    "find_symbol_request_from_proto",
    "find_symbol_request_to_proto",
    "find_symbol_response_from_proto",
    "find_symbol_response_to_proto",
    "get_file_request_from_proto",
    "get_file_request_to_proto",
    "get_status_request_from_proto",
    "get_status_request_to_proto",
    "index_event_from_proto",
    "index_event_to_proto",
    "index_phase_from_proto",
    "index_phase_to_proto",
    "index_progress_from_proto",
    "index_progress_to_proto",
    "index_project_request_from_proto",
    "index_project_request_to_proto",
    "index_summary_from_proto",
    "index_summary_to_proto",
    "list_components_request_from_proto",
    "list_components_request_to_proto",
    "list_components_response_from_proto",
    "list_components_response_to_proto",
    "list_files_request_from_proto",
    "list_files_request_to_proto",
    "list_files_response_from_proto",
    "list_files_response_to_proto",
    "list_projects_request_to_proto",
    "list_projects_response_from_proto",
    "list_projects_response_to_proto",
    "list_versions_request_from_proto",
    "list_versions_request_to_proto",
    "list_versions_response_from_proto",
    "list_versions_response_to_proto",
    "location_from_proto",
    "location_to_proto",
    "project_info_from_proto",
    "project_info_to_proto",
    "project_state_from_proto",
    "project_state_to_proto",
    "project_status_from_proto",
    "project_status_to_proto",
    "related_result_from_proto",
    "related_result_to_proto",
    "release_from_proto",
    "release_to_proto",
    "remove_project_request_from_proto",
    "remove_project_request_to_proto",
    "remove_result_from_proto",
    "remove_result_to_proto",
    "search_hit_from_proto",
    "search_hit_to_proto",
    "search_request_from_proto",
    "search_request_to_proto",
    "search_response_from_proto",
    "search_response_to_proto",
    "search_type_from_proto",
    "search_type_to_proto",
    "server_info_from_proto",
    "server_info_to_proto",
    "server_role_from_proto",
    "server_role_to_proto",
    "skeleton_from_proto",
    "skeleton_request_from_proto",
    "skeleton_request_to_proto",
    "skeleton_to_proto",
    "spend_totals_from_proto",
    "spend_totals_to_proto",
    "symbol_match_from_proto",
    "symbol_match_to_proto",
    "trace_request_from_proto",
    "trace_request_to_proto",
    "trace_result_from_proto",
    "trace_result_to_proto",
    "unwatch_project_request_from_proto",
    "unwatch_project_request_to_proto",
    "unwatch_result_from_proto",
    "unwatch_result_to_proto",
    "watch_lease_from_proto",
    "watch_lease_release_from_proto",
    "watch_lease_release_to_proto",
    "watch_lease_released_from_proto",
    "watch_lease_released_to_proto",
    "watch_lease_request_from_proto",
    "watch_lease_request_to_proto",
    "watch_lease_to_proto",
    "watch_project_request_from_proto",
    "watch_project_request_to_proto",
    "watch_result_from_proto",
    "watch_result_to_proto",
]

CONTRACT_REVISION = 10
"""The revision of the lgrep.v1 contract this code was generated from and speaks.

Servers report it in `GetServerInfoResponse.contract_revision`; `lgrep_core.rpc.client` refuses a server
whose revision differs. Bump it with every change to `proto/lgrep/v1` that alters the descriptors
(a new field, message, value or RPC; comments do not count): tests/contract/test_contract_revision.py
fails until the bump and the new fingerprint are recorded together.
"""

ERROR_METADATA_KEY = "lgrep-error-bin"
"""Trailing-metadata key that carries a serialized `lgrep.v1.ErrorDetail` next to a non-OK status."""

TIMING_KEYS = ("query_embedding_ms", "retrieval_ms", "ranking_ms", "total_ms")
"""`SearchResponse.timings_ms` keys that have their own (optional) `lgrep.v1.Timings` field, of the same name.

Any other key travels in `Timings.other_ms`; a stage missing from the dict stays unset on the wire.
"""

# Enum tables. Built from the domain enums so that a domain value without a wire name fails at import.
_KIND_TO_PB: dict[ChunkKind, common_pb2.ChunkKind.ValueType] = {
    kind: common_pb2.ChunkKind.Value(f"CHUNK_KIND_{kind.name}") for kind in ChunkKind
}
_KIND_FROM_PB: dict[int, ChunkKind] = {number: kind for kind, number in _KIND_TO_PB.items()}

_CONTENT_TO_PB: dict[ContentType, common_pb2.ContentType.ValueType] = {
    content: common_pb2.ContentType.Value(f"CONTENT_TYPE_{content.name}") for content in ContentType
}
_CONTENT_FROM_PB: dict[int, ContentType] = {number: content for content, number in _CONTENT_TO_PB.items()}

_MATCH_TO_PB: dict[MatchType, search_pb2.MatchType.ValueType] = {
    match: search_pb2.MatchType.Value(f"MATCH_TYPE_{match.name}") for match in MatchType
}
_MATCH_FROM_PB: dict[int, MatchType] = {number: match for match, number in _MATCH_TO_PB.items()}
_SEARCH_TYPE_TO_PB: dict[SearchType, search_pb2.SearchType.ValueType] = {
    st: search_pb2.SearchType.Value(f"SEARCH_TYPE_{st.name}") for st in SearchType
}
_SEARCH_TYPE_FROM_PB: dict[int, SearchType] = {number: st for st, number in _SEARCH_TYPE_TO_PB.items()}
_STATE_TO_PB: dict[ProjectState, index_pb2.ProjectState.ValueType] = {
    state: index_pb2.ProjectState.Value(f"PROJECT_STATE_{state.name}") for state in ProjectState
}
_STATE_FROM_PB: dict[int, ProjectState] = {number: state for state, number in _STATE_TO_PB.items()}
_PHASE_TO_PB: dict[IndexPhase, index_pb2.IndexPhase.ValueType] = {
    phase: index_pb2.IndexPhase.Value(f"INDEX_PHASE_{phase.name}") for phase in IndexPhase
}
_PHASE_FROM_PB: dict[int, IndexPhase] = {number: phase for phase, number in _PHASE_TO_PB.items()}
_ROLE_TO_PB: dict[ServerRole, server_pb2.ServerRole.ValueType] = {
    role: server_pb2.ServerRole.Value(f"SERVER_ROLE_{role.name}") for role in ServerRole
}
_ROLE_FROM_PB: dict[int, ServerRole] = {number: role for role, number in _ROLE_TO_PB.items()}

# error_to_proto walks the exception's MRO, so subclasses defined elsewhere map to their ancestor.
_ERROR_TO_PB: dict[type[errors.LgrepError], common_pb2.ErrorCode.ValueType] = {
    errors.LgrepError: common_pb2.ERROR_CODE_UNSPECIFIED,
    errors.ConfigError: common_pb2.ERROR_CODE_CONFIG,
    errors.StorageError: common_pb2.ERROR_CODE_STORAGE,
    errors.SchemaVersionMismatchError: common_pb2.ERROR_CODE_SCHEMA_VERSION_MISMATCH,
    errors.IndexMismatchError: common_pb2.ERROR_CODE_INDEX_MISMATCH,
    errors.IndexBusyError: common_pb2.ERROR_CODE_INDEX_BUSY,
    errors.EmbeddingError: common_pb2.ERROR_CODE_EMBEDDING,
    errors.ProviderUnavailableError: common_pb2.ERROR_CODE_PROVIDER_UNAVAILABLE,
    errors.IndexingError: common_pb2.ERROR_CODE_INDEXING,
    errors.SearchError: common_pb2.ERROR_CODE_SEARCH,
    errors.NotFoundError: common_pb2.ERROR_CODE_NOT_FOUND,
    errors.InvalidRequestError: common_pb2.ERROR_CODE_INVALID_REQUEST,
    errors.ServerUnavailableError: common_pb2.ERROR_CODE_SERVER_UNAVAILABLE,
    errors.DeadlineExceededError: common_pb2.ERROR_CODE_DEADLINE_EXCEEDED,
    errors.AuthenticationError: common_pb2.ERROR_CODE_UNAUTHENTICATED,
    errors.ContractMismatchError: common_pb2.ERROR_CODE_CONTRACT_MISMATCH,
}
_ERROR_FROM_PB: dict[int, type[errors.LgrepError]] = {number: cls for cls, number in _ERROR_TO_PB.items()}


# --- enums ---------------------------------------------------------------------------------------


def chunk_kind_to_proto(kind: ChunkKind | str | None) -> common_pb2.ChunkKind.ValueType:
    """A domain chunk kind (or its string value; None or "" means unset) as the wire enum."""
    if kind is None or kind == "":
        return common_pb2.CHUNK_KIND_UNSPECIFIED
    try:
        return _KIND_TO_PB[ChunkKind(kind)]
    except ValueError:
        raise ValueError(f"unknown chunk kind {kind!r}; expected one of {[k.value for k in ChunkKind]}") from None


def chunk_kind_from_proto(number: int) -> ChunkKind | None:
    """The domain chunk kind of a wire enum number; None when unset or unknown to this reader."""
    return _KIND_FROM_PB.get(number)


def content_type_to_proto(content_type: ContentType) -> common_pb2.ContentType.ValueType:
    """A domain content type as the wire enum."""
    return _CONTENT_TO_PB[ContentType(content_type)]


def content_type_from_proto(number: int) -> ContentType | None:
    """The domain content type of a wire enum number; unset means CODE, unknown means None."""
    if number == common_pb2.CONTENT_TYPE_UNSPECIFIED:
        return ContentType.CODE
    return _CONTENT_FROM_PB.get(number)


def search_type_to_proto(search_type: SearchType | None) -> search_pb2.SearchType.ValueType:
    """A domain search type as the wire enum (None: unspecified, the server's default)."""
    return search_pb2.SEARCH_TYPE_UNSPECIFIED if search_type is None else _SEARCH_TYPE_TO_PB[SearchType(search_type)]


def search_type_from_proto(number: int) -> SearchType | None:
    """The domain search type of a wire enum number; unset means HYBRID, unknown means None."""
    if number == search_pb2.SEARCH_TYPE_UNSPECIFIED:
        return SearchType.HYBRID
    return _SEARCH_TYPE_FROM_PB.get(number)


# --- chunks --------------------------------------------------------------------------------------


def chunk_to_proto(chunk: Chunk) -> common_pb2.Chunk:
    """A domain chunk as `lgrep.v1.Chunk`."""
    return common_pb2.Chunk(
        location=common_pb2.Location(
            path=chunk.path,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            symbol=chunk.symbol,
            kind=chunk_kind_to_proto(chunk.kind),
            language=chunk.language,
            scope=list(chunk.scope),
            signature=chunk.signature,
            content_type=content_type_to_proto(chunk.content_type),
        ),
        content=chunk.content,
    )


def chunk_from_proto(message: common_pb2.Chunk) -> Chunk:
    """An `lgrep.v1.Chunk` as a domain chunk. Raises InvalidRequestError for an unusable kind."""
    loc = message.location
    kind = chunk_kind_from_proto(loc.kind)
    if kind is None:
        raise errors.InvalidRequestError(
            f"chunk {loc.path}:{loc.start_line}-{loc.end_line} has no known kind (enum value {loc.kind})"
        )
    content_type = content_type_from_proto(loc.content_type)
    if content_type is None:
        raise errors.InvalidRequestError(
            f"chunk {loc.path}:{loc.start_line}-{loc.end_line} has an unknown content type "
            f"(enum value {loc.content_type})"
        )
    return Chunk(
        path=loc.path,
        language=loc.language,
        start_line=loc.start_line,
        end_line=loc.end_line,
        content=message.content,
        kind=kind,
        symbol=loc.symbol,
        scope=tuple(loc.scope),
        signature=loc.signature,
        content_type=content_type,
    )


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
        if number == common_pb2.CONTENT_TYPE_UNSPECIFIED or number not in _CONTENT_FROM_PB:
            raise errors.InvalidRequestError(f"unknown content type (enum value {number})")
        content_types.append(_CONTENT_FROM_PB[number])
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


# --- errors --------------------------------------------------------------------------------------


def error_to_proto(error: errors.LgrepError) -> common_pb2.ErrorDetail:
    """An lgrep error as `lgrep.v1.ErrorDetail`; subclasses map to their nearest listed ancestor."""
    code = next(
        (_ERROR_TO_PB[cls] for cls in type(error).__mro__ if cls in _ERROR_TO_PB),
        common_pb2.ERROR_CODE_UNSPECIFIED,
    )
    return common_pb2.ErrorDetail(code=code, message=error.message)


def error_from_proto(detail: common_pb2.ErrorDetail) -> errors.LgrepError:
    """The lgrep error an `lgrep.v1.ErrorDetail` describes (a plain LgrepError for unknown codes)."""
    cls = _ERROR_FROM_PB.get(detail.code, errors.LgrepError)
    return cls(detail.message)


# --- times ---------------------------------------------------------------------------------------


def _timestamp(value: datetime) -> timestamp_pb2.Timestamp:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()}: the contract carries instants, give it a timezone")
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    return stamp


def _datetime(stamp: timestamp_pb2.Timestamp) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC)


def _duration(seconds: float) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromNanoseconds(round(seconds * 1e9))
    return duration


def _seconds(duration: duration_pb2.Duration) -> float:
    return duration.ToNanoseconds() / 1e9


# --- locations -----------------------------------------------------------------------------------


def location_to_proto(location: Location) -> common_pb2.Location:
    """A domain location as `lgrep.v1.Location` (an unknown kind or content type stays unset)."""
    return common_pb2.Location(
        path=location.path,
        start_line=location.start_line,
        end_line=location.end_line,
        symbol=location.symbol,
        kind=chunk_kind_to_proto(location.kind),
        language=location.language,
        scope=list(location.scope),
        signature=location.signature,
        content_type=common_pb2.CONTENT_TYPE_UNSPECIFIED
        if location.content_type is None
        else content_type_to_proto(location.content_type),
    )


def location_from_proto(message: common_pb2.Location) -> Location:
    """An `lgrep.v1.Location` as a domain location (unknown kinds and content types become None)."""
    return Location(
        path=message.path,
        start_line=message.start_line,
        end_line=message.end_line,
        symbol=message.symbol,
        kind=chunk_kind_from_proto(message.kind),
        language=message.language,
        scope=tuple(message.scope),
        signature=message.signature,
        content_type=content_type_from_proto(message.content_type),
    )


# --- indexing ------------------------------------------------------------------------------------


def project_state_to_proto(state: ProjectState | None) -> index_pb2.ProjectState.ValueType:
    """A domain project state as the wire enum (None: unspecified)."""
    return index_pb2.PROJECT_STATE_UNSPECIFIED if state is None else _STATE_TO_PB[ProjectState(state)]


def project_state_from_proto(number: int) -> ProjectState | None:
    """The domain project state of a wire enum number; None when unset or unknown to this reader."""
    return _STATE_FROM_PB.get(number)


def index_phase_to_proto(phase: IndexPhase | None) -> index_pb2.IndexPhase.ValueType:
    """A domain index phase as the wire enum (None: unspecified)."""
    return index_pb2.INDEX_PHASE_UNSPECIFIED if phase is None else _PHASE_TO_PB[IndexPhase(phase)]


def index_phase_from_proto(number: int) -> IndexPhase | None:
    """The domain index phase of a wire enum number; None when unset or unknown to this reader."""
    return _PHASE_FROM_PB.get(number)


def index_project_request_to_proto(request: IndexProjectRequest) -> index_pb2.IndexProjectRequest:
    """A domain index request as `lgrep.v1.IndexProjectRequest`."""
    return index_pb2.IndexProjectRequest(
        project_root=request.project_root, force=request.force, wait_for_vectors=request.wait_for_vectors
    )


def index_project_request_from_proto(message: index_pb2.IndexProjectRequest) -> IndexProjectRequest:
    """An `lgrep.v1.IndexProjectRequest` as a validated domain request (InvalidRequestError if not)."""
    return IndexProjectRequest(
        project_root=message.project_root, force=message.force, wait_for_vectors=message.wait_for_vectors
    ).validate()


def index_progress_to_proto(progress: IndexProgress) -> index_pb2.IndexProgress:
    """A domain progress event as `lgrep.v1.IndexProgress` (an unknown ETA stays unset)."""
    message = index_pb2.IndexProgress(
        phase=index_phase_to_proto(progress.phase),
        files_done=progress.files_done,
        files_total=progress.files_total,
        chunks_done=progress.chunks_done,
        chunks_total=progress.chunks_total,
        rate=progress.rate,
    )
    if progress.eta_seconds is not None:
        message.eta.CopyFrom(_duration(progress.eta_seconds))
    return message


def index_progress_from_proto(message: index_pb2.IndexProgress) -> IndexProgress:
    """An `lgrep.v1.IndexProgress` as a domain progress event (an unknown phase becomes None)."""
    return IndexProgress(
        phase=index_phase_from_proto(message.phase),
        files_done=message.files_done,
        files_total=message.files_total,
        chunks_done=message.chunks_done,
        chunks_total=message.chunks_total,
        rate=message.rate,
        eta_seconds=_seconds(message.eta) if message.HasField("eta") else None,
    )


def index_summary_to_proto(summary: IndexSummary) -> index_pb2.IndexSummary:
    """A domain run summary as `lgrep.v1.IndexSummary`."""
    return index_pb2.IndexSummary(
        project_root=summary.root,
        files_seen=summary.files_seen,
        files_indexed=summary.files_indexed,
        files_unchanged=summary.files_unchanged,
        files_deleted=summary.files_deleted,
        files_skipped=dict(summary.skipped),
        chunks_written=summary.chunks_written,
        chunks_total=summary.chunks_total,
        vectors_embedded=summary.vectors_embedded,
        vectors_pending=summary.vectors_pending,
        bm25_elapsed=_duration(summary.seconds_bm25),
        vectors_elapsed=_duration(summary.seconds_vectors),
        created=summary.created,
        tokens_billed=summary.tokens_billed,
    )


def index_summary_from_proto(message: index_pb2.IndexSummary) -> IndexSummary:
    """An `lgrep.v1.IndexSummary` as a domain run summary."""
    return IndexSummary(
        root=message.project_root,
        files_seen=message.files_seen,
        files_indexed=message.files_indexed,
        files_unchanged=message.files_unchanged,
        files_deleted=message.files_deleted,
        skipped=dict(message.files_skipped),
        chunks_written=message.chunks_written,
        chunks_total=message.chunks_total,
        vectors_embedded=message.vectors_embedded,
        vectors_pending=message.vectors_pending,
        seconds_bm25=_seconds(message.bm25_elapsed),
        seconds_vectors=_seconds(message.vectors_elapsed),
        created=message.created,
        tokens_billed=message.tokens_billed,
    )


def index_event_to_proto(event: IndexProgress | IndexSummary) -> index_pb2.IndexProjectResponse:
    """A progress event or the final summary as one message of the IndexProject stream."""
    if isinstance(event, IndexSummary):
        return index_pb2.IndexProjectResponse(summary=index_summary_to_proto(event))
    return index_pb2.IndexProjectResponse(progress=index_progress_to_proto(event))


def index_event_from_proto(message: index_pb2.IndexProjectResponse) -> IndexProgress | IndexSummary | None:
    """One message of the IndexProject stream; None for an event this reader does not know (skip it)."""
    which = message.WhichOneof("event")
    if which == "summary":
        return index_summary_from_proto(message.summary)
    if which == "progress":
        return index_progress_from_proto(message.progress)
    return None


def get_status_request_to_proto(request: StatusRequest) -> index_pb2.GetStatusRequest:
    """A StatusRequest as its GetStatus request."""
    return index_pb2.GetStatusRequest(project_root=request.project_root, brief=request.brief)


def get_status_request_from_proto(message: index_pb2.GetStatusRequest) -> StatusRequest:
    """A GetStatus request, validated (InvalidRequestError if its root is not absolute)."""
    return StatusRequest(message.project_root, message.brief).validate()


def project_status_to_proto(status: ProjectStatus) -> index_pb2.GetStatusResponse:
    """A domain project status as `lgrep.v1.GetStatusResponse`."""
    message = index_pb2.GetStatusResponse(
        project_root=status.project_root,
        indexed=status.indexed,
        files=status.files,
        chunks=status.chunks,
        vectors_pending=status.vectors_pending,
        languages=dict(status.languages),
        provider=status.provider,
        model=status.model,
        dimension=status.dimension,
        files_changed_since=status.files_changed_since,
        state=project_state_to_proto(status.state),
        index_dir=status.index_dir,
        watched=status.watched,
        chunker_version=status.chunker_version,
        detail=status.detail,
        spend_warnings=list(status.spend_warnings),
        watch_leases=status.watch_leases,
    )
    if status.project_spend is not None:
        message.project_spend.CopyFrom(spend_totals_to_proto(status.project_spend))
    if status.total_spend is not None:
        message.total_spend.CopyFrom(spend_totals_to_proto(status.total_spend))
    if status.last_indexed is not None:
        message.last_indexed.CopyFrom(_timestamp(status.last_indexed))
    if status.changes is not None:
        message.changes.CopyFrom(
            index_pb2.FileChanges(
                added=status.changes.added, modified=status.changes.modified, deleted=status.changes.deleted
            )
        )
    return message


def project_status_from_proto(message: index_pb2.GetStatusResponse) -> ProjectStatus:
    """An `lgrep.v1.GetStatusResponse` as a domain project status (an unknown state becomes None)."""
    changes = message.changes
    return ProjectStatus(
        project_root=message.project_root,
        state=project_state_from_proto(message.state),
        index_dir=message.index_dir,
        watched=message.watched,
        files=message.files,
        chunks=message.chunks,
        vectors_pending=message.vectors_pending,
        languages=dict(message.languages),
        provider=message.provider,
        model=message.model,
        dimension=message.dimension,
        chunker_version=message.chunker_version,
        last_indexed=_datetime(message.last_indexed) if message.HasField("last_indexed") else None,
        changes=FileChanges(changes.added, changes.modified, changes.deleted) if message.HasField("changes") else None,
        detail=message.detail,
        project_spend=spend_totals_from_proto(message.project_spend) if message.HasField("project_spend") else None,
        total_spend=spend_totals_from_proto(message.total_spend) if message.HasField("total_spend") else None,
        spend_warnings=tuple(message.spend_warnings),
        watch_leases=message.watch_leases,
    )


def spend_totals_to_proto(totals: SpendTotals) -> index_pb2.SpendTotals:
    """Domain spend totals as `lgrep.v1.SpendTotals`."""
    return index_pb2.SpendTotals(
        tokens=totals.tokens,
        requests=totals.requests,
        cost_usd=totals.cost_usd,
        unpriced_models=list(totals.unpriced_models),
    )


def spend_totals_from_proto(message: index_pb2.SpendTotals) -> SpendTotals:
    """An `lgrep.v1.SpendTotals` as domain spend totals."""
    return SpendTotals(
        tokens=message.tokens,
        requests=message.requests,
        cost_usd=message.cost_usd,
        unpriced_models=tuple(message.unpriced_models),
    )


def watch_project_request_to_proto(request: WatchProjectRequest) -> index_pb2.WatchProjectRequest:
    """A domain watch request as `lgrep.v1.WatchProjectRequest` (an unset debounce stays unset)."""
    message = index_pb2.WatchProjectRequest(project_root=request.project_root)
    if request.debounce_ms is not None:
        message.debounce_ms = request.debounce_ms
    return message


def watch_project_request_from_proto(message: index_pb2.WatchProjectRequest) -> WatchProjectRequest:
    """An `lgrep.v1.WatchProjectRequest` as a validated domain request (InvalidRequestError if not)."""
    return WatchProjectRequest(
        project_root=message.project_root,
        debounce_ms=message.debounce_ms if message.HasField("debounce_ms") else None,
    ).validate()


def watch_result_to_proto(result: WatchResult) -> index_pb2.WatchProjectResponse:
    """The outcome of WatchProject as its response."""
    return index_pb2.WatchProjectResponse(watched=result.watched, already_watched=result.already_watched)


def watch_result_from_proto(message: index_pb2.WatchProjectResponse) -> WatchResult:
    """A WatchProject response as a domain result."""
    return WatchResult(watched=message.watched, already_watched=message.already_watched)


def watch_lease_request_to_proto(request: WatchLeaseRequest) -> index_pb2.RenewWatchLeaseRequest:
    """A domain lease request as `lgrep.v1.RenewWatchLeaseRequest`."""
    return index_pb2.RenewWatchLeaseRequest(
        project_root=request.project_root, holder=request.holder, ttl=_duration(request.ttl_s)
    )


def watch_lease_request_from_proto(message: index_pb2.RenewWatchLeaseRequest) -> WatchLeaseRequest:
    """An `lgrep.v1.RenewWatchLeaseRequest` as a validated domain request (InvalidRequestError if not)."""
    return WatchLeaseRequest(
        project_root=message.project_root, holder=message.holder, ttl_s=_seconds(message.ttl)
    ).validate()


def watch_lease_to_proto(lease: WatchLease) -> index_pb2.RenewWatchLeaseResponse:
    """A granted lease as the RenewWatchLease response."""
    return index_pb2.RenewWatchLeaseResponse(
        project_root=lease.project_root,
        watched=lease.watched,
        detail=lease.detail,
        ttl=_duration(lease.ttl_s),
        leases=lease.leases,
    )


def watch_lease_from_proto(message: index_pb2.RenewWatchLeaseResponse) -> WatchLease:
    """A RenewWatchLease response as a domain lease."""
    return WatchLease(
        project_root=message.project_root,
        watched=message.watched,
        ttl_s=_seconds(message.ttl),
        leases=message.leases,
        detail=message.detail,
    )


def watch_lease_release_to_proto(request: ReleaseWatchLeaseRequest) -> index_pb2.ReleaseWatchLeaseRequest:
    """The ReleaseWatchLease request of one holder on one project."""
    return index_pb2.ReleaseWatchLeaseRequest(project_root=request.project_root, holder=request.holder)


def watch_lease_release_from_proto(message: index_pb2.ReleaseWatchLeaseRequest) -> ReleaseWatchLeaseRequest:
    """A ReleaseWatchLease request, validated (InvalidRequestError if not usable)."""
    return ReleaseWatchLeaseRequest(message.project_root, message.holder).validate()


def watch_lease_released_to_proto(released: bool) -> index_pb2.ReleaseWatchLeaseResponse:
    """The outcome of ReleaseWatchLease (whether the holder had a lease) as its response."""
    return index_pb2.ReleaseWatchLeaseResponse(released=released)


def watch_lease_released_from_proto(message: index_pb2.ReleaseWatchLeaseResponse) -> bool:
    """Whether the holder had a lease before the ReleaseWatchLease call."""
    return message.released


def unwatch_project_request_to_proto(request: UnwatchProjectRequest) -> index_pb2.UnwatchProjectRequest:
    """The UnwatchProject request for one project root."""
    return index_pb2.UnwatchProjectRequest(project_root=request.project_root)


def unwatch_project_request_from_proto(message: index_pb2.UnwatchProjectRequest) -> UnwatchProjectRequest:
    """A UnwatchProject request, validated (InvalidRequestError if its root is not absolute)."""
    return UnwatchProjectRequest(message.project_root).validate()


def unwatch_result_to_proto(was_watched: bool) -> index_pb2.UnwatchProjectResponse:
    """The outcome of UnwatchProject (whether the project was watched) as its response."""
    return index_pb2.UnwatchProjectResponse(was_watched=was_watched)


def unwatch_result_from_proto(message: index_pb2.UnwatchProjectResponse) -> bool:
    """Whether the project was watched before the UnwatchProject call."""
    return message.was_watched


def project_info_to_proto(info: ProjectInfo) -> index_pb2.ProjectInfo:
    """A domain project summary as `lgrep.v1.ProjectInfo`."""
    message = index_pb2.ProjectInfo(
        project_root=info.project_root,
        state=project_state_to_proto(info.state),
        files=info.files,
        chunks=info.chunks,
        vectors_pending=info.vectors_pending,
        watched=info.watched,
        resident=info.resident,
        index_dir=info.index_dir,
    )
    if info.last_indexed is not None:
        message.last_indexed.CopyFrom(_timestamp(info.last_indexed))
    return message


def project_info_from_proto(message: index_pb2.ProjectInfo) -> ProjectInfo:
    """An `lgrep.v1.ProjectInfo` as a domain project summary (an unknown state becomes None)."""
    return ProjectInfo(
        project_root=message.project_root,
        state=project_state_from_proto(message.state),
        files=message.files,
        chunks=message.chunks,
        vectors_pending=message.vectors_pending,
        watched=message.watched,
        resident=message.resident,
        last_indexed=_datetime(message.last_indexed) if message.HasField("last_indexed") else None,
        index_dir=message.index_dir,
    )


def list_projects_response_to_proto(projects: Iterable[ProjectInfo]) -> index_pb2.ListProjectsResponse:
    """Projects as the ListProjects response, in the order given (servers sort by project_root)."""
    return index_pb2.ListProjectsResponse(projects=[project_info_to_proto(p) for p in projects])


def list_projects_response_from_proto(message: index_pb2.ListProjectsResponse) -> list[ProjectInfo]:
    """The projects of a ListProjects response, in the server's order."""
    return [project_info_from_proto(p) for p in message.projects]


def remove_project_request_to_proto(request: RemoveProjectRequest) -> index_pb2.RemoveProjectRequest:
    """The RemoveProject request for one project root."""
    return index_pb2.RemoveProjectRequest(project_root=request.project_root)


def remove_project_request_from_proto(message: index_pb2.RemoveProjectRequest) -> RemoveProjectRequest:
    """A RemoveProject request, validated (InvalidRequestError if its root is not absolute)."""
    return RemoveProjectRequest(message.project_root).validate()


def remove_result_to_proto(result: RemoveResult) -> index_pb2.RemoveProjectResponse:
    """The outcome of RemoveProject as its response."""
    return index_pb2.RemoveProjectResponse(removed=result.removed, bytes_freed=result.bytes_freed)


def remove_result_from_proto(message: index_pb2.RemoveProjectResponse) -> RemoveResult:
    """A RemoveProject response as a domain result."""
    return RemoveResult(removed=message.removed, bytes_freed=message.bytes_freed)


def cancel_index_request_to_proto(request: CancelIndexRequest) -> index_pb2.CancelIndexRequest:
    """The CancelIndex request for one project root."""
    return index_pb2.CancelIndexRequest(project_root=request.project_root)


def cancel_index_request_from_proto(message: index_pb2.CancelIndexRequest) -> CancelIndexRequest:
    """A CancelIndex request, validated (InvalidRequestError if its root is not absolute)."""
    return CancelIndexRequest(message.project_root).validate()


def cancel_result_to_proto(result: CancelResult) -> index_pb2.CancelIndexResponse:
    """The outcome of CancelIndex as its response."""
    return index_pb2.CancelIndexResponse(cancelled=result.cancelled, stopped=result.stopped)


def cancel_result_from_proto(message: index_pb2.CancelIndexResponse) -> CancelResult:
    """A CancelIndex response as a domain result."""
    return CancelResult(cancelled=message.cancelled, stopped=message.stopped)


# --- files, symbols, related code ------------------------------------------------------------------


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


# --- servers -------------------------------------------------------------------------------------


def server_role_to_proto(role: ServerRole) -> server_pb2.ServerRole.ValueType:
    """A domain server role as the wire enum."""
    return _ROLE_TO_PB[ServerRole(role)]


def server_role_from_proto(number: int) -> ServerRole | None:
    """The domain server role of a wire enum number; None when unset or unknown to this reader."""
    return _ROLE_FROM_PB.get(number)


def server_info_to_proto(info: ServerInfo) -> server_pb2.GetServerInfoResponse:
    """A domain server description as `lgrep.v1.GetServerInfoResponse`."""
    message = server_pb2.GetServerInfoResponse(
        version=info.version,
        contract_revision=info.contract_revision,
        pid=info.pid,
        roles=[server_role_to_proto(role) for role in info.roles],
        cache_dir=info.cache_dir,
        embedding_provider=info.embedding_provider,
        embedding_model=info.embedding_model,
        embedding_dimension=info.embedding_dimension,
        resident_projects=info.resident_projects,
        unix_socket_path=info.unix_socket_path,
        tcp_host=info.tcp_host,
        tcp_port=info.tcp_port,
        models_loaded=info.models_loaded,
        watched_projects=list(info.watched_projects),
    )
    if info.started_at is not None:
        message.started_at.CopyFrom(_timestamp(info.started_at))
    return message


def server_info_from_proto(message: server_pb2.GetServerInfoResponse) -> ServerInfo:
    """An `lgrep.v1.GetServerInfoResponse` as a domain server description (unknown roles are dropped)."""
    return ServerInfo(
        version=message.version,
        contract_revision=message.contract_revision,
        pid=message.pid,
        started_at=_datetime(message.started_at) if message.HasField("started_at") else None,
        roles=tuple(role for n in message.roles if (role := server_role_from_proto(n)) is not None),
        cache_dir=message.cache_dir,
        embedding_provider=message.embedding_provider,
        embedding_model=message.embedding_model,
        embedding_dimension=message.embedding_dimension,
        resident_projects=message.resident_projects,
        unix_socket_path=message.unix_socket_path,
        tcp_host=message.tcp_host,
        tcp_port=message.tcp_port,
        models_loaded=message.models_loaded,
        watched_projects=tuple(message.watched_projects),
    )


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


def list_projects_request_to_proto(_request: ListProjectsRequest) -> index_pb2.ListProjectsRequest:
    """The ListProjects request (it has no fields)."""
    return index_pb2.ListProjectsRequest()


# --- the routes: each use case's RPC ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Route:
    """How one use case (a `Request` type) travels: its unary RPC's path, the request message made
    from the domain request, and the answer read back from the response message's bytes."""

    path: str  # "/lgrep.v1.SearchService/GetFile"
    to_proto: Any  # Callable[[the Request], a request message]
    response: Any  # the response message class (its FromString parses the bytes)
    from_proto: Any  # Callable[[a response message], the answer]

    def answer(self, data: bytes) -> Any:
        """The domain answer in a response's bytes."""
        return self.from_proto(self.response.FromString(data))


def _route(service: str, method: str, to_proto: Any, response: Any, from_proto: Any) -> Route:
    return Route(f"/lgrep.v1.{service}/{method}", to_proto, response, from_proto)


ROUTES: dict[type[Request[Any]], Route] = {
    SearchRequest: _route(
        "SearchService", "Search", search_request_to_proto, search_pb2.SearchResponse, search_response_from_proto
    ),
    GetFileRequest: _route(
        "SearchService", "GetFile", get_file_request_to_proto, search_pb2.GetFileResponse, file_slice_from_proto
    ),
    FindSymbolRequest: _route(
        "SearchService",
        "FindSymbol",
        find_symbol_request_to_proto,
        search_pb2.FindSymbolResponse,
        find_symbol_response_from_proto,
    ),
    FindRelatedRequest: _route(
        "SearchService",
        "FindRelated",
        find_related_request_to_proto,
        search_pb2.FindRelatedResponse,
        related_result_from_proto,
    ),
    SkeletonRequest: _route(
        "SearchService", "GetSkeleton", skeleton_request_to_proto, search_pb2.GetSkeletonResponse, skeleton_from_proto
    ),
    TraceRequest: _route(
        "SearchService", "Trace", trace_request_to_proto, search_pb2.TraceResponse, trace_result_from_proto
    ),
    ListFilesRequest: _route(
        "SearchService",
        "ListFiles",
        list_files_request_to_proto,
        search_pb2.ListFilesResponse,
        list_files_response_from_proto,
    ),
    ListComponentsRequest: _route(
        "SearchService",
        "ListComponents",
        list_components_request_to_proto,
        search_pb2.ListComponentsResponse,
        list_components_response_from_proto,
    ),
    ListVersionsRequest: _route(
        "SearchService",
        "ListVersions",
        list_versions_request_to_proto,
        search_pb2.ListVersionsResponse,
        list_versions_response_from_proto,
    ),
    StatusRequest: _route(
        "IndexService", "GetStatus", get_status_request_to_proto, index_pb2.GetStatusResponse, project_status_from_proto
    ),
    WatchProjectRequest: _route(
        "IndexService",
        "WatchProject",
        watch_project_request_to_proto,
        index_pb2.WatchProjectResponse,
        watch_result_from_proto,
    ),
    UnwatchProjectRequest: _route(
        "IndexService",
        "UnwatchProject",
        unwatch_project_request_to_proto,
        index_pb2.UnwatchProjectResponse,
        unwatch_result_from_proto,
    ),
    WatchLeaseRequest: _route(
        "IndexService",
        "RenewWatchLease",
        watch_lease_request_to_proto,
        index_pb2.RenewWatchLeaseResponse,
        watch_lease_from_proto,
    ),
    ReleaseWatchLeaseRequest: _route(
        "IndexService",
        "ReleaseWatchLease",
        watch_lease_release_to_proto,
        index_pb2.ReleaseWatchLeaseResponse,
        watch_lease_released_from_proto,
    ),
    ListProjectsRequest: _route(
        "IndexService",
        "ListProjects",
        list_projects_request_to_proto,
        index_pb2.ListProjectsResponse,
        list_projects_response_from_proto,
    ),
    RemoveProjectRequest: _route(
        "IndexService",
        "RemoveProject",
        remove_project_request_to_proto,
        index_pb2.RemoveProjectResponse,
        remove_result_from_proto,
    ),
    CancelIndexRequest: _route(
        "IndexService",
        "CancelIndex",
        cancel_index_request_to_proto,
        index_pb2.CancelIndexResponse,
        cancel_result_from_proto,
    ),
}
"""Every use case's unary RPC (lgrep_core.domain.models.USE_CASES), read by both clients: the daemon's
gRPC client (lgrep_core.rpc.client) and the light one (lgrep_core.rpc.lite_client)."""
