"""Round-trips between lgrep_core domain types and lgrep.v1 messages (lgrep_core.rpc.wire)."""

from __future__ import annotations

import re
from typing import TypeVar

import pytest
from google.protobuf.message import Message
from lgrep.v1 import common_pb2, search_pb2
from lgrep_core.domain import errors
from lgrep_core.domain.models import (
    Chunk,
    ChunkKind,
    ContentType,
    FileHit,
    LineRange,
    MatchType,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SearchType,
)
from lgrep_core.rpc import wire

M = TypeVar("M", bound=Message)


def _through_bytes(message: M) -> M:
    """Serialize and parse again, so the tests cover the wire encoding, not just the objects."""
    return type(message).FromString(message.SerializeToString())


def _chunk(**overrides: object) -> Chunk:
    fields: dict[str, object] = {
        "path": "src/auth/login.py",
        "language": "python",
        "start_line": 10,
        "end_line": 42,
        "content": "def verify(token: str) -> bool:\n    return check(token)  # ünïcode ✓\n",
        "kind": ChunkKind.METHOD,
        "symbol": "verify",
        "scope": ("Auth", "verify"),
        "signature": "def verify(token: str) -> bool:",
        "content_type": ContentType.CODE,
    }
    fields.update(overrides)
    return Chunk(**fields)  # type: ignore[arg-type]


def _hit(**overrides: object) -> SearchHit:
    fields: dict[str, object] = {
        "path": "src/auth/login.py",
        "start_line": 10,
        "end_line": 42,
        "symbol": "verify",
        "kind": ChunkKind.METHOD,
        "language": "python",
        "score": 0.8125,
        "content": "def verify(token): ...",
        "match": (MatchType.VECTOR, MatchType.BM25),
        "scores": {"vector_rank": 1.0, "bm25_rank": 3.0, "rrf": 0.032},
        "stale": True,
        "why": ("defines verify", "test file ×0.3"),
        "truncated": True,
    }
    fields.update(overrides)
    return SearchHit(**fields)  # type: ignore[arg-type]


# --- enums stay in step with the domain ------------------------------------------------------------


def test_every_chunk_kind_has_a_wire_value_and_back() -> None:
    wire_names = {v.name for v in common_pb2.ChunkKind.DESCRIPTOR.values if v.number != 0}
    assert wire_names == {f"CHUNK_KIND_{k.name}" for k in ChunkKind}
    for kind in ChunkKind:
        assert wire.chunk_kind_from_proto(wire.chunk_kind_to_proto(kind)) is kind


def test_every_content_type_has_a_wire_value_and_back() -> None:
    wire_names = {v.name for v in common_pb2.ContentType.DESCRIPTOR.values if v.number != 0}
    assert wire_names == {f"CONTENT_TYPE_{c.name}" for c in ContentType}
    for content_type in ContentType:
        assert wire.content_type_from_proto(wire.content_type_to_proto(content_type)) is content_type


def test_every_error_class_has_a_wire_code() -> None:
    codes = {wire.error_to_proto(getattr(errors, name)("x")).code for name in errors.__all__}
    assert codes == set(common_pb2.ErrorCode.values())


# --- chunks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ChunkKind))
def test_chunk_round_trip_every_kind(kind: ChunkKind) -> None:
    chunk = _chunk(kind=kind)
    assert wire.chunk_from_proto(_through_bytes(wire.chunk_to_proto(chunk))) == chunk


@pytest.mark.parametrize("content_type", list(ContentType))
def test_chunk_round_trip_every_content_type(content_type: ContentType) -> None:
    chunk = _chunk(content_type=content_type, kind=ChunkKind.SECTION, language="markdown")
    assert wire.chunk_from_proto(_through_bytes(wire.chunk_to_proto(chunk))) == chunk


def test_chunk_round_trip_with_defaults() -> None:
    chunk = Chunk(path="a.txt", language="text", start_line=1, end_line=1, content="", kind=ChunkKind.WINDOW)
    message = wire.chunk_to_proto(chunk)
    assert message.location.path == "a.txt"
    assert list(message.location.scope) == []
    assert wire.chunk_from_proto(_through_bytes(message)) == chunk


def test_chunk_fields_land_where_the_contract_says() -> None:
    message = wire.chunk_to_proto(_chunk())
    loc = message.location
    assert (loc.path, loc.start_line, loc.end_line) == ("src/auth/login.py", 10, 42)
    assert loc.kind == common_pb2.CHUNK_KIND_METHOD
    assert loc.content_type == common_pb2.CONTENT_TYPE_CODE
    assert list(loc.scope) == ["Auth", "verify"]
    assert message.content.endswith("✓\n")


def test_chunk_without_content_type_reads_as_code() -> None:
    message = wire.chunk_to_proto(_chunk(content_type=ContentType.DOCS))
    message.location.content_type = common_pb2.CONTENT_TYPE_UNSPECIFIED
    assert wire.chunk_from_proto(message).content_type is ContentType.CODE


@pytest.mark.parametrize("number", [common_pb2.CHUNK_KIND_UNSPECIFIED, 999])
def test_chunk_without_a_known_kind_is_an_invalid_request(number: int) -> None:
    message = wire.chunk_to_proto(_chunk())
    message.location.kind = number  # type: ignore[assignment]
    with pytest.raises(errors.InvalidRequestError, match=re.escape("src/auth/login.py:10-42")):
        wire.chunk_from_proto(message)


def test_chunk_with_an_unknown_content_type_is_an_invalid_request() -> None:
    message = wire.chunk_to_proto(_chunk())
    message.location.content_type = 999  # type: ignore[assignment]
    with pytest.raises(errors.InvalidRequestError, match="content type"):
        wire.chunk_from_proto(message)


# --- search hits ----------------------------------------------------------------------------------


@pytest.mark.parametrize("match", ["vector", "bm25", "fuzzy", "vector+bm25", "bm25+vector+fuzzy", "definition", ""])
def test_search_hit_round_trip(match: str) -> None:
    hit = _hit(match=tuple(MatchType(m) for m in match.split("+") if m))
    assert wire.search_hit_from_proto(_through_bytes(wire.search_hit_to_proto(hit))) == hit


@pytest.mark.parametrize("kind", [None, *ChunkKind])
def test_search_hit_round_trip_every_kind(kind: ChunkKind | None) -> None:
    hit = _hit(kind=kind, scores={}, stale=False)
    assert wire.search_hit_from_proto(_through_bytes(wire.search_hit_to_proto(hit))) == hit


def test_search_hit_fields_land_where_the_contract_says() -> None:
    message = wire.search_hit_to_proto(_hit())
    assert message.location.kind == common_pb2.CHUNK_KIND_METHOD
    assert list(message.match_types) == [search_pb2.MATCH_TYPE_VECTOR, search_pb2.MATCH_TYPE_BM25]
    assert dict(message.signal_scores) == {"vector_rank": 1.0, "bm25_rank": 3.0, "rrf": 0.032}
    assert message.stale is True
    assert list(message.why) == ["defines verify", "test file ×0.3"]
    assert message.truncated is True


def test_search_hit_from_a_newer_peer_drops_what_it_does_not_know() -> None:
    message = wire.search_hit_to_proto(_hit())
    message.location.kind = 999  # type: ignore[assignment]
    message.location.scope.append("Auth")
    message.match_types.append(999)  # type: ignore[arg-type]
    hit = wire.search_hit_from_proto(_through_bytes(message))
    assert hit.kind is None
    assert hit.match == (MatchType.VECTOR, MatchType.BM25)


def test_search_hit_with_an_unknown_kind_or_channel_is_rejected() -> None:
    with pytest.raises(ValueError, match="chunk kind"):
        wire.search_hit_to_proto(_hit(kind="lambda"))
    with pytest.raises(ValueError, match="grep"):
        wire.search_hit_to_proto(_hit(match=("vector", "grep")))


# --- search responses -----------------------------------------------------------------------------


def test_search_response_round_trip() -> None:
    response = SearchResponse(
        results=[
            _hit(),
            _hit(path="README.md", kind=ChunkKind.SECTION, language="markdown", match=(MatchType.BM25,), score=0.5),
        ],
        timings_ms={
            "bm25_ms": 1.25,
            "query_embedding_ms": 3.5,
            "vector_ms": 3.0,
            "ranking_ms": 0.75,
            "total_ms": 9.0,
        },
        chunks_searched=1234,
        vectors_pending=7,
        query_kind="natural",
        search_type=SearchType.HYBRID,
        files_changed=3,
    )
    message = _through_bytes(wire.search_response_to_proto(response))
    assert message.files_changed == 3
    assert message.query_kind == "natural"
    assert message.search_type == search_pb2.SEARCH_TYPE_HYBRID
    assert message.timings.total_ms == 9.0
    assert not message.timings.HasField("retrieval_ms")
    assert dict(message.timings.other_ms) == {"bm25_ms": 1.25, "vector_ms": 3.0}
    assert wire.search_response_from_proto(message) == response


def test_search_response_round_trip_empty() -> None:
    response = SearchResponse(results=[], timings_ms={}, chunks_searched=0, vectors_pending=0)
    message = _through_bytes(wire.search_response_to_proto(response))
    assert message.files_changed == 0
    assert message.search_type == search_pb2.SEARCH_TYPE_UNSPECIFIED
    assert message.SerializeToString() == b"\x12\x00"  # only the (empty) timings message
    assert wire.search_response_from_proto(message) == response


def test_search_response_keeps_measured_zero_timings() -> None:
    timings: dict[str, float] = dict.fromkeys(wire.TIMING_KEYS, 0.0)
    response = SearchResponse(results=[], timings_ms=timings, chunks_searched=0, vectors_pending=0)
    decoded = wire.search_response_from_proto(_through_bytes(wire.search_response_to_proto(response)))
    assert decoded.timings_ms == timings


def test_search_response_named_stages_match_the_timings_fields() -> None:
    fields = {f.name for f in search_pb2.Timings.DESCRIPTOR.fields if f.name != "other_ms"}
    assert fields == set(wire.TIMING_KEYS)


def test_search_response_keeps_result_order() -> None:
    hits = [_hit(path=f"f{i}.py", score=1.0 / (i + 1)) for i in range(20)]
    response = SearchResponse(results=hits, timings_ms={"total_ms": 1.0}, chunks_searched=20, vectors_pending=0)
    decoded = wire.search_response_from_proto(_through_bytes(wire.search_response_to_proto(response)))
    assert [h.path for h in decoded.results] == [h.path for h in hits]


def test_a_files_answer_round_trips_in_rank_order() -> None:
    files = [
        FileHit(
            "auth/tokens.py",
            0.0492,
            "python",
            (LineRange(27, 39, "verify_jwt"), LineRange(10, 11, "TokenError"), LineRange(1, 8)),
            why=("named in the traceback", "defines verify_jwt"),
            stale=True,
        ),
        FileHit("docs/deploy.md", 0.0161, "markdown", ()),
    ]
    response = SearchResponse(
        results=[], timings_ms={"total_ms": 2.0}, chunks_searched=9, vectors_pending=0, files=files
    )
    message = _through_bytes(wire.search_response_to_proto(response))
    assert [f.path for f in message.files] == ["auth/tokens.py", "docs/deploy.md"]
    assert message.files[0].ranges[2].symbol == "" and not message.results
    assert wire.search_response_from_proto(message) == response


# --- search requests ------------------------------------------------------------------------------


def test_search_request_round_trip_with_every_field() -> None:
    request = SearchRequest(
        query="where do we verify JWTs?",
        project_root="/abs/project",
        limit=25,
        search_type=SearchType.VECTOR,
        path_glob="src/**/*.py",
        languages=("python", "go"),
        content_types=(ContentType.CODE, ContentType.DOCS),
        bm25_weight=0.0,
        explain=True,
        files=True,
    )
    message = _through_bytes(wire.search_request_to_proto(request))
    assert message.files
    assert message.HasField("bm25_weight") and message.bm25_weight == 0.0
    assert list(message.content_types) == [common_pb2.CONTENT_TYPE_CODE, common_pb2.CONTENT_TYPE_DOCS]
    assert wire.search_request_from_proto(message) == request


def test_search_request_defaults_stay_unset_on_the_wire() -> None:
    request = SearchRequest(query="verify", project_root="/p")
    message = _through_bytes(wire.search_request_to_proto(request))
    assert message.limit == 0 and not message.HasField("bm25_weight") and message.path_glob == ""
    assert wire.search_request_from_proto(message) == request
    message.search_type = search_pb2.SEARCH_TYPE_UNSPECIFIED
    assert wire.search_request_from_proto(message).search_type is SearchType.HYBRID


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"query": "  "}, "query is empty"),
        ({"limit": -1}, "limit"),
        ({"limit": 5000}, "limit"),
        ({"bm25_weight": -0.5}, "bm25_weight"),
        ({"bm25_weight": float("nan")}, "bm25_weight"),
        ({"search_type": 99}, "search type"),
        ({"content_types": [99]}, "content type"),
        ({"content_types": [common_pb2.CONTENT_TYPE_UNSPECIFIED]}, "content type"),
    ],
)
def test_a_malformed_search_request_is_an_invalid_request(change: dict[str, object], words: str) -> None:
    message = search_pb2.SearchRequest(query="verify", project_root="/p")
    for name, value in change.items():
        if isinstance(value, list):
            getattr(message, name).extend(value)
        else:
            setattr(message, name, value)
    with pytest.raises(errors.InvalidRequestError, match=words):
        wire.search_request_from_proto(message)


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", errors.__all__)
def test_error_round_trip(name: str) -> None:
    cls = getattr(errors, name)
    detail = common_pb2.ErrorDetail.FromString(
        wire.error_to_proto(cls("index built with X, config says Y")).SerializeToString()
    )
    back = wire.error_from_proto(detail)
    assert type(back) is cls
    assert back.message == "index built with X, config says Y"


def test_error_subclass_maps_to_its_nearest_ancestor() -> None:
    class LockTimeoutError(errors.IndexBusyError):
        pass

    detail = wire.error_to_proto(LockTimeoutError("busy"))
    assert detail.code == common_pb2.ERROR_CODE_INDEX_BUSY
    assert type(wire.error_from_proto(detail)) is errors.IndexBusyError


def test_error_with_an_unknown_code_is_a_plain_lgrep_error() -> None:
    back = wire.error_from_proto(common_pb2.ErrorDetail(code=999, message="new kind of failure"))  # type: ignore[arg-type]
    assert type(back) is errors.LgrepError
    assert back.message == "new kind of failure"
