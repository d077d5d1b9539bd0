"""After `lgrep install`, the real clients (from npm) see lgrep: OpenCode, Claude Code, Codex and
Gemini CLI start the `lgrep mcp` server the installer wrote and report it connected, OpenCode, Codex
and Gemini CLI list the skill, and Claude Code validates the plugin and the marketplace.

The clients run offline with a HOME of their own under tmp_path; the MCP server they start is the
venv's `lgrep` entry point, with the cache dir of the `daemon` fixture (which stops any daemon of it).
A user install names it by its absolute path; a project install writes a bare `lgrep`, which the
clients find on the PATH the test gives them (the venv's bin folder first).
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

OPENCODE = ("opencode-ai", "1.18.33", "opencode")
CLAUDE = ("@anthropic-ai/claude-code", "2.1.328", "claude")
CODEX = ("@openai/codex", "0.171.0", "codex")
GEMINI = ("@google/gemini-cli", "0.61.0", "gemini")
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
        if not k.startswith(("OPENCODE", "CLAUDE", "ANTHROPIC", "CODEX", "OPENAI", "GEMINI", "GOOGLE"))
        and k != "XDG_CONFIG_HOME"
    }
    env.update(QUIET)
    env["PATH"] = f"{LGREP_BIN}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin"
    daemon.lgrep.env = env
    return env


def _run(exe: Path, *args: str, env: dict[str, str], cwd: Path, timeout: float = 180, stdout: bool = False) -> str:
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
    return proc.stdout if stdout else out


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
    expected = "lgrep mcp" if scope == "--project" else f"{LGREP_BIN / 'lgrep'} mcp"
    assert re.search(r"✓ lgrep\s+connected", line), listed
    assert expected in line and str(mini_repo) not in line, listed

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
    assert ("lgrep: lgrep mcp" if scope == "--project" else str(LGREP_BIN / "lgrep")) in line, listed

    daemon.lgrep("uninstall", "claude-code", scope, cwd=mini_repo)
    assert "lgrep" not in _run(claude, "mcp", "list", env=env, cwd=mini_repo)


class _AppServer:
    """Codex's app server (`codex app-server`, JSON-RPC a line at a time on stdio): how Codex's own
    front ends ask which MCP servers a session has and whether they connected. `codex mcp list` only
    reads the config; this starts the servers as a session does."""

    def __init__(self, exe: Path, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [str(exe), "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=cwd,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0
        self.notices: list[dict[str, Any]] = []

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def call(self, method: str, params: dict[str, object], timeout: float = 120) -> dict[str, object]:
        assert self.proc.stdin is not None
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"id": self.next_id, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.lines.get(timeout=timeout))
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]
            self.notices.append(message)

    def startup(self, name: str, timeout: float = 120) -> dict[str, Any]:
        """The notice that MCP server `name` finished starting (ready or failed), waited for."""
        seen = 0
        while True:
            for notice in self.notices[seen:]:
                params = notice.get("params") or {}
                ours = notice.get("method") == "mcpServer/startupStatus/updated" and params.get("name") == name
                if ours and params.get("status") not in ("starting", None):
                    return params
            seen = len(self.notices)
            self.notices.append(json.loads(self.lines.get(timeout=timeout)))

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"method": method}) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)
        self.reader.join(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _codex_session(codex: Path, env: dict[str, str], project: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the lgrep MCP server's status in a new Codex session in `project`, the skills Codex finds there)."""
    server = _AppServer(codex, env, project)
    try:
        server.call("initialize", {"clientInfo": {"name": "lgrep-test", "version": "0"}})
        server.notify("initialized")
        thread = server.call("thread/start", {"cwd": str(project), "ephemeral": True})
        thread_id = thread["thread"]["id"]  # type: ignore[index]
        started = server.startup("lgrep")
        assert started["status"] == "ready", started
        status = server.call("mcpServerStatus/list", {"threadId": thread_id})
        skills = server.call("skills/list", {"cwds": [str(project)]})
    finally:
        server.close()
    lgrep = [s for s in status["data"] if s["name"] == "lgrep"]  # type: ignore[union-attr]
    found = [s for entry in skills["data"] for s in entry["skills"]]  # type: ignore[union-attr]
    return (lgrep[0] if lgrep else {}), found


def _trust_codex(env: dict[str, str], project: Path) -> None:
    """What answering yes to Codex's "trust this folder?" records (it reads a project's
    .codex/config.toml only then)."""
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_codex_connects_to_lgrep_and_lists_its_skill(daemon, npm_client, mini_repo: Path, scope: str) -> None:
    codex = npm_client(*CODEX)
    env = _env(daemon)
    _git(mini_repo)
    project = mini_repo.resolve()
    if scope == "--project":
        _trust_codex(env, project)
    daemon.lgrep("install", "codex", scope, cwd=mini_repo)

    (listed,) = [
        s
        for s in json.loads(_run(codex, "mcp", "list", "--json", env=env, cwd=mini_repo, stdout=True))
        if s["name"] == "lgrep"
    ]
    command = "lgrep" if scope == "--project" else str(LGREP_BIN / "lgrep")
    assert listed["enabled"] and listed["transport"]["command"] == command and listed["transport"]["args"] == ["mcp"]

    status, skills = _codex_session(codex, env, project)
    assert status.get("runtimeStatus") == "connected", status
    assert status["serverInfo"]["name"] == "lgrep" and "lgrep_search" in status["tools"]
    home_skills = Path(env["HOME"]) / ".codex" / "skills"
    where = project / ".codex" / "skills" if scope == "--project" else home_skills
    assert [s["path"] for s in skills if s["name"] == "lgrep"] == [str(where / "lgrep" / "SKILL.md")]

    daemon.lgrep("uninstall", "codex", scope, cwd=mini_repo)
    assert not [
        s
        for s in json.loads(_run(codex, "mcp", "list", "--json", env=env, cwd=mini_repo, stdout=True))
        if s["name"] == "lgrep"
    ]
    assert not (where / "lgrep").exists()


def _trust_gemini(env: dict[str, str], project: Path) -> None:
    """What trusting the folder in Gemini CLI's dialog records (it starts no MCP server, user or
    project, in a folder that is not trusted)."""
    path = Path(env["HOME"]) / ".gemini" / "trustedFolders.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({str(project): "TRUST_FOLDER"}))


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_gemini_cli_connects_to_lgrep_and_lists_its_skill(daemon, npm_client, mini_repo: Path, scope: str) -> None:
    gemini = npm_client(*GEMINI)
    env = _env(daemon)
    _git(mini_repo)
    project = mini_repo.resolve()
    _trust_gemini(env, project)
    daemon.lgrep("install", "gemini", scope, cwd=mini_repo)
    # `gemini mcp list` gives a server 5 s to connect unless its entry says otherwise; a Python server
    # on a loaded two-core CI machine can take longer, so the test sets a timeout of its own in the
    # entry, as a user may (and reinstalling keeps it).
    settings = (project if scope == "--project" else Path(env["HOME"])) / ".gemini" / "settings.json"
    doc = json.loads(settings.read_text())
    doc["mcpServers"]["lgrep"]["timeout"] = 60_000
    settings.write_text(json.dumps(doc, indent=2))
    assert "kept your other settings" in daemon.lgrep("install", "gemini", scope, cwd=mini_repo).out

    line = _line(_run(gemini, "mcp", "list", env=env, cwd=mini_repo), "lgrep")
    command = "lgrep" if scope == "--project" else str(LGREP_BIN / "lgrep")
    assert f"lgrep: {command} mcp (stdio) - Connected" in line, line

    skills = _run(gemini, "skills", "list", env=env, cwd=mini_repo)
    home_skills = Path(env["HOME"]) / ".gemini" / "skills"
    where = project / ".gemini" / "skills" if scope == "--project" else home_skills
    assert f"Location:    {where / 'lgrep' / 'SKILL.md'}" in skills, skills

    daemon.lgrep("uninstall", "gemini", scope, cwd=mini_repo)
    assert "lgrep" not in _run(gemini, "mcp", "list", env=env, cwd=mini_repo)
    assert "lgrep" not in _run(gemini, "skills", "list", env=env, cwd=mini_repo).split("Discovered Agent Skills")[-1]


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
