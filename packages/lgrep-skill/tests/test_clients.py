"""Every row of the client table is wired all the way: install writes what the readers then find,
where detection looks, and uninstall takes it out again, at both scopes, so a new row cannot be
half-wired (written but not found, found but not detected)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lgrep_skill import AGENT_CLIENTS, CLIENTS, Client, Locations, Scope, plan_install, plan_uninstall
from lgrep_skill.registrations import READERS, find_registrations, runs_lgrep

EXE = "/opt/lgrep/bin/lgrep"


def test_the_table_is_what_install_and_the_readers_list() -> None:
    names = [client.name for client in AGENT_CLIENTS]
    assert len(set(names)) == len(names)
    assert (*names, "agents-md") == CLIENTS
    assert READERS == AGENT_CLIENTS


@pytest.mark.parametrize("scope", ["user", "project"])
@pytest.mark.parametrize("client", AGENT_CLIENTS, ids=lambda client: client.name)
def test_install_is_found_detected_and_uninstalled(tmp_path: Path, client: Client, scope: Scope) -> None:
    where = Locations(home=tmp_path / "home")
    where.home.mkdir()
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (reading,) = find_registrations(project, where, [client.name])
    assert not reading.registrations and not reading.problems

    plan = plan_install(client.name, scope, project=project, command=EXE, where=where)
    plan.apply()
    assert client.started in plan.notes
    if scope == "project" and client.project_note:
        assert client.project_note in plan.notes
    (server,) = [change.path for change in plan.changes if change.what == "MCP server"]
    (reading,) = find_registrations(project, where, [client.name])
    assert not reading.problems
    (found,) = reading.registrations
    assert (found.scope, found.name, found.file, found.enabled) == (scope, "lgrep", server, True)
    assert found.command is not None and runs_lgrep(found.command)
    assert found.command[0] == (EXE if scope == "user" else "lgrep")
    assert found.cwd == project and (found.trusted is not True if scope == "project" else found.trusted is None)
    skills = client.skills_folder(scope, project, where)
    assert (skills is not None) == (client.skills is not None)
    if skills is not None:
        assert (skills / "lgrep" / "SKILL.md").is_file()
    if scope == "user":
        assert client.folder(where).is_dir()  # where `lgrep init` and doctor look for the client

    plan_uninstall(client.name, scope, project=project, where=where).apply()
    (reading,) = find_registrations(project, where, [client.name])
    assert not reading.registrations and not reading.problems
    assert skills is None or not (skills / "lgrep").exists()
