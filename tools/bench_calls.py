"""Call edges against an independent oracle: precision and recall, with and without import resolution.

The project is chunked the way the indexer does it (the walker's files, the chunker's `refs`), and
its call graph built as a trace builds it (lgrep_search.structure). The oracle is a JSON Lines file
of call sites from tools/oracles (jedi for Python, the TypeScript compiler for TypeScript): for
each site, the in-repository definitions it reaches, or `external` when only code outside the
repository (standard library, packages) defines it.

A call site is (path, line, name). Counted over the sites of files under --under that the oracle
examined and resolved (in-repository or external; its unresolved sites are left out):

- recall: of the oracle's in-repository edges, the share lgrep also gives (a site whose oracle
  answer has several targets counts once, as found when lgrep gives any of them);
- precision: of the edges lgrep gives at those sites, the share the oracle confirms (an edge at a
  site the oracle calls external is wrong);
- the same for edges lgrep gives as a single target (what a trace follows), and the share of
  resolutions (import, local, name).

`--names-only` is the comparison with osgrep's method: every definition of the name, one hop.

    uv run --frozen python tools/bench_calls.py --root /work/scratch/oracles/repos/flask \\
        --under src/flask --oracle /work/scratch/oracles/flask.jsonl [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

LINE_SLACK = 2  # the oracle names a definition by its name's line, lgrep by its signature's first line


def build(root: Path) -> Any:
    from lgrep_core.domain.text import decode_text
    from lgrep_core.settings.config import load_settings
    from lgrep_index.pipeline import chunk_text, walk_options
    from lgrep_index.walker import walk
    from lgrep_search.corpus import Corpus
    from lgrep_search.structure import CodeGraph

    settings = load_settings(root).settings
    chunks = [
        ch
        for f in walk(root, walk_options(settings))
        for ch in chunk_text(settings, f.path, decode_text(f.abs_path.read_bytes()))
    ]
    corpus = Corpus.of_chunks(chunks)
    return CodeGraph(corpus)


def score(
    graph: Any, oracle: list[dict[str, Any]], under: str, *, imports: bool, exclude: tuple[str, ...] = ()
) -> dict[str, Any]:
    sites: dict[tuple[str, int, str], list[int]] = {}
    for c, call in enumerate(graph.calls):
        path = graph.files[call.file].path
        if path.startswith(under):
            sites.setdefault((path, call.line, call.name), []).append(c)
    tally = Counter()
    how = Counter()
    missed: list[str] = []
    wrong: list[str] = []
    # Calls of one name on one line are one site here (lgrep keeps no columns): their targets join.
    merged: dict[tuple[str, int, str], set[tuple[str, int]]] = {}
    for site in oracle:
        if site.get("unresolved") or not site["path"].startswith(under):
            continue
        if any(x in site["path"] for x in exclude):
            continue
        key = (site["path"], site["line"], site["name"])
        merged.setdefault(key, set()).update((t["path"], t["line"]) for t in site["targets"])
    for key, truth in merged.items():
        ours: set[int] = set()
        resolution = None
        for c in sites.get(key, ()):
            targets, resolution = graph.resolve(c, imports=imports)
            ours.update(targets)
        found = [graph.defs[d] for d in ours]
        if resolution is not None and found:
            how[resolution.value] += 1

        good = [d for d in found if _confirmed(graph, d, truth)]
        tally["oracle_sites"] += 1
        if truth:
            tally["oracle_edges"] += 1
            if good:
                tally["recalled"] += 1
            else:
                missed.append(f"{key}")
        tally["edges"] += len(found)
        tally["edges_right"] += len(good)
        if resolution is not None and found:
            tally[f"edges_{resolution.value}"] += len(found)
            tally[f"right_{resolution.value}"] += len(good)
        if len(found) == 1:
            tally["single"] += 1
            tally["single_right"] += len(good)
        if found and not good:
            wrong.append(f"{key} -> {[(graph.files[d.file].path, d.line) for d in found][:3]}")
    return {
        "resolve_imports": imports,
        "oracle_sites": tally["oracle_sites"],
        "oracle_edges": tally["oracle_edges"],
        "recall": round(tally["recalled"] / max(1, tally["oracle_edges"]), 4),
        "edges": tally["edges"],
        "precision": round(tally["edges_right"] / max(1, tally["edges"]), 4),
        "single_target_edges": tally["single"],
        "single_target_precision": round(tally["single_right"] / max(1, tally["single"]), 4),
        "resolutions": dict(how),
        "precision_by_resolution": {
            r: round(tally[f"right_{r}"] / tally[f"edges_{r}"], 4) for r in how if tally[f"edges_{r}"]
        },
        "examples_missed": missed[:8],
        "examples_wrong": wrong[:8],
    }


def _confirmed(graph: Any, d: Any, truth: set[tuple[str, int]]) -> bool:
    """The oracle names definition `d` (its name's line lies in d's span, give or take a decorator)."""
    path = graph.files[d.file].path
    return any(p == path and d.line - LINE_SLACK <= line <= d.end_line for p, line in truth)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--under", default="", help="only call sites in files under this folder")
    ap.add_argument("--oracle", type=Path, required=True)
    ap.add_argument("--json", type=Path, help="write the results here too")
    ap.add_argument(
        "--exclude", action="append", default=[], help="leave out call sites in paths containing this (repeatable)"
    )
    args = ap.parse_args()
    oracle = [json.loads(line) for line in args.oracle.read_text().splitlines() if line.strip()]
    started = time.perf_counter()
    graph = build(args.root.resolve())
    built = time.perf_counter() - started
    out = {
        "root": str(args.root),
        "files": len(graph.files),
        "definitions": len(graph.defs),
        "call_sites": len(graph.calls),
        "build_s": round(built, 2),
        "excluded": args.exclude,
        "lgrep": score(graph, oracle, args.under, imports=True, exclude=tuple(args.exclude)),
        "names_only": score(graph, oracle, args.under, imports=False, exclude=tuple(args.exclude)),
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
