"""The MCP server's surface, as a client lists it: tool names, descriptions, input and output
schemas and hints, resources, prompts and their texts, and the instructions, compared with
`surface.json` byte for byte (agents' prompts and clients' caches are built from it). A change to
any of them is deliberate: regenerate the file with `LGREP_UPDATE_SURFACE=1 uv run --frozen --group dev
pytest packages/lgrep-mcp/tests/test_surface.py` and review its diff. Also: the units answer through the
SDK with the `App` they were registered with, and lgrep's errors arrive as tool errors."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.models import IndexProjectRequest, StatusRequest, UnwatchProjectRequest
from lgrep_mcp.roots import AllowedRoots
from lgrep_mcp.server import build_server
from mcp.client.client import Client

SURFACE = Path(__file__).with_name("surface.json")

T = TypeVar("T")


class FakeEngine:
    """The engine calls the tools make (lgrep_core.domain.engine.Engine): unwatch answers, status finds no index."""

    def __init__(self) -> None:
        self._handlers: dict[type[Any], Callable[[Any], Any]] = {
            UnwatchProjectRequest: self._unwatch,
            StatusRequest: self._status,
        }

    def call(self, request: Any) -> Any:
        return self._handlers[type(request)](request)

    def index(self, request: IndexProjectRequest, *, timeout: float | None = None) -> Any:
        raise AssertionError("no tool of these tests indexes")

    def _unwatch(self, request: UnwatchProjectRequest) -> bool:
        return True

    def _status(self, request: StatusRequest) -> Any:
        raise NotFoundError(f"{request.project_root} has no index \x1b[31m")

    def close(self) -> None:
        return None


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _with_client(tmp_path: Path, steps: Callable[[Client], Awaitable[T]]) -> T:
    server = build_server(AllowedRoots(tmp_path, []), FakeEngine(), cache_dir=tmp_path / "cache")  # type: ignore[arg-type]

    async def main() -> T:
        async with Client(server, mode="legacy") as client:
            return await steps(client)

    return anyio.run(main)


async def _surface(client: Client) -> dict[str, Any]:
    prompts = (await client.list_prompts()).prompts
    texts = {}
    for prompt in prompts:
        args = {a.name: ("7" if a.name == "line" else "src/x.py") for a in prompt.arguments or []}
        texts[prompt.name] = _dump(await client.get_prompt(prompt.name, args))
    return {
        "instructions": client.instructions,
        "tools": [_dump(t) for t in (await client.list_tools()).tools],
        "resources": [_dump(r) for r in (await client.list_resources()).resources],
        "templates": [_dump(t) for t in (await client.list_resource_templates()).resource_templates],
        "prompts": [_dump(p) for p in prompts],
        "prompt_texts": texts,
    }


def test_the_surface_clients_list_is_unchanged(tmp_path: Path) -> None:
    text = json.dumps(_with_client(tmp_path, _surface), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("LGREP_UPDATE_SURFACE"):
        SURFACE.write_text(text, encoding="utf-8")
    assert text == SURFACE.read_text(encoding="utf-8"), "the MCP surface changed: see this file's docstring"


def test_a_unit_answers_with_its_app_and_errors_are_tool_errors(tmp_path: Path) -> None:
    async def steps(client: Client) -> tuple[Any, Any]:
        return await client.call_tool("lgrep_watch_stop", {}), await client.call_tool("lgrep_status", {})

    stopped, status = _with_client(tmp_path, steps)
    assert not stopped.is_error
    assert stopped.structured_content == {"project_root": str(tmp_path), "was_watched": True}
    assert status.is_error
    assert status.content[0].text.endswith(f": {tmp_path} has no index \\x1b[31m")
