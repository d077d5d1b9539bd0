"""The readers find every place a client loads lgrep from, in the files and shapes the real clients
write (checked against them in tests/e2e/test_install_clients.py), and a file they cannot read is a
problem of that client only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lgrep_skill import Locations, plan_install
from lgrep_skill.registrations import READERS, Reading, find_registrations, runs_lgrep

EXE = "/opt/lgrep/bin/lgrep"


@pytest.fixture
def where(tmp_path: Path) -> Locations:
    home = tmp_path / "home"
    home.mkdir()
    return Locations(home=home)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def read(client: str, project: Path, where: Locations) -> Reading:
    (reading,) = find_registrations(project, where, [client])
    return reading


def places(reading: Reading) -> list[tuple[str, str, str]]:
    return [(r.scope, r.name, r.key) for r in reading.registrations]


def write(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_runs_lgrep() -> None:
    assert runs_lgrep([EXE, "mcp"]) and runs_lgrep(["lgrep", "mcp", "/p"]) and runs_lgrep(["/x/lgrep-mcp"])
    assert not runs_lgrep(["lgrep", "search"]) and not runs_lgrep([]) and not runs_lgrep(["npx", "lgrep", "mcp"])


def test_nothing_registered(project: Path, where: Locations) -> None:
    readings = find_registrations(project, where)
    assert [r.client for r in readings] == [reader.name for reader in READERS]
    assert all(not r.registrations and not r.problems for r in readings)


def test_opencode_user_and_project_what_install_writes(project: Path, where: Locations) -> None:
    plan_install("opencode", "user", project=project, command=EXE, where=where).apply()
    plan_install("opencode", "project", project=project, command=EXE, where=where).apply()
    reading = read("opencode", project, where)
    assert places(reading) == [("user", "lgrep", "mcp.lgrep"), ("project", "lgrep", "mcp.lgrep")]
    user, proj = reading.registrations
    assert user.file == where.opencode_dir / "opencode.json" and user.command == (EXE, "mcp")
    assert proj.file == project / "opencode.json" and proj.command == ("lgrep", "mcp")
    assert user.cwd == proj.cwd == project and len(reading.active) == 2


def test_opencode_shapes_names_and_switches(project: Path, where: Locations) -> None:
    write(
        where.opencode_dir / "opencode.jsonc",
        {"mcp": {"servers": {"lgrep": {"type": "local", "command": [EXE, "mcp"], "disabled": True}}}},
    )
    write(
        project / ".opencode" / "opencode.json",
        {
            "mcp": {
                "search": {"type": "local", "command": ["lgrep", "mcp"], "environment": {"K": "v"}},
                "other": {"type": "local", "command": ["x"]},
            }
        },
    )
    write(
        project.parent / "opencode.json", {"mcp": {"lgrep": {"type": "local", "command": ["lgrep", "mcp"]}}}
    )  # above the git root
    reading = read("opencode", project, where)
    assert places(reading) == [("user", "lgrep", "mcp.servers.lgrep"), ("project", "search", "mcp.search")]
    off, named = reading.registrations
    assert not off.enabled and "disabled" in off.notes[0]
    assert named.enabled and named.env == {"K": "v"} and reading.active == [named]


def test_opencode_in_a_subfolder_finds_the_repository_root_config(project: Path, where: Locations) -> None:
    write(project / "opencode.json", {"mcp": {"lgrep": {"type": "remote", "url": "http://127.0.0.1:1/mcp"}}})
    sub = project / "src"
    sub.mkdir()
    (reg,) = read("opencode", sub, where).registrations
    assert reg.file == project / "opencode.json" and reg.command is None and reg.url == "http://127.0.0.1:1/mcp"
    assert reg.cwd == sub


def test_claude_code_user_local_project_and_approvals(project: Path, where: Locations) -> None:
    plan_install("claude-code", "user", project=project, command=EXE, where=where).apply()
    plan_install("claude-code", "project", project=project, command=EXE, where=where).apply()
    state = json.loads(where.claude_json.read_text())
    local_entry = {"type": "stdio", "command": EXE, "args": ["mcp"], "env": {"A": "1"}}
    state["projects"] = {
        str(project): {"mcpServers": {"lgrep": local_entry}},
        "/elsewhere": {"mcpServers": {"lgrep": {"command": EXE, "args": ["mcp"]}}},
    }
    where.claude_json.write_text(json.dumps(state))
    reading = read("claude-code", project, where)
    assert [(r.scope, r.file) for r in reading.registrations] == [
        ("user", where.claude_json),
        ("local", where.claude_json),
        ("project", project / ".mcp.json"),
    ]
    _, local, proj = reading.registrations
    assert local.key == f'projects."{project}".mcpServers.lgrep' and local.env == {"A": "1"}
    assert proj.command == ("lgrep", "mcp") and proj.from_project and not local.from_project
    # install's approval sits in the project's .claude/settings.local.json, which a clone can carry too:
    # it counts once the user trusted the folder, as Claude Code counts it
    assert "waiting for approval" in proj.notes[0] and "not trusted" in proj.notes[0] and proj.trusted is False
    state["projects"][str(project.parent)] = {"hasTrustDialogAccepted": True}  # a parent's trust covers it
    where.claude_json.write_text(json.dumps(state))
    proj = read("claude-code", project, where).registrations[-1]
    assert proj.notes == ("approved",) and proj.trusted is True

    (project / ".claude" / "settings.local.json").write_text('{"disabledMcpjsonServers": ["lgrep"]}')
    proj = read("claude-code", project, where).registrations[-1]
    assert not proj.enabled and "disabledMcpjsonServers" in proj.notes[0]
    (project / ".claude" / "settings.local.json").write_text("{}")
    proj = read("claude-code", project, where).registrations[-1]
    assert "waiting for approval" in proj.notes[0] and proj.trusted is False


def test_a_repository_cannot_approve_or_trust_its_own_servers(project: Path, where: Locations) -> None:
    # What a clone can carry: its servers, its own approvals, and look-alike trust records in its files.
    write(project / ".mcp.json", {"mcpServers": {"lgrep": {"command": "./tools/lgrep", "args": ["mcp"]}}})
    write(project / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    write(project / ".claude" / "settings.local.json", {"enabledMcpjsonServers": ["lgrep"]})
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text(
        f'[projects."{project}"]\ntrust_level = "trusted"\n[mcp_servers.lgrep]\ncommand = "lgrep"\nargs = ["mcp"]\n'
    )
    write(project / ".gemini" / "settings.json", {"mcpServers": {"lgrep": {"command": "lgrep", "args": ["mcp"]}}})
    write(project / ".gemini" / "trustedFolders.json", {str(project): "TRUST_FOLDER"})
    write(project / "opencode.json", {"mcp": {"lgrep": {"type": "local", "command": ["./tools/lgrep", "mcp"]}}})
    for client in ("claude-code", "codex", "gemini", "opencode"):
        (reg,) = read(client, project, where).registrations
        assert reg.from_project and reg.trusted is not True, (client, reg)
    # The user's own records do trust it.
    write(where.claude_json, {"projects": {str(project): {"hasTrustDialogAccepted": True}}})
    where.codex_dir.mkdir(parents=True)
    (where.codex_dir / "config.toml").write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')
    write(where.gemini_dir / "trustedFolders.json", {str(project / "x"): "TRUST_PARENT"})
    for client in ("claude-code", "codex", "gemini"):
        (reg,) = read(client, project, where).registrations
        assert reg.trusted is True, (client, reg)
    write(where.gemini_dir / "trustedFolders.json", {str(project.parent): "TRUST_FOLDER", str(project): "DO_NOT_TRUST"})
    assert read("gemini", project, where).registrations[0].trusted is False


def _plugin(where: Locations, project: Path, *, scope: str = "user", enabled: bool | None = True) -> Path:
    """The files `claude plugin install lgrep@lgrep` leaves (as Claude Code 2.1.328 writes them)."""
    install_path = where.claude_dir / "plugins" / "cache" / "lgrep" / "lgrep" / "0.1.0"
    write(install_path / ".mcp.json", {"mcpServers": {"lgrep": {"type": "stdio", "command": "lgrep", "args": ["mcp"]}}})
    entry = {"scope": scope, "installPath": str(install_path), "version": "0.1.0"}
    if scope != "user":
        entry["projectPath"] = str(project)
    write(where.claude_dir / "plugins" / "installed_plugins.json", {"version": 2, "plugins": {"lgrep@lgrep": [entry]}})
    settings = where.claude_dir / "settings.json" if scope == "user" else project / ".claude" / "settings.json"
    if enabled is not None:
        write(settings, {"enabledPlugins": {"lgrep@lgrep": enabled}})
    return settings


def test_claude_code_plugin(project: Path, where: Locations) -> None:
    settings = _plugin(where, project)
    (reg,) = read("claude-code", project, where).registrations
    assert (reg.scope, reg.name, reg.plugin, reg.file) == ("plugin", "plugin:lgrep:lgrep", "lgrep@lgrep", settings)
    assert reg.command == ("lgrep", "mcp") and reg.enabled

    # Disabled for this project in its local settings: the most specific file wins.
    write(project / ".claude" / "settings.local.json", {"enabledPlugins": {"lgrep@lgrep": False}})
    (reg,) = read("claude-code", project, where).registrations
    assert not reg.enabled and reg.file == project / ".claude" / "settings.local.json" and reg.notes[1] == "disabled"


def test_a_plugin_installed_in_two_scopes_is_loaded_once(project: Path, where: Locations) -> None:
    _plugin(where, project)
    records = where.claude_dir / "plugins" / "installed_plugins.json"
    doc = json.loads(records.read_text())
    (user,) = doc["plugins"]["lgrep@lgrep"]
    doc["plugins"]["lgrep@lgrep"].append({**user, "scope": "project", "projectPath": str(project)})
    records.write_text(json.dumps(doc))
    (reg,) = read("claude-code", project, where).registrations
    assert reg.notes[0].startswith("plugin lgrep@lgrep (user, project scope)") and reg.enabled


def test_claude_code_plugin_of_another_project_or_not_enabled(project: Path, where: Locations, tmp_path: Path) -> None:
    _plugin(where, project, scope="project")
    assert len(read("claude-code", project, where).registrations) == 1
    other = tmp_path / "other"
    other.mkdir()
    assert read("claude-code", other, where).registrations == []
    (project / ".claude" / "settings.json").unlink()
    _plugin(where, project, enabled=None)
    (reg,) = read("claude-code", project, where).registrations
    assert not reg.enabled and "not enabled" in reg.notes[1]


def test_a_broken_file_is_a_problem_and_hides_nothing_else(project: Path, where: Locations) -> None:
    plan_install("claude-code", "project", project=project, command=EXE, where=where).apply()
    plan_install("opencode", "user", project=project, command=EXE, where=where).apply()
    where.claude_json.write_text('{"mcpServers": {,}}')
    claude, opencode = read("claude-code", project, where), read("opencode", project, where)
    assert [(p, e.split(": ", 1)[1]) for p, e in claude.problems] == [
        (where.claude_json, "line 1 column 17: expected a quoted key")
    ]
    assert places(claude) == [("project", "lgrep", "mcpServers.lgrep")]
    assert places(opencode) == [("user", "lgrep", "mcp.lgrep")] and not opencode.problems


def test_a_link_in_the_project_is_not_followed(project: Path, where: Locations, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    write(secret, {"mcpServers": {"lgrep": {"command": EXE, "args": ["mcp"]}}})
    (project / ".mcp.json").symlink_to(secret)
    reading = read("claude-code", project, where)
    assert reading.registrations == [] and "symbolic link" in reading.problems[0][1]


@pytest.mark.parametrize(
    ("client", "key"),
    [
        ("codex", "mcp_servers.lgrep"),
        ("gemini", "mcpServers.lgrep"),
        ("cursor", "mcpServers.lgrep"),
        ("vscode", "servers.lgrep"),
    ],
)
def test_the_new_clients_find_what_install_writes(client: str, key: str, project: Path, where: Locations) -> None:
    plan_install(client, "user", project=project, command=EXE, where=where).apply()
    plan_install(client, "project", project=project, command=EXE, where=where).apply()
    reading = read(client, project, where)
    assert places(reading) == [("user", "lgrep", key), ("project", "lgrep", key)]
    user, proj = reading.registrations
    assert user.command == (EXE, "mcp") and user.cwd == project
    # a project install names `lgrep` from PATH; an editor's ${workspaceFolder} is the project
    assert proj.command is not None and proj.command[:2] == ("lgrep", "mcp")
    assert "${workspaceFolder}" not in proj.command
    if client in ("cursor", "vscode"):
        assert proj.command[2:] == (str(project),)
    assert not reading.problems


def test_codex_other_names_and_a_broken_toml(project: Path, where: Locations) -> None:
    config = where.home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[mcp_servers.search]\ncommand = "/x/lgrep"\nargs = ["mcp"]\n\n[mcp_servers.other]\ncommand = "rg"\n'
    )
    reading = read("codex", project, where)
    assert places(reading) == [("user", "search", "mcp_servers.search")]
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text("[mcp_servers.lgrep\n")
    reading = read("codex", project, where)
    assert places(reading) == [("user", "search", "mcp_servers.search")]
    assert [path for path, _ in reading.problems] == [project / ".codex" / "config.toml"]
