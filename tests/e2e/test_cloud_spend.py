"""Money and privacy with a cloud embedding provider, through the real `lgrep` command, its daemon
and its MCP server: the plan, the confirmation, the spend ledger and its warnings, and the egress log.

The provider is the real `voyage` provider against a stand-in of Voyage's API on 127.0.0.1
(lgrep_core.testing.standins), which keeps every text it receives: a test sees exactly what "left
the machine", even from the daemon's process.

Secrets are assembled at run time so that this file itself holds none."""

from __future__ import annotations

import json
import os
import pty
import random
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from lgrep_core.domain.secrets import scan
from lgrep_core.storage.layout import project_dir
from lgrep_core.testing.standins import EmbeddingStandIn
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow

_rng = random.Random(5)
GITHUB_TOKEN = "gh" + "p_" + "".join(_rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGH0123456789") for _ in range(36))
SLACK_TOKEN = "xo" + "xb-" + "-".join("".join(_rng.choice("0123456789") for _ in range(12)) for _ in range(2))
SLACK_TOKEN += "-" + "".join(_rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789") for _ in range(24))
# The plan's token estimate and the bill may differ by this much (docs: "about 25%").
ESTIMATE_ERROR = 0.25


@pytest.fixture
def standin() -> Iterator[EmbeddingStandIn]:
    """Voyage's API on 127.0.0.1: it keeps every text it receives, so a test sees exactly what "left
    the machine", even from the daemon's process."""
    with EmbeddingStandIn("voyage", dimension=1024) as server:
        yield server


def _cloud(env: dict[str, str], tmp_path: Path, server: EmbeddingStandIn, **spend: object) -> EmbeddingStandIn:
    """Point `env` at the voyage provider (voyage-code-3's price) on the stand-in, and a user config
    of `spend` settings."""
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"spend": spend}) if spend else "{}\n")
    env.update(
        {
            "LGREP_EMBEDDING_PROVIDER": "voyage",
            "LGREP_EMBEDDING_BASE_URL": server.base_url,
            "LGREP_EMBEDDING_DIMENSIONS": "256",
            "VOYAGE_API_KEY": "test-key",
            "LGREP_CONFIG": str(config),
        }
    )
    return server


def _received(server: EmbeddingStandIn, kind: str = "document") -> list[str]:
    return server.texts(kind)


def _egress(cache: Path, root: Path, event: str = "sent") -> list[dict[str, Any]]:
    path = project_dir(cache, root) / "egress.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line for line in lines if line["event"] == event]


def test_the_plan_sends_nothing_and_matches_what_the_run_bills(
    lgrep, mini_repo: Path, tmp_path: Path, standin: EmbeddingStandIn
) -> None:
    record = _cloud(lgrep.env, tmp_path, standin)
    plan = lgrep("index", str(mini_repo), "--plan", "--json").json()
    assert plan["remote"] is True and plan["sent"] == 0 and plan["rebuild"] is True
    assert plan["chunks_to_embed"] > 0 and plan["tokens_estimated"] > 0
    assert plan["cost_usd_estimated"] == pytest.approx(plan["tokens_estimated"] * 0.18 / 1e6, abs=1e-6)
    assert not record.requests and not (lgrep.cache / "spend.jsonl").exists()  # nothing sent, nothing billed
    human = lgrep("index", str(mini_repo), "--plan")
    assert "nothing has been sent" in human.out and "$0.18 per million" in human.out and not record.requests

    run = lgrep("index", str(mini_repo), "--yes", "--json").json()
    assert run["files_seen"] == plan["files"]
    assert run["vectors_embedded"] == plan["chunks_to_embed"] == len(_received(record))
    assert abs(run["tokens_billed"] - plan["tokens_estimated"]) <= ESTIMATE_ERROR * run["tokens_billed"]

    # After a change: only the new chunk, in the plan and in the bill.
    (mini_repo / "auth" / "extra.py").write_text("def rotate_signing_key(keyring):\n    return keyring.rotate()\n")
    plan = lgrep("index", str(mini_repo), "--plan", "--json").json()
    assert plan["rebuild"] is False and plan["files_to_read"] == 1 and plan["chunks_to_embed"] >= 1
    before = len(_received(record))
    run = lgrep("index", str(mini_repo), "--yes", "--json").json()
    assert run["files_seen"] == plan["files"]
    assert run["vectors_embedded"] == plan["chunks_to_embed"] == len(_received(record)) - before
    assert abs(run["tokens_billed"] - plan["tokens_estimated"]) <= ESTIMATE_ERROR * run["tokens_billed"] + 2

    settled = lgrep("index", str(mini_repo), "--plan", "--json").json()
    assert settled["chunks_to_embed"] == 0 and settled["tokens_estimated"] == 0


def test_the_local_model_plan_says_there_is_no_money(lgrep, mini_repo: Path) -> None:
    plan = lgrep("index", str(mini_repo), "--plan", "--json").json()
    assert plan["remote"] is False and plan["tokens_estimated"] is None and plan["cost_usd_estimated"] is None
    assert plan["chunks_to_embed"] > 0
    assert "nothing is sent or billed" in lgrep("index", str(mini_repo), "--plan").out
    assert not (lgrep.cache / "spend.jsonl").exists()


def test_without_a_terminal_a_costly_run_is_refused_unless_yes(
    lgrep, mini_repo: Path, tmp_path: Path, standin: EmbeddingStandIn
) -> None:
    record = _cloud(lgrep.env, tmp_path, standin, confirm_above_usd=0.0000001)
    refused = subprocess.run(
        [*lgrep.command, "index", str(mini_repo)],
        stdin=subprocess.DEVNULL,  # not a terminal: nobody to ask
        capture_output=True,
        text=True,
        env=lgrep.env,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 1
    assert "--yes" in refused.stderr and "no terminal to ask" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not record.requests and not (lgrep.cache / "spend.jsonl").exists()
    # A search that would build the missing index first asks the same question.
    searched = subprocess.run(
        [*lgrep.command, "search", "verify the token", str(mini_repo)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=lgrep.env,
        timeout=120,
        check=False,
    )
    assert searched.returncode == 1 and "--yes" in searched.stderr
    assert not record.requests and not (lgrep.cache / "spend.jsonl").exists()
    assert lgrep("index", str(mini_repo), "--yes").code == 0
    assert _received(record)

    # Within the threshold nothing is asked: the second run costs nothing at all.
    again = lgrep("index", str(mini_repo), "--json", check=False)
    assert again.code == 0 and again.json()["tokens_billed"] == 0


def _index_at_a_terminal(lgrep, root: Path, answer: bytes) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """`lgrep index` with a pseudo-terminal as stdin (and stderr, where the question goes); answers
    the question once it is asked."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [*lgrep.command, "index", str(root)],
        stdin=terminal,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        env=lgrep.env,
    )
    os.close(terminal)
    seen = b""
    answered = False
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(controller, 4096)
                except OSError:  # the process ended and closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
                if not answered and b"[y/N]" in seen:
                    os.write(controller, answer + b"\n")
                    answered = True
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        os.close(controller)
    assert answered, seen.decode(errors="replace")
    return code, seen.decode(errors="replace")


def test_at_a_terminal_the_user_is_asked_and_no_sends_nothing(
    lgrep, mini_repo: Path, tmp_path: Path, standin: EmbeddingStandIn
) -> None:
    record = _cloud(lgrep.env, tmp_path, standin, confirm_above_usd=0.0000001)
    code, shown = _index_at_a_terminal(lgrep, mini_repo, b"n")
    assert code == 1 and "nothing was sent" in shown and "chunks (~" in shown
    assert not record.requests and not (lgrep.cache / "spend.jsonl").exists()

    code, shown = _index_at_a_terminal(lgrep, mini_repo, b"y")
    assert code == 0, shown
    assert _received(record) and (lgrep.cache / "spend.jsonl").exists()


def test_ledger_survives_daemon_restarts_and_unchanged_files_cost_nothing(
    daemon, mini_repo: Path, tmp_path: Path, standin: EmbeddingStandIn
) -> None:
    lgrep = daemon.lgrep
    record = _cloud(lgrep.env, tmp_path, standin)
    first = lgrep("index", str(mini_repo), "--yes", "--json").json()  # starts the daemon
    assert first["tokens_billed"] > 0
    status = lgrep("status", str(mini_repo), "--json").json()
    assert status["project_spend"]["tokens"] == first["tokens_billed"] == status["total_spend"]["tokens"]
    assert status["project_spend"]["cost_known"] is True
    sent = len(_received(record))

    daemon.stop()
    second = lgrep("index", str(mini_repo), "--yes", "--json").json()  # a new daemon
    assert second["tokens_billed"] == 0 and second["vectors_embedded"] == 0
    assert len(_received(record)) == sent  # nothing sent again
    status = lgrep("status", str(mini_repo), "--json").json()
    assert status["project_spend"]["tokens"] == first["tokens_billed"] and status["project_spend"]["requests"] >= 1

    # A search sends the query, and only the query.
    lgrep("search", "verify the token signature", str(mini_repo), "--json")
    assert len(_received(record)) == sent
    assert _received(record, "query") == ["verify the token signature"]


def test_spend_warnings_show_in_the_cli_and_the_mcp_status(
    daemon, mini_repo: Path, tmp_path: Path, standin: EmbeddingStandIn
) -> None:
    lgrep = daemon.lgrep
    _cloud(lgrep.env, tmp_path, standin, warn_usd=[0.00001, 1000.0])
    indexed = lgrep("index", str(mini_repo), "--yes")
    assert "warning: cloud embedding spend has passed $0.0000" in indexed.err
    assert "$1,000.00" not in indexed.err
    status = lgrep("status", str(mini_repo))
    assert "spend has passed" in status.err and "tokens in" in status.out
    as_json = lgrep("status", str(mini_repo), "--json").json()
    assert len(as_json["spend_warnings"]) == 1

    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "lgrep_mcp.server", str(mini_repo)],
        env=dict(lgrep.env),
        cwd=str(mini_repo),
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("lgrep_status", {})
            assert not result.is_error, result.content
            return result.structured_content

    answer = anyio.run(main)
    assert answer["spend_warnings"] == as_json["spend_warnings"]
    assert answer["project_spend"]["tokens"] == as_json["project_spend"]["tokens"] > 0


def test_no_secret_leaves_and_the_egress_log_has_a_line_per_chunk_and_no_content(
    lgrep, mini_repo: Path, tmp_path: Path, standin: EmbeddingStandIn
) -> None:
    record = _cloud(lgrep.env, tmp_path, standin)
    (mini_repo / "deploy.py").write_text(
        f'SLACK_BOT_TOKEN = "{SLACK_TOKEN}"\n\n\ndef notify(channel, text):\n    return post(channel, text)\n'
    )
    named = mini_repo / "keys" / f"{GITHUB_TOKEN}.py"  # a token as a name: the file is withheld whole
    named.parent.mkdir()
    named.write_text("def rotate(client):\n    return client.rotate_keys(batch=16)\n")
    lgrep("index", str(mini_repo), "--yes")

    sent = _received(record)
    assert any("def notify" in t for t in sent) and not any("rotate_keys" in t for t in sent)
    assert [t for t in sent if scan(t)] == []
    assert not [t for t in sent if SLACK_TOKEN in t or GITHUB_TOKEN in t]

    lines = _egress(lgrep.cache, mini_repo)
    assert len(lines) == len(sent)
    assert {line["provider"] for line in lines} == {"voyage"} and all(line["tokens"] > 0 for line in lines)
    assert any(line["file"] == "deploy.py" for line in lines)  # redacted when indexed: nothing left at egress
    assert not any(line["file"].startswith("keys/") for line in lines)
    log_path = project_dir(lgrep.cache, mini_repo) / "egress.jsonl"
    assert log_path.stat().st_mode & 0o777 == 0o600
    text = log_path.read_text()
    assert "def notify" not in text and "rotate_keys" not in text and "SLACK_BOT_TOKEN" not in text
    assert GITHUB_TOKEN not in text


def test_indexing_tags_asks_before_spending_and_sends_nothing_without_yes(
    lgrep, tmp_path: Path, standin: EmbeddingStandIn
) -> None:
    from lgrep_core.testing.repos import write_tagged_repo

    repo = write_tagged_repo(tmp_path / "mono", agent_releases=2, server_releases=1)
    _cloud(lgrep.env, tmp_path, standin, confirm_above_usd=0.0)
    refused = lgrep("index", "--tags", str(repo.root), check=False)
    assert refused.code == 1 and "Traceback" not in refused.err
    assert "confirm_above_usd" in refused.err and "lgrep index --tags --yes" in refused.err
    assert _received(standin) == []  # nothing left the machine
    # The tags are listed and searchable by words meanwhile.
    versions = lgrep("versions", "agent", str(repo.root), "--json").json()["versions"]
    assert [v["version"] for v in versions] == ["0.2.0", "0.1.0"]

    done = lgrep("index", "--tags", str(repo.root), "--yes", "--json").json()
    assert done["vectors_embedded"] == done["vectors_total"] > 0
    assert len(set(_received(standin))) == done["vectors_embedded"]  # each chunk sent once
    assert _egress(lgrep.cache, repo.root)  # every request is in the egress log
