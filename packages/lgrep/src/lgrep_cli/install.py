"""`lgrep install`, `lgrep uninstall` and `lgrep init`: add lgrep to agent clients in one command.

The plans come from lgrep_skill (what to change in which file, nothing written); this module finds
the `lgrep` executable the clients must run, reads where their settings live from the environment,
prints the plan (a diff with --dry-run), applies it, and for `init` indexes the project first.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from lgrep_core.cli_support import EXIT_OK
from lgrep_core.endpoints import ClientSettings
from lgrep_core.errors import NotFoundError

if TYPE_CHECKING:
    from lgrep_core.models import IndexSummary

__all__ = ["init", "install", "uninstall"]

_CLIENTS = ("opencode", "claude-code", "codex", "gemini", "cursor", "vscode", "agents-md")


def _locations() -> Any:
    from lgrep_skill import Locations

    xdg = os.environ.get("XDG_CONFIG_HOME")
    state = os.environ.get("XDG_STATE_HOME")
    claude_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    codex_home = os.environ.get("CODEX_HOME")
    appdata = os.environ.get("APPDATA")
    return Locations(
        home=Path.home(),
        xdg_config_home=Path(xdg) if xdg and Path(xdg).is_absolute() else None,
        claude_config_dir=Path(claude_dir).expanduser() if claude_dir else None,
        xdg_state_home=Path(state) if state and Path(state).is_absolute() else None,
        codex_home=Path(codex_home).expanduser() if codex_home else None,
        appdata=Path(appdata) if appdata and Path(appdata).is_absolute() else None,
    )


def lgrep_executable() -> str:
    """The absolute path of the `lgrep` command running now, for clients to start outside this
    folder and this shell: the script itself, else the one beside this Python, else the one on PATH.
    Symlinks are kept (a `uv tool` or pipx link survives upgrades; its target may not).

    Raises:
        NotFoundError: no `lgrep` executable can be found.
    """
    argv0 = Path(sys.argv[0])
    if argv0.name in ("lgrep", "lgrep.exe") and argv0.is_file():
        return str(argv0.absolute())
    beside = Path(sys.executable).parent / ("lgrep.exe" if os.name == "nt" else "lgrep")
    if beside.is_file():
        return str(beside.absolute())
    found = shutil.which("lgrep")
    if found:
        return str(Path(found).absolute())
    raise NotFoundError("cannot find the `lgrep` executable to write into the client's settings; install lgrep first")


def _project(path: Path) -> Path:
    root = path.expanduser()
    if not root.is_dir():
        raise NotFoundError(f"{root} is not a directory")
    return root.resolve()


def _scope(client: str, scope: str | None) -> Any:
    if scope is not None:
        return scope
    # Every client: once for every project (the server serves the folder the client runs in);
    # AGENTS.md belongs to one project.
    return "project" if client == "agents-md" else "user"


def _report(plans: list[Any], *, dry_run: bool, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    from .output import printable

    if as_json:
        payload: dict[str, Any] = {"plans": [p.to_json(dry_run=dry_run) for p in plans]}
        if len(plans) == 1 and extra is None:
            payload = plans[0].to_json(dry_run=dry_run)
        print(json.dumps({**payload, **(extra or {})}, indent=2))
        return
    verbs = {"create": "created", "update": "updated", "delete": "removed", "unchanged": "unchanged"}
    if dry_run:
        verbs = {"create": "would create", "update": "would update", "delete": "would remove", "unchanged": "unchanged"}
    for plan in plans:
        print(f"{plan.operation} {plan.client} ({plan.scope}):")
        for change in plan.changes:
            if change.action == "unchanged" and change.before is None:
                continue  # nothing there, nothing to do: not worth a line
            print(f"  {verbs[change.action]:<13} {printable(str(change.path))}  ({change.what})")
            for note in change.notes:
                print(f"      {printable(note)}")
            if dry_run and change.action != "unchanged":
                for line in change.diff().splitlines():
                    print(f"      {printable(line)}")
        if not plan.changed:
            print("  nothing to do: " + ("already installed" if plan.operation == "install" else "not installed"))
        for note in plan.notes if plan.changed or plan.operation == "uninstall" else []:
            print(f"  note: {printable(note)}")
    if dry_run:
        print("dry run: nothing was written")


_scope_options = [
    click.option(
        "--project",
        "scope",
        flag_value="project",
        help="this project only: its own files (in the --path folder), with `lgrep` from PATH as the command",
    ),
    click.option("--user", "scope", flag_value="user", help="every project of this user (default, but for agents-md)"),
    click.option(
        "--path",
        "project_dir",
        default=".",
        metavar="DIR",
        type=click.Path(path_type=Path),
        help="the project folder (default: the current one)",
    ),
    click.option("--dry-run", is_flag=True, help="print what would change (a diff) and write nothing"),
    click.option("--json", "as_json", is_flag=True, help="print one JSON object"),
]


def _with_scope_options(fn: Any) -> Any:
    for option in reversed(_scope_options):
        fn = option(fn)
    return fn


@click.command()
@click.argument("client", type=click.Choice(_CLIENTS))
@_with_scope_options
def install(client: str, scope: str | None, project_dir: Path, dry_run: bool, as_json: bool) -> int:
    """Add lgrep to an agent client: its MCP server, and its skill where the client reads skills
    (opencode, claude-code, codex, gemini, cursor, vscode), or a section in the project's AGENTS.md
    (agents-md). --user (the default) writes the absolute path of this lgrep into your own settings;
    --project writes `lgrep` (found on PATH) into the project's files, which teams commit. Merges into
    existing settings; running it again changes nothing."""
    from lgrep_skill import plan_install

    plan = plan_install(
        client, _scope(client, scope), project=_project(project_dir), command=lgrep_executable(), where=_locations()
    )
    _note_path([plan])
    if not dry_run:
        plan.apply()
    _report([plan], dry_run=dry_run, as_json=as_json)
    return EXIT_OK


@click.command()
@click.argument("client", type=click.Choice(_CLIENTS))
@_with_scope_options
def uninstall(client: str, scope: str | None, project_dir: Path, dry_run: bool, as_json: bool) -> int:
    """Take out what `lgrep install` added (and nothing else)."""
    from lgrep_skill import plan_uninstall

    plan = plan_uninstall(client, _scope(client, scope), project=_project(project_dir), where=_locations())
    if not dry_run:
        plan.apply()
    _report([plan], dry_run=dry_run, as_json=as_json)
    return EXIT_OK


def _note_path(plans: list[Any]) -> None:
    """A project install writes `lgrep` for the client to find on PATH: say so when it is not there."""
    from lgrep_skill import PORTABLE_COMMAND

    if shutil.which(PORTABLE_COMMAND):
        return
    for plan in plans:
        if plan.command == PORTABLE_COMMAND:
            plan.notes.append(
                f"`{PORTABLE_COMMAND}` is not on your PATH: the client will not find the command this project's "
                f"settings name until it is (or install with --user, which writes {lgrep_executable()})"
            )


def detect_clients(where: Any) -> list[str]:
    """The agent clients this user has: their command on PATH, or their settings folder exists."""
    checks = [
        ("opencode", "opencode", where.opencode_dir),
        ("claude-code", "claude", where.claude_dir),
        ("codex", "codex", where.codex_dir),
        ("gemini", "gemini", where.gemini_dir),
        ("cursor", "cursor", where.cursor_dir),
        ("vscode", "code", where.vscode_user_dir),
    ]
    return [client for client, exe, folder in checks if shutil.which(exe) or folder.exists()]


@click.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--no-index", is_flag=True, help="only write the clients' settings")
@click.option("--dry-run", is_flag=True, help="print what would change and do nothing")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.pass_obj
def init(cs: ClientSettings, path: Path, no_index: bool, dry_run: bool, as_json: bool) -> int:
    """Index a project and add lgrep's MCP server to the project settings of the agent clients
    found here (OpenCode, Claude Code, Codex, Gemini CLI, Cursor, VS Code)."""
    from lgrep_skill import plan_install

    from .output import printable

    root = _project(path)
    where = _locations()
    clients = detect_clients(where)
    command = lgrep_executable()
    plans = [plan_install(c, "project", project=root, command=command, where=where) for c in clients]
    _note_path(plans)
    summary = None
    if not dry_run and not no_index:
        summary = _index(cs, root)
    if not dry_run:
        for plan in plans:
            plan.apply()
    extra: dict[str, Any] = {"project_root": str(root), "clients": clients}
    if summary is not None:
        from lgrep_core.serialize import index_summary_json
        from lgrep_core.storage.layout import project_dir

        extra["index"] = {**index_summary_json(summary), "index_dir": str(project_dir(cs.cache_dir, root))}
    _report(plans, dry_run=dry_run, as_json=as_json, extra=extra if as_json else None)
    if not as_json:
        if summary is not None:
            print(
                f"indexed {printable(str(root))}: {summary.files_seen} files, {summary.chunks_total} chunks"
                + (f" ({summary.vectors_pending} vectors filling in behind)" if summary.vectors_pending else "")
            )
        if not clients:
            print(
                "no agent client found (OpenCode, Claude Code, Codex, Gemini CLI, Cursor, VS Code: neither on "
                "PATH nor their settings folder): "
                "`lgrep install agents-md` writes instructions for any agent into AGENTS.md"
            )
    return EXIT_OK


def _index(cs: ClientSettings, root: Path) -> IndexSummary:
    """Index `root` until BM25 search works, through the daemon when it runs or can start (vectors
    follow there), else in this process with a background vector filler, like `lgrep index --no-wait`."""
    from .shell import make_app

    with make_app(cs, no_daemon=False, start=True) as app:
        return app.index(root, wait_vectors=False)
