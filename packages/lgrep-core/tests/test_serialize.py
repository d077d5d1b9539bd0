import json
import math

from lgrep_core.app.serialize import file_hit_json, search_hit_json, search_response_json
from lgrep_core.domain.models import ChunkKind, FileHit, LineRange, MatchType, SearchHit, SearchResponse, SearchType

HIT = SearchHit(
    path="auth/jwt.py",
    start_line=10,
    end_line=42,
    symbol="verify",
    kind=ChunkKind.FUNCTION,
    language="python",
    score=0.0325,
    content="def verify(token):\n    ...",
    match=(MatchType.BM25, MatchType.FUZZY, MatchType.VECTOR),
    scores={"bm25_rank": 0.0, "definition": 1.5},
    why=("defines verify",),
    truncated=True,
)


def test_a_hit_carries_the_documented_fields() -> None:
    out = search_hit_json(HIT)
    assert list(out) == [
        "path",
        "start_line",
        "end_line",
        "symbol",
        "kind",
        "language",
        "score",
        "match",
        "stale",
        "content",
        "truncated",
    ]
    assert out["truncated"] is True and out["stale"] is False


FILE = FileHit(
    path="auth/tokens.py",
    score=0.0492,
    language="python",
    ranges=(LineRange(27, 39, "verify_jwt"), LineRange(1, 8)),
    why=("named in the traceback", "defines verify_jwt"),
)


def test_a_file_hit_carries_the_documented_fields() -> None:
    out = file_hit_json(FILE)
    assert list(out) == ["path", "score", "language", "ranges", "why", "stale"]
    assert out["ranges"] == [
        {"start_line": 27, "end_line": 39, "symbol": "verify_jwt"},
        {"start_line": 1, "end_line": 8, "symbol": ""},
    ]
    assert out["why"] == ["named in the traceback", "defines verify_jwt"] and out["stale"] is False


def test_a_files_answer_has_files_and_no_results() -> None:
    response = SearchResponse([], {"total_ms": 1.0}, 3, 0, files=[FILE])
    out = json.loads(json.dumps(search_response_json(response, query="q", root="/p"), allow_nan=False))
    assert out["results"] == [] and [f["path"] for f in out["files"]] == ["auth/tokens.py"]
    chunks = search_response_json(SearchResponse([HIT], {}, 3, 0), query="q", root="/p")
    assert chunks["files"] == []  # always there: a script reads one shape


def test_explain_adds_signals_and_reasons() -> None:
    out = search_hit_json(HIT, explain=True)
    assert out["signals"] == {"bm25_rank": 0.0, "definition": 1.5}
    assert out["why"] == ["defines verify"]


def test_a_response_is_plain_json() -> None:
    response = SearchResponse(
        results=[HIT],
        timings_ms={"total_ms": 1.5},
        chunks_searched=12,
        vectors_pending=0,
        query_kind="natural",
        search_type=SearchType.BM25,
    )
    out = search_response_json(response, query="verify jwt", root="/abs/project")
    text = json.dumps(out, allow_nan=False)  # strict JSON: no Infinity or NaN anywhere
    back = json.loads(text)
    assert back["search_type"] == "bm25" and back["query"] == "verify jwt" and back["project_root"] == "/abs/project"
    assert back["results"][0]["path"] == "auth/jwt.py"
    assert all(math.isfinite(v) for v in back["timings_ms"].values())


def test_enums_print_as_their_stable_words() -> None:
    out = search_hit_json(HIT)
    assert out["kind"] == "function" and out["match"] == "bm25+fuzzy+vector"
    unknown = search_hit_json(SearchHit(**{**{f: getattr(HIT, f) for f in HIT.__slots__}, "kind": None}))  # type: ignore[arg-type]
    assert unknown["kind"] == ""


def test_answers_use_the_contracts_field_names() -> None:
    """One vocabulary (docs/json.md): a JSON answer's fields are named as the lgrep.v1 message
    fields they come from, so `--json`, MCP and gRPC-to-JSON (proto field names) agree. The few that
    differ are listed here, each for a reason."""
    from datetime import UTC, datetime

    from lgrep.v1 import index_pb2, search_pb2
    from lgrep_core.app.serialize import index_summary_json, project_status_json, skeleton_json
    from lgrep_core.domain.models import FileChanges, IndexSummary, ProjectState, ProjectStatus, Skeleton

    def fields(message: type) -> set[str]:
        return {f.name for f in message.DESCRIPTOR.fields}

    answer = search_response_json(SearchResponse([HIT], {"total_ms": 1.0}, 3, 0), query="q", root="/p")
    # `query` echoes the request; timings are milliseconds by name, not a Timings message.
    assert set(answer) - fields(search_pb2.SearchResponse) == {"query", "timings_ms"}
    # A files answer's files and their line ranges are named as FileHit's and LineRange's fields.
    file_hit = file_hit_json(FILE)
    assert set(file_hit) == fields(search_pb2.FileHit)
    assert set(file_hit["ranges"][0]) == fields(search_pb2.LineRange)
    summary = index_summary_json(IndexSummary(root="/p", files_seen=2))
    # Durations as numbers of seconds, named so (the message has google.protobuf.Duration fields).
    assert set(summary) - fields(index_pb2.IndexSummary) == {"seconds_bm25", "seconds_vectors"}
    status = project_status_json(
        ProjectStatus("/p", ProjectState.READY, changes=FileChanges(1), last_indexed=datetime.now(UTC))
    )
    assert set(status) - fields(index_pb2.GetStatusResponse) == set()
    skeleton = skeleton_json(Skeleton("a.py", "python", "def f(): ...", (), 1, 4, 9, 5, "t"), root="/p")
    # `skeleton_tokens` for the message's `tokens` (ADR 0033: an MCP answer's `tokens` is its own
    # size); `project_root` says which project the path is in, as every answer with a path does.
    assert set(skeleton) - fields(search_pb2.GetSkeletonResponse) == {"skeleton_tokens", "project_root"}
    assert fields(search_pb2.GetSkeletonResponse) - set(skeleton) == {"tokens"}


def test_a_several_projects_answer_names_each_hits_project() -> None:
    """One question of several projects (ADR 0026): each hit and file adds `project_root`, the
    answer lists its `projects`; every other name is the contract's."""
    from pathlib import Path

    from lgrep.v1 import search_pb2
    from lgrep_core.app.api import ProjectsOutcome, SearchOutcome
    from lgrep_core.app.scope import Scope
    from lgrep_core.app.serialize import projects_search_json

    def fields(message: type) -> set[str]:
        return {f.name for f in message.DESCRIPTOR.fields}

    response = SearchResponse([HIT], {"total_ms": 1.0}, 3, 0, query_kind="natural", search_type=SearchType.HYBRID)
    outcome = ProjectsOutcome(
        [SearchOutcome(Scope(Path("/a")), response), SearchOutcome(Scope(Path("/b"), "src"), None)],
        [(Path("/a"), HIT)],
        [(Path("/b"), FILE)],
    )
    out = json.loads(json.dumps(projects_search_json(outcome, query="q"), allow_nan=False))
    assert set(out) - fields(search_pb2.SearchResponse) == {"query", "projects"}
    assert set(out["projects"][0]) - fields(search_pb2.SearchResponse) == {"timings_ms"}
    assert out["projects"][1] == {"project_root": "/b", "scope": "src", "indexing": out["projects"][1]["indexing"]}
    assert out["results"][0]["project_root"] == "/a" and out["results"][0]["path"] == "auth/jwt.py"
    assert set(out["results"][0]) == {"project_root", *search_hit_json(HIT)}
    assert out["files"][0]["project_root"] == "/b" and set(out["files"][0]) == {"project_root", *file_hit_json(FILE)}
    assert out["chunks_searched"] == 3 and out["query_kind"] == "natural"
