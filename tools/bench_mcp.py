"""What an agent sees through MCP: `lgrep_search` end to end (MCP stdio client -> `lgrep mcp` ->
daemon -> answer), and how long the MCP server takes from its start to its first answer.

    uv run --frozen python tools/bench_mcp.py --repo DIR --models <cache>/models --cache <cache dir> [--queries 200]

The cache dir is kept (so an indexed project stays indexed); the daemon this starts is stopped at the
end. Queries are the repository's own function names and phrases built from them, as in
tools/bench_service.py (this measures the service; quality is the benchmark's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_service import _queries, _summary

__all__ = ["main"]


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_")}
    env.update({"LGREP_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"})
    return env


async def _measure(repo: Path, cache: Path, queries: list[str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "lgrep_cli", "mcp", str(repo)], env=_env(cache), cwd=str(repo)
    )
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized = time.perf_counter() - started
        first = await session.call_tool("lgrep_search", {"query": queries[0]})
        first_answer = time.perf_counter() - started
        if first.is_error:
            raise SystemExit(f"the first search failed: {first.content}")
        latencies: list[float] = []
        sizes: list[int] = []
        for query in queries:
            t0 = time.perf_counter()
            result = await session.call_tool("lgrep_search", {"query": query})
            latencies.append((time.perf_counter() - t0) * 1000)
            if result.is_error:
                raise SystemExit(f"search {query!r} failed: {result.content}")
            sizes.append(sum(len(getattr(c, "text", "")) for c in result.content))
    return {
        "mcp_initialized_s": round(initialized, 3),
        "mcp_first_answer_s": round(first_answer, 3),
        "search_ms": _summary(latencies),
        "response_chars": {"median": int(statistics.median(sizes)), "max": max(sizes)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--models", type=Path, required=True, help="an existing model cache (no ONNX rebuild)")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    repo, cache = args.repo.resolve(), args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "models").exists():
        (cache / "models").symlink_to(args.models.resolve(), target_is_directory=True)
    env = _env(cache)
    lgrep = [sys.executable, "-m", "lgrep_cli"]
    try:
        subprocess.run([*lgrep, "index", str(repo), "-q"], env=env, check=True)  # starts the daemon too
        cold = anyio.run(_measure, repo, cache, _queries(repo, 5))  # the project's snapshot loads here
        warm = anyio.run(_measure, repo, cache, _queries(repo, args.queries))
    finally:
        subprocess.run([*lgrep, "serve", "--stop"], env=env, check=False)
    out = {
        "mode": "mcp",
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "repo": str(repo),
        "first_session": {k: cold[k] for k in ("mcp_initialized_s", "mcp_first_answer_s")},
        "warm": warm,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
