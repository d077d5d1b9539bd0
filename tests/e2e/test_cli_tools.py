"""The MCP tools' commands: `lgrep file`, `lgrep symbol`, `lgrep related` (and `watch --json`), in
this process and through the daemon, with the same JSON either way."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.model]


def _check_answers(run, repo: Path) -> None:  # type: ignore[no-untyped-def]
    piece = run("file", "auth/tokens.py", "--lines", "27:30", "--json", cwd=repo).json()
    assert piece["project"] == str(repo.resolve()) and piece["path"] == "auth/tokens.py"
    assert (piece["start_line"], piece["end_line"]) == (27, 30)
    assert piece["content"].splitlines() == (repo / "auth/tokens.py").read_text().splitlines()[26:30]
    human = run("file", str(repo / "auth" / "tokens.py"), "--lines", "27:28", cwd=repo.parent).out.splitlines()
    assert human[0].startswith("27  ") and "def verify_jwt" in human[0] and len(human) == 2

    found = run("symbol", "TokenSignr", str(repo), "--json").json()  # one typo
    assert found["matches"][0]["symbol"] == "TokenSigner" and found["matches"][0]["path"] == "auth/tokens.py"
    assert found["matches"][0]["exact"] is False
    assert run("symbol", "TokenSigner", str(repo), "--kind", "class", "--json").json()["matches"][0]["exact"] is True

    near = run("related", "auth/tokens.py", "28", "-n", "3", "--json", cwd=repo).json()
    assert near["anchor"]["path"] == "auth/tokens.py" and 28 in range(
        near["anchor"]["start_line"], near["anchor"]["end_line"] + 1
    )
    assert 0 < len(near["related"]) <= 3 and all(
        {"path", "start_line", "score", "why"} <= set(r) for r in near["related"]
    )

    listed = run("files", str(repo), "--json").json()
    on_disk = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file())
    assert [f["path"] for f in listed["files"]] == on_disk and listed["total"] == len(on_disk)
    go = run("files", str(repo), "--lang", "go", "--json").json()
    assert [f["path"] for f in go["files"]] == ["cmd/server.go"] and go["files"][0]["content_type"] == "code"
    assert run("files", str(repo), "--path", "auth", "-n", "1", "--json").json()["total"] == 1

    outside = run("file", "../outside.py", cwd=repo, check=False)
    assert outside.code != 0 and "not inside the project" in outside.err and "Traceback" not in outside.err
    bad = run("symbol", "x", str(repo), "--kind", "nonsense", check=False)
    assert bad.code != 0 and "unknown kind" in bad.err and "Traceback" not in bad.err


def test_in_process(lgrep, mini_repo: Path) -> None:
    lgrep("index", "-q", str(mini_repo), "--no-daemon")
    _check_answers(lambda *a, **k: lgrep(*a, "--no-daemon", **k), mini_repo)


def test_through_the_daemon(daemon, mini_repo: Path) -> None:
    daemon.lgrep("index", "-q", str(mini_repo))
    _check_answers(daemon.lgrep, mini_repo)
    assert daemon.lgrep("watch", str(mini_repo), "--json").json() == {
        "project": str(mini_repo.resolve()),
        "watched": True,
        "already_watched": False,
    }
    assert daemon.lgrep("unwatch", str(mini_repo), "--json").json()["was_watched"] is True
