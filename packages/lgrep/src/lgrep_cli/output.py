"""What the `lgrep` command prints, the same whether the answer came from the daemon or from this
process: human text (terminal-safe) on stdout, notes on stderr, or one JSON object with --json."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from lgrep_core.app.cli_support import terminal_safe
from lgrep_core.app.serialize import project_status_json, projects_search_json, search_response_json, tags_summary_json
from lgrep_core.app.shapes import PublishJSON, ReceiptsJSON, ReceiptSumsJSON
from lgrep_core.domain.models import (
    FileHit,
    IndexPhase,
    IndexProgress,
    IndexSummary,
    ProjectState,
    ProjectStatus,
    SearchHit,
    SearchResponse,
    SeedReport,
    TagsSummary,
    TraceResult,
)

if TYPE_CHECKING:
    from pathlib import Path

    from lgrep_core.app.api import ProjectsOutcome
    from lgrep_core.domain.models import ServerInfo
    from lgrep_index.plan import IndexPlan
    from lgrep_index.publish import PublishSummary

__all__ = [
    "plan_json",
    "print_plan",
    "print_projects_search",
    "print_search",
    "print_spend_warnings",
    "print_stats",
    "print_status",
    "print_summary",
    "print_trace",
    "printable",
    "progress_bar",
    "server_info_json",
]

# Human search output: the first lines of each result, each cut to a terminal's width.
HUMAN_SNIPPET_LINES = 6
HUMAN_LINE_CHARS = 160

printable = terminal_safe


# ------------------------------------------------------------------------------------- search


def print_search(
    response: SearchResponse, *, query: str, root: str, as_json: bool, explain: bool, files: bool = False
) -> None:
    if as_json:
        payload = search_response_json(response, query=query, root=root, explain=explain)
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    if response.release is not None:
        print(f"searched {printable(response.release.label)} (tag {printable(response.release.tag)})", file=sys.stderr)
    if files:
        _print_files([("", hit) for hit in response.files], explain=explain)
    elif not response.results:
        print("no results", file=sys.stderr)
    elif response.files:  # a task question: the files to open lead, their best chunks follow
        _print_files([("", hit) for hit in response.files], explain=explain)
        print()
    for hit in response.results:
        _print_hit("", hit, explain=explain)
    _print_notes(response)


def print_projects_search(outcome: ProjectsOutcome, *, query: str, as_json: bool, explain: bool, files: bool) -> None:
    """One question asked of several projects: one ranking, each result led by its project's name
    (`[name] path:lines`; the names and their folders are listed on stderr first)."""
    if as_json:
        print(json.dumps(projects_search_json(outcome, query=query, explain=explain), indent=2, ensure_ascii=False))
        return
    names = project_labels([o.scope.project for o in outcome.outcomes])
    for o in outcome.outcomes:
        within = f" (kept to {printable(o.scope.within)})" if o.scope.within else ""
        print(f"[{printable(names[o.scope.project])}] {printable(str(o.scope.project))}{within}", file=sys.stderr)
    if files:
        _print_files([(f"[{printable(names[p])}] ", hit) for p, hit in outcome.files], explain=explain)
    elif not outcome.results:
        print("no results", file=sys.stderr)
    for project, hit in outcome.results:
        _print_hit(f"[{printable(names[project])}] ", hit, explain=explain)
    for o in outcome.outcomes:
        if o.response is not None:
            _print_notes(o.response, f"{printable(names[o.scope.project])}: ")


def project_labels(projects: Sequence[Path]) -> dict[Path, str]:
    """A short name for each project: its folder's name, with as many parent folders as it takes
    to tell projects of the same name apart."""
    depth = 1
    while True:
        labels = {p: "/".join(p.parts[-depth:]) for p in projects}
        if len(set(labels.values())) == len(labels) or depth >= max(len(p.parts) for p in projects):
            return labels
        depth += 1


def _print_hit(lead: str, hit: SearchHit, *, explain: bool) -> None:
    where = f"{printable(hit.path)}:{hit.start_line}-{hit.end_line}"
    kind = hit.kind.value if hit.kind is not None else "?"
    label = f"{printable(hit.symbol)} ({kind})" if hit.symbol else f"({kind})"
    flag = "  [changed on disk]" if hit.stale else ""
    print(f"{lead}{where}  {label}  score={hit.score:.4f}  via {hit.match_label}{flag}")
    if explain:
        print("    " + ", ".join(f"{k}={v:g}" for k, v in sorted(hit.scores.items())))
        if hit.why:
            print("    why: " + printable("; ".join(hit.why)))
    lines = hit.content.splitlines()
    for line in lines[:HUMAN_SNIPPET_LINES]:
        shown = printable(line[:HUMAN_LINE_CHARS], keep_tabs=True)
        print(f"    {shown}{' …' if len(line) > HUMAN_LINE_CHARS else ''}")
    if len(lines) > HUMAN_SNIPPET_LINES or hit.truncated:
        print(f"    … (lines {hit.start_line}-{hit.end_line}; --json shows more)")
    print()


def _print_notes(response: SearchResponse, lead: str = "") -> None:
    if response.vectors_pending:
        print(
            f"note: {lead}{response.vectors_pending} chunks still wait for vectors; results use BM25 for those",
            file=sys.stderr,
        )
    for note in response.notes:
        print(f"note: {lead}{printable(note)}", file=sys.stderr)


def _print_files(files: Sequence[tuple[str, FileHit]], *, explain: bool) -> None:
    """A files answer, a few lines a file: the file (led by its project's name when several
    answered) and its score, then the lines to read first as `path:start-end (symbol)`, which
    terminals and editors open at the line."""
    if not files:
        print("no files", file=sys.stderr)
    for lead, hit in files:
        flag = "  [changed on disk]" if hit.stale else ""
        print(f"{lead}{printable(hit.path)}  score={hit.score:.4f}{flag}")
        for r in hit.ranges:
            label = f" ({printable(r.symbol)})" if r.symbol else ""
            print(f"    {printable(hit.path)}:{r.start_line}-{r.end_line}{label}")
        if explain and hit.why:
            print("    why: " + printable("; ".join(hit.why)))


# ------------------------------------------------------------------------------------ indexing


def print_summary(summary: IndexSummary, *, background: bool) -> None:
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(summary.skipped.items()))
    lines = [
        f"indexed {printable(summary.root)}",
        f"  files    {summary.files_seen} seen, {summary.files_indexed} (re)indexed, "
        f"{summary.files_unchanged} unchanged, {summary.files_deleted} removed"
        + (f"; skipped: {skipped}" if skipped else ""),
        f"  chunks   {summary.chunks_total} in the index ({summary.chunks_written} written)",
        f"  vectors  {summary.vectors_embedded} embedded, {summary.vectors_pending} pending"
        + (" (filling in the background)" if background and summary.vectors_pending else ""),
        f"  time     {summary.seconds_bm25:.2f} s to BM25-searchable, {summary.seconds_vectors:.2f} s embedding",
    ]
    if summary.tokens_billed:
        lines.append(f"  billed   {summary.tokens_billed:,} tokens by the cloud embedding provider")
    if summary.seed is not None:
        lines.append(f"  seeded   {describe_seed(summary.seed)}")
    print("\n".join(lines), file=sys.stderr)


def describe_seed(seed: SeedReport) -> str:
    """One line: where the vectors came from, or why the team store did not give them."""
    if seed.reason:
        return f"no: {printable(seed.refused)} (built locally)"
    age = max(0.0, time.time() - seed.published_at) if seed.published_at else 0.0
    when = (
        f"{age / 60:.0f} min" if age < 7200 else (f"{age / 3600:.0f} h" if age < 172800 else f"{age / 86400:.0f} days")
    )
    overlaid = f"{seed.files_overlaid} file{'' if seed.files_overlaid == 1 else 's'} overlaid locally"
    return (
        f"from {printable(seed.store)} ({printable(seed.repository)} at {seed.commit[:12]}, published {when} ago): "
        f"{seed.vectors_copied:,} vectors, {seed.bytes_copied / 1e6:.1f} MB read; {overlaid}"
    )


def print_publish(summary: PublishSummary, *, as_json: bool) -> None:
    """What `lgrep publish` did (or, with --dry-run, would upload): JSON on stdout, or lines on stderr."""
    if as_json:
        print(json.dumps(publish_json(summary), indent=2, ensure_ascii=False))
        return
    verb = "would publish" if summary.dry_run else "published"
    lines = [
        f"{verb} {printable(summary.repository)} at {summary.commit[:12]} to {printable(summary.store)}",
        f"  files    {summary.files} ({summary.chunks} chunks, {summary.vectors} distinct vectors)",
        f"  upload   {summary.vectors_uploaded} vectors new to the store, {summary.bytes_uploaded / 1e6:.2f} MB",
    ]
    if not summary.dry_run:
        lines.append(
            f"  vectors  {summary.vectors_embedded} embedded here, {summary.vectors_from_store} taken from the store"
        )
        lines.append(f"  time     {summary.seconds:.2f} s; {summary.pruned} older publications pruned")
    if summary.local_changes or summary.untracked:
        lines.append(
            f"  note     HEAD's content only: {summary.local_changes} changed and {summary.untracked} untracked "
            "files of the working tree are not published"
        )
    if summary.skipped_paths:
        lines.append(
            f"  note     {summary.skipped_paths} files with names lgrep will not write ('..', '.git') left out"
        )
    if summary.dry_run:
        for planned in summary.planned:
            lines.append(f"    {printable(planned.path)}  {planned.chunks} chunks, {planned.new_vectors} new vectors")
    print("\n".join(lines), file=sys.stderr)


def publish_json(summary: PublishSummary) -> PublishJSON:
    out: PublishJSON = {
        "store": summary.store,
        "repository": summary.repository,
        "commit": summary.commit,
        "dry_run": summary.dry_run,
        "files": summary.files,
        "chunks": summary.chunks,
        "vectors": summary.vectors,
        "vectors_uploaded": summary.vectors_uploaded,
        "bytes_uploaded": summary.bytes_uploaded,
        "vectors_embedded": summary.vectors_embedded,
        "vectors_from_store": summary.vectors_from_store,
        "local_changes_not_published": summary.local_changes,
        "untracked_not_published": summary.untracked,
        "pruned": summary.pruned,
        "seconds": round(summary.seconds, 3),
    }
    if summary.dry_run:
        out["planned"] = [{"path": p.path, "chunks": p.chunks, "new_vectors": p.new_vectors} for p in summary.planned]
    return out


def print_tags_summary(summary: TagsSummary, *, as_json: bool) -> None:
    """What `lgrep index --tags` did: JSON on stdout, or a few lines on stderr."""
    if as_json:
        payload = tags_summary_json(summary)
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(summary.skipped.items()))
    unparsed = ", ".join(printable(t) for t in summary.unparsed[:10]) + (" ..." if len(summary.unparsed) > 10 else "")
    lines = [
        f"indexed the tags of {printable(summary.root)}",
        f"  tags     {summary.tags_seen} seen, {summary.tags_indexed} indexed, {summary.tags_unchanged} unchanged, "
        f"{summary.tags_removed} removed" + (f"; not component@version: {unparsed}" if summary.unparsed else ""),
        f"  files    {summary.tag_file_pairs} tag x file pairs in this run, {summary.blobs_read} distinct contents read"
        + (f"; skipped: {skipped}" if skipped else ""),
        f"  chunks   {summary.chunks_written} written, {summary.vectors_embedded} embedded",
        f"  total    {summary.tags_total} tags, {summary.tag_file_pairs_total} tag x file pairs, "
        f"{summary.blobs_total} distinct contents, {summary.chunks_total} chunks, {summary.vectors_total} vectors",
        f"  time     {summary.seconds:.2f} s; index at {printable(summary.store)}",
    ]
    print("\n".join(lines), file=sys.stderr)


def plan_json(plan: IndexPlan) -> dict[str, Any]:
    return {
        "project_root": plan.root,
        "provider": plan.provider,
        "model": plan.model,
        "remote": plan.remote,
        "files": plan.files,
        "files_to_read": plan.files_to_read,
        "chunks_to_embed": plan.chunks_to_embed,
        "chunks_withheld": plan.chunks_withheld,
        "tokens_estimated": plan.tokens,
        "cost_usd_estimated": None if plan.cost_usd is None else round(plan.cost_usd, 6),
        "price_per_million_tokens": plan.price_per_million,
        "seconds_estimated": round(plan.seconds, 1),
        "rebuild": plan.rebuild,
        "note": plan.note,
        "sent": 0,
    }


def print_plan(plan: IndexPlan, *, as_json: bool, file: TextIO | None = None) -> None:
    """The plan of an indexing run (stdout, or `file`)."""
    out = file or sys.stdout
    if as_json:
        print(json.dumps(plan_json(plan), indent=2), file=out)
        return
    from lgrep_core.storage.spend import format_usd

    sent = plan.chunks_to_embed - plan.chunks_withheld
    lines = [
        f"plan for {printable(plan.root)} (nothing has been sent)",
        f"  files    {plan.files:,} ({plan.files_to_read:,} new or changed, to read and chunk)",
        f"  chunks   {plan.chunks_to_embed:,} to embed"
        + (" (everything: a new index)" if plan.rebuild and plan.chunks_to_embed else "")
        + (f"; {plan.chunks_withheld:,} not sent (a secret even after redaction)" if plan.chunks_withheld else ""),
    ]
    if not plan.remote:
        lines.append(
            f"  cost     none: {printable(plan.provider)}/{printable(plan.model)} runs on this machine, nothing "
            "is sent or billed"
        )
    else:
        lines.append(
            f"  tokens   ~{plan.tokens or 0:,} in {sent:,} chunks to {printable(plan.provider)} "
            "(the provider's estimate; the bill may differ by about 25%)"
        )
        if plan.cost_usd is not None and plan.price_per_million is not None:
            lines.append(
                f"  cost     ~{format_usd(plan.cost_usd)} at {format_usd(plan.price_per_million)} per million tokens "
                f"({printable(plan.model)})"
            )
        else:
            lines.append(
                f"  cost     unknown: no price for {printable(plan.model)} (set spend.prices in your config file)"
            )
    lines.append(f"  time     ~{_duration_words(plan.seconds)} to embed (rough)")
    if plan.note:
        lines.append(f"  note     {printable(plan.note)}")
    print("\n".join(lines), file=out)


def _duration_words(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[IndexProgress], None]]:
    """A callback that draws indexing progress on stderr (nothing when disabled or not a terminal).
    The bar appears with the first event it shows, not before: a question asked first (the spend
    gate) or a note printed first reaches the terminal as plain text, never under a live display."""
    if not enabled:
        yield lambda event: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict[IndexPhase, TaskID] = {}
    started: dict[IndexPhase, float] = {}

    def on_progress(p: IndexProgress) -> None:
        if p.phase is None or p.phase in (IndexPhase.WALK, IndexPhase.DONE):
            return
        if not tasks:
            bar.start()
        now = time.monotonic()
        if p.phase not in tasks:
            label = {IndexPhase.CHUNK: "chunking files", IndexPhase.SEED: "copying vectors from the team store"}.get(
                p.phase, "embedding chunks"
            )
            tasks[p.phase] = bar.add_task(label, total=None, rate="")
            started[p.phase] = now
        elapsed = max(now - started[p.phase], 1e-6)
        if p.phase is IndexPhase.CHUNK:
            rate = f"{p.chunks_done / elapsed:,.0f} chunks/s"
            bar.update(tasks[p.phase], completed=p.files_done, total=p.files_total, rate=rate)
        else:
            rate = f"{p.chunks_done / elapsed:,.1f} chunks/s"
            bar.update(tasks[p.phase], completed=p.chunks_done, total=p.chunks_total, rate=rate)

    try:
        yield on_progress
    finally:
        if tasks:
            bar.stop()


# -------------------------------------------------------------------------------------- status


def print_status(status: ProjectStatus, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(project_status_json(status), indent=2))
        return
    print(printable(status.project_root))
    if status.state is not ProjectState.READY:
        state = status.state.value if status.state is not None else "unknown"
        print(f"  state     {state}: {printable(status.detail)}")
        _print_spend(status)
        return
    langs = ", ".join(f"{k} {v}" for k, v in list(status.languages.items())[:8])
    print(f"  index     {printable(status.index_dir)}")
    print(f"  files     {status.files} ({langs})")
    print(f"  chunks    {status.chunks}, {status.vectors_pending} waiting for vectors")
    print(f"  model     {status.provider}/{status.model} ({status.dimension} d)")
    print(f"  indexed   {status.last_indexed.isoformat() if status.last_indexed else 'never'}")
    if status.seed is not None:
        print(f"  seeded    {describe_seed(status.seed)}")
    c = status.changes
    if c is not None:
        print(f"  changed   {c.total} files since ({c.added} added, {c.modified} modified, {c.deleted} deleted)")
    leases = status.watch_leases
    held = f"{leases} agent{'s' if leases != 1 else ''} (MCP servers) keep it watched" if leases else ""
    if status.watched:
        print(f"  watched   yes: the daemon re-indexes changes as they happen{'; ' + held if held else ''}")
    elif leases:
        print(f"  watched   no, though {held.replace(' keep it watched', ' hold a lease')}: `lgrep watch` starts it")
    _print_spend(status)


def _print_spend(status: ProjectStatus) -> None:
    from lgrep_core.storage.spend import describe_spend

    if status.project_spend is not None:
        print(f"  spend     {describe_spend(status.project_spend)} (this project)")
    if status.total_spend is not None:
        print(f"  total     {describe_spend(status.total_spend)} (every project)")
    print_spend_warnings(status.spend_warnings)


def print_spend_warnings(warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"lgrep: warning: {printable(warning)}", file=sys.stderr)


def print_trace(result: TraceResult, *, symbol: str, path: Path, limit: int) -> None:
    """A trace as lines: the definitions, then callers and callees by depth, each edge with its
    call site and how it was resolved."""
    defs = result.definitions
    if result.ambiguous:
        print(f"{printable(symbol)} has {len(defs)} definitions; trace one of them:")
        for d in defs:
            print(f"  {printable(d.path)}:{d.start_line}  {printable('.'.join(d.scope) or d.symbol)}")
        print(f"(lgrep trace {printable(symbol)} --in PATH, or a qualified name such as Class.{printable(symbol)})")
        return
    for d in defs:
        kind = d.kind.value if d.kind is not None else "?"
        print(f"{printable('.'.join(d.scope) or d.symbol)} ({kind}) {printable(d.path)}:{d.start_line}-{d.end_line}")
    if not result.edges:
        print("  no callers or callees found" if not result.total else "")
    current = None
    for e in sorted(result.edges, key=lambda e: e.direction.value):  # this page's callers, then its callees
        if e.direction != current:
            current = e.direction
            print(f"{e.direction.value}:")
        indent = "  " * e.depth
        caller = printable(".".join(e.caller.scope) or e.caller.symbol or "<top level>")
        if e.callee is not None:
            callee = printable(".".join(e.callee.scope) or e.callee.symbol)
            target = f"{callee}  {printable(e.callee.path)}:{e.callee.start_line}"
            if e.candidates:
                target += f" (or {len(e.candidates) - 1} other of that name)"
        else:
            target = f"? {len(e.candidates)} definitions of that name (--json lists them)"
        sites = f" ({e.sites} sites)" if e.sites > 1 else ""
        print(f"{indent}{printable(e.path)}:{e.line}  {caller} -> {target}  [{e.resolution.value}]{sites}")
    if result.next_offset:
        more = result.total - result.next_offset
        print(f"... {more} more: lgrep trace {printable(symbol)} {printable(str(path))} --offset {result.next_offset}")


def server_info_json(info: ServerInfo) -> dict[str, Any]:
    """The daemon's ServerInfo as `lgrep serve --status --json` and `lgrep doctor --json` print it."""
    from dataclasses import asdict

    fields = asdict(info)
    fields["started_at"] = info.started_at.isoformat() if info.started_at else None
    fields["roles"] = [role.value for role in info.roles]
    fields["watched_projects"] = list(info.watched_projects)
    return fields


# ---------------------------------------------------------------------------------------- stats


def print_stats(stats: ReceiptsJSON) -> None:
    """`lgrep stats`: per project, a line per MCP client and the project's total; then per client
    across projects when there are several projects (`stats` is lgrep_core.app.serialize.receipts_json);
    its notes (a damaged ledger file) on stderr."""
    for note in stats["notes"]:
        print(f"note: {printable(note)}", file=sys.stderr)
    if not stats["projects"]:
        print("no receipts yet: they are kept as agents call lgrep's MCP tools", file=sys.stderr)
        return
    header = f"  {'client':<24} {'calls':>7} {'returned':>11} {'files read whole':>16} {'saved':>11}"
    for project in stats["projects"]:
        print(printable(project["project_root"]))
        print(header)
        for name, sums in project["clients"].items():
            print(_stats_row(name, sums))
        if len(project["clients"]) > 1:
            print(_stats_row("(all clients)", project))
    if len(stats["projects"]) > 1:
        print("every project")
        print(header)
        for name, sums in stats["clients"].items():
            print(_stats_row(name, sums))
        print(_stats_row("(all)", stats["total"]))
    print(f"tokens: {stats['tokenizer']}; saved = the files' tokens less the answers'", file=sys.stderr)


def _stats_row(name: str, sums: ReceiptSumsJSON) -> str:
    share = f" ({sums['saved'] / sums['file_tokens']:.0%})" if sums["file_tokens"] > 0 else ""
    return (
        f"  {printable(name)[:24]:<24} {sums['calls']:>7,} {sums['tokens_returned']:>11,} "
        f"{sums['file_tokens']:>16,} {sums['saved']:>11,}{share}"
    )
