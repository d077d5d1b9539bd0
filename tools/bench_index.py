"""Indexing benchmark: time to BM25-searchable, time to complete vectors, rates, peak RSS, and the
cost of re-indexing after one changed file.

Each measurement runs `lgrep index --json` in its own process with a fresh cache dir, so peak RSS is
that run's alone. Usage:

    uv run --frozen python tools/bench_index.py /work/bench/checkouts/flask /work/bench/laravel-full ...
        [--no-vectors] [--touch RELPATH]

Prints one JSON line per repository and a Markdown table at the end (for docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_MEASURE = r"""
import json, resource, subprocess, sys, time
t0 = time.monotonic()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.monotonic() - t0
rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": proc.returncode, "wall": wall, "rss_mb": rss_kb / 1024, "stdout": proc.stdout,
                  "stderr": proc.stderr[-2000:]}))
"""


def _run(args: list[str], env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, env=env, check=True)
    result = json.loads(out.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result['stderr']}")
    result["summary"] = json.loads(result["stdout"])
    return result


def _pick_file(root: Path, summary_root: str) -> Path:
    for path in sorted(root.rglob("*")):
        if (
            path.is_file()
            and path.suffix in {".py", ".rs", ".php", ".go", ".ts", ".js", ".java"}
            and ".git" not in path.parts
        ):
            return path
    raise SystemExit(f"no source file to touch under {summary_root}")


def bench(root: Path, *, vectors: bool, touch: str | None) -> dict[str, object]:
    cache = Path(tempfile.mkdtemp(prefix="lgrep-bench-"))
    (cache / "none.yaml").touch()  # an empty user config: the defaults
    env = {**os.environ, "LGREP_CACHE_DIR": str(cache), "LGREP_CONFIG": str(cache / "none.yaml")}
    # The model graph is built once per cache dir; build it outside the measured run.
    models = Path(os.environ.get("LGREP_BENCH_MODELS", Path(tempfile.gettempdir()) / "lgrep-bench-models"))
    models.mkdir(parents=True, exist_ok=True)
    (cache / "models").symlink_to(models, target_is_directory=True)
    cmd = [sys.executable, "-m", "lgrep_cli", "index", str(root), "--json", "--quiet", "--no-daemon"]
    try:
        full = _run(cmd + ([] if vectors else ["--no-wait"]), env)
        s = full["summary"]
        assert isinstance(s, dict)
        row: dict[str, object] = {
            "repo": root.name,
            "files": s["files_seen"],
            "chunks": s["chunks_total"],
            "bm25_s": s["seconds_bm25"],
            "vectors_s": s["seconds_vectors"],
            "wall_s": round(float(full["wall"]), 2),  # type: ignore[arg-type]
            "files_per_s_bm25": round(s["files_seen"] / max(s["seconds_bm25"], 1e-9), 1),
            "chunks_per_s_bm25": round(s["chunks_total"] / max(s["seconds_bm25"], 1e-9), 1),
            "chunks_per_s_embed": round(s["vectors_embedded"] / s["seconds_vectors"], 1)
            if s["seconds_vectors"]
            else None,
            "peak_rss_mb": round(float(full["rss_mb"]), 1),  # type: ignore[arg-type]
        }
        if vectors:
            target = root / touch if touch else _pick_file(root, str(root))
            original = target.read_bytes()
            try:
                target.write_bytes(
                    original + b"\n// lgrep benchmark edit\n"
                    if target.suffix != ".py"
                    else original + b"\n# lgrep benchmark edit\n"
                )
                inc = _run(cmd, env)
                si = inc["summary"]
                assert isinstance(si, dict)
                row["incremental_file"] = str(target.relative_to(root))
                row["incremental_index_s"] = round(si["seconds_bm25"] + si["seconds_vectors"], 3)
                row["incremental_wall_s"] = round(float(inc["wall"]), 2)  # type: ignore[arg-type]
                row["incremental_vectors"] = si["vectors_embedded"]
            finally:
                target.write_bytes(original)
                os.utime(target)
        return row
    finally:
        _stop_background_indexers(cache)
        shutil.rmtree(cache, ignore_errors=True)


def _stop_background_indexers(cache: Path) -> None:
    """`--no-wait` leaves a vector filler running, which would load the cores during the next
    measurement: stop it. It runs with its project's index folder, inside `cache`, as working
    directory (Linux: /proc/PID/cwd)."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "cwd").readlink().is_relative_to(cache):
                os.kill(int(proc.name), signal.SIGTERM)
        except (OSError, ValueError):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--no-vectors", action="store_true", help="measure the BM25 phase only")
    parser.add_argument("--touch", help="relative path of the file to change for the incremental run")
    args = parser.parse_args()
    rows = []
    for root in args.roots:
        started = time.monotonic()
        row = bench(root.resolve(), vectors=not args.no_vectors, touch=args.touch)
        row["bench_s"] = round(time.monotonic() - started, 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
    keys = list(rows[0])
    print("\n| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")


if __name__ == "__main__":
    main()
