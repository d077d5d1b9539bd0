"""Peak memory and time of the local model's first-use graph build, in a fresh process per run.

    uv run --frozen python tools/bench_model_build.py [--runs 3] [--variant int8] [--steps] [--capped]
                                                      [--keep DIR]

Each run starts a process that builds the graph(s) into an empty cache dir (`ensure_models`, what the
first index on a new machine does) and reports its RSS before the build, its peak RSS (VmHWM from
/proc/self/status), the build's seconds, and the peak of its child processes (getrusage
RUSAGE_CHILDREN: a build that ran part of its work in a helper process would show there; libc's
lookup, a subprocess, is done before the build). --capped caps the heap arenas first, as `lgrep
index` and the daemon do. With --steps the build's steps are wrapped and VmHWM is reset as each starts
and ends (/proc/self/clear_refs), which gives each step's own peak: the largest is where the process
peaks. --keep DIR keeps the last run's cache dir (to compare its graphs with another build's).
Linux only (/proc). Timings on a shared machine vary: repeat them (--runs).
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:  # noqa: PTH123
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    return 0


class _Steps:
    """The peak RSS of each wrapped step, exact: VmHWM is reset (/proc/self/clear_refs, "5") when a
    step starts and read when it ends, and a nested step's peak counts for the step around it."""

    def __init__(self) -> None:
        self.peaks: dict[str, int] = {}
        self._stack: list[tuple[str, int]] = [("(whole build)", 0)]
        self._calls: dict[str, int] = {}

    def _fold(self) -> None:
        label, peak = self._stack[-1]
        self._stack[-1] = (label, max(peak, _status_kb("VmHWM")))

    def _reset(self) -> None:
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")

    def enter(self, label: str) -> None:
        self._fold()
        path = f"{self._stack[-1][0]} > {label}" if len(self._stack) > 1 else label
        self._calls[path] = self._calls.get(path, 0) + 1
        if self._calls[path] > 1:  # the second call of a step is a step of its own
            path = f"{path} #{self._calls[path]}"
        self._stack.append((path, 0))
        self._reset()

    def leave(self) -> None:
        self._fold()
        label, peak = self._stack.pop()
        self.peaks[label] = max(self.peaks.get(label, 0), peak)
        self._stack[-1] = (self._stack[-1][0], max(self._stack[-1][1], peak))
        self._reset()

    def finish(self) -> int:
        self._fold()
        label, peak = self._stack[0]
        self.peaks[label] = peak
        return max(self.peaks.values())

    def wrap(self, owner: Any, name: str) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return

        @functools.wraps(original)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.enter(name)
            try:
                return original(*args, **kwargs)
            finally:
                self.leave()

        setattr(owner, name, wrapped)


def worker(cache_dir: Path, variant: str, steps: bool, capped: bool) -> dict[str, Any]:
    tracker = _Steps()
    from lgrep_core.runtime.memory import limit_heap_arenas, release_free_heap

    if capped:
        limit_heap_arenas()  # as the indexer (`lgrep index`, the daemon) does before anything else
    release_free_heap()  # looks up libc now (a subprocess), as a process that indexes has already done
    import onnx
    import safetensors.numpy
    from lgrep_core.embeddings.minilm import cache, files
    from lgrep_core.embeddings.minilm import quantize as quantizer

    if steps:
        for owner, names in (
            (
                cache,
                (
                    "build_graph",
                    "write_calibration_graph",
                    "calibration_session",
                    "calibrate",
                    "smoothing_scales",
                    "quantize",
                    "_publish",
                    "_build_int8",
                    "_restore_tables",
                    "release_free_heap",
                ),
            ),
            (quantizer, ("quantize_dynamic",)),
            (onnx, ("save_model", "load_model", "load")),
            (safetensors.numpy, ("load_file",)),
        ):
            for name in names:
                tracker.wrap(owner, name)
    weights = files.weights_dir()
    rss_before = _status_kb("VmRSS")
    started = time.perf_counter()
    path = cache.ensure_models(cache_dir, weights, variant)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    # With --steps VmHWM was reset along the way: the process's peak is the largest step's.
    peak_kb = tracker.finish() if steps else _status_kb("VmHWM")
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "graph": path.name,
        "seconds": round(seconds, 2),
        "rss_before_mb": round(rss_before / 1024),
        "peak_rss_mb": round(peak_kb / 1024),
        "rss_after_mb": round(_status_kb("VmRSS") / 1024),
        "children_peak_rss_mb": round(children / 1024),
        "steps_peak_rss_mb": {k: round(v / 1024) for k, v in sorted(tracker.peaks.items(), key=lambda kv: -kv[1])},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variant", choices=("int8", "fp32"), default="int8")
    parser.add_argument("--steps", action="store_true", help="sample RSS per build step (slightly slower)")
    parser.add_argument("--keep", type=Path, help="keep the last run's cache dir here")
    parser.add_argument("--capped", action="store_true", help="cap the heap arenas first, as the indexer does")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.variant, args.steps, args.capped)))
        return
    results: list[dict[str, Any]] = []
    for run in range(args.runs):
        root = Path(tempfile.mkdtemp(prefix="lgrep-model-build-"))
        command = [sys.executable, __file__, "--worker", str(root / "models"), "--variant", args.variant]
        command += ["--steps"] if args.steps else []
        command += ["--capped"] if args.capped else []
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        results.append(result)
        print(json.dumps({"run": run + 1, **result}), flush=True)
        if args.keep is not None and run == args.runs - 1:
            shutil.rmtree(args.keep, ignore_errors=True)
            shutil.copytree(root / "models", args.keep)
        shutil.rmtree(root, ignore_errors=True)
    seconds = sorted(r["seconds"] for r in results)
    print(
        json.dumps(
            {
                "runs": len(results),
                "peak_rss_mb_max": max(r["peak_rss_mb"] for r in results),
                "children_peak_rss_mb_max": max(r["children_peak_rss_mb"] for r in results),
                "seconds_best": seconds[0],
                "seconds_median": seconds[len(seconds) // 2],
            }
        )
    )


if __name__ == "__main__":
    main()
