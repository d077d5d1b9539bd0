"""A tool call that indexes: running the daemon's index stream until the project is searchable or the
wait is over, reporting progress to the client meanwhile, and saying how far a run is."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio.to_thread
from lgrep_core.errors import DeadlineExceededError, LgrepError
from lgrep_core.models import IndexProgress, IndexSummary
from mcp.server.mcpserver import Context

from .app import App

__all__ = ["index_for", "progress_json", "progress_words"]

log = logging.getLogger("lgrep.mcp")


async def index_for(
    app: App, project: Path, ctx: Context | None, *, force: bool = False, wait_s: float
) -> IndexSummary | IndexProgress | None:
    """Index `project` until it is searchable by BM25 (vectors follow in the daemon), reporting
    progress to the client, for at most `wait_s` seconds: then the last progress event (or None)
    is returned and the run goes on in the daemon. The indexer finishes an interrupted first
    index and rebuilds one an older lgrep wrote. A cancelled call stops waiting at once (the run,
    which other agents may be waiting for too, goes on)."""
    streams: list[Any] = []

    def run(client: Any) -> IndexSummary | IndexProgress | None:
        last: IndexProgress | None = None
        stream = client.index(project, force=force, wait_vectors=False, timeout=wait_s)
        streams.append(stream)
        try:
            for event in stream:
                if isinstance(event, IndexSummary):
                    return event
                if isinstance(event, IndexProgress):
                    last = event
                    if ctx is not None and event.files_total:
                        _progress(ctx, event)
        except DeadlineExceededError:
            return last
        raise LgrepError(f"indexing {project} ended without a summary")  # the client raises first

    try:
        return await anyio.to_thread.run_sync(lambda: app.link.call(run), abandon_on_cancel=True)
    finally:
        for stream in streams:
            stream.cancel()  # a no-op once it ended; on a cancelled call it ends the wait now


def progress_json(event: IndexProgress | None) -> dict[str, Any]:
    if event is None:
        return {"phase": "queued", "files_done": 0, "files_total": 0, "chunks_done": 0, "chunks_total": 0}
    return {
        "phase": event.phase.value if event.phase is not None else "working",
        "files_done": event.files_done,
        "files_total": event.files_total,
        "chunks_done": event.chunks_done,
        "chunks_total": event.chunks_total,
        "eta_seconds": event.eta_seconds,
    }


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
