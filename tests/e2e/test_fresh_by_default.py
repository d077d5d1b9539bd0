"""Fresh by default (ADR 0024), through real processes: a daemon, real `lgrep mcp` servers holding
watch leases on their project, and `lgrep` commands.

An MCP server keeps its project watched without any watch call; a server killed with -9 lets its
lease expire; two servers share one watch until the last one goes; an explicit `lgrep watch`
outlives every lease and `lgrep unwatch` wins over them; a restarted daemon is leased again; and a
git checkout in a project nobody watches is caught by the next search.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from lgrep_core.domain.models import ProjectStatus, StatusRequest
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.storage.layout import project_dir
from lgrep_core.testing.repos import git
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = [pytest.mark.slow, pytest.mark.model]

# Short leases, so a killed server's watch ends within seconds here (30 s by default).
TTL_S = 3.0
# Long enough that only a watch that never picks the edit up fails here, on any machine: the issue's
# 2 s goal is a speed goal, measured by tools/bench_fresh.py (docs/benchmarks.md: 366-406 ms median).
# Index work runs below the answers' priority (ADR 0029), so on a saturated machine (two test suites
# and an embedding run on 2 cores) an edit took longer than 2 s and a 2 s bound here failed.
EDIT_VISIBLE_S = 30.0


def _env(daemon) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {**daemon.lgrep.env, "LGREP_MCP_LEASE_TTL_S": str(TTL_S)}


def _status(daemon, project: Path) -> ProjectStatus:  # type: ignore[no-untyped-def]
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        return client.call(StatusRequest(str(project)))


@contextmanager
def _mcp_process(daemon, project: Path) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    """A real `lgrep mcp` process on stdio that no client talks to yet (its leases need none)."""
    process = subprocess.Popen(
        [*daemon.lgrep.command, "mcp", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(daemon),
        cwd=project,
    )
    try:
        yield process
    finally:
        assert process.stdin is not None
        if not process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()  # end of its input: it releases its leases and exits
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def _close(process: subprocess.Popen[bytes]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0


def _watched_by(daemon, project: Path, leases: int, wait_for, what: str) -> ProjectStatus:  # type: ignore[no-untyped-def]
    return wait_for(
        lambda: (s := _status(daemon, project)).watched and s.watch_leases == leases and s,
        60,
        what,
    )


def test_an_mcp_server_keeps_its_project_fresh_with_no_watch_call(daemon, mini_repo: Path, wait_for) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    assert not _status(daemon, mini_repo).watched

    async def steps(session: ClientSession) -> dict[str, Any]:
        # The server took its lease on start: the daemon watches the project, nobody asked.
        deadline = time.monotonic() + 60
        while not (await session.call_tool("lgrep_status", {})).structured_content["watched"]:  # type: ignore[index]
            assert time.monotonic() < deadline, "the MCP server's lease never made the daemon watch the project"
            await anyio.sleep(0.05)
        status = (await session.call_tool("lgrep_status", {})).structured_content
        (mini_repo / "fresh_edit.py").write_text("def freshly_saved_marker():\n    return 'saved just now'\n")
        edited = time.monotonic()
        while True:
            found = await session.call_tool("lgrep_search", {"query": "freshly_saved_marker", "limit": 3})
            paths = [r["path"] for r in (found.structured_content or {}).get("results", [])]
            if "fresh_edit.py" in paths:
                return {"status": status, "seconds": time.monotonic() - edited}
            assert time.monotonic() - edited < EDIT_VISIBLE_S, (
                f"the edit was not searchable within {EDIT_VISIBLE_S} s: {paths}"
            )
            await anyio.sleep(0.05)

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-P", "-m", "lgrep_mcp.server", str(mini_repo)],
            env=_env(daemon),
            cwd=str(mini_repo),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await steps(session)

    out = anyio.run(main)
    assert out["status"]["watched"] is True and out["status"]["watch_leases"] == 1, out["status"]
    assert out["seconds"] < EDIT_VISIBLE_S
    # The session ended, the server released its lease: nobody holds the project, nobody watches it.
    wait_for(lambda: not _status(daemon, mini_repo).watched, 30, "the released lease to end the watch")
    assert _status(daemon, mini_repo).watch_leases == 0


def test_a_killed_mcp_server_lease_expires(daemon, mini_repo: Path, wait_for) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    with _mcp_process(daemon, mini_repo) as server:
        _watched_by(daemon, mini_repo, 1, wait_for, "the MCP server's lease")
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
        killed = time.monotonic()
        # Nobody released the lease: it ends when its ttl passes without a renewal.
        wait_for(lambda: not _status(daemon, mini_repo).watched, TTL_S + 10, "the killed server's lease to expire")
        assert time.monotonic() - killed <= TTL_S + 10
        said = daemon.lgrep("status", str(mini_repo), "--json").json()
        assert said["watched"] is False and said["watch_leases"] == 0, said
        assert "0 watched" in daemon.lgrep("serve", "--status").out


def test_two_servers_share_a_watch_until_the_last_one_goes(daemon, mini_repo: Path, wait_for) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    with _mcp_process(daemon, mini_repo) as first, _mcp_process(daemon, mini_repo / "cmd") as second:
        # The second one serves a folder inside the project: the same project, one watcher.
        _watched_by(daemon, mini_repo, 2, wait_for, "two leases on one project")
        assert daemon.lgrep("serve", "--status", "--json").json()["watched_projects"] == [str(mini_repo.resolve())]
        _close(first)
        status = _status(daemon, mini_repo)
        assert status.watched and status.watch_leases == 1, status
        _close(second)
        wait_for(lambda: not _status(daemon, mini_repo).watched, 30, "the last lease to end the watch")


def test_an_explicit_watch_outlives_the_leases_and_unwatch_wins_over_them(daemon, mini_repo: Path, wait_for) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    with _mcp_process(daemon, mini_repo) as server:
        _watched_by(daemon, mini_repo, 1, wait_for, "the MCP server's lease")
        assert "already watched" in daemon.lgrep("watch", str(mini_repo)).err
        _close(server)
    status = _status(daemon, mini_repo)
    assert status.watched and status.watch_leases == 0, "the explicit watch ended with the last lease"

    # `lgrep unwatch` while an agent holds a lease: the user's word wins, and the lease's renewals
    # do not start the watch again until `lgrep watch`.
    with _mcp_process(daemon, mini_repo):
        _watched_by(daemon, mini_repo, 1, wait_for, "the MCP server's lease")
        assert "is no longer watched" in daemon.lgrep("unwatch", str(mini_repo)).err
        renewed = time.monotonic()
        while time.monotonic() - renewed < TTL_S:  # a whole ttl of renewals (one every second)
            status = _status(daemon, mini_repo)
            assert not status.watched and status.watch_leases == 1, status
            time.sleep(0.2)
        daemon.lgrep("watch", str(mini_repo))
        status = _status(daemon, mini_repo)
        assert status.watched and status.watch_leases == 1, status


def test_a_restarted_daemon_is_leased_again(daemon, mini_repo: Path, wait_for) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    with _mcp_process(daemon, mini_repo):
        _watched_by(daemon, mini_repo, 1, wait_for, "the MCP server's lease")
        daemon.lgrep("serve", "--stop")
        daemon.start()
        # The new daemon knows no lease; the server's next renewal takes it again.
        _watched_by(daemon, mini_repo, 1, wait_for, "the lease on the restarted daemon")
        assert daemon.lgrep("serve", "--status", "--json").json()["watched_projects"] == [str(mini_repo.resolve())]


def test_a_branch_switch_nobody_watched_is_seen_by_the_next_search(daemon, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "billing.py").write_text("def charge_the_card_on_main(amount):\n    return amount * 100\n")
    (repo / "shared.py").write_text("def shared_helper():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "billing.py").unlink()
    (repo / "refunds.py").write_text("def refund_the_card_on_feature(amount):\n    return -amount\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature")
    git(repo, "checkout", "-q", "main")

    daemon.start()
    daemon.lgrep("index", str(repo))
    before = daemon.lgrep("search", "refund_the_card_on_feature", str(repo), "--type", "bm25", "--json").json()
    assert "refunds.py" not in {r["path"] for r in before["results"]}
    assert not _status(daemon, repo).watched  # nobody watches it: no agent, no `lgrep watch`

    git(repo, "checkout", "-q", "feature")
    after = daemon.lgrep("search", "refund_the_card_on_feature", str(repo), "--type", "bm25", "--json").json()
    assert "refunds.py" in {r["path"] for r in after["results"]}, after
    gone = daemon.lgrep("search", "charge_the_card_on_main", str(repo), "--type", "bm25", "--json").json()
    assert "billing.py" not in {r["path"] for r in gone["results"]}, gone
    # Back on main, the next search sees main again; and with no checkout between, none runs.
    git(repo, "checkout", "-q", "main")
    again = daemon.lgrep("search", "charge_the_card_on_main", str(repo), "--type", "bm25", "--json").json()
    assert "billing.py" in {r["path"] for r in again["results"]}, again
    recorded = project_dir(daemon.cache, repo.resolve()) / "git_state.json"  # written by every full run
    before_search = recorded.stat().st_mtime_ns
    daemon.lgrep("search", "charge_the_card_on_main", str(repo), "--type", "bm25", "--json")
    assert recorded.stat().st_mtime_ns == before_search


def test_a_daemon_whose_agents_are_idle_still_stops(daemon, mini_repo: Path, wait_for) -> None:
    daemon.start()
    daemon.lgrep("index", str(mini_repo))
    daemon.lgrep("serve", "--stop")
    # A daemon that idles out after 4 s (a call's start is its last activity: the index above
    # could outlast it, so the project was indexed by another daemon first).
    daemon.start(extra_env={"LGREP_SERVER__IDLE_EXIT_S": "4", "LGREP_LOG_LEVEL": "INFO"})
    with _mcp_process(daemon, mini_repo) as server:
        _watched_by(daemon, mini_repo, 1, wait_for, "the MCP server's lease")
        # Its renewals go on (one a second) but are no calls: with nothing else asked of it, the
        # daemon stops once idle_exit_s has passed, though an agent is still there.
        assert daemon.process is not None
        assert daemon.process.wait(timeout=60) == 0
        assert "has been idle: stopping" in (daemon.cache / "serve-test.log").read_text()
        assert server.poll() is None  # the agent's server is unaffected
    assert not daemon.socket.exists()
