"""The `lgrep` command through its command parser (lgrep_cli.cli.main, as the `lgrep` script runs it)
over an engine in memory (lgrep_core.testing.engines.FakeEngine): for every command that goes through
an engine, the request the engine receives, the `--json` shape docs/json.md documents, the exit code
and, when the engine fails, the one line on stderr. No daemon, index or model: `make_app` (and the raw
daemon client `connect` that `lgrep index --cancel` uses) answer with the fake engine.
"""

from __future__ import annotations

import fcntl
import gc
import io
import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from lgrep_cli import cli as cli_module
from lgrep_cli.cli import main
from lgrep_cli.shell import note, spend_gate
from lgrep_core.app.api import Lgrep
from lgrep_core.domain.errors import (
    IndexBusyError,
    IndexMismatchError,
    InvalidRequestError,
    LgrepError,
    NotFoundError,
    ServerUnavailableError,
)
from lgrep_core.domain.models import (
    CancelIndexRequest,
    CancelResult,
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
    IndexProjectRequest,
    LineRange,
    ListComponentsRequest,
    ListFilesRequest,
    ListVersionsRequest,
    Location,
    MatchType,
    ProjectState,
    ProjectStatus,
    RelatedResult,
    Release,
    RemoveProjectRequest,
    RemoveResult,
    Request,
    Resolution,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SearchType,
    ServerInfo,
    Skeleton,
    SkeletonRequest,
    StatusRequest,
    SymbolMatch,
    TraceDirection,
    TraceEdge,
    TraceRequest,
    TraceResult,
    UnwatchProjectRequest,
    WatchProjectRequest,
    WatchResult,
)
from lgrep_core.rpc.endpoints import ClientSettings
from lgrep_core.storage.layout import project_dir
from lgrep_core.testing.engines import FakeEngine

# The keys docs/json.md lists for each answer (lgrep_core.app.serialize), in the order they are printed.
SEARCH_KEYS = [
    "query",
    "project_root",
    "scope",
    "results",
    "files",
    "query_kind",
    "search_type",
    "timings_ms",
    "chunks_searched",
    "vectors_pending",
    "notes",
]
HIT_KEYS = ["path", "start_line", "end_line", "symbol", "kind", "language", "score", "match", "stale", "content"]
HIT_KEYS += ["truncated"]
FILE_HIT_KEYS = ["path", "score", "language", "ranges", "why", "stale"]
LOCATION_KEYS = ["path", "start_line", "end_line", "symbol", "kind", "language", "scope", "signature"]
SLICE_KEYS = ["path", "language", "content", "start_line", "end_line", "total_lines", "stale", "truncated"]
RELEASE_KEYS = ["component", "version", "tag", "commit", "files", "prerelease", "indexed_at"]
SKELETON_KEYS = ["path", "language", "content", "definitions", "total_lines", "skeleton_tokens", "file_tokens"]
SKELETON_KEYS += ["tokens_saved", "tokenizer"]
TRACE_KEYS = ["project_root", "symbol", "definitions", "ambiguous", "edges", "total", "next_offset", "resolve_imports"]
EDGE_KEYS = ["direction", "depth", "caller", "callee", "path", "line", "resolution", "sites"]
STATUS_COMMON = ["project_root", "state", "index_dir", "watched", "watch_leases", "detail"]
STATUS_READY = ["files", "chunks", "vectors_pending", "languages", "provider", "model", "dimension"]
STATUS_READY += ["chunker_version", "seed", "last_indexed", "changes"]
STATUS_SPEND = ["project_spend", "total_spend", "spend_warnings"]
SUMMARY_KEYS = ["project_root", "files_seen", "files_indexed", "files_unchanged", "files_deleted", "files_skipped"]
SUMMARY_KEYS += ["chunks_written", "chunks_total", "vectors_embedded", "vectors_pending", "seconds_bm25"]
SUMMARY_KEYS += ["seconds_vectors", "created", "tokens_billed", "seed"]

AUTH_PY = "\n".join(f"line {n}" for n in range(1, 21)) + "\n"


# ------------------------------------------------------------------------------------- harness


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Shell:
    """What the command's shell was asked for: each `make_app` call's options, each `connect`."""

    engine: FakeEngine
    apps: list[dict[str, Any]] = field(default_factory=list)
    connects: list[bool] = field(default_factory=list)  # `start` of each connect(...)
    app_error: LgrepError | None = None  # make_app raises this (no daemon, and none can be started)
    daemon: DaemonEngine | None = None  # what connect(...) answers (None: no daemon runs)


class DaemonEngine(FakeEngine):
    """The daemon's raw client as `lgrep index --cancel` uses it: a context manager with server_info."""

    pid = 4242

    def server_info(self) -> ServerInfo:
        return ServerInfo(
            version="0.9.0", contract_revision=10, pid=self.pid, started_at=None, roles=(), cache_dir="/cache"
        )

    def __enter__(self) -> DaemonEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, the cache dir and the user's config in tmp_path, nothing of the user's settings."""
    for key in list(os.environ):
        if key.startswith("LGREP_") or key == "XDG_CONFIG_HOME":
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LGREP_CACHE_DIR", str(cache))
    monkeypatch.setenv("LGREP_SERVER__AUTOSTART", "0")
    return home


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return (tmp_path / "cache").resolve()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository (no index in the cache: the repository is the project) with src/auth.py,
    and the working folder."""
    root = (tmp_path / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "auth.py").write_text(AUTH_PY)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def shell(engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> Shell:
    """make_app and connect, replaced: the application API over the fake engine."""
    shell = Shell(engine)

    def make_app(cs: ClientSettings, **options: Any) -> Lgrep:
        shell.apps.append(options)
        if shell.app_error is not None:
            raise shell.app_error
        return Lgrep(engine, Path(cs.cache_dir), spend_gate=spend_gate, notice=note)

    def connect(cs: ClientSettings, *, start: bool) -> DaemonEngine | None:
        shell.connects.append(start)
        return shell.daemon

    monkeypatch.setattr(cli_module, "make_app", make_app)
    monkeypatch.setattr(cli_module, "connect", connect)
    return shell


@pytest.fixture
def lgrep(shell: Shell, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run `lgrep ARGS...` in this process: its exit code, stdout and stderr."""

    def run(*args: str) -> Result:
        root_logger = logging.getLogger()
        handlers, level = root_logger.handlers[:], root_logger.level
        capsys.readouterr()
        try:
            code = main(list(args))
        finally:
            gc.unfreeze()  # main() freezes what it made, as a process about to exit may
            root_logger.handlers[:] = handlers  # main() points logging at its stderr
            root_logger.setLevel(level)
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


def _hit(path: str = "src/auth.py", start: int = 10, end: int = 14, **changes: Any) -> SearchHit:
    fields: dict[str, Any] = {
        "path": path,
        "start_line": start,
        "end_line": end,
        "symbol": "verify_token",
        "kind": ChunkKind.FUNCTION,
        "language": "python",
        "score": 0.0325,
        "content": "def verify_token(token: str) -> Claims:\n    return decode(token, KEY)\n",
        "match": (MatchType.BM25, MatchType.VECTOR),
        "scores": {"bm25_rank": 1.0, "vector_rank": 2.0},
        "why": ("defines verify_token",),
    }
    fields.update(changes)
    return SearchHit(**fields)


def _location(path: str = "src/auth.py", start: int = 10, end: int = 14, symbol: str = "verify_token") -> Location:
    return Location(
        path=path,
        start_line=start,
        end_line=end,
        symbol=symbol,
        kind=ChunkKind.FUNCTION,
        language="python",
        scope=(symbol,),
        signature=f"def {symbol}(token: str) -> Claims:",
    )


RELEASE = Release("agent", "0.7.3", "agent-v0.7.3", commit="9f2c1e0", files=41, indexed_at=1_700_000_000.0)


def _answer(engine: FakeEngine, kind: type[Request[Any]], value: Any) -> list[Any]:
    """Answer every request of `kind` with `value`; the list the requests land in."""
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen.append(request)
        return value

    engine.answer(kind, handler)
    return seen


def _response(root: Path, **changes: Any) -> SearchResponse:
    fields: dict[str, Any] = {
        "results": [_hit()],
        "timings_ms": {"total": 4.5},
        "chunks_searched": 120,
        "vectors_pending": 0,
        "query_kind": "natural",
        "search_type": SearchType.HYBRID,
        "project_root": str(root),
    }
    fields.update(changes)
    return SearchResponse(**fields)


# -------------------------------------------------------------------------------------- search


def test_search_asks_the_git_root_and_prints_each_hit(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, shell: Shell
) -> None:
    engine.project(repo)
    _answer(engine, SearchRequest, _response(repo))
    result = lgrep("search", "where are tokens verified")
    assert (result.code, result.err) == (0, "")
    assert engine.calls == [SearchRequest("where are tokens verified", project_root=str(repo))]
    assert shell.apps == [{"no_daemon": False, "start": True, "lock_timeout_s": 3600.0, "lite": True}]
    assert result.out.splitlines() == [
        "src/auth.py:10-14  verify_token (function)  score=0.0325  via bm25+vector",
        "    def verify_token(token: str) -> Claims:",
        "        return decode(token, KEY)",
        "",
    ]
    assert engine.closed


def test_search_options_reach_the_request_and_json_has_the_documented_shape(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, shell: Shell
) -> None:
    engine.project(repo)
    _answer(engine, SearchRequest, _response(repo, notes=("the query could not be embedded",), vectors_pending=3))
    result = lgrep(
        "search",
        "verify",
        "-n",
        "5",
        "--type",
        "bm25",
        "--path",
        "src/**/*.py",
        "--lang",
        "python",
        "--lang",
        "go",
        "--content",
        "code",
        "--bm25-weight",
        "0.5",
        "--explain",
        "--json",
        "--no-daemon",
    )
    assert result.code == 0, result.err
    assert engine.requests(SearchRequest) == [
        SearchRequest(
            "verify",
            project_root=str(repo),
            limit=5,
            search_type=SearchType.BM25,
            path_glob="src/**/*.py",
            languages=("python", "go"),
            content_types=(ContentType.CODE,),
            bm25_weight=0.5,
            explain=True,
        )
    ]
    assert shell.apps == [{"no_daemon": True, "start": True, "lock_timeout_s": 3600.0, "lite": True}]
    payload = result.json()
    assert list(payload) == SEARCH_KEYS
    assert payload["query"] == "verify" and payload["project_root"] == str(repo) and payload["scope"] == ""
    assert payload["files"] == [] and payload["notes"] == ["the query could not be embedded"]
    assert (payload["search_type"], payload["query_kind"], payload["vectors_pending"]) == ("hybrid", "natural", 3)
    (hit,) = payload["results"]
    assert list(hit) == [*HIT_KEYS, "signals", "why"]  # --explain adds the numbers and the words
    assert hit["match"] == "bm25+vector" and hit["kind"] == "function"
    assert hit["signals"] == {"bm25_rank": 1.0, "vector_rank": 2.0} and hit["why"] == ["defines verify_token"]
    assert result.err == ""  # --json: the notes are in the answer, not on stderr


def test_search_notes_go_to_stderr_in_human_output(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    engine.project(repo)
    _answer(engine, SearchRequest, _response(repo, results=[], notes=("the query could not be embedded",)))
    result = lgrep("search", "verify")
    assert result.code == 0 and result.out == ""
    assert result.err.splitlines() == ["no results", "note: the query could not be embedded"]


def test_search_files_answers_with_files_and_their_line_ranges(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    engine.project(repo)
    files = [
        FileHit(
            "src/auth.py",
            0.0492,
            "python",
            (LineRange(27, 39, "verify_jwt"), LineRange(1, 8)),
            why=("named in the traceback",),
        )
    ]
    _answer(engine, SearchRequest, _response(repo, results=[], files=files))
    human = lgrep("search", "Traceback: verify_jwt raised KeyError", "--files")
    assert human.code == 0, human.err
    assert human.out.splitlines() == [
        "src/auth.py  score=0.0492",
        "    src/auth.py:27-39 (verify_jwt)",
        "    src/auth.py:1-8",
    ]
    payload = lgrep("search", "Traceback: verify_jwt raised KeyError", "--files", "--json").json()
    assert all(r.files for r in engine.requests(SearchRequest))
    assert list(payload) == SEARCH_KEYS and payload["results"] == []
    (file_hit,) = payload["files"]
    assert list(file_hit) == FILE_HIT_KEYS
    assert file_hit["ranges"] == [
        {"start_line": 27, "end_line": 39, "symbol": "verify_jwt"},
        {"start_line": 1, "end_line": 8, "symbol": ""},
    ]


def test_search_of_a_task_question_prints_the_files_to_open_then_their_best_chunks(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    engine.project(repo)
    files = [FileHit("src/auth.py", 0.0492, "python", (LineRange(27, 39, "verify_jwt"),))]
    _answer(engine, SearchRequest, _response(repo, files=files))
    human = lgrep("search", "verify_jwt raised KeyError\nafter the upgrade\nevery login fails")
    assert human.code == 0, human.err
    lines = human.out.splitlines()
    assert lines[:3] == ["src/auth.py  score=0.0492", "    src/auth.py:27-39 (verify_jwt)", ""]
    assert lines[3].startswith("src/auth.py:10-14  verify_token (function)")
    assert not any(r.files for r in engine.requests(SearchRequest))


@pytest.mark.parametrize(("glob", "sent"), [(None, "src"), ("*.py", "src/*.py")])
def test_search_of_a_folder_in_a_repository_is_the_repository_kept_to_the_folder(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, glob: str | None, sent: str
) -> None:
    engine.project(repo)
    _answer(engine, SearchRequest, _response(repo))
    result = lgrep("search", "verify", "src", "--json", *(["--path", glob] if glob else []))
    assert result.code == 0, result.err
    (request,) = engine.requests(SearchRequest)
    assert (request.project_root, request.path_glob) == (str(repo), sent)
    assert result.err == f"lgrep: {repo / 'src'} is inside the project {repo}: searching that one\n"
    payload = result.json()
    assert (payload["project_root"], payload["scope"]) == (str(repo), "src")


def test_search_of_a_project_without_an_index_builds_it_first(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    result = lgrep("search", "verify")
    assert result.code == 0, result.err
    assert [type(c) for c in engine.calls] == [SearchRequest, StatusRequest, IndexProjectRequest, SearchRequest]
    assert engine.calls[1] == StatusRequest(str(repo), brief=True)
    assert engine.calls[2] == IndexProjectRequest(str(repo), force=False, wait_for_vectors=True)
    assert result.err.splitlines() == [f"lgrep: {repo} has no index yet; building it first", "no results"]


def test_search_of_a_project_whose_first_index_is_being_built_says_so(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    engine.project(repo, ProjectState.BUILDING)
    result = lgrep("search", "verify")
    assert result.code == 1 and result.out == ""
    assert result.err == f"lgrep: error: {repo} is not searchable: its index is building\n"
    assert engine.runs == []


def test_search_of_a_released_version_asks_for_it_as_named(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    _answer(engine, SearchRequest, _response(repo, release=RELEASE))
    human = lgrep("search", "verify", "--component", "agent", "--version", "^0.7")
    assert human.code == 0, human.err
    assert human.err == "searched agent@0.7.3 (tag agent-v0.7.3)\n"
    payload = lgrep("search", "verify", "--component", "agent", "--json").json()
    assert [(r.project_root, r.component, r.version) for r in engine.calls] == [  # no state asked, nothing built
        (str(repo), "agent", "^0.7"),
        (str(repo), "agent", ""),
    ]
    assert list(payload) == [*SEARCH_KEYS, "release"]
    assert list(payload["release"]) == RELEASE_KEYS and payload["release"]["tag"] == "agent-v0.7.3"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--version", "1.0"], "Error: --version needs --component (lgrep components lists them)"),
        (["--component", "agent", ".", "src"], "Error: --component searches one project's releases: name one PATH"),
        (["--type", "semantic"], "Error: Invalid value for '--type': 'semantic' is not one of"),
        (["-n", "0"], "Error: Invalid value for '-n' / '--limit': 0 is not in the range 1<=x<=1000."),
        (["--bm25-weight", "nan"], "Error: Invalid value for '--bm25-weight': 'nan' is not a weight"),
    ],
)
def test_search_usage_errors_exit_2_before_any_engine(
    lgrep: Callable[..., Result], repo: Path, shell: Shell, args: list[str], words: str
) -> None:
    result = lgrep("search", "verify", *args)
    assert result.code == 2 and result.out == ""
    assert words in result.err and "Traceback" not in result.err
    assert shell.apps == [] and shell.engine.calls == []


def test_search_reads_the_query_from_stdin(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.project(repo)
    issue = "TypeError in verify_token\n  File 'src/auth.py', line 12\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(issue))
    assert lgrep("search", "-", "--files").code == 0
    assert [(r.query, r.files) for r in engine.requests(SearchRequest)] == [(issue, True)]


def test_a_query_on_stdin_over_the_limit_is_refused(
    lgrep: Callable[..., Result], repo: Path, shell: Shell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("x" * 40_000))
    result = lgrep("search", "-")
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("lgrep: error: the query on standard input is more than 32,768 characters long")
    assert len(result.err.splitlines()) == 1 and shell.apps == []


def test_an_empty_query_is_refused_before_any_engine(lgrep: Callable[..., Result], repo: Path, shell: Shell) -> None:
    result = lgrep("search", "   ")
    assert (result.code, result.out, result.err) == (1, "", "lgrep: error: the query is empty\n")
    assert shell.apps == []


def test_search_of_a_folder_that_does_not_exist(lgrep: Callable[..., Result], repo: Path, shell: Shell) -> None:
    result = lgrep("search", "verify", "gone")
    assert (result.code, result.out) == (1, "")
    assert result.err == "lgrep: error: gone is not a directory (nothing is there)\n"
    assert shell.apps == []


def test_search_of_several_projects_answers_with_one_ranking(
    lgrep: Callable[..., Result], tmp_path: Path, engine: FakeEngine
) -> None:
    roots = [(tmp_path / name).resolve() for name in ("api", "web")]
    for root in roots:
        (root / ".git").mkdir(parents=True)
        engine.project(root)
    scores = {str(roots[0]): 0.9, str(roots[1]): 0.4}

    def answer(r: SearchRequest) -> SearchResponse:
        return _response(Path(r.project_root), results=[_hit(score=scores[r.project_root])])

    engine.answer(SearchRequest, answer)
    result = lgrep("search", "verify", str(roots[0]), str(roots[1]), "--json")
    assert result.code == 0, result.err
    asked = engine.requests(SearchRequest)
    assert [(r.project_root, r.explain, r.limit) for r in asked] == [
        (str(roots[0]), True, 10),
        (str(roots[1]), True, 10),
    ]
    payload = result.json()
    assert list(payload) == [
        "query",
        "projects",
        "results",
        "files",
        "query_kind",
        "search_type",
        "chunks_searched",
        "vectors_pending",
    ]
    assert [p["project_root"] for p in payload["projects"]] == [str(r) for r in roots]
    assert list(payload["projects"][0]) == [
        "project_root",
        "scope",
        "query_kind",
        "search_type",
        "timings_ms",
        "chunks_searched",
        "vectors_pending",
        "notes",
    ]
    assert [r["project_root"] for r in payload["results"]] == [str(roots[0]), str(roots[1])]
    assert list(payload["results"][0]) == ["project_root", *HIT_KEYS]
    assert payload["chunks_searched"] == 240


# ---------------------------------------------------------------------------------------- file


def _slice(**changes: Any) -> FileSlice:
    fields: dict[str, Any] = {
        "path": "src/auth.py",
        "language": "python",
        "content": "line 9\nline 10\nline 11\n",
        "start_line": 9,
        "end_line": 11,
        "total_lines": 20,
    }
    fields.update(changes)
    return FileSlice(**fields)


def test_file_names_its_path_relative_to_the_project_and_prints_numbered_lines(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _answer(engine, GetFileRequest, _slice(stale=True, truncated=True))
    monkeypatch.chdir(repo / "src")
    result = lgrep("file", "auth.py", "--lines", "9:11")
    assert result.code == 0, result.err
    assert engine.calls == [GetFileRequest(str(repo), "src/auth.py", 9, 11)]
    assert result.out.splitlines() == [" 9  line 9", "10  line 10", "11  line 11"]
    assert result.err.splitlines() == [
        "lgrep: cut at line 11 of 20: --lines 12: shows more",
        "lgrep: this file changed since it was indexed",
    ]


def test_file_json_has_the_documented_shape(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, GetFileRequest, _slice())
    result = lgrep("file", str(repo / "src" / "auth.py"), "--json")
    assert result.code == 0, result.err
    assert engine.calls == [GetFileRequest(str(repo), "src/auth.py", 0, 0)]
    payload = result.json()
    assert list(payload) == ["project_root", *SLICE_KEYS]
    assert payload["project_root"] == str(repo) and payload["content"] == "line 9\nline 10\nline 11\n"
    assert (payload["start_line"], payload["end_line"], payload["total_lines"]) == (9, 11, 20)


@pytest.mark.parametrize(("lines", "sent"), [("10:", (10, 0)), (":4", (0, 4)), ("5-7", (5, 7)), ("3", (3, 0))])
def test_file_lines_forms(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, lines: str, sent: tuple[int, int]
) -> None:
    _answer(engine, GetFileRequest, _slice())
    assert lgrep("file", "src/auth.py", "--lines", lines).code == 0
    (request,) = engine.requests(GetFileRequest)
    assert (request.start_line, request.end_line) == sent


def test_file_at_a_released_version_reads_the_path_as_given(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    _answer(engine, GetFileRequest, _slice(release=RELEASE))
    result = lgrep("file", "src/auth.py", "--component", "agent", "--version", "0.7.3", "--json")
    assert result.code == 0, result.err
    assert engine.calls == [GetFileRequest(str(repo), "src/auth.py", 0, 0, component="agent", version="0.7.3")]
    payload = result.json()
    assert list(payload) == ["project_root", *SLICE_KEYS, "release"]
    assert payload["release"] == {
        "component": "agent",
        "version": "0.7.3",
        "tag": "agent-v0.7.3",
        "commit": "9f2c1e0",
        "files": 41,
        "prerelease": False,
        "indexed_at": 1_700_000_000.0,
    }


def test_file_with_lines_that_are_no_range_is_a_usage_error(
    lgrep: Callable[..., Result], repo: Path, shell: Shell
) -> None:
    result = lgrep("file", "src/auth.py", "--lines", "ten:twenty")
    assert result.code == 2 and result.out == ""
    assert result.err.splitlines() == [
        "Usage: lgrep file [OPTIONS] FILE",
        "Try 'lgrep file --help' for help.",
        "",
        "Error: Invalid value: 'ten:twenty': give lines as START:END (1-based, inclusive; 10: or :40)",
    ]
    assert shell.apps == []


def test_file_with_lines_backwards_is_the_requests_own_error(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    _answer(engine, GetFileRequest, _slice())
    result = lgrep("file", "src/auth.py", "--lines", "12:10")
    assert (result.code, result.out) == (1, "")
    assert result.err == "lgrep: error: end_line 10 is before start_line 12\n"


def test_file_outside_the_project_named_is_refused(
    lgrep: Callable[..., Result], repo: Path, tmp_path: Path, engine: FakeEngine
) -> None:
    _answer(engine, GetFileRequest, _slice())
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("x = 1\n")
    result = lgrep("file", str(elsewhere), "--project", str(repo))
    assert (result.code, result.out) == (1, "")
    assert result.err == f"lgrep: error: {elsewhere} is not inside the project {repo}\n"
    assert engine.calls == []


# --------------------------------------------------------------------------------------- files


LISTED = FileList(
    files=(
        IndexedFile("src/auth.py", "python", ContentType.CODE, 4, 20),
        IndexedFile("src/users.py", "python", ContentType.CODE, 7, 88),
    ),
    total=5,
)


def test_files_of_a_folder_are_listed_from_its_project(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    _answer(engine, ListFilesRequest, LISTED)
    result = lgrep("files", "src", "--path", "*.py", "--lang", "python", "-n", "2")
    assert result.code == 0, result.err
    # The engine keeps the list to the folder named.
    assert engine.calls == [ListFilesRequest(str(repo / "src"), path_glob="*.py", languages=("python",), limit=2)]
    assert result.out.splitlines() == [
        "src/auth.py  python  4 chunks  20 lines",
        "src/users.py  python  7 chunks  88 lines",
    ]
    assert result.err.splitlines() == [
        f"lgrep: {repo / 'src'} is inside the project {repo}: listing from that one",
        "lgrep: 2 of 5 files shown",
    ]


def test_files_json_has_the_documented_shape(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, ListFilesRequest, LISTED)
    result = lgrep("files", "--json")
    assert result.code == 0, result.err
    assert engine.calls == [ListFilesRequest(str(repo))]
    payload = result.json()
    assert list(payload) == ["project_root", "total", "files"]
    assert payload["project_root"] == str(repo) and payload["total"] == 5
    assert payload["files"][0] == {
        "path": "src/auth.py",
        "language": "python",
        "content_type": "code",
        "chunks": 4,
        "last_line": 20,
    }


def test_files_of_a_released_version(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, ListFilesRequest, FileList(LISTED.files, 2, release=RELEASE))
    human = lgrep("files", "--component", "agent", "--version", "^0.7")
    assert human.code == 0, human.err
    assert human.err == "lgrep: agent@0.7.3 (tag agent-v0.7.3)\n"
    payload = lgrep("files", "--component", "agent", "--json").json()
    assert [(r.project_root, r.component, r.version) for r in engine.calls] == [
        (str(repo), "agent", "^0.7"),
        (str(repo), "agent", ""),
    ]
    assert list(payload) == ["project_root", "total", "files", "release"]


# ------------------------------------------------------------------------- components, versions


def test_components(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    found = [ComponentInfo("agent", 12, "0.7.3"), ComponentInfo("cli", 3, "1.2.0")]
    _answer(engine, ListComponentsRequest, found)
    human = lgrep("components")
    assert human.code == 0, human.err
    assert human.out.splitlines() == ["agent  12 versions  latest 0.7.3", "cli  3 versions  latest 1.2.0"]
    payload = lgrep("components", str(repo), "--json").json()
    assert engine.calls == [ListComponentsRequest(str(repo))] * 2
    assert payload == {
        "project_root": str(repo),
        "components": [
            {"name": "agent", "versions": 12, "latest": "0.7.3"},
            {"name": "cli", "versions": 3, "latest": "1.2.0"},
        ],
    }


def test_components_of_a_folder_are_its_own_not_its_repositorys(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    _answer(engine, ListComponentsRequest, [])
    result = lgrep("components", "src")
    assert (result.code, result.out, result.err) == (0, "", "")
    assert engine.calls == [ListComponentsRequest(str(repo / "src"))]  # releases: the folder as named


def test_versions(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    found = [
        Release("agent", "0.8.0-rc.1", "agent-v0.8.0-rc.1", files=43, prerelease=True),
        RELEASE,
    ]
    _answer(engine, ListVersionsRequest, found)
    human = lgrep("versions", "agent")
    assert human.code == 0, human.err
    assert human.out.splitlines() == [
        "0.8.0-rc.1  tag agent-v0.8.0-rc.1  43 files  prerelease",
        "0.7.3  tag agent-v0.7.3  41 files",
    ]
    payload = lgrep("versions", "agent", "--json").json()
    assert engine.calls == [ListVersionsRequest(str(repo), "agent")] * 2
    assert list(payload) == ["project_root", "component", "versions"]
    assert (payload["project_root"], payload["component"]) == (str(repo), "agent")
    assert [list(v) for v in payload["versions"]] == [RELEASE_KEYS, RELEASE_KEYS]
    assert [v["prerelease"] for v in payload["versions"]] == [True, False]


def test_versions_of_an_empty_component_name(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, ListVersionsRequest, [])
    result = lgrep("versions", " ")
    assert (result.code, result.out) == (1, "")
    assert result.err == "lgrep: error: the component is empty: name one (ListComponents lists them)\n"


# -------------------------------------------------------------------------------------- symbol


def test_symbol(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    method = Location(
        "src/auth.py", 30, 41, "verify", ChunkKind.METHOD, "python", ("Auth", "verify"), "def verify(self, t):"
    )
    matches = [SymbolMatch(method, 1.0, True), SymbolMatch(_location(), 0.6, False)]
    _answer(engine, FindSymbolRequest, matches)
    human = lgrep("symbol", "verify", "--kind", "method", "-n", "5")
    assert human.code == 0, human.err
    assert engine.calls == [FindSymbolRequest(str(repo), "verify", 5, kinds=(ChunkKind.METHOD,))]
    assert human.out.splitlines() == [
        "src/auth.py:30-41  Auth.verify (method)",
        "    def verify(self, t):",
        "src/auth.py:10-14  verify_token (function)  ~",
        "    def verify_token(token: str) -> Claims:",
    ]
    payload = lgrep("symbol", "verify", "src", "--json").json()
    assert engine.calls[1] == FindSymbolRequest(str(repo / "src"), "verify", 20)  # kept to the folder named
    assert list(payload) == ["project_root", "query", "matches"]
    assert (payload["project_root"], payload["query"]) == (str(repo), "verify")
    assert [list(m) for m in payload["matches"]] == [[*LOCATION_KEYS, "score", "exact"]] * 2
    assert payload["matches"][0]["scope"] == ["Auth", "verify"] and payload["matches"][1]["exact"] is False


def test_symbol_with_no_match(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, FindSymbolRequest, [])
    result = lgrep("symbol", "nothing_like_it")
    assert (result.code, result.out, result.err) == (0, "", "no matches\n")


def test_symbol_of_an_unknown_kind_is_refused_before_any_engine(
    lgrep: Callable[..., Result], repo: Path, shell: Shell
) -> None:
    result = lgrep("symbol", "verify", "--kind", "lambda")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "lgrep: error: unknown kind 'lambda'; one of function, method, class, module, anchor, section, config, "
        "block, window\n"
    )
    assert shell.apps == []


# ------------------------------------------------------------------------------------- related


def test_related(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    caller = _hit("src/api.py", 3, 9, symbol="login", match=(MatchType.CALLER,), why=("calls verify_token",))
    _answer(engine, FindRelatedRequest, RelatedResult(_location(), (caller,)))
    human = lgrep("related", "src/auth.py", "12", "-n", "3")
    assert human.code == 0, human.err
    assert engine.calls == [FindRelatedRequest(str(repo), "src/auth.py", 12, 3)]
    assert human.out.splitlines()[:3] == [
        "near src/auth.py:10-14 verify_token",
        "",
        "src/api.py:3-9  login (function)  score=0.0325  via caller",
    ]
    payload = lgrep("related", "src/auth.py", "12", "--json").json()
    assert engine.calls[1] == FindRelatedRequest(str(repo), "src/auth.py", 12, 10)
    assert list(payload) == ["project_root", "anchor", "related"]
    assert payload["project_root"] == str(repo) and list(payload["anchor"]) == LOCATION_KEYS
    assert list(payload["related"][0]) == [*HIT_KEYS, "why"]
    assert payload["related"][0]["why"] == ["calls verify_token"]


def test_related_line_must_be_positive(lgrep: Callable[..., Result], repo: Path, shell: Shell) -> None:
    result = lgrep("related", "src/auth.py", "0")
    assert result.code == 2 and "Invalid value for 'LINE': 0 is not in the range x>=1." in result.err
    assert shell.apps == []


# ------------------------------------------------------------------------------------ skeleton


SKELETON = Skeleton(
    path="src/auth.py",
    language="python",
    content="import jwt\n\ndef verify_token(token: str) -> Claims:\n    ⋯ 4 lines (L11-14)\n",
    definitions=(_location(),),
    total_lines=20,
    tokens=24,
    file_tokens=180,
    tokens_saved=156,
    tokenizer="all-MiniLM-L6-v2 WordPiece",
)


def test_skeleton(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, SkeletonRequest, SKELETON)
    human = lgrep("skeleton", "src/auth.py")
    assert human.code == 0, human.err
    assert engine.calls == [SkeletonRequest(str(repo), "src/auth.py")]
    assert human.out == SKELETON.content
    assert (
        human.err == "\nsrc/auth.py: 20 lines; skeleton 24 tokens, file 180 (156 saved, all-MiniLM-L6-v2 WordPiece)\n"
    )
    payload = lgrep("skeleton", str(repo / "src" / "auth.py"), "--json").json()
    assert list(payload) == ["project_root", *SKELETON_KEYS]
    assert payload["project_root"] == str(repo) and list(payload["definitions"][0]) == LOCATION_KEYS


def test_skeleton_of_a_file_with_no_definitions(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    empty = Skeleton("src/auth.py", "python", "", (), 20, 0, 180, 180, "all-MiniLM-L6-v2 WordPiece")
    _answer(engine, SkeletonRequest, empty)
    result = lgrep("skeleton", "src/auth.py")
    assert result.code == 0 and result.out == ""
    assert result.err.splitlines()[0] == "src/auth.py has no imports or definitions; read it with lgrep file"


# --------------------------------------------------------------------------------------- trace


def _trace(**changes: Any) -> TraceResult:
    login = _location("src/api.py", 3, 9, "login")
    fields: dict[str, Any] = {
        "symbol": "verify_token",
        "definitions": (_location(),),
        "ambiguous": False,
        "edges": (
            TraceEdge(TraceDirection.CALLERS, 1, login, _location(), "src/api.py", 5, Resolution.IMPORT, sites=2),
        ),
        "total": 3,
        "next_offset": 1,
    }
    fields.update(changes)
    return TraceResult(**fields)


def test_trace(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, TraceRequest, _trace())
    human = lgrep("trace", "verify_token", "--callers", "--depth", "2", "-n", "1", "--in", "src/auth.py")
    assert human.code == 0, human.err
    assert engine.calls == [
        TraceRequest(str(repo), "verify_token", path="src/auth.py", depth=2, direction=TraceDirection.CALLERS, limit=1)
    ]
    assert human.out.splitlines() == [
        "verify_token (function) src/auth.py:10-14",
        "callers:",
        "  src/api.py:5  login -> verify_token  src/auth.py:10  [import] (2 sites)",
        "... 2 more: lgrep trace verify_token . --offset 1",
    ]


def test_trace_json_has_the_documented_shape(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, TraceRequest, _trace(resolve_imports=False))
    result = lgrep("trace", "verify_token", str(repo), "--names-only", "--offset", "1", "--json")
    assert result.code == 0, result.err
    assert engine.calls == [TraceRequest(str(repo), "verify_token", limit=50, offset=1, resolve_imports=False)]
    payload = result.json()
    assert list(payload) == TRACE_KEYS
    assert payload["project_root"] == str(repo) and payload["resolve_imports"] is False
    (edge,) = payload["edges"]
    assert list(edge) == EDGE_KEYS  # `candidates` only when there are some
    assert (edge["direction"], edge["resolution"], edge["sites"]) == ("callers", "import", 2)
    assert list(edge["caller"]) == LOCATION_KEYS and edge["callee"]["symbol"] == "verify_token"


def test_trace_of_an_ambiguous_name_lists_its_definitions(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    two = (_location("src/auth.py", 10, 14, "verify"), _location("src/jwt.py", 4, 8, "verify"))
    _answer(engine, TraceRequest, _trace(symbol="verify", definitions=two, ambiguous=True, edges=(), total=0))
    result = lgrep("trace", "verify")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "verify has 2 definitions; trace one of them:",
        "  src/auth.py:10  verify",
        "  src/jwt.py:4  verify",
        "(lgrep trace verify --in PATH, or a qualified name such as Class.verify)",
    ]


def test_trace_in_a_folder_asks_for_the_folder(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    _answer(engine, TraceRequest, _trace())
    result = lgrep("trace", "verify_token", "src", "--in", "src/auth.py", "--json")
    assert result.code == 0, result.err
    # A relative --in that exists is made absolute, then relative to the folder named.
    assert engine.calls == [TraceRequest(str(repo / "src"), "verify_token", path="auth.py", limit=50)]
    assert result.json()["project_root"] == str(repo)
    assert result.err == f"lgrep: {repo / 'src'} is inside the project {repo}: tracing in that one\n"


def test_trace_depth_is_bounded(lgrep: Callable[..., Result], repo: Path, shell: Shell) -> None:
    result = lgrep("trace", "verify_token", "--depth", "4")
    assert result.code == 2 and "Invalid value for '--depth': 4 is not in the range 1<=x<=3." in result.err
    assert shell.apps == []


# -------------------------------------------------------------------------------------- status


READY = ProjectStatus(
    project_root="",
    state=ProjectState.READY,
    index_dir="/cache/abc123",
    watched=True,
    files=12,
    chunks=140,
    vectors_pending=2,
    languages={"python": 10, "markdown": 2},
    provider="local",
    model="all-MiniLM-L6-v2 (int8)",
    dimension=384,
    chunker_version="7",
    last_indexed=datetime(2025, 5, 1, 12, 0, tzinfo=UTC),
    changes=FileChanges(added=1, modified=2),
    watch_leases=1,
)


def test_status(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, shell: Shell) -> None:
    _answer(engine, StatusRequest, replace(READY, project_root=str(repo)))
    human = lgrep("status")
    assert human.code == 0, human.err
    assert engine.calls == [StatusRequest(str(repo))]  # the whole status, not the brief one a search asks
    assert shell.apps == [{"no_daemon": False, "start": False}]  # status starts no daemon
    assert human.out.splitlines() == [
        str(repo),
        "  index     /cache/abc123",
        "  files     12 (python 10, markdown 2)",
        "  chunks    140, 2 waiting for vectors",
        "  model     local/all-MiniLM-L6-v2 (int8) (384 d)",
        "  indexed   2025-05-01T12:00:00+00:00",
        "  changed   3 files since (1 added, 2 modified, 0 deleted)",
        "  watched   yes: the daemon re-indexes changes as they happen; 1 agent (MCP servers) keep it watched",
    ]
    payload = lgrep("status", "--json", "--no-daemon").json()
    assert shell.apps[1] == {"no_daemon": True, "start": False}
    assert list(payload) == [*STATUS_COMMON, *STATUS_SPEND, *STATUS_READY]
    assert payload["state"] == "ready" and payload["last_indexed"] == "2025-05-01T12:00:00+00:00"
    assert payload["changes"] == {"added": 1, "modified": 2, "deleted": 0, "total": 3}
    assert payload["project_spend"] is None and payload["spend_warnings"] == []


def test_status_of_an_index_that_is_not_ready(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    interrupted = ProjectStatus(
        str(repo), ProjectState.INTERRUPTED, detail=f"its first index did not finish: run `lgrep index {repo}`"
    )
    _answer(engine, StatusRequest, interrupted)
    human = lgrep("status", "src")
    assert human.code == 0, human.err
    assert engine.calls == [StatusRequest(str(repo))]
    assert human.err == f"lgrep: {repo / 'src'} is inside the project {repo}: showing that one\n"
    assert human.out.splitlines() == [
        str(repo),
        f"  state     interrupted: its first index did not finish: run `lgrep index {repo}`",
    ]
    payload = lgrep("status", "--json").json()
    assert list(payload) == [*STATUS_COMMON, *STATUS_SPEND]
    assert payload["state"] == "interrupted"


def test_status_of_a_project_with_no_index(lgrep: Callable[..., Result], repo: Path) -> None:
    result = lgrep("status")  # the fake engine's own answer: NotFoundError
    assert (result.code, result.out) == (1, "")
    assert result.err == f"lgrep: error: {repo} has no index yet: run `lgrep index {repo}`\n"


# --------------------------------------------------------------------------------------- clean


def test_clean_removes_the_projects_index(
    lgrep: Callable[..., Result], repo: Path, cache: Path, engine: FakeEngine, shell: Shell
) -> None:
    folder = project_dir(cache, repo)
    folder.mkdir()
    _answer(engine, RemoveProjectRequest, RemoveResult(removed=True, bytes_freed=4096))
    result = lgrep("clean")
    assert (result.code, result.out) == (0, "")
    assert engine.calls == [RemoveProjectRequest(str(repo))]
    assert shell.apps == [{"no_daemon": False, "start": False}]
    assert result.err == f"removed the index of {repo} ({folder})\n"


def test_clean_with_no_index_asks_no_engine(lgrep: Callable[..., Result], repo: Path, shell: Shell) -> None:
    result = lgrep("clean")
    assert (result.code, result.out, result.err) == (0, "", f"no index for {repo}\n")
    assert shell.apps == []


def test_clean_of_a_folder_inside_an_indexed_project_is_refused(
    lgrep: Callable[..., Result], repo: Path, cache: Path, shell: Shell
) -> None:
    (project_dir(cache, repo) / "lance").mkdir(parents=True)  # an index (of an older layout) of the repository
    result = lgrep("clean", "src")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"lgrep: error: {repo / 'src'} has no index of its own: it is inside the project {repo}, whose index "
        f"`lgrep clean {repo}` removes\n"
    )
    assert shell.apps == []


# ---------------------------------------------------------------------------------- watch, unwatch


@pytest.mark.parametrize(("already", "words"), [(False, "now watched"), (True, "already watched")])
def test_watch(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, shell: Shell, already: bool, words: str
) -> None:
    _answer(engine, WatchProjectRequest, WatchResult(watched=True, already_watched=already))
    human = lgrep("watch", "src")
    assert human.code == 0 and human.out == ""
    assert engine.calls == [WatchProjectRequest(str(repo))]
    assert shell.apps == [{"no_daemon": False, "start": True}]  # only the daemon watches
    assert human.err.splitlines() == [
        f"lgrep: {repo / 'src'} is inside the project {repo}: watching that one",
        f"{repo} is {words}: saved changes are searchable within seconds",
    ]
    payload = lgrep("watch", "--json").json()
    assert payload == {"project_root": str(repo), "watched": True, "already_watched": already}


@pytest.mark.parametrize(("was", "words"), [(True, "is no longer watched"), (False, "was not watched")])
def test_unwatch(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, shell: Shell, was: bool, words: str
) -> None:
    _answer(engine, UnwatchProjectRequest, was)
    human = lgrep("unwatch")
    assert (human.code, human.out, human.err) == (0, "", f"{repo} {words}\n")
    assert engine.calls == [UnwatchProjectRequest(str(repo))]
    assert shell.apps == [{"no_daemon": False, "start": False}]
    assert lgrep("unwatch", "--json").json() == {"project_root": str(repo), "was_watched": was}


def test_unwatch_of_a_deleted_folder_names_it_as_given(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine
) -> None:
    _answer(engine, UnwatchProjectRequest, True)
    result = lgrep("unwatch", "removed-project", "--json")
    assert result.code == 0, result.err
    assert engine.calls == [UnwatchProjectRequest(str(repo / "removed-project"))]


# --------------------------------------------------------------------------------------- index


def test_index_json(lgrep: Callable[..., Result], repo: Path, cache: Path, engine: FakeEngine, shell: Shell) -> None:
    result = lgrep("index", "--json")
    assert result.code == 0, result.err
    assert engine.calls == [IndexProjectRequest(str(repo), force=False, wait_for_vectors=True)]
    assert shell.apps == [{"no_daemon": False, "start": True, "lock_timeout_s": None, "fill_behind": True}]
    payload = result.json()
    assert list(payload) == [*SUMMARY_KEYS, "index_dir", "spend_warnings"]
    assert (payload["project_root"], payload["files_seen"], payload["files_indexed"]) == (str(repo), 2, 2)
    assert payload["index_dir"] == str(project_dir(cache, repo)) and payload["spend_warnings"] == []
    assert engine.runs[0].cancelled.is_set()  # the run is let go once its summary is read


def test_index_options_reach_the_run(
    lgrep: Callable[..., Result], repo: Path, engine: FakeEngine, shell: Shell
) -> None:
    result = lgrep("index", "src", "--force", "--no-wait", "--wait", "5", "--no-daemon")
    assert (result.code, result.out) == (0, "")
    assert engine.calls == [IndexProjectRequest(str(repo), force=True, wait_for_vectors=False)]
    assert shell.apps == [{"no_daemon": True, "start": True, "lock_timeout_s": 5.0, "fill_behind": True}]
    assert result.err.splitlines()[:2] == [
        f"lgrep: {repo / 'src'} is inside the project {repo}: indexing that one",
        f"indexed {repo}",
    ]


def test_index_run_that_fails(lgrep: Callable[..., Result], repo: Path, engine: FakeEngine) -> None:
    engine.index_error = IndexBusyError(f"{repo} is being indexed by another process (pid 999)")
    result = lgrep("index")
    assert (result.code, result.out) == (1, "")
    assert result.err == f"lgrep: error: {repo} is being indexed by another process (pid 999)\n"


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (
            CancelResult(cancelled=1, stopped=True),
            "lgrep: cancelled the daemon's index of {root}: what it had indexed is kept, and "
            "`lgrep index {root}` goes on from there",
        ),
        (
            CancelResult(cancelled=2, stopped=False),
            "lgrep: asked the daemon to cancel its index of {root}: it stops at its next commit (a batch being "
            "embedded finishes first); what it had indexed is kept",
        ),
        (CancelResult(cancelled=0, stopped=True), "lgrep: nothing is indexing {root}"),
    ],
)
def test_index_cancel_asks_the_daemon(
    lgrep: Callable[..., Result], repo: Path, shell: Shell, answer: CancelResult, words: str
) -> None:
    daemon = shell.daemon = DaemonEngine()
    _answer(daemon, CancelIndexRequest, answer)
    result = lgrep("index", "--cancel", "src")
    assert (result.code, result.out) == (0, "")
    assert daemon.calls == [CancelIndexRequest(str(repo))]
    assert shell.connects == [False] and shell.apps == []  # a cancel starts no daemon
    assert daemon.closed
    assert result.err.splitlines() == [
        f"lgrep: {repo / 'src'} is inside the project {repo}: cancelling the index runs of that one",
        words.format(root=repo),
    ]


def test_index_cancel_with_no_daemon(lgrep: Callable[..., Result], repo: Path, shell: Shell) -> None:
    result = lgrep("index", "--cancel")
    assert (result.code, result.out, result.err) == (0, "", f"lgrep: nothing is indexing {repo}\n")
    assert shell.connects == [False]
    assert lgrep("index", "--cancel", "--no-daemon").code == 0
    assert shell.connects == [False]  # --no-daemon: not even asked


def test_index_cancel_names_another_process_that_indexes(
    lgrep: Callable[..., Result], repo: Path, cache: Path, shell: Shell
) -> None:
    shell.daemon = DaemonEngine()
    _answer(shell.daemon, CancelIndexRequest, CancelResult(cancelled=0, stopped=True))
    folder = project_dir(cache, repo)
    folder.mkdir()
    with (folder / "writer.lock").open("w") as lock:
        lock.write("31337")
        lock.flush()
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = lgrep("index", "--cancel")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"lgrep: error: {repo} is being indexed by another process (pid 31337), not by the lgrep daemon: "
        "stop it with Ctrl-C where it runs, or `kill -INT 31337`\n"
    )


@pytest.mark.parametrize("other", ["--force", "--no-wait", "--plan", "--tags"])
def test_index_cancel_goes_alone(lgrep: Callable[..., Result], repo: Path, shell: Shell, other: str) -> None:
    result = lgrep("index", "--cancel", other)
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines()[-1] == "Error: --cancel goes alone (with PATH)"
    assert result.err.startswith("Usage: lgrep index [OPTIONS] [PATH]")
    assert shell.connects == [] and shell.apps == []


# -------------------------------------------------------------------------- errors, every command


# Each command, how to run it, and the use case it asks the engine for.
COMMANDS: list[tuple[list[str], type[Request[Any]]]] = [
    (["search", "verify"], SearchRequest),
    (["search", "verify", "--json"], SearchRequest),
    (["file", "src/auth.py", "--lines", "1:3"], GetFileRequest),
    (["files", "--json"], ListFilesRequest),
    (["components"], ListComponentsRequest),
    (["versions", "agent"], ListVersionsRequest),
    (["symbol", "verify"], FindSymbolRequest),
    (["related", "src/auth.py", "3"], FindRelatedRequest),
    (["skeleton", "src/auth.py"], SkeletonRequest),
    (["trace", "verify", "--json"], TraceRequest),
    (["status", "--json"], StatusRequest),
    (["clean"], RemoveProjectRequest),
    (["watch"], WatchProjectRequest),
    (["unwatch", "--json"], UnwatchProjectRequest),
]
ERRORS = [
    NotFoundError("src/gone.py is not in the index of the project: run `lgrep index` if it is new"),
    InvalidRequestError("limit must be 1 to 1000, got 0"),
    IndexMismatchError("the index was built with local/all-MiniLM-L6-v2 (384 d): run `lgrep index --force`"),
    ServerUnavailableError("the lgrep daemon stopped answering: run `lgrep serve --status`"),
]


@pytest.fixture
def indexed(repo: Path, cache: Path, engine: FakeEngine) -> Path:
    """The repository, indexed as far as the engine and `lgrep clean` can tell."""
    engine.project(repo)
    project_dir(cache, repo).mkdir()
    return repo


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(("args", "kind"), COMMANDS, ids=lambda c: " ".join(c) if isinstance(c, list) else "")
def test_an_engine_error_is_one_line_on_stderr_and_exit_1(
    lgrep: Callable[..., Result],
    indexed: Path,
    engine: FakeEngine,
    args: list[str],
    kind: type[Request[Any]],
    error: LgrepError,
) -> None:
    def fail(request: Any) -> Any:
        raise error

    engine.answer(kind, fail)
    result = lgrep(*args)
    assert (result.code, result.out, result.err) == (1, "", f"lgrep: error: {error.message}\n")
    # Asked once, nothing else tried (a search that finds no index asks where the index stands: READY,
    # so the engine's error stands and nothing is built).
    also = [StatusRequest] if kind is SearchRequest and isinstance(error, NotFoundError) else []
    assert [type(c) for c in engine.calls] == [kind, *also]
    assert engine.runs == [] and engine.closed


@pytest.mark.parametrize(("args", "kind"), COMMANDS, ids=lambda c: " ".join(c) if isinstance(c, list) else "")
def test_no_daemon_to_reach_is_one_line_on_stderr_and_exit_1(
    lgrep: Callable[..., Result], indexed: Path, shell: Shell, args: list[str], kind: type[Request[Any]]
) -> None:
    shell.app_error = ServerUnavailableError("cannot start the lgrep daemon: see ~/.cache/lgrep/daemon.log")
    result = lgrep(*args)
    assert (result.code, result.out) == (1, "")
    assert result.err == "lgrep: error: cannot start the lgrep daemon: see ~/.cache/lgrep/daemon.log\n"
    assert len(shell.apps) == 1 and shell.engine.calls == []


def test_a_bug_in_an_answer_is_one_line_without_a_traceback(
    lgrep: Callable[..., Result], indexed: Path, engine: FakeEngine
) -> None:
    def broken(request: Any) -> Any:
        raise KeyError("chunk_id")

    engine.answer(FindSymbolRequest, broken)
    result = lgrep("symbol", "verify")
    assert (result.code, result.out) == (1, "")
    assert result.err == "lgrep: internal error: KeyError: 'chunk_id' (run with -v for details and report it)\n"


def test_control_characters_in_an_error_are_shown_escaped(
    lgrep: Callable[..., Result], indexed: Path, engine: FakeEngine
) -> None:
    def fail(request: Any) -> Any:
        raise NotFoundError("src/\x1b[31mevil\u202e.py is not in the index")

    engine.answer(GetFileRequest, fail)
    result = lgrep("file", "src/auth.py")
    assert result.code == 1
    assert result.err == "lgrep: error: src/\\x1b[31mevil\\u202e.py is not in the index\n"


def test_control_characters_in_an_answer_are_shown_escaped(
    lgrep: Callable[..., Result], indexed: Path, engine: FakeEngine
) -> None:
    _answer(engine, ListFilesRequest, FileList((IndexedFile("a\x1b]0;pwned\x07.py", "python", None, 1, 2),), 1))
    human = lgrep("files")
    assert human.out == "a\\x1b]0;pwned\\x07.py  python  1 chunks  2 lines\n"
    assert lgrep("files", "--json").json()["files"][0]["path"] == "a\x1b]0;pwned\x07.py"  # JSON keeps the name


def test_every_use_case_a_command_asks_for_is_covered() -> None:
    """A command that starts asking for another use case needs its test here."""
    covered = {kind for _, kind in COMMANDS} | {IndexProjectRequest, CancelIndexRequest}
    asked = {
        name
        for name in dir(cli_module)
        if name.endswith("Request") and name != "Request" and isinstance(getattr(cli_module, name), type)
    }
    assert asked <= {kind.__name__ for kind in covered}
