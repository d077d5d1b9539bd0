"""Several projects in one question (ADR 0026), through the entry points: `lgrep search Q A B` over
the daemon and in this process (`--no-daemon`) gives one ranking, the same in both, each hit naming
its project; a folder that does not exist, or one project named twice, is a clear error; and a real
stdio `lgrep mcp` server with two roots searches both when asked, and nothing outside them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.conftest import Daemon, Lgrep
from tests.e2e.test_mcp import _run

pytestmark = [pytest.mark.slow, pytest.mark.model]


def _second_project(tmp_path: Path) -> Path:
    """A small project of its own, about something the fixture repository does not do."""
    beta = tmp_path / "beta"
    (beta / "sheets").mkdir(parents=True)
    (beta / "sheets" / "csv_rows.py").write_text(
        '"""Reading spreadsheet rows from CSV files."""\n'
        "import csv\n\n\n"
        "def read_spreadsheet_rows(path: str) -> list[dict[str, str]]:\n"
        '    """Parse every row of a CSV spreadsheet into a dict keyed by the header."""\n'
        "    with open(path, newline='') as handle:\n"
        "        return list(csv.DictReader(handle))\n"
    )
    return beta


def _stable(payload: dict[str, Any]) -> str:
    """The answer without what differs from run to run (each project's milliseconds)."""
    parts = [{k: v for k, v in p.items() if k != "timings_ms"} for p in payload["projects"]]
    return json.dumps({**payload, "projects": parts}, indent=1, sort_keys=True)


def test_two_projects_one_ranking_through_the_daemon_and_in_process(
    daemon: Daemon, mini_repo: Path, tmp_path: Path
) -> None:
    mini, beta = mini_repo.resolve(), _second_project(tmp_path).resolve()
    query = "verify the token signature"

    through_daemon = daemon.lgrep("search", query, str(mini), str(beta), "--json", "-n", "30")
    answer = through_daemon.json()
    assert [p["project_root"] for p in answer["projects"]] == [str(mini), str(beta)]
    assert "building it first" in through_daemon.err  # neither had an index: both were built first
    hits = answer["results"]
    assert {h["project_root"] for h in hits} == {str(mini), str(beta)}  # more than either has
    assert hits[0]["project_root"] == str(mini) and hits[0]["path"] == "auth/tokens.py"
    for h in hits:  # paths stay relative to their own project
        assert (Path(h["project_root"]) / h["path"]).is_file()

    in_process = daemon.lgrep("search", query, str(mini), str(beta), "--json", "-n", "30", "--no-daemon").json()
    assert _stable(in_process) == _stable(answer)

    # The other project's question ranks that project first.
    rows = daemon.lgrep("search", "parse spreadsheet rows from a csv file", str(mini), str(beta), "--json").json()
    assert rows["results"][0]["project_root"] == str(beta)
    assert rows["results"][0]["path"] == "sheets/csv_rows.py"

    # Text output leads each hit with its project's name, and lists the names' folders on stderr.
    text = daemon.lgrep("search", query, str(mini), str(beta), "-n", "30")
    firsts = [line for line in text.out.splitlines() if line and not line.startswith(" ")]
    assert firsts[0].startswith("[mini] auth/tokens.py:")
    assert any(line.startswith("[beta] sheets/csv_rows.py:") for line in firsts)
    assert f"[mini] {mini}" in text.err and f"[beta] {beta}" in text.err

    # Files across projects: one ranking of files, each naming its project.
    files = daemon.lgrep("search", query, str(mini), str(beta), "--files", "--json").json()
    assert files["results"] == [] and files["files"][0]["project_root"] == str(mini)
    assert files["files"][0]["path"] == "auth/tokens.py"
    assert {f["project_root"] for f in files["files"]} == {str(mini), str(beta)}
    in_process_files = daemon.lgrep("search", query, str(mini), str(beta), "--files", "--json", "--no-daemon")
    assert _stable(in_process_files.json()) == _stable(files)


def test_bad_projects_are_clear_errors(daemon: Daemon, mini_repo: Path, tmp_path: Path) -> None:
    mini, beta = mini_repo.resolve(), _second_project(tmp_path).resolve()
    for args, says in [
        ((str(mini), str(tmp_path / "nowhere")), "nowhere is not a directory"),
        ((str(mini), str(mini / "auth")), "are both in the project"),
        ((str(mini), str(beta), "--component", "lib"), "searches one project's releases"),
        ((str(mini), str(beta), "--path", str(mini / "auth")), "the path filter applies in each"),
    ]:
        for extra in ((), ("--no-daemon",)):
            result = daemon.lgrep("search", "verify the token", *args, *extra, check=False)
            assert result.code != 0, (args, extra)
            assert says in result.err, (args, extra, result.err)
            assert "Traceback" not in result.err


def test_mcp_searches_its_roots_together_when_asked(daemon: Daemon, mini_repo: Path, tmp_path: Path) -> None:
    mini, beta = mini_repo.resolve(), _second_project(tmp_path).resolve()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def read_spreadsheet_rows():\n    PASSWORD = 'hunter2'\n")

    async def steps(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, args in [
            ("default", {"query": "parse spreadsheet rows from a csv file"}),
            ("all", {"query": "parse spreadsheet rows from a csv file", "projects": ["*"]}),
            (
                "named",
                {
                    "query": "verify the token signature",
                    "projects": [str(mini), str(beta)],
                    "limit": 30,
                    "max_tokens": 32000,
                },
            ),
            (
                "both",
                {"query": "token signature, spreadsheet rows", "projects": ["*"], "limit": 30, "max_tokens": 32000},
            ),
            ("files", {"query": "verify the token signature", "projects": ["*"], "files": True}),
            ("outside", {"query": "spreadsheet rows", "projects": [str(mini), str(outside)]}),
            ("escape", {"query": "spreadsheet rows", "projects": ["../outside"]}),
            ("missing", {"query": "spreadsheet rows", "projects": ["*", str(mini / "nope")]}),
            ("folder_path", {"query": "spreadsheet rows", "projects": ["*"], "path": "auth"}),
        ]:
            result = await session.call_tool("lgrep_search", args)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            out[name] = (result.is_error, result.structured_content, text)
        return out

    # A root inside another (mini/auth) is covered by it: ["*"] searches mini once.
    out = _run(daemon, mini, steps, "--root", str(beta), "--root", str(mini / "auth"), program=("lgrep_cli", "mcp"))
    error, default, _ = out["default"]
    assert not error and default["project_root"] == str(mini)  # the server's project alone by default
    assert all("project_root" not in r or r["project_root"] is None for r in default["results"])

    error, every, text = out["all"]
    assert not error, text
    assert [p["project_root"] for p in every["projects"]] == [str(mini), str(beta)]
    assert every["results"][0]["project_root"] == str(beta)
    assert every["results"][0]["path"] == "sheets/csv_rows.py"

    error, named, text = out["named"]
    assert not error, text
    assert named["results"][0]["project_root"] == str(mini) and named["results"][0]["path"] == "auth/tokens.py"
    assert [p["project_root"] for p in named["projects"]] == [str(mini), str(beta)]
    # Both roots answered (beta by words alone: MCP builds a first index up to BM25), and only the
    # server's own project's files are resources.
    error, both, text = out["both"]
    assert not error, text
    assert {r["project_root"] for r in both["results"]} == {str(mini), str(beta)}
    assert all((r["uri"] is not None) == (r["project_root"] == str(mini)) for r in both["results"])
    # Its receipt counts the files of both projects that its results come from.
    assert both["receipt"]["files"] == len({(r["project_root"], r["path"]) for r in both["results"]})
    assert both["receipt"]["file_tokens"] > 0

    error, files, text = out["files"]
    assert not error, text
    assert files["files"][0]["project_root"] == str(mini) and files["files"][0]["path"] == "auth/tokens.py"

    for name in ("outside", "escape"):
        error, _, text = out[name]
        assert error and "outside the folders" in text and "hunter2" not in text, (name, text)
    error, _, text = out["missing"]
    assert error and "nope is not a folder" in text and "Traceback" not in text
    error, _, text = out["folder_path"]
    assert error and "path is a glob" in text


def test_each_project_its_own_model_and_its_own_cost_question(lgrep: Lgrep, mini_repo: Path, tmp_path: Path) -> None:
    """A cloud provider for one project, the local model for the other (`embedding.local_projects`):
    the cost question is asked for the project that would be billed, and once it is indexed both
    answer, each searched with its own model, in one ranking."""
    import subprocess

    from lgrep_core.testing.standins import EmbeddingStandIn

    mini, beta = mini_repo.resolve(), _second_project(tmp_path).resolve()
    with EmbeddingStandIn("voyage", dimension=1024) as voyage:
        config = tmp_path / "config.yaml"
        config.write_text(
            json.dumps({"spend": {"confirm_above_usd": 0.0000001}, "embedding": {"local_projects": [str(beta)]}})
        )
        lgrep.env.update(
            {
                "LGREP_EMBEDDING_PROVIDER": "voyage",
                "LGREP_EMBEDDING_BASE_URL": voyage.base_url,
                "LGREP_EMBEDDING_DIMENSIONS": "256",
                "VOYAGE_API_KEY": "test-key",
                "LGREP_CONFIG": str(config),
            }
        )
        query = ["search", "parse spreadsheet rows from a csv file", str(beta), str(mini), "--json"]
        refused = subprocess.run(
            [*lgrep.command, *query],
            stdin=subprocess.DEVNULL,  # not a terminal: nobody to ask
            capture_output=True,
            text=True,
            env=lgrep.env,
            timeout=300,
            check=False,
        )
        assert refused.returncode == 1 and "no terminal to ask" in refused.stderr and "--yes" in refused.stderr
        assert str(mini) in refused.stderr and "Traceback" not in refused.stderr
        assert not voyage.texts("document")  # nothing of either project was sent

        lgrep("index", str(mini), "--yes")
        sent = len(voyage.texts("document"))
        assert sent and not any("spreadsheet" in t for t in voyage.texts("document"))  # beta stays local
        answer = lgrep(*query).json()
        assert [p["project_root"] for p in answer["projects"]] == [str(beta), str(mini)]
        assert answer["results"][0]["project_root"] == str(beta)
        assert answer["results"][0]["path"] == "sheets/csv_rows.py"
        assert {r["project_root"] for r in answer["results"]} == {str(beta), str(mini)}
        assert len(voyage.texts("document")) == sent  # searching sent no chunk, only the query
        statuses = [lgrep("status", str(p), "--json").json() for p in (beta, mini)]
        assert [s["provider"] for s in statuses] == ["local", "voyage"]
