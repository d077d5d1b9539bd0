"""The `lgrep` command: index, search, status, stats, clean, watch, serve, config.

Each command parses its arguments, calls lgrep's application API (lgrep_core.app.api.Lgrep) and renders
the answer (.output); the policy (which project a folder belongs to, building an index first, asking
before a cloud provider spends money) lives in the API, shared with the MCP server. A command picks
the engine only: the daemon (`lgrep serve`, started when it is not running for the commands that do
work; status and clean use it only when it runs), so the model and the project's snapshot stay warm
between commands, or this process (`--no-daemon`, `server.autostart: false`, or when no daemon can
be started). This module imports nothing heavy: what a command needs is imported inside it.
"""

from __future__ import annotations

import gc
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from lgrep_core.app.cli_support import EXIT_OK, group, run_command, setup_logging
from lgrep_core.domain.engine import anchored
from lgrep_core.domain.errors import IndexBusyError, LgrepError
from lgrep_core.domain.models import (
    CancelIndexRequest,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    ListComponentsRequest,
    ListFilesRequest,
    ListVersionsRequest,
    RemoveProjectRequest,
    Request,
    SkeletonRequest,
    StatusRequest,
    TraceRequest,
    UnwatchProjectRequest,
    WatchProjectRequest,
)
from lgrep_core.rpc.endpoints import ClientSettings

from .shell import ask_to_spend, connect, make_app, note, settings_for

if TYPE_CHECKING:
    from lgrep_core.app.scope import Purpose, Scope
    from lgrep_core.domain.models import TagsSummary
    from lgrep_core.settings.config import LgrepSettings

__all__ = ["main"]

A = TypeVar("A")

SEARCH_TYPES = ("hybrid", "vector", "bm25", "fuzzy")
CONTENT_TYPES = ("code", "docs", "config", "text")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command, as the process's entry point (the `lgrep` script, `python -m lgrep_cli`). Every
    failure ends as a one-line `lgrep: error: ...` on stderr and an exit code, never a traceback (run
    with -v, or LGREP_LOG_LEVEL=DEBUG, to log one)."""
    code = run_command(cli, argv, prog="lgrep")
    # The process exits next: its objects go back to the OS with it. Freezing them spares the
    # interpreter's shutdown its collections over everything grpc, protobuf and click made, and the
    # teardown of grpc's objects in cycles: 15-30 ms of CPU, a tenth of a search through the daemon
    # (docs/benchmarks.md). atexit handlers, flushes and objects freed by reference count still run.
    gc.freeze()
    return code


# ---------------------------------------------------------------------------------- arguments


def _finite(what: str) -> Any:
    def convert(value: Any) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise click.BadParameter(f"{value!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise click.BadParameter(f"{value!r} is not {what}")
        return number

    return convert


_SECONDS = _finite("a number of seconds (0 or more)")
_WEIGHT = _finite("a weight (a finite number, 0 or more)")


def _ask(cs: ClientSettings, request: Request[A], *, no_daemon: bool, start: bool) -> A:
    """One use case's answer from the engine this command uses (lgrep_core.domain.engine.Engine.call). The
    request is checked first: a bad one is refused before a daemon is started or the model loaded."""
    request = anchored(request).validate()
    with make_app(cs, no_daemon=no_daemon, start=start) as app:
        return app.engine.call(request)


def _project(cs: ClientSettings, path: Path, purpose: Purpose, *, say: bool = True) -> Scope:
    """The project a command works on for the PATH it was given: lgrep_core.app.scope.project_for, the
    one rule for every command (and for the MCP server and the daemon), with the command's purpose.
    What it tells the user (a folder answered by the project around it) is said on stderr, unless
    the application API says it itself (`say=False`: a search)."""
    from lgrep_core.app.scope import Purpose, project_for

    store = settings_for(None).versions.store if purpose is Purpose.RELEASES else ""
    scope = project_for(Path(cs.cache_dir), path, purpose, versions_store=store)
    if say and scope.note:
        _note(scope.note)
    return scope


def _stdin_query() -> str:
    """The query `-` names: standard input, read up to one character past the query limit. A file
    piped by mistake (300 MB took 590 MB of memory) or a stream that never ends is refused once it
    passes the limit, without reading the rest. (A text stream's read(n) counts characters.)"""
    from lgrep_core.domain.errors import InvalidRequestError
    from lgrep_core.domain.models import MAX_QUERY_CHARS

    try:
        text = sys.stdin.read(MAX_QUERY_CHARS + 1)
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"standard input is not text in {exc.encoding}: give the query as text") from None
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidRequestError(
            f"the query on standard input is more than {MAX_QUERY_CHARS:,} characters long; the limit is "
            f"{MAX_QUERY_CHARS:,}: keep the task's words, its traceback and error messages, and leave out long logs "
            "and whole files"
        )
    return text


_note = note

no_daemon_option = click.option(
    "--no-daemon", is_flag=True, help="work in this process instead of through the lgrep daemon"
)


# Commands imported only when they run (or help lists them): a search does not pay for them.
_LAZY_COMMANDS = {
    "install": "lgrep_cli.install:install",
    "uninstall": "lgrep_cli.install:uninstall",
    "init": "lgrep_cli.install:init",
    "doctor": "lgrep_cli.doctor:doctor",
}


@group(context_settings={"help_option_names": ["-h", "--help"]}, lazy=_LAZY_COMMANDS)
@click.option("-v", "--verbose", is_flag=True, help="log progress details to stderr")
@click.version_option(package_name="lgrep", prog_name="lgrep", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """Local semantic code search for AI coding agents."""
    from lgrep_core.rpc.endpoints import client_settings

    cs = client_settings()
    setup_logging(cs.log_level, verbose)
    ctx.obj = cs


# -------------------------------------------------------------------------------------- index


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="rebuild the index from scratch")
@click.option(
    "--no-wait",
    is_flag=True,
    help="return once the project is searchable by BM25; vectors are filled in in the background",
)
@click.option("--wait", type=_SECONDS, metavar="SECONDS", help="wait this long for another indexer of the project")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar")
@click.option(
    "--plan",
    "show_plan",
    is_flag=True,
    help="print the files, chunks, tokens, cost and time indexing would take now, and send nothing",
)
@click.option(
    "-y",
    "--yes",
    is_flag=True,
    help="with a cloud embedding provider: go ahead without asking, even above spend.confirm_above_usd",
)
@click.option("--vectors-only", is_flag=True, hidden=True)
@click.option(
    "--cancel",
    is_flag=True,
    help="cancel the daemon's index runs of the project (what they committed stays; `lgrep index` goes on)",
)
@click.option("--tags", is_flag=True, help="index every release: git tags as component@version (no checkout)")
@click.option(
    "--tag-pattern",
    "tag_patterns",
    multiple=True,
    metavar="GLOB",
    help="with --tags: only tags matching GLOB; repeatable",
)
@no_daemon_option
@click.pass_obj
def index(
    cs: ClientSettings,
    path: Path,
    force: bool,
    no_wait: bool,
    wait: float | None,
    as_json: bool,
    quiet: bool,
    show_plan: bool,
    yes: bool,
    vectors_only: bool,
    cancel: bool,
    tags: bool,
    tag_patterns: tuple[str, ...],
    no_daemon: bool,
) -> int:
    """Index a project (incremental: only changed files are re-done).

    With a cloud embedding provider, a run estimated above spend.confirm_above_usd asks first
    (--yes does not; without a terminal to ask, it refuses). --plan shows the estimate only.

    With --tags, index the repository's releases instead: each git tag as component@version
    (agent-v0.7.3 is agent@0.7.3, v1.2.0 the root component's 1.2.0), each distinct file once.
    A re-run indexes only new or moved tags and drops deleted ones.

    Ctrl-C stops waiting and cancels the daemon's run unless another command waits for it too (a
    --no-wait run goes on in the background); --cancel cancels the daemon's runs of the project from
    any terminal. A cancelled run keeps what it committed: the next `lgrep index` goes on from there."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import indexed_json
    from lgrep_core.storage.layout import project_dir

    from . import output

    if cancel:
        if force or no_wait or show_plan or tags or vectors_only:
            raise click.UsageError("--cancel goes alone (with PATH)")
        return _cancel_index(cs, _project(cs, path, Purpose.CANCEL).project, no_daemon=no_daemon)
    root = _project(cs, path, Purpose.TAGS if tags else Purpose.INDEX).project
    settings = settings_for(root)
    if tag_patterns and not tags:
        raise click.UsageError("--tag-pattern goes with --tags")
    if tags:
        if show_plan or no_wait or vectors_only:
            raise click.UsageError("--tags indexes releases in this process; --plan and --no-wait do not apply")
        tag_summary = _index_tags(
            settings, root, force=force, tag_patterns=tag_patterns, wait=wait, yes=yes, quiet=quiet or as_json
        )
        output.print_tags_summary(tag_summary, as_json=as_json)
        return EXIT_OK
    if show_plan:
        from . import local

        output.print_plan(local.plan(settings, root, force=force), as_json=as_json)
        return EXIT_OK
    show_progress = not quiet and not as_json and sys.stderr.isatty()
    app = make_app(
        cs,
        no_daemon=no_daemon or vectors_only,
        start=True,
        lock_timeout_s=wait if wait is not None else (3600.0 if vectors_only else None),
        fill_behind=not vectors_only,
    )
    with app, output.progress_bar(show_progress) as on_progress:
        try:
            summary = app.index(
                root, force=force, wait_vectors=not no_wait, progress=on_progress, approved=yes or vectors_only
            )
        except KeyboardInterrupt:
            from lgrep_core.rpc.client import LgrepClient

            _note(_interrupted(root, through_daemon=isinstance(app.engine, LgrepClient), no_wait=no_wait))
            return EXIT_INTERRUPTED
    warnings = _spend_warnings(settings, root)
    if as_json:
        payload = indexed_json(summary, index_dir=str(project_dir(cs.cache_dir, root)), spend_warnings=warnings)
        print(json.dumps(payload, indent=2))
    elif not vectors_only:
        output.print_summary(summary, background=no_wait)
    output.print_spend_warnings(warnings)
    return EXIT_OK


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar")
@no_daemon_option
@click.pass_obj
def seed(cs: ClientSettings, path: Path, as_json: bool, quiet: bool, no_daemon: bool) -> int:
    """Index a project taking its vectors from the team store (team.store).

    Finds the publication whose commit is HEAD or its nearest ancestor, copies the vectors of the
    project's chunks it holds, and embeds only the rest (commits since, uncommitted and untracked
    files) with the local model. Chunks and text always come from your own files. A first index or
    search does this on its own when team.store is set; `lgrep seed` asks again, whatever the index
    holds. A store that cannot seed (unreachable, another model, nothing published for this
    history, damaged) is named with what to do, and the project is indexed locally."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import indexed_json
    from lgrep_core.domain.errors import ConfigError
    from lgrep_core.rpc.client import LgrepClient
    from lgrep_core.storage.layout import project_dir

    from . import output

    root = _project(cs, path, Purpose.INDEX).project
    settings = settings_for(root)
    if not settings.team.store:
        raise ConfigError(
            "no team store is set: set team.store (or LGREP_TEAM_STORE) to the s3:// prefix or folder your CI "
            "publishes to (`lgrep publish`)"
        )
    show_progress = not quiet and not as_json and sys.stderr.isatty()
    app = make_app(cs, no_daemon=no_daemon, start=True, lock_timeout_s=None, fill_behind=True)
    with app, output.progress_bar(show_progress) as on_progress:
        try:
            summary = app.index(root, progress=on_progress, seed=True)
        except KeyboardInterrupt:
            _note(_interrupted(root, through_daemon=isinstance(app.engine, LgrepClient), no_wait=False))
            return EXIT_INTERRUPTED
    if as_json:
        print(json.dumps(indexed_json(summary, index_dir=str(project_dir(cs.cache_dir, root))), indent=2))
    else:
        output.print_summary(summary, background=False)
    if summary.seed is None and isinstance(app.engine, LgrepClient):
        _note(
            "warning: the lgrep daemon has no team store set (it reads team.store from its own settings): "
            "restart it with `lgrep serve --stop` after setting it, or use --no-daemon"
        )
    elif summary.seed is not None and summary.seed.reason:
        _note(f"warning: not seeded: {summary.seed.refused}; the project was indexed locally")
    return EXIT_OK


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="list what would be uploaded (files, chunks, bytes) and upload nothing")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar")
@click.option(
    "--ray",
    "ray_address",
    metavar="ADDRESS",
    help="embed on this Ray cluster (host:port, or auto), one model per CPU; needs the ray extra",
)
@click.pass_obj
def publish(cs: ClientSettings, path: Path, dry_run: bool, as_json: bool, quiet: bool, ray_address: str | None) -> int:
    """Publish the repository's index at its HEAD commit to the team store (team.store), for CI.

    Publishes HEAD's content, read from git (uncommitted and untracked files are never published),
    indexed with the same ignore rules and secret redaction as any index. Uploads only vectors the
    store does not hold, then the publication (commit, model, checksums); prunes publications past
    team.keep. Members' first index then copies these vectors instead of embedding them. With
    --ray, a repository too big for one runner is embedded on a Ray cluster: the same publication."""
    from lgrep_core.app.scope import Purpose

    from . import local, output

    root = _project(cs, path, Purpose.INDEX).project
    settings = settings_for(root)
    with output.progress_bar(not quiet and not as_json and sys.stderr.isatty()) as on_progress:
        summary = local.publish(settings, root, dry_run=dry_run, progress=on_progress, ray_address=ray_address)
    output.print_publish(summary, as_json=as_json)
    return EXIT_OK


EXIT_INTERRUPTED = 130
# How long a search that has to build the index first queues, in this process, behind another
# process building it (the daemon queues its own runs).
SEARCH_BUILD_WAIT_S = 3600.0


def _index_tags(
    settings: LgrepSettings,
    root: Path,
    *,
    force: bool,
    tag_patterns: tuple[str, ...],
    wait: float | None,
    yes: bool,
    quiet: bool,
) -> TagsSummary:
    """`lgrep index --tags`: the releases, indexed in this process (the caller prints the summary)."""
    from . import local, output

    def approve(estimate: Any) -> bool:
        if yes:
            return True
        try:
            ask_to_spend(
                settings,
                estimate.provider,
                estimate.model,
                estimate.chunks,
                estimate.tokens,
                estimate.cost_usd,
                command="lgrep index --tags",
            )
        except LgrepError as exc:
            _note(f"error: {exc.message}")
            return False
        return True

    with output.progress_bar(not quiet and sys.stderr.isatty()) as on_progress:
        return local.index_tags(
            settings,
            root,
            force=force,
            tag_patterns=tag_patterns,
            lock_timeout_s=wait,
            progress=on_progress,
            approve=approve,
        )


def _interrupted(root: Path, *, through_daemon: bool, no_wait: bool) -> str:
    """What became of an index run whose command was interrupted (Ctrl-C)."""
    kept = f"what was indexed so far is kept, and `lgrep index {root}` goes on from there"
    if not through_daemon:
        return f"interrupted: indexing {root} stopped at the next commit (Ctrl-C again quits at once); {kept}"
    if no_wait:
        return (
            f"interrupted: the daemon goes on indexing {root} in the background (--no-wait); "
            f"`lgrep index --cancel {root}` stops it"
        )
    return (
        f"interrupted: the daemon cancels its index of {root} at its next commit, unless another command "
        f"waits for the same run; {kept}"
    )


def _cancel_index(cs: ClientSettings, root: Path, *, no_daemon: bool) -> int:
    """`lgrep index --cancel PATH`: cancel the daemon's runs of a project and say what happened."""
    from lgrep_core.storage.layout import project_dir, writer_pid

    from .output import printable

    where = printable(str(root))
    client = None if no_daemon else connect(cs, start=False)
    result = None
    daemon_pid = None
    if client is not None:
        with client:
            daemon_pid = str(client.server_info().pid)
            result = client.call(CancelIndexRequest(str(root)))
    if result is not None and result.cancelled:
        if result.stopped:
            _note(
                f"cancelled the daemon's index of {where}: what it had indexed is kept, and "
                f"`lgrep index {where}` goes on from there"
            )
        else:
            _note(
                f"asked the daemon to cancel its index of {where}: it stops at its next commit (a batch being "
                "embedded finishes first); what it had indexed is kept"
            )
        return EXIT_OK
    holder = writer_pid(project_dir(cs.cache_dir, root))
    if holder is not None and holder != daemon_pid:
        raise IndexBusyError(
            f"{where} is being indexed by another process (pid {printable(holder)}), not by the lgrep daemon: "
            f"stop it with Ctrl-C where it runs, or `kill -INT {printable(holder)}`"
        )
    _note(f"nothing is indexing {where}")
    return EXIT_OK


def _spend_warnings(settings: LgrepSettings, root: Path) -> tuple[str, ...]:
    """The spend warnings after a run with a cloud provider (none with the local model)."""
    if settings.embedding.provider == "local":
        return ()
    from lgrep_core.storage.spend import SpendLedger

    return SpendLedger(settings.cache_dir).report(settings.spend, str(root)).warnings


# ------------------------------------------------------------------------------------- search


@cli.command()
@click.argument("query")
@click.argument("paths", nargs=-1, metavar="[PATH]...", type=click.Path(path_type=Path))
@click.option(
    "-n", "--limit", type=click.IntRange(1, 1000), help="number of results, or of files (default: search.limit, 10)"
)
@click.option(
    "--files",
    "files",
    is_flag=True,
    help="answer with the files to open, ranked, each with its best line ranges (for a task or an issue)",
)
@click.option(
    "--type",
    "search_type",
    type=click.Choice(SEARCH_TYPES),
    default="hybrid",
    help="retrieval channels: hybrid (all, fused; default), vector, bm25 or fuzzy (symbol names)",
)
@click.option("--path", "path_glob", metavar="GLOB", help="only files matching GLOB (src/**/*.py, *.go, src/auth)")
@click.option("--lang", multiple=True, metavar="L", help="only files in language L (python, go, ...); repeatable")
@click.option("--content", multiple=True, type=click.Choice(CONTENT_TYPES), help="only code, docs, config or text")
@click.option("--bm25-weight", type=_WEIGHT, metavar="W", help="fixed BM25 weight in fusion (vector is 1)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--explain", is_flag=True, help="show why each result ranked where it did")
@click.option("--component", metavar="NAME", help="search a released version of this component (lgrep index --tags)")
@click.option(
    "--version", "version_spec", metavar="V", help="with --component: a version, latest (default) or a range (^0.7)"
)
@no_daemon_option
@click.pass_obj
def search(
    cs: ClientSettings,
    query: str,
    paths: tuple[Path, ...],
    limit: int | None,
    search_type: str,
    path_glob: str | None,
    lang: tuple[str, ...],
    content: tuple[str, ...],
    bm25_weight: float | None,
    as_json: bool,
    explain: bool,
    component: str | None,
    version_spec: str | None,
    no_daemon: bool,
    files: bool,
) -> int:
    """Search a project's index (built first if there is none), or a released version of it.

    QUERY is words, names, or a whole task: with --files, a bug report or an issue pasted whole
    (its traceback too, up to 32,768 characters) answers with the files to open. `-` reads the
    query from standard input (`lgrep search - --files < issue.md`). PATH (default: the current
    folder) is a project or a folder in one; several PATHs search several projects and answer with
    one ranking, each result naming its project."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.domain.models import ContentType, SearchRequest, SearchType

    from . import output

    if version_spec and not component:
        raise click.UsageError("--version needs --component (lgrep components lists them)")
    if len(paths) > 1 and component:
        raise click.UsageError("--component searches one project's releases: name one PATH")
    if query == "-":
        query = _stdin_query()
    path = paths[0] if paths else Path()
    # The folders named: the application API keeps each search to its folder and says which
    # project answered it.
    folder = _project(cs, path, Purpose.RELEASES if component else Purpose.SEARCH, say=False).folder
    folders = [folder, *(_project(cs, p, Purpose.SEARCH, say=False).folder for p in paths[1:])]
    request = SearchRequest(
        query=query,
        project_root=str(folder),
        limit=limit,
        search_type=SearchType(search_type),
        path_glob=path_glob,
        languages=lang,
        content_types=tuple(ContentType(c) for c in content),
        bm25_weight=bm25_weight,
        explain=explain,
        component=component or "",
        version=version_spec or "",
        files=files,
    ).validate()
    app = make_app(cs, no_daemon=no_daemon, start=True, lock_timeout_s=SEARCH_BUILD_WAIT_S, lite=True)
    if len(folders) > 1:
        with app, output.progress_bar(sys.stderr.isatty()) as on_progress:
            merged = app.search_projects(request, folders, progress=on_progress)
        output.print_projects_search(merged, query=query, as_json=as_json, explain=explain, files=files)
        return EXIT_OK
    with app, output.progress_bar(sys.stderr.isatty()) as on_progress:
        outcome = app.search(request, progress=on_progress)
    assert outcome.response is not None  # no wait bound: the index was built first
    root = str(outcome.scope.project)
    output.print_search(outcome.response, query=query, root=root, as_json=as_json, explain=explain, files=files)
    return EXIT_OK


# ------------------------------------------------------------------------- file, symbol, related
# The MCP tools lgrep_get_file, lgrep_find_symbol and lgrep_find_related, as commands.


def _lines(text: str | None) -> tuple[int, int]:
    if not text:
        return 0, 0
    start, _, end = text.partition(":") if ":" in text else text.partition("-")
    try:
        return int(start or 0), int(end or 0)
    except ValueError:
        raise click.BadParameter(f"{text!r}: give lines as START:END (1-based, inclusive; 10: or :40)") from None


@cli.command("file")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--lines", metavar="START:END", help="only these lines (1-based, inclusive; 10: or :40)")
@click.option("--project", type=click.Path(path_type=Path), help="the project (default: found from the file)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--component", metavar="NAME", help="read the file at a released version of this component")
@click.option("--version", "version_spec", metavar="V", help="with --component: a version, latest (default) or a range")
@no_daemon_option
@click.pass_obj
def file_command(
    cs: ClientSettings,
    file: Path,
    lines: str | None,
    project: Path | None,
    as_json: bool,
    component: str | None,
    version_spec: str | None,
    no_daemon: bool,
) -> int:
    """Print lines of an indexed file as it is on disk now (secrets redacted as in the index), or,
    with --component, as it is in a released version (FILE is then relative to the repository)."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import file_json

    from .output import printable

    if version_spec and not component:
        raise click.UsageError("--version needs --component (lgrep components lists them)")
    start, end = _lines(lines)
    if component:
        root = _project(cs, project or Path(), Purpose.RELEASES).project
        piece = _ask(
            cs,
            GetFileRequest(str(root), file.as_posix(), start, end, component=component, version=version_spec or ""),
            no_daemon=no_daemon,
            start=True,
        )
    else:
        target = file.expanduser().absolute()
        root = _project(cs, target if project is None else project, Purpose.FILE).project
        piece = _ask(cs, GetFileRequest(str(root), str(target), start, end), no_daemon=no_daemon, start=True)
    if as_json:
        print(json.dumps(file_json(piece, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    width = len(str(piece.end_line))
    text = piece.content[:-1] if piece.content.endswith("\n") else piece.content
    for n, line in enumerate(text.split("\n"), start=piece.start_line):
        print(f"{n:>{width}}  {printable(line, keep_tabs=True)}")
    if piece.truncated:
        _note(f"cut at line {piece.end_line} of {piece.total_lines}: --lines {piece.end_line + 1}: shows more")
    if piece.stale:
        _note("this file changed since it was indexed")
    return EXIT_OK


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--path", "path_glob", metavar="GLOB", help="only files matching GLOB (src/**/*.py, *.go, src/auth)")
@click.option("--lang", multiple=True, metavar="L", help="only files in language L; repeatable")
@click.option("-n", "--limit", type=click.IntRange(1), help="at most this many files")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--component", metavar="NAME", help="list a released version of this component")
@click.option("--version", "version_spec", metavar="V", help="with --component: a version, latest (default) or a range")
@no_daemon_option
@click.pass_obj
def files(
    cs: ClientSettings,
    path: Path,
    path_glob: str | None,
    lang: tuple[str, ...],
    limit: int | None,
    as_json: bool,
    component: str | None,
    version_spec: str | None,
    no_daemon: bool,
) -> int:
    """List the files of a project's index (or of a released version), with language and size."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import file_list_json

    from .output import printable

    if version_spec and not component:
        raise click.UsageError("--version needs --component (lgrep components lists them)")
    scope = _project(cs, path, Purpose.RELEASES if component else Purpose.FILES)
    root = scope.project
    listed = _ask(
        cs,
        ListFilesRequest(
            str(scope.folder),  # the engine keeps the list to the folder named
            path_glob=path_glob,
            languages=tuple(lang),
            limit=limit,
            component=component or "",
            version=version_spec or "",
        ),
        no_daemon=no_daemon,
        start=True,
    )
    if as_json:
        print(json.dumps(file_list_json(listed, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    if listed.release is not None:
        _note(f"{listed.release.label} (tag {listed.release.tag})")
    for f in listed.files:
        print(f"{printable(f.path)}  {f.language}  {f.chunks} chunks  {f.last_line} lines")
    if listed.total > len(listed.files):
        _note(f"{len(listed.files)} of {listed.total} files shown")
    return EXIT_OK


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@no_daemon_option
@click.pass_obj
def components(cs: ClientSettings, path: Path, as_json: bool, no_daemon: bool) -> int:
    """List the components of a repository's indexed releases (lgrep index --tags), with version counts."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import components_json

    from .output import printable

    root = _project(cs, path, Purpose.RELEASES).project
    found = _ask(cs, ListComponentsRequest(str(root)), no_daemon=no_daemon, start=True)
    if as_json:
        print(json.dumps(components_json(found, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    for c in found:
        print(f"{printable(c.name)}  {c.versions} versions  latest {printable(c.latest)}")
    return EXIT_OK


@cli.command()
@click.argument("component")
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@no_daemon_option
@click.pass_obj
def versions(cs: ClientSettings, component: str, path: Path, as_json: bool, no_daemon: bool) -> int:
    """List the indexed versions of a component, newest first."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import versions_json

    from .output import printable

    root = _project(cs, path, Purpose.RELEASES).project
    found = _ask(cs, ListVersionsRequest(str(root), component), no_daemon=no_daemon, start=True)
    if as_json:
        print(json.dumps(versions_json(found, component=component, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    for r in found:
        pre = "  prerelease" if r.prerelease else ""
        print(f"{printable(r.version)}  tag {printable(r.tag)}  {r.files} files{pre}")
    return EXIT_OK


@cli.command()
@click.argument("name")
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--kind", help="only this kind (function, method, class, ...)")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@no_daemon_option
@click.pass_obj
def symbol(
    cs: ClientSettings, name: str, path: Path, kind: str | None, limit: int, as_json: bool, no_daemon: bool
) -> int:
    """Where a symbol is defined (exact names first, then typo-tolerant matches: getUsrByld)."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import symbols_json
    from lgrep_core.domain.errors import InvalidRequestError
    from lgrep_core.domain.models import ChunkKind

    from .output import printable

    try:
        kinds = (ChunkKind(kind),) if kind else ()
    except ValueError:
        raise InvalidRequestError(f"unknown kind {kind!r}; one of {', '.join(k.value for k in ChunkKind)}") from None
    scope = _project(cs, path, Purpose.SYMBOL)
    root = scope.project
    # The engine keeps the lookup to the folder named (the project's index answers it).
    matches = _ask(
        cs, FindSymbolRequest(str(scope.folder), name, limit, kinds=tuple(kinds)), no_daemon=no_daemon, start=True
    )
    if as_json:
        print(json.dumps(symbols_json(matches, name=name, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    if not matches:
        print("no matches", file=sys.stderr)
    for match in matches:
        loc = match.location
        label = printable(".".join(loc.scope) or loc.symbol)
        kind_name = loc.kind.value if loc.kind is not None else "?"
        fuzzy = "" if match.exact else "  ~"
        print(f"{printable(loc.path)}:{loc.start_line}-{loc.end_line}  {label} ({kind_name}){fuzzy}")
        if loc.signature:
            print(f"    {printable(loc.signature.splitlines()[0][:160])}")
    return EXIT_OK


@cli.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.argument("line", type=click.IntRange(1))
@click.option("--project", type=click.Path(path_type=Path), help="the project (default: found from the file)")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@no_daemon_option
@click.pass_obj
def related(
    cs: ClientSettings, file: Path, line: int, project: Path | None, limit: int, as_json: bool, no_daemon: bool
) -> int:
    """Code related to a place: the chunks nearest by meaning to the one spanning LINE of FILE."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import location_json, related_json
    from lgrep_core.domain.models import SearchResponse

    from . import output

    target = file.expanduser().absolute()
    root = _project(cs, target if project is None else project, Purpose.FILE).project
    result = _ask(cs, FindRelatedRequest(str(root), str(target), line, limit), no_daemon=no_daemon, start=True)
    if as_json:
        print(json.dumps(related_json(result, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    anchor = location_json(result.anchor)
    print(f"near {output.printable(anchor['path'])}:{anchor['start_line']}-{anchor['end_line']} {anchor['symbol']}\n")
    response = SearchResponse(list(result.related), {}, 0, 0)
    output.print_search(response, query="", root=str(root), as_json=False, explain=False)
    return EXIT_OK


@cli.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--project", type=click.Path(path_type=Path), help="the project (default: found from the file)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@no_daemon_option
@click.pass_obj
def skeleton(cs: ClientSettings, file: Path, project: Path | None, as_json: bool, no_daemon: bool) -> int:
    """A file's structure: imports and signatures with their docstrings' first lines, bodies elided
    (each `⋯ N lines (Lstart-end)` says which lines to read for it). Built from the file as it is now."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import skeleton_json

    from .output import printable

    target = file.expanduser().absolute()
    root = _project(cs, target if project is None else project, Purpose.FILE).project
    result = _ask(cs, SkeletonRequest(str(root), str(target)), no_daemon=no_daemon, start=True)
    if as_json:
        print(json.dumps(skeleton_json(result, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    for line in result.content.splitlines():
        print(printable(line))
    if not result.content.strip():
        print(f"{printable(result.path)} has no imports or definitions; read it with lgrep file", file=sys.stderr)
    print(
        f"\n{printable(result.path)}: {result.total_lines} lines; skeleton {result.tokens} tokens, file "
        f"{result.file_tokens} ({result.tokens_saved} saved, {result.tokenizer})",
        file=sys.stderr,
    )
    return EXIT_OK


@cli.command()
@click.argument("symbol")
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--depth", type=click.IntRange(1, 3), default=1, show_default=True, help="hops to follow")
@click.option("--callers", "direction", flag_value="callers", help="only who calls it")
@click.option("--callees", "direction", flag_value="callees", help="only what it calls")
@click.option("--in", "in_file", metavar="FILE", help="the definition in this file (when the name has several)")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=50, show_default=True, help="edges to show")
@click.option("--offset", type=click.IntRange(0), default=0, help="skip this many edges (a previous answer's next)")
@click.option("--names-only", is_flag=True, help="match names only, without resolving imports (for comparison)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@no_daemon_option
@click.pass_obj
def trace(
    cs: ClientSettings,
    symbol: str,
    path: Path,
    depth: int,
    direction: str | None,
    in_file: str | None,
    limit: int,
    offset: int,
    names_only: bool,
    as_json: bool,
    no_daemon: bool,
) -> int:
    """Who calls SYMBOL and what it calls (`Auth.verify` or `verify`), DEPTH hops out, in the
    project at PATH. Each edge says how it was resolved: import, local, or name (names only; several
    definitions are listed, never guessed)."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import trace_json
    from lgrep_core.domain.models import TraceDirection

    from .output import print_trace

    scope = _project(cs, path, Purpose.TRACE)
    root = scope.project
    target = ""
    if in_file:
        where = Path(in_file).expanduser()
        target = str(where.absolute()) if where.is_absolute() or where.exists() else in_file
    result = _ask(
        cs,
        TraceRequest(
            str(scope.folder),  # a relative --in is relative to the folder named, as before
            symbol,
            path=target,
            depth=depth,
            direction=TraceDirection(direction) if direction else TraceDirection.BOTH,
            limit=limit,
            offset=offset,
            resolve_imports=not names_only,
        ),
        no_daemon=no_daemon,
        start=True,
    )
    if as_json:
        print(json.dumps(trace_json(result, root=str(root)), indent=2, ensure_ascii=False))
        return EXIT_OK
    print_trace(result, symbol=symbol, path=path, limit=limit)
    return EXIT_OK


# ------------------------------------------------------------------------------ status, clean


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@no_daemon_option
@click.pass_obj
def status(cs: ClientSettings, path: Path, as_json: bool, no_daemon: bool) -> int:
    """What the index of a project holds and how fresh it is (a folder inside a project: that project's)."""
    from lgrep_core.app.scope import Purpose

    from . import output

    root = _project(cs, path, Purpose.STATUS).project
    result = _ask(cs, StatusRequest(str(root)), no_daemon=no_daemon, start=False)
    output.print_status(result, as_json=as_json)
    return EXIT_OK


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.pass_obj
def stats(cs: ClientSettings, path: Path | None, as_json: bool) -> int:
    """What lgrep saved agents: per project and per MCP client, the calls, the tokens answers
    returned, the tokens of the whole files their results come from, and the difference (every
    project, or PATH's). Measured by the MCP server on each answer; counts only, never queries."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import receipts_json
    from lgrep_core.storage.receipts import ReceiptLedger

    from . import output

    ledger = ReceiptLedger(Path(cs.cache_dir))
    found = ledger.read(None if path is None else _project(cs, path, Purpose.STATS).project)
    answer = receipts_json(found.projects, found.notes)
    if as_json:
        print(json.dumps(answer, indent=2))
        return EXIT_OK
    output.print_stats(answer)
    return EXIT_OK


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@no_daemon_option
@click.pass_obj
def clean(cs: ClientSettings, path: Path, no_daemon: bool) -> int:
    """Delete the index of a project (a folder's own: a folder inside another project's index is
    refused, naming the project to clean instead)."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.storage.layout import project_dir

    from .output import printable

    root = _project(cs, path, Purpose.CLEAN).project
    folder = project_dir(cs.cache_dir, root)
    if not folder.exists():
        print(f"no index for {printable(str(root))}", file=sys.stderr)
        return EXIT_OK
    _ask(cs, RemoveProjectRequest(str(root)), no_daemon=no_daemon, start=False)
    print(f"removed the index of {printable(str(root))} ({printable(str(folder))})", file=sys.stderr)
    return EXIT_OK


# -------------------------------------------------------------------------------------- watch


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.pass_obj
def watch(cs: ClientSettings, path: Path, as_json: bool) -> int:
    """Keep a project's index fresh as its files change (the daemon watches it). A folder inside an
    indexed or watched project is watched as part of that project."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import watch_json

    from .output import printable

    root = _project(cs, path, Purpose.WATCH).project
    result = _ask(cs, WatchProjectRequest(str(root)), no_daemon=False, start=True)
    if as_json:
        print(json.dumps(watch_json(result, root=str(root))))
        return EXIT_OK
    what = "already watched" if result.already_watched else "now watched"
    print(f"{printable(str(root))} is {what}: saved changes are searchable within seconds", file=sys.stderr)
    return EXIT_OK


@cli.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.pass_obj
def unwatch(cs: ClientSettings, path: Path, as_json: bool) -> int:
    """Stop watching a project (a folder inside a watched project: that project, as `lgrep watch`
    names it)."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.app.serialize import unwatch_json

    from .output import printable

    root = _project(cs, path, Purpose.UNWATCH).project
    was = _ask(cs, UnwatchProjectRequest(str(root)), no_daemon=False, start=False)
    if as_json:
        print(json.dumps(unwatch_json(was, root=str(root))))
        return EXIT_OK
    print(f"{printable(str(root))} {'is no longer watched' if was else 'was not watched'}", file=sys.stderr)
    return EXIT_OK


# ---------------------------------------------------------------------------------------- mcp


@cli.command()
@click.argument("project", required=False, default=".", type=click.Path(path_type=Path))
@click.option(
    "--root", "roots", multiple=True, type=click.Path(path_type=Path), help="another folder its tools may read"
)
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(0, 65535),
    help="serve streamable HTTP at http://127.0.0.1:PORT/mcp (0: a free port); every request needs "
    "'Authorization: Bearer <token>' (LGREP_MCP_TOKEN, or the token file)",
)
@click.option(
    "--token-file",
    type=click.Path(path_type=Path),
    help="with --http: the token file, created 0600 if missing (default: mcp.token in the cache dir)",
)
@click.option(
    "--no-watch",
    is_flag=True,
    help="do not keep the projects watched while the server runs (fresh by default: it holds a watch lease)",
)
def mcp(project: Path, roots: tuple[Path, ...], http_port: int | None, token_file: Path | None, no_watch: bool) -> int:
    """Run lgrep's MCP server for PROJECT (stdio unless --http): agents' tools, served by the daemon.
    While it runs, the daemon keeps its projects' indexes fresh (unless --no-watch). Over HTTP it
    prints its URL and the header a client must send on stderr."""
    from lgrep_mcp.server import main as mcp_main

    args = [str(project), *(a for r in roots for a in ("--root", str(r)))]
    if no_watch:
        args.append("--no-watch")
    if http_port is not None:
        args += ["--http", str(http_port)]
    if token_file is not None:
        args += ["--token-file", str(token_file)]
    return mcp_main(args)


# -------------------------------------------------------------------------------------- serve


@cli.command()
@click.option(
    "--socket", "socket_path", type=click.Path(path_type=Path), help="unix socket (default: in the cache dir)"
)
@click.option(
    "--tcp-port", type=click.IntRange(0, 65535), help="also listen on 127.0.0.1:PORT (clients need the token)"
)
@click.option("--stop", is_flag=True, help="stop the running daemon")
@click.option("--status", "show_status", is_flag=True, help="say whether a daemon runs, and what it serves")
@click.option("--json", "as_json", is_flag=True, help="with --status: print one JSON object")
@click.option("--ready-fd", type=int, hidden=True)
@click.pass_obj
def serve(
    cs: ClientSettings,
    socket_path: Path | None,
    tcp_port: int | None,
    stop: bool,
    show_status: bool,
    as_json: bool,
    ready_fd: int | None,
) -> int:
    """Run the lgrep daemon: one warm model and index service for every agent and command."""
    from .output import printable

    socket_path = socket_path.expanduser().absolute() if socket_path is not None else Path(cs.socket_path)
    assert socket_path is not None
    if stop:
        from lgrep_core.rpc.daemon_client import stop_daemon

        pid = stop_daemon(socket_path, notice=_note)  # returns once the process has ended
        if pid is None:
            print(f"no lgrep daemon is running on {printable(str(socket_path))}", file=sys.stderr)
        else:
            print(f"stopped the lgrep daemon (pid {pid})", file=sys.stderr)
        return EXIT_OK
    if show_status:
        return _serve_status(cs, socket_path, as_json=as_json)
    if as_json:
        raise click.UsageError("--json goes with --status")
    from lgrep_core.domain.errors import IndexBusyError
    from lgrep_core.rpc.daemon_client import EXIT_ALREADY_SERVING

    from .daemon import serve_both

    settings = settings_for(None)
    if tcp_port is not None:
        settings.server.tcp_port = tcp_port
    try:
        serve_both(settings, socket_path, ready_fd=ready_fd)
    except IndexBusyError as exc:
        print(f"lgrep: {printable(exc.message)}", file=sys.stderr)
        return EXIT_ALREADY_SERVING
    return EXIT_OK


def _serve_status(cs: ClientSettings, socket_path: Path, *, as_json: bool) -> int:
    from dataclasses import replace

    from .output import printable

    client = connect(replace(cs, socket_path=socket_path, autostart=False), start=False)
    if client is None:
        if as_json:
            print(json.dumps({"running": False, "socket": str(socket_path)}))
        print(f"no lgrep daemon is running on {printable(str(socket_path))}", file=sys.stderr)
        return 1
    with client:
        info = client.server_info()
    if as_json:
        from .output import server_info_json

        print(json.dumps({"running": True, **server_info_json(info)}, indent=2))
        return EXIT_OK
    print(f"lgrep daemon {info.version}, pid {info.pid}, since {info.started_at}")
    print(
        f"  socket    {printable(info.unix_socket_path)}"
        + (f", tcp 127.0.0.1:{info.tcp_port}" if info.tcp_port else "")
    )
    print(f"  model     {info.embedding_provider}/{info.embedding_model} ({info.embedding_dimension} d)")
    print(f"  models    {info.models_loaded} loaded")
    print(f"  projects  {info.resident_projects} in memory, {len(info.watched_projects)} watched")
    for root in info.watched_projects:
        print(f"  watching  {printable(root)}")
    return EXIT_OK


# ------------------------------------------------------------------------------------- config


@cli.group()
def config() -> None:
    """Configuration."""


@config.command("show")
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def config_show(cs: ClientSettings, path: Path, as_json: bool) -> int:
    """Print the effective settings of the project at PATH (a folder inside a project: that
    project's) and where each came from."""
    from lgrep_core.app.scope import Purpose
    from lgrep_core.settings.config import load_settings

    loaded = load_settings(_project(cs, path, Purpose.CONFIG).project)
    rows = loaded.effective()
    if as_json:
        shown = {
            k: {"value": v, "source": s, **({"warning": loaded.warnings[k]} if k in loaded.warnings else {})}
            for k, v, s in rows
        }
        print(json.dumps(shown, indent=2, default=str))
        return EXIT_OK
    width = max(len(k) for k, _, _ in rows)
    for key, value, source in rows:
        print(f"{key:<{width}}  {json.dumps(value, default=str):<28}  # {source}")
    return EXIT_OK
