"""Conversions of common.proto: chunks and the locations that point into files, the enums they
carry (chunk kind, content type), the ErrorDetail behind a failed call; and the times the other
messages hold (`Timestamp`, `Duration`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf import duration_pb2, timestamp_pb2
from lgrep.v1 import common_pb2

from lgrep_core.domain import errors
from lgrep_core.domain.models import Chunk, ChunkKind, ContentType, Location

ERROR_METADATA_KEY = "lgrep-error-bin"
"""Trailing-metadata key that carries a serialized `lgrep.v1.ErrorDetail` next to a non-OK status."""

# Enum tables. Built from the domain enums so that a domain value without a wire name fails at import.
_KIND_TO_PB: dict[ChunkKind, common_pb2.ChunkKind.ValueType] = {
    kind: common_pb2.ChunkKind.Value(f"CHUNK_KIND_{kind.name}") for kind in ChunkKind
}
_KIND_FROM_PB: dict[int, ChunkKind] = {number: kind for kind, number in _KIND_TO_PB.items()}
_CONTENT_TO_PB: dict[ContentType, common_pb2.ContentType.ValueType] = {
    content: common_pb2.ContentType.Value(f"CONTENT_TYPE_{content.name}") for content in ContentType
}
_CONTENT_FROM_PB: dict[int, ContentType] = {number: content for content, number in _CONTENT_TO_PB.items()}
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


def timestamp_to_proto(value: datetime) -> timestamp_pb2.Timestamp:
    """An aware datetime as a `Timestamp` (a naive one is a ValueError: the contract carries instants)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()}: the contract carries instants, give it a timezone")
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    return stamp


def datetime_from_proto(stamp: timestamp_pb2.Timestamp) -> datetime:
    """A `Timestamp` as an aware datetime in UTC."""
    return stamp.ToDatetime(tzinfo=UTC)


def duration_to_proto(seconds: float) -> duration_pb2.Duration:
    """Seconds as a `Duration` (to the nanosecond)."""
    duration = duration_pb2.Duration()
    duration.FromNanoseconds(round(seconds * 1e9))
    return duration


def seconds_from_proto(duration: duration_pb2.Duration) -> float:
    """A `Duration` in seconds."""
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
