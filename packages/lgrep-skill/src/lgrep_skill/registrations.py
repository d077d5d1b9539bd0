"""Where lgrep is registered as an MCP server, for each agent client, as seen from one project.

A client can load lgrep from several places at once: Claude Code from the user's `~/.claude.json`,
the project's entry in it (`claude mcp add -s local`), the project's `.mcp.json`, and the lgrep
plugin; OpenCode from the user's config and the project's. Two of them give the agent a second copy
of every tool (the plugin's `plugin:lgrep:lgrep` beside `lgrep`) or make the client warn about
conflicting scopes, so `lgrep install` and `lgrep init` read them first and do not add another, and
`lgrep doctor` lists them. This module only reads: nothing here writes, starts or connects.

Each client has one reader in `READERS`: a function that looks at the files that client reads and
adds what it finds to a `Reading` (a `Registration` per entry, a problem per file it could not
read, so a broken file hides nothing else). A server counts as lgrep's when its name is `lgrep` or
its command runs `lgrep mcp` (or `lgrep-mcp`) under another name. Project files are read confined
to their folder, as the installers read them (`files`: no symbolic link followed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lgrep_core.errors import ConfigError

from . import files, jsonc, tomlfile
from .installers import SERVER_NAME, WORKSPACE_FOLDER, Locations

__all__ = [
    "READERS",
    "ClientReader",
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


Reader = Callable[[Reading, Path, Locations], None]


@dataclass(frozen=True)
class ClientReader:
    """A client whose registrations lgrep can find: its name, its program (looked up on PATH by the
    command, to say whether it is installed), its settings folder, and its reader."""

    name: str
    program: str
    folder: Callable[[Locations], Path]
    read: Reader


def runs_lgrep(argv: list[str] | tuple[str, ...]) -> bool:
    """Whether a server command starts lgrep's MCP server (`lgrep mcp ...`, `lgrep-mcp ...`)."""
    if not argv:
        return False
    program = Path(argv[0]).name.removesuffix(".exe")
    return program == "lgrep-mcp" or (program == SERVER_NAME and list(argv[1:2]) == ["mcp"])


def find_registrations(project: Path, where: Locations, clients: list[str] | None = None) -> list[Reading]:
    """What each client (every one of `READERS`, or those named) loads lgrep from when it runs in
    `project` (an absolute, resolved folder). Never raises for a client's files: what it cannot
    read is in that Reading's problems."""
    readings: list[Reading] = []
    for reader in READERS:
        if clients is not None and reader.name not in clients:
            continue
        reading = Reading(reader.name)
        reader.read(reading, project, where)
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


def _git_root(folder: Path) -> Path | None:
    for parent in (folder, *folder.parents):
        if (parent / ".git").exists():
            return parent
    return None


def project_tree(project: Path) -> Path:
    """The folder whose files can define a project's servers: the git repository's root (clients read
    settings files up to it), or the project itself outside git. What lies in it came with the clone."""
    return _git_root(project) or project


def _up_to_git_root(project: Path) -> Iterator[Path]:
    """The project and its parents up to the git repository's root (the project alone outside git):
    where clients look for a project's settings file."""
    root = _git_root(project)
    yield project
    if root is not None and root != project:
        for parent in project.parents:
            yield parent
            if parent == root:
                return


def _add(
    reading: Reading,
    path: Path,
    scope: str,
    key: tuple[str, ...],
    entry: dict[str, Any],
    *,
    command: list[str] | None,
    remote: bool,
    cwd: Path,
    env: dict[str, str],
    enabled: bool,
    notes: tuple[str, ...],
    trust: tuple[bool | None, str] = (None, ""),
) -> None:
    """Record the server entry at `key` of `path`: its command, or its url when it is remote."""
    reading.registrations.append(
        Registration(
            client=reading.client,
            scope=scope,
            file=path,
            name=key[-1],
            key=_key(*key),
            command=None if remote else tuple(command or ()),
            url=str(entry.get("url")) if remote else None,
            cwd=cwd,
            env=env,
            enabled=enabled,
            notes=notes,
            trusted=trust[0],
            trust=trust[1],
        )
    )


def _key(*parts: str) -> str:
    return ".".join(part if part.replace("-", "").replace("_", "").isalnum() else json.dumps(part) for part in parts)


# ------------------------------------------------------------------------------------ opencode


def _read_opencode(reading: Reading, project: Path, where: Locations) -> None:
    # OpenCode merges the user's files and the project's (found up to the git root, in the folder or
    # its .opencode/); it starts local servers in the folder it runs in.
    folder = where.opencode_dir
    for name in ("config.json", "opencode.json", "opencode.jsonc"):
        _opencode_file(reading, folder / name, "user", project, confine=None)
    for here in _up_to_git_root(project):
        for name in ("opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"):
            _opencode_file(reading, here / name, "project", project, confine=here)


def _opencode_file(reading: Reading, path: Path, scope: str, project: Path, *, confine: Path | None) -> None:
    doc = reading.json_file(path, confine=confine)
    if doc is None:
        return
    mcp = _dict(doc.get("mcp"))
    servers = mcp.get("servers")
    # The newer shape (`mcp.servers.<name>`) unless `servers` is itself a server (see installers).
    v2 = isinstance(servers, dict) and not any(
        k in servers and not isinstance(servers[k], dict) for k in ("type", "enabled")
    )
    entries = _dict(servers) if v2 else mcp
    prefix = ("mcp", "servers") if v2 else ("mcp",)
    for name, value in entries.items():
        entry = _dict(value)
        command = _strings(entry.get("command"))
        if name != SERVER_NAME and not (command and runs_lgrep(command)):
            continue
        enabled = entry.get("disabled") is not True if v2 else entry.get("enabled") is not False
        off = "switched off in the file (" + ("disabled" if v2 else "enabled: false") + ")"
        _add(
            reading,
            path,
            scope,
            (*prefix, name),
            entry,
            command=command,
            remote=entry.get("type") == "remote",
            cwd=project,
            env=_env(entry.get("environment")),
            enabled=enabled,
            notes=() if enabled else (off,),
            trust=(None, "OpenCode keeps no record of trusted folders: it starts a project's servers without asking"),
        )


# ---------------------------------------------------------------------------------- claude code


def _read_claude_code(reading: Reading, project: Path, where: Locations) -> None:
    # Claude Code loads one server of a name, local over project over user, and warns when a name is
    # in several scopes; plugin servers are named `plugin:<plugin>:<server>`, so a plugin adds a second
    # copy of every tool. It starts servers in the project folder.
    state = reading.json_file(where.claude_json, confine=None) or {}
    servers = state.get("mcpServers")
    _claude_servers(reading, where.claude_json, servers, scope="user", prefix=("mcpServers",), project=project)
    projects = _dict(state.get("projects"))
    # Claude Code keys a project by its git repository's root (the folder itself outside git).
    keys = dict.fromkeys(str(p) for p in (_git_root(project), project) if p is not None)
    for key in keys:
        entry = _dict(projects.get(key))
        prefix = ("projects", key, "mcpServers")
        _claude_servers(
            reading, where.claude_json, entry.get("mcpServers"), scope="local", prefix=prefix, project=project
        )
    trusted = any(
        _dict(projects.get(str(folder))).get("hasTrustDialogAccepted") is True for folder in (project, *project.parents)
    )
    approvals = _claude_approvals(reading, project, where, [_dict(projects.get(k)) for k in keys], trusted=trusted)
    for here in _up_to_git_root(project):
        mcp_json = here / ".mcp.json"
        doc = reading.json_file(mcp_json, confine=here)
        if doc is not None:
            servers = doc.get("mcpServers")
            _claude_servers(
                reading,
                mcp_json,
                servers,
                scope="project",
                prefix=("mcpServers",),
                project=project,
                approvals=approvals,
            )
    _claude_plugins(reading, project, where)


Approval = Callable[[str], tuple[bool, str, bool | None]]


def _claude_servers(
    reading: Reading,
    path: Path,
    servers: Any,
    *,
    scope: str,
    prefix: tuple[str, ...],
    project: Path,
    approvals: Approval | None = None,
    workspace: bool = False,
    trust: tuple[bool | None, str] = (None, ""),
) -> None:
    """The lgrep entries of a `mcpServers`-like object (name -> {command, args, env} or a remote
    url), as Claude Code, Gemini CLI, Cursor, VS Code and Codex write them. `workspace`: the client
    puts the project folder in for `${workspaceFolder}` (Cursor, VS Code). `approvals` (Claude Code)
    says per server whether the client starts it, why, and whether the user's own records approve
    it; `trust` says the latter for every server of the file (Codex, Gemini CLI)."""
    for name, value in _dict(servers).items():
        entry = _dict(value)
        command = _claude_command(entry)
        if command is not None and workspace:
            command = [arg.replace(WORKSPACE_FOLDER, str(project)) for arg in command]
        if name != SERVER_NAME and not (command and runs_lgrep(command)):
            continue
        enabled, note, trusted = approvals(name) if approvals is not None else (True, "", trust[0])
        remote = entry.get("type") in ("http", "sse") or ("url" in entry and "command" not in entry)
        _add(
            reading,
            path,
            scope,
            (*prefix, name),
            entry,
            command=command,
            remote=remote,
            cwd=project,
            env=_env(entry.get("env")),
            enabled=enabled,
            notes=(note,) if note else (),
            trust=(trusted, note if approvals is not None else trust[1]),
        )


def _claude_command(entry: dict[str, Any]) -> list[str] | None:
    command = entry.get("command")
    if not isinstance(command, str):
        return None
    return [command, *(_strings(entry.get("args")) or [])]


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


def _claude_plugins(reading: Reading, project: Path, where: Locations) -> None:
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
        servers = _plugin_servers(reading, install_path)
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


def _plugin_servers(reading: Reading, install_path: Path) -> dict[str, list[str]]:
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
        argv = _claude_command(_dict(entry))
        if argv is not None:
            found[name] = [a.replace("${CLAUDE_PLUGIN_ROOT}", str(install_path)) for a in argv]
    return found


# ------------------------------------------------------------ codex, gemini cli, cursor, vs code


def _read_codex(reading: Reading, project: Path, where: Locations) -> None:
    # Codex reads `[mcp_servers.<name>]` of $CODEX_HOME/config.toml and, in a trusted project, of the
    # project's .codex/config.toml (found up to the git root); it starts servers in the folder it runs in.
    path = where.codex_dir / "config.toml"
    doc = reading.toml_file(path, confine=None)
    if doc is not None:
        _claude_servers(reading, path, doc.get("mcp_servers"), scope="user", prefix=("mcp_servers",), project=project)
    trust = _codex_trust(_dict(doc.get("projects")) if doc is not None else {}, project)
    for here in _up_to_git_root(project):
        path = here / ".codex" / "config.toml"
        doc = reading.toml_file(path, confine=here)
        if doc is not None:
            servers = doc.get("mcp_servers")
            _claude_servers(
                reading, path, servers, scope="project", prefix=("mcp_servers",), project=project, trust=trust
            )


def _codex_trust(projects: dict[str, Any], project: Path) -> tuple[bool, str]:
    """Whether the user's Codex config trusts the project (`[projects."<folder>"] trust_level`, for the
    folder or one above it up to the git root; the nearest that says decides)."""
    for here in _up_to_git_root(project):
        level = _dict(projects.get(str(here))).get("trust_level")
        if level is not None:
            trusted = level == "trusted"
            return trusted, f"Codex: {here} is {'trusted' if trusted else 'not trusted'} (trust_level = {level!r})"
    return False, "Codex has not been told to trust this project: it does not read .codex/config.toml here"


def _read_gemini(reading: Reading, project: Path, where: Locations) -> None:
    # Gemini CLI: `mcpServers` of ~/.gemini/settings.json and of the project's .gemini/settings.json
    # (read when it runs in the project root).
    trust = _gemini_trust(reading.json_file(where.gemini_dir / "trustedFolders.json", confine=None) or {}, project)
    for path, scope, confine in (
        (where.gemini_dir / "settings.json", "user", None),
        (project / ".gemini" / "settings.json", "project", project),
    ):
        doc = reading.json_file(path, confine=confine)
        if doc is not None:
            _claude_servers(
                reading, path, doc.get("mcpServers"), scope=scope, prefix=("mcpServers",), project=project, trust=trust
            )


def _gemini_trust(rules: dict[str, Any], project: Path) -> tuple[bool, str]:
    """Whether Gemini CLI's trusted folders (~/.gemini/trustedFolders.json: folder -> TRUST_FOLDER,
    TRUST_PARENT (its parent folder and all below) or DO_NOT_TRUST) trust the project; the most
    specific rule that covers it decides."""
    best: tuple[int, str, str] | None = None
    for folder, level in rules.items():
        if not isinstance(level, str) or not Path(folder).is_absolute():
            continue
        covered = Path(folder).parent if level == "TRUST_PARENT" else Path(folder)
        if covered == project or covered in project.parents:
            depth = len(covered.parts)
            if best is None or depth > best[0]:
                best = (depth, folder, level)
    if best is None:
        return False, "Gemini CLI's trusted folders do not name this folder"
    trusted = best[2] in ("TRUST_FOLDER", "TRUST_PARENT")
    return trusted, f"Gemini CLI: {best[1]} is {best[2]} in trustedFolders.json"


def _read_mcp_json(editor: str, container: str, user: Callable[[Locations], Path], folder: str) -> Reader:
    """A reader of an editor's `mcp.json` (Cursor: `mcpServers`, VS Code: `servers`), the user's and
    the project's `<folder>/mcp.json`; both editors expand `${workspaceFolder}`."""

    def read(reading: Reading, project: Path, where: Locations) -> None:
        for path, scope, confine in (
            (user(where) / "mcp.json", "user", None),
            (project / folder / "mcp.json", "project", project),
        ):
            doc = reading.json_file(path, confine=confine)
            if doc is not None:
                servers = doc.get(container)
                _claude_servers(
                    reading,
                    path,
                    servers,
                    scope=scope,
                    prefix=(container,),
                    project=project,
                    workspace=True,
                    trust=(None, f"lgrep cannot read whether {editor} trusts this folder (its workspace trust)"),
                )

    return read


READERS: tuple[ClientReader, ...] = (
    ClientReader("opencode", "opencode", lambda where: where.opencode_dir, _read_opencode),
    ClientReader("claude-code", "claude", lambda where: where.claude_dir, _read_claude_code),
    ClientReader("codex", "codex", lambda where: where.codex_dir, _read_codex),
    ClientReader("gemini", "gemini", lambda where: where.gemini_dir, _read_gemini),
    ClientReader(
        "cursor",
        "cursor",
        lambda where: where.cursor_dir,
        _read_mcp_json("Cursor", "mcpServers", lambda w: w.cursor_dir, ".cursor"),
    ),
    ClientReader(
        "vscode",
        "code",
        lambda where: where.vscode_user_dir,
        _read_mcp_json("VS Code", "servers", lambda w: w.vscode_user_dir, ".vscode"),
    ),
)
