"""The only module that converts between lgrep_core domain types and lgrep.v1 wire messages.

Servicers and clients call these functions at the edge; nothing else touches both worlds.

Conventions:
- Domain -> wire never loses information the contract can carry; a domain value the contract has
  no name for (an unknown chunk kind or match channel) is a programming error (`ValueError`).
- Wire -> domain accepts anything a newer peer may send. Enum numbers this reader does not know
  become the "unknown" value of the domain field where it has one (`SearchHit.kind is None`,
  dropped match channels, `ErrorDetail` -> plain `LgrepError`). A `Chunk` cannot be built without
  a kind, so an unset or unknown kind there is an `InvalidRequestError`.
"""

from __future__ import annotations

from collections.abc import Mapping

from lgrep.v1 import common_pb2, search_pb2

from lgrep_core import errors
from lgrep_core.models import (
    Chunk,
    ChunkKind,
    ContentType,
    MatchType,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SearchType,
)

__all__ = [
    "ERROR_METADATA_KEY",
    "TIMING_KEYS",
    "chunk_from_proto",
    "chunk_kind_from_proto",
    "chunk_kind_to_proto",
    "chunk_to_proto",
    "content_type_from_proto",
    "content_type_to_proto",
    "error_from_proto",
    "error_to_proto",
    "search_hit_from_proto",
    "search_hit_to_proto",
    "search_request_from_proto",
    "search_request_to_proto",
    "search_response_from_proto",
    "search_response_to_proto",
    "search_type_from_proto",
    "search_type_to_proto",
]

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
    )
    if request.bm25_weight is not None:
        message.bm25_weight = request.bm25_weight
    return message


def search_request_from_proto(message: search_pb2.SearchRequest) -> SearchRequest:
    """An `lgrep.v1.SearchRequest` as a validated domain request.

    Raises InvalidRequestError for what a request may not hold (an unknown search or content type,
    an empty query, a limit out of range, a negative weight)."""
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
