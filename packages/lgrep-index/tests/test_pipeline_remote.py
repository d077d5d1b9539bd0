"""Indexing with a cloud provider (the deterministic FakeRemoteEmbedder): every request lands in the
spend ledger, every chunk sent in the egress log (never its content), texts are scanned for secrets
again on their way out, and what is already embedded costs nothing.

Secrets are assembled at run time so that this file itself holds none."""

from __future__ import annotations

import json
import logging
import random
import shutil
import stat
from pathlib import Path

import pytest
from lgrep_core.domain.secrets import scan
from lgrep_core.settings.config import LgrepSettings, load_settings
from lgrep_core.storage.layout import project_dir
from lgrep_core.storage.spend import SpendLedger, price_table
from lgrep_core.testing import FakeRemoteEmbedder
from lgrep_index.egress import EGRESS_LOG_NAME, apportion, outgoing
from lgrep_index.pipeline import Indexer

FIXTURE = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "repos" / "mini"
_rng = random.Random(11)
GITHUB_TOKEN = "gh" + "p_" + "".join(_rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGH0123456789") for _ in range(36))
KEY_LINES = ["".join(_rng.choice("ABCDEFGHIJKLMNOPabcdefghijklmnop0123456789+/") for _ in range(64)) for _ in range(8)]
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END OPENSSH PRIVATE KEY-----"


def _settings(tmp_path: Path, **spend: object) -> LgrepSettings:
    settings = load_settings(
        None,
        env={"LGREP_CACHE_DIR": str(tmp_path / "cache"), "LGREP_EMBEDDING_DIMENSIONS": "64"},
        user_config=tmp_path / "none",
    ).settings
    for key, value in spend.items():
        setattr(settings.spend, key, value)
    return settings


def _repo(tmp_path: Path, name: str = "mini") -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURE, root)
    return root


def _egress(settings: LgrepSettings, root: Path, event: str = "sent") -> list[dict[str, object]]:
    path = project_dir(settings.cache_dir, root) / EGRESS_LOG_NAME
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line for line in lines if line["event"] == event]


def test_a_remote_run_is_billed_in_the_ledger_and_each_chunk_sent_is_in_the_egress_log(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    root = _repo(tmp_path)
    fake = FakeRemoteEmbedder(dimension=64)
    summary = Indexer(settings, root, fake).run()

    sent = [text for kind, text in fake.received if kind == "document"]
    assert sent and summary.vectors_embedded == len(sent) and summary.vectors_pending == 0
    assert summary.tokens_billed == fake.tokens_billed > 0

    ledger = SpendLedger(settings.cache_dir)
    entries = list(ledger.entries())
    assert len(entries) == fake.requests
    assert sum(e.tokens for e in entries) == fake.tokens_billed
    assert {(e.project, e.provider, e.model) for e in entries} == {
        (str(root.resolve()), "fake-remote", "voyage-code-3")
    }
    totals = ledger.totals(price_table(settings.spend))
    assert totals is not None and totals.cost_known
    assert totals.cost_usd == pytest.approx(fake.tokens_billed * 0.18 / 1e6)

    egress_path = project_dir(settings.cache_dir, root) / EGRESS_LOG_NAME
    assert stat.S_IMODE(egress_path.stat().st_mode) == 0o600
    lines = _egress(settings, root)
    assert len(lines) == len(sent)  # one line per chunk sent
    assert sum(int(str(line["tokens"])) for line in lines) == fake.tokens_billed
    assert {str(line["file"]) for line in lines} <= {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert all(
        set(line) == {"event", "time", "file", "key", "tokens", "provider", "model", "redactions", "withheld"}
        for line in lines
    )
    # The request was announced before it was sent, and its outcome recorded after.
    (attempt,) = _egress(settings, root, "attempt")
    (outcome,) = _egress(settings, root, "outcome")
    assert len(attempt["chunks"]) == len(sent) and (outcome["request"], outcome["try"]) == (attempt["request"], 1)  # type: ignore[arg-type]  # JSON
    assert outcome["outcome"] == "ok" and outcome["tokens"] == fake.tokens_billed
    # Never the content: no line of the log holds a line of code that was sent.
    raw = egress_path.read_text()
    code_lines = {ln.strip() for text in sent for ln in text.split("\n")[2:] if len(ln.strip()) > 12}
    assert code_lines and not [ln for ln in code_lines if ln in raw]


def test_unchanged_files_cost_nothing_and_the_ledger_outlives_the_process(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    root = _repo(tmp_path)
    first = Indexer(settings, root, FakeRemoteEmbedder(dimension=64)).run()
    assert first.tokens_billed > 0

    again = FakeRemoteEmbedder(dimension=64)
    second = Indexer(settings, root, again).run()
    assert second.tokens_billed == 0 and again.received == [] and second.vectors_embedded == 0

    # A changed file: only its new chunk is sent (its other chunks keep their content-addressed vectors).
    (root / "auth" / "tokens.py").write_text(
        (root / "auth" / "tokens.py").read_text() + "\n\ndef extra():\n    return 1\n"
    )
    third_fake = FakeRemoteEmbedder(dimension=64)
    third = Indexer(settings, root, third_fake).run()
    assert 0 < third.vectors_embedded < first.vectors_embedded
    assert third.tokens_billed == third_fake.tokens_billed > 0

    # A new ledger object (another process, after a restart) reads the same totals.
    totals = SpendLedger(settings.cache_dir).totals(price_table(settings.spend), project=str(root.resolve()))
    assert totals is not None
    assert totals.tokens == first.tokens_billed + third.tokens_billed
    other = _repo(tmp_path, "other")
    Indexer(settings, other, FakeRemoteEmbedder(dimension=64)).run()
    report = SpendLedger(settings.cache_dir).report(settings.spend, str(root.resolve()))
    assert report.project is not None and report.total is not None
    assert report.project.tokens == totals.tokens and report.total.tokens > totals.tokens


def test_a_token_in_a_path_never_leaves(tmp_path: Path) -> None:
    """A file named with a token of a known format is withheld whole (its name is the secret); a path
    with a random-looking part is sent, and logged, with that part redacted (ADR 0005)."""
    settings = _settings(tmp_path)
    root = _repo(tmp_path)
    leaky = root / "keys" / f"{GITHUB_TOKEN}.py"
    leaky.parent.mkdir()
    leaky.write_text("def rotate(client):\n    return client.rotate_keys(batch=16)\n")
    session = "o2lV2OdNhxea0HI97AO9v8BXUgo2ZS5t"
    (root / "sessions" / session).mkdir(parents=True)
    (root / "sessions" / session / "handler.py").write_text("def resume_session(store):\n    return store.load()\n")
    fake = FakeRemoteEmbedder(dimension=64)
    summary = Indexer(settings, root, fake).run()

    assert summary.skipped.get("secret") == 1
    sent = [text for kind, text in fake.received if kind == "document"]
    assert not [text for text in sent if "rotate_keys" in text]  # withheld: its name is a token
    assert any("resume_session" in text and "sessions/[REDACTED:random-name]/handler.py" in text for text in sent)
    assert not [text for text in sent if GITHUB_TOKEN in text or session in text or scan(text)]
    raw = (project_dir(settings.cache_dir, root) / EGRESS_LOG_NAME).read_text()
    assert GITHUB_TOKEN not in raw and session not in raw and "sessions/[REDACTED:random-name]/handler.py" in raw


def test_outgoing_redacts_withholds_and_never_lets_a_finding_through() -> None:
    header = "keys/deploy.py › Deploy\nkeys deploy deploy\n"
    mixed = outgoing(
        "k1", "keys/deploy.py", header + f"TOKEN = '{GITHUB_TOKEN}'\n\ndef deploy(target):\n    return push(target)\n"
    )
    assert mixed is not None and not mixed.withheld and mixed.redactions == 1
    assert GITHUB_TOKEN not in mixed.text and "def deploy" in mixed.text and not scan(mixed.text)

    key_only = outgoing("k2", "keys/deploy.py", header + PRIVATE_KEY)
    assert key_only is not None and key_only.withheld
    assert key_only.text == header.rstrip("\n") and not scan(key_only.text)

    assert outgoing("k3", GITHUB_TOKEN, f"{GITHUB_TOKEN}\n{GITHUB_TOKEN}\n{PRIVATE_KEY}") is None


def test_apportion_splits_a_bill_by_length_exactly() -> None:
    shares = apportion(101, ["a" * 10, "b" * 30, "c" * 60])
    assert sum(shares) == 101 and shares[0] < shares[1] < shares[2]
    assert apportion(0, ["x", "y"]) == [0, 0] and apportion(5, []) == []


def test_passing_a_spend_threshold_is_a_warning_in_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeRemoteEmbedder(dimension=64)
    settings = _settings(tmp_path)
    root = _repo(tmp_path)
    # Thresholds below and far above what indexing the fixture costs (a few thousand tokens).
    settings.spend.warn_usd = [0.0001, 1000.0]
    with caplog.at_level(logging.WARNING, logger="lgrep_index.pipeline"):
        Indexer(settings, root, fake).run()
    warnings = [r.getMessage() for r in caplog.records if "spend has passed" in r.getMessage()]
    assert fake.tokens_billed * 0.18 / 1e6 > 0.0001
    assert len(warnings) == 1 and "$0.0001" in warnings[0]

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lgrep_index.pipeline"):
        (root / "more.py").write_text("def more():\n    return 2\n")
        Indexer(settings, root, FakeRemoteEmbedder(dimension=64)).run()
    assert not [r for r in caplog.records if "spend has passed" in r.getMessage()]  # already passed: once


def test_a_model_without_a_price_is_counted_with_an_unknown_cost(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    root = _repo(tmp_path)
    fake = FakeRemoteEmbedder(model="house-embed-2", dimension=64)
    Indexer(settings, root, fake).run()
    report = SpendLedger(settings.cache_dir).report(settings.spend, str(root.resolve()))
    assert report.total is not None and report.total.tokens == fake.tokens_billed
    assert report.total.unpriced_models == ("house-embed-2",) and report.total.cost_usd == 0
    assert any("unknown" in w for w in report.warnings)
    settings.spend.prices = {"house-embed-2": 1.0}
    priced = SpendLedger(settings.cache_dir).report(settings.spend, str(root.resolve()))
    assert priced.total is not None and priced.total.cost_known
    assert priced.total.cost_usd == pytest.approx(fake.tokens_billed / 1e6)
