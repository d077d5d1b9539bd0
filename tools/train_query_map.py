"""A global linear map of a task question's local-model vector, learned from issues, and checked
(issue 39, "train small parts"; ADR 0035 item 18; docs/benchmarks.md, session 44). Measured, not
shipped: held out it is even, and on dev it loses at 1.

The local model (MiniLM-L6) reads an issue's symptom words; the files it should find speak code. A map
W = I + A of the question's unit vector, fitted so that each issue's fixed file's best chunk beats the
best chunks of the files lexical search puts first, is the smallest part that can learn that shift.

    uv run --frozen python tools/train_query_map.py data --split train --out /work/bench/qmap/train
    uv run --frozen python tools/train_query_map.py data --split dev --out /work/bench/qmap/dev
    uv run --frozen python tools/train_query_map.py fit /work/bench/qmap/train --cv --l2 0.03 --l2 0.1 --l2 0.3
    uv run --frozen python tools/train_query_map.py fit /work/bench/qmap/train --l2 0.1 --out map.npy
    uv run --frozen python tools/train_query_map.py eval /work/bench/qmap/dev map.npy

`data`: for every issue of the split with a built lexical state (tools/bench_issues.py build --lexical),
the question's vector as lgrep embeds it (`retrieval.embed_question`) and the local model's vectors of
the chunks (at most CHUNKS_PER_FILE, evenly spaced) of its fixed code files and of the first
HARD_NEGATIVES other code files of its lexical files answer -> one .npz per issue (resumable).
`fit`: full-batch Adam over the softmax of the candidate files' best-chunk similarity (temperature TAU),
A pulled to 0 by its L2; deterministic (starts at the identity, no sampling). `--cv`: five folds of
training repositories, each held out in turn. `eval`: the candidate-pool ranks of a split's issues with
a saved map against the identity, by language.

To see a map in the full pipeline (swebench-dev's saved full states), apply it to `embed_question`'s
answer for task questions (x -> Wx / |Wx|); docs/benchmarks.md has the numbers of that run. The `--out`
map has its data manifest beside it (`.json`: every issue's data digest and the settings).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_issues as issues
from bench_swebench import LgrepRunner, States, prepare_query

HARD_NEGATIVES = 12
CHUNKS_PER_FILE = 24
TAU = 0.05
STEPS = 300
LEARNING_RATE = 0.002
FOLDS = 5

Issue = dict[str, Any]


def cmd_data(args: argparse.Namespace) -> int:
    from lgrep_core.domain.models import SearchRequest, embedding_text
    from lgrep_search.query import parse_query
    from lgrep_search.retrieval import embed_question
    from lgrep_search.searcher import Searcher

    args.out.mkdir(parents=True, exist_ok=True)
    ns = argparse.Namespace(
        data=args.data, split=args.split, repo=None, language=None, mirrors=args.mirrors, clones=args.clones
    )
    ready, _ = issues._prepare(ns)
    language = {row["instance_id"]: row["language"] for row in issues.load_rows(args.data)}
    runner = LgrepRunner(args.cache)
    embedder = None
    started, written = time.perf_counter(), 0
    for repo, (clone, insts) in ready.items():
        states = States(args.cache / "issues" / repo.replace("/", "+"))
        embedder = embedder or runner.embedder_for(clone)
        for inst in insts:
            dst = args.out / f"{inst.instance_id}.npz"
            if dst.exists() or not states.done(inst.instance_id):
                continue
            corpus = states.corpus(inst.instance_id)
            index = {path: n for n, path in enumerate(corpus.files)}
            gold = [index[g] for g in inst.gold if g in index and issues.is_code(g)]
            if not gold:
                continue
            query, _ = prepare_query(inst.query)
            answer = Searcher(None, None, corpus=corpus).search(SearchRequest(query, limit=40, files=True)).files
            negatives = [index[f.path] for f in answer if f.path in index and issues.is_code(f.path)]
            candidates = gold + [f for f in negatives if f not in gold][:HARD_NEGATIVES]
            texts, owner = [], []
            for k, f in enumerate(candidates):
                ids = np.flatnonzero(corpus.file_of == f)
                if len(ids) > CHUNKS_PER_FILE:
                    ids = ids[np.linspace(0, len(ids) - 1, CHUNKS_PER_FILE).astype(int)]
                for i in ids.tolist():
                    texts.append(embedding_text(corpus.paths[i], corpus.scopes[i], corpus.contents[i]))
                    owner.append(k)
            vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            np.savez(
                dst,
                q=embed_question(embedder, parse_query(query)).astype(np.float32),
                d=vectors.astype(np.float16),
                fid=np.asarray(owner, dtype=np.int16),
                gold=np.asarray([1] * len(gold) + [0] * (len(candidates) - len(gold)), dtype=np.int8),
                repo=repo,
                lang=language[inst.instance_id],
            )
            written += 1
            if written % 10 == 0:
                print(f"{written} issues, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    print(f"wrote {written} issues to {args.out} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


def load(folder: Path) -> list[Issue]:
    out = []
    for path in sorted(folder.glob("*.npz")):
        z = np.load(path)
        fid = z["fid"].astype(int)  # `data` writes each candidate's chunks together, in candidate order
        if np.any(np.diff(fid) < 0):
            raise SystemExit(f"{path}: its chunks are not grouped by candidate file; run `data` again")
        bounds = np.searchsorted(fid, np.arange(len(z["gold"]) + 1))
        out.append(
            {
                "id": path.stem,
                "q": z["q"].astype(np.float64),
                "d": z["d"].astype(np.float64),
                "spans": list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)),
                "gold": z["gold"].astype(bool),
                "repo": str(z["repo"]),
                "lang": str(z["lang"]),
                "digest": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
            }
        )
    if not out:
        raise SystemExit(f"no issues in {folder}: run `data` first")
    return out


def best_chunks(x: Issue, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate file its best chunk's similarity and that chunk; the mapped question (unit, raw)."""
    v = w @ x["q"]
    u = v / np.linalg.norm(v)
    sims = x["d"] @ u
    m = len(x["gold"])
    best, arg = np.full(m, -np.inf), np.zeros(m, dtype=int)
    for k, (start, end) in enumerate(x["spans"]):  # candidate k's chunks: computed once, at load
        if end > start:
            arg[k] = start + int(np.argmax(sims[start:end]))
            best[k] = sims[arg[k]]
    return best, arg, u, v


def gradient(xs: list[Issue], w: np.ndarray, l2: float) -> np.ndarray:
    g = np.zeros_like(w)
    for x in xs:
        best, arg, u, v = best_chunks(x, w)
        ok = np.isfinite(best)
        y = x["gold"] & ok
        if not y.any():
            continue
        z = np.where(ok, best / TAU, -np.inf)
        p = np.exp(z - z[ok].max())
        p /= p.sum()
        d_best = (p - y / y.sum()) / TAU
        d_u = (d_best[ok][:, None] * x["d"][arg[ok]]).sum(axis=0)
        d_v = (d_u - u * (u @ d_u)) / np.linalg.norm(v)
        g += np.outer(d_v, x["q"])
    return g / len(xs) + 2 * l2 * (w - np.eye(len(w)))


def fit(xs: list[Issue], l2: float) -> np.ndarray:
    dim = len(xs[0]["q"])
    w = np.eye(dim)
    m, s = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, STEPS + 1):
        g = gradient(xs, w, l2)
        m = 0.9 * m + 0.1 * g
        s = 0.999 * s + 0.001 * g * g
        w -= LEARNING_RATE * (m / (1 - 0.9**t)) / (np.sqrt(s / (1 - 0.999**t)) + 1e-8)
    return w


def ranks(xs: list[Issue], w: np.ndarray) -> list[tuple[int, int, str]]:
    """Per issue (the best gold file's place, the worst's, its language) among its candidate files."""
    out = []
    for x in xs:
        best, *_ = best_chunks(x, w)
        order = np.argsort(-best, kind="stable")
        places = [int(np.flatnonzero(order == g)[0]) + 1 for g in np.flatnonzero(x["gold"])]
        out.append((min(places), max(places), x["lang"]))
    return out


def summary(r: list[tuple[int, int, str]]) -> str:
    n = len(r)
    hit1 = 100 * sum(a == 1 for a, _, _ in r) / n
    all5 = 100 * sum(b <= 5 for _, b, _ in r) / n
    mrr = sum(1 / a for a, _, _ in r) / n
    return f"n {n} hit@1 {hit1:.1f} all@5 {all5:.1f} MRR {mrr:.3f}"


def compare(label: str, got: list[tuple[int, int, str]], base: list[tuple[int, int, str]]) -> None:
    better = sum(a[0] < b[0] for a, b in zip(got, base, strict=True))
    worse = sum(a[0] > b[0] for a, b in zip(got, base, strict=True))
    print(f"{label}: {summary(got)} (identity {summary(base)}; best gold place better {better}, worse {worse})")
    for lang in sorted({x[2] for x in got}):
        sub = [(a, b) for a, b in zip(got, base, strict=True) if a[2] == lang]
        if len(sub) >= 10:
            print(f"  {lang}: {summary([a for a, _ in sub])} (identity {summary([b for _, b in sub])})")


def cmd_fit(args: argparse.Namespace) -> int:
    xs = load(args.folder)
    for l2 in args.l2:
        if args.cv:
            repos = sorted({x["repo"] for x in xs})
            got, base = [], []
            for fold in (repos[i::FOLDS] for i in range(FOLDS)):
                held = [x for x in xs if x["repo"] in fold]
                w = fit([x for x in xs if x["repo"] not in fold], l2)
                got += ranks(held, w)
                base += ranks(held, np.eye(len(w)))
            compare(f"L2 {l2}, held out by repository", got, base)
        else:
            w = fit(xs, l2)
            compare(f"L2 {l2}, fitted issues", ranks(xs, w), ranks(xs, np.eye(len(w))))
            if args.out:
                np.save(args.out, w.astype(np.float32))
            if args.out:
                manifest = {
                    "data": str(args.folder),
                    "issues": {x["id"]: x["digest"] for x in xs},
                    "l2": l2,
                    "tau": TAU,
                    "steps": STEPS,
                    "learning_rate": LEARNING_RATE,
                    "hard_negatives": HARD_NEGATIVES,
                    "chunks_per_file": CHUNKS_PER_FILE,
                }
                args.out.with_suffix(".json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    xs = load(args.folder)
    w = np.load(args.map).astype(np.float64)
    compare(str(args.map), ranks(xs, w), ranks(xs, np.eye(len(w))))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    data = sub.add_parser("data", help="candidate files' chunk vectors per issue")
    data.add_argument("--split", choices=("train", "dev"), required=True)
    data.add_argument("--out", type=Path, required=True)
    data.add_argument("--data", type=Path, default=issues.DEFAULT_DATA)
    data.add_argument("--mirrors", type=Path, default=issues.DEFAULT_MIRRORS)
    data.add_argument("--clones", type=Path, default=issues.DEFAULT_CLONES)
    data.add_argument("--cache", type=Path, default=issues.LEXICAL_CACHE, help="the lexical states")
    fitting = sub.add_parser("fit", help="fit the map (or, with --cv, hold repositories out)")
    fitting.add_argument("folder", type=Path)
    fitting.add_argument("--l2", type=float, action="append", default=None)
    fitting.add_argument("--cv", action="store_true")
    fitting.add_argument("--out", type=Path)
    evaluating = sub.add_parser("eval", help="a saved map on another split's issues")
    evaluating.add_argument("folder", type=Path)
    evaluating.add_argument("map", type=Path)
    args = parser.parse_args()
    if args.command == "fit":
        args.l2 = args.l2 or [0.1]
    return {"data": cmd_data, "fit": cmd_fit, "eval": cmd_eval}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
