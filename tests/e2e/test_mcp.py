"""The MCP server through the MCP SDK's own client over stdio: a real `lgrep-mcp` process that
starts the daemon on its first call, every tool called, and hostile paths refused."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = [pytest.mark.slow, pytest.mark.model]

TOOLS = {
    "lgrep_search",
    "lgrep_index",
    "lgrep_status",
    "lgrep_watch_start",
    "lgrep_watch_stop",
    "lgrep_get_file",
    "lgrep_find_symbol",
    "lgrep_find_related",
}


def _session(daemon, project: Path, *args: str, program: tuple[str, ...] = ("lgrep_mcp.server",)):  # type: ignore[no-untyped-def]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", *program, str(project), *args],
        env=dict(daemon.lgrep.env),
        cwd=str(project),
    )
    return stdio_client(params)


def _run(daemon, project: Path, steps, *args: str, program: tuple[str, ...] = ("lgrep_mcp.server",)) -> Any:  # type: ignore[no-untyped-def]
    async def main() -> Any:
        session_streams = _session(daemon, project, *args, program=program)
        async with session_streams as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await steps(session)

    return anyio.run(main)


def test_every_tool_through_a_real_mcp_client(daemon, mini_repo: Path) -> None:
    async def steps(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        listed = await session.list_tools()
        out["tools"] = {t.name: t for t in listed.tools}
        for name, args in [
            ("lgrep_index", {}),
            ("lgrep_search", {"query": "verify the token signature", "limit": 5}),
            ("lgrep_search_in", {"query": "rate limit", "path": "web"}),
            ("lgrep_status", {}),
            ("lgrep_find_symbol", {"name": "TokenSignr"}),
            ("lgrep_get_file", {"path": "auth/tokens.py", "start_line": 27, "end_line": 30}),
            ("lgrep_find_related", {"path": "auth/tokens.py", "line": 28, "limit": 3}),
            ("lgrep_watch_start", {}),
            ("lgrep_watch_stop", {}),
        ]:
            tool = "lgrep_search" if name == "lgrep_search_in" else name
            result = await session.call_tool(tool, args)
            assert not result.is_error, (name, result.content)
            out[name] = result.structured_content
        return out

    out = _run(daemon, mini_repo, steps)
    tools = out["tools"]
    assert set(tools) == TOOLS
    assert tools["lgrep_search"].annotations.read_only_hint is True
    assert tools["lgrep_index"].annotations.read_only_hint is False
    assert "query" in tools["lgrep_search"].input_schema["properties"]

    files = sum(1 for p in mini_repo.rglob("*") if p.is_file())
    assert out["lgrep_index"]["chunks_total"] > 0 and out["lgrep_index"]["files_seen"] == files
    hits = out["lgrep_search"]["results"]
    assert hits[0]["path"] == "auth/tokens.py", hits
    assert {"path", "start_line", "end_line", "symbol", "content", "score", "why"} <= set(hits[0])
    assert all(h["path"].startswith("web/") for h in out["lgrep_search_in"]["results"])
    assert out["lgrep_status"]["state"] == "ready" and out["lgrep_status"]["files"] == files
    assert out["lgrep_find_symbol"]["matches"][0]["location"]["symbol"] == "TokenSigner"
    assert "def verify_jwt" in out["lgrep_get_file"]["content"]
    assert out["lgrep_find_related"]["anchor"]["path"] == "auth/tokens.py"
    assert out["lgrep_watch_start"]["watched"] is True and out["lgrep_watch_stop"]["was_watched"] is True
    # One daemon served it all, started by the MCP server's first call.
    assert "1 in memory" in daemon.lgrep("serve", "--status").out


def test_indexing_reports_progress_to_the_client(daemon, make_repo, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 60)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def steps(session: ClientSession) -> Any:
        result = await session.call_tool("lgrep_index", {}, progress_callback=on_progress)
        assert not result.is_error, result.content
        return result.structured_content

    summary = _run(daemon, repo, steps)
    assert summary["files_seen"] == 60
    assert seen, "no progress notification reached the client"
    assert all(total and 0 <= progress <= total for progress, total, _ in seen), seen
    assert any(message and "/" in message for _, _, message in seen)


def test_resources_and_prompts(daemon, mini_repo: Path) -> None:
    async def steps(session: ClientSession) -> dict[str, Any]:
        before = await session.read_resource("lgrep://status")
        await session.call_tool("lgrep_index", {})
        after = await session.read_resource("lgrep://status")
        config = await session.read_resource("lgrep://config")
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        review = await session.get_prompt("code_review", {"path": "auth/tokens.py"})
        similar = await session.get_prompt("find_similar", {"path": "auth/tokens.py", "line": "28"})
        explain = await session.get_prompt("explain_codebase", {})
        return {
            "resources": {str(r.uri) for r in (await session.list_resources()).resources},
            "before": json.loads(before.contents[0].text),  # type: ignore[union-attr]
            "after": json.loads(after.contents[0].text),  # type: ignore[union-attr]
            "config": json.loads(config.contents[0].text),  # type: ignore[union-attr]
            "prompts": prompts,
            "texts": [m.content.text for r in (review, similar, explain) for m in r.messages],  # type: ignore[union-attr]
        }

    out = _run(daemon, mini_repo, steps)
    assert {"lgrep://status", "lgrep://config"} <= out["resources"]
    assert out["before"]["state"] == "absent" and "lgrep index" in out["before"]["detail"]
    assert out["after"]["state"] == "ready" and out["after"]["chunks"] > 0
    assert out["config"]["index.cache_dir"]["value"] == str(daemon.cache)
    assert out["config"]["index.cache_dir"]["source"] == "env LGREP_CACHE_DIR"
    assert set(out["prompts"]) == {"code_review", "explain_codebase", "find_similar"}
    review, similar, explain = out["texts"]
    assert "auth/tokens.py" in review and "lgrep_get_file" in review
    assert "line 28" in similar and "lgrep_find_related" in similar
    assert "lgrep_status" in explain


def test_lgrep_mcp_runs_the_same_server(daemon, mini_repo: Path) -> None:
    # `lgrep mcp` is what agent configs name: the CLI's entry point, stdout left to the protocol.
    async def steps(session: ClientSession) -> Any:
        tools = {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool("lgrep_search", {"query": "load the server config"})
        assert not result.is_error, result.content
        return tools, result.structured_content

    tools, answer = _run(daemon, mini_repo, steps, program=("lgrep_cli", "mcp"))
    assert tools == TOOLS and answer["results"][0]["path"] == "cmd/server.go"


def test_paths_outside_the_allowed_roots_are_refused(daemon, mini_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("PASSWORD = 'hunter2'\n")
    (mini_repo / "escape").symlink_to(outside, target_is_directory=True)
    (mini_repo / "escape.py").symlink_to(outside / "secret.py")
    attempts = [
        ("lgrep_get_file", {"path": "../outside/secret.py"}),
        ("lgrep_get_file", {"path": str(outside / "secret.py")}),
        ("lgrep_get_file", {"path": "escape.py"}),
        ("lgrep_get_file", {"path": "escape/secret.py"}),
        ("lgrep_get_file", {"path": "/etc/passwd"}),
        ("lgrep_get_file", {"path": "auth/../../outside/secret.py"}),
        ("lgrep_search", {"query": "password", "path": "../outside"}),
        ("lgrep_search", {"query": "password", "path": "../**/*.py"}),
        ("lgrep_index", {"path": str(outside)}),
        ("lgrep_status", {"path": "escape"}),
        ("lgrep_watch_start", {"path": "/"}),
        ("lgrep_find_related", {"path": "escape/secret.py", "line": 1}),
    ]

    async def steps(session: ClientSession) -> list[tuple[str, bool, str]]:
        results = []
        for tool, args in attempts:
            result = await session.call_tool(tool, args)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            results.append((tool, result.is_error, text))
        return results

    for (tool, args), (_, is_error, text) in zip(attempts, _run(daemon, mini_repo, steps), strict=True):
        assert is_error, (tool, args, text)
        assert "hunter2" not in text
        assert "outside the folders" in text or "a glob must stay inside" in text, (tool, args, text)
    # Nothing was indexed for the folder outside.
    assert not any(p.name != "models" for p in daemon.cache.iterdir() if p.is_dir() and (p / "CURRENT").exists())


def test_a_configured_root_may_be_read(daemon, mini_repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "billing.py").write_text("def charge_card(amount):\n    return amount * 100\n")

    async def steps(session: ClientSession) -> Any:
        await session.call_tool("lgrep_index", {"path": str(other)})
        result = await session.call_tool("lgrep_search", {"query": "charge a card", "path": str(other)})
        assert not result.is_error, result.content
        return result.structured_content

    answer = _run(daemon, mini_repo, steps, "--root", str(other))
    assert answer["project"] == str(other.resolve()) and answer["results"][0]["path"] == "billing.py"


def test_the_server_starts_without_storage_or_model_libraries() -> None:
    code = (
        "import sys, lgrep_mcp.server\n"
        "heavy = ['lancedb', 'pyarrow', 'onnxruntime', 'tokenizers', 'numpy', 'tree_sitter']\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True)
    assert proc.stdout.strip() == ""
