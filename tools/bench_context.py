"""Context efficiency: how much of `lgrep_search`'s answer, as an agent receives it, an agent reads
before it reaches a relevant file (semble's token-efficiency benchmark, applied to our MCP answer).

    uv run --frozen python tools/bench_context.py --checkouts /work/bench/checkouts --cache /work/bench/cache-public
    uv run --frozen python tools/bench_context.py --checkouts DIR --data ../shared/bench/vocab-dev --cache DIR2
    uv run --frozen python tools/bench_context.py --checkouts DIR --subset --verify 20   # + 20 through a real process

Every query of the data goes to the real MCP server (lgrep_mcp.server.build_server, over the
in-process engine lgrep_cli.local.LocalEngine and bench_search.py's index cache) through the MCP
SDK's in-memory client, with the tool's default arguments unless --limit / --max-tokens are given.
What is measured is the tool result's text content, the text the agent's model reads, so the numbers
move with anything that changes it: fields, snippet length, the budget's cuts, the ranking.

Per query, in that text (counted with lgrep_mcp.budget.TokenCounter, tiktoken cl100k_base, the
tokenizer semble's benchmark uses and the one the answer's own `tokens` field is counted in):
- first_hit_tokens: tokens from the start of the answer to the end of the first result that
  matches a target (its whole object, snippet included: semble counts a unit once it has been read
  whole). A target matches as in bench_search.py (path suffix; line span overlap when it has one).
- hit@B: the share of queries whose first_hit_tokens <= B ("the relevant file within the first B
  tokens").
- recall@B: semble's `recall_at_budget`, the mean over queries of the share of a query's targets
  (primary and secondary) covered by results that end within B tokens.
- answer tokens: the whole answer's size.

Aggregation is semble's for this benchmark: the mean over all queries (not over repositories, as
NDCG is). `--verify N` sends N of the queries also through a real `lgrep mcp` process over stdio
(which starts a daemon on the cache; it is stopped at the end) and checks that the text is identical.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import (
    SUBSET,
    LgrepRunner,
    Repo,
    Task,
    add_corpus_arguments,
    hit,
    load_selected,
    ndcg,
    repo_mean,
    write_json,
)

BUDGETS = (500, 1000, 2000, 4000)


@dataclass
class Answer:
    text: str
    data: dict[str, Any]


def _tool_args(query: str, args: argparse.Namespace) -> dict[str, Any]:
    """What the agent sends: the query alone, as with the defaults, unless asked otherwise."""
    out: dict[str, Any] = {"query": query}
    if args.limit is not None:
        out["limit"] = args.limit
    if args.max_tokens is not None:
        out["max_tokens"] = args.max_tokens
    return out


def _answer(result: Any) -> Answer:
    if result.is_error:
        raise SystemExit(f"lgrep_search failed: {result.content}")
    text = "".join(getattr(c, "text", "") for c in result.content)
    return Answer(text, result.structured_content or {})


async def _ask_in_process(server: Any, tasks: list[Task], args: argparse.Namespace) -> list[Answer]:
    from mcp.client.client import Client

    async with Client(server, mode="legacy") as client:
        return [_answer(await client.call_tool("lgrep_search", _tool_args(t.query, args))) for t in tasks]


def _offsets(answer: Answer, count: Any) -> list[tuple[int, int]]:
    """For each result, best first: (tokens up to and including its path, tokens up to the end of
    its object), counted from the start of the text.

    Raises:
        SystemExit: the text is not the compact JSON of the structured content (the rendering
            changed: this locator must follow it).
    """
    from lgrep_mcp.budget import compact_json

    try:
        parsed = json.loads(answer.text)
    except json.JSONDecodeError:
        parsed = None
    if parsed != answer.data:
        raise SystemExit("the answer's text is not the JSON of its structured content: update _offsets")
    spans: list[tuple[int, int]] = []
    cursor = 0
    for item in parsed["results"]:
        piece = compact_json(item)
        start = answer.text.find(piece, cursor)
        if start < 0:
            raise SystemExit(f"result {item['path']} not found in the answer's text: update _offsets")
        path_end = answer.text.find(compact_json(item["path"]), start) + len(compact_json(item["path"]))
        cursor = start + len(piece)
        spans.append((count(answer.text[:path_end]), count(answer.text[:cursor])))
    return spans


def score(task: Task, answer: Answer, count: Any) -> dict[str, Any]:
    results = answer.data.get("results", [])
    hits = [(r["path"], r["start_line"], r["end_line"]) for r in results]
    spans = _offsets(answer, count)
    first: int | None = None
    covered: list[int | None] = []
    for t in task.targets:
        rank = next((i for i, h in enumerate(hits) if hit(h, t)), None)
        covered.append(None if rank is None else spans[rank][1])
        if rank is not None and (first is None or rank < first):
            first = rank
    tokens = count(answer.text)
    return {
        "qid": task.qid,
        "repo": task.repo,
        "language": task.language,
        "category": task.category,
        "vocab_mismatch": task.vocab_mismatch,
        "query": task.query,
        "answer_tokens": tokens,
        "answer_tokens_reported": answer.data.get("tokens"),
        "results": len(results),
        "omitted": answer.data.get("omitted", 0),
        "first_hit_rank": None if first is None else first + 1,
        "first_hit_tokens": None if first is None else spans[first][1],
        "first_hit_path_tokens": None if first is None else spans[first][0],
        "target_tokens": covered,
        "ndcg10": ndcg(hits, task.targets, 10),
        "hits": [{"path": p, "start_line": s, "end_line": e} for p, s, e in hits],
    }


def summarize(rows: list[dict[str, Any]], budgets: tuple[int, ...]) -> dict[str, Any]:
    def hit_at(b: int) -> float:
        return sum(1 for r in rows if r["first_hit_tokens"] is not None and r["first_hit_tokens"] <= b) / len(rows)

    def recall_at(b: int) -> float:
        shares = [
            sum(1 for t in r["target_tokens"] if t is not None and t <= b) / len(r["target_tokens"]) for r in rows
        ]
        return statistics.fmean(shares)

    sizes = sorted(r["answer_tokens"] for r in rows)
    firsts = [r["first_hit_tokens"] for r in rows if r["first_hit_tokens"] is not None]
    return {
        "queries": len(rows),
        "repos": len({r["repo"] for r in rows}),
        "hit": {str(b): hit_at(b) for b in budgets},
        "hit_in_answer": len(firsts) / len(rows),
        "recall": {str(b): recall_at(b) for b in budgets},
        "answer_tokens": {
            "mean": statistics.fmean(sizes),
            "median": statistics.median(sizes),
            "p90": sizes[int(0.9 * (len(sizes) - 1))],
            "max": sizes[-1],
        },
        "first_hit_tokens_median": statistics.median(firsts) if firsts else None,
        "ndcg10": repo_mean(rows, "ndcg10"),
    }


def groups(rows: list[dict[str, Any]], repos: list[Repo]) -> dict[str, list[dict[str, Any]]]:
    """The rows of each reported group: all, the public subset (when the run has more), each
    category, and the vocab_mismatch questions (when the data marks some)."""
    out = {"all": rows}
    names = {r.name for r in repos}
    if names & set(SUBSET) and not names <= set(SUBSET):
        out["subset"] = [r for r in rows if r["repo"] in SUBSET]
    for cat in sorted({r["category"] for r in rows}):
        out[f"category {cat}"] = [r for r in rows if r["category"] == cat]
    marked = [r for r in rows if r["vocab_mismatch"]]
    if marked:
        out["vocab_mismatch"] = marked
    return out


async def _ask_process(root: Path, env: dict[str, str], tasks: list[Task], args: argparse.Namespace) -> list[Answer]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "lgrep_cli", "mcp", str(root)], env=env, cwd=str(root)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [_answer(await session.call_tool("lgrep_search", _tool_args(t.query, args))) for t in tasks]


def verify(picked: list[tuple[Repo, Task, Answer]], args: argparse.Namespace) -> dict[str, Any]:
    """The same queries through a real `lgrep mcp` process (and the daemon it starts): is the text
    the agent receives the same as in process?"""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # with LgrepRunner's LGREP_CACHE_DIR and LGREP_CONFIG
    by_repo: dict[str, list[tuple[Repo, Task, Answer]]] = {}
    for item in picked:
        by_repo.setdefault(item[0].name, []).append(item)
    same, differ = 0, []
    try:
        for items in by_repo.values():
            answers = anyio.run(_ask_process, items[0][0].root, env, [t for _, t, _ in items], args)
            for (_, task, local), remote in zip(items, answers, strict=True):
                if remote.text == local.text:
                    same += 1
                else:
                    differ.append(task.qid)
    finally:
        subprocess.run([sys.executable, "-m", "lgrep_cli", "serve", "--stop"], env=env, check=False)
    return {"queries": len(picked), "identical": same, "different": differ}


def _print(summaries: dict[str, dict[str, Any]], budgets: tuple[int, ...]) -> None:
    head = "".join(f"{'hit@' + str(b):>10}" for b in budgets) + "".join(f"{'rec@' + str(b):>10}" for b in budgets)
    print(f"{'group':<24}{'queries':>8}{head}{'in answer':>10}{'tokens':>8}{'p90':>7}{'NDCG@10':>9}")
    for name, s in summaries.items():
        vals = "".join(f"{s['hit'][str(b)]:>10.3f}" for b in budgets)
        vals += "".join(f"{s['recall'][str(b)]:>10.3f}" for b in budgets)
        size = s["answer_tokens"]
        print(
            f"{name:<24}{s['queries']:>8}{vals}{s['hit_in_answer']:>10.3f}{size['mean']:>8.0f}{size['p90']:>7}"
            f"{s['ndcg10']:>9.4f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_corpus_arguments(ap)
    ap.add_argument("--limit", type=int, help="lgrep_search's limit (default: the tool's own)")
    ap.add_argument("--max-tokens", type=int, help="lgrep_search's max_tokens (default: the tool's own)")
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS), help="token budgets to report")
    ap.add_argument("--verify", type=int, default=0, metavar="N", help="also send N queries through a real process")
    ap.add_argument("--out", type=Path, help="write every query's offsets and hits as JSON here")
    args = ap.parse_args()
    budgets = tuple(args.budgets)

    repos, missing = load_selected(args)

    runner = LgrepRunner(args.cache)  # the index cache bench_search.py builds and reuses
    for repo in repos:
        _, secs, chunks = runner.index(repo.root)
        print(f"indexed {repo.name}: {chunks} chunks, {secs:.1f} s", file=sys.stderr)

    from lgrep_cli.local import LocalEngine
    from lgrep_core.settings.config import load_settings
    from lgrep_mcp.budget import TokenCounter
    from lgrep_mcp.roots import AllowedRoots
    from lgrep_mcp.server import build_server

    settings = load_settings(repos[0].root).settings
    engine = LocalEngine(settings)
    counter = TokenCounter()
    rows: list[dict[str, Any]] = []
    answered: list[tuple[Repo, Task, Answer]] = []
    t0 = time.perf_counter()
    for repo in repos:
        server = build_server(AllowedRoots(repo.root), engine, counter, cache_dir=settings.cache_dir)
        answers = anyio.run(_ask_in_process, server, repo.tasks, args)
        for task, answer in zip(repo.tasks, answers, strict=True):
            rows.append(score(task, answer, counter.count))
            answered.append((repo, task, answer))
    seconds = time.perf_counter() - t0
    mismatched = [r["qid"] for r in rows if r["answer_tokens_reported"] != r["answer_tokens"]]
    if mismatched:
        print(f"the answer's own `tokens` differs from the count of its text: {mismatched[:5]}", file=sys.stderr)

    summaries = {name: summarize(group, budgets) for name, group in groups(rows, repos).items()}
    _print(summaries, budgets)
    print(f"{len(rows)} queries in {seconds:.1f} s", file=sys.stderr)
    checked = None
    if args.verify:
        step = max(1, len(answered) // args.verify)
        checked = verify(answered[::step][: args.verify], args)
        print(f"real process: {checked['identical']} of {checked['queries']} answers identical", file=sys.stderr)
    if args.out:
        payload = {
            "date": time.strftime("%Y-%m-%d"),
            "data": str(args.data),
            "tool_args": _tool_args("<query>", args),
            "tokenizer": "cl100k_base (lgrep_mcp.budget.TokenCounter)",
            "budgets": list(budgets),
            "repos": [r.name for r in repos],
            "missing": missing,
            "seconds": round(seconds, 1),
            "summary": summaries,
            "verify": checked,
            "per_query": rows,
        }
        write_json(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
