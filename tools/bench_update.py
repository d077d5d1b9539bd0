"""One changed file: `Indexer.update` (what the watcher's batches go through) against a full incremental
`Indexer.run`, on a copy of a real repository, with the embedded model (vectors included).

    uv run --frozen python tools/bench_update.py /tmp/sdists/Django-5.1.4/django --runs 7 \
        [--file db/models/query.py] [--cache /tmp/lgrep-bench-update] [--no-vectors]

The repository is copied to a temporary folder first (the benchmark edits a file); the first index is
built once per cache folder and reused. Each round appends a new function to the chosen file (so its
new chunk, and the file's anchor if it changes, are embedded) and measures, in turn:

- `run`: `Indexer.run()`: walk, compare with the manifest, re-chunk the file, embed;
- `update`: `Indexer.update(ChangeBatch(changed={file}))`;
- `watched`: from the write to the end of `update()` when a `ProjectWatcher` delivers the batch
  (debounce included): what the daemon's writer achieves;
- `run-nothing`: `Indexer.run()` with nothing changed (the walk and scans alone).

Prints one JSON line per mode (median, min, max seconds) and a Markdown table.

`--touch-counts 100,1000,2000` also measures many paths at once (what decides `MAX_BATCH_PATHS`): N
indexed files get a new mtime (same content: each is read and hashed, none re-chunked), then
`update` with those N paths and `run` are timed.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--file", help="path (relative to the root) of the file to edit; default: the largest .py")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "lgrep-bench-update")
    parser.add_argument("--no-vectors", action="store_true", help="measure the BM25 phase only")
    parser.add_argument("--touch-counts", default="", help="comma-separated numbers of files to touch at once")
    args = parser.parse_args()

    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.settings.config import load_settings
    from lgrep_core.testing import FakeEmbedder
    from lgrep_index.changes import ChangeBatch
    from lgrep_index.pipeline import Indexer, walk_options
    from lgrep_index.walker import walk
    from lgrep_index.watch.watcher import ProjectWatcher

    source = args.root.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    work = args.cache / f"repo-{source.name}"
    if not work.is_dir():
        shutil.copytree(source, work, symlinks=True)
    (args.cache / "none.yaml").touch()
    settings = load_settings(
        work, env={"LGREP_CACHE_DIR": str(args.cache / "index")}, user_config=args.cache / "none.yaml"
    ).settings
    embedder = FakeEmbedder() if args.no_vectors else make_embedder(settings.embedding, args.cache / "models")
    indexer = Indexer(settings, work, embedder)
    wait = not args.no_vectors

    started = time.monotonic()
    first = indexer.run(wait_vectors=wait)
    print(
        json.dumps(
            {
                "repo": source.name,
                "files": first.files_seen,
                "chunks": first.chunks_total,
                "first_index_s": round(time.monotonic() - started, 1),
                "created": first.created,
            }
        ),
        flush=True,
    )

    rel = (
        args.file
        or max((p for p in work.rglob("*.py") if p.is_file() and "/." not in str(p)), key=lambda p: p.stat().st_size)
        .relative_to(work)
        .as_posix()
    )
    target = work / rel

    def edit() -> None:
        n = time.time_ns()  # new content every time: its chunk has no stored vector yet
        with target.open("a") as f:
            f.write(f"\n\ndef lgrep_bench_edit_{n}(value):\n    '''Benchmark edit {n}.'''\n    return value + {n}\n")

    times: dict[str, list[float]] = {"run": [], "update": [], "watched": [], "run-nothing": []}
    embedded: dict[str, list[int]] = {k: [] for k in times}

    def timed(mode: str, action: Callable[[], object]) -> None:
        t0 = time.perf_counter()
        summary = action()
        times[mode].append(time.perf_counter() - t0)
        embedded[mode].append(getattr(summary, "vectors_embedded", 0))

    done: queue.Queue[tuple[float, int]] = queue.Queue()

    def on_batch(batch: ChangeBatch) -> None:
        summary = indexer.update(batch, wait_vectors=wait)
        done.put((time.perf_counter(), summary.vectors_embedded))

    for _ in range(args.runs):
        edit()
        timed("run", lambda: indexer.run(wait_vectors=wait))
        edit()
        timed("update", lambda: indexer.update(ChangeBatch(changed=frozenset({rel})), wait_vectors=wait))
        timed("run-nothing", lambda: indexer.run(wait_vectors=wait))
        with ProjectWatcher(work, walk_options(settings), on_batch):
            t0 = time.perf_counter()
            edit()
            t1, vectors = done.get(timeout=60)
            times["watched"].append(t1 - t0)
            embedded["watched"].append(vectors)

    indexed = [f.path for f in walk(work, walk_options(settings))]
    for count in (int(c) for c in args.touch_counts.split(",") if c):
        chosen = indexed[:: max(1, len(indexed) // count)][:count]  # spread over the tree
        batch = ChangeBatch(changed=frozenset(chosen))

        def touch(paths: list[str]) -> None:
            for path in paths:
                os.utime(work / path)

        for mode in (f"update-{count}-touched", f"run-{count}-touched"):
            times[mode], embedded[mode] = [], []
        for _ in range(args.runs):
            touch(chosen)
            timed(f"update-{count}-touched", lambda b=batch: indexer.update(b, wait_vectors=wait))
            touch(chosen)
            timed(f"run-{count}-touched", lambda: indexer.run(wait_vectors=wait))

    rows = []
    for mode, values in times.items():
        row = {
            "mode": mode,
            "file": rel,
            "median_s": round(statistics.median(values), 3),
            "min_s": round(min(values), 3),
            "max_s": round(max(values), 3),
            "vectors_embedded": statistics.median(embedded[mode]),
            "runs": len(values),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("\n| mode | median (s) | min (s) | max (s) | vectors embedded |", file=sys.stdout)
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['mode']} | {row['median_s']} | {row['min_s']} | {row['max_s']} | {row['vectors_embedded']} |")


if __name__ == "__main__":
    main()
