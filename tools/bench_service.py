"""Load and latency of the lgrep daemon, measured the way agents use it: real processes over gRPC.

    uv run --frozen python tools/bench_service.py load    --repo DIR [--clients 8] [--seconds 60]
    uv run --frozen python tools/bench_service.py latency --repo DIR [--cli 30] [--compare-cli OTHER/.venv/bin/lgrep]
    uv run --frozen python tools/bench_service.py memory  --repo DIR
    uv run --frozen python tools/bench_service.py beside  --repo DIR --big DIR
    uv run --frozen python tools/bench_service.py soak    --repo GIT_DIR [--repo GIT_DIR ...] [--commits 8] [--step 25]

Each run starts its own `lgrep serve` on a fresh cache dir under /tmp (the ONNX model is linked from
--models, default ~/.cache/lgrep/models, so it is not rebuilt), indexes the repository through the
daemon, and stops the daemon at the end.

- load: N client processes search for S seconds while an editor saves a new function into the
  watched project every --edit-every seconds; reports errors, latency percentiles (all, and each
  client's), and how long each edit took to become searchable (BM25 hit, then its vector in). With
  --stream-index DIR another client runs a long index stream (DIR from scratch) meanwhile.
- latency: one client's gRPC search latency from another process, and the wall and CPU time of the
  `lgrep search` command through the warm daemon: with its modules' bytecode cached (as installed),
  then with whatever bytecode the environment gives it (PYTHONDONTWRITEBYTECODE=1 and a venv without
  `__pycache__` compile grpc, protobuf and click on every run); `--compare-cli OTHER/bin/lgrep`
  times another build's command in turn with this one's, against the same daemon.
- memory: the daemon's resident memory with the model loaded and no project, then with the
  repository's snapshot warm.
- beside: search latency quiet, then while the daemon builds the index of a big repository.
- soak: one daemon, many projects, many jobs, as an agent moving between branches and projects
  uses it: each repository (a git checkout, cloned to /tmp without touching it) is checked out at
  --commits commits --step apart, oldest first, and after each checkout the daemon indexes it and
  answers a few searches on it; repositories take turns (--rounds). RSS is sampled every 0.25 s;
  the result gives the RSS settled after each job (2 s after it, the snapshot refresh done), the
  peak during each, and the working set at the end against the one after the first round.
- resident: one daemon on a cache that already holds the indexes of every --repo (build them first,
  e.g. `tools/bench_memory.py curve --stand-in --cache DIR` for memory only): each project searched
  in turn, --rounds times; RSS after each, and how many snapshots stay resident.

Queries are the repository's own function names and phrases built from them (this measures the
service, not ranking quality: that is tools/bench_search.py on the public benchmark).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BIN = Path(sys.executable).parent
_FUN = re.compile(r"\b(?:fun|def|func|function|fn|class|interface)\s+([A-Za-z_][A-Za-z0-9_]{3,})")


# ------------------------------------------------------------------------------------- daemon


class Daemon:
    def __init__(self, models: Path | None, cache: Path | None = None) -> None:
        """A daemon on `cache` (kept afterwards, so later runs reuse its indexes) or on a fresh one."""
        self.keep = cache is not None
        self.cache = cache if cache is not None else Path(tempfile.mkdtemp(prefix="lgb-", dir="/tmp"))
        self.cache.mkdir(parents=True, exist_ok=True)
        if models is not None and models.is_dir() and not (self.cache / "models").exists():
            (self.cache / "models").symlink_to(models, target_is_directory=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_")}
        self.env.update({"LGREP_CACHE_DIR": str(self.cache), "LGREP_SERVER__AUTOSTART": "0"})
        self.socket = self.cache / "lgrep.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        read_fd, write_fd = os.pipe()
        with (self.cache / "serve.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [str(BIN / "lgrep"), "serve", "--ready-fd", str(write_fd)],
                pass_fds=(write_fd,),
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=self.cache,
            )
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as ready:
            if not ready.readline().startswith(b"ready"):
                raise SystemExit(f"lgrep serve did not start: {(self.cache / 'serve.log').read_text()[-2000:]}")
        return self.proc.pid

    def restart(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.start()

    def rss_mb(self) -> tuple[float, float]:
        """(current, peak) resident memory of the daemon, MB."""
        assert self.proc is not None
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines() if ":" in line
        )
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

    def rss_parts_mb(self) -> dict[str, float]:
        """The daemon's resident memory by kind, MB: anonymous (its heap: what it costs the machine)
        and file-backed (mapped libraries and the model's embedding table: pages the kernel can drop
        and read back)."""
        assert self.proc is not None
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines() if ":" in line
        )
        return {k: round(int(fields[k].split()[0]) / 1024) for k in ("RssAnon", "RssFile")}

    def client(self):  # type: ignore[no-untyped-def]
        from lgrep_core.rpc.client import LgrepClient

        client = LgrepClient.connect(socket_path=self.socket, timeout=600)
        client.server_info()
        return client

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.keep:
            shutil.rmtree(self.cache, ignore_errors=True)


def _index(daemon: Daemon, repo: Path) -> dict[str, float]:
    from lgrep_core.domain.models import IndexProjectRequest, IndexSummary

    t0 = time.perf_counter()
    with daemon.client() as client:
        summary = None
        for event in client.index(IndexProjectRequest(str(repo))):
            if isinstance(event, IndexSummary):
                summary = event
    assert summary is not None
    return {"chunks": summary.chunks_total, "files": summary.files_seen, "seconds": time.perf_counter() - t0}


def _queries(repo: Path, n: int, seed: int = 7) -> list[str]:
    names: set[str] = set()
    for path in sorted(repo.rglob("*")):
        if path.is_file() and path.suffix in {".kt", ".py", ".go", ".rs", ".ts", ".java", ".c", ".h", ".cs", ".rb"}:
            names.update(_FUN.findall(path.read_text(errors="replace")))
        if len(names) > 5000:
            break
    rng = random.Random(seed)
    picked = rng.sample(sorted(names), min(n, len(names)))
    out = []
    for i, name in enumerate(picked):
        words = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").lower()
        out.append(name if i % 2 else f"where is {words} handled")
    return out


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def _summary(xs: list[float]) -> dict[str, float]:
    return {
        "n": len(xs),
        "p50": round(_pct(xs, 0.5), 2),
        "p95": round(_pct(xs, 0.95), 2),
        "p99": round(_pct(xs, 0.99), 2),
        "max": round(max(xs), 2) if xs else float("nan"),
    }


# --------------------------------------------------------------------------------------- load


def _client_worker(socket: str, root: str, queries: list[str], seconds: float, think_ms: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from lgrep_core.domain.errors import LgrepError
    from lgrep_core.domain.models import SearchRequest
    from lgrep_core.rpc.client import LgrepClient

    latencies: list[float] = []
    errors: list[str] = []
    rng = random.Random(os.getpid())
    with LgrepClient.connect(socket_path=socket, timeout=30) as client:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            query = rng.choice(queries)
            t0 = time.perf_counter()
            try:
                client.call(SearchRequest(query, project_root=root, limit=10))
                latencies.append((time.perf_counter() - t0) * 1000)
            except LgrepError as exc:
                errors.append(exc.message[:200])
            if think_ms:  # an agent reads what it got before it asks again
                time.sleep(rng.uniform(0.5, 1.5) * think_ms / 1000)
    out.put((latencies, errors))


def cmd_load(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.domain.models import IndexProjectRequest, SearchRequest, SearchType, WatchProjectRequest

    repo = args.repo.resolve()
    # The editor writes into a copy, never into the source; with --cache the copy keeps its path, so
    # the next run's index only re-checks it (unchanged content is not chunked or embedded again).
    parent = args.cache.with_name(args.cache.name + "-work") if args.cache else Path(tempfile.mkdtemp(dir="/tmp"))
    work = parent / repo.name
    shutil.rmtree(work, ignore_errors=True)
    parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(repo, work)
    daemon = Daemon(args.models, args.cache)
    try:
        daemon.start()
        indexed = _index(daemon, work)
        queries = _queries(work, 300)
        with daemon.client() as client:
            client.call(WatchProjectRequest(str(work)))
            # The clients measure a warm daemon: the project's first query loads its snapshot (timed
            # here, and by the memory and latency modes), which would otherwise be the p99.
            t0 = time.perf_counter()
            client.call(SearchRequest(queries[0], project_root=str(work), limit=10))
            first_query_s = time.perf_counter() - t0
        edit_files = sorted(p for p in work.rglob("*") if p.suffix in {".kt", ".py", ".go", ".rs", ".ts", ".java"})[:50]
        if not edit_files:
            raise SystemExit(f"load: no source file to edit in {repo} (.kt .py .go .rs .ts .java)")
        visible: list[float] = []
        vectors_in: list[float] = []
        missed: list[str] = []
        stop = threading.Event()

        def editor() -> None:
            with daemon.client() as checker:
                n = 0
                while not stop.is_set():
                    n += 1
                    token = f"lgrepEdit{n}x{random.randrange(10**9)}"
                    target = edit_files[n % len(edit_files)]
                    text = target.read_text(errors="replace") + f"\nfun {token}(value: Int): Int = value + {n}\n"
                    tmp = target.with_name(f".{target.name}.tmp")
                    tmp.write_text(text)
                    saved = time.perf_counter()
                    tmp.replace(target)  # an editor's atomic save
                    seen = None
                    while time.perf_counter() - saved < 30:
                        r = checker.call(
                            SearchRequest(token, project_root=str(work), search_type=SearchType.BM25, limit=1)
                        )
                        if seen is None and r.results and r.results[0].path.endswith(target.name):
                            seen = time.perf_counter() - saved
                        if seen is not None and r.vectors_pending == 0:
                            visible.append(seen)
                            vectors_in.append(time.perf_counter() - saved)
                            break
                        time.sleep(0.02)
                    else:
                        missed.append(token)
                    stop.wait(max(0.0, args.edit_every - (time.perf_counter() - saved)))

        edits = threading.Thread(target=editor, daemon=True)
        edits.start()
        streamed: dict[str, object] = {}

        def long_stream() -> None:
            # Another agent runs a long index stream (a big repository from scratch) meanwhile.
            from lgrep_core.domain.models import IndexProgress

            events = 0
            t_stream = time.perf_counter()
            with daemon.client() as streamer:
                stream = streamer.index(IndexProjectRequest(str(args.stream_index.resolve()), force=True))
                for event in stream:
                    events += isinstance(event, IndexProgress)
                    if stop.is_set():
                        stream.cancel()
                        break
            streamed.update(events=events, seconds=round(time.perf_counter() - t_stream, 1))

        streamer = threading.Thread(target=long_stream, daemon=True) if args.stream_index else None
        if streamer is not None:
            streamer.start()
        beside: subprocess.Popen[bytes] | None = None
        if args.stream_process:
            # The same long index, in a process of its own (`lgrep index --no-daemon`, nice +10, a
            # cache of its own): what the daemon's answers meet when indexing shares no GIL with them.
            side_cache = Path(tempfile.mkdtemp(prefix="lgb-side-", dir="/tmp"))
            if args.models is not None:
                (side_cache / "models").symlink_to(args.models, target_is_directory=True)
            command = ["nice", "-n", "10", str(BIN / "lgrep"), "index", "--no-daemon", "--force", "-q"]
            beside = subprocess.Popen(
                [*command, str(args.stream_process.resolve())],
                env={**daemon.env, "LGREP_CACHE_DIR": str(side_cache)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        ctx = mp.get_context("spawn")
        out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        workers = [
            ctx.Process(
                target=_client_worker,
                args=(str(daemon.socket), str(work), queries, args.seconds, args.think_ms, out),
            )
            for _ in range(args.clients)
        ]
        for w in workers:
            w.start()
        results = [out.get(timeout=args.seconds + 120) for _ in workers]
        for w in workers:
            w.join(timeout=30)
        stop.set()
        edits.join(timeout=60)
        if streamer is not None:
            streamer.join(timeout=60)
        if beside is not None:
            streamed["process_running_at_end"] = beside.poll() is None
            beside.kill()
            beside.wait()
            shutil.rmtree(side_cache, ignore_errors=True)
        rss, peak = daemon.rss_mb()
        latencies = [x for lat, _ in results for x in lat]
        errors = [e for _, errs in results for e in errs]
        return {
            "repo": str(repo),
            "indexed": indexed,
            "clients": args.clients,
            "think_ms": args.think_ms,
            "first_query_s": round(first_query_s, 2),
            "seconds": args.seconds,
            "queries": len(latencies),
            "qps": round(len(latencies) / args.seconds, 1),
            "errors": len(errors),
            "error_samples": errors[:3],
            "search_ms": _summary(latencies),
            # No client starved: each one's own count and p99.
            "per_client_queries": [len(lat) for lat, _ in results],
            "per_client_p99_ms": [_summary(lat)["p99"] for lat, _ in results],
            "long_index_stream": streamed or None,
            "edits": len(visible) + len(missed),
            "edits_missed": len(missed),
            "edit_searchable_s": _summary(visible),
            "edit_with_vector_s": _summary(vectors_in),
            "daemon_rss_mb": round(rss),
            "daemon_peak_mb": round(peak),
        }
    finally:
        daemon.stop()
        if not args.cache:
            shutil.rmtree(work.parent, ignore_errors=True)


# ------------------------------------------------------------------------------------ latency


def _cli_env(base: dict[str, str], pycache: Path | None) -> dict[str, str]:
    """The environment of a timed `lgrep search`. With `pycache`, modules load from bytecode cached
    there, as an installed lgrep's do (pip compiles at install; Python writes `__pycache__` on first
    import); it is a prefix of its own, so nothing is written into the source tree or the virtualenv.
    Without, the environment decides: PYTHONDONTWRITEBYTECODE=1 (as in this project's sessions) makes
    every command compile whatever has no bytecode yet, here grpc, protobuf, click and lgrep."""
    env = {**base, "LGREP_SERVER__AUTOSTART": "1"}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _time_cli(
    commands: dict[str, list[str]], queries: list[str], repo: Path, env: dict[str, str]
) -> dict[str, dict[str, dict[str, float]]]:
    """Wall and CPU (user + sys) time of each command, one query at a time, the commands alternating
    (in turn first), so that a busy machine slows each of them alike."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for i, q in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([*commands[name], "search", q, str(repo)], env=env, capture_output=True, check=True)
            wall[name].append((time.perf_counter() - t0) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    return {name: {"wall_ms": _summary(wall[name]), "cpu_ms": _summary(cpu[name])} for name in names}


def cmd_latency(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.domain.models import SearchRequest

    repo = args.repo.resolve()
    daemon = Daemon(args.models, args.cache)
    try:
        daemon.start()
        indexed = _index(daemon, repo)
        queries = _queries(repo, args.queries)
        grpc_ms: list[float] = []
        server_ms: list[float] = []
        with daemon.client() as client:
            for q in queries[:20]:
                client.call(SearchRequest(q, project_root=str(repo)))
            for q in queries:
                t0 = time.perf_counter()
                r = client.call(SearchRequest(q, project_root=str(repo)))
                grpc_ms.append((time.perf_counter() - t0) * 1000)
                server_ms.append(r.timings_ms.get("total_ms", 0.0))
        commands = {"lgrep": [str(BIN / "lgrep")]}
        if args.compare_cli:
            commands["compare"] = [str(args.compare_cli.resolve())]
        with tempfile.TemporaryDirectory(prefix="lgb-pyc-", dir="/tmp") as pyc:
            cached = _cli_env(daemon.env, Path(pyc))
            _time_cli(commands, queries[:2], repo, cached)  # the first runs write the bytecode
            cli = _time_cli(commands, queries[: args.cli], repo, cached)
        as_set = _time_cli(commands, queries[: args.cli_env], repo, _cli_env(daemon.env, None))
        return {
            "repo": str(repo),
            "indexed": indexed,
            "grpc_search_ms": _summary(grpc_ms),
            "server_total_ms": _summary(server_ms),
            "cli_search": {name: {"command": " ".join(argv), **cli[name]} for name, argv in commands.items()},
            "cli_search_env": {
                "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
                "PYTHONPYCACHEPREFIX": os.environ.get("PYTHONPYCACHEPREFIX", ""),
                **as_set,
            },
        }
    finally:
        daemon.stop()


# ------------------------------------------------------------------------------------- memory


def cmd_memory(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.domain.models import ListProjectsRequest, SearchRequest

    repo = args.repo.resolve()
    daemon = Daemon(args.models, args.cache)
    try:
        daemon.start()
        with daemon.client() as client:
            # the daemon loads the model in the background at start; one query on no project waits for it
            deadline = time.monotonic() + 120
            while daemon.rss_mb()[0] < 60 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2.0)
            idle = daemon.rss_mb()
            idle_parts = daemon.rss_parts_mb()
        indexed = _index(daemon, repo)
        after_index = daemon.rss_mb()
        daemon.restart()  # a fresh daemon: only the model and the snapshot, no indexing behind it
        with daemon.client() as client:
            asked = _queries(repo, 20 + args.long_use)
            for q in asked[:20]:
                client.call(SearchRequest(q, project_root=str(repo)))
            warm = daemon.rss_mb()
            warm_parts = daemon.rss_parts_mb()
            resident = client.call(ListProjectsRequest())
            # An agent's day: many more questions, most naming things not asked about before.
            for q in asked[20:]:
                client.call(SearchRequest(q, project_root=str(repo)))
            used = daemon.rss_mb()
            used_parts = daemon.rss_parts_mb()
        return {
            "repo": str(repo),
            "indexed": indexed,
            "model_no_project_mb": round(idle[0]),
            "model_no_project_anon_file_mb": idle_parts,
            "after_indexing_mb": round(after_index[0]),
            "after_indexing_peak_mb": round(after_index[1]),
            "one_project_warm_mb": round(warm[0]),
            "one_project_warm_anon_file_mb": warm_parts,
            "after_more_queries": len(asked) - 20,
            "one_project_after_more_queries_mb": round(used[0]),
            "one_project_after_more_queries_anon_file_mb": used_parts,
            "per_chunk_kb": round((warm[0] - idle[0]) * 1024 / max(1, indexed["chunks"]), 2),
            "projects": len(resident),
        }
    finally:
        daemon.stop()


# ------------------------------------------------------------------------------------- beside


def cmd_beside(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.domain.models import IndexSummary, SearchRequest

    repo, big = args.repo.resolve(), args.big.resolve()
    daemon = Daemon(args.models, args.cache)
    try:
        daemon.start()
        _index(daemon, repo)
        queries = _queries(repo, 200)

        def measure(client, seconds: float) -> list[float]:  # type: ignore[no-untyped-def]
            out: list[float] = []
            deadline = time.monotonic() + seconds
            i = 0
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                client.call(SearchRequest(queries[i % len(queries)], project_root=str(repo)))
                out.append((time.perf_counter() - t0) * 1000)
                i += 1
            return out

        with daemon.client() as client:
            measure(client, 3)
            quiet = measure(client, args.seconds)
            done = threading.Event()
            summary: list[IndexSummary] = []

            def build() -> None:
                with daemon.client() as writer:
                    for event in writer.index(big):
                        if isinstance(event, IndexSummary):
                            summary.append(event)
                done.set()

            threading.Thread(target=build, daemon=True).start()
            time.sleep(5.0)  # past the walk and chunking, into embedding
            busy = measure(client, args.seconds)
            indexing_still = not done.is_set()
        return {
            "quiet_ms": _summary(quiet),
            "beside_index_ms": _summary(busy),
            "p50_ratio": round(_pct(busy, 0.5) / _pct(quiet, 0.5), 2),
            "index_was_running": indexing_still,
        }
    finally:
        daemon.stop()


# --------------------------------------------------------------------------------------- soak


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def cmd_soak(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.domain.models import ListProjectsRequest, SearchRequest

    work = Path(tempfile.mkdtemp(prefix="lgsoak-", dir="/tmp"))
    projects: list[tuple[Path, list[str]]] = []
    for source in args.repo:
        clone = work / source.resolve().name
        subprocess.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", str(source.resolve()), str(clone)], check=True
        )
        commits = _git(clone, "rev-list", "--first-parent", "HEAD").split()
        picked = commits[: args.commits * args.step : args.step][::-1]  # oldest first, HEAD last
        projects.append((clone, picked))
    daemon = Daemon(args.models, args.cache)
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    t0 = time.monotonic()

    def sampler() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError, AssertionError):
                samples.append((time.monotonic() - t0, daemon.rss_mb()[0]))
            stop.wait(0.25)

    jobs: list[dict[str, object]] = []
    try:
        daemon.start()
        time.sleep(3.0)  # the model loads in the background at start
        idle = daemon.rss_mb()[0]
        threading.Thread(target=sampler, daemon=True).start()
        for round_ in range(args.rounds):
            for clone, commits in projects:
                part = commits[round_ * len(commits) // args.rounds : (round_ + 1) * len(commits) // args.rounds]
                queries = None
                for commit in part:
                    _git(clone, "checkout", "-q", "--force", commit)
                    start = time.monotonic() - t0
                    indexed = _index(daemon, clone)
                    queries = queries or _queries(clone, 5)
                    with daemon.client() as client:
                        for q in queries:
                            client.call(SearchRequest(q, project_root=str(clone)))
                    end = time.monotonic() - t0
                    time.sleep(2.0)
                    during = [r for t, r in samples if start <= t <= end] or [daemon.rss_mb()[0]]
                    jobs.append(
                        {
                            "project": clone.name,
                            "commit": commit[:10],
                            "chunks": indexed["chunks"],
                            "index_s": round(indexed["seconds"], 1),
                            "peak_mb": round(max(during)),
                            "settled_mb": round(daemon.rss_mb()[0]),
                        }
                    )
                    print(json.dumps(jobs[-1]), file=sys.stderr, flush=True)
        first_round = jobs[: len(jobs) // args.rounds]
        with daemon.client() as client:
            resident = [p.project_root for p in client.call(ListProjectsRequest()) if p.resident]
        return {
            "projects": [c.name for c, _ in projects],
            "commits_each": args.commits,
            "jobs": len(jobs),
            "model_no_project_mb": round(idle),
            "peak_mb": round(max(r for _t, r in samples)),
            "settled_after_first_round_mb": first_round[-1]["settled_mb"] if first_round else None,
            "settled_max_mb": max(int(j["settled_mb"]) for j in jobs),  # type: ignore[call-overload]
            "settled_end_mb": jobs[-1]["settled_mb"],
            "snapshots_resident_at_end": len(resident),
            "by_job": jobs,
            "rss_curve": [(round(t), round(r)) for t, r in samples[:: max(1, len(samples) // 400)]],
        }
    finally:
        stop.set()
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


def cmd_resident(args: argparse.Namespace) -> dict[str, object]:
    """One daemon on a cache that already holds the projects' indexes (none is indexed here): each
    project in turn is searched, as an agent moving between projects does; RSS after each, settled."""
    from lgrep_core.domain.models import ListProjectsRequest, SearchRequest

    daemon = Daemon(args.models, args.cache)
    rows: list[dict[str, object]] = []
    try:
        daemon.start()
        time.sleep(3.0)
        idle = daemon.rss_mb()[0]
        with daemon.client() as client:
            for _round in range(args.rounds):
                for repo in args.repo:
                    root = repo.resolve()
                    for q in _queries(root, 5):
                        client.call(SearchRequest(q, project_root=str(root)))
                    time.sleep(2.0)
                    resident = [p for p in client.call(ListProjectsRequest()) if p.resident]
                    rows.append(
                        {
                            "project": root.name,
                            "settled_mb": round(daemon.rss_mb()[0]),
                            "resident": len(resident),
                            "resident_chunks": sum(p.chunks for p in resident),
                        }
                    )
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        return {"model_no_project_mb": round(idle), "peak_mb": round(daemon.rss_mb()[1]), "by_search": rows}
    finally:
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["load", "latency", "memory", "beside", "soak", "resident"])
    parser.add_argument("--repo", type=Path, action="append", required=True, help="soak: repeat for each project")
    parser.add_argument("--big", type=Path)
    parser.add_argument("--models", type=Path, default=Path("~/.cache/lgrep/models").expanduser())
    parser.add_argument("--cache", type=Path, help="cache dir to use and keep (default: a fresh one, removed)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--edit-every", type=float, default=1.0)
    parser.add_argument(
        "--think-ms", type=float, default=0.0, help="load: each client's mean pause between queries (0: back to back)"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--long-use", type=int, default=500, help="memory: distinct questions asked after the 20 that warm the daemon"
    )
    parser.add_argument(
        "--stream-index", type=Path, help="load: another client indexes this repository from scratch meanwhile"
    )
    parser.add_argument(
        "--stream-process",
        type=Path,
        help="load: the same, by a process of its own (`lgrep index --no-daemon`, nice +10, its own cache)",
    )
    parser.add_argument("--cli", type=int, default=30, help="latency: timed `lgrep search` commands (bytecode cached)")
    parser.add_argument("--cli-env", type=int, default=10, help="latency: the same, bytecode as the environment has it")
    parser.add_argument(
        "--compare-cli", type=Path, help="latency: another build's `lgrep` script, timed in turn with this one's"
    )
    parser.add_argument("--commits", type=int, default=8, help="soak: commits checked out per repository")
    parser.add_argument("--step", type=int, default=25, help="soak: commits between two checkouts")
    parser.add_argument("--rounds", type=int, default=2, help="soak: turns the repositories take")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.mode not in ("soak", "resident"):
        if len(args.repo) > 1:
            parser.error("--repo once, except for soak")
        args.repo = args.repo[0]
    modes = {
        "load": cmd_load,
        "latency": cmd_latency,
        "memory": cmd_memory,
        "beside": cmd_beside,
        "soak": cmd_soak,
        "resident": cmd_resident,
    }
    result = modes[args.mode](args)
    result = {"mode": args.mode, "date": time.strftime("%Y-%m-%d %H:%M"), **result}
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
