"""What fresh by default costs (ADR 0024), through a real daemon:

    uv run --frozen python tools/bench_fresh.py [--files 400] [--switch 40] [--models DIR] [--runs 9]

- check: the freshness check a search of an unwatched project makes (lgrep_index.freshness: the git
  state now against the one recorded by the last full run), alone, in this process, per call;
- search: a search's latency through the daemon (gRPC, from this process) of an unwatched git
  project with no checkout since its index, against the first search after a `git checkout` that
  changes --switch files (the search waits for the incremental run that catches up);
- lease: how long after an `lgrep mcp` process starts the daemon watches its project (no watch
  call), and how long after an edit the new function is searchable through the daemon.

It builds a synthetic git repository of --files Python files in a temporary folder, with a second
branch whose --switch files differ, starts its own `lgrep serve` on a fresh cache dir (the ONNX model
linked from --models), and stops everything at the end. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_service import Daemon

BIN = Path(sys.executable).parent


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def _module(i: int, flavour: str) -> str:
    return "\n\n".join(
        f"def {flavour}_handler_{i}_{j}(request, retries={j}):\n"
        f'    """Handle request kind {j} for module {i} on the {flavour} branch."""\n'
        f"    value = request.get('field_{j}') or {i * j}\n"
        f"    return value\n"
        for j in range(4)
    )


def _repo(root: Path, files: int, switch: int) -> None:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    for i in range(files):
        pkg = root / f"pkg{i % 20}"
        pkg.mkdir(exist_ok=True)
        (pkg / f"module_{i}.py").write_text(_module(i, "main") + "\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "main")
    _git(root, "checkout", "-q", "-b", "feature")
    for i in range(switch):
        (root / f"pkg{i % 20}" / f"module_{i}.py").write_text(_module(i, "feature") + "\n")
    _git(root, "commit", "-q", "-am", "feature")
    _git(root, "checkout", "-q", "main")


def _ms(seconds: list[float]) -> dict[str, float]:
    xs = sorted(s * 1000 for s in seconds)
    return {"median_ms": round(statistics.median(xs), 2), "min_ms": round(xs[0], 2), "max_ms": round(xs[-1], 2)}


def bench_check(repo: Path, cache: Path, calls: int = 2000) -> dict[str, float]:
    """The check alone, on a project whose recorded state is current (what every search pays)."""
    from lgrep_index.freshness import Freshness

    class _NoJobs:  # the check never reaches the jobs while nothing moved
        def index(self, *a: object, **k: object) -> None:
            raise AssertionError("the check ran an index job on an unchanged project")

    fresh = Freshness(cache, _NoJobs(), set)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    for _ in range(calls):
        fresh.freshen(repo)
    return {"per_call_us": round((time.perf_counter() - t0) / calls * 1e6, 1), "calls": calls}


def bench_search(daemon: Daemon, repo: Path, runs: int) -> dict[str, object]:
    from lgrep_core.domain.models import SearchRequest, SearchType

    with daemon.client() as client:
        request = SearchRequest(
            "feature_handler_3_2 handle request", project_root=str(repo), search_type=SearchType.BM25
        )
        client.call(request)  # the snapshot loaded
        quiet = []
        for _ in range(runs):
            t0 = time.perf_counter()
            client.call(request)
            quiet.append(time.perf_counter() - t0)
        switched = []
        for n in range(runs):
            _git(repo, "checkout", "-q", "feature" if n % 2 == 0 else "main")
            t0 = time.perf_counter()
            response = client.call(request)
            switched.append(time.perf_counter() - t0)
            top = response.results[0].path if response.results else ""
            if n % 2 == 0:  # on the feature branch: its version of the file answers
                assert top == "pkg3/module_3.py", (n, top)
        _git(repo, "checkout", "-q", "main")
    each = [round(x * 1000) for x in switched]
    return {"unchanged": _ms(quiet), "after_checkout": {**_ms(switched), "each_ms": each}, "runs": runs}


def bench_lease(daemon: Daemon, repo: Path, runs: int) -> dict[str, object]:
    from lgrep_core.domain.models import SearchRequest, SearchType, StatusRequest

    env = {**daemon.env, "LGREP_MCP_LEASE_TTL_S": "30"}
    proc = subprocess.Popen(
        [str(BIN / "lgrep"), "mcp", str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=repo,
    )
    try:
        with daemon.client() as client:
            t0 = time.perf_counter()
            while not client.call(StatusRequest(str(repo))).watched:
                if time.perf_counter() - t0 > 60:
                    raise SystemExit("the MCP server's lease never made the daemon watch the project")
                time.sleep(0.02)
            leased = time.perf_counter() - t0
            edits = []
            for n in range(runs):
                name = f"leased_edit_marker_{n}"
                (repo / f"edit_{n}.py").write_text(f"def {name}():\n    return {n}\n")
                t0 = time.perf_counter()
                request = SearchRequest(name, project_root=str(repo), search_type=SearchType.BM25, limit=3)
                while not any(h.path == f"edit_{n}.py" for h in client.call(request).results):
                    if time.perf_counter() - t0 > 30:
                        raise SystemExit(f"edit {n} was never searchable")
                    time.sleep(0.02)
                edits.append(time.perf_counter() - t0)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    return {"watched_after_start_s": round(leased, 2), "edit_searchable": _ms(edits), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--switch", type=int, default=40, help="files that differ between the two branches")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--models", type=Path, default=Path.home() / ".cache" / "lgrep" / "models")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lgfresh-"))
    repo = work / "repo"
    _repo(repo, args.files, args.switch)
    daemon = Daemon(args.models)
    try:
        daemon.start()
        from lgrep_core.domain.models import IndexProjectRequest

        with daemon.client() as client:
            for _event in client.index(IndexProjectRequest(str(repo), wait_for_vectors=True)):
                pass
        out: dict[str, object] = {"files": args.files, "switch": args.switch}
        out["check"] = bench_check(repo, daemon.cache)
        out["search"] = bench_search(daemon, repo, args.runs)
        out["lease"] = bench_lease(daemon, repo, args.runs)
        print(json.dumps(out, indent=2))
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
