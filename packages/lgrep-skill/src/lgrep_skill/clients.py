"""The agent clients lgrep installs into, in one table: where each keeps its settings (the user's,
the project's), how its files hold a server entry, where it reads skills, how it records the folders
the user trusts, and what install tells the user about it.

`installers` writes by it (`plan_install`, `plan_uninstall`), `registrations` reads by it (where
each client loads lgrep from), and the `lgrep` command lists and detects the clients by it (install,
uninstall, init, doctor). A client whose servers are the members of one object of a JSON or TOML
settings file needs only its row. Two clients' files say more, and have a function of their own in
each of those modules besides their row: OpenCode (its newer `mcp.servers` shape) and Claude Code
(servers of this project in the user's file, plugins, the approval a project's server waits for).
Nothing here reads a file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

__all__ = [
    "AGENT_CLIENTS",
    "SERVER_ARGS",
    "SERVER_NAME",
    "WORKSPACE_FOLDER",
    "Client",
    "Entry",
    "Locations",
    "Scope",
    "SettingsFiles",
    "git_root",
    "project_tree",
    "runs_lgrep",
    "up_to_git_root",
]

SERVER_NAME = "lgrep"
# `lgrep mcp` serves the folder the client starts it in (the project around it, searched within that
# folder). No project path: a project install's file is committed and read on other machines (ADR
# 0022); VS Code and Cursor, which can name the project folder, get WORKSPACE_FOLDER as well.
SERVER_ARGS = ("mcp",)
# VS Code and Cursor expand this in their mcp.json: the project folder, wherever the editor runs it.
WORKSPACE_FOLDER = "${workspaceFolder}"

Scope = Literal["project", "user"]


@dataclass(frozen=True)
class Locations:
    """Where the user's client settings live; built from the environment by the command."""

    home: Path
    xdg_config_home: Path | None = None  # $XDG_CONFIG_HOME (OpenCode honours it)
    claude_config_dir: Path | None = None  # $CLAUDE_CONFIG_DIR (Claude Code honours it)
    xdg_state_home: Path | None = None  # $XDG_STATE_HOME: where lgrep records the files it created
    codex_home: Path | None = None  # $CODEX_HOME (Codex honours it)
    appdata: Path | None = None  # %APPDATA% (VS Code's user folder on Windows)
    platform: str = sys.platform

    @property
    def opencode_dir(self) -> Path:
        return (self.xdg_config_home or self.home / ".config") / "opencode"

    @property
    def claude_dir(self) -> Path:
        return self.claude_config_dir or self.home / ".claude"

    @property
    def claude_json(self) -> Path:
        return (self.claude_config_dir or self.home) / ".claude.json"

    @property
    def codex_dir(self) -> Path:
        return self.codex_home or self.home / ".codex"

    @property
    def gemini_dir(self) -> Path:
        return self.home / ".gemini"

    @property
    def cursor_dir(self) -> Path:
        return self.home / ".cursor"

    @property
    def vscode_user_dir(self) -> Path:
        """VS Code's user settings folder (the default profile's), where its user `mcp.json` lives."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support" / "Code" / "User"
        if self.platform.startswith("win"):
            return (self.appdata or self.home / "AppData" / "Roaming") / "Code" / "User"
        return (self.xdg_config_home or self.home / ".config") / "Code" / "User"

    @property
    def ledger(self) -> Path:
        """The list of the settings files lgrep created, so uninstall deletes those and no other."""
        return (self.xdg_state_home or self.home / ".local" / "state") / "lgrep" / "installed-files.json"


def runs_lgrep(argv: list[str] | tuple[str, ...]) -> bool:
    """Whether a server command starts lgrep's MCP server (`lgrep mcp ...`, `lgrep-mcp ...`)."""
    if not argv:
        return False
    program = Path(argv[0]).name.removesuffix(".exe")
    return program == "lgrep-mcp" or (program == SERVER_NAME and list(argv[1:2]) == list(SERVER_ARGS))


def git_root(folder: Path) -> Path | None:
    """The git repository's root as the agent clients find it, the nearest folder holding `.git`.
    Unlike lgrep_core.app.scope.git_root (where lgrep puts a project), the home folder counts: a client in
    a dotfiles repository reads the settings files up to it, so lgrep reads them there too."""
    for parent in (folder, *folder.parents):
        if (parent / ".git").exists():
            return parent
    return None


def project_tree(project: Path) -> Path:
    """The folder whose files can define a project's servers: the git repository's root (clients read
    settings files up to it), or the project itself outside git. What lies in it came with the clone."""
    return git_root(project) or project


def up_to_git_root(project: Path) -> Iterator[Path]:
    """The project and its parents up to the git repository's root (the project alone outside git):
    where clients look for a project's settings file."""
    root = git_root(project)
    yield project
    if root is not None and root != project:
        for parent in project.parents:
            yield parent
            if parent == root:
                return


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):  # pyright: ignore[reportUnknownVariableType]
        return list(value)  # pyright: ignore[reportUnknownArgumentType]
    return None


@dataclass(frozen=True)
class Entry:
    """How a client's settings hold one stdio server: what install writes, and how a reader takes
    back what the client runs."""

    argv: bool = False  # `command` is the whole argv (OpenCode), not the program with `args` after it
    env: str = "env"  # the member that adds to the server's environment (OpenCode: `environment`)
    type: str | None = None  # the `type` install writes
    type_if_absent: bool = False  # ...only where the entry has none: the user's own stays (Claude Code)
    workspace: bool = False  # the client puts the project folder in for WORKSPACE_FOLDER

    def write(self, command: str, scope: Scope) -> tuple[dict[str, Any], dict[str, Any]]:
        """The members install sets (the first) and those it sets only where absent (the second),
        for `command`: a project install passes WORKSPACE_FOLDER where the client expands it."""
        args = [*SERVER_ARGS, WORKSPACE_FOLDER] if self.workspace and scope == "project" else list(SERVER_ARGS)
        runs: dict[str, Any] = {"command": [command, *args]} if self.argv else {"command": command, "args": args}
        if self.type is None:
            return runs, {}
        if self.type_if_absent:
            return runs, {"type": self.type}
        return {"type": self.type, **runs}, {}

    def command(self, entry: dict[str, Any]) -> list[str] | None:
        """What the client runs for `entry` (None: it names no command)."""
        command = entry.get("command")
        if self.argv:
            return _strings(command)
        if not isinstance(command, str):
            return None
        return [command, *(_strings(entry.get("args")) or [])]


class SettingsFiles(Protocol):
    """What a trust reader reads the user's files through (a `registrations.Reading`: a file once,
    one it cannot read noted as the client's problem and read as absent)."""

    def json_file(self, path: Path, *, confine: Path | None) -> dict[str, Any] | None: ...

    def toml_file(self, path: Path, *, confine: Path | None) -> dict[str, Any] | None: ...


# Whether the user's own records trust the project (for every server of its files), and what they say.
TrustReader = Callable[[SettingsFiles, Path, Locations], tuple[bool, str]]


@dataclass(frozen=True)
class Client:
    """An agent client lgrep installs into: one row of AGENT_CLIENTS."""

    name: str  # as `lgrep install` names it
    program: str  # its command: found on PATH, the client is installed
    folder: Callable[[Locations], Path]  # the user's settings folder: it exists, the client is installed
    user_files: Callable[[Locations], tuple[Path, ...]]  # the user's settings files (install: see `files`)
    project_files: tuple[str, ...]  # the project's, from the project folder (install: see `files`)
    container: str  # the member of a settings file that holds the servers, by name
    entry: Entry
    started: str  # what install says: how the client comes to start lgrep
    up_to_root: bool = False  # the client reads the project's files in the folders above too, up to the git root
    toml: bool = False  # the settings files are TOML (else JSON with comments)
    skills: str | None = None  # the project folder whose `skills` it reads; the user's: the settings folder's
    keeps_user_file: bool = False  # the user's file holds the client's own state: uninstall never deletes it
    trust: TrustReader | str = ""  # how it records the folders the user trusts, or why lgrep cannot know
    project_note: str = ""  # what a project install says too

    def files(self, scope: Scope, project: Path, where: Locations) -> tuple[Path, ...]:
        """The settings files of `scope` install may write, in the order the client's own `mcp add`
        picks them: install writes the first that is there, else the first."""
        return self.user_files(where) if scope == "user" else tuple(project / name for name in self.project_files)

    def project_paths(self, project: Path) -> Iterator[tuple[Path, Path]]:
        """The project's settings files the client reads, the nearest first, each with the folder it is
        read confined to (no symbolic link below it followed)."""
        for here in up_to_git_root(project) if self.up_to_root else (project,):
            for name in self.project_files:
                yield here / name, here

    def skills_folder(self, scope: Scope, project: Path, where: Locations) -> Path | None:
        """Where the client reads skills at `scope` (None: it reads none)."""
        if self.skills is None:
            return None
        return (project / self.skills if scope == "project" else self.folder(where)) / "skills"

    def trusts(self, files: SettingsFiles, project: Path, where: Locations) -> tuple[bool | None, str]:
        """Whether the user's own records trust `project`, and what they say (None: the client keeps
        no record lgrep can read, and why)."""
        return (None, self.trust) if isinstance(self.trust, str) else self.trust(files, project, where)


def _codex_trust(files: SettingsFiles, project: Path, where: Locations) -> tuple[bool, str]:
    """Whether the user's Codex config trusts the project (`[projects."<folder>"] trust_level`, for the
    folder or one above it up to the git root; the nearest that says decides)."""
    doc = files.toml_file(where.codex_dir / "config.toml", confine=None) or {}
    projects: Any = doc.get("projects")
    for here in up_to_git_root(project):
        record: Any = projects.get(str(here)) if isinstance(projects, dict) else None  # pyright: ignore[reportUnknownMemberType]
        level: Any = record.get("trust_level") if isinstance(record, dict) else None  # pyright: ignore[reportUnknownMemberType]
        if level is not None:
            trusted = level == "trusted"
            return trusted, f"Codex: {here} is {'trusted' if trusted else 'not trusted'} (trust_level = {level!r})"
    return False, "Codex has not been told to trust this project: it does not read .codex/config.toml here"


def _gemini_trust(files: SettingsFiles, project: Path, where: Locations) -> tuple[bool, str]:
    """Whether Gemini CLI's trusted folders (~/.gemini/trustedFolders.json: folder -> TRUST_FOLDER,
    TRUST_PARENT (its parent folder and all below) or DO_NOT_TRUST) trust the project; the most
    specific rule that covers it decides."""
    rules = files.json_file(where.gemini_dir / "trustedFolders.json", confine=None) or {}
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


def _restart(title: str, program: str) -> str:
    return f"restart {title} to load the lgrep MCP server and skill (`{program} mcp list` shows it)"


def _no_trust_record(editor: str) -> str:
    return f"lgrep cannot read whether {editor} trusts this folder (its workspace trust)"


# Where each client reads what is checked against the real clients in tests/e2e/test_install_clients.py.
AGENT_CLIENTS: tuple[Client, ...] = (
    Client(
        "opencode",
        program="opencode",
        folder=lambda where: where.opencode_dir,
        # `opencode mcp add`'s order; OpenCode merges the older config.json first (registrations)
        user_files=lambda where: tuple(
            where.opencode_dir / n for n in ("opencode.json", "opencode.jsonc", "config.json")
        ),
        project_files=("opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"),
        up_to_root=True,
        container="mcp",  # or its `servers`, in OpenCode's newer shape (OpenCode's own functions)
        entry=Entry(argv=True, env="environment", type="local"),
        skills=".opencode",
        trust="OpenCode keeps no record of trusted folders: it starts a project's servers without asking",
        started=_restart("OpenCode", "opencode"),
    ),
    Client(
        "claude-code",
        program="claude",
        folder=lambda where: where.claude_dir,
        user_files=lambda where: (where.claude_json,),
        project_files=(".mcp.json",),
        up_to_root=True,
        container="mcpServers",
        entry=Entry(type="stdio", type_if_absent=True),
        skills=".claude",
        # ~/.claude.json holds Claude Code's own state: its `mcpServers` goes only when an install added
        # it to the file (the ledger says)
        keeps_user_file=True,
        # whether it starts a project's server: the approvals its reader reads (registrations)
        started=_restart("Claude Code", "claude"),
        project_note=(
            "lgrep is approved in .claude/settings.local.json (your own, uncommitted settings); Claude Code "
            "uses it once you trust the folder, as for any project"
        ),
    ),
    Client(
        "codex",
        program="codex",
        folder=lambda where: where.codex_dir,
        user_files=lambda where: (where.codex_dir / "config.toml",),
        project_files=(".codex/config.toml",),  # read only in a project the user trusts
        up_to_root=True,
        toml=True,
        container="mcp_servers",
        entry=Entry(),
        skills=".codex",
        trust=_codex_trust,
        started=_restart("Codex", "codex"),
        project_note=(
            "Codex reads .codex/config.toml only in a project you trust: say yes when codex asks to trust this "
            "folder (lgrep does not mark it trusted for you)"
        ),
    ),
    Client(
        "gemini",
        program="gemini",
        folder=lambda where: where.gemini_dir,
        user_files=lambda where: (where.gemini_dir / "settings.json",),
        project_files=(".gemini/settings.json",),  # read when gemini runs in the project root, if trusted
        container="mcpServers",
        entry=Entry(),
        skills=".gemini",
        trust=_gemini_trust,
        started=_restart("Gemini CLI", "gemini"),
        project_note=(
            "Gemini CLI uses a project's settings only in a folder you trust, started in the project root: "
            "trust this folder when gemini asks (lgrep does not mark it trusted for you)"
        ),
    ),
    Client(
        "cursor",
        program="cursor",
        folder=lambda where: where.cursor_dir,
        user_files=lambda where: (where.cursor_dir / "mcp.json",),
        project_files=(".cursor/mcp.json",),
        container="mcpServers",
        entry=Entry(workspace=True),
        trust=_no_trust_record("Cursor"),
        started="Cursor loads the lgrep MCP server on its next start (Settings > MCP lists it)",
    ),
    Client(
        "vscode",
        program="code",
        folder=lambda where: where.vscode_user_dir,
        user_files=lambda where: (where.vscode_user_dir / "mcp.json",),
        project_files=(".vscode/mcp.json",),
        container="servers",
        entry=Entry(type="stdio", workspace=True),
        trust=_no_trust_record("VS Code"),
        started="VS Code starts the lgrep MCP server when asked (MCP: List Servers shows it)",
    ),
)
