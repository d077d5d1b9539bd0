"""Real MCP clients against the real `lgrep mcp` stdio server: the MCP Inspector's CLI (from npm), and
several MCP SDK clients at once, which must share one daemon: one model in memory, one watcher per
project, whatever the number of agents."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = [pytest.mark.slow, pytest.mark.model]

INSPECTOR = ("@modelcontextprotocol/inspector", "2.12.0", "mcp-inspector")


def _mcp_command(project: Path, *args: str) -> list[str]:
    """`lgrep mcp PROJECT`, as an agent's config names it (this interpreter's lgrep)."""
    return [sys.executable, "-P", "-m", "lgrep_cli", "mcp", str(project), *args]


def _processes(*, argv_has: tuple[str, ...], env_has: tuple[str, str] | None = None) -> set[int]:
    """Pids of this user's live processes whose command line has every one of `argv_has`, and whose
    environment sets `env_has` (name, value) when given."""
    found: set[int] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if not all(part in argv for part in argv_has):
                continue
            if env_has is not None:
                environ = (proc / "environ").read_bytes().decode(errors="replace").split("\0")
                if f"{env_has[0]}={env_has[1]}" not in environ:
                    continue
            status = (proc / "status").read_text()
        except OSError:  # it exited meanwhile, or is not ours
            continue
        if "\nState:\tZ" not in status:
            found.add(int(proc.name))
    return found


async def _until_embedded(session: ClientSession, root: Path, timeout: float = 240) -> None:
    """Poll the project's status through the agent's session until every chunk has its vector."""
    with anyio.fail_after(timeout):
        while True:
            result = await session.call_tool("lgrep_status", {"path": str(root)})
            status = result.structured_content or {}
            if not result.is_error and status.get("state") == "ready" and status.get("vectors_pending") == 0:
                return
            await anyio.sleep(0.05)


def test_the_inspector_cli_calls_lgrep_search(daemon, mini_repo: Path, npm_client) -> None:
    inspector = npm_client(*INSPECTOR)
    env = daemon.lgrep.env
    # The inspector hands the server only a few variables of its own environment: pass ours.
    server_env = [arg for key in ("HOME", "LGREP_CACHE_DIR") for arg in ("-e", f"{key}={env[key]}")]
    proc = subprocess.run(
        [
            str(inspector),
            "--cli",
            *server_env,
            "--cwd",
            str(mini_repo),
            *_mcp_command(mini_repo),
            "--method",
            "tools/call",
            "--tool-name",
            "lgrep_search",
            "--tool-arg",
            "query=verify the token signature",
            "--tool-arg",
            "limit=3",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=mini_repo,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout)
    assert answer["isError"] is False, answer
    hits = answer["structuredContent"]["results"]
    assert hits[0]["path"] == "auth/tokens.py", hits
    assert len(hits) <= 3
    # The tool's text content is the same answer, for clients that read text only.
    assert json.loads(answer["content"][0]["text"])["results"][0]["path"] == "auth/tokens.py"
    # It went through the daemon the server started (the fixture stops it).
    status = daemon.lgrep("serve", "--status", "--json").json()
    assert status["running"] and status["resident_projects"] == 1


def test_three_agents_share_one_daemon_one_model_one_watcher_per_project(
    daemon, mini_repo: Path, tmp_path: Path, wait_for
) -> None:
    other = tmp_path / "other"
    shutil.copytree(mini_repo, other)
    project, other = mini_repo.resolve(), other.resolve()
    agents = 3
    answers: dict[int, dict[str, Any]] = {}
    seen: dict[str, Any] = {}

    async def agent(n: int, ready: anyio.Event, done: anyio.Event, checked: anyio.Event) -> None:
        # The third agent may also read the second project, and watches it too.
        extra = ("--root", str(other)) if n == 2 else ()
        params = StdioServerParameters(
            command=sys.executable, args=_mcp_command(project, *extra)[1:], env=dict(daemon.lgrep.env), cwd=str(project)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ready.set()
            results: dict[str, Any] = {}

            async def call(key: str, tool: str, args: dict[str, Any]) -> None:
                result = await session.call_tool(tool, args)
                assert not result.is_error, (n, tool, result.content)
                results[key] = result.structured_content

            async with anyio.create_task_group() as calls:
                calls.start_soon(call, "watch", "lgrep_watch_start", {})
                calls.start_soon(call, "search", "lgrep_search", {"query": "verify the token signature", "limit": 5})
                if n == 2:
                    calls.start_soon(call, "watch_other", "lgrep_watch_start", {"path": str(other)})
            # Indexing may drop the model to stay under its memory budget (the next query loads it
            # again), so once both projects are fully embedded every agent runs a vector search.
            for root in (project, other) if n == 2 else (project,):
                await _until_embedded(session, root)
            await call("vector", "lgrep_search", {"query": "verify the token signature", "search_type": "vector"})
            answers[n] = results
            done.set()
            await checked.wait()  # stay connected until the daemon's state was read

    async def main() -> None:
        ready = [anyio.Event() for _ in range(agents)]
        done = [anyio.Event() for _ in range(agents)]
        checked = anyio.Event()
        async with anyio.create_task_group() as group:
            for n in range(agents):
                group.start_soon(agent, n, ready[n], done[n], checked)
            for event in done:
                with anyio.fail_after(300):
                    await event.wait()
            seen["mcp"] = _processes(argv_has=("lgrep_cli", "mcp", str(project)))
            seen["status"] = await anyio.to_thread.run_sync(lambda: daemon.lgrep("serve", "--status", "--json").json())
            seen["daemons"] = _processes(
                argv_has=("lgrep_cli", "serve"), env_has=("LGREP_CACHE_DIR", str(daemon.cache))
            )
            checked.set()

    anyio.run(main)

    assert sorted(answers) == list(range(agents))
    for n, results in answers.items():
        assert results["search"]["results"][0]["path"] == "auth/tokens.py", (n, results["search"])
        assert results["watch"]["watched"] is True, (n, results["watch"])
        assert results["vector"]["results"][0]["path"] == "auth/tokens.py", (n, results["vector"])
    # Every agent asked to watch the project; one of them started the watcher, the others found it.
    assert sum(not r["watch"]["already_watched"] for r in answers.values()) == 1, answers
    assert answers[2]["watch_other"]["watched"] is True
    # While all three agents were connected: three MCP servers, one daemon, one model, one watcher each.
    assert len(seen["mcp"]) == agents, seen
    status = seen["status"]
    assert seen["daemons"] == {status["pid"]}, seen
    assert status["models_loaded"] == 1, status
    assert status["watched_projects"] == sorted([str(project), str(other)]), status
    # And every MCP server process ended with its client.
    wait_for(lambda: not _processes(argv_has=("lgrep_cli", "mcp", str(project))), 30, "the MCP servers to exit")
