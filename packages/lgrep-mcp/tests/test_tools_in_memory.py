"""Every MCP tool through an in-memory client session over the FakeEngine: the surface a client
lists, the request each call gives the engine (its type and every field: project root, relative
path, limits, glob), and the structured answer (checked against the tool's published output schema
by `Mcp.answer`), field by field."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from lgrep_core.app.serialize import file_hit_json, location_json, release_json, search_hit_json
from lgrep_core.domain.models import (
    ChunkKind,
    ContentType,
    FileChanges,
    FileSlice,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexProjectRequest,
    ListComponentsRequest,
    ListFilesRequest,
    ListVersionsRequest,
    Location,
    MatchType,
    ProjectState,
    ProjectStatus,
    RelatedResult,
    Resolution,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SearchType,
    Skeleton,
    SkeletonRequest,
    SpendTotals,
    StatusRequest,
    TraceDirection,
    TraceEdge,
    TraceRequest,
    TraceResult,
    UnwatchProjectRequest,
    WatchProjectRequest,
    WatchResult,
)
from lgrep_core.testing.engines import FakeEngine
from mcp_harness import (
    AGENT_FILES,
    AGENT_RELEASE,
    AGENT_VERSIONS,
    APP_FILE_HIT,
    AUTH_FILE_HIT,
    AUTH_SKELETON,
    AUTH_SLICE,
    COMPONENTS,
    GUIDE_HIT,
    LOGIN,
    LOGIN_HIT,
    SYMBOL_MATCHES,
    VERIFY,
    VERIFY_HIT,
    Mcp,
    check_receipt,
    without_budget,
)

SURFACE = json.loads((Path(__file__).with_name("surface.json")).read_text(encoding="utf-8"))


def respond(hits: list[SearchHit], **fields: Any) -> Any:
    """A search handler: the hits, from the project that was asked."""

    def handler(request: SearchRequest) -> SearchResponse:
        given: dict[str, Any] = {
            "timings_ms": {"bm25": 1.5, "vector": 4.0, "total": 6.2},
            "chunks_searched": 42,
            "vectors_pending": 0,
            "query_kind": "natural",
            "search_type": request.search_type,
            "project_root": request.project_root,
        }
        return SearchResponse(hits, **{**given, **fields})

    return handler


def hit_item(hit: SearchHit, *, uri: bool = True) -> dict[str, Any]:
    return {
        **search_hit_json(hit),
        "why": list(hit.why),
        "uri": f"lgrep://file/{hit.path}" if uri else None,
    }


# --- the surface ---------------------------------------------------------------------------------------


def test_the_client_lists_every_tool_resource_template_and_prompt_of_the_surface(mcp: Mcp) -> None:
    async def listed(client: Any) -> tuple[Any, ...]:
        return (
            (await client.list_tools()).tools,
            (await client.list_resources()).resources,
            (await client.list_resource_templates()).resource_templates,
            (await client.list_prompts()).prompts,
        )

    tools, resources, templates, prompts = mcp.session(listed)
    assert [t.name for t in tools] == [t["name"] for t in SURFACE["tools"]]
    assert [t.name for t in tools] == [
        "lgrep_search",
        "lgrep_index",
        "lgrep_status",
        "lgrep_watch_start",
        "lgrep_watch_stop",
        "lgrep_get_file",
        "lgrep_trace",
        "lgrep_releases",
        "lgrep_find_symbol",
        "lgrep_find_related",
    ]
    for tool in tools:  # every tool answers with structured content of a published shape
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        assert tool.output_schema["required"], tool.name
    assert [str(r.uri) for r in resources] == [r["uri"] for r in SURFACE["resources"]]
    assert [str(r.uri) for r in resources] == ["lgrep://status", "lgrep://files", "lgrep://config", "lgrep://stats"]
    assert [t.uri_template for t in templates] == [t["uriTemplate"] for t in SURFACE["templates"]]
    assert [t.uri_template for t in templates] == ["lgrep://file/{+path}"]
    assert [(p.name, [(a.name, a.required) for a in p.arguments or []]) for p in prompts] == [
        ("code_review", [("path", True)]),
        ("explain_codebase", []),
        ("find_similar", [("path", True), ("line", True)]),
    ]
    assert mcp.engine.calls == []  # listing asks the engine nothing


# --- lgrep_search --------------------------------------------------------------------------------------


def test_search_sends_every_filter_and_answers_with_the_hits_and_their_files(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(SearchRequest, respond([VERIFY_HIT, LOGIN_HIT], notes=("the query could not be embedded",)))
    answer = mcp.answer(
        "lgrep_search",
        {
            "query": "where are tokens verified",
            "limit": 5,
            "search_type": "bm25",
            "path": "src/**/*.py",
            "language": "python",
            "content": "code",
        },
    )
    assert mcp.engine.calls == [
        SearchRequest(
            "where are tokens verified",
            project_root=str(repo),
            limit=5,
            search_type=SearchType.BM25,
            path_glob="src/**/*.py",
            languages=("python",),
            content_types=(ContentType.CODE,),
        )
    ]
    assert without_budget(answer) == {
        "project_root": str(repo),
        "scope": "",
        "results": [hit_item(VERIFY_HIT), hit_item(LOGIN_HIT)],
        "stale_files": ["src/app.py"],
        "vectors_pending": 0,
        "notes": [
            "the query could not be embedded",
            "1 result file(s) changed since indexing (src/app.py): their snippets may be out of date, lgrep_get_file "
            "shows them as they are now",
        ],
    }
    check_receipt(mcp, answer, ["src/app.py", "src/auth.py"])


def test_search_defaults_and_a_folder_keep_the_search_to_that_folder(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(SearchRequest, respond([VERIFY_HIT], vectors_pending=12))
    answer = mcp.answer("lgrep_search", {"query": "verify", "path": "src"})
    assert mcp.engine.calls == [SearchRequest("verify", project_root=str(repo), limit=10, path_glob="src")]
    assert answer["scope"] == "src"
    assert answer["vectors_pending"] == 12
    assert answer["notes"] == [
        "12 chunks are still waiting for their vectors: results lean on words and names until they are in"
    ]
    assert answer["results"] == [hit_item(VERIFY_HIT)]


def test_search_by_an_absolute_file_path_inside_the_project_sends_it_relative(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(SearchRequest, respond([]))
    answer = mcp.answer("lgrep_search", {"query": "verify", "path": str(repo / "src" / "auth.py")})
    (sent,) = mcp.engine.requests(SearchRequest)
    assert sent == SearchRequest("verify", project_root=str(repo), limit=10, path_glob="src/auth.py")
    assert (answer["scope"], answer["results"], answer["stale_files"]) == ("src/auth.py", [], [])
    assert "notes" not in answer
    assert answer["receipt"] == {"files": 0, "file_tokens": 0, "saved": -answer["tokens"]}


def test_search_in_files_mode_answers_with_files_and_their_line_ranges(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(SearchRequest, respond([], files=[AUTH_FILE_HIT, APP_FILE_HIT]))
    issue = "Traceback (most recent call last):\n  File src/auth.py, line 11, in verify\njwt.ExpiredSignatureError"
    answer = mcp.answer("lgrep_search", {"query": issue, "files": True, "limit": 3})
    assert mcp.engine.calls == [SearchRequest(issue, project_root=str(repo), limit=3, files=True)]
    assert without_budget(answer) == {
        "project_root": str(repo),
        "scope": "",
        "results": [],
        "files": [
            {**file_hit_json(AUTH_FILE_HIT), "uri": "lgrep://file/src/auth.py"},
            {**file_hit_json(APP_FILE_HIT), "uri": "lgrep://file/src/app.py"},
        ],
        "stale_files": ["src/app.py"],
        "vectors_pending": 0,
        "notes": [
            "1 result file(s) changed since indexing (src/app.py): their line ranges may have moved, "
            "lgrep_get_file shows them as they are now"
        ],
    }
    assert answer["files"][0]["ranges"] == [
        {"start_line": 9, "end_line": 11, "symbol": "verify"},
        {"start_line": 6, "end_line": 8, "symbol": "Auth"},
    ]
    check_receipt(mcp, answer, ["src/app.py", "src/auth.py"])


def test_an_issue_length_question_without_files_leads_with_the_files_then_their_best_chunks(
    mcp: Mcp, repo: Path
) -> None:
    """The engine ranks a task question's chunks by their files and sends both: the answer puts
    the files first, and its receipt counts the files of both lists."""
    mcp.engine.answer(SearchRequest, respond([VERIFY_HIT, LOGIN_HIT], files=[AUTH_FILE_HIT, APP_FILE_HIT]))
    issue = "verify() fails on expired tokens\n" + "After an hour every request is refused with a 401. " * 6
    answer = mcp.answer("lgrep_search", {"query": issue})
    assert mcp.engine.calls == [SearchRequest(issue, project_root=str(repo), limit=10)]  # files not asked
    assert list(answer)[:4] == ["project_root", "scope", "files", "results"]
    assert [f["path"] for f in answer["files"]] == ["src/auth.py", "src/app.py"]
    assert answer["files"][0] == {**file_hit_json(AUTH_FILE_HIT), "uri": "lgrep://file/src/auth.py"}
    assert answer["results"] == [hit_item(VERIFY_HIT), hit_item(LOGIN_HIT)]
    assert answer["stale_files"] == ["src/app.py"]  # a file of the files list changed on disk
    check_receipt(mcp, answer, ["src/app.py", "src/auth.py"])


def test_an_answer_that_leads_with_files_cuts_chunks_before_files_to_fit_max_tokens(mcp: Mcp, repo: Path) -> None:
    long_hit = replace(VERIFY_HIT, content="\n".join(f"    check_{i}(token)  # {'x' * 60}" for i in range(40)))
    mcp.engine.answer(SearchRequest, respond([long_hit] * 8, files=[AUTH_FILE_HIT, APP_FILE_HIT]))
    issue = "verify() fails on expired tokens\n" + "After an hour every request is refused with a 401. " * 6
    answer = mcp.answer("lgrep_search", {"query": issue, "max_tokens": 500})
    assert answer["tokens"] <= 500
    assert [f["path"] for f in answer["files"]] == ["src/auth.py", "src/app.py"]  # kept whole
    assert len(answer["results"]) < 8 and answer["omitted"] == 8 - len(answer["results"])
    assert sum("left out to stay within 500 tokens" in n for n in answer["notes"]) == 1


def test_search_of_a_project_with_no_index_builds_it_first_with_progress(
    engine: FakeEngine, mcp: Mcp, repo: Path
) -> None:
    engine.projects.clear()  # never indexed: the FakeEngine's search raises NotFoundError
    progress: list[tuple[float, float | None, str | None]] = []
    answer = mcp.answer("lgrep_search", {"query": "verify"}, progress=progress)
    assert [type(c) for c in engine.calls] == [SearchRequest, StatusRequest, IndexProjectRequest, SearchRequest]
    search = SearchRequest("verify", project_root=str(repo), limit=10)
    assert engine.calls == [
        search,
        StatusRequest(str(repo), brief=True),
        IndexProjectRequest(str(repo), force=False, wait_for_vectors=False),
        search,
    ]
    assert len(engine.runs) == 1 and engine.runs[0].cancelled.is_set()
    assert progress == [(1.0, 2.0, "walk: 1/2"), (2.0, 2.0, "chunk: 2/2")]
    assert without_budget(answer) == {
        "project_root": str(repo),
        "scope": "",
        "results": [],
        "stale_files": [],
        "vectors_pending": 0,
        "notes": [f"indexed {repo} first (2 files, 0 chunks)"],
    }


def test_search_while_the_first_index_is_still_running_says_how_far_it_is(
    engine: FakeEngine, mcp: Mcp, repo: Path
) -> None:
    engine.project(repo, ProjectState.BUILDING)
    engine.stall_index = True
    answer = mcp.answer("lgrep_search", {"query": "verify", "files": True})
    assert [type(c) for c in engine.calls] == [SearchRequest, StatusRequest, IndexProjectRequest]
    assert without_budget(answer) == {
        "project_root": str(repo),
        "scope": "",
        "results": [],
        "files": [],
        "stale_files": [],
        "indexing": {
            "phase": "chunk",
            "files_done": 2,
            "files_total": 2,
            "chunks_done": 0,
            "chunks_total": 0,
            "eta_seconds": None,
        },
        "notes": [
            f"{repo} is being indexed for the first time (chunk: 2/2 files); it is searchable by words and "
            "names once its files are chunked: search again shortly, or follow it with lgrep_status"
        ],
    }
    assert "receipt" not in answer


def test_search_of_a_released_version_names_it_and_links_no_file(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(SearchRequest, respond([VERIFY_HIT], release=AGENT_RELEASE))
    answer = mcp.answer(
        "lgrep_search", {"query": "verify", "component": "agent", "version": "^0.7", "path": "./src", "limit": 4}
    )
    assert mcp.engine.calls == [
        SearchRequest("verify", project_root=str(repo), limit=4, path_glob="src", component="agent", version="^0.7")
    ]
    assert without_budget(answer) == {
        "project_root": str(repo),
        "scope": "",
        "results": [hit_item(VERIFY_HIT, uri=False)],
        "stale_files": [],
        "release": release_json(AGENT_RELEASE),
        "vectors_pending": 0,
    }
    assert "receipt" not in answer  # no file on disk is involved


def test_search_of_several_projects_ranks_their_hits_together(
    engine: FakeEngine, mcp: Mcp, repo: Path, tmp_path: Path
) -> None:
    other = (tmp_path / "other").resolve()
    (other / ".git").mkdir(parents=True)
    (other / "lib").mkdir()
    (other / "lib" / "tokens.py").write_text("def check(token):\n    return token\n")
    engine.project(other)
    mcp.extra = [other]
    other_hit = replace(GUIDE_HIT, path="lib/tokens.py", symbol="check", kind=ChunkKind.FUNCTION, language="python")
    engine.answer(
        SearchRequest,
        lambda r: respond([VERIFY_HIT] if r.project_root == str(repo) else [other_hit])(r),
    )
    answer = mcp.answer("lgrep_search", {"query": "verify tokens", "projects": ["*"], "path": "**/*.py"})
    sent = [c for c in engine.calls if isinstance(c, SearchRequest)]
    assert sent == [
        SearchRequest("verify tokens", project_root=root, limit=10, path_glob="**/*.py", explain=True)
        for root in (str(repo), str(other))
    ]
    assert engine.requests(StatusRequest) == [StatusRequest(str(repo), brief=True), StatusRequest(str(other), True)]
    assert answer["project_root"] == ""
    assert answer["projects"] == [{"project_root": str(repo), "scope": ""}, {"project_root": str(other), "scope": ""}]
    assert [(r["project_root"], r["path"], r["uri"]) for r in answer["results"]] == [
        (str(repo), "src/auth.py", "lgrep://file/src/auth.py"),
        (str(other), "lib/tokens.py", None),  # only the default project's files are resources
    ]
    assert answer["stale_files"] == []
    assert answer["receipt"]["files"] == 2
    assert answer["receipt"]["file_tokens"] == mcp.tokens_of("src/auth.py") + mcp.tokens_of("lib/tokens.py", root=other)


def test_search_fits_its_budget_by_leaving_out_the_lowest_results(mcp: Mcp) -> None:
    long = replace(VERIFY_HIT, content="\n".join(f"    step_{i} = verify(token_{i})" for i in range(40)))
    hits = [replace(long, path=f"src/mod_{i}.py", score=1 - i / 100) for i in range(30)]
    mcp.engine.answer(SearchRequest, respond(hits))
    answer = mcp.answer("lgrep_search", {"query": "verify", "limit": 30, "max_tokens": 1000})
    kept = len(answer["results"])
    assert 0 < kept < 30
    assert answer["omitted"] == 30 - kept
    assert answer["tokens"] <= 1000 and answer["max_tokens"] == 1000
    assert [r["path"] for r in answer["results"]] == [f"src/mod_{i}.py" for i in range(kept)]
    assert all(r["truncated"] and r["content"].count("\n") < 25 for r in answer["results"])
    assert answer["notes"] == [  # the budget the agent asked for, not what is left once the receipt is counted
        f"{30 - kept} more result(s) left out to stay within 1000 tokens: ask again with a larger max_tokens, "
        "a smaller limit or a narrower path"
    ]


# --- lgrep_get_file ------------------------------------------------------------------------------------


def test_get_file_reads_the_lines_asked_for(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(GetFileRequest, lambda r: AUTH_SLICE)
    answer = mcp.answer("lgrep_get_file", {"path": "src/auth.py", "start_line": 9, "end_line": 11})
    assert mcp.engine.calls == [GetFileRequest(str(repo), "src/auth.py", 9, 11)]
    assert without_budget(answer) == {
        "path": "src/auth.py",
        "language": "python",
        "content": AUTH_SLICE.content,
        "start_line": 9,
        "end_line": 11,
        "total_lines": 11,
        "stale": False,
        "truncated": False,
    }
    check_receipt(mcp, answer, ["src/auth.py"])


def test_get_file_by_an_absolute_path_inside_the_project_sends_it_relative(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(GetFileRequest, lambda r: replace(AUTH_SLICE, path=r.path))
    mcp.answer("lgrep_get_file", {"path": str(repo / "docs" / "guide.md")})
    assert mcp.engine.calls == [GetFileRequest(str(repo), "docs/guide.md", 0, 0)]


def test_get_file_cuts_a_long_range_at_a_line_end_and_names_the_next_call(mcp: Mcp, repo: Path) -> None:
    lines = [f"value_{i} = compute({i}, {i * 7}, 'a string that costs tokens {i}')" for i in range(1, 401)]
    mcp.engine.answer(GetFileRequest, lambda r: FileSlice("src/auth.py", "python", "\n".join(lines), 1, 400, 400))
    answer = mcp.answer("lgrep_get_file", {"path": "src/auth.py", "max_tokens": 600})
    end = answer["end_line"]
    assert 1 <= end < 400
    assert answer["content"] == "\n".join(lines[:end])
    assert (answer["start_line"], answer["total_lines"], answer["truncated"]) == (1, 400, True)
    assert answer["notes"] == [f"lines 1-{end} of 400: call again with start_line={end + 1} for more"]
    check_receipt(mcp, answer, ["src/auth.py"], max_tokens=600)


def test_get_file_skeleton_answers_with_the_structure_and_what_it_saves(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(SkeletonRequest, lambda r: AUTH_SKELETON)
    answer = mcp.answer("lgrep_get_file", {"path": "src/auth.py", "skeleton": True})
    assert mcp.engine.calls == [SkeletonRequest(str(repo), "src/auth.py")]
    assert without_budget(answer) == {
        "path": "src/auth.py",
        "language": "python",
        "content": AUTH_SKELETON.content,  # no definitions: its lines say where each one is
        "total_lines": 11,
        "skeleton_tokens": 48,
        "file_tokens": 77,
        "tokens_saved": 29,
        "tokenizer": "all-MiniLM-L6-v2",
        "skeleton": True,
        "start_line": 1,
        "end_line": 11,
        "stale": False,
        "truncated": False,
    }
    check_receipt(mcp, answer, ["src/auth.py"])


def test_get_file_skeleton_of_a_script_says_to_read_its_lines(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(SkeletonRequest, lambda r: Skeleton(r.path, "python", "", (), 6, 0, 40, 40, "all-MiniLM-L6-v2"))
    answer = mcp.answer("lgrep_get_file", {"path": "src/app.py", "skeleton": True})
    assert mcp.engine.calls == [SkeletonRequest(str(repo), "src/app.py")]
    assert answer["notes"] == ["no imports or definitions (a script): read its lines without skeleton"]
    assert (answer["content"], answer["skeleton_tokens"], answer["end_line"]) == ("", 0, 6)


def test_get_file_of_a_released_version_reads_it_from_the_release(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(GetFileRequest, lambda r: replace(AUTH_SLICE, release=AGENT_RELEASE))
    answer = mcp.answer(
        "lgrep_get_file",
        {"path": "./src/auth.py", "component": "agent", "version": "0.7.3", "start_line": 9, "end_line": 11},
    )
    assert mcp.engine.calls == [GetFileRequest(str(repo), "src/auth.py", 9, 11, component="agent", version="0.7.3")]
    assert answer["release"] == release_json(AGENT_RELEASE)
    assert (answer["content"], answer["start_line"], answer["end_line"]) == (AUTH_SLICE.content, 9, 11)
    assert "receipt" not in answer  # the file on disk is not what was read
    assert answer["max_tokens"] == 4000


# --- lgrep_find_symbol, lgrep_find_related, lgrep_trace ------------------------------------------------


def test_find_symbol_sends_the_name_kind_folder_and_limit(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(FindSymbolRequest, lambda r: SYMBOL_MATCHES)
    answer = mcp.answer("lgrep_find_symbol", {"name": "verfy", "kind": "method", "path": "src", "limit": 5})
    assert mcp.engine.calls == [FindSymbolRequest(str(repo), "verfy", 5, (ChunkKind.METHOD,), path_glob="src")]
    assert without_budget(answer) == {
        "project_root": str(repo),
        "matches": [
            {**location_json(VERIFY), "score": 1.0, "exact": True, "uri": "lgrep://file/src/auth.py"},
            {**location_json(LOGIN), "score": 0.31, "exact": False, "uri": "lgrep://file/src/app.py"},
        ],
    }
    check_receipt(mcp, answer, ["src/app.py", "src/auth.py"])


def test_find_symbol_defaults_ask_the_whole_project(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(FindSymbolRequest, lambda r: [])
    answer = mcp.answer("lgrep_find_symbol", {"name": "Auth.verify"})
    assert mcp.engine.calls == [FindSymbolRequest(str(repo), "Auth.verify", 20, (), path_glob=None)]
    assert answer["matches"] == []


def test_find_related_sends_the_place_and_answers_with_the_anchor_and_related_code(mcp: Mcp, repo: Path) -> None:
    caller = replace(LOGIN_HIT, match=(MatchType.CALLER,), stale=False)
    mcp.engine.answer(FindRelatedRequest, lambda r: RelatedResult(VERIFY, (caller, GUIDE_HIT)))
    answer = mcp.answer("lgrep_find_related", {"path": "src/auth.py", "line": 10, "limit": 3})
    assert mcp.engine.calls == [FindRelatedRequest(str(repo), "src/auth.py", 10, 3)]
    assert without_budget(answer) == {
        "project_root": str(repo),
        "anchor": location_json(VERIFY),
        "related": [hit_item(caller), hit_item(GUIDE_HIT)],
    }
    assert answer["related"][0]["match"] == "caller"
    check_receipt(mcp, answer, ["docs/guide.md", "src/app.py"])


def test_trace_sends_every_argument_and_answers_with_brief_edges(mcp: Mcp, repo: Path) -> None:
    other_verify = Location("src/legacy.py", 3, 5, "verify", ChunkKind.FUNCTION, "python", ("verify",))
    edges = (
        TraceEdge(TraceDirection.CALLERS, 1, LOGIN, VERIFY, "src/app.py", 5, Resolution.IMPORT, sites=2),
        TraceEdge(
            TraceDirection.CALLERS,
            2,
            Location("src/app.py", 1, 1, "", ChunkKind.BLOCK, "python"),
            VERIFY,
            "src/app.py",
            1,
            Resolution.NAME,
            candidates=(VERIFY, other_verify),
        ),
        TraceEdge(
            TraceDirection.CALLEES,
            1,
            VERIFY,
            None,
            "src/auth.py",
            11,
            Resolution.NAME,
            candidates=(Location("src/jwt.py", 1, 9, "decode", ChunkKind.FUNCTION, "python", ("decode",)), LOGIN),
        ),
    )
    mcp.engine.answer(TraceRequest, lambda r: TraceResult("verify", (VERIFY,), False, edges, total=9, next_offset=3))
    answer = mcp.answer(
        "lgrep_trace",
        {"symbol": "verify", "direction": "callers", "depth": 2, "path": "src/auth.py", "limit": 3, "offset": 0},
    )
    assert mcp.engine.calls == [
        TraceRequest(str(repo), "verify", "src/auth.py", 2, TraceDirection.CALLERS, limit=3, offset=0)
    ]
    # an edge's ends are places: where the definition starts and its qualified name (a caller is in
    # the file of the call site)
    verify = {"path": "src/auth.py", "start_line": 9, "scope": ["Auth", "verify"]}
    login = {"path": "src/app.py", "start_line": 4, "scope": ["login"]}
    verify_calls, login_calls = ({"start_line": p["start_line"], "scope": p["scope"]} for p in (verify, login))
    assert without_budget(answer) == {
        "project_root": str(repo),
        "symbol": "verify",
        "definitions": [location_json(VERIFY)],
        "ambiguous": False,
        "edges": [
            {
                "direction": "callers",
                "depth": 1,
                "caller": login_calls,
                "callee": verify,
                "path": "src/app.py",
                "line": 5,
                "resolution": "import",
                "sites": 2,
            },
            {
                "direction": "callers",
                "depth": 2,
                "caller": {"start_line": 1, "scope": []},
                "callee": verify,
                "path": "src/app.py",
                "line": 1,
                "resolution": "name",
                "sites": 1,
                "others": 1,
            },
            {
                "direction": "callees",
                "depth": 1,
                "caller": verify_calls,
                "callee": None,
                "path": "src/auth.py",
                "line": 11,
                "resolution": "name",
                "sites": 1,
                "candidates": [{"path": "src/jwt.py", "start_line": 1, "scope": ["decode"]}, login],
            },
        ],
        "total": 9,
        "next_offset": 3,
        "resolve_imports": True,
        "notes": ["6 more edges: call again with offset=3"],
    }
    check_receipt(mcp, answer, ["src/app.py", "src/auth.py"])


def test_trace_defaults_and_an_ambiguous_name(mcp: Mcp, repo: Path) -> None:
    other_verify = Location("src/app.py", 4, 6, "verify", ChunkKind.FUNCTION, "python", ("verify",))
    mcp.engine.answer(TraceRequest, lambda r: TraceResult("verify", (VERIFY, other_verify), True, (), 0, 0))
    answer = mcp.answer("lgrep_trace", {"symbol": "verify"})
    assert mcp.engine.calls == [TraceRequest(str(repo), "verify", "", 1, TraceDirection.BOTH, limit=30, offset=0)]
    assert answer["definitions"] == [location_json(VERIFY), location_json(other_verify)]
    assert (answer["ambiguous"], answer["edges"]) == (True, [])
    assert answer["notes"] == ["several definitions: call again with path= the file of the one you mean"]


# --- lgrep_index, lgrep_status, lgrep_watch_start, lgrep_watch_stop -------------------------------------


def test_index_runs_to_its_summary_with_progress(engine: FakeEngine, mcp: Mcp, repo: Path) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    answer = mcp.answer("lgrep_index", {"force": True}, progress=progress)
    assert engine.calls == [IndexProjectRequest(str(repo), force=True, wait_for_vectors=False)]
    assert progress == [(1.0, 2.0, "walk: 1/2"), (2.0, 2.0, "chunk: 2/2")]
    assert answer == {
        "project_root": str(repo),
        "done": True,
        "summary": {
            "files_seen": 2,
            "files_indexed": 2,
            "files_unchanged": 0,
            "files_deleted": 0,
            "files_skipped": {},
            "chunks_written": 0,
            "chunks_total": 0,
            "vectors_embedded": 0,
            "vectors_pending": 0,
            "seconds_bm25": 0.0,
            "seconds_vectors": 0.0,
            "created": False,
            "tokens_billed": 0,
            "seed": None,
        },
    }


def test_index_that_outlasts_the_wait_answers_with_its_progress(engine: FakeEngine, mcp: Mcp, repo: Path) -> None:
    engine.stall_index = True
    answer = mcp.answer("lgrep_index", {"wait": 5})
    assert engine.calls == [IndexProjectRequest(str(repo), force=False, wait_for_vectors=False)]
    assert answer == {
        "project_root": str(repo),
        "done": False,
        "progress": {
            "phase": "chunk",
            "files_done": 2,
            "files_total": 2,
            "chunks_done": 0,
            "chunks_total": 0,
            "eta_seconds": None,
        },
        "notes": ["still indexing after 5 s (chunk: 2/2 files); it goes on in the daemon"],
    }


def test_index_of_another_root_indexes_that_project(engine: FakeEngine, mcp: Mcp, tmp_path: Path) -> None:
    other = (tmp_path / "other").resolve()
    (other / "lib").mkdir(parents=True)
    mcp.extra = [other]
    answer = mcp.answer("lgrep_index", {"path": str(other / "lib")})
    assert engine.calls == [IndexProjectRequest(str(other), force=False, wait_for_vectors=False)]
    assert (answer["project_root"], answer["done"]) == (str(other), True)


def test_status_answers_with_the_whole_status_and_whether_it_is_stale(mcp: Mcp, repo: Path) -> None:
    from datetime import UTC, datetime

    status = ProjectStatus(
        project_root=str(repo),
        state=ProjectState.READY,
        index_dir="/cache/projects/project-1a2b",
        watched=True,
        files=3,
        chunks=14,
        vectors_pending=2,
        languages={"python": 2, "markdown": 1},
        provider="local",
        model="all-MiniLM-L6-v2 (int8)",
        dimension=384,
        chunker_version="7",
        last_indexed=datetime(2026, 5, 1, 12, 30, tzinfo=UTC),
        changes=FileChanges(added=1, modified=2),
        project_spend=SpendTotals(tokens=1200, requests=3, cost_usd=0.0000241),
        total_spend=SpendTotals(tokens=5000, requests=9, cost_usd=0.0001, unpriced_models=("acme-embed",)),
        spend_warnings=("the cost of acme-embed is unknown",),
        watch_leases=2,
    )
    mcp.engine.answer(StatusRequest, lambda r: status)
    answer = mcp.answer("lgrep_status")
    assert mcp.engine.calls == [StatusRequest(str(repo), brief=False)]
    assert answer == {
        "project_root": str(repo),
        "state": "ready",
        "index_dir": "/cache/projects/project-1a2b",
        "watched": True,
        "watch_leases": 2,
        "detail": "",
        "files": 3,
        "chunks": 14,
        "vectors_pending": 2,
        "languages": {"python": 2, "markdown": 1},
        "provider": "local",
        "model": "all-MiniLM-L6-v2 (int8)",
        "dimension": 384,
        "chunker_version": "7",
        "seed": None,
        "last_indexed": "2026-05-01T12:30:00+00:00",
        "changes": {"added": 1, "modified": 2, "deleted": 0, "total": 3},
        "project_spend": {
            "tokens": 1200,
            "requests": 3,
            "cost_usd": 2.4e-05,
            "cost_known": True,
            "unpriced_models": [],
        },
        "total_spend": {
            "tokens": 5000,
            "requests": 9,
            "cost_usd": 0.0001,
            "cost_known": False,
            "unpriced_models": ["acme-embed"],
        },
        "spend_warnings": ["the cost of acme-embed is unknown"],
        "stale": True,
    }


def test_status_of_an_index_being_built_has_its_state_and_detail_only(mcp: Mcp, repo: Path) -> None:
    mcp.engine.project(repo, ProjectState.BUILDING)
    mcp.engine.answer(
        StatusRequest,
        lambda r: ProjectStatus(r.project_root, ProjectState.BUILDING, detail="being indexed by pid 4242"),
    )
    answer = mcp.answer("lgrep_status", {"path": "src"})
    assert mcp.engine.calls == [StatusRequest(str(repo))]
    assert answer == {
        "project_root": str(repo),
        "state": "building",
        "index_dir": "",
        "watched": False,
        "watch_leases": 0,
        "detail": "being indexed by pid 4242",
        "project_spend": None,
        "total_spend": None,
        "spend_warnings": [],
        "stale": False,
    }


def test_watch_start_and_stop_name_the_project(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(WatchProjectRequest, lambda r: WatchResult(watched=True, already_watched=False))
    mcp.engine.answer(UnwatchProjectRequest, lambda r: True)
    started = mcp.answer("lgrep_watch_start")
    stopped = mcp.answer("lgrep_watch_stop", {"path": str(repo)})
    assert mcp.engine.calls == [WatchProjectRequest(str(repo), debounce_ms=None), UnwatchProjectRequest(str(repo))]
    assert started == {"project_root": str(repo), "watched": True, "already_watched": False}
    assert stopped == {"project_root": str(repo), "was_watched": True}


def test_watch_stop_of_a_project_that_was_not_watched(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(UnwatchProjectRequest, lambda r: False)
    assert mcp.answer("lgrep_watch_stop") == {"project_root": str(repo), "was_watched": False}


# --- lgrep_releases ------------------------------------------------------------------------------------


def test_releases_lists_components_then_versions_then_a_versions_files(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(ListComponentsRequest, lambda r: COMPONENTS)
    mcp.engine.answer(ListVersionsRequest, lambda r: AGENT_VERSIONS)
    mcp.engine.answer(ListFilesRequest, lambda r: AGENT_FILES)
    components = mcp.answer("lgrep_releases")
    versions = mcp.answer("lgrep_releases", {"component": "agent"})
    files = mcp.answer(
        "lgrep_releases", {"component": "agent", "version": "^0.7", "path": "src/*.py", "language": "python"}
    )
    assert mcp.engine.calls == [
        ListComponentsRequest(str(repo)),
        ListVersionsRequest(str(repo), "agent"),
        ListFilesRequest(
            str(repo), path_glob="src/*.py", languages=("python",), limit=None, component="agent", version="^0.7"
        ),
    ]
    assert without_budget(components) == {
        "project_root": str(repo),
        "components": [
            {"name": "agent", "versions": 3, "latest": "0.7.3"},
            {"name": "server", "versions": 1, "latest": "1.2.0"},
        ],
        "total": 2,
    }
    assert without_budget(versions) == {
        "project_root": str(repo),
        "versions": [release_json(r) for r in AGENT_VERSIONS],
        "total": 3,
    }
    assert versions["versions"][1]["prerelease"] is True
    assert without_budget(files) == {
        "project_root": str(repo),
        "files": [
            {"path": "src/app.py", "language": "python", "content_type": "code", "chunks": 1, "last_line": 6},
            {"path": "src/auth.py", "language": "python", "content_type": "code", "chunks": 2, "last_line": 11},
        ],
        "release": release_json(AGENT_RELEASE),
        "total": 2,
    }
    for answer in (components, versions, files):
        assert "receipt" not in answer and answer["max_tokens"] == 4000


def test_releases_of_a_component_with_no_files_matching(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(ListFilesRequest, lambda r: replace(AGENT_FILES, files=(), total=0))
    answer = mcp.answer("lgrep_releases", {"component": "agent", "version": "latest"})
    assert mcp.engine.calls == [ListFilesRequest(str(repo), component="agent", version="latest")]
    assert (answer["files"], answer["total"], answer["release"]) == ([], 0, release_json(AGENT_RELEASE))


def test_get_file_and_find_symbol_of_a_server_started_in_a_subfolder(mcp: Mcp, repo: Path) -> None:
    # A root inside the git project: its project is the repository, kept to the root's folder.
    mcp.default = repo / "src"
    mcp.engine.answer(FindSymbolRequest, lambda r: SYMBOL_MATCHES)
    mcp.engine.answer(SearchRequest, respond([VERIFY_HIT]))
    found = mcp.answer("lgrep_find_symbol", {"name": "verify"})
    searched = mcp.answer("lgrep_search", {"query": "verify"})
    assert mcp.engine.calls == [
        FindSymbolRequest(str(repo), "verify", 20, path_glob="src"),
        SearchRequest("verify", project_root=str(repo), limit=10, path_glob="src"),
    ]
    assert found["project_root"] == str(repo)
    assert (searched["project_root"], searched["scope"]) == (str(repo), "src")
    assert [m["uri"] for m in found["matches"]] == ["lgrep://file/src/auth.py", "lgrep://file/src/app.py"]


def test_trace_and_related_of_a_subfolder_root_leave_out_what_lies_outside_it(mcp: Mcp, repo: Path) -> None:
    mcp.default = repo / "src"
    guide = replace(GUIDE_HIT, match=(MatchType.SHARED_NAMES,))
    mcp.engine.answer(FindRelatedRequest, lambda r: RelatedResult(VERIFY, (LOGIN_HIT, guide)))
    doc = Location("docs/guide.md", 1, 3, "Guide", ChunkKind.SECTION, "markdown", ("Guide",))
    edges = (
        TraceEdge(TraceDirection.CALLERS, 1, LOGIN, VERIFY, "src/app.py", 5, Resolution.IMPORT),
        TraceEdge(TraceDirection.CALLERS, 1, doc, VERIFY, "docs/guide.md", 3, Resolution.NAME),
    )
    mcp.engine.answer(TraceRequest, lambda r: TraceResult("verify", (VERIFY, doc), True, edges, 2, 0))
    # relative paths name files of the root's project (src/auth.py), as answers do
    related = mcp.answer("lgrep_find_related", {"path": "src/auth.py", "line": 9})
    traced = mcp.answer("lgrep_trace", {"symbol": "verify"})
    assert mcp.engine.calls == [
        FindRelatedRequest(str(repo), "src/auth.py", 9, 10),
        TraceRequest(str(repo), "verify", limit=30),
    ]
    assert [r["path"] for r in related["related"]] == ["src/app.py"]
    assert [d["path"] for d in traced["definitions"]] == ["src/auth.py"]
    assert [(e["path"], e["line"]) for e in traced["edges"]] == [("src/app.py", 5)]
    assert traced["receipt"]["files"] == 2  # src/auth.py and src/app.py, never docs/
