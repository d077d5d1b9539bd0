"""What leaves the machine for a cloud embedder, through the real `lgrep` command against a stand-in
of Voyage's API on 127.0.0.1 (lgrep_core.testing.standins), which keeps every request it receives
(issue 22):

- no secret of any form of the corpus, and no token in a path, reaches the provider's request body;
- every HTTP attempt, each retry too, is in the project's egress log with its outcome (ok, 500, 401,
  429, a timeout), and an attempt that was in flight when the process died is on record too.

Secrets are generated at run time, so this file holds none."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lgrep_core.domain.secrets import scan
from lgrep_core.storage.layout import project_dir
from lgrep_core.testing.secrets_corpus import write_forms_repo
from lgrep_core.testing.standins import EmbeddingStandIn

pytestmark = pytest.mark.slow


@pytest.fixture
def standin() -> Iterator[EmbeddingStandIn]:
    with EmbeddingStandIn("voyage", dimension=1024) as server:
        yield server


def _cloud(env: dict[str, str], server: EmbeddingStandIn, **extra: str) -> None:
    env.update(
        {
            "LGREP_EMBEDDING_PROVIDER": "voyage",
            "LGREP_EMBEDDING_BASE_URL": server.base_url,
            "LGREP_EMBEDDING_DIMENSIONS": "256",
            "VOYAGE_API_KEY": "test-key",
            **extra,
        }
    )


def _log(cache: Path, root: Path) -> Path:
    return project_dir(cache, root) / "egress.jsonl"


@dataclass(frozen=True)
class _Tried:
    request: str
    number: int
    provider: str
    files: tuple[str, ...]
    outcome: str  # "unknown" when the log has the attempt and no outcome


def attempts(path: Path) -> list[_Tried]:
    """The attempts the egress log records, each with its outcome (read here, as a user would with
    `jq`, not through lgrep's own reader)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    outcomes = {(r["request"], r["try"]): r["outcome"] for r in lines if r.get("event") == "outcome"}
    return [
        _Tried(
            r["request"],
            r["try"],
            r["provider"],
            tuple(c["file"] for c in r["chunks"]),
            outcomes.get((r["request"], r["try"]), "unknown"),
        )
        for r in lines
        if r.get("event") == "attempt"
    ]


def test_no_secret_of_any_form_reaches_the_provider(lgrep, tmp_path: Path, standin: EmbeddingStandIn) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "ledger"
    root.mkdir()
    planted = write_forms_repo(root)
    _cloud(lgrep.env, standin)
    lgrep("index", str(root), "--yes")

    bodies = [text for request in standin.requests for text in request.texts]
    assert bodies and any("resume_ledger_session" in t for t in bodies)
    for rel in planted.redacted:  # each file went out, redacted
        assert any(t.startswith(rel) and "[REDACTED:" in t for t in bodies), rel
    leaked = [s for s in planted.secrets if any(s in t for t in bodies)]
    assert not leaked
    assert not [t for t in bodies if scan(t)]
    # The session folder's random name is a marker in the path line the provider reads.
    assert any(t.startswith("sessions/[REDACTED:random-name]/resume_ledger.py") for t in bodies)

    raw = _log(lgrep.cache, root).read_text()
    assert not [s for s in planted.secrets if s in raw]  # nor in the egress log
    assert "sessions/[REDACTED:random-name]/resume_ledger.py" in raw


def test_every_attempt_is_in_the_egress_log_with_its_outcome(lgrep, mini_repo: Path, standin: EmbeddingStandIn) -> None:  # type: ignore[no-untyped-def]
    _cloud(lgrep.env, standin, LGREP_EMBEDDING_MAX_TRIES="4", LGREP_EMBEDDING_TIMEOUT_S="2")
    standin.fail_next("500", 1, applies_to="document")
    standin.fail_next("429", 1, applies_to="document", retry_after=0)
    standin.fail_next("hang", 1, applies_to="document", seconds=30)  # past the 2 s timeout
    summary = lgrep("index", str(mini_repo), "--yes", "--json").json()
    assert summary["vectors_pending"] == 0  # the fourth try went through

    tried = attempts(_log(lgrep.cache, mini_repo))
    assert [(a.number, a.outcome) for a in tried] == [(1, "http 500"), (2, "http 429"), (3, "timeout"), (4, "ok")]
    assert len({a.request for a in tried}) == 1 and {a.provider for a in tried} == {"voyage"}
    assert len(standin.requests) == 4  # one record per request the provider saw
    assert all(a.files and set(a.files) == set(tried[0].files) for a in tried)

    # A refused key: the request carried the text all the same, and is on record as refused.
    (mini_repo / "auth" / "rotate.py").write_text("def rotate_signing_key(keyring):\n    return keyring.rotate()\n")
    lgrep.env["VOYAGE_API_KEY"] = "wrong-key"
    refused = lgrep("index", str(mini_repo), "--yes", check=False)
    assert refused.code != 0 and "VOYAGE_API_KEY" in refused.err and "Traceback" not in refused.err
    last = attempts(_log(lgrep.cache, mini_repo))[-1]
    assert last.outcome == "http 401" and "auth/rotate.py" in last.files

    # The log holds names and keys, never the content sent.
    raw = _log(lgrep.cache, mini_repo).read_text()
    assert "rotate_signing_key" not in raw and "keyring.rotate" not in raw
    for line in raw.splitlines():
        assert json.loads(line)["event"] in {"attempt", "outcome", "sent"}


def test_an_attempt_in_flight_when_the_process_dies_is_on_record(  # type: ignore[no-untyped-def]
    lgrep, mini_repo: Path, standin: EmbeddingStandIn, wait_for: Callable[[Callable[[], Any], float, str], Any]
) -> None:
    """The record is written (and fsynced) before the request leaves: a kill mid-flight leaves an
    attempt without an outcome, which reads as "unknown" (possibly received)."""
    _cloud(lgrep.env, standin, LGREP_EMBEDDING_TIMEOUT_S="120")
    standin.fail_next("hang", 1, applies_to="document", seconds=120)
    process = lgrep.popen("index", str(mini_repo), "--yes")
    try:
        wait_for(lambda: standin.requests, 120, "the request to reach the provider")
        assert attempts(_log(lgrep.cache, mini_repo))  # on record while it is still in flight
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    (only,) = attempts(_log(lgrep.cache, mini_repo))
    assert only.outcome == "unknown" and only.number == 1 and only.files
