"""A cold index of a big tree through the daemon, as a user meets it: time to the first answer
(BM25), the embedding rate and the ETA the progress stream gives along the way, the daemon's memory,
and how quickly a cancel takes effect.

    uv run --frozen python tools/bench_bigtree.py --repo /tmp/big100k [--seconds 900] [--out big.json]

It starts its own `lgrep serve` on a fresh cache dir (tools/bench_service.py's Daemon; the model is
linked from --models), asks it to index --repo and follows the stream. Once the project is searchable
by BM25 it runs `lgrep search` as a user would and times it. Every --sample seconds it records the
chunks embedded, the rate, the ETA and the finish time that ETA predicts, and the daemon's RSS. After
--seconds (or at the end of the run, if sooner) it runs `lgrep index --cancel` and times how long the
stream takes to end. A tree whose vectors take hours is measured over a window: the report gives the
projected time to full vectors from the rate seen, and how much the predicted finish moved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_service import BIN, Daemon


def _cli(daemon: Daemon, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "lgrep"), *args], check=False, env=daemon.env, capture_output=True, text=True, timeout=600
    )
    return time.perf_counter() - started, proc


def run(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.domain.errors import IndexingError
    from lgrep_core.domain.models import IndexPhase, IndexProgress, IndexProjectRequest, IndexSummary

    repo = args.repo.resolve()
    daemon = Daemon(args.models, args.cache)
    samples: list[dict[str, Any]] = []
    result: dict[str, object] = {"repo": str(repo)}
    peak_rss = 0.0
    try:
        daemon.start()
        t0 = time.monotonic()
        with daemon.client() as client:
            stream = client.index(IndexProjectRequest(str(repo)))
            last_sample = 0.0
            searchable_at: float | None = None
            summary: IndexSummary | None = None
            cancel_sent: float | None = None
            cancel_cli: dict[str, object] = {}

            def cancel() -> None:
                seconds, proc = _cli(daemon, "index", "--cancel", str(repo))
                cancel_cli.update(seconds=round(seconds, 2), rc=proc.returncode, out=(proc.stdout + proc.stderr)[-300:])

            canceller: threading.Thread | None = None
            ending = ""
            events = iter(stream)
            while True:
                try:
                    event = next(events)
                except StopIteration:
                    break
                except IndexingError as exc:  # what a cancelled run's stream ends with
                    ending = exc.message
                    break
                now = time.monotonic() - t0
                if isinstance(event, IndexSummary):
                    summary = event
                    break
                if not isinstance(event, IndexProgress):
                    continue
                if searchable_at is None and event.phase in (IndexPhase.EMBED, IndexPhase.DONE):
                    searchable_at = now
                    seconds, proc = _cli(
                        daemon, "search", "--json", "-n", "5", "parse the configuration file", str(repo)
                    )
                    result["first_answer"] = {
                        "index_seconds": round(now, 1),
                        "search_cli_seconds": round(seconds, 2),
                        "rc": proc.returncode,
                        "hits": len(json.loads(proc.stdout).get("results", [])) if proc.returncode == 0 else 0,
                        "chunks_total": event.chunks_total,
                        "files_total": event.files_total,
                    }
                if now - last_sample >= args.sample:
                    last_sample = now
                    rss, peak = daemon.rss_mb()
                    peak_rss = max(peak_rss, peak)
                    eta = event.eta_seconds
                    samples.append(
                        {
                            "t": round(now, 1),
                            "phase": str(event.phase),
                            "files_done": event.files_done,
                            "files_total": event.files_total,
                            "chunks_done": event.chunks_done,
                            "chunks_total": event.chunks_total,
                            "rate": round(event.rate, 1),
                            "eta": round(eta, 1) if eta is not None else -1,
                            "predicted_finish": round(now + eta, 1) if eta is not None else -1,
                            "rss_mb": round(rss, 1),
                        }
                    )
                    print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
                if cancel_sent is None and now >= args.seconds:
                    cancel_sent = now
                    canceller = threading.Thread(target=cancel)
                    canceller.start()
            ended = time.monotonic() - t0
            if canceller is not None:
                canceller.join()
        rss, peak = daemon.rss_mb()
        peak_rss = max(peak_rss, peak)
        embed = [s for s in samples if s["phase"] == str(IndexPhase.EMBED) and s["chunks_done"] > 0]
        finishes = [s["predicted_finish"] for s in embed if s["predicted_finish"] > 0]
        result.update(
            samples=samples,
            summary={
                "chunks_total": summary.chunks_total if summary else None,
                "vectors_embedded": summary.vectors_embedded if summary else None,
                "vectors_pending": summary.vectors_pending if summary else None,
                "seconds_bm25": summary.seconds_bm25 if summary else None,
                "seconds_vectors": summary.seconds_vectors if summary else None,
            },
            cancel={
                "sent_at": round(cancel_sent, 1) if cancel_sent is not None else None,
                "stream_ended_after": round(ended - cancel_sent, 2) if cancel_sent is not None else None,
                "cli": cancel_cli,
                "stream_ended_with": ending,
            },
            embedding={
                "chunks_per_s_last": embed[-1]["rate"] if embed else None,
                "projected_full_vectors_s": round(statistics.median(finishes), 1) if finishes else None,
                "predicted_finish_spread_s": round(max(finishes) - min(finishes), 1) if len(finishes) > 1 else None,
                "predicted_finish_first_last": [finishes[0], finishes[-1]] if finishes else None,
            },
            rss_mb={"peak": round(peak_rss, 1), "after": round(rss, 1)},
        )
        return result
    finally:
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--models", type=Path, default=Path("~/.cache/lgrep/models").expanduser())
    parser.add_argument("--cache", type=Path, help="cache dir to use and keep (default: a fresh one, removed)")
    parser.add_argument("--seconds", type=float, default=900.0, help="cancel the run after this long")
    parser.add_argument("--sample", type=float, default=15.0, help="seconds between samples")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = {"date": time.strftime("%Y-%m-%d %H:%M"), **run(args)}
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
