"""`lgrep install`, `lgrep uninstall` and `lgrep init`: add lgrep to agent clients in one command.

The plans come from lgrep_skill (what to change in which file, nothing written); this module finds
the `lgrep` executable the clients must run, reads where their settings live from the environment,
prints the plan (a diff with --dry-run), applies it, and for `init` indexes the project first.

One registration per client (ADR 0023): before installing, it reads where the client already loads
lgrep from (`lgrep_skill.registrations`); when that is another scope, another name or the Claude
Code plugin, it says where and writes nothing, unless `--also` asks for the second registration.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from lgrep_core.app.cli_support import EXIT_OK
from lgrep_core.domain.errors import ConfigError, NotFoundError
from lgrep_core.rpc.endpoints import ClientSettings
from lgrep_skill import AGENT_CLIENTS, CLIENTS

if TYPE_CHECKING:
    from lgrep_core.domain.models import IndexSummary
    from lgrep_skill import Plan
    from lgrep_skill.registrations import Registration

__all__ = ["client_locations", "detect_clients", "init", "install", "lgrep_executable", "undo_hint", "uninstall"]


def client_locations() -> Any:
    """Where the agent clients keep their settings, read from this environment (install and doctor)."""
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


@dataclass
class _Step:
    """One client's plan, with where else the client loads lgrep from (other scopes, other names,
    the plugin) and whether the plan was held back for that."""

    plan: Plan
    elsewhere: list[Registration] = field(default_factory=list["Registration"])
    # Entries named lgrep that run something else: not lgrep registered, so they hold nothing back,
    # but shown with what they run (a repository can plant one; the client would start it).
    not_lgrep: list[Registration] = field(default_factory=list["Registration"])
    unchecked: list[tuple[Path, str]] = field(default_factory=list[tuple[Path, str]])  # files it could not read
    skipped: bool = False

    def to_json(self, *, dry_run: bool) -> dict[str, Any]:
        out = self.plan.to_json(dry_run=dry_run)
        if self.skipped:
            out.update(changed=False, changes=[], notes=[])
        out["skipped"] = self.skipped
        out["registered_elsewhere"] = [r.to_json() for r in self.elsewhere]
        out["not_lgrep"] = [r.to_json() for r in self.not_lgrep]
        if self.unchecked:
            out["unchecked"] = [{"file": str(path), "error": error} for path, error in self.unchecked]
        return out


def _check_elsewhere(plan: Plan, root: Path, where: Any, *, also: bool) -> _Step:
    """`plan` with the client's other registrations of lgrep, as seen from `root`: an install is held
    back (skipped) when there is one and `also` was not given; an uninstall only reports them. An
    entry named lgrep that runs another program is no registration of lgrep: it holds nothing back,
    and is reported apart (`not_lgrep`)."""
    from lgrep_skill import SERVER_NAME
    from lgrep_skill.registrations import find_registrations

    if plan.client not in {client.name for client in AGENT_CLIENTS}:
        return _Step(plan)
    (reading,) = find_registrations(root, where, [plan.client])
    target = next((c.path for c in plan.changes if c.what == "MCP server"), None)
    found = [r for r in reading.active if not (r.scope == plan.scope and r.file == target and r.name == SERVER_NAME)]
    not_lgrep = [r for r in found if _not_lgrep(r)]
    elsewhere = [r for r in found if not _not_lgrep(r)]
    unchecked = [(path, error) for path, error in reading.problems if path != target]
    skipped = plan.operation == "install" and bool(elsewhere) and not also
    return _Step(plan, elsewhere, not_lgrep, unchecked, skipped)


def _not_lgrep(reg: Registration) -> bool:
    """Whether a registration is an entry named lgrep whose command starts another program (a
    remote one, a url, may be lgrep serving over HTTP: it counts as lgrep)."""
    from lgrep_skill import SERVER_NAME
    from lgrep_skill.installers import is_lgrep_command

    return reg.name == SERVER_NAME and reg.command is not None and not is_lgrep_command(reg.command)


def _report(steps: list[_Step], *, dry_run: bool, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    from lgrep_skill.installers import not_lgrep_advice

    from .output import printable

    if as_json:
        payload: dict[str, Any] = {"plans": [s.to_json(dry_run=dry_run) for s in steps]}
        if len(steps) == 1 and extra is None:
            payload = steps[0].to_json(dry_run=dry_run)
        print(json.dumps({**payload, **(extra or {})}, indent=2))
        return
    verbs = {"create": "created", "update": "updated", "delete": "removed", "unchanged": "unchanged"}
    if dry_run:
        verbs = {"create": "would create", "update": "would update", "delete": "would remove", "unchanged": "unchanged"}
    for step in steps:
        plan = step.plan
        print(f"{plan.operation} {plan.client} ({plan.scope}):")
        for path, error in step.unchecked:
            print(f"  note: could not check {printable(str(path))} for lgrep: {printable(error)}")
        for reg in step.not_lgrep:
            print(f"  warning: {printable(not_lgrep_advice(reg.file, reg.command))}")
        if step.skipped:
            _print_skipped(step)
            continue
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
        if step.elsewhere:
            still = "also registered" if plan.operation == "install" else "still registered"
            print(f"  note: lgrep is {still} for {plan.client} in:")
            for reg in step.elsewhere:
                print(f"      {printable(reg.describe())}: {printable(_runs(reg))}")
    if dry_run:
        print("dry run: nothing was written")


def undo_hint(reg: Registration) -> str:
    """The command (or edit) that takes one registration out."""
    from lgrep_skill import SERVER_NAME

    if reg.scope == "plugin":
        # where it is switched on: the project's shared or local settings, else the user's
        scope = {"settings.json": " -s project", "settings.local.json": " -s local"}.get(reg.file.name, "")
        if reg.file.parent.name != ".claude" or reg.file.parent.parent != reg.cwd:
            scope = ""
        return f"claude plugin disable {reg.plugin or reg.name}{scope}"
    if reg.name != SERVER_NAME:
        return f"remove {reg.key} from {reg.file}"
    if reg.scope == "local":
        return f"claude mcp remove {reg.name} -s local   (in {reg.cwd})"
    if reg.scope == "project":
        # a project's settings sit in the project or in a dot-folder of it (.opencode, .codex, .vscode...)
        folder = reg.file.parent.parent if reg.file.parent.name.startswith(".") else reg.file.parent
        return f"lgrep uninstall {reg.client} --project --path {folder}"
    return f"lgrep uninstall {reg.client} --{reg.scope}"


def _what_a_second_does(client: str, elsewhere: list[Registration]) -> str:
    from lgrep_skill import SERVER_NAME

    if any(r.scope == "plugin" or r.name != SERVER_NAME for r in elsewhere):
        return "the agent would be offered every tool twice, under two server names"
    if client == "claude-code":
        return "Claude Code would warn about conflicting scopes and load only one of them"
    return "the client would load only one of them"


def _runs(reg: Registration) -> str:
    """What a registration starts, in full: a user must see a command a repository may have planted."""
    import shlex

    if reg.command is None:
        return f"connects to {reg.url}"
    return f"runs {shlex.join(reg.command)}"


def _print_skipped(step: _Step) -> None:
    from .output import printable

    plan = step.plan
    print(f"  skipped: lgrep is already registered for {plan.client} in:")
    for reg in step.elsewhere:
        print(f"      {printable(reg.describe())}: {printable(_runs(reg))}")
    twice = _what_a_second_does(plan.client, step.elsewhere)
    print(f"  a second registration adds nothing ({twice}); nothing was written")
    print("  to add it anyway: --also; to have it here instead, first:")
    for reg in step.elsewhere:
        print(f"      {printable(undo_hint(reg))}")


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

_also_option = click.option(
    "--also",
    is_flag=True,
    help="add it even when the client already loads lgrep from another scope or the plugin (a second registration)",
)


def _with_scope_options(fn: Any) -> Any:
    for option in reversed(_scope_options):
        fn = option(fn)
    return fn


@click.command()
@click.argument("client", type=click.Choice(CLIENTS))
@_with_scope_options
@_also_option
def install(client: str, *, scope: str | None, project_dir: Path, dry_run: bool, as_json: bool, also: bool) -> int:
    """Add lgrep to an agent client: its MCP server, and its skill where the client reads skills
    (opencode, claude-code, codex, gemini, cursor, vscode), or a section in the project's AGENTS.md
    (agents-md). --user (the default) writes the absolute path of this lgrep into your own settings;
    --project writes `lgrep` (found on PATH) into the project's files, which teams commit. Merges into
    existing settings; running it again changes nothing. When the client already loads lgrep from
    elsewhere (another scope, the plugin), it says where and writes nothing, unless --also."""
    from lgrep_skill import plan_install

    root, where = _project(project_dir), client_locations()
    plan = plan_install(client, _scope(client, scope), project=root, command=lgrep_executable(), where=where)
    _note_path([plan])
    step = _check_elsewhere(plan, root, where, also=also)
    if not dry_run and not step.skipped:
        plan.apply()
    _report([step], dry_run=dry_run, as_json=as_json)
    return EXIT_OK


@click.command()
@click.argument("client", type=click.Choice(CLIENTS))
@_with_scope_options
def uninstall(client: str, scope: str | None, project_dir: Path, dry_run: bool, as_json: bool) -> int:
    """Take out what `lgrep install` added (and nothing else)."""
    from lgrep_skill import plan_uninstall

    root, where = _project(project_dir), client_locations()
    plan = plan_uninstall(client, _scope(client, scope), project=root, where=where)
    step = _check_elsewhere(plan, root, where, also=False)
    if not dry_run:
        plan.apply()
    _report([step], dry_run=dry_run, as_json=as_json)
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
    return [c.name for c in AGENT_CLIENTS if shutil.which(c.program) or c.folder(where).exists()]


@click.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--no-index", is_flag=True, help="only write the clients' settings")
@click.option("--dry-run", is_flag=True, help="print what would change and do nothing")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@_also_option
@click.pass_obj
def init(cs: ClientSettings, path: Path, *, no_index: bool, dry_run: bool, as_json: bool, also: bool) -> int:
    """Index a project and add lgrep's MCP server to the project settings of the agent clients
    found here (OpenCode, Claude Code, Codex, Gemini CLI, Cursor, VS Code), but for a client that
    already loads lgrep from elsewhere (your user settings, the plugin): that one is skipped and said,
    unless --also."""
    from lgrep_skill import plan_install

    from .output import printable

    root = _project(path)
    where = client_locations()
    clients = detect_clients(where)
    command = lgrep_executable()
    plans: list[Plan] = []
    refused: list[str] = []  # every client whose files lgrep will not edit, said at once: nothing is written
    for client in clients:
        try:
            plans.append(plan_install(client, "project", project=root, command=command, where=where))
        except ConfigError as exc:
            refused.append(exc.message if len(clients) == 1 else f"{client}: {exc.message}")
    if refused:
        raise ConfigError("\n".join(refused) + ("\nnothing was written" if len(refused) > 1 else ""))
    _note_path(plans)
    steps = [_check_elsewhere(plan, root, where, also=also) for plan in plans]
    summary = None
    if not dry_run and not no_index:
        summary = _index(cs, root)
    if not dry_run:
        for step in steps:
            if not step.skipped:
                step.plan.apply()
    skipped = [s.plan.client for s in steps if s.skipped]
    extra: dict[str, Any] = {"project_root": str(root), "clients": clients, "skipped": skipped}
    if summary is not None:
        from lgrep_core.app.serialize import indexed_json
        from lgrep_core.storage.layout import project_dir

        extra["index"] = indexed_json(summary, index_dir=str(project_dir(cs.cache_dir, root)))
    _report(steps, dry_run=dry_run, as_json=as_json, extra=extra if as_json else None)
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
