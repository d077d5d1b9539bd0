"""One application API under every shell (lgrep_core.app.api): the same request answers the same through
the daemon, in this process (`--no-daemon`), over gRPC and over MCP; and a folder inside an indexed
project is answered from that project's index, kept to the folder, in every one of them, without a
second index being built."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from lgrep_core.domain.models import SearchRequest, StatusRequest
from lgrep_core.rpc.client import LgrepClient
from mcp import ClientSession

from tests.conftest import InProcessLgrep
from tests.e2e.test_mcp import _session

QUERY = "verify the token signature"


def _index_dirs(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if p.is_dir() and re.fullmatch(r"[0-9a-f]{12}", p.name))


def _without_timings(payload: dict[str, Any]) -> str:
    """The answer as JSON text, without the one field that differs from run to run (milliseconds)."""
    return json.dumps({k: v for k, v in payload.items() if k != "timings_ms"}, indent=2, sort_keys=True)


@pytest.mark.slow  # starts a daemon
def test_a_subfolder_is_answered_by_its_project_in_every_shell(daemon, mini_repo: Path) -> None:
    root = mini_repo.resolve()
    daemon.lgrep("index", "-q", str(root))
    indexes = _index_dirs(daemon.cache)
    assert len(indexes) == 1
    sub = root / "auth"

    through_daemon = daemon.lgrep("search", QUERY, str(sub), "--json")
    assert "is inside the project" in through_daemon.err
    answer = through_daemon.json()
    assert answer["project_root"] == str(root) and answer["scope"] == "auth"
    assert answer["results"] and all(r["path"].startswith("auth/") for r in answer["results"])

    in_process = daemon.lgrep("search", QUERY, str(sub), "--json", "--no-daemon").json()
    assert _without_timings(in_process) == _without_timings(answer)

    # A raw gRPC client naming the subfolder gets the project's answer too, and says which.
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        response = client.call(SearchRequest(QUERY, project_root=str(sub)))
        assert (response.project_root, response.scope) == (str(root), "auth")
        assert [h.path for h in response.results] == [r["path"] for r in answer["results"]]
        status = client.call(StatusRequest(str(sub)))
        assert status.project_root == str(root) and status.indexed

    # An MCP server started in the subfolder: its root is kept to, its project's index answers.
    async def steps(session: ClientSession) -> dict[str, Any]:
        result = await session.call_tool("lgrep_search", {"query": QUERY})
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return result.structured_content

    mcp = anyio.run(_mcp, daemon, sub, steps)
    assert mcp["project_root"] == str(root) and mcp["scope"] == "auth"
    shared = ("path", "start_line", "end_line", "symbol", "kind", "language", "score", "match")
    assert [{k: r[k] for k in shared} for r in mcp["results"]] == [{k: r[k] for k in shared} for r in answer["results"]]

    assert _index_dirs(daemon.cache) == indexes  # no second index, of the subfolder or anything else


async def _mcp(daemon, project: Path, steps) -> Any:  # type: ignore[no-untyped-def]
    async with _session(daemon, project) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await steps(session)


@pytest.mark.slow  # starts a daemon
def test_the_same_request_gives_the_same_json_through_the_daemon_and_in_process(daemon, mini_repo: Path) -> None:
    """The commands run in this process (a real daemon answers over its socket): the test is about
    what they answer, not about starting them."""
    root = str(mini_repo.resolve())
    daemon.lgrep("index", "-q", root)
    here = InProcessLgrep(daemon.lgrep.cache, daemon.lgrep.env)
    for args in (
        ("search", QUERY, root, "--json", "--explain"),
        ("search", "rate limit", root, "--json", "--type", "bm25", "--path", "web"),
        ("search", QUERY, root, "--json", "--files", "--explain"),
        ("search", "the config of the server", f"{root}/cmd", "--json", "--files", "-n", "1"),
        ("symbol", "verify_jwt", root, "--json"),
        ("files", root, "--json"),
        ("file", f"{root}/auth/tokens.py", "--lines", "1:5", "--json"),
        ("related", f"{root}/auth/tokens.py", "20", "--json"),
        ("trace", "verify_jwt", root, "--json"),
        ("skeleton", f"{root}/auth/tokens.py", "--json"),
    ):
        served = here(*args).json()
        local = here(*args, "--no-daemon").json()
        assert _without_timings(local) == _without_timings(served), args
