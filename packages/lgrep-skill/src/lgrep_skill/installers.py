"""What `lgrep install` and `lgrep uninstall` change for each agent client, as a Plan.

Each installer reads the files it would touch, computes their new text (an edit of one member of a
JSON object or TOML table, or of one delimited section of AGENTS.md), and returns the plan; nothing
is written here; which files, and what entry, the client's row in `clients.AGENT_CLIENTS` says.
Installing twice gives the same bytes; uninstalling removes what install added and nothing else: an
object install added around its entry (`"mcpServers": {...}`) is recorded in the ledger (`plan`), so
that one goes once empty, and one the user had stays, empty or not. An entry named lgrep that runs
something else is never merged into (a repository can plant one, with an `env` of its own): install
refuses and says what it runs.

Every file of a project scope is read and written confined to the project (`confine=project`: no
symbolic link below its root is followed, see `files`); a user's own files are read and written
through their links.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import ConfigError, InvalidRequestError

from . import files, jsonc, tomlfile
from .clients import AGENT_CLIENTS, SERVER_NAME, Client, Locations, Scope, runs_lgrep
from .plan import Change, Plan, containers_created_by_lgrep, created_by_lgrep

__all__ = [
    "CLIENTS",
    "PORTABLE_COMMAND",
    "SERVER_NAME",
    "Locations",
    "Scope",
    "asset_text",
    "is_lgrep_command",
    "not_lgrep_advice",
    "plan_install",
    "plan_uninstall",
]

AGENTS_MD = "agents-md"  # not a client: a section any agent reads in the project's AGENTS.md
CLIENTS = (*(client.name for client in AGENT_CLIENTS), AGENTS_MD)
# What a project install writes as the command: files a team commits hold no path of one machine,
# so the clients find `lgrep` on PATH (ADR 0022).
PORTABLE_COMMAND = "lgrep"
OPENCODE_SCHEMA = "https://opencode.ai/config.json"
AGENTS_START = "<!-- lgrep:start -->"
AGENTS_END = "<!-- lgrep:end -->"


def asset_text(*parts: str) -> str:
    """A file of the integrations shipped in this package (a checked copy of the repository's
    `integrations/`)."""
    return resources.files("lgrep_skill").joinpath("integrations", *parts).read_text(encoding="utf-8")


def plan_install(client: str, scope: Scope, *, project: Path, command: str, where: Locations) -> Plan:
    """The changes that add lgrep to `client` at `scope`. `command` is the absolute path of the
    `lgrep` executable a user install writes; a project install writes PORTABLE_COMMAND instead
    (found on PATH), since teams commit those files. Raises InvalidRequestError for an unknown
    client or a scope it has not, ConfigError for a file it cannot read or parse."""
    written = PORTABLE_COMMAND if scope == "project" else command
    plan = Plan("install", client, scope, command=written if client != AGENTS_MD else None, ledger=where.ledger)
    _dispatch(client, scope, plan, project=project, command=written, where=where)
    return plan


def plan_uninstall(client: str, scope: Scope, *, project: Path, where: Locations) -> Plan:
    """The changes that take out what `plan_install` adds (and nothing else)."""
    plan = Plan("uninstall", client, scope, ledger=where.ledger)
    _dispatch(client, scope, plan, project=project, command=None, where=where)
    return plan


Installer = Callable[..., None]


def _dispatch(name: str, scope: Scope, plan: Plan, *, project: Path, command: str | None, where: Locations) -> None:
    client = next((c for c in AGENT_CLIENTS if c.name == name), None)
    if client is not None:
        install: Installer = _INSTALLERS_OF_THEIR_OWN.get(name, _servers_client)
        install(plan, client, scope, project=project, command=command, where=where)
        if command is not None:
            if scope == "project" and client.project_note:
                plan.notes.append(client.project_note)
            plan.notes.append(client.started)
    elif name == AGENTS_MD:
        _agents_md(plan, scope, project=project, command=command)
    else:
        raise InvalidRequestError(f"unknown client {name!r}; one of {', '.join(CLIENTS)}")
    if scope == "project":
        for change in plan.changes:
            assert change.confine == project, change.path  # every project file was read confined


# ------------------------------------------------------------------------------------ shared


def is_lgrep_command(argv: Sequence[str]) -> bool:
    """Whether a server entry's command starts lgrep: `lgrep mcp ...` or `lgrep-mcp` (`runs_lgrep`),
    or a bare `lgrep` (an entry whose args went missing: install completes it). Anything else named
    lgrep (another program, lgrep with other arguments) is not lgrep's entry."""
    bare = len(argv) == 1 and Path(argv[0]).name.removesuffix(".exe") == SERVER_NAME
    return runs_lgrep(tuple(argv)) or bare


def not_lgrep_advice(file: Path, command: Sequence[str] | None, url: str | None = None) -> str:
    """What to say of a server named lgrep in `file` that is not lgrep: what it runs, in full (or
    where it connects), and what to do."""
    if url is not None:
        does = f"connects to {url} instead of starting lgrep"
    elif command:
        does = f"runs `{shlex.join(command)}`, which is not lgrep"
    else:
        does = "names no command, so it is not lgrep's"
    return (
        f'{file} already has a server named "{SERVER_NAME}" that {does}; if you did not put it there, a '
        "repository may have: remove the entry and run the command again"
    )


def _entry_command(entry: Any, *, argv: bool = False) -> tuple[list[str] | None, str | None]:
    """What an existing server entry runs (its argv), or where it connects when it is remote (its
    url), read as the client reads it: OpenCode's `command` is the whole argv, the others' is the
    program with `args` after it."""
    if not isinstance(entry, dict):
        return None, None
    command: Any = entry.get("command")  # pyright: ignore[reportUnknownMemberType]
    if argv:
        if entry.get("type") == "remote":  # pyright: ignore[reportUnknownMemberType]
            return None, str(entry.get("url"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if isinstance(command, list) and command and all(isinstance(a, str) for a in command):  # pyright: ignore[reportUnknownVariableType]
            return list(command), None  # pyright: ignore[reportUnknownArgumentType]
        return ([command] if isinstance(command, str) else None), None
    url: Any = entry.get("url") or entry.get("httpUrl")  # pyright: ignore[reportUnknownMemberType]
    if entry.get("type") in ("http", "sse") or (url is not None and command is None):  # pyright: ignore[reportUnknownMemberType]
        return None, str(url)
    if not isinstance(command, str):
        return None, None
    args: Any = entry.get("args")  # pyright: ignore[reportUnknownMemberType]
    if isinstance(args, list) and all(isinstance(a, str) for a in args):  # pyright: ignore[reportUnknownVariableType]
        return [command, *args], None  # pyright: ignore[reportUnknownArgumentType]
    return [command], None


def _refuse_not_lgrep(existing: Any, where: Path, *, argv: bool = False) -> None:
    """Install never merges into an entry named lgrep that does not run lgrep: it would keep that
    entry's other keys (an `env` with LD_PRELOAD, a `cwd`) under lgrep's command, and a repository
    can plant one. Raises ConfigError saying what the entry runs and what to do."""
    if not isinstance(existing, dict) or not existing:
        return
    runs, url = _entry_command(existing, argv=argv)
    if url is None and runs and is_lgrep_command(runs):
        return
    raise ConfigError(not_lgrep_advice(where, runs, url))


def _merge_entry(
    existing: Any, forced: dict[str, Any], defaults: dict[str, Any], *, where: str
) -> tuple[dict[str, Any], list[str]]:
    """Our server entry merged into one already there (one that runs lgrep: `_refuse_not_lgrep`):
    `forced` keys take our values, `defaults` keys are set only when absent, every other key the
    user wrote stays. Notes say what happened, and name the environment variables a kept `env`
    sets, since those change what the server runs (LD_PRELOAD, PYTHONPATH)."""
    if not isinstance(existing, dict):
        return {**forced, **defaults}, []
    merged: dict[str, Any] = dict(existing)  # pyright: ignore[reportUnknownArgumentType]
    notes: list[str] = []
    changed = [k for k, v in forced.items() if k in merged and merged[k] != v]
    merged.update(forced)
    for key, value in defaults.items():
        if key not in merged:
            merged[key] = value
        elif merged[key] != value:
            notes.append(f"kept your {key}: {json.dumps(merged[key])} in {where}")
    if changed:
        notes.append(f"updated {', '.join(changed)} of the existing {SERVER_NAME} entry in {where}")
    extra = sorted(set(merged) - set(forced) - set(defaults))
    if extra:
        notes.append(f"kept your other settings of the {SERVER_NAME} entry in {where}: {', '.join(extra)}")
    for key in ("env", "environment"):
        env: Any = merged.get(key) if key not in forced else None
        if isinstance(env, dict) and env:
            names = ", ".join(sorted(str(name) for name in env))  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            notes.append(
                f"kept the environment the {SERVER_NAME} entry in {where} gives the server ({key}): {names}; "
                "lgrep did not write it"
            )
    return merged, notes


def _json_change(
    path: Path,
    what: str,
    key_path: list[str],
    value: Any | None,
    *,
    new_document: Callable[[], dict[str, Any]],
    deletable: bool,
    confine: Path | None,
    ledger: Path | None,
) -> Change:
    """A Change that sets (value not None) or removes the member at `key_path` of a JSON(C) file.

    Install records the objects along `key_path` it adds to a file that was there (`_added`).
    Uninstall takes out the member, then each object along `key_path` that is lgrep's
    (`_containers_of_lgrep`) and holds nothing but whitespace once it is out, and deletes the file
    when `deletable` and `_ours_to_delete` says it holds nothing but what lgrep wrote."""
    before = files.read_text(path, confine=confine)
    if before is not None and not before.strip():
        before_doc = None  # an empty file counts as no file
    else:
        before_doc = before
    source = str(path)
    containers = [tuple(key_path[:i]) for i in range(len(key_path) - 1, 0, -1)]  # the deepest first
    if value is not None:
        if before_doc is None:
            doc = new_document()
            target: Any = doc
            for key in key_path[:-1]:
                target = target.setdefault(key, {})
            target[key_path[-1]] = value
            change = Change(path, before, jsonc.dump(doc) + "\n", what, confine=confine, recorded=True)
            if before is not None:  # an empty file of the user's: what lgrep wrote in it is recorded
                change.containers = containers
            return change
        change = Change(path, before, jsonc.set_member(before_doc, key_path, value, source), what, confine=confine)
        change.containers = _added(before_doc, containers, source)
        return change
    if before_doc is None:
        return Change(path, before, before, what, confine=confine)
    ours = _containers_of_lgrep(path, containers, ledger, whole_file=deletable)
    after = _remove(before_doc, key_path, containers, ours, source)
    if deletable and after != before_doc and _ours_to_delete(path, after, new_document(), confine, ledger):
        return Change(path, before, None, what, confine=confine, recorded=True)
    return Change(path, before, after, what, confine=confine, forgets_containers=True)


def _added(text: str, containers: list[tuple[str, ...]], source: str) -> list[tuple[str, ...]]:
    """Which of `containers` (key paths) are not in `text`: those an edit setting a member inside
    them adds, for the ledger."""
    doc = jsonc.loads(text, source)
    return [key for key in containers if _get(doc, list(key)) is None]


def _containers_of_lgrep(
    path: Path, containers: list[tuple[str, ...]], ledger: Path | None, *, whole_file: bool
) -> set[tuple[str, ...]]:
    """Which of `containers` lgrep added to the file at `path`: those its ledger records, and, in a
    file lgrep created (`whole_file`: one uninstall may delete), every one of them. A container the
    user had, `"servers": {}` included, is theirs and stays."""
    ours = containers_created_by_lgrep(ledger, path)
    if whole_file and created_by_lgrep(ledger, path):
        ours |= set(containers)
    return ours


def _ours_to_delete(
    path: Path, remainder: str, skeleton: dict[str, Any], confine: Path | None, ledger: Path | None
) -> bool:
    """Whether uninstall deletes a settings file left with `remainder` once lgrep's entry is out: only
    when lgrep created the file (recorded in the ledger when it did) and what is left is, byte for
    byte, the skeleton lgrep wrote into it (`{}`, or OpenCode's `$schema`), so nothing in it is the
    user's. A file the user had before install keeps whatever it held, `$schema` alone included; a
    user's file that is a link (dotfiles) is never deleted, only edited through the link."""
    if remainder != jsonc.dump(skeleton) + "\n":
        return False
    if confine is None and path.is_symlink():
        return False
    return created_by_lgrep(ledger, path)


def _remove(
    text: str, key_path: list[str], containers: list[tuple[str, ...]], ours: set[tuple[str, ...]], source: str
) -> str:
    """`text` without the member at `key_path`, and without each of `containers` (the deepest first)
    that is in `ours` and holds nothing but whitespace once the member is out."""
    after = jsonc.remove_member(text, key_path, source)
    return _drop_emptied(after, containers, ours, source) if after != text else after


def _drop_emptied(text: str, containers: list[tuple[str, ...]], ours: set[tuple[str, ...]], source: str) -> str:
    """`text` without each of `containers` (in order) that is in `ours` and holds nothing but whitespace."""
    for container in containers:
        if container in ours and _holds_nothing(text, container, source):
            text = jsonc.remove_member(text, list(container), source)
    return text


def _holds_nothing(text: str, key_path: tuple[str, ...], source: str) -> bool:
    """Whether the object or list at `key_path` is there and holds nothing but whitespace (a comment
    in it is someone's, so it stays)."""
    node = jsonc.parse(text, source)
    for key in key_path:
        member = node.member(key) if node.is_object else None
        if member is None:
            return False
        node = member.value
    return isinstance(node.value, (dict, list)) and not text[node.start + 1 : node.end - 1].strip()


def _get(doc: Any, key_path: list[str]) -> Any:
    for key in key_path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]  # pyright: ignore[reportUnknownVariableType]
    return doc  # pyright: ignore[reportUnknownVariableType]


def _read_json(path: Path, confine: Path | None) -> Any:
    text = files.read_text(path, confine=confine)
    if text is None or not text.strip():
        return None
    doc = jsonc.loads(text, str(path))
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return doc  # pyright: ignore[reportUnknownVariableType]


def _skill_change(folder: Path, install: bool, *, stop: Path, confine: Path | None) -> Change:
    """The skill file in `<folder>/lgrep/SKILL.md`; uninstall prunes the folders left empty up to `stop`."""
    path = folder / SERVER_NAME / "SKILL.md"
    before = files.read_text(path, confine=confine)
    ours = asset_text("skill", "SKILL.md")
    change = Change(path, before, ours if install else None, "skill", remove_empty_dirs_up_to=stop, confine=confine)
    if install and before is not None and before != ours:
        change.notes.append(f"replaced {path}, which differed from lgrep's skill")
    return change


def _skill(plan: Plan, client: Client, scope: Scope, *, project: Path, where: Locations, install: bool) -> None:
    """The skill, where the client reads skills at `scope`."""
    folder = client.skills_folder(scope, project, where)
    if folder is not None:
        confine = project if scope == "project" else None
        plan.changes.append(_skill_change(folder, install, stop=_stop(scope, client, project, where), confine=confine))


def _stop(scope: Scope, client: Client, project: Path, where: Locations) -> Path:
    """How far up uninstall prunes the folders it leaves empty: the project, or the client's folder."""
    return project if scope == "project" else client.folder(where)


def _settings_file(client: Client, scope: Scope, project: Path, where: Locations) -> Path:
    """The settings file install writes: the first of the client's files of `scope` that is there
    (`Client.files`), else the first."""
    candidates = client.files(scope, project, where)
    if len(candidates) == 1:
        return candidates[0]  # nothing to choose: not even looked at
    confine = project if scope == "project" else None
    return next((path for path in candidates if files.exists(path, confine=confine)), candidates[0])


# ---------------------------------------------------------- the servers of one object (JSON, TOML)


def _servers_client(
    plan: Plan, client: Client, scope: Scope, *, project: Path, command: str | None, where: Locations
) -> None:
    """A client whose servers are members of one object of its settings file, by its row alone."""
    plan.changes.append(_server_change(plan, client, scope, project=project, command=command, where=where))
    _skill(plan, client, scope, project=project, where=where, install=command is not None)


def _server_change(
    plan: Plan, client: Client, scope: Scope, *, project: Path, command: str | None, where: Locations
) -> Change:
    """Install sets our member of the client's servers object (the entry's own keys ours, its
    defaults only where absent), uninstall takes it out, and the container when install added it and
    left it empty, and the file when lgrep created it and it holds nothing else (never the user's
    file of a client that keeps its own state there)."""
    config = _settings_file(client, scope, project, where)
    confine = project if scope == "project" else None
    key_path = [client.container, SERVER_NAME]
    stop = _stop(scope, client, project, where)
    if client.toml:
        return _toml_change(config, key_path, client, scope, command=command, confine=confine, plan=plan, stop=stop)
    if command is not None:
        doc = _read_json(config, confine)
        return _json_install(plan, client, scope, config, key_path, doc=doc, command=command, confine=confine)
    deletable = not (client.keeps_user_file and scope == "user")
    change = _json_change(
        config,
        "MCP server",
        key_path,
        None,
        new_document=dict,
        deletable=deletable,
        confine=confine,
        ledger=plan.ledger,
    )
    if change.action == "delete":
        change.remove_empty_dirs_up_to = stop
    return change


def _our_entry(
    existing: Any, client: Client, scope: Scope, command: str, file: Path, *, also: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """lgrep's entry as the client's row writes it (and `also` where absent), merged into the entry
    `existing` in `file`, which install refuses when it runs something else: the members install
    sets, the merged entry, and the notes of what was kept."""
    _refuse_not_lgrep(existing, file, argv=client.entry.argv)
    forced, defaults = client.entry.write(command, scope)
    entry, notes = _merge_entry(existing, forced, {**defaults, **(also or {})}, where=str(file))
    return forced, entry, notes


def _json_install(
    plan: Plan,
    client: Client,
    scope: Scope,
    config: Path,
    key_path: list[str],
    *,
    doc: Any,
    command: str,
    confine: Path | None,
    new_document: Callable[[], dict[str, Any]] = dict,
    also: dict[str, Any] | None = None,
) -> Change:
    """Install's edit of a JSON(C) settings file `config` (parsed: `doc`): lgrep's entry at `key_path`."""
    _forced, entry, notes = _our_entry(_get(doc, key_path), client, scope, command, config, also=also)
    change = _json_change(
        config,
        "MCP server",
        key_path,
        entry,
        new_document=new_document,
        deletable=False,
        confine=confine,
        ledger=plan.ledger,
    )
    change.notes += notes
    return change


def _toml_change(
    path: Path,
    key_path: list[str],
    client: Client,
    scope: Scope,
    *,
    command: str | None,
    confine: Path | None,
    plan: Plan,
    stop: Path,
) -> Change:
    """The server's table in a TOML settings file (Codex's `[mcp_servers.lgrep]`)."""
    before = files.read_text(path, confine=confine)
    source = str(path)
    text = before or ""
    if command is not None:
        existing = tomlfile.get_table(tomlfile.loads(text, source), key_path)
        forced, _entry, notes = _our_entry(existing, client, scope, command, path)
        after = tomlfile.set_table(text, key_path, forced, source)
        change = Change(path, before, after, "MCP server", confine=confine, recorded=before is None)
        change.notes += notes
        return change
    after: str | None = tomlfile.remove_table(text, key_path, source) if before is not None else None
    recorded = False
    emptied = before is not None and after != before and not (after or "").strip()
    # A file lgrep created, left empty, goes; the user's own (or a dotfiles link) stays.
    if emptied and (confine is not None or not path.is_symlink()) and created_by_lgrep(plan.ledger, path):
        after, recorded = None, True
    change = Change(path, before, after, "MCP server", confine=confine, recorded=recorded)
    change.remove_empty_dirs_up_to = stop if recorded else None
    return change


# ------------------------------------------------------------------------------------ opencode


def _opencode_v2(doc: Any, mcp: str) -> bool:
    """Whether the file uses OpenCode's newer config shape (`mcp.servers.<name>`, `disabled`), as
    OpenCode itself decides it: a `servers` object under `mcp` that is not a server named `servers`."""
    servers = _get(doc, [mcp, "servers"])
    if not isinstance(servers, dict):
        return False
    return not any(k in servers and (not isinstance(servers[k], dict)) for k in ("type", "enabled"))


def _opencode_new() -> dict[str, Any]:
    return {"$schema": OPENCODE_SCHEMA}


def _opencode(
    plan: Plan, client: Client, scope: Scope, *, project: Path, command: str | None, where: Locations
) -> None:
    """OpenCode: its servers are members of `mcp`, or of `mcp.servers` in a file of its newer shape,
    which install keeps (and uninstall takes lgrep out of either)."""
    confine = project if scope == "project" else None
    config = _settings_file(client, scope, project, where)
    doc = _read_json(config, confine)
    mcp = client.container
    v2 = _opencode_v2(doc, mcp)
    key_path = [mcp, "servers", SERVER_NAME] if v2 else [mcp, SERVER_NAME]
    if command is None:
        before = files.read_text(config, confine=confine)
        after: str | None = before
        recorded = False
        if before is not None and before.strip():
            source = str(config)
            containers = [(mcp, "servers"), (mcp,)]
            ours = _containers_of_lgrep(config, containers, plan.ledger, whole_file=True)
            after = _remove(before, [mcp, "servers", SERVER_NAME], containers, ours, source)
            after = _remove(after, [mcp, SERVER_NAME], [(mcp,)], ours, source)
            if after != before and _ours_to_delete(config, after, _opencode_new(), confine, plan.ledger):
                after, recorded = None, True
        change = Change(
            config, before, after, "MCP server", confine=confine, recorded=recorded, forgets_containers=True
        )
        plan.changes.append(change)
        _skill(plan, client, scope, project=project, where=where, install=False)
        return
    also = {} if v2 else {"enabled": True}
    change = _json_install(
        plan,
        client,
        scope,
        config,
        key_path,
        doc=doc,
        command=command,
        confine=confine,
        new_document=_opencode_new,
        also=also,
    )
    if v2:
        change.notes.append("the file uses OpenCode's newer shape (mcp.servers): lgrep added there")
    plan.changes.append(change)
    _skill(plan, client, scope, project=project, where=where, install=True)


# ---------------------------------------------------------------------------------- claude code


def _claude(plan: Plan, client: Client, scope: Scope, *, project: Path, command: str | None, where: Locations) -> None:
    """Claude Code: its row's servers object, and, for a project, the approval its `.mcp.json`
    server waits for."""
    plan.changes.append(_server_change(plan, client, scope, project=project, command=command, where=where))
    if scope == "project":
        approval = project / ".claude" / "settings.local.json"
        plan.changes.append(_claude_approval(approval, command is not None, plan, project))
    _skill(plan, client, scope, project=project, where=where, install=command is not None)


def _claude_approval(path: Path, install: bool, plan: Plan, project: Path) -> Change:
    """Project servers of `.mcp.json` wait for the user's approval; running `lgrep install` is that
    approval, recorded where Claude Code records its own: `enabledMcpjsonServers` in the project's
    local settings."""
    what = "approval of the project MCP server"
    before = files.read_text(path, confine=project)
    doc = _read_json(path, project)
    source = str(path)
    if install:
        disabled = _get(doc, ["disabledMcpjsonServers"])
        if isinstance(disabled, list) and SERVER_NAME in disabled:
            plan.notes.append(f"{path} lists lgrep in disabledMcpjsonServers: left as you set it")
        approvals = ("enabledMcpjsonServers",)
        if doc is None:
            text = jsonc.dump({"enabledMcpjsonServers": [SERVER_NAME]}) + "\n"
            change = Change(path, before, text, what, confine=project, recorded=True)
            change.containers = [approvals] if before is not None else []  # an empty file of the user's
            return change
        assert before is not None
        after = jsonc.add_item(before, list(approvals), SERVER_NAME, source)
        change = Change(path, before, after, what, confine=project)
        change.containers = _added(before, [approvals], source)
        return change
    if doc is None or before is None:
        return Change(path, before, before, what, confine=project)
    after = jsonc.remove_item(before, ["enabledMcpjsonServers"], SERVER_NAME, source)
    if after != before:
        ours = _containers_of_lgrep(path, [("enabledMcpjsonServers",)], plan.ledger, whole_file=True)
        after = _drop_emptied(after, [("enabledMcpjsonServers",)], ours, source)
    deleted = after != before and _ours_to_delete(path, after, {}, project, plan.ledger)
    change = Change(path, before, None if deleted else after, what, confine=project, recorded=deleted)
    change.remove_empty_dirs_up_to = path.parent.parent
    change.forgets_containers = True
    return change


# Clients whose settings say more than their row: their own installer (the rest: `_servers_client`).
_INSTALLERS_OF_THEIR_OWN: dict[str, Installer] = {"opencode": _opencode, "claude-code": _claude}


# ------------------------------------------------------------------------------------ AGENTS.md


def _agents_section() -> str:
    return f"{AGENTS_START}\n{asset_text('agents-md', 'AGENTS.section.md').rstrip()}\n{AGENTS_END}"


def _agents_md(plan: Plan, scope: Scope, *, project: Path, command: str | None) -> None:
    if scope != "project":
        raise InvalidRequestError("agents-md writes the project's AGENTS.md: it has no --user scope")
    path = project / "AGENTS.md"
    before = files.read_text(path, confine=project)
    text = before or ""
    start, end = text.find(AGENTS_START), text.find(AGENTS_END)
    if (start < 0) != (end < 0) or (start >= 0 and end < start):
        raise ConfigError(
            f"{path}: the lgrep section markers are broken ({AGENTS_START} … {AGENTS_END}); fix them by hand"
        )
    if command is not None:
        section = _agents_section()
        if start >= 0:
            after = text[:start] + section + text[end + len(AGENTS_END) :]
        elif text:
            after = text + ("" if text.endswith("\n") else "\n") + "\n" + section + "\n"
        else:
            after = section + "\n"
        plan.changes.append(Change(path, before, after, "agent instructions", confine=project))
        return
    if start < 0:
        plan.changes.append(Change(path, before, before, "agent instructions", confine=project))
        return
    head, tail = text[:start], text[end + len(AGENTS_END) :]
    if tail.startswith("\n"):
        tail = tail[1:]
    if head.endswith("\n\n") and not tail:
        head = head[:-1]  # the blank line install put before the section
    after = head + tail
    plan.changes.append(Change(path, before, after if after.strip() else None, "agent instructions", confine=project))
