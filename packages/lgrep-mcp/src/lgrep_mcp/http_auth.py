"""`lgrep mcp --http`: streamable HTTP on 127.0.0.1 for clients that hold the server's bearer token.

Any local user can reach a loopback port, so the port alone would hand every tool and resource
(`--root` folders included) to everyone on the machine, around the daemon's 0600 socket. Every
HTTP request must therefore carry `Authorization: Bearer <token>`; one without it, or with another
token, is answered 401 here, before the MCP SDK sees it (compared in constant time). The token is
`LGREP_MCP_TOKEN` when set, else the one in the token file (`--token-file`, default `mcp.token` in
the cache dir), which is created 0600 on first use and afterwards read only if it is a regular file
of the user's that no one else may read (the daemon's rules for `lgrep.token`, ADR 0007). The SDK's
Host and Origin checks (DNS rebinding) still run behind this one.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import ConfigError

__all__ = ["TOKEN_ENV", "TOKEN_FILE_NAME", "BearerTokenGate", "http_token", "serve_http"]

TOKEN_ENV = "LGREP_MCP_TOKEN"
TOKEN_FILE_NAME = "mcp.token"
MCP_PATH = "/mcp"

# RFC 6750's b64token, 16 characters at least (a guessable token is no token) and a bound.
_TOKEN_RE = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_MIN_TOKEN, _MAX_TOKEN = 16, 512

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


# A JSON-RPC error, so that MCP clients show its message rather than a bare status (-32001: the
# JSON-RPC range for server errors; the id is unknown, as the body is never read).
_REFUSAL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32001,
            "message": "unauthorized: this lgrep MCP server needs the header 'Authorization: Bearer <token>'; "
            "it said where the token is when it started",
        },
    }
).encode()


def _valid(token: str) -> bool:
    return _MIN_TOKEN <= len(token) <= _MAX_TOKEN and _TOKEN_RE.fullmatch(token) is not None


def _create_token_file(path: Path) -> str | None:
    """A new token written to `path`, 0600 from its first byte on; None if `path` already exists
    (a link included: it is never followed). The token is complete before the name appears (a
    hard link of a private temporary file), so two servers starting together agree on one."""
    from lgrep_core.rpc.grpc_tokens import new_token

    token = new_token()
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    old_umask = os.umask(0o177)
    try:
        fd = os.open(temp, flags, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write the MCP token file {path}: {exc.strerror}") from None
    finally:
        os.umask(old_umask)
    try:
        try:
            os.write(fd, f"{token}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, path)  # fails, never replaces, when the name exists
    except FileExistsError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot write the MCP token file {path}: {exc.strerror}") from None
    finally:
        temp.unlink(missing_ok=True)
    return token


def http_token(env_token: str | None, token_file: Path) -> tuple[str, str]:
    """The token HTTP clients must send, and where it comes from (for the start-up message).

    Raises:
        ConfigError: `LGREP_MCP_TOKEN` is not a usable token, or the token file is unsafe (a link,
            another user's, readable by others) or cannot be written.
    """
    from lgrep_core.rpc.grpc_tokens import read_token_file

    if env_token is not None:
        token = env_token.strip()
        if not _valid(token):
            raise ConfigError(
                f"{TOKEN_ENV} must be {_MIN_TOKEN} to {_MAX_TOKEN} characters of letters, digits and ._~+/- "
                "(`python -c 'import secrets; print(secrets.token_urlsafe(32))'` makes one)"
            )
        return token, f"${TOKEN_ENV}"
    if not (token_file.exists() or token_file.is_symlink()):
        token_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        created = _create_token_file(token_file)
        if created is not None:
            return created, str(token_file)
    return read_token_file(token_file), str(token_file)


class BearerTokenGate:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` ends as 401 before
    `app` runs. Lifespan events pass through (they start the SDK's session manager)."""

    def __init__(self, app: App, token: str) -> None:
        self._app = app
        self._expected = token.encode("ascii")

    def _authorized(self, scope: Scope) -> bool:
        values = [v for k, v in scope.get("headers") or () if k.lower() == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, credential = bytes(values[0]).strip().partition(b" ")
        # compare_digest whatever the scheme said, so a wrong scheme costs the same time
        matches = hmac.compare_digest(credential.strip(), self._expected)
        return scheme.lower() == b"bearer" and matches

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._authorized(scope):
            await self._app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = _REFUSAL
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="lgrep"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _instructions(url: str, source: str) -> str:
    """What a client needs, printed on stderr at start (the token's place, never the token)."""
    value = f"${TOKEN_ENV}" if source.startswith("$") else f"$(cat {source})"
    return (
        f"lgrep-mcp: serving MCP (streamable HTTP) at {url}\n"
        f"lgrep-mcp: every request needs the header 'Authorization: Bearer <token>', the token being "
        f"{'the value of ' + TOKEN_ENV if source.startswith('$') else 'the contents of ' + source}\n"
        f"lgrep-mcp:   Claude Code: claude mcp add --transport http lgrep {url} "
        f'--header "Authorization: Bearer {value}"\n'
        f'lgrep-mcp:   JSON config: {{"type": "http", "url": "{url}", '
        f'"headers": {{"Authorization": "Bearer <token>"}}}}\n'
    )


def serve_http(server: Any, port: int, token: str, token_source: str) -> None:
    """Serve `server` (an MCPServer) on 127.0.0.1:`port` (0: a free port) behind the token gate,
    until interrupted. The URL and the header a client needs go to stderr once the port is bound.

    Raises:
        ConfigError: the port cannot be bound.
    """
    import anyio
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1", streamable_http_path=MCP_PATH)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    url = f"http://127.0.0.1:{sock.getsockname()[1]}{MCP_PATH}"
    config = uvicorn.Config(BearerTokenGate(app, token), log_level="warning", lifespan="on")
    sys.stderr.write(_instructions(url, token_source))
    sys.stderr.flush()
    try:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        sock.close()
