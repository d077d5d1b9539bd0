"""`lgrep install` then `lgrep uninstall` gives back the original bytes, for every client's format
and scope: comments and blank lines around the entry, other servers before it and (added by the
client after the install) after it, a file lgrep created (deleted again), and a container the user
had empty (`"servers": {}`), or with only a comment in it, which stays. Uninstall takes out what
install added and nothing else: a container only when install added it (the ledger records it), a
Codex table up to its last line, never the blank line and comment of the table after it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lgrep_skill import jsonc


@dataclass(frozen=True)
class Case:
    client: str
    scope: str  # "project" or "user"
    files: dict[str, str]  # "P:<path in the project>" or "H:<path in HOME>" -> the text there before
    config: str  # the file holding the MCP server (a key of `files`, or where install creates it)
    later: Callable[[str], str] | None = None  # what the client writes into `config` after the install
    folders: tuple[str, ...] = field(default=())  # the client's own folders, there before (H:...)


def _json_later(container: list[str]) -> Callable[[str], str]:
    """The client adds a server after lgrep's, as `claude mcp add` or an editor does."""
    return lambda text: jsonc.set_member(text, [*container, "later"], {"command": "later-mcp", "args": []})


def _toml_later(text: str) -> str:
    """Codex records the folder the user trusted, after lgrep's table."""
    return text + '\n# a folder I trust\n[projects."/home/me/later"]\ntrust_level = "trusted"\n'


def _strict(container: list[str]) -> str:
    servers: object = {"before": {"command": "before-mcp", "args": ["--quiet"]}}
    for key in reversed(container):
        servers = {key: servers}
    return json.dumps({"theme": "dark", **servers, "after": True}, indent=2) + "\n"  # type: ignore[dict-item]


def _commented(container: list[str]) -> str:
    """JSONC: comments before, inside and after the servers, blank lines, a trailing comma."""
    open_, close = "", ""
    indent = "  "
    for key in container:
        open_ += f'{indent}"{key}": {{\n'
        close = f"{indent}}},\n" + close
        indent += "  "
    return (
        "{\n"
        "  // my settings\n"
        '  "theme": "dark",\n'
        "\n"
        f"{open_}"
        f"{indent}// the first one\n"
        f'{indent}"before": {{"command": "before-mcp", "args": []}},\n'
        "\n"
        f'{indent}"between": {{"command": "between-mcp"}}, // mine too\n'
        f"{close}"
        '  "after": true, /* the end */\n'
        "}\n"
    )


def _holding(container: list[str], value: str) -> str:
    """A file with another setting and `container` (one key deep) written as `value`."""
    (key,) = container
    return f'{{\n  "theme": "dark",\n  "{key}": {value}\n}}\n'


CODEX = """# my Codex settings
model = "gpt-5.5"  # the one I pay for

# the servers I use
[mcp_servers.before]
command = "npx"
args = [
  "-y", # always the latest
  "docs-mcp",
]

[projects."/home/me/work"]
trust_level = "trusted"
"""

# (client, scope) -> where its settings are, the container of its servers
JSON_CLIENTS: dict[tuple[str, str], tuple[str, list[str]]] = {
    ("opencode", "project"): ("P:opencode.json", ["mcp"]),
    ("opencode", "user"): ("H:.config/opencode/opencode.json", ["mcp"]),
    ("claude-code", "project"): ("P:.mcp.json", ["mcpServers"]),
    ("claude-code", "user"): ("H:.claude.json", ["mcpServers"]),
    ("gemini", "project"): ("P:.gemini/settings.json", ["mcpServers"]),
    ("gemini", "user"): ("H:.gemini/settings.json", ["mcpServers"]),
    ("cursor", "project"): ("P:.cursor/mcp.json", ["mcpServers"]),
    ("cursor", "user"): ("H:.cursor/mcp.json", ["mcpServers"]),
    ("vscode", "project"): ("P:.vscode/mcp.json", ["servers"]),
    ("vscode", "user"): ("H:.config/Code/User/mcp.json", ["servers"]),
}
# The client's folder, there when the client is: uninstall prunes the folders it emptied up to it.
USER_FOLDERS = {
    "opencode": ("H:.config/opencode",),
    "claude-code": ("H:.claude",),
    "codex": ("H:.codex",),
    "gemini": ("H:.gemini",),
    "cursor": ("H:.cursor",),
    "vscode": ("H:.config/Code/User",),
}
# Claude Code's project approvals (.claude/settings.local.json) for each variant of .mcp.json.
APPROVALS = {
    "strict": json.dumps({"permissions": {"allow": ["Bash(ls)"]}}, indent=2) + "\n",
    "commented": '{\n  // mine\n  "enabledMcpjsonServers": [\n    "before",\n  ],\n}\n',
    "empty-container": '{\n  "enabledMcpjsonServers": []\n}\n',
    "comment-in-container": '{\n  "enabledMcpjsonServers": [ // mine\n  ]\n}\n',
    "no-container": "{}\n",
}


def _cases() -> list[object]:
    cases: list[object] = []
    for (client, scope), (config, container) in JSON_CLIENTS.items():
        folders = USER_FOLDERS[client] if scope == "user" else ()
        variants: dict[str, tuple[str | None, Callable[[str], str] | None]] = {
            "absent": (None, None),  # lgrep creates the file, and deletes it again
            "strict": (_strict(container), _json_later(container)),
            "commented": (_commented(container), _json_later(container)),
            "empty-container": (_holding(container, "{}"), None),  # the user's `"servers": {}` stays
            "comment-in-container": (_holding(container, "{ // my servers\n  }"), None),
            "no-container": ('{\n  "theme": "dark"\n}\n', None),  # the container install adds goes again
        }
        if client == "claude-code" and scope == "user":
            del variants["absent"]  # ~/.claude.json holds Claude Code's state: never deleted
        for variant, (text, later) in variants.items():
            path = config
            if client == "opencode" and variant == "commented":
                path = config.replace(".json", ".jsonc")
            files = {path: text} if text is not None else {}
            if client == "claude-code" and scope == "project" and variant in APPROVALS:
                files["P:.claude/settings.local.json"] = APPROVALS[variant]
            case = Case(client, scope, files, path, later, folders)
            cases.append(pytest.param(case, id=f"{client}-{scope}-{variant}"))
    # OpenCode's newer shape: `mcp.servers.<name>`.
    v2 = ["mcp", "servers"]
    for scope, config in (("project", "P:opencode.jsonc"), ("user", "H:.config/opencode/opencode.jsonc")):
        folders = USER_FOLDERS["opencode"] if scope == "user" else ()
        for variant, text, later in (
            ("v2", _commented(v2), _json_later(v2)),
            ("v2-empty-container", '{\n  "mcp": {\n    "servers": {}\n  }\n}\n', None),
        ):
            case = Case("opencode", scope, {config: text}, config, later, folders)
            cases.append(pytest.param(case, id=f"opencode-{scope}-{variant}"))
    for scope in ("project", "user"):
        config = "P:.codex/config.toml" if scope == "project" else "H:.codex/config.toml"
        folders = USER_FOLDERS["codex"] if scope == "user" else ()
        for variant, files, later in (
            ("absent", {}, None),
            ("commented", {config: CODEX}, _toml_later),
            ("empty-container", {config: "[mcp_servers]\n"}, None),
        ):
            case = Case("codex", scope, files, config, later, folders)
            cases.append(pytest.param(case, id=f"codex-{scope}-{variant}"))
    return cases


def _where(spec: str, project: Path, home: Path) -> Path:
    base, rel = spec.split(":", 1)
    return (project if base == "P" else home) / rel


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under `folder`, but lgrep's own ledger."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
        if not p.relative_to(folder).as_posix().startswith(".local")  # ~/.local/state/lgrep: the ledger
    }


@pytest.fixture
def setup(lgrep_here, tmp_path: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    env = lgrep_here.env
    for name in ("CLAUDE_CONFIG_DIR", "OPENCODE_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "CODEX_HOME"):
        env.pop(name, None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"  # no client on PATH
    project = tmp_path / "proj"
    project.mkdir()
    return project, Path(env["HOME"])


@pytest.mark.parametrize("case", _cases())
def test_install_then_uninstall_gives_back_the_original_bytes(lgrep_here, setup, case: Case) -> None:  # type: ignore[no-untyped-def]
    project, home = setup
    for folder in case.folders:
        _where(folder, project, home).mkdir(parents=True, exist_ok=True)
    for spec, text in case.files.items():
        path = _where(spec, project, home)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    config = _where(case.config, project, home)
    expected_project, expected_home = _tree(project), _tree(home)
    args = (case.client, f"--{case.scope}", "--path", str(project))

    lgrep_here("install", *args)
    assert "lgrep" in config.read_text()
    if case.later is not None:
        original = case.files[case.config]
        config.write_text(case.later(config.read_text()))
        # What uninstall must leave: the original with the client's later server, as if lgrep never was.
        rel = config.relative_to(project if case.config.startswith("P:") else home).as_posix()
        (expected_project if case.config.startswith("P:") else expected_home)[rel] = case.later(original).encode()
    lgrep_here("uninstall", *args)

    assert _tree(project) == expected_project
    assert _tree(home) == expected_home
    # Once more: the ledger forgot what the first round recorded, and the bytes come back again.
    if case.later is None:
        lgrep_here("install", *args)
        lgrep_here("uninstall", *args)
        assert _tree(project) == expected_project and _tree(home) == expected_home
