"""Speed and memory of the local MiniLM provider on real code chunks.

Usage: uv run python tools/bench_embed.py [--source DIR] [--chunks N] [--lines 40] [--variants int8,fp32]

Chunks are windows of --lines lines from the .py files under --source (default: this interpreter's
site-packages), taken in sorted path order so runs are comparable. Every measurement runs in a fresh
subprocess so that its peak RSS (getrusage ru_maxrss) is its own: first the one-time graph build in
an empty cache dir, then one process per variant that loads the cached graph and embeds the chunks
--repeat times. Shared CPUs make single runs noisy (up to 3x here), hence best and median.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path


def collect_chunks(source: Path, count: int, lines: int) -> list[str]:
    chunks: list[str] = []
    for path in sorted(source.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        file_lines = text.splitlines()
        for start in range(0, len(file_lines), lines):
            window = "\n".join(file_lines[start : start + lines])
            if len(window.strip()) >= 200:  # skip near-empty tails and tiny files
                chunks.append(window)
                if len(chunks) == count:
                    return chunks
    return chunks


def peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024  # bytes on macOS, KiB on Linux


def worker_build(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.embeddings.local import LocalMiniLMProvider

    started = time.perf_counter()
    # int8 first: its build writes the fp32 graph too, so this times building both files.
    LocalMiniLMProvider(args.cache_dir, quantized=True).embed_documents([""])
    return {"phase": "build", "seconds": time.perf_counter() - started, "peak_rss_mb": peak_rss_mb()}


def worker_embed(args: argparse.Namespace) -> dict[str, object]:
    from lgrep_core.embeddings.local import LocalMiniLMProvider

    chunks = collect_chunks(args.source, args.chunks, args.lines)
    provider = LocalMiniLMProvider(
        args.cache_dir, quantized=args.variant == "int8", threads=args.threads, batch_tokens=args.batch_tokens
    )
    started = time.perf_counter()
    provider.embed_documents(chunks[:8])  # loads the session and warms the thread pool
    load_s = time.perf_counter() - started
    tokens = [min(n, provider.max_tokens) for n in provider.count_tokens(chunks)]
    rates: list[float] = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        vectors = provider.embed_documents(chunks)
        rates.append(len(chunks) / (time.perf_counter() - started))
        assert vectors.shape == (len(chunks), provider.dimension)
    return {
        "phase": "embed",
        "variant": args.variant,
        "chunks": len(chunks),
        "chunks_per_s": max(rates),
        "chunks_per_s_median": statistics.median(rates),
        "tokens_per_s": max(rates) * statistics.fmean(tokens),
        "tokens_mean": statistics.fmean(tokens),
        "tokens_median": statistics.median(tokens),
        "share_at_max": sum(t == provider.max_tokens for t in tokens) / len(tokens),
        "max_tokens": provider.max_tokens,
        "first_call_s": load_s,
        "peak_rss_mb": peak_rss_mb(),
    }


def run_worker(args: argparse.Namespace, phase: str, variant: str = "int8") -> dict[str, object]:
    command = [
        sys.executable,
        __file__,
        "--worker",
        phase,
        "--variant",
        variant,
        "--source",
        str(args.source),
        "--chunks",
        str(args.chunks),
        "--lines",
        str(args.lines),
        "--cache-dir",
        str(args.cache_dir),
        "--batch-tokens",
        str(args.batch_tokens),
        "--repeat",
        str(args.repeat),
    ]
    if args.threads:
        command += ["--threads", str(args.threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"worker {phase}/{variant} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["purelib"]))
    parser.add_argument("--chunks", type=int, default=256)
    parser.add_argument("--lines", type=int, default=40)
    parser.add_argument("--variants", default="int8,fp32")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3, help="embed the chunks this often; best and median")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: a fresh temporary dir")
    parser.add_argument("--worker", choices=["build", "embed"], help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="int8", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        result = worker_build(args) if args.worker == "build" else worker_embed(args)
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory(prefix="lgrep-bench-") as tmp:
        if args.cache_dir is None:
            args.cache_dir = Path(tmp)
        build = run_worker(args, "build")
        print(
            f"graph build (fp32 + int8, first use of {args.cache_dir}): {build['seconds']:.1f} s, "
            f"peak RSS {build['peak_rss_mb']:.0f} MB"
        )
        for variant in args.variants.split(","):
            r = run_worker(args, "embed", variant)
            print(
                f"{variant}: {r['chunks']} chunks of {args.lines} lines, tokens mean {r['tokens_mean']:.0f} "
                f"median {r['tokens_median']:.0f} ({r['share_at_max']:.0%} cut at {r['max_tokens']}): "
                f"{r['chunks_per_s']:.1f} chunks/s best of {args.repeat} "
                f"(median {r['chunks_per_s_median']:.1f}), "
                f"{r['tokens_per_s']:.0f} tokens/s, "
                f"first call {r['first_call_s']:.2f} s, peak RSS {r['peak_rss_mb']:.0f} MB"
            )


if __name__ == "__main__":
    main()
