"""What a receipt adds to an MCP answer (ADR 0025): the whole-file token counts of the files a
search's results come from (the first time a file is seen, and again while it is unchanged), the
answer counted again with its receipt, and adding the call to the shared per-project sums
(`lgrep stats`) under their lock.

    uv run --frozen python tools/bench_receipts.py [--repo DIR] [--calls 300] [--files-per-call 8]

Each simulated call picks `--files-per-call` source files of the repository at random (a default
search's 10 results come from ~5-10 files) and times `FileTokens.count` and `ReceiptLedger.record`
as `App.with_receipt` runs them. Cold: nothing cached (every file of the call tokenized); warm:
the same calls again (each file's count cached by inode, size and mtime).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from lgrep_core.storage.receipts import ReceiptLedger
from lgrep_mcp.budget import TokenCounter, measured
from lgrep_mcp.receipts import FileTokens

SOURCE = {".py", ".ts", ".js", ".go", ".rs", ".java", ".kt", ".md", ".c", ".h", ".cpp", ".rb"}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"| {name} | {statistics.median(ms):.2f} | {_pct(ms, 0.95):.2f} | {max(ms):.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--files-per-call", type=int, default=8)
    args = parser.parse_args()
    repo = args.repo.resolve()
    files = sorted(
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*")
        if p.suffix in SOURCE and p.is_file() and ".venv" not in p.parts and ".git" not in p.parts
    )
    rng = random.Random(7)
    calls = [rng.sample(files, min(args.files_per_call, len(files))) for _ in range(args.calls)]
    counter = TokenCounter()
    counter.warm()
    counting = FileTokens(counter)
    cold: list[float] = []
    tokens_seen: list[int] = []
    for paths in calls:
        fresh = FileTokens(counter)  # nothing cached: every file of the call tokenized
        t0 = time.perf_counter()
        _, tokens = fresh.count(repo, paths, lambda _rel: True)
        cold.append(time.perf_counter() - t0)
        tokens_seen.append(tokens)
        counting.count(repo, paths, lambda _rel: True)
    warm: list[float] = []
    for paths in calls:
        t0 = time.perf_counter()
        counting.count(repo, paths, lambda _rel: True)
        warm.append(time.perf_counter() - t0)
    # The answer counted again with its receipt: a default search answer is ~10,000 characters
    # (docs/benchmarks.md); ten 25-line snippets of the repository's own files stand in for one.
    recount: list[float] = []
    for paths in calls[:100]:
        answer = {
            "results": [
                {"path": p, "content": "\n".join((repo / p).read_text(errors="replace").split("\n")[:25])}
                for p in paths
            ],
            "receipt": {"files": len(paths), "file_tokens": 12345, "saved": 0},
        }
        t0 = time.perf_counter()
        measured(answer, counter)
        recount.append(time.perf_counter() - t0)
    recorded: list[float] = []
    with tempfile.TemporaryDirectory() as cache:
        ledger = ReceiptLedger(Path(cache))
        for tokens in tokens_seen:
            t0 = time.perf_counter()
            ledger.record(repo, "bench", tokens_returned=2500, file_tokens=tokens, files=args.files_per_call)
            recorded.append(time.perf_counter() - t0)
    print(f"{repo}: {len(files)} source files, {args.calls} calls of {args.files_per_call} files")
    print(f"files' tokens per call: median {statistics.median(tokens_seen):,.0f}, max {max(tokens_seen):,}")
    print("| step | p50 ms | p95 ms | max ms |\n|---|---|---|---|")
    print(_row("count the files' tokens, none seen before (cold)", cold))
    print(_row("count the files' tokens, unchanged files (warm)", warm))
    print(_row("count the answer again with its receipt (two encodes)", recount))
    print(_row("add the call to the project's sums (flock, read, replace)", recorded))


if __name__ == "__main__":
    main()
