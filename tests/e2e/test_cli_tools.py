"""The MCP tools' commands: `lgrep file`, `lgrep symbol`, `lgrep related`, `lgrep skeleton`,
`lgrep trace` (and `watch --json`), in this process and through the daemon, with the same JSON
either way."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.model]


def _check_answers(run, repo: Path) -> None:  # type: ignore[no-untyped-def]
    piece = run("file", "auth/tokens.py", "--lines", "27:30", "--json", cwd=repo).json()
    assert piece["project_root"] == str(repo.resolve()) and piece["path"] == "auth/tokens.py"
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
    # A folder inside the project: its files, from the project's index, which the answer names.
    inside = run("files", str(repo / "auth"), "--json")
    assert f"inside the project {repo.resolve()}" in inside.err, inside.err
    assert inside.json()["project_root"] == str(repo.resolve())
    assert [f["path"] for f in inside.json()["files"]] == [p for p in on_disk if p.startswith("auth/")]
    assert run("symbol", "TokenSigner", str(repo / "auth"), "--json").json()["project_root"] == str(repo.resolve())

    shape = run("skeleton", "auth/tokens.py", "--json", cwd=repo).json()
    assert shape["path"] == "auth/tokens.py" and shape["language"] == "python"
    assert "    def verify_jwt(self, token: str) -> dict:" in shape["content"]
    assert "hmac.compare_digest" not in shape["content"] and "⋯" in shape["content"]
    assert 0 < shape["skeleton_tokens"] < shape["file_tokens"] and shape["tokenizer"].endswith("WordPiece")
    # fresh: an edit shows at once, before any re-index
    tokens_py = repo / "auth" / "tokens.py"
    original = tokens_py.read_text()
    tokens_py.write_text(original + "\n\ndef rotate_keys(old: bytes) -> bytes:\n    return old[::-1]\n")
    try:
        assert "def rotate_keys(old: bytes) -> bytes:" in run("skeleton", str(tokens_py), "--json").json()["content"]
    finally:
        tokens_py.write_text(original)
    human = run("skeleton", "auth/tokens.py", cwd=repo)
    assert "class TokenSigner" in human.out and "tokens" in human.err and "saved" in human.err

    traced = run("trace", "verify_jwt", str(repo), "--callees", "--json").json()
    assert traced["definitions"][0]["path"] == "auth/tokens.py" and traced["resolve_imports"] is True
    assert {(e["callee"]["symbol"], e["resolution"]) for e in traced["edges"]} >= {("_sign", "local")}
    deeper = run("trace", "verify_jwt", str(repo), "--callees", "--depth", "2", "--json").json()
    assert ("_b64", 2) in {(e["callee"]["symbol"], e["depth"]) for e in deeper["edges"]}
    paged = run("trace", "verify_jwt", str(repo), "--callees", "--depth", "2", "-n", "1", "--json").json()
    assert len(paged["edges"]) == 1 and paged["next_offset"] == 1 and paged["total"] == deeper["total"]
    text = run("trace", "_sign", str(repo)).out
    assert "callers:" in text and "TokenSigner.verify_jwt" in text and "[local]" in text
    missing = run("trace", "no_such_function", str(repo), check=False)
    assert missing.code != 0 and "no definition of 'no_such_function'" in missing.err and "Traceback" not in missing.err
    prose = run("skeleton", "config.yaml", cwd=repo, check=False)
    assert prose.code != 0 and "no structure" in prose.err and "Traceback" not in prose.err

    # A file names the project of its own folder (none indexed here), or the one --project names.
    outside = run("file", "../outside.py", cwd=repo, check=False)
    assert outside.code != 0 and f"{repo.parent.resolve()} has no index yet" in outside.err, outside.err
    outside = run("file", "../outside.py", "--project", ".", cwd=repo, check=False)
    assert outside.code != 0 and "not inside the project" in outside.err and "Traceback" not in outside.err
    bad = run("symbol", "x", str(repo), "--kind", "nonsense", check=False)
    assert bad.code != 0 and "unknown kind" in bad.err and "Traceback" not in bad.err


def test_in_process(lgrep_here, mini_repo: Path) -> None:
    # --no-daemon: the commands' own path. They run in pytest's process (lgrep_here): each answer is
    # checked, not the process start, which test_through_the_daemon's commands make.
    lgrep_here("index", "-q", str(mini_repo), "--no-daemon")
    _check_answers(lambda *a, **k: lgrep_here(*a, "--no-daemon", **k), mini_repo)


def test_through_the_daemon(daemon, mini_repo: Path) -> None:
    daemon.lgrep("index", "-q", str(mini_repo))
    _check_answers(daemon.lgrep, mini_repo)
    assert daemon.lgrep("watch", str(mini_repo), "--json").json() == {
        "project_root": str(mini_repo.resolve()),
        "watched": True,
        "already_watched": False,
    }
    assert daemon.lgrep("unwatch", str(mini_repo), "--json").json()["was_watched"] is True


def test_files_gone_or_moved_behind_a_symlink_since_indexing(daemon, mini_repo: Path, tmp_path: Path) -> None:
    """GetFile through the daemon (a gRPC client, and `lgrep file` on it) of a file deleted since it
    was indexed is NOT_FOUND, and of a file whose folder became a symlink out of the project is
    refused: clear messages, no traceback, nothing from outside the project."""
    from lgrep_core.domain.errors import InvalidRequestError, NotFoundError
    from lgrep_core.domain.models import GetFileRequest, SkeletonRequest
    from lgrep_core.rpc.client import LgrepClient

    daemon.lgrep("index", "-q", str(mini_repo))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "server.go").write_text("package main // OUTSIDE-THE-PROJECT\n")
    (mini_repo / "auth" / "tokens.py").unlink()
    (mini_repo / "cmd").rename(mini_repo / "cmd.moved")
    (mini_repo / "cmd").symlink_to(outside, target_is_directory=True)

    with LgrepClient.connect(socket_path=daemon.socket) as client:
        with pytest.raises(NotFoundError, match=r"auth/tokens\.py no longer exists"):
            client.call(GetFileRequest(str(mini_repo), "auth/tokens.py"))
        with pytest.raises(InvalidRequestError, match="symbolic link"):
            client.call(GetFileRequest(str(mini_repo), "cmd/server.go"))
        with pytest.raises(InvalidRequestError, match="symbolic link"):
            client.call(SkeletonRequest(str(mini_repo), "cmd/server.go"))
        assert "Token-bucket" in client.call(GetFileRequest(str(mini_repo), "web/rateLimiter.ts")).content

    gone = daemon.lgrep("file", "auth/tokens.py", cwd=mini_repo, check=False)
    assert gone.code == 1 and "auth/tokens.py no longer exists" in gone.err and "Traceback" not in gone.err
    moved = daemon.lgrep("file", "cmd/server.go", "--project", str(mini_repo), cwd=mini_repo, check=False)
    # the command resolves the path it is given first, and finds it outside the project
    assert moved.code == 1 and "not inside the project" in moved.err and "OUTSIDE" not in moved.out + moved.err
    assert "Traceback" not in moved.err
