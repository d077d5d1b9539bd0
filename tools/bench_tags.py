#!/usr/bin/env python3
"""The versions index at scale: what `lgrep index --tags` stores and embeds against tags x files,
and a version-scoped query against a working-tree query of the same files.

    uv run --frozen python tools/bench_tags.py REPO --cache DIR [--config FILE] [--component C]
        [--skip-index] [--queries N]

1. Runs `lgrep index --tags REPO --json` (the real CLI, in-process, with DIR as its cache), timing it
   and taking its peak resident memory (getrusage of the child).
2. Reports tags, tag x file pairs, distinct contents, chunks, vectors and the store's size on disk.
3. Exports the files of COMPONENT@latest (`git archive` of its tag, within its scope) into a folder,
   indexes that as a working tree in the same cache, starts `lgrep serve`, and times the same queries
   in-process (ProjectSearchers) and through the daemon (gRPC), the two alternating per query.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

QUERIES = [
    "how does the agent loop call tools",
    "retry a failed request with backoff",
    "take a screenshot of the screen",
    "parse the command line arguments",
    "where is the model provider configured",
    "send keyboard and mouse input",
    "start the http server",
    "handle a websocket message",
    "load settings from environment variables",
    "tests for the computer interface",
]


def _cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lgrep_cli", *args], env=env, capture_output=True, text=True, check=check
    )


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", type=Path)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--config", type=Path)
    ap.add_argument("--component", default="agent")
    ap.add_argument("--skip-index", action="store_true", help="use the index already in the cache")
    ap.add_argument("--queries", type=int, default=10, help="rounds of the query list")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_")}
    env.update({"LGREP_CACHE_DIR": str(args.cache), "LGREP_SERVER__AUTOSTART": "0"})
    if args.config:
        env["LGREP_CONFIG"] = str(args.config)
    out: dict[str, object] = {}

    if not args.skip_index:
        started = time.monotonic()
        run = _cli(env, "index", "--tags", str(args.repo), "--json")
        out["index_seconds"] = round(time.monotonic() - started, 1)
        out["index_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
        out["summary"] = json.loads(run.stdout)
    again_started = time.monotonic()
    again = json.loads(_cli(env, "index", "--tags", str(args.repo), "--json").stdout)
    out["rerun_seconds"] = round(time.monotonic() - again_started, 1)
    out["rerun"] = {k: again[k] for k in ("tags_indexed", "blobs_read", "vectors_embedded")}
    totals = {
        k: again[k] for k in ("tags_total", "tag_file_pairs_total", "blobs_total", "chunks_total", "vectors_total")
    }
    out["totals"] = totals
    store = Path(again["store"])
    out["store_mb"] = round(_du(store) / 2**20, 1)
    out["ratios"] = {
        "pairs_per_stored_content": round(totals["tag_file_pairs_total"] / max(totals["blobs_total"], 1), 1),
    }

    # A version-scoped query against a working tree of the same files.
    versions = json.loads(_cli(env, "versions", args.component, str(args.repo), "--json").stdout)["versions"]
    latest = versions[0]
    files = json.loads(
        _cli(
            env, "files", str(args.repo), "--component", args.component, "--version", latest["version"], "--json"
        ).stdout
    )["files"]
    tree = Path(tempfile.mkdtemp(prefix="lgrep-tree-")) / f"{args.component}-{latest['version']}"
    tree.mkdir()
    paths = [f["path"] for f in files]
    archive = subprocess.run(
        ["git", f"--git-dir={_git_dir(args.repo)}", "archive", "--format=tar", latest["tag"], "--", *paths],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    _cli(env, "index", str(tree), "--json", "--no-daemon")
    out["compare"] = {"component": args.component, "version": latest["version"], "files": len(paths)}
    out["in_process"] = _in_process(env, args.repo, tree, args.component, latest["version"], args.queries)
    out["daemon"] = _through_daemon(env, args.repo, tree, args.component, latest["version"], args.queries)
    print(json.dumps(out, indent=2))
    return 0


def _git_dir(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--absolute-git-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _compare(version, tree, rounds: int) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    """First call of each (a version's snapshot is built on it), then warm calls, alternating the
    two per query so both see the same machine load."""
    out: dict[str, dict[str, float]] = {}
    times: dict[str, list[float]] = {"version": [], "working_tree": []}
    for name, fn in (("version", version), ("working_tree", tree)):
        t = time.perf_counter()
        fn(QUERIES[0])
        out[name] = {"first_ms": round((time.perf_counter() - t) * 1000, 1)}
    for _ in range(rounds):
        for q in QUERIES:
            for name, fn in (("version", version), ("working_tree", tree)):
                t = time.perf_counter()
                fn(q)
                times[name].append((time.perf_counter() - t) * 1000)
    for name, values in times.items():
        values.sort()
        out[name]["p50_ms"] = round(statistics.median(values), 2)
        out[name]["p95_ms"] = round(values[int(len(values) * 0.95) - 1], 2)
    return out


def _in_process(env: dict[str, str], repo: Path, tree: Path, component: str, version: str, rounds: int) -> dict:  # type: ignore[type-arg]
    os.environ.update(env)
    from lgrep_core.domain.models import SearchRequest
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.settings.config import load_settings
    from lgrep_search.projects import ProjectSearchers

    settings = load_settings(None, env=env).settings
    searchers = ProjectSearchers(settings, make_embedder(settings.embedding, settings.cache_dir), background=False)
    searchers.search(SearchRequest("warm the model", str(tree)))  # the model's first call
    return {
        **_compare(
            lambda q: searchers.search(SearchRequest(q, str(repo), component=component, version=version)),
            lambda q: searchers.search(SearchRequest(q, str(tree))),
            rounds,
        ),
        "version_chunks": searchers.search(
            SearchRequest("x", str(repo), component=component, version=version)
        ).chunks_searched,
        "working_tree_chunks": searchers.search(SearchRequest("x", str(tree))).chunks_searched,
    }


def _through_daemon(env: dict[str, str], repo: Path, tree: Path, component: str, version: str, rounds: int) -> dict:  # type: ignore[type-arg]
    from lgrep_core.domain.models import SearchRequest
    from lgrep_core.rpc.client import LgrepClient

    socket_dir = Path(tempfile.mkdtemp(prefix="lgb-", dir="/tmp"))
    denv = {**env, "LGREP_SERVER__SOCKET": str(socket_dir / "s.sock")}
    serve = subprocess.Popen([sys.executable, "-m", "lgrep_cli", "serve"], env=denv, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (socket_dir / "s.sock").exists():
            if time.monotonic() > deadline or serve.poll() is not None:
                raise SystemExit("lgrep serve did not start")
            time.sleep(0.1)
        with LgrepClient.connect(socket_path=socket_dir / "s.sock") as client:
            client.call(SearchRequest("warm the model", str(tree)))
            return _compare(
                lambda q: client.call(SearchRequest(q, str(repo), component=component, version=version)),
                lambda q: client.call(SearchRequest(q, str(tree))),
                rounds,
            )
    finally:
        serve.terminate()
        serve.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
