"""`lgrep install`, `uninstall` and `init` against hostile or unusual files, as a user runs them.

A repository can plant symbolic links where the installers read and write (`.mcp.json ->
~/.claude.json`, `.claude -> ~/.claude`): no project-scope step may follow one, print what it points
at, or write through it. A user's own config may be a link into a dotfiles repository: it stays a
link. Uninstall takes out only what install added, and a file too deeply nested to edit is refused.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

SECRET = "sk-home-secret-7f3a9c"
SCHEMA_ONLY = '{\n  "$schema": "https://opencode.ai/config.json"\n}\n'


def _env(lgrep) -> Path:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in lgrep.env.items() if k not in ("CLAUDE_CONFIG_DIR", "OPENCODE_CONFIG", "XDG_STATE_HOME")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"  # no agent client on PATH
    lgrep.env = env
    return Path(env["HOME"])


def tree(folder: Path) -> dict[str, object]:
    """Every entry under `folder`, links not followed: a link's target, a file's bytes and mode."""
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[rel] = ("link", str(path.readlink()))
            elif path.is_file():
                found[rel] = ("file", path.read_bytes(), stat.S_IMODE(path.lstat().st_mode))
            else:
                found[rel] = ("dir",)
    return found


def _home_with_secrets(home: Path) -> None:
    """The user's global settings, every one holding a secret a repository must never see."""
    (home / ".claude.json").write_text(json.dumps({"oauthToken": SECRET, "mcpServers": {"lgrep": {"command": "x"}}}))
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps({"apiKeyHelper": SECRET}))
    (home / ".claude" / "settings.local.json").write_text(json.dumps({"env": {"TOKEN": SECRET}}))
    opencode = home / ".config" / "opencode"
    opencode.mkdir(parents=True)
    (opencode / "opencode.json").write_text(json.dumps({"provider": {"key": SECRET}, "mcp": {}}))
    (home / "notes.md").write_text(f"# private\n{SECRET}\n<!-- lgrep:start -->\nx\n<!-- lgrep:end -->\n")
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(f'[model_providers.x]\nexperimental_bearer_token = "{SECRET}"\n')
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps({"security": {"apiKey": SECRET}}))
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"db": {"env": {"TOKEN": SECRET}}}}))
    vscode = home / ".config" / "Code" / "User"
    vscode.mkdir(parents=True)
    (vscode / "mcp.json").write_text(json.dumps({"servers": {"db": {"env": {"TOKEN": SECRET}}}}))


# (link in the project, what it points at (relative to HOME), the command's client)
PLANTED = [
    pytest.param("opencode.json", ".config/opencode/opencode.json", "opencode", id="opencode-file"),
    pytest.param(".opencode", ".config/opencode", "opencode", id="opencode-folder"),
    pytest.param(".mcp.json", ".claude.json", "claude-code", id="claude-file"),
    pytest.param(".claude/settings.local.json", ".claude/settings.local.json", "claude-code", id="claude-approval"),
    pytest.param(".claude", ".claude", "claude-code", id="claude-folder"),
    pytest.param(".claude/skills", ".claude", "claude-code", id="claude-skills-folder"),
    pytest.param("AGENTS.md", "notes.md", "agents-md", id="agents-file"),
    pytest.param(".codex/config.toml", ".codex/config.toml", "codex", id="codex-file"),
    pytest.param(".codex", ".codex", "codex", id="codex-folder"),
    pytest.param(".gemini/settings.json", ".gemini/settings.json", "gemini", id="gemini-file"),
    pytest.param(".gemini", ".gemini", "gemini", id="gemini-folder"),
    pytest.param(".cursor/mcp.json", ".cursor/mcp.json", "cursor", id="cursor-file"),
    pytest.param(".vscode", ".config/Code/User", "vscode", id="vscode-folder"),
]


def _plant(project: Path, home: Path, link: str, target: str) -> Path:
    path = project.resolve() / link  # as the command names it
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(home / target)
    return path


def _assert_refused(result, link: Path, home_before: dict[str, object], home: Path, project_before, project: Path):  # type: ignore[no-untyped-def]
    assert result.code == 1, (result.out, result.err)
    assert result.err.startswith("lgrep: error: ") and "Traceback" not in result.err
    assert f"{link} is a symbolic link" in result.err and "Replace it" in result.err
    assert SECRET not in result.out and SECRET not in result.err
    assert tree(home) == home_before  # nothing written in the user's settings
    assert tree(project) == project_before  # nothing written in the project, the link still a link
    for path in project.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("dry_run", [False, True], ids=["write", "dry-run"])
@pytest.mark.parametrize(("link", "target", "client"), PLANTED)
def test_install_and_uninstall_never_follow_a_link_a_repository_planted(
    lgrep, mini_repo: Path, link: str, target: str, client: str, dry_run: bool
) -> None:
    home = _env(lgrep)
    _home_with_secrets(home)
    planted = _plant(mini_repo, home, link, target)
    home_before, project_before = tree(home), tree(mini_repo)
    for operation in ("install", "uninstall"):
        for extra in ([], ["--json"]):
            args = [operation, client, "--project", "--path", str(mini_repo), *extra]
            result = lgrep(*args, *(["--dry-run"] if dry_run else []), check=False)
            _assert_refused(result, planted, home_before, home, project_before, mini_repo)


@pytest.mark.parametrize("dry_run", [False, True], ids=["write", "dry-run"])
@pytest.mark.parametrize(("link", "target", "client"), [p for p in PLANTED if p.values[2] != "agents-md"])
def test_init_never_follows_a_link_a_repository_planted(
    lgrep, mini_repo: Path, link: str, target: str, client: str, dry_run: bool
) -> None:
    home = _env(lgrep)
    _home_with_secrets(home)  # ~/.config/opencode and ~/.claude exist: init configures both clients
    planted = _plant(mini_repo, home, link, target)
    home_before, project_before = tree(home), tree(mini_repo)
    result = lgrep("init", str(mini_repo), "--no-index", *(["--dry-run"] if dry_run else []), check=False)
    _assert_refused(result, planted, home_before, home, project_before, mini_repo)


def test_a_link_that_stays_inside_the_project_is_refused_too(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    (mini_repo / "config").mkdir()
    (mini_repo / "config" / "opencode.json").write_text("{}\n")
    (mini_repo / "opencode.json").symlink_to("config/opencode.json")
    before = tree(mini_repo)
    result = lgrep("install", "opencode", "--project", "--path", str(mini_repo), check=False)
    assert result.code == 1 and "opencode.json is a symbolic link (to config/opencode.json)" in result.err
    assert tree(mini_repo) == before


def test_a_fifo_in_the_project_is_refused_not_waited_on(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    os.mkfifo(mini_repo / ".mcp.json")
    result = lgrep("install", "claude-code", "--project", "--path", str(mini_repo), check=False, timeout=60)
    assert result.code == 1 and ".mcp.json is not a regular file" in result.err


# ------------------------------------------------------------------------ uninstall keeps yours


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_uninstall_keeps_a_config_the_user_had_that_holds_only_schema(lgrep, mini_repo: Path, scope: str) -> None:
    home = _env(lgrep)
    folder = mini_repo if scope == "--project" else home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "opencode.json"
    config.write_text(SCHEMA_ONLY)  # byte for byte what lgrep itself would leave
    lgrep("install", "opencode", scope, "--path", str(mini_repo))
    assert "lgrep" in json.loads(config.read_text())["mcp"]
    lgrep("uninstall", "opencode", scope, "--path", str(mini_repo))
    assert config.read_text() == SCHEMA_ONLY


def test_uninstall_keeps_a_project_mcp_json_the_user_had(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    (mini_repo / ".mcp.json").write_text("{}\n")
    lgrep("install", "claude-code", "--project", "--path", str(mini_repo))
    lgrep("uninstall", "claude-code", "--project", "--path", str(mini_repo))
    assert (mini_repo / ".mcp.json").read_text() == "{}\n"
    assert not (mini_repo / ".claude").exists()  # what install created is gone


def test_uninstall_deletes_the_files_lgrep_created(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    before = tree(mini_repo)
    for client in ("opencode", "claude-code"):
        lgrep("install", client, "--project", "--path", str(mini_repo))
    assert (mini_repo / "opencode.json").is_file() and (mini_repo / ".mcp.json").is_file()
    for client in ("opencode", "claude-code"):
        lgrep("uninstall", client, "--project", "--path", str(mini_repo))
    assert tree(mini_repo) == before


# --------------------------------------------------------------------- dotfiles links stay links


@pytest.mark.parametrize(
    ("client", "config", "original"),
    [
        ("opencode", ".config/opencode/opencode.json", '{"theme": "dark"}\n'),
        ("claude-code", ".claude.json", '{"numStartups": 3, "mcpServers": {}}\n'),
        ("codex", ".codex/config.toml", '# mine\nmodel = "o3"\n'),
        ("gemini", ".gemini/settings.json", '{"theme": "dark"}\n'),
    ],
)
def test_a_user_config_linked_into_dotfiles_stays_a_link(
    lgrep, tmp_path: Path, client: str, config: str, original: str
) -> None:
    home = _env(lgrep)
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / Path(config).name
    target.write_text(original)
    target.chmod(0o640)
    link = home / config
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))
    lgrep("install", client, cwd=tmp_path)
    assert link.is_symlink() and link.resolve() == target
    ours = "[mcp_servers.lgrep]" if client == "codex" else '"lgrep": {'
    assert ours in target.read_text() and target.read_text().startswith(original.rstrip("}\n"))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in dotfiles.iterdir()) == [target.name]  # no temporary file left
    lgrep("uninstall", client, cwd=tmp_path)
    assert link.is_symlink() and target.read_text() == original


def test_a_dotfiles_link_left_with_only_schema_is_kept(lgrep, tmp_path: Path) -> None:
    home = _env(lgrep)
    target = home / "dotfiles" / "opencode.json"
    link = home / ".config" / "opencode" / "opencode.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)  # dangling: install creates the target through it
    lgrep("install", "opencode", cwd=tmp_path)
    assert link.is_symlink() and "lgrep" in json.loads(target.read_text())["mcp"]
    lgrep("uninstall", "opencode", cwd=tmp_path)
    assert link.is_symlink() and target.read_text() == SCHEMA_ONLY


# ------------------------------------------------------------------------------- deep nesting


@pytest.mark.parametrize("operation", ["install", "uninstall", "install --dry-run"])
def test_a_too_deeply_nested_file_is_refused_by_name_and_left_alone(lgrep, mini_repo: Path, operation: str) -> None:
    _env(lgrep)
    deep = '{"mcp": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    (mini_repo / "opencode.json").write_text(deep)
    before = tree(mini_repo)
    result = lgrep(*operation.split(), "opencode", "--project", "--path", str(mini_repo), check=False)
    assert result.code == 1 and "Traceback" not in result.err and "internal error" not in result.err
    assert (
        f"{mini_repo.resolve() / 'opencode.json'}: line 1" in result.err
        and "too deeply nested to edit safely" in result.err
    )
    assert tree(mini_repo) == before
