"""A tool call that indexes: an index run through lgrep's application API until the project is
searchable or the wait is over, reporting progress to the client meanwhile, and saying how far a
run is."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import anyio.to_thread
from lgrep_core.domain.errors import DeadlineExceededError
from lgrep_core.domain.models import IndexProgress, IndexSummary
from mcp.server.mcpserver import Context

from .app import App

__all__ = ["index_for", "progress_reporter", "progress_words"]

log = logging.getLogger("lgrep.mcp")


async def index_for(
    app: App, project: Path, ctx: Context | None, *, force: bool = False, wait_s: float
) -> IndexSummary | IndexProgress | None:
    """Index `project` until it is searchable by BM25 (vectors follow in the daemon), reporting
    progress to the client, for at most `wait_s` seconds: then the last progress event (or None)
    is returned and the run goes on in the daemon. The indexer finishes an interrupted first
    index and rebuilds one an older lgrep wrote. A cancelled call stops waiting at once (the run,
    which other agents may be waiting for too, goes on)."""
    last: list[IndexProgress] = []
    report = progress_reporter(ctx)

    def seen(event: IndexProgress) -> None:
        last[:] = [event]
        report(event)

    def run() -> IndexSummary | IndexProgress | None:
        try:
            return app.lgrep.index(project, force=force, wait_vectors=False, progress=seen, timeout=wait_s)
        except DeadlineExceededError:
            return last[0] if last else None

    return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)


def progress_reporter(ctx: Context | None) -> Callable[[IndexProgress], None]:
    """A progress callback that tells the client (from a worker thread), or does nothing."""

    def report(event: IndexProgress) -> None:
        if ctx is not None and event.files_total:
            _progress(ctx, event)

    return report


def progress_words(event: IndexProgress | None) -> str:
    if event is None:
        return "queued"
    phase = event.phase.value if event.phase is not None else "working"
    done, total, what = (
        (event.chunks_done, event.chunks_total, "chunks")
        if event.chunks_total
        else (event.files_done, event.files_total, "files")
    )
    eta = f", about {event.eta_seconds:.0f} s left" if event.eta_seconds else ""
    return f"{phase}: {done:,}/{total:,} {what}{eta}" if total else phase


def _progress(ctx: Context, event: IndexProgress) -> None:
    import anyio.from_thread

    phase = event.phase.value if event.phase is not None else "working"
    done, total = (
        (event.chunks_done, event.chunks_total) if event.chunks_total else (event.files_done, event.files_total)
    )
    try:
        anyio.from_thread.run(lambda: ctx.report_progress(done, total or None, f"{phase}: {done}/{total}"))
    except Exception:  # progress is a courtesy: a client that went away must not fail the index
        log.debug("progress notification failed", exc_info=True)
