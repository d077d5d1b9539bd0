"""Released versions end to end, on a generated repository with two components and release tags:
`lgrep index --tags`, then the CLI in-process, a real daemon over gRPC (started, queried, killed,
restarted) and a real MCP server over stdio answer from component@version."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.models import (
    GetFileRequest,
    ListComponentsRequest,
    ListFilesRequest,
    ListVersionsRequest,
    SearchRequest,
)
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.testing.repos import TaggedRepo, git, write_tagged_repo
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = [pytest.mark.slow, pytest.mark.model]

SCOPES = "versions:\n  scopes:\n    agent: [agent]\n    server: [server]\n"


def _tagged(tmp_path: Path, env: dict[str, str]) -> TaggedRepo:
    repo = write_tagged_repo(tmp_path / "mono", agent_releases=4, server_releases=3)
    config = tmp_path / "lgrep-config.yaml"
    config.write_text(SCOPES)
    env["LGREP_CONFIG"] = str(config)
    return repo


def test_the_cli_indexes_tags_and_answers_from_a_version(lgrep_here, tmp_path: Path) -> None:
    repo = _tagged(tmp_path, lgrep_here.env)
    root = str(repo.root)
    summary = lgrep_here("index", "--tags", root, "--json").json()
    assert summary["tags_indexed"] == len(repo.tags) == summary["tags_total"]
    assert summary["tag_file_pairs_total"] > summary["blobs_total"]

    components = lgrep_here("components", root, "--json").json()["components"]
    assert {c["name"]: (c["versions"], c["latest"]) for c in components} == {
        "agent": (4, "0.4.0"),
        "server": (3, "1.3.0"),
        "mono": (2, "2.0.0"),
    }
    versions = lgrep_here("versions", "agent", root, "--json").json()["versions"]
    assert [v["version"] for v in versions] == ["0.4.0", "0.3.0", "0.2.0", "0.1.0"]
    assert versions[0]["tag"] == "agent-v0.4.0" and versions[0]["files"] > 0

    # retry_tool only exists from agent 0.3.0 on: a range below it cannot find it, one above can.
    old = lgrep_here(
        "search", "retry a failing tool call", root, "--component", "agent", "--version", "<0.3", "--json"
    ).json()
    new = lgrep_here(
        "search", "retry a failing tool call", root, "--component", "agent", "--version", ">=0.3", "--json"
    ).json()
    assert old["release"]["version"] == "0.2.0" and new["release"]["version"] == "0.4.0"
    assert "retry_tool" not in {r["symbol"] for r in old["results"]}
    assert new["results"][0]["symbol"] == "retry_tool"
    assert all(r["path"].startswith("agent/") for r in new["results"])  # the component's scope
    fts = lgrep_here(
        "search", "screenshot", root, "--component", "server", "--version", "1.2.0", "--type", "bm25", "--json"
    ).json()
    assert fts["search_type"] == "bm25" and fts["results"][0]["symbol"] == "screenshot"
    opened = lgrep_here(
        "search", "retry a failing tool call", root, "--component", "agent", "--files", "-n", "2", "--json"
    ).json()
    assert opened["release"]["version"] == "0.4.0" and opened["results"] == []
    assert 1 <= len(opened["files"]) <= 2 and all(f["path"].startswith("agent/") for f in opened["files"])
    assert any(r["symbol"] == "retry_tool" for r in opened["files"][0]["ranges"])

    files = lgrep_here("files", root, "--component", "server", "--json").json()
    assert files["release"]["version"] == "1.3.0"
    assert "server/http.py" in {f["path"] for f in files["files"]}
    assert all(f["language"] for f in files["files"])
    piece = lgrep_here(
        "file", "agent/core.py", "--project", root, "--component", "agent", "--version", "0.2.0", "--json"
    )
    data = piece.json()
    assert "max_steps * 2" in data["content"] and data["total_lines"] == len(data["content"].splitlines())
    assert data["release"]["tag"] == "agent-v0.2.0"


def test_unknown_components_and_versions_list_the_valid_ones(lgrep_here, tmp_path: Path) -> None:
    repo = _tagged(tmp_path, lgrep_here.env)
    root = str(repo.root)
    never = lgrep_here("components", root, check=False)
    assert never.code == 1 and "lgrep index --tags" in never.err and "Traceback" not in never.err
    lgrep_here("index", "--tags", root, "--json")
    unknown = lgrep_here("search", "x", root, "--component", "agnet", check=False)
    assert unknown.code == 1 and "agent, mono, server" in unknown.err and "Traceback" not in unknown.err
    missing = lgrep_here("search", "x", root, "--component", "agent", "--version", "9.9.9", check=False)
    assert missing.code == 1 and "0.4.0, 0.3.0, 0.2.0, 0.1.0" in missing.err
    bad = lgrep_here("search", "x", root, "--component", "agent", "--version", ">>1", check=False)
    assert bad.code == 1 and "invalid version range" in bad.err
    outside = lgrep_here("file", "../etc/passwd", "--project", root, "--component", "agent", check=False)
    assert outside.code == 1 and "inside" in outside.err
    no_file = lgrep_here("file", "agent/nope.py", "--project", root, "--component", "agent", check=False)
    assert no_file.code == 1 and "not in agent@0.4.0" in no_file.err


def test_the_daemon_serves_versions_over_grpc_and_across_a_restart(daemon, tmp_path: Path) -> None:
    repo = _tagged(tmp_path, daemon.lgrep.env)
    root = str(repo.root)
    daemon.lgrep("index", "--tags", root, "--json")
    pid = daemon.start()
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        assert [c.name for c in client.call(ListComponentsRequest(root))] == ["agent", "mono", "server"]
        assert [r.version for r in client.call(ListVersionsRequest(root, "server"))] == ["1.3.0", "1.2.0", "1.1.0"]
        found = client.call(SearchRequest("capture the screen", root, component="server", version="~1.1"))
        assert found.release is not None and found.release.tag == "server-v1.1.0"
        assert found.results[0].symbol == "screenshot"
        listed = client.call(ListFilesRequest(root, component="agent", version="0.1.0"))
        assert listed.release is not None and {f.path for f in listed.files} >= {"agent/core.py", "agent/tools.py"}
        piece = client.call(
            GetFileRequest(root, "agent/tools.py", start_line=1, end_line=2, component="agent", version="0.4.0")
        )
        assert piece.start_line == 1 and piece.end_line == 2 and "call_tool" in piece.content
        with pytest.raises(NotFoundError, match="agent, mono, server"):
            client.call(ListVersionsRequest(root, "nope"))

    # A new tag arrives while the daemon runs: its next query sees it.
    (repo.root / "agent" / "core.py").write_text("def run(task):\n    '''Run one task: the 0.5 rewrite.'''\n")
    git(repo.root, "commit", "-qam", "0.5")
    git(repo.root, "tag", "agent-v0.5.0")
    daemon.lgrep("index", "--tags", root, "--json")
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        assert client.call(ListVersionsRequest(root, "agent"))[0].version == "0.5.0"

    os.kill(pid, signal.SIGKILL)
    daemon.process.wait(timeout=30)  # type: ignore[union-attr]
    daemon.start()
    # The CLI goes through the restarted daemon (autostart is on in this fixture).
    answer = daemon.lgrep("search", "the rewrite", root, "--component", "agent", "--json").json()
    assert answer["release"]["version"] == "0.5.0" and answer["results"]


def test_an_agent_browses_and_searches_versions_through_mcp(daemon, tmp_path: Path) -> None:
    repo = _tagged(tmp_path, daemon.lgrep.env)
    daemon.lgrep("index", "--tags", str(repo.root), "--json")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "lgrep_mcp.server", str(repo.root)],
        env=dict(daemon.lgrep.env),
        cwd=str(repo.root),
    )

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            for name, tool, args in [
                ("components", "lgrep_releases", {}),
                ("versions", "lgrep_releases", {"component": "agent"}),
                ("files", "lgrep_releases", {"component": "agent", "version": "0.1.0"}),
                (
                    "search",
                    "lgrep_search",
                    {"query": "retry a failing tool", "component": "agent", "version": "latest"},
                ),
                ("fts", "lgrep_search", {"query": "screenshot", "component": "server", "search_type": "bm25"}),
                (
                    "to_open",
                    "lgrep_search",
                    {"query": "retry a failing tool", "component": "agent", "files": True, "limit": 2},
                ),
                ("file", "lgrep_get_file", {"path": "agent/core.py", "component": "agent", "version": "0.1.0"}),
                ("unknown", "lgrep_search", {"query": "x", "component": "agnet"}),
                ("escape", "lgrep_get_file", {"path": "../../etc/passwd", "component": "agent"}),
            ]:
                result = await session.call_tool(tool, args)
                out[name] = (result.is_error, result.structured_content, result.content[0].text)  # type: ignore[union-attr]
        return out

    out = anyio.run(main)
    assert "lgrep_releases" in out["tools"]
    assert {"component", "version"} <= set(out["tools"]["lgrep_search"].input_schema["properties"])
    error, components, _ = out["components"]
    assert not error and {c["name"] for c in components["components"]} == {"agent", "mono", "server"}
    assert [v["version"] for v in out["versions"][1]["versions"]] == ["0.4.0", "0.3.0", "0.2.0", "0.1.0"]
    files = out["files"][1]
    assert files["release"]["version"] == "0.1.0" and "agent/core.py" in {f["path"] for f in files["files"]}
    search = out["search"][1]
    assert search["release"]["version"] == "0.4.0" and search["results"][0]["symbol"] == "retry_tool"
    assert out["fts"][1]["results"][0]["symbol"] == "screenshot"
    to_open = out["to_open"][1]
    assert to_open["release"]["version"] == "0.4.0" and to_open["results"] == []
    assert to_open["files"] and all(f["path"].startswith("agent/") and f["uri"] is None for f in to_open["files"])
    piece = out["file"][1]
    assert piece["release"]["tag"] == "agent-v0.1.0" and "max_steps * 1" in piece["content"]
    assert out["unknown"][0] is True and "agent, mono, server" in out["unknown"][2]
    assert out["escape"][0] is True and "inside the repository" in out["escape"][2]
    assert json.dumps(out["components"][1])  # structured content is plain JSON


def test_huge_files_in_a_tag_are_skipped_unread(lgrep, tmp_path: Path) -> None:
    """A tag holding a 64 MB `.lgrepignore` and a 64 MB source file: both are judged by the size
    the tree records and never read into memory (packages/lgrep-index/tests/test_tags.py measures
    that); the ignore file is named in a warning."""
    repo = tmp_path / "huge"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def serve_requests(port):\n    return port\n")
    line = b"*.generated-" + b"x" * 50 + b"\n"
    for name in (".lgrepignore", "big.py"):
        with (repo / name).open("wb") as f:
            for _ in range(64 * 2**20 // len(line)):
                f.write(line)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "huge files")
    git(repo, "tag", "v1.0.0")
    config = tmp_path / "lgrep-config.yaml"
    config.write_text("index:\n  max_file_bytes: 100000\n")
    lgrep.env["LGREP_CONFIG"] = str(config)

    proc = lgrep("index", "--tags", str(repo), "--json")
    summary = proc.json()
    assert summary["tags_indexed"] == 1 and summary["files_skipped"] == {"too-large": 2}
    assert ".lgrepignore in tag v1.0.0 is 67108" in proc.err and "not read" in proc.err
    assert "Traceback" not in proc.err
    files = lgrep("files", str(repo), "--component", "huge", "--json").json()["files"]
    assert [f["path"] for f in files] == ["app.py"]


def test_a_tag_of_an_annotated_tag_is_indexed(lgrep_here, tmp_path: Path) -> None:
    """`git tag -a v2.0.0 candidate`, where `candidate` is itself an annotated tag: peeled to its commit."""
    repo = tmp_path / "nested"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def first_release():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "tag", "-a", "v1.0.0", "-m", "one")
    (repo / "app.py").write_text("def second_release():\n    return 2\n")
    git(repo, "commit", "-qam", "two")
    git(repo, "tag", "-a", "candidate", "-m", "release candidate")
    git(repo, "-c", "advice.nestedTag=false", "tag", "-a", "v2.0.0", "-m", "two", "candidate")
    git(repo, "-c", "advice.nestedTag=false", "tag", "-a", "v2.0.1", "-m", "two again", "v2.0.0")

    summary = lgrep_here("index", "--tags", str(repo), "--json").json()
    assert summary["tags_indexed"] == 3 and summary["unparsed"] == ["candidate"]
    versions = lgrep_here("versions", "nested", str(repo), "--json").json()["versions"]
    assert [v["version"] for v in versions] == ["2.0.1", "2.0.0", "1.0.0"]
    piece = lgrep_here(
        "file", "app.py", "--project", str(repo), "--component", "nested", "--version", "2.0.1", "--json"
    )
    assert "second_release" in piece.json()["content"]
