"""Every MCP resource and prompt through an in-memory client session over the FakeEngine: the request
each read gives the engine, what it reads (JSON for the JSON resources), its failures as resource
errors with lgrep's message, and each prompt's text with its arguments."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from lgrep_core.domain.errors import NotFoundError, ServerUnavailableError
from lgrep_core.domain.models import (
    ContentType,
    FileChanges,
    FileList,
    FileSlice,
    GetFileRequest,
    IndexedFile,
    ListFilesRequest,
    ProjectState,
    ProjectStatus,
    StatusRequest,
)
from mcp.shared.exceptions import MCPError
from mcp_harness import AUTH_PY, AUTH_SLICE, PROJECT_FILES, Mcp


def raising(error: Exception) -> Any:
    def handler(_request: Any) -> Any:
        raise error

    return handler


def read_error(mcp: Mcp, uri: str) -> str:
    """A resource read's error: a protocol error with a readable message and no traceback."""
    with pytest.raises(MCPError) as caught:
        mcp.read(uri)
    message = caught.value.error.message
    assert "Traceback" not in message and 'File "' not in message
    return message


# --- lgrep://status ------------------------------------------------------------------------------------


def test_status_resource_is_the_status_answer(mcp: Mcp, repo: Path) -> None:
    status = ProjectStatus(
        project_root=str(repo),
        state=ProjectState.READY,
        index_dir="/cache/projects/project-1a2b",
        files=3,
        chunks=14,
        languages={"python": 2, "markdown": 1},
        provider="local",
        model="all-MiniLM-L6-v2 (int8)",
        dimension=384,
        chunker_version="7",
        changes=FileChanges(),
    )
    mcp.engine.answer(StatusRequest, lambda r: status)
    text = mcp.read("lgrep://status")
    assert mcp.engine.calls == [StatusRequest(str(repo), brief=False)]
    assert text.startswith('{\n "project_root": ')  # indented for a person to read
    assert json.loads(text) == {
        "project_root": str(repo),
        "state": "ready",
        "index_dir": "/cache/projects/project-1a2b",
        "watched": False,
        "watch_leases": 0,
        "detail": "",
        "files": 3,
        "chunks": 14,
        "vectors_pending": 0,
        "languages": {"python": 2, "markdown": 1},
        "provider": "local",
        "model": "all-MiniLM-L6-v2 (int8)",
        "dimension": 384,
        "chunker_version": "7",
        "seed": None,
        "last_indexed": None,
        "changes": {"added": 0, "modified": 0, "deleted": 0, "total": 0},
        "project_spend": None,
        "total_spend": None,
        "spend_warnings": [],
        "stale": False,
    }


def test_status_resource_of_a_project_with_no_index_says_so_and_what_to_run(mcp: Mcp, repo: Path) -> None:
    mcp.engine.projects.clear()  # the FakeEngine's own status: NotFoundError
    assert json.loads(mcp.read("lgrep://status")) == {
        "project_root": str(repo),
        "state": "absent",
        "detail": f"{repo} has no index yet: run `lgrep index {repo}`",
    }
    assert mcp.engine.calls == [StatusRequest(str(repo))]


def test_status_resource_when_the_daemon_cannot_be_reached_is_an_error_not_absent(mcp: Mcp, repo: Path) -> None:
    # Only "no index" is `absent`: a daemon that is down says nothing of the index.
    mcp.engine.answer(StatusRequest, raising(ServerUnavailableError("the lgrep daemon \x1b[1mstopped")))
    assert read_error(mcp, "lgrep://status") == "the lgrep daemon \\x1b[1mstopped"


# --- lgrep://files -------------------------------------------------------------------------------------


def test_files_resource_lists_the_indexed_files(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(ListFilesRequest, lambda r: PROJECT_FILES)
    text = mcp.read("lgrep://files")
    assert mcp.engine.calls == [ListFilesRequest(str(repo), path_glob=None, limit=1000)]
    assert json.loads(text) == {
        "project_root": str(repo),
        "total": 3,
        "files": [
            {"path": "docs/guide.md", "language": "markdown", "chunks": 1, "last_line": 3},
            {"path": "src/app.py", "language": "python", "chunks": 1, "last_line": 6},
            {"path": "src/auth.py", "language": "python", "chunks": 2, "last_line": 11},
        ],
    }
    assert "\n" not in text  # compact


def test_files_resource_of_a_large_project_says_what_it_left_out(mcp: Mcp, repo: Path) -> None:
    listed = FileList(
        tuple(IndexedFile(f"src/m{i:04}.py", "python", ContentType.CODE, 1, 10) for i in range(1000)), total=1234
    )
    mcp.engine.answer(ListFilesRequest, lambda r: listed)
    data = json.loads(mcp.read("lgrep://files"))
    assert (data["total"], len(data["files"])) == (1234, 1000)
    assert data["notes"] == [
        "the first 1,000 of 1,234 files by path; `lgrep files --path GLOB` or lgrep_search with a path narrows it"
    ]


def test_files_resource_of_a_server_started_in_a_subfolder_keeps_to_it(mcp: Mcp, repo: Path) -> None:
    mcp.default = repo / "src"
    mcp.engine.answer(ListFilesRequest, lambda r: replace(PROJECT_FILES, files=PROJECT_FILES.files[1:], total=2))
    assert json.loads(mcp.read("lgrep://files"))["project_root"] == str(repo)
    assert mcp.engine.calls == [ListFilesRequest(str(repo), path_glob="src", limit=1000)]


def test_files_resource_error_is_a_resource_error_with_the_message(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(ListFilesRequest, raising(NotFoundError(f"{repo} has no index yet: run `lgrep index {repo}`")))
    assert read_error(mcp, "lgrep://files") == f"{repo} has no index yet: run `lgrep index {repo}`"


# --- lgrep://file/{path} -------------------------------------------------------------------------------


def test_file_resource_reads_the_whole_file(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(GetFileRequest, lambda r: FileSlice(r.path, "python", AUTH_PY, 1, 11, 11))
    assert mcp.read("lgrep://file/src/auth.py") == AUTH_PY
    assert mcp.engine.calls == [GetFileRequest(str(repo), "src/auth.py", 0, 0)]


def test_file_resource_of_a_search_results_uri_decodes_it_once(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(GetFileRequest, lambda r: replace(AUTH_SLICE, path=r.path, content="x = 1\x1b[2J\n"))
    assert mcp.read("lgrep://file/docs/a%20b%25.md") == "x = 1\\x1b[2J\n"  # control characters shown escaped
    assert mcp.engine.calls == [GetFileRequest(str(repo), "docs/a b%.md")]


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        # the SDK's template match refuses these itself
        ("lgrep://file/%2e%2e/outside.py", "Unknown resource: lgrep://file/%2e%2e/outside.py"),
        ("lgrep://file/src/../../outside.py", "Unknown resource: lgrep://file/src/../../outside.py"),
        ("lgrep://file/%2Fetc%2Fpasswd", "Unknown resource: lgrep://file/%2Fetc%2Fpasswd"),
        # lgrep's roots refuse these
        ("lgrep://file/src/link.py", "src/link.py is outside the folders this lgrep server may read"),
        ("lgrep://file/~/.ssh/id_rsa", "~/.ssh/id_rsa is outside the folders this lgrep server may read"),
    ],
)
def test_file_resource_outside_the_project_is_refused(
    mcp: Mcp, repo: Path, tmp_path: Path, uri: str, message: str
) -> None:
    (repo / "src" / "link.py").symlink_to(tmp_path / "outside.py")
    assert read_error(mcp, uri).startswith(message)
    assert mcp.engine.calls == []


def test_file_resource_of_a_file_not_indexed_is_a_resource_error(mcp: Mcp, repo: Path) -> None:
    mcp.engine.answer(GetFileRequest, raising(NotFoundError("src/gone.py is not in the index")))
    assert read_error(mcp, "lgrep://file/src/gone.py") == "src/gone.py is not in the index"
    assert mcp.engine.calls == [GetFileRequest(str(repo), "src/gone.py")]


# --- lgrep://config ------------------------------------------------------------------------------------


def test_config_resource_gives_each_setting_with_its_source(mcp: Mcp, repo: Path, tmp_path: Path) -> None:
    (repo / ".lgrep.yaml").write_text("search:\n  limit: 7\n")
    settings = json.loads(mcp.read("lgrep://config"))
    assert settings["index.cache_dir"] == {"value": str(tmp_path / "env-cache"), "source": "env LGREP_CACHE_DIR"}
    assert settings["search.limit"]["value"] == 7
    assert str(repo / ".lgrep.yaml") in settings["search.limit"]["source"]
    assert settings["embedding.provider"] == {"value": "local", "source": "default"}
    assert mcp.engine.calls == []  # read here, not asked of the daemon


def test_config_resource_with_a_broken_settings_file_names_the_problem(mcp: Mcp, repo: Path) -> None:
    (repo / ".lgrep.yaml").write_text("search:\n  limit: many\n")
    data = json.loads(mcp.read("lgrep://config"))
    assert list(data) == ["error"]
    assert "search.limit" in data["error"] and str(repo / ".lgrep.yaml") in data["error"]


# --- lgrep://stats -------------------------------------------------------------------------------------


def test_stats_resource_sums_the_receipts_of_this_clients_calls(mcp: Mcp, repo: Path) -> None:
    empty = json.loads(mcp.read("lgrep://stats"))
    assert (empty["projects"], empty["clients"], empty["notes"]) == ([], {}, [])
    mcp.engine.answer(GetFileRequest, lambda r: AUTH_SLICE)
    first = mcp.answer("lgrep_get_file", {"path": "src/auth.py"})
    second = mcp.answer("lgrep_get_file", {"path": "src/auth.py", "start_line": 9})
    sums = {
        "calls": 2,
        "tokens_returned": first["tokens"] + second["tokens"],
        "file_tokens": 2 * mcp.tokens_of("src/auth.py"),
        "saved": first["receipt"]["saved"] + second["receipt"]["saved"],
        "files": 2,
    }
    assert json.loads(mcp.read("lgrep://stats")) == {
        "projects": [{"project_root": str(repo), **sums, "clients": {"agent": sums}}],
        "clients": {"agent": sums},
        "total": sums,
        "tokenizer": "cl100k_base",
        "notes": [],
    }


# --- prompts -------------------------------------------------------------------------------------------


def test_every_prompt_is_one_user_message_naming_its_arguments_and_tools(mcp: Mcp) -> None:
    review = mcp.prompt("code_review", {"path": "src/auth.py"})
    tour = mcp.prompt("explain_codebase")
    similar = mcp.prompt("find_similar", {"path": "src/auth.py", "line": "9"})
    texts = {}
    for name, got in (("code_review", review), ("explain_codebase", tour), ("find_similar", similar)):
        (message,) = got.messages
        assert message.role == "user" and message.content.type == "text", name
        texts[name] = message.content.text
    assert texts["code_review"].startswith("Review src/auth.py of this project. Read it with lgrep_get_file.")
    assert texts["explain_codebase"].startswith("Explain how this project is organised. Start with lgrep_status")
    assert texts["find_similar"].startswith(
        "Find code similar to src/auth.py line 9. Call lgrep_find_related with that path and line"
    )
    assert review.description == ("Review a file with lgrep's tools: read it, then what it calls and what resembles it")
    assert mcp.engine.calls == []


def test_a_prompt_without_its_arguments_is_an_error(mcp: Mcp) -> None:
    with pytest.raises(MCPError) as caught:
        mcp.prompt("find_similar", {"path": "src/auth.py"})
    assert "line" in caught.value.error.message
    assert "Traceback" not in caught.value.error.message
