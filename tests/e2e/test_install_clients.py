"""After `lgrep install`, the real clients (from npm) see lgrep: OpenCode and Claude Code start the
`lgrep mcp` server the installer wrote and report it connected, OpenCode lists the skill, and
Claude Code validates the plugin and the marketplace.

The clients run offline with a HOME of their own under tmp_path; the MCP server they start is the
venv's `lgrep` entry point, with the cache dir of the `daemon` fixture (which stops any daemon of it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

OPENCODE = ("opencode-ai", "1.18.33", "opencode")
CLAUDE = ("@anthropic-ai/claude-code", "2.1.328", "claude")
ROOT = Path(__file__).resolve().parents[2]
LGREP_BIN = Path(sys.executable).parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\[\d+m")

# Nothing that reaches out: no update checks, model lists, telemetry, sharing or LSP downloads.
QUIET = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    # OpenCode also reads Claude Code's skills: off, so only the skill lgrep installed for it counts.
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def _env(daemon) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {
        k: v
        for k, v in daemon.lgrep.env.items()
        if not k.startswith(("OPENCODE", "CLAUDE", "ANTHROPIC")) and k != "XDG_CONFIG_HOME"
    }
    env.update(QUIET)
    env["PATH"] = f"{LGREP_BIN}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin"
    daemon.lgrep.env = env
    return env


def _run(exe: Path, *args: str, env: dict[str, str], cwd: Path, timeout: float = 180) -> str:
    proc = subprocess.run(
        [str(exe), *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    out = ANSI.sub("", proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"{exe.name} {' '.join(args)} exited {proc.returncode}:\n{out[-3000:]}"
    return out


def _git(repo: Path) -> None:
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)


def _line(out: str, name: str) -> str:
    lines = [line for line in out.splitlines() if re.search(rf"\b{name}\b", line)]
    assert lines, out
    return " ".join(lines)


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_opencode_connects_to_lgrep_and_lists_its_skill(daemon, npm_client, mini_repo: Path, scope: str) -> None:
    opencode = npm_client(*OPENCODE)
    env = _env(daemon)
    _git(mini_repo)
    daemon.lgrep("install", "opencode", scope, cwd=mini_repo)

    listed = _run(opencode, "mcp", "list", env=env, cwd=mini_repo)
    line = " ".join(listed.split())
    expected = f"{LGREP_BIN / 'lgrep'} mcp" + (f" {mini_repo.resolve()}" if scope == "--project" else "")
    assert re.search(r"✓ lgrep\s+connected", line), listed
    assert expected in line, listed

    skills = json.loads(_run(opencode, "debug", "skill", env=env, cwd=mini_repo)[:None])
    (skill,) = [s for s in skills if s["name"] == "lgrep"]
    home_skills = Path(env["HOME"]) / ".config" / "opencode" / "skills"
    where = mini_repo / ".opencode" / "skills" if scope == "--project" else home_skills
    assert skill["location"] == str(where / "lgrep" / "SKILL.md")
    assert "lgrep_search" in skill["content"]

    daemon.lgrep("uninstall", "opencode", scope, cwd=mini_repo)
    assert "lgrep" not in _run(opencode, "mcp", "list", env=env, cwd=mini_repo)
    assert not [s for s in json.loads(_run(opencode, "debug", "skill", env=env, cwd=mini_repo)) if s["name"] == "lgrep"]


def _trust(env: dict[str, str], project: Path) -> None:
    """What accepting Claude Code's folder-trust dialog records (a user who works in the project has)."""
    path = Path(env["HOME"]) / ".claude.json"
    state = json.loads(path.read_text()) if path.exists() else {}
    state.setdefault("projects", {}).setdefault(str(project), {})["hasTrustDialogAccepted"] = True
    path.write_text(json.dumps(state, indent=2))


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_claude_code_connects_to_lgrep(daemon, npm_client, mini_repo: Path, scope: str) -> None:
    claude = npm_client(*CLAUDE)
    env = _env(daemon)
    _git(mini_repo)
    if scope == "--project":
        _trust(env, mini_repo.resolve())
    daemon.lgrep("install", "claude-code", scope, cwd=mini_repo)

    listed = _run(claude, "mcp", "list", env=env, cwd=mini_repo)
    line = _line(listed, "lgrep")
    assert re.search(r"[✓✔] Connected", line), listed
    assert str(LGREP_BIN / "lgrep") in line, listed

    daemon.lgrep("uninstall", "claude-code", scope, cwd=mini_repo)
    assert "lgrep" not in _run(claude, "mcp", "list", env=env, cwd=mini_repo)


def test_claude_code_validates_the_plugin_and_the_marketplace(daemon, npm_client, tmp_path: Path) -> None:
    claude = npm_client(*CLAUDE)
    env = _env(daemon)
    plugin = _run(claude, "plugin", "validate", str(ROOT / "integrations" / "claude-code"), env=env, cwd=tmp_path)
    assert "Validation passed" in plugin and "mcpServers: lgrep" in plugin and "skills: lgrep" in plugin
    assert "hooks: SessionStart" in plugin
    market = _run(claude, "plugin", "validate", str(ROOT), env=env, cwd=tmp_path)
    assert "Validating marketplace manifest" in market and "Validation passed" in market


def test_the_plugin_installs_from_the_marketplace_and_its_server_connects(daemon, npm_client, mini_repo: Path) -> None:
    # The plugin's .mcp.json runs `lgrep` from PATH (a plugin cannot know where lgrep is installed).
    claude = npm_client(*CLAUDE)
    env = _env(daemon)
    _git(mini_repo)
    added = _run(claude, "plugin", "marketplace", "add", str(ROOT), env=env, cwd=mini_repo)
    assert "Successfully added marketplace: lgrep" in added
    assert "Successfully installed plugin: lgrep@lgrep" in _run(
        claude, "plugin", "install", "lgrep@lgrep", env=env, cwd=mini_repo
    )
    line = _line(_run(claude, "mcp", "list", env=env, cwd=mini_repo), "lgrep")
    assert "plugin:lgrep:lgrep" in line and re.search(r"[✓✔] Connected", line), line

    # lgrep finds the plugin where Claude Code recorded it: no second copy of its tools, and doctor lists it.
    held = daemon.lgrep("install", "claude-code", "--json", cwd=mini_repo).json()
    assert held["skipped"] is True and [r["plugin"] for r in held["registered_elsewhere"]] == ["lgrep@lgrep"]
    assert "plugin:lgrep:lgrep" in _run(claude, "mcp", "list", env=env, cwd=mini_repo)
    assert not re.search(r"^lgrep:", _run(claude, "mcp", "list", env=env, cwd=mini_repo), re.MULTILINE)
    report = daemon.lgrep("doctor", str(mini_repo), "--json").json()
    (claude_code,) = [c for c in report["clients"] if c["client"] == "claude-code"]
    (plugin,) = claude_code["registrations"]
    assert (plugin["scope"], plugin["name"], plugin["command"]) == ("plugin", "plugin:lgrep:lgrep", ["lgrep", "mcp"])
    assert plugin["check"]["answered"] is True and report["ok"] is True


def test_claude_code_warns_of_no_conflict_after_a_user_install_and_init(daemon, npm_client, mini_repo: Path) -> None:
    # The case: a user install, then `lgrep init` in a project made Claude Code warn about
    # conflicting scopes. Now init leaves the project alone; with --also the warning is back.
    claude = npm_client(*CLAUDE)
    env = _env(daemon)
    _git(mini_repo)
    _trust(env, mini_repo.resolve())
    daemon.lgrep("install", "claude-code", cwd=mini_repo)
    init = daemon.lgrep("init", str(mini_repo), "--no-index", "--json").json()
    assert init["clients"] == ["claude-code"] and init["skipped"] == ["claude-code"]
    listed = _run(claude, "mcp", "list", env=env, cwd=mini_repo)
    assert "Conflicting scopes" not in listed and re.search(r"[✓✔] Connected", _line(listed, "lgrep")), listed

    daemon.lgrep("init", str(mini_repo), "--no-index", "--also")
    listed = _run(claude, "mcp", "list", env=env, cwd=mini_repo)
    assert "Conflicting scopes" in listed and 'Server "lgrep" is defined in multiple scopes' in listed, listed
    doctor = daemon.lgrep("doctor", str(mini_repo), "--json", "--no-check", check=False)
    assert doctor.code == 1 and "conflicting scopes" in doctor.json()["clients"][1]["duplicate"]


@pytest.mark.model
def test_the_session_start_hook_warms_the_index_without_blocking(
    daemon, mini_repo: Path, tmp_path: Path, wait_for
) -> None:  # type: ignore[no-untyped-def]
    env = _env(daemon)
    hook = json.loads((ROOT / "integrations" / "claude-code" / "hooks" / "hooks.json").read_text())
    command = hook["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    # An `lgrep` on PATH that records its pid, so the test can wait for the background index to end.
    shim = tmp_path / "bin"
    shim.mkdir()
    pids = tmp_path / "pids"
    (shim / "lgrep").write_text(f'#!/bin/sh\necho $$ >> {pids}\nexec {LGREP_BIN / "lgrep"} "$@"\n')
    (shim / "lgrep").chmod(0o755)
    hook_env = {**env, "PATH": f"{shim}{os.pathsep}/usr/bin{os.pathsep}/bin", "CLAUDE_PROJECT_DIR": str(mini_repo)}
    proc = subprocess.run(
        ["sh", "-c", command], check=False, env=hook_env, cwd=tmp_path, timeout=10, capture_output=True
    )
    assert proc.returncode == 0 and proc.stdout == b""
    wait_for(lambda: pids.exists() and pids.read_text().strip(), 30, "the hook to start lgrep index")
    pid = int(pids.read_text().split()[0])

    def ended() -> bool:
        # Orphaned by the hook's shell, it is reaped by init; where init does not reap, a zombie has ended too.
        if Path("/proc/self/stat").exists():  # Linux
            try:
                return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
            except FileNotFoundError:
                return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(ended, 300, "the background `lgrep index --no-wait` to finish")
    assert daemon.lgrep("status", str(mini_repo), "--json").json()["state"] == "ready"

    # Without lgrep on PATH the hook does nothing and still succeeds.
    bare = {**hook_env, "PATH": f"/usr/bin{os.pathsep}/bin"}
    proc = subprocess.run(["sh", "-c", command], check=False, env=bare, cwd=tmp_path, timeout=10, capture_output=True)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
