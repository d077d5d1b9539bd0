"""The `lgrep` command: index, search, status, clean, config."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lgrep_core.config import LgrepSettings, LoadedSettings, load_settings
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.embeddings.registry import make_embedder
from lgrep_core.errors import LgrepError, NotFoundError
from lgrep_core.models import ContentType, IndexPhase, IndexProgress, IndexSummary, SearchRequest, SearchType
from lgrep_core.serialize import search_response_json
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.storage.store import IndexState, ProjectStore
from lgrep_index.pipeline import Indexer, identity_for, walk_options
from lgrep_index.walker import walk
from lgrep_search.searcher import Searcher
from lgrep_search.snapshot import Snapshots

__all__ = ["main"]

log = logging.getLogger("lgrep")

# Human search output: the first lines of each result, each cut to a terminal's width.
HUMAN_SNIPPET_LINES = 6
HUMAN_LINE_CHARS = 160
# How long a search that has to build the index first waits for another process building it.
SEARCH_BUILD_WAIT_S = 3600.0

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for grep or git cut off by `head`


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Every failure ends as a one-line `lgrep: error: ...` on stderr and an exit
    code, never a traceback (run with -v, or LGREP_LOG_LEVEL=DEBUG, to log one)."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`lgrep search ... | head`): stop quietly, as grep and git do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    # argparse gives an optional positional its (empty) turn before the first option, so in
    # `lgrep search QUERY --type bm25 PATH` the PATH arrives unparsed: take it if the slot is free.
    if extra and getattr(args, "path", None) == "." and len(extra) == 1 and not extra[0].startswith("-"):
        args.path = extra.pop()
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        root = Path(getattr(args, "path", None) or ".").expanduser()
        loaded = load_settings(root.resolve() if root.is_dir() else None)
        _setup_logging(loaded.settings.log_level, getattr(args, "verbose", False))
        handler = _COMMANDS[args.command]
        return handler(args, loaded, root)
    except LgrepError as exc:
        print(f"lgrep: error: {_printable(exc.message)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("lgrep: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except OSError as exc:
        log.debug("file system error", exc_info=True)
        where = f": {exc.filename}" if exc.filename else ""
        print(f"lgrep: error: {_printable(str(exc.strerror or exc))}{_printable(str(where))}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        # A bug, not bad input: say so in one line; -v logs the traceback for a report.
        log.debug("unexpected error", exc_info=True)
        print(
            f"lgrep: internal error: {type(exc).__name__}: {_printable(str(exc))[:300]} "
            "(run with -v for details and report it)",
            file=sys.stderr,
        )
        return EXIT_ERROR


# ---------------------------------------------------------------------- parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lgrep", description="Local semantic code search for AI coding agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", help="index a project (incremental; only changed files are re-done)")
    p.add_argument("path", nargs="?", default=".", help="project root (default: current directory)")
    p.add_argument("--force", action="store_true", help="rebuild the index from scratch")
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="return once the project is searchable by BM25; vectors are filled in by a background process",
    )
    p.add_argument("--wait", type=_seconds, metavar="SECONDS", help="wait this long for another indexer of the project")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--vectors-only", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser("search", help="search a project's index")
    p.add_argument("query")
    p.add_argument("path", nargs="?", default=".", help="project root (default: current directory)")
    p.add_argument("-n", "--limit", type=_count, help="number of results (default: search.limit, 10)")
    p.add_argument(
        "--type",
        choices=[t.value for t in SearchType],
        default="hybrid",
        help="retrieval channels: hybrid (all, fused; default), vector, bm25 or fuzzy (symbol names)",
    )
    p.add_argument(
        "--path", dest="path_glob", metavar="GLOB", help="only files matching GLOB (src/**/*.py, *.go, src/auth)"
    )
    p.add_argument("--lang", metavar="L", help="only files in language L (python, go, typescript, ...)")
    p.add_argument("--content", choices=[t.value for t in ContentType], help="only code, docs, config or text files")
    p.add_argument("--bm25-weight", type=_weight, metavar="W", help="fixed BM25 weight in fusion (vector is 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--explain", action="store_true", help="show why each result ranked where it did")

    p = sub.add_parser("status", help="what the index of a project holds")
    p.add_argument("path", nargs="?", default=".")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("clean", help="delete the index of a project")
    p.add_argument("path", nargs="?", default=".")

    p = sub.add_parser("config", help="configuration")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION")
    show = csub.add_parser("show", help="print the effective settings and where each came from")
    show.add_argument("path", nargs="?", default=".")
    show.add_argument("--json", action="store_true")
    return parser


def _finite(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def _seconds(text: str) -> float:
    return _finite(text, "a number of seconds (0 or more)")


def _weight(text: str) -> float:
    return _finite(text, "a weight (a finite number, 0 or more)")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{value} is out of range (1 to 1000)")
    return value


# C0 and C1 control characters, DEL, and the Unicode bidirectional controls ("Trojan Source"):
# in a file name or a line of code they could move the cursor, recolour or rewrite the terminal, or
# make code read differently from what it is. Human output shows them escaped; tabs in code stay.
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _printable(text: str, *, keep_tabs: bool = False) -> str:
    """`text` with every character that a terminal would act on shown as an escape (\\x1b, \\n)."""
    out = _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)
    return out if keep_tabs else out.replace("\t", "\\t")


def _setup_logging(level: str, verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else getattr(logging, level),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )


# -------------------------------------------------------------------- commands


def _embedder(settings: LgrepSettings) -> EmbeddingProvider:
    return make_embedder(settings.embedding, settings.cache_dir)


def _project_root(root: Path) -> Path:
    if not root.is_dir():
        raise NotFoundError(f"{root} is not a directory")
    return root.resolve()


def cmd_index(args: argparse.Namespace, loaded: LoadedSettings, root: Path) -> int:
    settings = loaded.settings
    root = _project_root(root)
    show_progress = not args.quiet and not args.json and sys.stderr.isatty()
    summary = _run_index(
        settings,
        root,
        force=args.force,
        wait_vectors=not args.no_wait,
        lock_timeout_s=args.wait if args.wait is not None else (3600.0 if args.vectors_only else None),
        show_progress=show_progress,
    )
    if args.no_wait and summary.vectors_pending:
        _spawn_vector_filler(settings, root)
    if args.json:
        print(json.dumps(_summary_json(summary, settings), indent=2))
    elif not args.vectors_only:
        _print_summary(summary, background=args.no_wait)
    return EXIT_OK


def _run_index(
    settings: LgrepSettings,
    root: Path,
    *,
    force: bool = False,
    wait_vectors: bool = True,
    lock_timeout_s: float | None = None,
    show_progress: bool = True,
) -> IndexSummary:
    embedder = _embedder(settings)
    if not show_progress:
        return Indexer(settings, root, embedder).run(
            force=force, wait_vectors=wait_vectors, lock_timeout_s=lock_timeout_s
        )
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        tasks: dict[IndexPhase, TaskID] = {}
        started: dict[IndexPhase, float] = {}

        def on_progress(p: IndexProgress) -> None:
            if p.phase is None or p.phase in (IndexPhase.WALK, IndexPhase.DONE):
                return
            now = time.monotonic()
            if p.phase not in tasks:
                label = "chunking files" if p.phase is IndexPhase.CHUNK else "embedding chunks"
                tasks[p.phase] = bar.add_task(label, total=None, rate="")
                started[p.phase] = now
            elapsed = max(now - started[p.phase], 1e-6)
            if p.phase is IndexPhase.CHUNK:
                rate = f"{p.chunks_done / elapsed:,.0f} chunks/s"
                bar.update(tasks[p.phase], completed=p.files_done, total=p.files_total, rate=rate)
            else:
                rate = f"{p.chunks_done / elapsed:,.1f} chunks/s"
                bar.update(tasks[p.phase], completed=p.chunks_done, total=p.chunks_total, rate=rate)

        return Indexer(settings, root, embedder, progress=on_progress).run(
            force=force, wait_vectors=wait_vectors, lock_timeout_s=lock_timeout_s
        )


def _spawn_vector_filler(settings: LgrepSettings, root: Path) -> None:
    """Fill vectors in behind: a detached `lgrep index --vectors-only` that queues on the write lock.

    The child must never import from the project (an untrusted repository may hold a `lgrep_cli.py`
    or a `numpy.py`): `-P` keeps the working directory off `sys.path`, and the working directory is
    the project's index folder, which only lgrep writes, so not even a `.` in PYTHONPATH reaches it.
    """
    store = ProjectStore(settings.cache_dir, root)
    log_path = store.dir / "embed.log"
    with log_path.open("ab") as out:
        subprocess.Popen(
            [sys.executable, "-P", "-m", "lgrep_cli", "index", str(root), "--vectors-only", "--quiet"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            cwd=str(store.dir),
            env=os.environ.copy(),
        )


def _summary_json(summary: IndexSummary, settings: LgrepSettings) -> dict[str, Any]:
    return {
        "root": summary.root,
        "files": summary.files_seen,
        "files_indexed": summary.files_indexed,
        "files_unchanged": summary.files_unchanged,
        "files_deleted": summary.files_deleted,
        "files_skipped": dict(summary.skipped),
        "chunks_written": summary.chunks_written,
        "chunks": summary.chunks_total,
        "vectors_embedded": summary.vectors_embedded,
        "vectors_pending": summary.vectors_pending,
        "seconds_bm25": round(summary.seconds_bm25, 3),
        "seconds_vectors": round(summary.seconds_vectors, 3),
        "index_dir": str(ProjectStore(settings.cache_dir, Path(summary.root)).dir),
    }


def _print_summary(summary: IndexSummary, *, background: bool) -> None:
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(summary.skipped.items()))
    lines = [
        f"indexed {_printable(summary.root)}",
        f"  files    {summary.files_seen} seen, {summary.files_indexed} (re)indexed, "
        f"{summary.files_unchanged} unchanged, {summary.files_deleted} removed"
        + (f"; skipped: {skipped}" if skipped else ""),
        f"  chunks   {summary.chunks_total} in the index ({summary.chunks_written} written)",
        f"  vectors  {summary.vectors_embedded} embedded, {summary.vectors_pending} pending"
        + (" (filling in the background)" if background and summary.vectors_pending else ""),
        f"  time     {summary.seconds_bm25:.2f} s to BM25-searchable, {summary.seconds_vectors:.2f} s embedding",
    ]
    print("\n".join(lines), file=sys.stderr)


def cmd_search(args: argparse.Namespace, loaded: LoadedSettings, root: Path) -> int:
    settings = loaded.settings
    root = _project_root(root)
    store = ProjectStore(settings.cache_dir, root)
    state = store.state()
    if state is IndexState.BUILDING:
        store.open()  # raises the error that says who is building it
    if state is not IndexState.READY:
        why = {
            IndexState.INTERRUPTED: "its first index did not finish; finishing it first",
            IndexState.OUTDATED: "its index was written by an older lgrep; rebuilding it first",
        }.get(state, "has no index yet; building it first")
        print(f"lgrep: {_printable(str(root))} {why}", file=sys.stderr)
        # Another search may have started the same build a moment ago: queue behind it (its run
        # publishes the index; this one then only checks for changes) instead of failing.
        _run_index(settings, root, show_progress=sys.stderr.isatty(), lock_timeout_s=SEARCH_BUILD_WAIT_S)
    embedder = _embedder(settings)
    store.check_identity(identity_for(settings, embedder))
    searcher = Searcher(Snapshots(ProjectReader(settings.cache_dir, root), background=False), embedder)
    request = SearchRequest(
        query=args.query,
        project_root=str(root),
        limit=args.limit if args.limit is not None else settings.search.limit,
        search_type=SearchType(args.type),
        path_glob=args.path_glob,
        languages=(args.lang,) if args.lang else (),
        content_types=(ContentType(args.content),) if args.content else (),
        bm25_weight=args.bm25_weight if args.bm25_weight is not None else settings.search.bm25_weight,
        explain=args.explain,
    )
    response = searcher.search(request)
    if args.json:
        payload = search_response_json(response, query=args.query, root=str(root), explain=args.explain)
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return EXIT_OK
    if not response.results:
        print("no results", file=sys.stderr)
    for hit in response.results:
        where = f"{_printable(hit.path)}:{hit.start_line}-{hit.end_line}"
        kind = hit.kind.value if hit.kind is not None else "?"
        label = f"{_printable(hit.symbol)} ({kind})" if hit.symbol else f"({kind})"
        flag = "  [changed on disk]" if hit.stale else ""
        print(f"{where}  {label}  score={hit.score:.4f}  via {hit.match_label}{flag}")
        if args.explain:
            print("    " + ", ".join(f"{k}={v:g}" for k, v in sorted(hit.scores.items())))
            if hit.why:
                print("    why: " + _printable("; ".join(hit.why)))
        lines = hit.content.splitlines()
        for line in lines[:HUMAN_SNIPPET_LINES]:
            shown = _printable(line[:HUMAN_LINE_CHARS], keep_tabs=True)
            print(f"    {shown}{' …' if len(line) > HUMAN_LINE_CHARS else ''}")
        if len(lines) > HUMAN_SNIPPET_LINES or hit.truncated:
            print(f"    … (lines {hit.start_line}-{hit.end_line}; --json shows more)")
        print()
    if response.vectors_pending:
        print(
            f"note: {response.vectors_pending} chunks still wait for vectors; results use BM25 for those",
            file=sys.stderr,
        )
    return EXIT_OK


def cmd_status(args: argparse.Namespace, loaded: LoadedSettings, root: Path) -> int:
    settings = loaded.settings
    root = _project_root(root)
    store = ProjectStore(settings.cache_dir, root)
    state = store.state()
    if state is IndexState.ABSENT:
        store.open()  # raises: no index yet, and what to run
    if state is not IndexState.READY:
        return _status_not_ready(args, store, state)
    meta = store.read_meta()
    store.open()
    records = store.manifest_records()
    languages: dict[str, int] = {}
    for rec in records.values():
        languages[rec.language] = languages.get(rec.language, 0) + 1
    changed = _changes_since(settings, root, records)
    pending = store.count_pending_chunks()
    identity = meta.get("identity", {})
    last = meta.get("last_indexed_at")
    status = {
        "root": str(root),
        "state": state.value,
        "index_dir": str(store.dir),
        "files": len(records),
        "chunks": store.count_chunks(),
        "vectors_pending": pending,
        "languages": dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))),
        "provider": identity.get("provider"),
        "model": identity.get("model"),
        "dimension": identity.get("dimension"),
        "chunker_version": identity.get("chunker_version"),
        "last_indexed": datetime.fromtimestamp(last, UTC).isoformat() if last else None,
        "files_changed_since": changed,
    }
    if args.json:
        print(json.dumps(status, indent=2))
        return EXIT_OK
    langs = ", ".join(f"{k} {v}" for k, v in list(status["languages"].items())[:8])
    print(_printable(str(root)))
    print(f"  index     {_printable(str(store.dir))}")
    print(f"  files     {status['files']} ({langs})")
    print(f"  chunks    {status['chunks']}, {pending} waiting for vectors")
    print(f"  model     {status['provider']}/{status['model']} ({status['dimension']} d)")
    print(f"  indexed   {status['last_indexed'] or 'never'}")
    c = changed
    print(
        f"  changed   {c['total']} files since ({c['added']} added, {c['modified']} modified, {c['deleted']} deleted)"
    )
    return EXIT_OK


def _status_not_ready(args: argparse.Namespace, store: ProjectStore, state: IndexState) -> int:
    """`lgrep status` of a project that is not searchable yet: say why, and what to run."""
    try:
        store.open()
        detail = ""
    except LgrepError as exc:
        detail = exc.message
    if args.json:
        print(
            json.dumps({"root": str(store.root), "state": state.value, "index_dir": str(store.dir), "detail": detail})
        )
        return EXIT_OK
    print(_printable(str(store.root)))
    print(f"  state     {state.value}: {_printable(detail)}")
    return EXIT_OK


def _changes_since(settings: LgrepSettings, root: Path, records: dict[str, Any]) -> dict[str, int]:
    options = walk_options(settings)
    added = modified = 0
    seen: set[str] = set()
    for f in walk(root, options):
        seen.add(f.path)
        rec = records.get(f.path)
        if rec is None:
            added += 1
        elif rec.size != f.size or rec.mtime_ns != f.mtime_ns:
            modified += 1
    deleted = len(set(records) - seen)
    return {"added": added, "modified": modified, "deleted": deleted, "total": added + modified + deleted}


def cmd_clean(args: argparse.Namespace, loaded: LoadedSettings, root: Path) -> int:
    settings = loaded.settings
    store = ProjectStore(settings.cache_dir, root.expanduser())
    if not store.dir.exists():
        print(f"no index for {store.root}", file=sys.stderr)
        return EXIT_OK
    lock = store.lock()
    lock.acquire(
        0.0, store.root, doing="removing", advice=f"wait for it to finish, then run `lgrep clean {store.root}` again"
    )
    try:
        shutil.rmtree(store.dir)
    finally:
        lock.release()
    print(f"removed the index of {store.root} ({store.dir})", file=sys.stderr)
    return EXIT_OK


def cmd_config(args: argparse.Namespace, loaded: LoadedSettings, root: Path) -> int:
    if args.config_command != "show":
        print("usage: lgrep config show [PATH] [--json]", file=sys.stderr)
        return EXIT_USAGE
    rows = loaded.effective()
    if args.json:
        print(json.dumps({k: {"value": v, "source": s} for k, v, s in rows}, indent=2, default=str))
        return EXIT_OK
    width = max(len(k) for k, _, _ in rows)
    for key, value, source in rows:
        print(f"{key:<{width}}  {json.dumps(value, default=str):<28}  # {source}")
    return EXIT_OK


_COMMANDS = {
    "index": cmd_index,
    "search": cmd_search,
    "status": cmd_status,
    "clean": cmd_clean,
    "config": cmd_config,
}
