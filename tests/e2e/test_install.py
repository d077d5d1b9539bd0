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
    _env(lgrep)
    out = lgrep("install", "opencode", "--project", "--json", cwd=mini_repo).json()
    assert out["operation"] == "install" and out["changed"] is True and out["command"] == LGREP_EXE
    assert {c["action"] for c in out["changes"]} == {"create"}
    config = json.loads((mini_repo / "opencode.json").read_text())
    assert config["mcp"]["lgrep"]["command"] == [LGREP_EXE, "mcp", str(mini_repo.resolve())]
    before = (mini_repo / "opencode.json").read_bytes()
    again = lgrep("install", "opencode", "--project", cwd=mini_repo)
    assert "nothing to do: already installed" in again.out
    assert (mini_repo / "opencode.json").read_bytes() == before


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
    unknown = lgrep("install", "cursor", check=False)
    assert unknown.code == 2 and "cursor" in unknown.err


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
    assert json.loads((mini_repo / "opencode.json").read_text())["mcp"]["lgrep"]["command"][-1] == str(mini_repo)
    assert not (mini_repo / ".mcp.json").exists()
    status = lgrep("status", str(mini_repo), "--json").json()
    assert status["state"] == "ready"

    (home / ".claude").mkdir()
    human = lgrep("init", str(mini_repo), "--no-index")
    assert "claude-code (project)" in human.out and "created" in human.out
    assert "opencode (project)" in human.out and "already installed" in human.out
    assert json.loads((mini_repo / ".mcp.json").read_text())["mcpServers"]["lgrep"]["command"] == LGREP_EXE


def test_init_with_no_client_says_what_to_do(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    result = lgrep("init", str(mini_repo), "--no-index")
    assert "no OpenCode or Claude Code found" in result.out and "agents-md" in result.out
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
