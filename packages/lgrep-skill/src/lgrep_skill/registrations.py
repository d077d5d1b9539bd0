"""Where lgrep is registered as an MCP server, for each agent client, as seen from one project.

A client can load lgrep from several places at once: Claude Code from the user's `~/.claude.json`,
the project's entry in it (`claude mcp add -s local`), the project's `.mcp.json`, and the lgrep
plugin; OpenCode from the user's config and the project's. Two of them give the agent a second copy
of every tool (the plugin's `plugin:lgrep:lgrep` beside `lgrep`) or make the client warn about
conflicting scopes, so `lgrep install` and `lgrep init` read them first and do not add another, and
`lgrep doctor` lists them. This module only reads: nothing here writes, starts or connects.

Each client of `clients.AGENT_CLIENTS` is read by its row (the user's files, the project's, the
object that holds the servers, the entry's shape, the user's trust record), or by a reader of its
own where its files say more (OpenCode, Claude Code): what it finds goes into a `Reading` (a
`Registration` per entry, a problem per file it could not read, so a broken file hides nothing
else). A server counts as lgrep's when its name is `lgrep` or its command runs `lgrep mcp` (or
`lgrep-mcp`) under another name. Project files are read confined to their folder, as the installers
read them (`files`: no symbolic link followed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from lgrep_core.domain.errors import ConfigError

from . import files, jsonc, tomlfile
from .clients import (
    AGENT_CLIENTS,
    SERVER_NAME,
    WORKSPACE_FOLDER,
    Client,
    Entry,
    Locations,
    git_root,
    project_tree,
    runs_lgrep,
)

__all__ = [
    "READERS",
    "Reading",
    "Registration",
    "find_registrations",
    "project_tree",
    "runs_lgrep",
]


@dataclass(frozen=True)
class Registration:
    """One place a client loads lgrep from."""

    client: str  # as `lgrep install` names it
    scope: str  # "user", "project", "local" (Claude Code: this project, in the user's file), "plugin"
    file: Path  # the settings file that holds the entry (a plugin: the settings that enable it)
    name: str  # the server's name as the client shows it (`plugin:lgrep:lgrep` for the plugin)
    key: str  # where in the file: `mcpServers.lgrep`, `projects["/p"].mcpServers.lgrep`, ...
    command: tuple[str, ...] | None  # what the client runs (None: a remote server, see `url`)
    cwd: Path  # the folder the client starts it in
    env: dict[str, str] = field(default_factory=dict[str, str])  # what the entry adds to the environment
    url: str | None = None
    enabled: bool = True  # False: written but switched off (the client does not start it)
    notes: tuple[str, ...] = ()
    plugin: str | None = None  # the plugin's id (`lgrep@lgrep`) for scope "plugin"
    # A project file's entry: whether the client trusts the folder (or approved the server) by its own
    # record in the user's files (never the project's), and what that record says. None: the client
    # keeps no trust record lgrep can read (OpenCode, Cursor, VS Code), or the entry is the user's own.
    trusted: bool | None = None
    trust: str = ""

    @property
    def from_project(self) -> bool:
        """Whether a project's own file defines it: a repository's content, which anyone who wrote the
        repository chose (the user's files, `local` entries in ~/.claude.json and plugins are theirs)."""
        return self.scope == "project"

    def describe(self) -> str:
        """Where it is, in a few words: `/home/me/.claude.json (user)`, `the plugin lgrep@lgrep (...)`."""
        if self.scope == "plugin":
            return f"the plugin's {self.name} (enabled in {self.file})" if self.enabled else f"the plugin's {self.name}"
        named = "" if self.name == SERVER_NAME else f", as {json.dumps(self.name)}"
        return f"{self.file} ({self.scope}{named})"

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "scope": self.scope,
            "file": str(self.file),
            "name": self.name,
            "key": self.key,
            "command": list(self.command) if self.command is not None else None,
            "url": self.url,
            "cwd": str(self.cwd),
            "env": sorted(self.env),  # the names only: values may be secrets
            "enabled": self.enabled,
            "notes": list(self.notes),
            "from_project": self.from_project,
            **({"plugin": self.plugin} if self.plugin else {}),
            **({"trusted": self.trusted, "trust": self.trust} if self.from_project else {}),
        }


@dataclass
class Reading:
    """What one client's reader found: lgrep's registrations, and the files it could not read."""

    client: str
    registrations: list[Registration] = field(default_factory=list[Registration])
    problems: list[tuple[Path, str]] = field(default_factory=list[tuple[Path, str]])
    _read: dict[Path, dict[str, Any] | None] = field(default_factory=dict[Path, "dict[str, Any] | None"], repr=False)

    @property
    def active(self) -> list[Registration]:
        return [r for r in self.registrations if r.enabled]

    def json_file(self, path: Path, *, confine: Path | None) -> dict[str, Any] | None:
        """The JSON(C) object in `path` (None when absent or empty); a file that cannot be read or is
        not an object is noted as a problem of this client (once) and read as absent."""
        if path not in self._read:
            self._read[path] = self._load(path, confine)
        return self._read[path]

    def toml_file(self, path: Path, *, confine: Path | None) -> dict[str, Any] | None:
        """The TOML document in `path`, as `json_file` reads JSON (Codex's config.toml)."""
        if path not in self._read:
            self._read[path] = self._load(path, confine, parse=tomlfile.loads)
        return self._read[path]

    def _load(
        self, path: Path, confine: Path | None, parse: Callable[[str, str], Any] = jsonc.loads
    ) -> dict[str, Any] | None:
        try:
            text = files.read_text(path, confine=confine)
            if text is None or not text.strip():
                return None
            doc = parse(text, str(path))
        except ConfigError as exc:
            self.problems.append((path, exc.message))
            return None
        except OSError as exc:
            self.problems.append((path, f"cannot read {path}: {exc.strerror or exc}"))
            return None
        if not isinstance(doc, dict):
            self.problems.append((path, f"{path}: expected a JSON object"))
            return None
        return doc  # pyright: ignore[reportUnknownVariableType]


Reader = Callable[[Reading, Client, Path, Locations], None]
Judgement = tuple[bool, tuple[str, ...], tuple[bool | None, str]]
# Whether the client starts a server of a file, what to note, and whether the user's own records
# trust it (and what they say), from its name and its entry.
Verdict = Callable[[str, dict[str, Any]], Judgement]
# Claude Code's approval of a project's server, by name: whether it starts it, why, whether the
# user's own records approve it.
Approval = Callable[[str], tuple[bool, str, bool | None]]
# The clients `find_registrations` reads, in its order: every row of the table.
READERS: tuple[Client, ...] = AGENT_CLIENTS


def find_registrations(project: Path, where: Locations, clients: list[str] | None = None) -> list[Reading]:
    """What each client (every one of `READERS`, or those named) loads lgrep from when it runs in
    `project` (an absolute, resolved folder). Never raises for a client's files: what it cannot
    read is in that Reading's problems."""
    readings: list[Reading] = []
    for client in READERS:
        if clients is not None and client.name not in clients:
            continue
        reading = Reading(client.name)
        _READERS_OF_THEIR_OWN.get(client.name, _read_servers)(reading, client, project, where)
        readings.append(reading)
    return readings


# ------------------------------------------------------------------------------------ shared


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):  # pyright: ignore[reportUnknownVariableType]
        return list(value)  # pyright: ignore[reportUnknownArgumentType]
    return None


def _env(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _dict(value).items()}


class _Place(NamedTuple):
    """A settings file as a client reads it: its scope, the folder it is read confined to (None: the
    user's own, read through its links), and the user's trust record for the servers in it."""

    path: Path
    scope: str
    confine: Path | None = None
    trust: tuple[bool | None, str] = (None, "")


def _places(reading: Reading, client: Client, project: Path, where: Locations, user: Iterable[Path]) -> list[_Place]:
    """The client's files: the user's (`user`), then the project's, nearest first; the user's trust
    record for the project (read first) goes with the project's."""
    trust = client.trusts(reading, project, where)
    return [
        *(_Place(path, "user") for path in user),
        *(_Place(path, "project", confine, trust) for path, confine in client.project_paths(project)),
    ]


def _read_servers(reading: Reading, client: Client, project: Path, where: Locations) -> None:
    """A client whose servers are the members of one object of its files, by its row."""
    for place in _places(reading, client, project, where, client.user_files(where)):
        _servers_file(reading, client, place, project)


def _servers_file(
    reading: Reading, client: Client, place: _Place, project: Path, approvals: Approval | None = None
) -> None:
    """The servers object of one settings file: each server's verdict from `approvals` (Claude Code:
    per server, whether the user approved it, said in its notes too), else from the place's trust
    (the user's record for the project, for every server of the file)."""
    doc = (reading.toml_file if client.toml else reading.json_file)(place.path, confine=place.confine)
    if doc is None:
        return
    container = client.container
    verdict = _approved(approvals) if approvals is not None else _trusted(place.trust)
    _servers(
        reading,
        place.path,
        doc.get(container),
        scope=place.scope,
        prefix=(container,),
        project=project,
        shape=client.entry,
        verdict=verdict,
    )


def _trusted(trust: tuple[bool | None, str]) -> Verdict:
    return lambda name, entry: (True, (), trust)


def _approved(approvals: Approval) -> Verdict:
    def verdict(name: str, entry: dict[str, Any]) -> Judgement:
        enabled, note, trusted = approvals(name)
        return enabled, (note,) if note else (), (trusted, note)

    return verdict


def _remote(entry: dict[str, Any]) -> bool:
    """Whether an entry is a remote server (a url, no command), as Claude Code, Codex, Gemini CLI,
    Cursor and VS Code write one."""
    return entry.get("type") in ("http", "sse") or ("url" in entry and "command" not in entry)


def _servers(
    reading: Reading,
    path: Path,
    servers: Any,
    *,
    scope: str,
    prefix: tuple[str, ...],
    project: Path,
    shape: Entry,
    verdict: Verdict,
    remote: Callable[[dict[str, Any]], bool] = _remote,
) -> None:
    """Record the lgrep entries of a servers object (name -> entry) found at `prefix` of `path`: a
    server named lgrep, or one whose command runs lgrep under another name, read as `shape` says
    (the client puts the project folder in for WORKSPACE_FOLDER where it does)."""
    for name, value in _dict(servers).items():
        entry = _dict(value)
        command = shape.command(entry)
        if command is not None and shape.workspace:
            command = [arg.replace(WORKSPACE_FOLDER, str(project)) for arg in command]
        if name != SERVER_NAME and not (command and runs_lgrep(command)):
            continue
        enabled, notes, (trusted, trust) = verdict(name, entry)
        is_remote = remote(entry)
        reading.registrations.append(
            Registration(
                client=reading.client,
                scope=scope,
                file=path,
                name=name,
                key=_key(*prefix, name),
                command=None if is_remote else tuple(command or ()),
                url=str(entry.get("url")) if is_remote else None,
                cwd=project,
                env=_env(entry.get(shape.env)),
                enabled=enabled,
                notes=notes,
                trusted=trusted,
                trust=trust,
            )
        )


def _key(*parts: str) -> str:
    return ".".join(part if part.replace("-", "").replace("_", "").isalnum() else json.dumps(part) for part in parts)


# ------------------------------------------------------------------------------------ opencode


def _read_opencode(reading: Reading, client: Client, project: Path, where: Locations) -> None:
    # OpenCode merges the user's files (the older config.json first) and the project's (found up to the
    # git root, in the folder or its .opencode/); it starts local servers in the folder it runs in.
    user = sorted(client.user_files(where), key=lambda path: path.name != "config.json")
    for place in _places(reading, client, project, where, user):
        _opencode_file(reading, client, place, project)


def _opencode_file(reading: Reading, client: Client, place: _Place, project: Path) -> None:
    doc = reading.json_file(place.path, confine=place.confine)
    if doc is None:
        return
    mcp = _dict(doc.get(client.container))
    servers = mcp.get("servers")
    # The newer shape (`mcp.servers.<name>`) unless `servers` is itself a server (see installers).
    v2 = isinstance(servers, dict) and not any(
        k in servers and not isinstance(servers[k], dict) for k in ("type", "enabled")
    )
    off = "switched off in the file (" + ("disabled" if v2 else "enabled: false") + ")"

    def verdict(name: str, entry: dict[str, Any]) -> Judgement:
        enabled = entry.get("disabled") is not True if v2 else entry.get("enabled") is not False
        return enabled, () if enabled else (off,), place.trust

    _servers(
        reading,
        place.path,
        _dict(servers) if v2 else mcp,
        scope=place.scope,
        prefix=(client.container, "servers") if v2 else (client.container,),
        project=project,
        shape=client.entry,
        verdict=verdict,
        remote=lambda entry: entry.get("type") == "remote",
    )


# ---------------------------------------------------------------------------------- claude code


def _read_claude_code(reading: Reading, client: Client, project: Path, where: Locations) -> None:
    # Claude Code loads one server of a name, local over project over user, and warns when a name is
    # in several scopes; plugin servers are named `plugin:<plugin>:<server>`, so a plugin adds a second
    # copy of every tool. It starts servers in the project folder.
    (claude_json,) = client.user_files(where)
    _servers_file(reading, client, _Place(claude_json, "user"), project)
    projects = _dict((reading.json_file(claude_json, confine=None) or {}).get("projects"))
    # Claude Code keys a project by its git repository's root (the folder itself outside git).
    keys = dict.fromkeys(str(p) for p in (git_root(project), project) if p is not None)
    for key in keys:
        servers = _dict(projects.get(key)).get(client.container)
        prefix = ("projects", key, client.container)
        _servers(
            reading,
            claude_json,
            servers,
            scope="local",
            prefix=prefix,
            project=project,
            shape=client.entry,
            verdict=_trusted((None, "")),
        )
    trusted = any(
        _dict(projects.get(str(folder))).get("hasTrustDialogAccepted") is True for folder in (project, *project.parents)
    )
    approvals = _claude_approvals(reading, project, where, [_dict(projects.get(k)) for k in keys], trusted=trusted)
    for path, confine in client.project_paths(project):
        _servers_file(reading, client, _Place(path, "project", confine), project, approvals)
    _claude_plugins(reading, client, project, where)


def _claude_settings(reading: Reading, project: Path, where: Locations) -> list[dict[str, Any]]:
    """The settings files that can approve servers or enable plugins, least specific first: the
    user's, the project's shared, the project's local (the most specific one that says wins)."""
    claude = project / ".claude"
    return [
        reading.json_file(where.claude_dir / "settings.json", confine=None) or {},
        reading.json_file(claude / "settings.json", confine=project) or {},
        reading.json_file(claude / "settings.local.json", confine=project) or {},
    ]


def _claude_approvals(
    reading: Reading, project: Path, where: Locations, state: list[dict[str, Any]], *, trusted: bool
) -> Approval:
    """Whether a server of the project's `.mcp.json` runs: Claude Code asks before it starts one
    until the user approves it (`enabledMcpjsonServers`, `enableAllProjectMcpServers`) and skips one
    they turned down (`disabledMcpjsonServers`). A repository cannot approve its own servers: the
    project's settings files (`.claude/settings*.json`, which a clone can carry) count only once the
    user trusted the folder (`hasTrustDialogAccepted` in ~/.claude.json, for it or a parent), as
    Claude Code counts them; the user's own records count always. The third value: approved by a
    record the repository cannot write."""
    user_settings, shared, local = _claude_settings(reading, project, where)
    own = [*state, user_settings]
    sources = [*own, shared, local] if trusted else own

    def approval(name: str) -> tuple[bool, str, bool | None]:
        if any(name in (_strings(s.get("disabledMcpjsonServers")) or []) for s in (*own, shared, local)):
            return False, "turned down in disabledMcpjsonServers: Claude Code does not start it", False
        if any(name in (_strings(s.get("enabledMcpjsonServers")) or []) for s in sources):
            return True, "approved", True
        if any(s.get("enableAllProjectMcpServers") is True for s in sources):
            return True, "approved (enableAllProjectMcpServers)", True
        if not trusted:
            return True, "waiting for approval: Claude Code asks before it starts it (the folder is not trusted)", False
        return True, "waiting for approval: Claude Code asks before it starts it", False

    return approval


def _claude_plugins(reading: Reading, client: Client, project: Path, where: Locations) -> None:
    installed = where.claude_dir / "plugins" / "installed_plugins.json"
    doc = reading.json_file(installed, confine=None)
    if doc is None:
        return
    for plugin_id, entries in _dict(doc.get("plugins")).items():
        # Installed for every project (user scope) or for this one (project, local scope); a plugin
        # installed in two scopes is loaded once.
        here = [_dict(e) for e in (entries if isinstance(entries, list) else [])]  # pyright: ignore[reportUnknownVariableType]
        here = [e for e in here if e.get("scope") == "user" or e.get("projectPath") == str(project)]
        if not here:
            continue
        install_path = Path(str(here[-1].get("installPath") or ""))
        servers = _plugin_servers(reading, client.entry, install_path)
        plugin = plugin_id.split("@", 1)[0]
        if plugin != SERVER_NAME and not any(runs_lgrep(argv) for argv in servers.values()):
            continue
        file, enabled = _plugin_switch(reading, plugin_id, project, where)
        scopes = ", ".join(str(e.get("scope")) for e in here)
        notes = [f"plugin {plugin_id} ({scopes} scope), installed in {install_path}"]
        if not enabled:
            notes.append("disabled" if file != installed else "not enabled in any settings file")
        if not servers:
            notes.append("its MCP servers could not be read")
        for server, argv in (servers or {SERVER_NAME: []}).items():
            if servers and server != SERVER_NAME and not runs_lgrep(argv):
                continue
            reading.registrations.append(
                Registration(
                    client=reading.client,
                    scope="plugin",
                    file=file,
                    name=f"plugin:{plugin}:{server}",
                    key=f"enabledPlugins.{json.dumps(plugin_id)}",
                    command=tuple(argv),
                    cwd=project,
                    enabled=enabled,
                    notes=tuple(notes),
                    plugin=plugin_id,
                )
            )


def _plugin_switch(reading: Reading, plugin_id: str, project: Path, where: Locations) -> tuple[Path, bool]:
    """The settings file that switches a plugin on or off, and what it says: the most specific of
    the user's, the project's and the project's local settings that names it (none: off, and the
    file is the plugins' record)."""
    paths = [where.claude_dir / "settings.json", project / ".claude" / "settings.json"]
    paths.append(project / ".claude" / "settings.local.json")
    found = (where.claude_dir / "plugins" / "installed_plugins.json", False)
    for path, settings in zip(paths, _claude_settings(reading, project, where), strict=True):
        switches = _dict(settings.get("enabledPlugins"))
        if plugin_id in switches:
            found = (path, switches[plugin_id] is True)
    return found


def _plugin_servers(reading: Reading, shape: Entry, install_path: Path) -> dict[str, list[str]]:
    """The stdio servers a plugin declares (its `.mcp.json`, or `mcpServers` in its manifest), with
    `${CLAUDE_PLUGIN_ROOT}` put in as Claude Code does."""
    if not install_path.is_absolute():
        return {}
    doc = reading.json_file(install_path / ".mcp.json", confine=None)
    servers = _dict(doc.get("mcpServers")) if doc is not None else {}
    if not servers:
        manifest = reading.json_file(install_path / ".claude-plugin" / "plugin.json", confine=None) or {}
        servers = _dict(manifest.get("mcpServers"))
    found: dict[str, list[str]] = {}
    for name, entry in servers.items():
        argv = shape.command(_dict(entry))
        if argv is not None:
            found[name] = [a.replace("${CLAUDE_PLUGIN_ROOT}", str(install_path)) for a in argv]
    return found


# Clients whose files say more than their row: their own reader (the rest: `_read_servers`).
_READERS_OF_THEIR_OWN: dict[str, Reader] = {"opencode": _read_opencode, "claude-code": _read_claude_code}
