"""One registration per client, visible: `lgrep install` and `lgrep init` add no second registration
of lgrep to a client that already loads it (another scope, the plugin) unless --also, and
`lgrep doctor` lists every registration, starts each server to see it answer, flags duplicates and
says what the daemon holds. Real `lgrep` processes with a HOME of their own; the servers doctor
checks are real `lgrep mcp` processes (or shims that record how they were started)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

LGREP_EXE = str(Path(sys.executable).parent / "lgrep")


def _env(lgrep) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in lgrep.env.items() if k not in ("CLAUDE_CONFIG_DIR", "OPENCODE_CONFIG")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"  # no agent client on PATH
    lgrep.env = env
    return env


def _home(lgrep) -> Path:  # type: ignore[no-untyped-def]
    return Path(lgrep.env["HOME"])


def _both_clients_set_up(lgrep) -> Path:  # type: ignore[no-untyped-def]
    _env(lgrep)
    home = _home(lgrep)
    (home / ".claude").mkdir()
    (home / ".config" / "opencode").mkdir(parents=True)
    return home


def _snapshot(*folders: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p): (p.read_bytes(), p.stat().st_mtime_ns)
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


# ------------------------------------------------------------------------------- install, init


def test_init_after_a_user_install_adds_no_second_registration_unless_also(lgrep, mini_repo: Path) -> None:
    home = _both_clients_set_up(lgrep)
    lgrep("install", "claude-code")
    lgrep("install", "opencode")
    state = (home / ".claude.json").read_bytes()

    human = lgrep("init", str(mini_repo), "--no-index")
    assert human.out.count("skipped: lgrep is already registered") == 2, human.out
    assert f"{home / '.claude.json'} (user)" in human.out
    assert f"{home / '.config' / 'opencode' / 'opencode.json'} (user)" in human.out
    assert "--also" in human.out and "lgrep uninstall claude-code --user" in human.out
    assert not (mini_repo / ".mcp.json").exists() and not (mini_repo / "opencode.json").exists()
    assert not (mini_repo / ".claude").exists() and not (mini_repo / ".opencode").exists()
    assert (home / ".claude.json").read_bytes() == state

    out = lgrep("init", str(mini_repo), "--no-index", "--json").json()
    assert out["clients"] == ["opencode", "claude-code"] and out["skipped"] == ["opencode", "claude-code"]
    claude = out["plans"][1]
    assert claude["skipped"] is True and claude["changed"] is False and claude["changes"] == []
    (where,) = claude["registered_elsewhere"]
    assert (where["scope"], where["file"], where["command"]) == ("user", str(home / ".claude.json"), [LGREP_EXE, "mcp"])

    also = lgrep("init", str(mini_repo), "--no-index", "--also", "--json").json()
    assert also["skipped"] == [] and all(p["changed"] and p["registered_elsewhere"] for p in also["plans"])
    assert json.loads((mini_repo / ".mcp.json").read_text())["mcpServers"]["lgrep"]["command"] == "lgrep"  # portable
    assert "lgrep" in json.loads((mini_repo / "opencode.json").read_text())["mcp"]


def test_install_says_where_lgrep_is_and_also_adds_the_second(lgrep, mini_repo: Path) -> None:
    _env(lgrep)
    home = _home(lgrep)
    lgrep("install", "claude-code", "--project", cwd=mini_repo)
    held = lgrep("install", "claude-code", cwd=mini_repo)
    assert held.code == 0 and "skipped" in held.out and f"{mini_repo.resolve() / '.mcp.json'} (project)" in held.out
    assert "conflicting scopes" in held.out
    assert not (home / ".claude.json").exists() and not (home / ".claude").exists()
    dry = lgrep("install", "claude-code", "--dry-run", "--json", cwd=mini_repo).json()
    assert dry["skipped"] is True and dry["dry_run"] is True and dry["registered_elsewhere"][0]["scope"] == "project"

    # Elsewhere in the same project: another name for it counts too.
    added = lgrep("install", "claude-code", "--also", cwd=mini_repo)
    assert "created" in added.out and "also registered for claude-code" in added.out
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["lgrep"]["args"] == ["mcp"]
    # Uninstalling one says where it still is.
    gone = lgrep("uninstall", "claude-code", "--project", cwd=mini_repo)
    assert "still registered for claude-code" in gone.out and f"{home / '.claude.json'} (user)" in gone.out


def test_install_is_held_back_by_the_plugin(lgrep, mini_repo: Path) -> None:
    # The files `claude plugin install lgrep@lgrep` writes (tests/e2e/test_install_clients.py has the real one).
    _env(lgrep)
    home = _home(lgrep)
    plugin = home / ".claude" / "plugins" / "cache" / "lgrep" / "lgrep" / "0.1.0"
    plugin.mkdir(parents=True)
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {"lgrep": {"command": "lgrep", "args": ["mcp"]}}}))
    entry = {"scope": "user", "installPath": str(plugin), "version": "0.1.0"}
    (home / ".claude" / "plugins" / "installed_plugins.json").write_text(
        json.dumps({"version": 2, "plugins": {"lgrep@lgrep": [entry]}})
    )
    (home / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"lgrep@lgrep": True}}))
    held = lgrep("install", "claude-code", "--json", cwd=mini_repo).json()
    assert held["skipped"] is True and held["registered_elsewhere"][0]["plugin"] == "lgrep@lgrep"
    human = lgrep("install", "claude-code", cwd=mini_repo)
    assert "the plugin's plugin:lgrep:lgrep" in human.out and "every tool twice" in human.out
    assert "claude plugin disable lgrep@lgrep" in human.out
    assert not (home / ".claude.json").exists()
    # A disabled plugin holds nothing back.
    (home / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"lgrep@lgrep": False}}))
    assert lgrep("install", "claude-code", "--json", cwd=mini_repo).json()["skipped"] is False


# -------------------------------------------------------------------------------------- doctor


def test_doctor_reports_a_missing_command_and_a_broken_file_without_a_traceback(lgrep, mini_repo: Path) -> None:
    home = _both_clients_set_up(lgrep)
    lgrep("install", "opencode", "--project", cwd=mini_repo)
    (mini_repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"lgrep": {"command": "/nowhere/bin/lgrep", "args": ["mcp"]}}})
    )
    (home / ".claude.json").write_text('{"mcpServers": {"lgrep": ')  # cut short
    before = _snapshot(home, mini_repo)

    result = lgrep("doctor", str(mini_repo), "--json", "--timeout", "60", check=False)
    assert result.code == 1 and "Traceback" not in result.err
    report = result.json()
    assert report["ok"] is False and report["project"] == str(mini_repo.resolve())
    clients = {c["client"]: c for c in report["clients"]}
    opencode, claude = clients["opencode"], clients["claude-code"]
    assert claude["problems"][0]["file"] == str(home / ".claude.json") and "line 1" in claude["problems"][0]["error"]
    (missing,) = claude["registrations"]
    assert missing["scope"] == "project" and missing["check"]["command_found"] is False
    assert missing["check"]["started"] is False and "command not found: /nowhere/bin/lgrep" in missing["check"]["error"]
    # The other client is still listed, and its server answered.
    (ours,) = opencode["registrations"]
    assert ours["scope"] == "project" and ours["check"]["answered"] is True and ours["check"]["tools"] >= 9
    assert _snapshot(home, mini_repo) == before  # doctor writes nothing

    human = lgrep("doctor", str(mini_repo), "--no-check", check=False)
    assert human.code == 1 and "Traceback" not in human.out + human.err
    assert f"! {home / '.claude.json'}: line 1" in human.out
    assert "! does not answer: command not found: /nowhere/bin/lgrep" in human.out  # found without starting
    assert "2 problems found" in human.out


@pytest.mark.slow
def test_doctor_lists_both_registrations_flags_the_duplicate_and_starts_neither_daemon_nor_a_file(
    lgrep, mini_repo: Path
) -> None:
    home = _both_clients_set_up(lgrep)
    lgrep("install", "claude-code")
    lgrep("install", "claude-code", "--project", "--also", cwd=mini_repo)
    before = _snapshot(home, mini_repo)

    result = lgrep("doctor", "--json", cwd=mini_repo, check=False)
    assert result.code == 1, result.err
    report = result.json()
    clients = {c["client"]: c for c in report["clients"]}
    opencode, claude = clients["opencode"], clients["claude-code"]
    assert opencode["installed"] is True and opencode["registrations"] == []
    assert [(r["scope"], r["file"]) for r in claude["registrations"]] == [
        ("user", str(home / ".claude.json")),
        ("project", str(mini_repo.resolve() / ".mcp.json")),
    ]
    for reg in claude["registrations"]:
        check = reg["check"]
        assert check["program"] == LGREP_EXE and check["answered"] is True, check
        assert check["server"].startswith("lgrep") and check["tools"] >= 9
    assert "2 places (user, project)" in claude["duplicate"] and "conflicting scopes" in claude["duplicate"]
    assert report["daemon"]["running"] is False
    assert _snapshot(home, mini_repo) == before
    assert lgrep("serve", "--status", check=False).code == 1  # no daemon was started

    human = lgrep("doctor", cwd=mini_repo, check=False).out
    assert "answers: lgrep" in human and "keep one, take out the others" in human
    assert "lgrep uninstall claude-code --user" in human and f"--project --path {mini_repo.resolve()}" in human


@pytest.mark.slow
def test_doctor_starts_the_users_servers_as_the_client_would_without_credentials_and_stops_them(
    lgrep, mini_repo: Path, tmp_path: Path
) -> None:
    _env(lgrep)
    home = _home(lgrep)
    (tmp_path / "shim").mkdir()
    shim = tmp_path / "shim" / "lgrep"  # an `lgrep ... mcp` under another name is lgrep too
    record = tmp_path / "started"
    # Records its pid, folder, the credentials it got and its arguments, then becomes the real
    # `lgrep mcp` (or hangs, with HANG set).
    shim.write_text(
        "#!/bin/sh\n"
        f'echo "$$ $(pwd) $SHIM_TAG ${{VOYAGE_API_KEY:-nokey}} ${{MY_SERVICE_TOKEN:-notoken}} $*" >> {record}\n'
        f'[ -n "$HANG" ] && exec sleep 300\n'
        f'exec {LGREP_EXE} "$@"\n'
    )
    shim.chmod(0o755)
    servers = {
        "lgrep": {"command": str(shim), "args": ["mcp"], "env": {"SHIM_TAG": "fromentry"}},
        "stuck": {"command": str(shim), "args": ["mcp", "--root", "/"], "env": {"HANG": "1", "SHIM_TAG": "stuck"}},
    }
    (home / ".claude.json").write_text(json.dumps({"mcpServers": servers}))  # the user's own entries
    lgrep.env.update(VOYAGE_API_KEY="pa-secret", MY_SERVICE_TOKEN="t0ken")
    report = lgrep("doctor", str(mini_repo), "--json", "--timeout", "15", check=False).json()
    (claude,) = [c for c in report["clients"] if c["client"] == "claude-code"]
    by_name = {r["name"]: r for r in claude["registrations"]}
    assert by_name["lgrep"]["check"]["answered"] is True and by_name["lgrep"]["check"]["tools"] >= 9
    assert by_name["stuck"]["check"]["started"] is True and by_name["stuck"]["check"]["answered"] is False
    assert "no answer to initialize within 15 s" in by_name["stuck"]["check"]["error"]
    assert "registered as stuck: the agent gets every tool twice" in claude["duplicate"]
    started = sorted(line.split() for line in record.read_text().splitlines())
    assert sorted(line[1:] for line in started) == [
        [str(mini_repo.resolve()), "fromentry", "nokey", "notoken", "mcp"],
        [str(mini_repo.resolve()), "stuck", "nokey", "notoken", "mcp", "--root", "/"],
    ]
    assert all(_gone(int(line[0])) for line in started)  # both stopped, the hung one too


@pytest.mark.slow
def test_doctor_reports_the_running_daemon(daemon, mini_repo: Path) -> None:
    lgrep = daemon.lgrep
    _env(lgrep)
    pid = daemon.start()
    report = lgrep("doctor", str(mini_repo), "--json", "--no-check").json()
    assert report["ok"] is True
    running = report["daemon"]
    assert running["running"] is True and running["pid"] == pid and running["watched_projects"] == []
    assert running["unix_socket_path"] == str(daemon.socket)
    human = lgrep("doctor", str(mini_repo), "--no-check").out
    assert (
        f"daemon: running, lgrep {running['version']}, pid {pid}; projects: 0 in memory, 0 watched" in human
        and "no problems found" in human
    )
