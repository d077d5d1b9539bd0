"""Did a change move any answer? Compares two runs of tools/bench_search.py (or bench_swebench.py)
query by query: the hits each query got (path and lines, in order), and the scores.

    uv run --frozen python tools/compare_runs.py before.json after.json

A refactor must move none ("0 of N queries moved"); a change meant to improve ranking says how many
moved and which way NDCG went. Runs of the same code on one machine repeat exactly (measured: two
vocab-dev runs of 3b49e25, 0 of 180 moved), so any moved query is the change's doing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _queries(run: dict[str, Any], mode: str | None) -> tuple[str, dict[str, dict[str, Any]], dict[str, Any]]:
    modes = run["modes"]
    chosen = next((m for m in modes if mode is None or m["mode"] == mode), None)
    if chosen is None:
        raise SystemExit(f"no mode {mode!r} in the run (it has {[m['mode'] for m in modes]})")
    return chosen["mode"], {str(q.get("qid") or (q["repo"], q["query"])): q for q in chosen["per_query"]}, chosen


def _hits(query: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [tuple(hit.get(k) for k in ("path", "start_line", "end_line")) for hit in query.get("hits", [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--mode", help="the mode to compare (default: each run's first)")
    parser.add_argument("--show", type=int, default=5, help="moved queries to list")
    args = parser.parse_args(argv)
    name, before, summary_before = _queries(json.loads(args.before.read_text()), args.mode)
    _, after, summary_after = _queries(json.loads(args.after.read_text()), args.mode)
    missing = sorted(set(before) ^ set(after))
    moved = [k for k in before if k in after and _hits(before[k]) != _hits(after[k])]
    print(f"mode {name}: {len(moved)} of {len(before)} queries moved; {len(missing)} in only one run")
    for key in ("ndcg10", "ndcg5"):
        if key in summary_before and key in summary_after:
            print(f"  {key}: {summary_before[key]:.4f} -> {summary_after[key]:.4f}")
    for key in moved[: args.show]:
        b, a = before[key], after[key]
        print(f"  moved: {b.get('repo', '')} {b.get('query', key)!r}: ndcg10 {b.get('ndcg10')} -> {a.get('ndcg10')}")
    return 1 if moved or missing else 0


if __name__ == "__main__":
    sys.exit(main())
