"""What clients cut (ADR 0025): Claude Code keeps the first 2,048 characters of each tool description
and of the server instructions, Codex reads the first 512 of the instructions. Checked on what a
real client receives from a real `lgrep-mcp` process over stdio (initialize, tools/list)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

CLIENT_CUT = 2_048
CODEX_READS = 512


def _listed(project: Path, cache: Path) -> tuple[str, list[Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_")}
    env["LGREP_CACHE_DIR"] = str(cache)
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "lgrep_mcp.server", str(project)], env=env, cwd=str(project)
    )

    async def main() -> tuple[str, list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            return init.instructions or "", (await session.list_tools()).tools

    return anyio.run(main)


def test_descriptions_and_instructions_fit_what_clients_keep(tmp_path: Path) -> None:
    instructions, tools = _listed(tmp_path, tmp_path / "cache")
    assert len(tools) == 10
    assert 0 < len(instructions) < CLIENT_CUT, len(instructions)
    # Codex reads 512 characters: they say on their own when to use lgrep instead of grep.
    first = instructions[:CODEX_READS]
    assert "instead of grep" in first and "lgrep_search" in first and "files=true" in first, first
    for tool in tools:
        description: str = tool.description or ""
        assert 0 < len(description) < CLIENT_CUT, (tool.name, len(description))
        # No docstring indentation: clients count (and cut) every character of it.
        assert description == description.strip(), tool.name
        assert not any(line != line.lstrip() for line in description.split("\n")), (tool.name, description)
        for name, prop in tool.input_schema["properties"].items():
            assert "title" not in prop and len(prop.get("description", "")) < CLIENT_CUT, (tool.name, name)
    search = next(t for t in tools if t.name == "lgrep_search")
    assert "instead of grep" in (search.description or "")[:CODEX_READS]
