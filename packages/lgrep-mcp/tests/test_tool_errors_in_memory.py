"""Every MCP tool's failures through an in-memory client session over the FakeEngine: lgrep's errors
from the engine, paths outside the project, arguments the input schema or the request refuses, and
a bug, each an error result (`is_error`) with a readable message, no traceback and no structured
content; refused calls reach no engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lgrep_core.domain.errors import (
    IndexMismatchError,
    InvalidRequestError,
    NotFoundError,
    ServerUnavailableError,
)
from lgrep_core.domain.models import (
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexProjectRequest,
    ListComponentsRequest,
    ListFilesRequest,
    ListVersionsRequest,
    Request,
    SearchRequest,
    SkeletonRequest,
    StatusRequest,
    TraceRequest,
    UnwatchProjectRequest,
    WatchProjectRequest,
)
from mcp_harness import Mcp

# Each tool with arguments that reach the engine, and the request type that answers it.
CALLS: list[tuple[str, dict[str, Any], type[Request[Any]] | None]] = [
    ("lgrep_search", {"query": "verify"}, SearchRequest),
    ("lgrep_search", {"query": "verify", "files": True}, SearchRequest),
    ("lgrep_search", {"query": "verify", "component": "agent"}, SearchRequest),
    ("lgrep_get_file", {"path": "src/auth.py"}, GetFileRequest),
    ("lgrep_get_file", {"path": "src/auth.py", "skeleton": True}, SkeletonRequest),
    ("lgrep_get_file", {"path": "src/auth.py", "component": "agent"}, GetFileRequest),
    ("lgrep_find_symbol", {"name": "verify"}, FindSymbolRequest),
    ("lgrep_find_related", {"path": "src/auth.py", "line": 9}, FindRelatedRequest),
    ("lgrep_trace", {"symbol": "verify"}, TraceRequest),
    ("lgrep_index", {}, None),  # Engine.index
    ("lgrep_status", {}, StatusRequest),
    ("lgrep_watch_start", {}, WatchProjectRequest),
    ("lgrep_watch_stop", {}, UnwatchProjectRequest),
    ("lgrep_releases", {}, ListComponentsRequest),
    ("lgrep_releases", {"component": "agent"}, ListVersionsRequest),
    ("lgrep_releases", {"component": "agent", "version": "latest"}, ListFilesRequest),
]

ERRORS = [
    NotFoundError("src/auth.py is not in the index of this project: run lgrep_index"),
    InvalidRequestError("limit must be 1 to 1000, got 5000"),
    ServerUnavailableError("the lgrep daemon is not running and could not be started: see ~/.cache/lgrep/daemon.log"),
    IndexMismatchError("the index was built with voyage/voyage-code-3/1024; the settings ask for local: reindex"),
]


def raising(error: Exception) -> Any:
    def handler(_request: Any) -> Any:
        raise error

    return handler


@pytest.mark.parametrize(
    ("tool", "arguments", "kind"), CALLS, ids=[f"{t}-{'-'.join(a) or 'defaults'}" for t, a, _ in CALLS]
)
def test_an_engine_error_is_a_tool_error_with_its_own_message(
    mcp: Mcp, tool: str, arguments: dict[str, Any], kind: type[Request[Any]] | None
) -> None:
    for error in ERRORS:
        mcp.engine.calls.clear()
        if kind is None:
            mcp.engine.index_error = error
        else:
            mcp.engine.answer(kind, raising(error))
        assert mcp.error(tool, arguments) == f"Error executing tool {tool}: {error.message}"
        assert (kind or IndexProjectRequest) in [type(c) for c in mcp.engine.calls]


def test_a_control_character_in_an_error_is_shown_escaped(mcp: Mcp) -> None:
    mcp.engine.answer(GetFileRequest, raising(NotFoundError("src/\x1b[31mred\x1b[0m.py\u202e is gone")))
    text = mcp.error("lgrep_get_file", {"path": "src/auth.py"})
    assert text == "Error executing tool lgrep_get_file: src/\\x1b[31mred\\x1b[0m.py\\u202e is gone"


def test_a_bug_is_an_error_that_tells_nothing_of_it(mcp: Mcp) -> None:
    def crash(_request: Any) -> Any:
        raise RuntimeError("secret internals at /home/someone/.ssh")

    mcp.engine.answer(StatusRequest, crash)
    assert mcp.error("lgrep_status") == "Error executing tool lgrep_status"


def test_a_failed_index_run_is_an_error(mcp: Mcp, repo: Path) -> None:
    mcp.engine.projects.clear()
    mcp.engine.index_error = IndexMismatchError("the index was built with another model: run lgrep_index force=true")
    text = mcp.error("lgrep_search", {"query": "verify"})
    assert (
        text == "Error executing tool lgrep_search: the index was built with another model: run lgrep_index force=true"
    )
    assert [type(c).__name__ for c in mcp.engine.calls] == ["SearchRequest", "StatusRequest", "IndexProjectRequest"]


# --- paths outside the project -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("lgrep_get_file", {"path": "../outside.py"}),
        ("lgrep_get_file", {"path": "OUTSIDE"}),
        ("lgrep_get_file", {"path": "src/link.py"}),  # a link that leads out
        ("lgrep_get_file", {"path": "src/../../outside.py", "skeleton": True}),
        ("lgrep_find_related", {"path": "../outside.py", "line": 1}),
        ("lgrep_trace", {"symbol": "verify", "path": "OUTSIDE"}),
        ("lgrep_search", {"query": "verify", "path": "../"}),
        ("lgrep_search", {"query": "verify", "path": "OUTSIDE"}),
        ("lgrep_search", {"query": "verify", "projects": ["OUTSIDE_DIR"]}),
        ("lgrep_find_symbol", {"name": "verify", "path": ".."}),
        ("lgrep_index", {"path": ".."}),
        ("lgrep_status", {"path": "OUTSIDE_DIR"}),
        ("lgrep_watch_start", {"path": "OUTSIDE_DIR"}),
        ("lgrep_watch_stop", {"path": "/"}),
    ],
)
def test_a_path_outside_the_project_is_refused_before_the_engine_is_asked(
    mcp: Mcp, repo: Path, tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    (repo / "src" / "link.py").symlink_to(tmp_path / "outside.py")
    outside = {"OUTSIDE": str(tmp_path / "outside.py"), "OUTSIDE_DIR": str(tmp_path)}
    arguments = {
        k: ([outside.get(x, x) for x in v] if isinstance(v, list) else outside.get(v, v)) for k, v in arguments.items()
    }
    text = mcp.error(tool, arguments)
    assert "is outside the folders this lgrep server may read" in text
    assert text.endswith(f"({repo}); add a root with `--root` to allow it")
    assert mcp.engine.calls == []


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("lgrep_search", {"query": "verify", "path": "../*.py"}, "../*.py: a glob must stay inside the project"),
        (
            "lgrep_search",
            {"query": "verify", "path": "/etc/*.conf"},
            "/etc/*.conf: a glob must stay inside the project",
        ),
        (
            "lgrep_search",
            {"query": "verify", "projects": ["*"], "path": "../*.py"},
            "../*.py: a glob must stay inside the project",
        ),
        (
            "lgrep_search",
            {"query": "verify", "projects": ["*"], "path": "src"},
            "src: with projects, path is a glob applied in each (name folders in projects)",
        ),
        (
            "lgrep_search",
            {"query": "verify", "component": "agent", "path": "../src"},
            "../src: with a component, name a path inside the repository (relative, no '..')",
        ),
        (
            "lgrep_get_file",
            {"path": "/etc/passwd", "component": "agent"},
            "/etc/passwd: with a component, name a path inside the repository (relative, no '..')",
        ),
        (
            "lgrep_releases",
            {"component": "agent", "version": "latest", "path": "src/../../x"},
            "src/../../x: with a component, name a path inside the repository (relative, no '..')",
        ),
        ("lgrep_index", {"path": "src/auth.py"}, "src/auth.py is not a folder"),
        ("lgrep_status", {"path": "missing"}, "missing is not a folder"),
        ("lgrep_search", {"query": "verify", "projects": ["src/auth.py"]}, "src/auth.py is not a folder"),
    ],
)
def test_a_path_of_the_wrong_kind_is_refused_with_what_to_do(
    mcp: Mcp, tool: str, arguments: dict[str, Any], message: str
) -> None:
    assert mcp.error(tool, arguments).startswith(f"Error executing tool {tool}: {message}")
    assert mcp.engine.calls == []


# --- arguments refused ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("lgrep_search", {}, "query"),
        ("lgrep_search", {"query": "verify", "limit": 0}, "limit"),
        ("lgrep_search", {"query": "verify", "limit": 51}, "limit"),
        ("lgrep_search", {"query": "verify", "search_type": "fast"}, "search_type"),
        ("lgrep_search", {"query": "verify", "content": "binary"}, "content"),
        ("lgrep_search", {"query": "verify", "max_tokens": 100}, "max_tokens"),
        ("lgrep_search", {"query": "verify", "max_tokens": 32_001}, "max_tokens"),
        ("lgrep_search", {"query": "verify", "projects": "*"}, "projects"),
        ("lgrep_get_file", {}, "path"),
        ("lgrep_get_file", {"path": "src/auth.py", "start_line": -1}, "start_line"),
        ("lgrep_find_symbol", {"name": "verify", "limit": 101}, "limit"),
        ("lgrep_find_related", {"path": "src/auth.py", "line": 0}, "line"),
        ("lgrep_find_related", {"path": "src/auth.py"}, "line"),
        ("lgrep_trace", {"symbol": "verify", "depth": 4}, "depth"),
        ("lgrep_trace", {"symbol": "verify", "direction": "up"}, "direction"),
        ("lgrep_trace", {"symbol": "verify", "offset": -1}, "offset"),
        ("lgrep_trace", {"symbol": "verify", "limit": 201}, "limit"),
        ("lgrep_index", {"wait": 601}, "wait"),
        ("lgrep_index", {"force": "yes please"}, "force"),
        ("lgrep_releases", {"max_tokens": 499}, "max_tokens"),
    ],
)
def test_an_argument_the_input_schema_refuses_is_an_error_naming_it(
    mcp: Mcp, tool: str, arguments: dict[str, Any], field: str
) -> None:
    text = mcp.error(tool, arguments)
    assert text.startswith(f"Error executing tool {tool}: 1 validation error for {tool}Arguments\n{field}\n")
    assert mcp.engine.calls == []


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("lgrep_search", {"query": "   "}, "the query is empty"),
        pytest.param(
            "lgrep_search",
            {"query": "verify", "version": "1.0"},
            "version '1.0' needs a component",
        ),
        pytest.param(
            "lgrep_get_file",
            {"path": "src/auth.py", "version": "1.0"},
            "version '1.0' needs a component",
        ),
        ("lgrep_find_symbol", {"name": " "}, "the symbol name is empty"),
        ("lgrep_trace", {"symbol": ""}, "the symbol name is empty"),
        (
            "lgrep_find_symbol",
            {"name": "verify", "kind": "lambda"},
            "unknown kind 'lambda'; one of function, method, class, module, anchor, section, config, block, window",
        ),
        (
            "lgrep_get_file",
            {"path": "src/auth.py", "start_line": 9, "end_line": 3},
            "end_line 3 is before start_line 9",
        ),
        (
            "lgrep_get_file",
            {"path": "src/auth.py", "skeleton": True, "component": "agent"},
            "skeletons are of the working tree; read a released file without skeleton",
        ),
        ("lgrep_get_file", {"path": " ", "component": "agent"}, "name the file to read (lgrep_releases lists"),
        (
            "lgrep_search",
            {"query": "verify", "component": "agent", "projects": ["*"]},
            "a released version (component) is searched in one project: leave out projects",
        ),
        ("lgrep_releases", {"version": "latest"}, "version needs a component: call lgrep_releases() to list them"),
        ("lgrep_search", {"query": "x" * 32_769}, "the query is 32,769 characters long; the limit is 32,768"),
    ],
)
def test_a_request_the_tool_or_the_request_refuses_is_an_error_saying_why(
    mcp: Mcp, tool: str, arguments: dict[str, Any], message: str
) -> None:
    assert mcp.error(tool, arguments).startswith(f"Error executing tool {tool}: {message}")
    assert mcp.engine.calls == []  # refused before the engine answered (the FakeEngine keeps valid requests only)
