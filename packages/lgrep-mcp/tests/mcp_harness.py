"""The MCP server over an engine in memory (lgrep_core.testing.engines.FakeEngine), driven through an
in-memory client session as an agent's client drives it (the fixtures are in conftest.py): `Mcp`
calls tools, reads resources and gets prompts, and checks every answer against the output schema
the tool listing publishes; the project's files and realistic answers for the engine to give."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import jsonschema
from lgrep_core.domain.models import (
    ChunkKind,
    ComponentInfo,
    ContentType,
    FileHit,
    FileList,
    FileSlice,
    IndexedFile,
    LineRange,
    Location,
    MatchType,
    Release,
    SearchHit,
    Skeleton,
    SymbolMatch,
)
from lgrep_core.testing.engines import FakeEngine
from lgrep_mcp.budget import TokenCounter
from lgrep_mcp.roots import AllowedRoots
from lgrep_mcp.server import build_server
from mcp.client.client import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, GetPromptResult, Implementation, Tool

T = TypeVar("T")

COUNTER = TokenCounter()

# The project's files, on disk (a receipt counts the tokens of the files an answer points into).
AUTH_PY = '''import jwt

from app.settings import SECRET


class Auth:
    """Checks the tokens clients send."""

    def verify(self, token: str) -> dict:
        """The claims of a valid token."""
        return jwt.decode(token, SECRET, algorithms=["HS256"])
'''
APP_PY = """from app.auth import Auth


def login(request):
    claims = Auth().verify(request.token)
    return claims["sub"]
"""
GUIDE_MD = "# Guide\n\nTokens are verified by `Auth.verify`.\n"
FILES = {"src/auth.py": AUTH_PY, "src/app.py": APP_PY, "docs/guide.md": GUIDE_MD}


# --- realistic answers -------------------------------------------------------------------------------

VERIFY = Location(
    "src/auth.py",
    9,
    11,
    "verify",
    ChunkKind.METHOD,
    "python",
    ("Auth", "verify"),
    "def verify(self, token: str) -> dict",
)
AUTH_CLASS = Location("src/auth.py", 6, 11, "Auth", ChunkKind.CLASS, "python", ("Auth",), "class Auth")
LOGIN = Location("src/app.py", 4, 6, "login", ChunkKind.FUNCTION, "python", ("login",), "def login(request)")

VERIFY_HIT = SearchHit(
    path="src/auth.py",
    start_line=9,
    end_line=11,
    symbol="verify",
    kind=ChunkKind.METHOD,
    language="python",
    score=0.8123,
    content='    def verify(self, token: str) -> dict:\n        """The claims of a valid token."""\n'
    '        return jwt.decode(token, SECRET, algorithms=["HS256"])',
    match=(MatchType.BM25, MatchType.VECTOR),
    scores={"bm25_rank": 1.0, "bm25_score": 7.5, "vector_rank": 1.0, "vector_score": 0.71, "fused": 0.0328},
    why=("defines verify", "named in the query"),
)
LOGIN_HIT = SearchHit(
    path="src/app.py",
    start_line=4,
    end_line=6,
    symbol="login",
    kind=ChunkKind.FUNCTION,
    language="python",
    score=0.4,
    content='def login(request):\n    claims = Auth().verify(request.token)\n    return claims["sub"]',
    match=(MatchType.VECTOR,),
    scores={"vector_rank": 2.0, "vector_score": 0.52, "fused": 0.0161},
    stale=True,
)
GUIDE_HIT = SearchHit(
    path="docs/guide.md",
    start_line=1,
    end_line=3,
    symbol="Guide",
    kind=ChunkKind.SECTION,
    language="markdown",
    score=0.2,
    content=GUIDE_MD.rstrip("\n"),
    match=(MatchType.BM25,),
    truncated=True,
)
AUTH_FILE_HIT = FileHit(
    path="src/auth.py",
    score=1.7,
    language="python",
    ranges=(LineRange(9, 11, "verify"), LineRange(6, 8, "Auth")),
    why=("defines verify", "named in the traceback"),
)
APP_FILE_HIT = FileHit("src/app.py", 0.9, "python", (LineRange(4, 6, "login"),), stale=True)

AGENT_RELEASE = Release("agent", "0.7.3", "agent@0.7.3", commit="9fceb02", files=3, indexed_at=1_760_000_000.5)

AUTH_SLICE = FileSlice("src/auth.py", "python", "\n".join(AUTH_PY.split("\n")[8:11]), 9, 11, 11)
AUTH_SKELETON = Skeleton(
    path="src/auth.py",
    language="python",
    content="import jwt\nfrom app.settings import SECRET\n"
    'class Auth:  # L6-11\n    """Checks the tokens clients send."""\n'
    '    def verify(self, token: str) -> dict:  ⋯ 2 lines (L10-11)\n        """The claims of a valid token."""',
    definitions=(AUTH_CLASS, VERIFY),
    total_lines=11,
    tokens=48,
    file_tokens=77,
    tokens_saved=29,
    tokenizer="all-MiniLM-L6-v2",
)
SYMBOL_MATCHES = [SymbolMatch(VERIFY, 1.0, True), SymbolMatch(LOGIN, 0.31, False)]
COMPONENTS = [ComponentInfo("agent", 3, "0.7.3"), ComponentInfo("server", 1, "1.2.0")]
AGENT_VERSIONS = [
    AGENT_RELEASE,
    Release("agent", "0.8.0-rc.1", "agent@0.8.0-rc.1", commit="b1d3a40", files=3, prerelease=True),
    Release("agent", "0.7.2", "agent@0.7.2", commit="1a2b3c4", files=2),
]
AGENT_FILES = FileList(
    (
        IndexedFile("src/app.py", "python", ContentType.CODE, 1, 6),
        IndexedFile("src/auth.py", "python", ContentType.CODE, 2, 11),
    ),
    total=2,
    release=AGENT_RELEASE,
)
PROJECT_FILES = FileList(
    (
        IndexedFile("docs/guide.md", "markdown", ContentType.DOCS, 1, 3),
        IndexedFile("src/app.py", "python", ContentType.CODE, 1, 6),
        IndexedFile("src/auth.py", "python", ContentType.CODE, 2, 11),
    ),
    total=3,
)


# --- the harness -------------------------------------------------------------------------------------


@dataclass
class Mcp:
    """The server under test (built on first use, over `engine`, for the allowed roots `default`
    and `extra`), and the client calls a test makes of it, each in an in-memory session of a client
    named `agent`."""

    engine: FakeEngine
    repo: Path
    cache: Path
    default: Path
    extra: list[Path] = field(default_factory=list)
    _server: MCPServer | None = None
    _tools: dict[str, Tool] | None = None

    @property
    def server(self) -> MCPServer:
        if self._server is None:
            roots = AllowedRoots(self.default, self.extra)
            self._server = build_server(roots, self.engine, COUNTER, cache_dir=self.cache)
        return self._server

    def session(self, steps: Callable[[Client], Awaitable[T]]) -> T:
        async def main() -> T:
            client = Client(self.server, mode="legacy", client_info=Implementation(name="agent", version="1"))
            async with client:
                return await steps(client)

        return anyio.run(main)

    def tools(self) -> dict[str, Tool]:
        if self._tools is None:

            async def listed(client: Client) -> dict[str, Tool]:
                return {t.name: t for t in (await client.list_tools()).tools}

            self._tools = self.session(listed)
        return self._tools

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        progress: list[tuple[float, float | None, str | None]] | None = None,
    ) -> CallToolResult:
        """One tool call; `progress` collects the progress notifications it sent."""

        sink = progress

        async def heard(progress: float, total: float | None, message: str | None) -> None:
            assert sink is not None
            sink.append((progress, total, message))

        async def one(client: Client) -> CallToolResult:
            return await client.call_tool(
                name, arguments or {}, progress_callback=heard if progress is not None else None
            )

        return self.session(one)

    def answer(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        """A tool's structured answer, checked: not an error, its text the same object as compact
        JSON, valid against the output schema the listing gives, no field the schema leaves out."""
        result = self.call(name, arguments, **kw)
        assert not result.is_error, result.content
        data = result.structured_content
        assert isinstance(data, dict)
        (text,) = result.content
        assert text.type == "text"
        assert text.text == json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # the same, compact
        schema = self.tools()[name].output_schema
        assert schema is not None
        jsonschema.Draft202012Validator(schema).validate(data)
        extra = set(undeclared(schema, data, schema))
        assert not extra, f"{name} answers with undeclared fields {extra}"
        return data

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """A tool call's error text, checked: an error result, one text, no traceback, no
        structured content."""
        result = self.call(name, arguments)
        assert result.is_error, result.structured_content
        assert result.structured_content is None
        (text,) = result.content
        assert text.type == "text"
        assert text.text.startswith(f"Error executing tool {name}")
        assert "Traceback" not in text.text
        assert 'File "' not in text.text
        return text.text

    def read(self, uri: str) -> str:
        """A resource's text; raises the MCPError a failed read is."""

        async def one(client: Client) -> str | MCPError:
            try:
                (content,) = (await client.read_resource(uri)).contents
            except MCPError as exc:  # raised here: leaving the session would wrap it in an ExceptionGroup
                return exc
            assert str(content.uri) == uri
            text = getattr(content, "text", None)
            assert isinstance(text, str)
            return text

        return _raised(self.session(one))

    def prompt(self, name: str, arguments: dict[str, str] | None = None) -> GetPromptResult:
        """A prompt; raises the MCPError a failed get is."""

        async def one(client: Client) -> GetPromptResult | MCPError:
            try:
                return await client.get_prompt(name, arguments)
            except MCPError as exc:
                return exc

        return _raised(self.session(one))

    def tokens_of(self, *paths: str, root: Path | None = None) -> int:
        """The tokens of whole project files, as a receipt counts them."""
        base = root or self.repo
        return sum(COUNTER.count((base / p).read_text()) for p in paths)


def _raised(value: T | MCPError) -> T:
    if isinstance(value, MCPError):
        raise value
    return value


def undeclared(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str = "") -> list[str]:
    """The fields of `value` (dotted paths, `[]` for list items) that `schema` does not declare."""
    options = [_resolved(s, root) for s in schema.get("anyOf", [schema])]
    out: list[str] = []
    if isinstance(value, dict):
        declared = next((s["properties"] for s in options if "properties" in s), None)
        if declared is None:  # a mapping (`languages`): any key, values of one schema
            rest = next(
                (s["additionalProperties"] for s in options if isinstance(s.get("additionalProperties"), dict)), {}
            )
            for key, item in value.items():
                out += undeclared(_resolved(rest, root), item, root, f"{path}{key}.")
            return out
        for key, item in value.items():
            if key not in declared:
                out.append(f"{path}{key}")
            else:
                out += undeclared(_resolved(declared[key], root), item, root, f"{path}{key}.")
    elif isinstance(value, list):
        items = next((s["items"] for s in options if "items" in s), {})
        for item in value:
            out += undeclared(_resolved(items, root), item, root, f"{path}[].")
    return out


def _resolved(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def without_budget(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without what its size decides: its token count, budget and receipt."""
    return {k: v for k, v in answer.items() if k not in ("tokens", "max_tokens", "receipt")}


def check_receipt(mcp: Mcp, answer: dict[str, Any], paths: list[str], max_tokens: int = 4000) -> None:
    """The answer's own size and its receipt: the whole files it points into against its tokens."""
    assert answer["max_tokens"] == max_tokens
    assert answer["tokens"] <= max_tokens
    assert answer["receipt"] == {
        "files": len(paths),
        "file_tokens": mcp.tokens_of(*paths),
        "saved": mcp.tokens_of(*paths) - answer["tokens"],
    }
