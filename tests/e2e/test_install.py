"""`lgrep install`, `uninstall` and `init` as a user runs them: a real subprocess with its own HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LGREP_EXE = str(Path(sys.executable).parent / "lgrep")


def _env(lgrep) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in lgrep.env.items() if k not in ("CLAUDE_CONFIG_DIR", "OPENCODE_CONFIG")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"  # no agent client on PATH
    lgrep.env = env
    return env


def test_install_writes_the_absolute_command_and_twice_changes_nothing(lgrep, mini_repo: Path) -> None:
    env = _env(lgrep)
    out = lgrep("install", "opencode", "--json", cwd=mini_repo).json()
    assert out["operation"] == "install" and out["changed"] is True and out["command"] == LGREP_EXE
    assert {c["action"] for c in out["changes"]} == {"create"}
    config = Path(env["HOME"]) / ".config" / "opencode" / "opencode.json"
    assert json.loads(config.read_text())["mcp"]["lgrep"]["command"] == [LGREP_EXE, "mcp"]
    before = config.read_bytes()
    again = lgrep("install", "opencode", cwd=mini_repo)
    assert "nothing to do: already installed" in again.out
    assert config.read_bytes() == before


@pytest.mark.parametrize("client", ["opencode", "claude-code", "codex", "gemini", "cursor", "vscode"])
def test_a_project_install_writes_no_path_of_this_machine(lgrep, mini_repo: Path, client: str) -> None:
    # Teams commit these files: the command is `lgrep` from PATH, and no absolute path is in them.
    env = _env(lgrep)
    out = lgrep("install", client, "--project", "--json", cwd=mini_repo).json()
    assert out["command"] == "lgrep"
    written = [Path(c["path"]) for c in out["changes"] if c["action"] == "create"]
    assert written
    for path in written:
        text = path.read_text()
        assert str(mini_repo.resolve()) not in text and LGREP_EXE not in text and env["HOME"] not in text, path
    assert not any("not on your PATH" in n for n in out["notes"])  # the venv's lgrep is on this PATH
    bare = {**env, "PATH": "/usr/bin:/bin"}
    lgrep.env = bare
    lgrep("uninstall", client, "--project", cwd=mini_repo)
    warned = lgrep("install", client, "--project", cwd=mini_repo)
    assert "`lgrep` is not on your PATH" in warned.out and "--user" in warned.out


def test_dry_run_prints_the_diff_and_writes_nothing(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    (mini_repo / ".mcp.json").write_text('{\n  "mcpServers": {\n    "other": {"command": "x"}\n  }\n}\n')
    files = sorted(p for p in mini_repo.rglob("*"))
    home = Path(lgrep.env["HOME"])
    result = lgrep("install", "claude-code", "--project", "--dry-run", cwd=mini_repo)
    assert "would update" in result.out and "would create" in result.out
    assert '+    "lgrep": {' in result.out and '"other"' in result.out
    assert "dry run: nothing was written" in result.out
    assert sorted(p for p in mini_repo.rglob("*")) == files and not any(home.iterdir())
    assert json.loads(lgrep("uninstall", "claude-code", "--user", "--dry-run", "--json").out)["changed"] is False


def test_user_scope_is_the_default_and_uninstall_takes_it_out(lgrep, tmp_path: Path) -> None:
    _env(lgrep)
    home = Path(lgrep.env["HOME"])
    state = home / ".claude.json"
    state.write_text(json.dumps({"numStartups": 4, "mcpServers": {}}, indent=2))
    lgrep("install", "claude-code", cwd=tmp_path)
    servers = json.loads(state.read_text())["mcpServers"]
    assert servers == {"lgrep": {"command": LGREP_EXE, "args": ["mcp"], "type": "stdio"}}
    result = lgrep("uninstall", "claude-code", cwd=tmp_path)
    assert "removed" in result.out
    assert json.loads(state.read_text()) == {"numStartups": 4, "mcpServers": {}}
    assert not (home / ".claude" / "skills" / "lgrep").exists()


def test_a_file_lgrep_cannot_parse_is_an_error_without_traceback(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    (mini_repo / "opencode.json").write_text('{"mcp": {"a": 1,, }}')
    result = lgrep("install", "opencode", "--project", cwd=mini_repo, check=False)
    assert result.code == 1
    assert result.err.startswith("lgrep: error: ") and "opencode.json: line 1 column 17" in result.err
    assert "Traceback" not in result.err
    assert (mini_repo / "opencode.json").read_text() == '{"mcp": {"a": 1,, }}'
    bad = lgrep("install", "agents-md", "--user", check=False)
    assert bad.code == 1 and "no --user" in bad.err
    unknown = lgrep("install", "windsurf", check=False)
    assert unknown.code == 2 and "windsurf" in unknown.err


def test_agents_md_through_the_command(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    lgrep("install", "agents-md", "--path", str(mini_repo))
    text = (mini_repo / "AGENTS.md").read_text()
    assert text.startswith("<!-- lgrep:start -->") and "lgrep search" in text
    lgrep("uninstall", "agents-md", "--path", str(mini_repo))
    assert not (mini_repo / "AGENTS.md").exists()


@pytest.mark.slow
@pytest.mark.model
def test_init_indexes_and_configures_the_clients_it_finds(daemon, mini_repo: Path) -> None:
    lgrep = daemon.lgrep
    env = _env(lgrep)
    home = Path(env["HOME"])
    (home / ".config" / "opencode").mkdir(parents=True)  # OpenCode was set up here; Claude Code was not
    out = lgrep("init", str(mini_repo), "--json", timeout=300).json()
    assert out["clients"] == ["opencode"]
    assert out["index"]["chunks_total"] > 0 and out["index"]["files_seen"] > 0
    assert [p["client"] for p in out["plans"]] == ["opencode"]
    assert json.loads((mini_repo / "opencode.json").read_text())["mcp"]["lgrep"]["command"] == ["lgrep", "mcp"]
    assert not (mini_repo / ".mcp.json").exists()
    status = lgrep("status", str(mini_repo), "--json").json()
    assert status["state"] == "ready"

    (home / ".claude").mkdir()
    human = lgrep("init", str(mini_repo), "--no-index")
    assert "claude-code (project)" in human.out and "created" in human.out
    assert "opencode (project)" in human.out and "already installed" in human.out
    assert json.loads((mini_repo / ".mcp.json").read_text())["mcpServers"]["lgrep"]["command"] == "lgrep"


def test_init_finds_every_client_by_its_settings_folder(lgrep, mini_repo: Path) -> None:
    home = Path(_env(lgrep)["HOME"])
    for folder in (".config/opencode", ".claude", ".codex", ".gemini", ".cursor", ".config/Code/User"):
        (home / folder).mkdir(parents=True)
    found = lgrep("init", str(mini_repo), "--no-index", "--json").json()
    assert found["clients"] == ["opencode", "claude-code", "codex", "gemini", "cursor", "vscode"]
    for path in ("opencode.json", ".mcp.json", ".codex/config.toml", ".gemini/settings.json", ".cursor/mcp.json"):
        assert (mini_repo / path).is_file(), path
    assert json.loads((mini_repo / ".vscode" / "mcp.json").read_text())["servers"]["lgrep"]["command"] == "lgrep"


def test_init_with_no_client_says_what_to_do(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    result = lgrep("init", str(mini_repo), "--no-index")
    assert "no agent client found" in result.out and "agents-md" in result.out
    assert not (mini_repo / "opencode.json").exists()


def test_the_written_command_runs_outside_this_checkout(lgrep, tmp_path: Path) -> None:
    # What a client does with the config: start the command, from anywhere, with its own environment.
    _env(lgrep)
    lgrep("install", "opencode", "--user", cwd=tmp_path)
    config = json.loads((Path(lgrep.env["HOME"]) / ".config" / "opencode" / "opencode.json").read_text())
    command = config["mcp"]["lgrep"]["command"]
    assert Path(command[0]).is_absolute()
    env = {"HOME": lgrep.env["HOME"], "PATH": "/usr/bin:/bin", "LGREP_CACHE_DIR": lgrep.env["LGREP_CACHE_DIR"]}
    proc = subprocess.run(
        [command[0], "--help"], check=False, capture_output=True, text=True, env=env, cwd="/", timeout=60
    )
    assert proc.returncode == 0 and "install" in proc.stdout
