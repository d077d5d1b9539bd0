"""`lgrep mcp --http` through the MCP SDK's streamable HTTP client and plain HTTP requests: a real
server process that answers only the holder of its bearer token, with the SDK's Host and Origin
checks still behind it."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

pytestmark = [pytest.mark.slow]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@dataclass
class HttpServer:
    url: str
    banner: str
    process: subprocess.Popen[bytes]


def _read_banner(process: subprocess.Popen[bytes], timeout: float = 60) -> str:
    """stderr up to the server's start-up lines (or its exit), read with a deadline."""
    assert process.stderr is not None
    fd = process.stderr.fileno()
    os.set_blocking(fd, False)
    deadline = time.monotonic() + timeout
    seen = b""
    while b"JSON config:" not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"lgrep mcp --http did not start: {seen.decode(errors='replace')}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:  # it exited
                break
            seen += chunk
    return seen.decode(errors="replace")


@contextmanager
def _serve(env: dict[str, str], project: Path, *args: str) -> Iterator[HttpServer]:
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "lgrep_cli", "mcp", "--http", "0", str(project), *args],
        env=env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        banner = _read_banner(process)
        found = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", banner)
        assert found, banner
        yield HttpServer(found.group(1), banner, process)
    finally:
        process.terminate()
        process.wait(timeout=30)
        for pipe in (process.stdout, process.stderr):
            assert pipe is not None
            pipe.close()


def _post(url: str, message: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    """One JSON-RPC message POSTed as a streamable HTTP client would, with exactly `headers` added."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    try:
        conn.request(
            "POST",
            parts.path,
            body=json.dumps(message),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _sdk_session(url: str, headers: dict[str, str], steps: Any) -> Any:
    async with (
        create_mcp_http_client(headers=headers) as http_client,
        streamable_http_client(url, http_client=http_client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await steps(session)


def _sdk_refused(url: str, headers: dict[str, str]) -> str:
    """What the SDK's client raises when it cannot even initialize."""

    async def nothing(session: ClientSession) -> None:
        await session.list_tools()

    async def attempt() -> str:
        try:
            with anyio.fail_after(60):
                await _sdk_session(url, headers, nothing)
        except Exception as exc:  # the SDK raises its own error, or an ExceptionGroup of it
            return repr(exc)
        return ""

    return anyio.run(attempt)


@pytest.mark.model
def test_http_answers_only_the_holder_of_its_token(daemon, mini_repo: Path) -> None:
    with _serve(daemon.lgrep.env, mini_repo) as server:
        token_file = daemon.cache / "mcp.token"
        info = token_file.lstat()
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        token = token_file.read_text().strip()
        assert len(token) >= 32
        # The start-up lines say where the token is and which header carries it, not the token.
        assert f"Authorization: Bearer $(cat {token_file})" in server.banner, server.banner
        assert token not in server.banner

        # No token, a wrong one, another scheme: 401 before MCP sees the request.
        for headers in ({}, _bearer("x" * 43), {"Authorization": f"Basic {token}"}, _bearer(token[:-1])):
            status, response_headers, _ = _post(server.url, INITIALIZE, headers)
            assert status == 401, (headers, status)
            assert response_headers["www-authenticate"].startswith("Bearer")
        # With the token a session starts; a tool call in it without the token still gets 401,
        # and no tool ran: the daemon, which the first tool call would start, never did.
        status, response_headers, body = _post(server.url, INITIALIZE, _bearer(token))
        assert status == 200, body
        session = {"mcp-session-id": response_headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        _post(server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**session, **_bearer(token)})
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lgrep_index", "arguments": {}}}
        for headers in ({}, _bearer("y" * 43)):
            status, _, _ = _post(server.url, call, {**session, **headers})
            assert status == 401
        assert not daemon.socket.exists() and not (daemon.cache / "serve.log").exists()
        # DNS rebinding checks still hold for a request that has the token.
        status, _, _ = _post(server.url, INITIALIZE, {**_bearer(token), "Host": "evil.example:80"})
        assert status == 421
        status, _, _ = _post(server.url, INITIALIZE, {**_bearer(token), "Origin": "http://evil.example"})
        assert status == 403

        # The SDK's own client: refused without the token or with another one ...
        assert "Authorization: Bearer <token>" in _sdk_refused(server.url, {})
        assert "Authorization: Bearer <token>" in _sdk_refused(server.url, _bearer("z" * 43))
        assert not daemon.socket.exists()

        # ... and served with it: tools and resources work.
        async def steps(session: ClientSession) -> dict[str, Any]:
            tools = {t.name for t in (await session.list_tools()).tools}
            found = await session.call_tool("lgrep_search", {"query": "verify the token signature", "limit": 3})
            assert not found.is_error, found.content
            hits = found.structured_content["results"]  # type: ignore[index]
            text = await session.read_resource(hits[0]["uri"])
            return {"tools": tools, "hits": hits, "file": text.contents[0].text}  # type: ignore[union-attr]

        out = anyio.run(lambda: _sdk_session(server.url, _bearer(token), steps))
        assert "lgrep_search" in out["tools"] and "lgrep_get_file" in out["tools"]
        assert out["hits"][0]["path"] == "auth/tokens.py"
        assert out["file"] == (mini_repo / "auth" / "tokens.py").read_text()
        # A restarted server keeps its token: a client's config stays valid.
    with _serve(daemon.lgrep.env, mini_repo) as again:
        assert token_file.read_text().strip() == token
        assert _post(again.url, INITIALIZE, _bearer(token))[0] == 200
        assert again.process.stdout is not None and not select.select([again.process.stdout], [], [], 0)[0]


def test_http_token_from_the_environment_or_a_file_of_ones_own(lgrep, mini_repo: Path, tmp_path: Path) -> None:
    env = dict(lgrep.env)
    token_file = lgrep.cache / "mcp.token"

    def refused(extra: dict[str, str], *args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "lgrep_cli", "mcp", "--http", "0", str(mini_repo), *args],
            env={**env, **extra},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr and "serving" not in proc.stderr
        return proc.stderr

    # A token file others may read, a link, another user's: refused, nothing served.
    token_file.write_text("a" * 43 + "\n")
    token_file.chmod(0o640)
    assert "can be used by other users" in refused({})
    token_file.unlink()
    real = tmp_path / "real.token"
    real.write_text("a" * 43 + "\n")
    real.chmod(0o600)
    token_file.symlink_to(real)
    assert "symbolic link" in refused({})
    token_file.unlink()
    if os.geteuid() == 0:  # only root can give a file away
        real.chmod(0o600)
        os.chown(real, 65534, 65534)
        assert "belongs to user id 65534" in refused({}, "--token-file", str(real))
    # A token too short to be one.
    assert "LGREP_MCP_TOKEN must be" in refused({"LGREP_MCP_TOKEN": "secret"})

    # LGREP_MCP_TOKEN: that token, and no file written.
    chosen = "Tok3n_from-the.environment~0123456789"
    with _serve({**env, "LGREP_MCP_TOKEN": chosen}, mini_repo) as server:
        assert "Authorization: Bearer $LGREP_MCP_TOKEN" in server.banner and chosen not in server.banner
        assert _post(server.url, INITIALIZE, _bearer(chosen))[0] == 200
        assert _post(server.url, INITIALIZE, {})[0] == 401
    assert not token_file.exists()

    # --token-file: created 0600 where asked.
    mine = tmp_path / "keys" / "lgrep-mcp.token"
    with _serve(env, mini_repo, "--token-file", str(mine)) as server:
        assert stat.S_IMODE(mine.stat().st_mode) == 0o600
        assert _post(server.url, INITIALIZE, _bearer(mine.read_text().strip()))[0] == 200


def test_the_inspector_cli_passes_the_header(lgrep, mini_repo: Path, npm_client) -> None:
    # A real client configured as the README says: the header in its config, else refused.
    inspector = npm_client("@modelcontextprotocol/inspector", "2.12.0", "mcp-inspector")

    def inspect(url: str, *header: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(inspector), "--cli", "--transport", "http", "--server-url", url, *header, "--method", "tools/list"],
            capture_output=True,
            text=True,
            env=lgrep.env,
            timeout=120,
            check=False,
        )

    with _serve(lgrep.env, mini_repo) as server:
        token = (lgrep.cache / "mcp.token").read_text().strip()
        refused = inspect(server.url)
        listed = inspect(server.url, "--header", f"Authorization: Bearer {token}")
    assert refused.returncode != 0 and "lgrep_search" not in refused.stdout
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "lgrep_search" in {t["name"] for t in json.loads(listed.stdout)["tools"]}
