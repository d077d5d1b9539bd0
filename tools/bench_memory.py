"""Memory of indexing as the repository grows: resident memory sampled through a whole run.

    uv run --frozen python tools/bench_memory.py curve --repo TREE [--stand-in] [--cache DIR] [--out F.json]

`curve` runs the indexing pipeline in this process as `lgrep index --no-daemon` does (heap arenas
capped first, the configured local model, a fresh cache dir with the model graph linked from
--models), samples RSS every 0.25 s in a thread, and reports the peak, the RSS at every 10k chunks of
each phase (chunks written, then chunks embedded) and the slope from start to end in MB per 10k
chunks: what grows with the repository shows as a slope, what does not as a flat line.

`--stand-in` swaps the model for a stand-in embedder (random unit vectors, no model, ~50k chunks/s):
the model's share is constant (its arena, ~125 MB), so growth in the store and pipeline shows in
minutes instead of the half hour the real model takes for 150k chunks.

The daemon's side (a long-lived process indexing many projects) is `tools/bench_service.py soak`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

STEP = 10_000


class StandIn:
    """An embedder without a model: random unit vectors of the local model's shape, at once."""

    provider = "local"
    model = "all-MiniLM-L6-v2"
    variant = "int8"  # the index's identity is the local model's, so a daemon serves it (memory only!)
    dimension = 384

    def __init__(self) -> None:
        self._rng = np.random.default_rng(7)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        v = self._rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def _rss_mb() -> float:
    from lgrep_core.runtime.memory import rss_bytes

    return rss_bytes() / 2**20


def cmd_curve(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.runtime.memory import limit_heap_arenas

    limit_heap_arenas()  # as `lgrep index --no-daemon` does, before any native thread starts
    cache = args.cache or Path(tempfile.mkdtemp(prefix="lgm-", dir="/tmp"))
    cache.mkdir(parents=True, exist_ok=True)
    if args.models.is_dir() and not (cache / "models").exists():
        (cache / "models").symlink_to(args.models, target_is_directory=True)
    os.environ["LGREP_CACHE_DIR"] = str(cache)
    (cache / "none.yaml").touch()
    os.environ["LGREP_CONFIG"] = str(cache / "none.yaml")

    from lgrep_core.domain.models import IndexPhase, IndexProgress
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.settings.config import load_settings
    from lgrep_index.pipeline import Indexer

    settings = load_settings(args.repo.resolve()).settings
    embedder = StandIn() if args.stand_in else make_embedder(settings.embedding, settings.cache_dir)
    state = {"phase": "start", "chunks": 0}
    samples: list[tuple[float, float, str, int]] = []
    t0 = time.monotonic()

    def on_progress(p: IndexProgress) -> None:
        phase = p.phase.value if isinstance(p.phase, IndexPhase) else str(p.phase)
        if phase != state["phase"] or p.chunks_done // STEP != int(state["chunks"]) // STEP:
            since = [
                r
                for _t, r, ph, c in samples[-400:]
                if ph == state["phase"] and c // STEP == int(state["chunks"]) // STEP
            ]
            print(
                f"{time.monotonic() - t0:7.1f}s {phase} {p.chunks_done} chunks {_rss_mb():.0f} MB"
                f" (the step before: peak {max(since, default=0.0):.0f} MB)",
                file=sys.stderr,
                flush=True,
            )
        state["phase"] = phase
        state["chunks"] = p.chunks_done

    done = threading.Event()

    def sampler() -> None:
        while not done.is_set():
            samples.append((time.monotonic() - t0, _rss_mb(), str(state["phase"]), int(state["chunks"])))
            done.wait(args.every)

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    summary = Indexer(settings, args.repo.resolve(), embedder, progress=on_progress).run()
    done.set()
    thread.join()
    samples.append((time.monotonic() - t0, _rss_mb(), "done", 0))
    return {
        "repo": str(args.repo),
        "embedder": "stand-in" if args.stand_in else "local model",
        "files": summary.files_seen,
        "chunks": summary.chunks_total,
        "vectors_embedded": summary.vectors_embedded,
        "seconds": round(time.monotonic() - t0, 1),
        "seconds_bm25": round(summary.seconds_bm25, 1),
        "seconds_vectors": round(summary.seconds_vectors, 1),
        "peak_mb": round(max(s[1] for s in samples)),
        "phases": {phase: _phase_curve([s for s in samples if s[2] == phase]) for phase in ("chunk", "embed")},
        "samples": [(round(t, 2), round(r, 1), p, c) for t, r, p, c in samples] if args.samples else len(samples),
    }


def _phase_curve(samples: list[tuple[float, float, str, int]]) -> dict[str, object]:
    """RSS (the most of the samples) in each 10k-chunk step of a phase, and the start-to-end slope."""
    if not samples:
        return {}
    steps: dict[int, float] = {}
    for _t, rss, _p, chunks in samples:
        step = chunks // STEP
        steps[step] = max(steps.get(step, 0.0), rss)
    first, last = samples[0], samples[-1]
    span = max(last[3] - first[3], 1)
    rss_first = min(s[1] for s in samples[: max(1, len(samples) // 10)])
    return {
        "rss_mb_by_10k": {f"{k * STEP // 1000}k": round(v) for k, v in sorted(steps.items())},
        "start_mb": round(rss_first),
        "end_mb": round(last[1]),
        "peak_mb": round(max(s[1] for s in samples)),
        "mb_per_10k_chunks": round((last[1] - rss_first) * STEP / span, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["curve"])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--stand-in", action="store_true", help="random vectors instead of the model")
    parser.add_argument("--models", type=Path, default=Path("~/.cache/lgrep/models").expanduser())
    parser.add_argument("--cache", type=Path, help="cache dir (default: a fresh one under /tmp, kept)")
    parser.add_argument("--every", type=float, default=0.25, help="seconds between RSS samples")
    parser.add_argument("--samples", action="store_true", help="include every sample in the output")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = {"mode": args.mode, "date": time.strftime("%Y-%m-%d %H:%M"), "load": os.getloadavg(), **cmd_curve(args)}
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        args.out.write_text(text)
    sys.exit(0)


if __name__ == "__main__":
    main()
