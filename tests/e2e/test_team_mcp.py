"""The team index as an agent meets it: a real `lgrep-mcp` process over stdio, its daemon seeding from
the team store on the first `lgrep_index`, `lgrep_status` saying where the index came from, and each
refusal named in the answer while the project is indexed locally (ADR 0034)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from lgrep_core.testing.repos import git
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import Lgrep

pytestmark = [pytest.mark.slow, pytest.mark.model]


def _commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def _calls(daemon, root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "lgrep_mcp.server", str(root)],
        env=dict(daemon.lgrep.env),
        cwd=str(root),
    )

    async def main() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, args in calls:
                result = await session.call_tool(name, args)
                assert not result.is_error, result.content
                assert result.structured_content is not None
                out.append(result.structured_content)
        return out

    return anyio.run(main)


def test_an_agent_gets_a_seeded_index_and_each_refusal_named(daemon, mini_repo: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    git(mini_repo, "init", "-q", "-b", "main")
    git(mini_repo, "remote", "add", "origin", "git@github.com:acme/mini.git")
    _commit(mini_repo, "first")
    (mini_repo / "auth" / "sessions.py").write_text("def end_session(user):\n    return None\n")
    published = _commit(mini_repo, "second")
    store = tmp_path / "store"
    ci_cache = tmp_path / "ci-cache"
    ci_cache.mkdir()
    (ci_cache / "models").symlink_to((daemon.cache / "models").resolve(), target_is_directory=True)
    ci = Lgrep(ci_cache, {**daemon.lgrep.env, "LGREP_CACHE_DIR": str(ci_cache), "LGREP_TEAM_STORE": str(store)})
    ci("publish", str(mini_repo), "--json")

    work = tmp_path / "work"
    work.mkdir()
    for name in ("seeded", "other-model", "damaged", "behind", "empty", "unreachable"):
        subprocess.run(["git", "clone", "-q", str(mini_repo), str(work / name)], check=True)
        git(work / name, "remote", "set-url", "origin", "https://github.com/acme/mini.git")
    (work / "other-model" / ".lgrep.yaml").write_text("chunking:\n  max_tokens: 200\n")
    git(work / "behind", "reset", "-q", "--hard", "HEAD~1")  # older than every publication
    other = tmp_path / "other-repository"
    other.mkdir()
    (other / "main.py").write_text("def unrelated():\n    return 1\n")
    git(other, "init", "-q", "-b", "main")
    git(other, "remote", "add", "origin", "https://github.com/acme/mini")
    _commit(other, "unrelated history")

    daemon.lgrep.env["LGREP_TEAM_STORE"] = str(store)
    # One MCP server per project, as an agent runs it in the project's folder (one daemon behind all).
    seeded, status = _calls(daemon, work / "seeded", [("lgrep_index", {"wait": 300}), ("lgrep_status", {})])
    [other_model] = _calls(daemon, work / "other-model", [("lgrep_index", {"wait": 300})])
    [other_repository] = _calls(daemon, other, [("lgrep_index", {"wait": 300})])
    [behind] = _calls(daemon, work / "behind", [("lgrep_index", {"wait": 300})])
    assert seeded["done"] is True
    assert seeded["summary"]["seed"]["commit"] == published, seeded["summary"]["seed"]["refused"]
    assert seeded["summary"]["seed"]["vectors_copied"] > 0 and seeded["summary"]["vectors_embedded"] == 0
    assert status["seed"]["commit"] == published and status["seed"]["age_seconds"] >= 0, status
    for answer, reason in (
        (other_model, "other_model"),
        (other_repository, "other_repository"),
        (behind, "not_in_history"),
    ):
        assert answer["done"] is True
        assert answer["summary"]["seed"]["reason"] == reason, answer
        assert answer["summary"]["seed"]["refused"]
        assert answer["summary"]["chunks_total"] > 0  # indexed locally

    import lancedb  # damage the store's vectors behind its manifest

    table_dir = next(p for p in store.rglob("vectors_*.lance") if p.is_dir())
    table = lancedb.connect(str(table_dir.parent)).open_table(table_dir.name.removesuffix(".lance"))
    rows = table.to_arrow().to_pylist()
    for row in rows:
        row["vector"] = [-v for v in row["vector"]]
    table.delete("true")
    table.add(rows)
    [damaged] = _calls(daemon, work / "damaged", [("lgrep_index", {"wait": 300})])
    assert damaged["summary"]["seed"]["reason"] == "damaged", damaged
    assert damaged["summary"]["chunks_total"] > 0

    # The store itself: empty, then unreachable (team.store is the daemon's setting: restart it).
    for name, store_env, reason in (
        ("empty", {"LGREP_TEAM_STORE": str(tmp_path / "empty-store")}, "empty"),
        (
            "unreachable",
            {
                "LGREP_TEAM_STORE": "s3://no-such-bucket/lgrep",
                "LGREP_TEAM_STORAGE_OPTIONS": '{"aws_endpoint": "http://127.0.0.1:9", "allow_http": "true", '
                '"aws_access_key_id": "x", "aws_secret_access_key": "y", "aws_region": "us-east-1"}',
                "AWS_EC2_METADATA_DISABLED": "true",
            },
            "unreachable",
        ),
    ):
        daemon.stop()
        daemon.lgrep.env.update(store_env)
        [answer] = _calls(daemon, work / name, [("lgrep_index", {"wait": 300})])
        assert answer["summary"]["seed"]["reason"] == reason, answer
        assert answer["summary"]["chunks_total"] > 0
