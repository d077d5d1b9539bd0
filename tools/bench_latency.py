"""Warm query latency of `Searcher.search` in-process, at a given index size.

The corpus is real: chunks and vectors read from the indexes tools/bench_search.py built of semble's
benchmark repositories (paths prefixed with the repository name), concatenated until the requested
size, then truncated to it. The queries are the benchmark's 1,251 queries, each asked once after a
warm-up. Reported per size: p50/p99 of retrieval + ranking, of the query embedding, and of the whole
call, plus the time to build the in-memory snapshot.

    uv run --frozen python tools/bench_latency.py --checkouts /work/bench/checkouts \
        --cache /work/bench/cache --sizes 10000 100000
    uv run --frozen python tools/bench_latency.py --checkouts DIR --cache DIR --sizes 10000 \
        --issues ../shared/bench/issues-dev/issues.jsonl --queries 200 --history CLONE

With --issues, the questions are issue texts (task questions, cut to the request limit) instead of
the benchmark's; with --history, the searcher also reads that repository's git history (mined as an
index keeps it: the newest 5,000 commits), as a task question in a git project does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import DEFAULT_DATA, load


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--checkouts", type=Path, required=True)
    ap.add_argument("--cache", type=Path, required=True, help="the index cache tools/bench_search.py filled")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=0, help="use only this many queries (0: all)")
    ap.add_argument("--issues", type=Path, help="an issues.jsonl whose issue texts are the questions")
    ap.add_argument("--history", type=Path, help="a git repository whose history the searcher reads")
    args = ap.parse_args()

    os.environ["LGREP_CACHE_DIR"] = str(args.cache)
    from lgrep_core.domain.models import SearchRequest
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.settings.config import load_settings
    from lgrep_core.storage.reader import ProjectReader
    from lgrep_search.corpus import COLUMNS, Corpus
    from lgrep_search.searcher import Searcher

    repos, _ = load(args.data, args.checkouts, set(), set())
    queries = [t.query for r in repos for t in r.tasks]
    if args.issues is not None:
        from lgrep_core.domain.models import MAX_QUERY_CHARS

        lines = args.issues.read_text(encoding="utf-8").splitlines()
        queries = [json.loads(line)["problem_statement"][:MAX_QUERY_CHARS] for line in lines if line.strip()]
    history = None
    if args.history is not None:
        from lgrep_index.history import mine_history
        from lgrep_search.history import HistoryIndex

        mined = mine_history(args.history)
        if mined is None:
            raise SystemExit(f"{args.history} has no git history")
        t0 = time.perf_counter()
        history = HistoryIndex(mined)
        print(f"history: {len(history)} commits, read in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    random.Random(7).shuffle(queries)
    if args.queries:
        queries = queries[: args.queries]
    settings = load_settings(repos[0].root).settings
    embedder = make_embedder(settings.embedding, settings.cache_dir)

    # Read every indexed repository once, largest last so small sizes mix many repositories.
    tables: list[tuple[dict[str, list], list[str], object]] = []
    for repo in repos:
        reader = ProjectReader(settings.cache_dir, repo.root.resolve())
        if reader.state() != "ready":
            continue
        version = reader.version()
        cols = reader.read_chunks(version, COLUMNS)
        cols["path"] = [f"{repo.name}/{p}" for p in cols["path"]]
        wanted = {k for k in cols["vec_key"] if k}
        all_keys, all_matrix = reader.read_vectors(version)
        take = [i for i, k in enumerate(all_keys) if k in wanted]
        tables.append((cols, [all_keys[i] for i in take], all_matrix[take]))
    tables.sort(key=lambda t: len(t[0]["path"]))
    available = sum(len(t[0]["path"]) for t in tables)
    print(f"{available} chunks available in {len(tables)} indexes", file=sys.stderr)

    rows = []
    for size in args.sizes:
        cols: dict[str, list] = {c: [] for c in COLUMNS}
        keys: list[str] = []
        mats = []
        for t_cols, t_keys, t_matrix in tables:
            if len(cols["path"]) >= size:
                break
            for c in COLUMNS:
                cols[c].extend(t_cols[c])
            keys.extend(t_keys)
            mats.append(t_matrix)
        n = min(size, len(cols["path"]))
        cols = {c: v[:n] for c, v in cols.items()}
        import numpy as np

        matrix = np.vstack(mats)
        t0 = time.perf_counter()
        corpus = Corpus.build(cols, keys, matrix)
        build_s = time.perf_counter() - t0
        searcher = Searcher(None, embedder, corpus=corpus, history=history)
        for q in queries[:20]:
            searcher.search(SearchRequest(q, limit=10))
        rr, emb, total = [], [], []
        for q in queries:
            t = searcher.search(SearchRequest(q, limit=10)).timings_ms
            rr.append(t["retrieval_ms"] + t["ranking_ms"])
            emb.append(t.get("query_embedding_ms", 0.0))
            total.append(t["total_ms"])
        row = {
            "chunks": len(corpus),
            "queries": len(queries),
            "build_s": round(build_s, 2),
            "retrieval_ranking_ms": {"p50": round(_pct(rr, 0.5), 2), "p99": round(_pct(rr, 0.99), 2)},
            "query_embedding_ms": {"p50": round(_pct(emb, 0.5), 2), "p99": round(_pct(emb, 0.99), 2)},
            "total_ms": {"p50": round(_pct(total, 0.5), 2), "p99": round(_pct(total, 0.99), 2)},
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
