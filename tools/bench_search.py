"""Retrieval-quality benchmark on semble's public code-search benchmark (NDCG@10, NDCG@5).

Data: a folder in semble's format (repos.json + annotations/*.json; default ../shared/bench/semble
beside the project). Checkouts: one folder per repository, named as in repos.json, at the pinned
revisions (DEVELOPERS.md says how to get them). Indexes are built in-process into --cache (kept
between runs, so a rerun only indexes what changed) with the embedded model.

    uv run --frozen python tools/bench_search.py --checkouts /work/bench/checkouts --subset
    uv run --frozen python tools/bench_search.py --checkouts DIR --ablate --out runs/ablate.json
    uv run --frozen python tools/bench_search.py --checkouts DIR --mode ripgrep     # metric check
    uv run --frozen python tools/bench_search.py --checkouts DIR --repo flask --language go

Modes: `full` (hybrid + ranking, what `lgrep search` does), `fusion` (hybrid, no ranking), `bm25`,
`vector`, `fuzzy` (one channel, no ranking), `bm25+rank` / `vector+rank` (one channel with ranking),
`full-SIGNAL` (full with one ranking signal off: definition, path_match, file_coherence, penalty,
diversify, adaptive_weights) and `ripgrep` (semble's baseline: `rg --count --fixed-strings
--ignore-case`, files ranked by match count). `--ablate` runs the standard set.

Metric (semble's, see the data README): a target is found at the rank of the first result whose path
equals it or ends with '/' + it (and whose lines overlap its span, when it has one); gain 1 per target;
IDCG over min(k, number of targets); NDCG averaged per repository, then over repositories.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = PROJECT.parent / "shared" / "bench" / "semble"
SUBSET = [
    "bats-core",
    "redux",
    "sinatra",
    "model2vec",
    "zig-clap",
    "xmonad",
    "snapkit",
    "circe",
    "guzzle",
    "plug",
    "dapper",
    "chi",
    "lazy.nvim",
    "ktor",
    "trpc",
    "fmtlib",
    "axum",
    "gson",
    "libuv",
]
ABLATION = [
    "ripgrep",
    "bm25",
    "vector",
    "fuzzy",
    "fusion",
    "bm25+rank",
    "vector+rank",
    "full-definition",
    "full-path_match",
    "full-file_coherence",
    "full-penalty",
    "full-diversify",
    "full-adaptive_weights",
    "full",
]


# ------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Target:
    path: str
    start: int | None = None
    end: int | None = None


@dataclass
class Task:
    qid: str
    repo: str
    language: str
    query: str
    category: str
    targets: list[Target]
    # vocab-dev marks the questions asked in other words than the code's (its README): reported alone.
    vocab_mismatch: bool = False


@dataclass
class Repo:
    name: str
    language: str
    root: Path
    tasks: list[Task] = field(default_factory=list)


def _target(raw: object) -> Target:
    if isinstance(raw, str):
        return Target(raw)
    assert isinstance(raw, dict)
    s, e = raw.get("start_line"), raw.get("end_line")
    return Target(str(raw["path"]), int(s) if s is not None else None, int(e) if e is not None else None)


def _category(item: dict) -> str:
    cat = item.get("category")
    if isinstance(cat, str):
        return cat
    q = item["query"].strip().lower()
    return "symbol" if " " not in q else ("architecture" if q.startswith("how ") else "semantic")


def load(data: Path, checkouts: Path, names: set[str], languages: set[str]) -> tuple[list[Repo], list[str]]:
    repos: dict[str, Repo] = {}
    missing: list[str] = []
    for item in json.loads((data / "repos.json").read_text(encoding="utf-8")):
        name, lang = item["name"], item["language"]
        if (names and name not in names) or (languages and lang not in languages):
            continue
        root = checkouts / name
        if item.get("benchmark_root"):
            root = root / item["benchmark_root"]
        if not root.is_dir():
            missing.append(name)
            continue
        repos[name] = Repo(name, lang, root)
    for path in sorted((data / "annotations").glob("*.json")):
        for i, item in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            repo = repos.get(item.get("repo", path.stem))
            if repo is None:
                continue
            targets = [_target(t) for t in [*item.get("relevant", []), *item.get("secondary", [])]]
            repo.tasks.append(
                Task(
                    f"{repo.name}#{i}",
                    repo.name,
                    repo.language,
                    item["query"],
                    _category(item),
                    targets,
                    bool(item.get("vocab_mismatch")),
                )
            )
    return [r for r in repos.values() if r.tasks], missing


# ----------------------------------------------------------------------------------------- metric


def _path_matches(found: str, target: str) -> bool:
    return found == target or found.endswith("/" + target) or target.endswith("/" + found)


def hit(result: tuple[str, int, int], t: Target) -> bool:
    """Whether a result (path, start line, end line) finds target `t` (semble's rule, above)."""
    path, start, end = result
    if not _path_matches(path, t.path):
        return False
    return t.start is None or t.end is None or not (end < t.start or start > t.end)


def ndcg(results: list[tuple[str, int, int]], targets: list[Target], k: int) -> float:
    if not targets:
        return 0.0
    ranks: set[int] = set()
    for t in targets:
        for rank, r in enumerate(results[:k], 1):
            if hit(r, t):
                ranks.add(rank)
                break
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks)
    idcg = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, len(targets)) + 1))
    return dcg / idcg


# ----------------------------------------------------------------------------------------- runners


def _choose_provider(args: argparse.Namespace, ap: argparse.ArgumentParser) -> None:
    """Point the in-process indexer at the provider asked for (through the environment, as a user
    would), with a cache of its own so that indexes of different models never meet."""
    if args.provider is None:
        return
    if args.provider != "local":
        if os.environ.get("CI"):
            ap.error("a cloud provider is never run under CI (it costs money and needs the network)")
        key = "VOYAGE_API_KEY" if args.provider == "voyage" else "OPENAI_API_KEY"
        if not os.environ.get(key) and not (args.provider == "openai" and args.base_url):
            ap.error(f"--provider {args.provider} needs {key} in the environment")
    os.environ["LGREP_EMBEDDING_PROVIDER"] = args.provider
    for name, value in (("MODEL", args.model), ("DIMENSIONS", args.dimensions), ("BASE_URL", args.base_url)):
        if value is not None:
            os.environ[f"LGREP_EMBEDDING_{name}"] = str(value)
    if args.cache == Path(os.environ.get("LGREP_BENCH_CACHE", "/tmp/lgrep-bench-cache")):
        suffix = "-".join(str(x) for x in (args.provider, args.model, args.dimensions) if x)
        args.cache = args.cache.with_name(f"{args.cache.name}-{suffix.replace('/', '_')}")


class LgrepRunner:
    """Indexes a repository (incrementally, into the shared cache) and answers in-process."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        os.environ["LGREP_CACHE_DIR"] = str(cache)
        if "LGREP_CONFIG" not in os.environ:  # no user config file: the defaults, as CI sees them
            empty = cache / "no-user-config.yaml"
            cache.mkdir(parents=True, exist_ok=True)
            empty.touch()
            os.environ["LGREP_CONFIG"] = str(empty)
        from lgrep_core.embeddings.registry import make_embedder
        from lgrep_core.settings.config import load_settings

        self._load_settings = load_settings
        self.embedder = None
        self._make_embedder = make_embedder

    def embedder_for(self, root: Path) -> Any:
        """The embedding provider the project's settings name (made once, then shared)."""
        if self.embedder is None:
            settings = self._load_settings(root).settings
            self.embedder = self._make_embedder(settings.embedding, settings.cache_dir)
        return self.embedder

    def index_run(self, root: Path, vectors: bool = True) -> tuple[Any, Any, float]:
        """Index `root` incrementally: (its IndexSummary, a ProjectReader of it, seconds). Without
        `vectors` only the chunks and their BM25 are brought up to date (the vector phase is left
        pending, as `lgrep index --no-wait` leaves it)."""
        from lgrep_core.storage.reader import ProjectReader
        from lgrep_index.pipeline import Indexer

        settings = self._load_settings(root).settings
        embedder = self.embedder_for(root)
        t0 = time.perf_counter()
        summary = Indexer(settings, root, embedder).run(wait_vectors=vectors)
        return summary, ProjectReader(settings.cache_dir, root.resolve()), time.perf_counter() - t0

    def index(self, root: Path) -> tuple[object, float, int]:
        summary, reader, secs = self.index_run(root)
        return reader, secs, summary.chunks_total

    def searcher(self, store: object, mode: str) -> tuple[object, object]:
        from lgrep_search.searcher import Searcher
        from lgrep_search.snapshot import Snapshots

        kind, ranking, disable = search_options(mode)
        snapshots = Snapshots(store, background=False)  # type: ignore[arg-type]
        searcher = Searcher(snapshots, self.embedder, ranking=ranking, disable=disable)
        return searcher, kind


def search_options(mode: str) -> tuple[Any, bool, frozenset[str]]:
    """What an lgrep mode asks of the searcher: (SearchType, ranking on, ranking signals off)."""
    from lgrep_core.domain.models import SearchType

    base, _, off = mode.partition("-")
    if base == "full":
        kind, ranking = SearchType.HYBRID, True
    elif base == "fusion":
        kind, ranking = SearchType.HYBRID, False
    else:
        channel, _, rank = base.partition("+")
        kind, ranking = SearchType(channel), rank == "rank"
    return kind, ranking, frozenset([off]) if off else frozenset()


def ripgrep(query: str, root: Path, k: int) -> list[tuple[str, int, int]]:
    cmd = ["rg", "--count", "--no-heading", "--ignore-case", "--hidden", "--glob", "!.git", "--fixed-strings"]
    cmd += ["--sort", "path", "--", query, "."]
    proc = subprocess.run(cmd, check=False, cwd=root, capture_output=True, text=True, timeout=60)
    entries = []
    for line in proc.stdout.splitlines():
        path, _, count = line.rpartition(":")
        if count.isdigit():
            entries.append((path.removeprefix("./"), int(count)))
    entries.sort(key=lambda e: -e[1])  # stable: ties stay in path order
    # A file-level result covers every line, so targets with a span match on the path alone (as in
    # semble's ripgrep baseline).
    return [(p, 1, 1 << 31) for p, _ in entries[:k]]


# ------------------------------------------------------------------------------------------- main


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def repo_mean(rows: list[dict], key: str) -> float:
    """The benchmark's aggregate of a per-query value: the mean over repositories of each one's mean."""
    by_repo: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_repo[r["repo"]].append(r[key])
    return _mean([_mean(v) for v in by_repo.values()])


def _marked(rows: list[dict]) -> dict | None:
    """NDCG of the vocab_mismatch queries alone (None when the data marks none): the mean over
    those queries, as docs/benchmarks.md has recorded it (they are spread unevenly over the
    repositories), and the mean over repositories beside it."""
    marked = [r for r in rows if r["vocab_mismatch"]]
    if not marked:
        return None
    return {
        "queries": len(marked),
        "ndcg10": _mean([r["ndcg10"] for r in marked]),
        "ndcg5": _mean([r["ndcg5"] for r in marked]),
        "ndcg10_repos": repo_mean(marked, "ndcg10"),
    }


def run_mode(mode: str, repos: list[Repo], runner: LgrepRunner | None, stores: dict, k: int) -> dict:
    from lgrep_core.domain.models import SearchRequest

    per_query: list[dict] = []
    per_repo: list[dict] = []
    latencies: list[float] = []
    retrieval: list[float] = []
    for repo in repos:
        rows = []
        if mode != "ripgrep":
            searcher, kind = runner.searcher(stores[repo.name], mode)  # type: ignore[union-attr]
            searcher.search(SearchRequest("warm up", limit=k, search_type=kind))  # type: ignore[attr-defined]
        for task in repo.tasks:
            t0 = time.perf_counter()
            if mode == "ripgrep":
                results = ripgrep(task.query, repo.root, k)
                timings: dict[str, float] = {}
            else:
                resp = searcher.search(SearchRequest(task.query, limit=k, search_type=kind))  # type: ignore[attr-defined]
                results = [(h.path, h.start_line, h.end_line) for h in resp.results]
                timings = resp.timings_ms
            wall = (time.perf_counter() - t0) * 1000
            latencies.append(wall)
            if timings:
                retrieval.append(timings.get("retrieval_ms", 0.0) + timings.get("ranking_ms", 0.0))
            row = {
                "qid": task.qid,
                "repo": repo.name,
                "language": repo.language,
                "category": task.category,
                "vocab_mismatch": task.vocab_mismatch,
                "query": task.query,
                "ndcg10": ndcg(results, task.targets, 10),
                "ndcg5": ndcg(results, task.targets, 5),
                "targets": [t.path for t in task.targets],
                "hits": [{"path": p, "start_line": s, "end_line": e} for p, s, e in results],
                "ms": round(wall, 3),
            }
            rows.append(row)
        per_query.extend(rows)
        cats: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            cats[r["category"]].append(r["ndcg10"])
        per_repo.append(
            {
                "repo": repo.name,
                "language": repo.language,
                "queries": len(rows),
                "ndcg10": _mean([r["ndcg10"] for r in rows]),
                "ndcg5": _mean([r["ndcg5"] for r in rows]),
                "by_category": {c: _mean(v) for c, v in cats.items()},
            }
        )
    by_cat: dict[str, list[float]] = defaultdict(list)
    by_lang: dict[str, list[float]] = defaultdict(list)
    for r in per_repo:
        for c, v in r["by_category"].items():
            by_cat[c].append(v)
        by_lang[r["language"]].append(r["ndcg10"])
    return {
        "mode": mode,
        "repos": len(per_repo),
        "queries": len(per_query),
        "ndcg10": _mean([r["ndcg10"] for r in per_repo]),
        "ndcg5": _mean([r["ndcg5"] for r in per_repo]),
        "ndcg10_queries": _mean([q["ndcg10"] for q in per_query]),
        "ndcg5_queries": _mean([q["ndcg5"] for q in per_query]),
        "by_category": {c: _mean(v) for c, v in sorted(by_cat.items())},
        "by_language": {lang: _mean(v) for lang, v in sorted(by_lang.items())},
        "vocab_mismatch": _marked(per_query),
        "latency_ms": {"p50": _pct(latencies, 0.5), "p99": _pct(latencies, 0.99)},
        "retrieval_ranking_ms": {"p50": _pct(retrieval, 0.5), "p99": _pct(retrieval, 0.99)} if retrieval else None,
        "per_repo": per_repo,
        "per_query": per_query,
    }


def add_corpus_arguments(ap: argparse.ArgumentParser) -> None:
    """The options that choose the benchmark's data, checkouts, index cache and repositories."""
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="semble-format data folder")
    ap.add_argument("--checkouts", type=Path, required=True, help="folder with one checkout per repository")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("LGREP_BENCH_CACHE", "/tmp/lgrep-bench-cache")))
    ap.add_argument("--repo", action="append", default=[], help="only these repositories (repeatable)")
    ap.add_argument("--language", action="append", default=[], help="only these languages (repeatable)")
    ap.add_argument("--subset", action="store_true", help="the 19-repository one-per-language subset")


def load_selected(args: argparse.Namespace) -> tuple[list[Repo], list[str]]:
    """The repositories `add_corpus_arguments`'s options choose, and those not checked out (said on
    stderr). Exits when none is left."""
    names = set(args.repo) | (set(SUBSET) if args.subset else set())
    repos, missing = load(args.data, args.checkouts, names, set(args.language))
    if missing:
        print(f"not checked out (skipped): {', '.join(missing)}", file=sys.stderr)
    if not repos:
        raise SystemExit("no repositories with queries matched")
    return repos, missing


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """A run's results as JSON at `path` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_corpus_arguments(ap)
    ap.add_argument("--mode", action="append", default=[], help="modes to run (repeatable; default full)")
    ap.add_argument("--ablate", action="store_true", help="run the standard ablation set")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--out", type=Path, help="write the full results (per query, top-k hits) as JSON here")
    ap.add_argument("--by-repo", action="store_true", help="print the per-repository table")
    ap.add_argument(
        "--provider",
        choices=["local", "voyage", "openai"],
        help="embedding provider (default: the user's config, or local); a cloud one needs its API key in "
        "the environment, costs money, and is refused under CI",
    )
    ap.add_argument("--model", help="the provider's model (default: its own default)")
    ap.add_argument("--dimensions", type=int, help="vector dimension to ask for")
    ap.add_argument("--base-url", help="an OpenAI-compatible server, or a proxy (LGREP_EMBEDDING_BASE_URL)")
    args = ap.parse_args()
    _choose_provider(args, ap)

    repos, missing = load_selected(args)
    modes = ABLATION if args.ablate else (args.mode or ["full"])
    if "ripgrep" in modes and shutil.which("rg") is None:
        raise SystemExit("the ripgrep mode needs `rg` on PATH (apt install ripgrep)")

    runner: LgrepRunner | None = None
    stores: dict[str, object] = {}
    index_rows = []
    if any(m != "ripgrep" for m in modes):
        args.cache.mkdir(parents=True, exist_ok=True)
        runner = LgrepRunner(args.cache)
        for repo in repos:
            store, secs, chunks = runner.index(repo.root)
            stores[repo.name] = store
            index_rows.append({"repo": repo.name, "index_s": round(secs, 2), "chunks": chunks})
            print(f"indexed {repo.name}: {chunks} chunks, {secs:.1f} s", file=sys.stderr)

    results = []
    for mode in modes:
        t0 = time.perf_counter()
        res = run_mode(mode, repos, runner, stores, args.k)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        results.append(res)
        cats = " ".join(f"{c}={v:.3f}" for c, v in res["by_category"].items())
        lat = res["retrieval_ranking_ms"] or res["latency_ms"]
        print(
            f"{mode:<24} NDCG@10 {res['ndcg10']:.4f} (queries {res['ndcg10_queries']:.4f})  NDCG@5 {res['ndcg5']:.4f}"
            f"  {cats}  p50 {lat['p50']:.2f} ms p99 {lat['p99']:.2f} ms",
            flush=True,
        )
        if res["vocab_mismatch"]:
            vm = res["vocab_mismatch"]
            print(
                f"{'  vocab_mismatch':<24} NDCG@10 {vm['ndcg10']:.4f} over its {vm['queries']} queries"
                f" (repositories {vm['ndcg10_repos']:.4f})  NDCG@5 {vm['ndcg5']:.4f}",
                flush=True,
            )
    if args.by_repo:
        print(f"\n{'repo':<22}{'language':<12}" + "".join(f"{m[:14]:>15}" for m in modes))
        for i, repo in enumerate(results[0]["per_repo"]):
            vals = "".join(f"{res['per_repo'][i]['ndcg10']:>15.3f}" for res in results)
            print(f"{repo['repo']:<22}{repo['language']:<12}{vals}")
        print("\nby language:")
        for lang in results[0]["by_language"]:
            print(f"  {lang:<12}" + "".join(f"{res['by_language'][lang]:>15.3f}" for res in results))
    if index_rows:
        total = sum(r["index_s"] for r in index_rows)
        print(f"index (incremental check or build): {total:.1f} s over {len(index_rows)} repositories", file=sys.stderr)
    if args.out:
        payload = {
            "date": time.strftime("%Y-%m-%d"),
            "data": str(args.data),
            "repos": [r.name for r in repos],
            "missing": missing,
            "index": index_rows,
            "modes": results,
        }
        write_json(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
