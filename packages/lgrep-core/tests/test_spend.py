"""The spend ledger: totals per project and overall, prices, thresholds, damage, and the settings
that a repository may not touch."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from lgrep_core.domain.errors import ConfigError
from lgrep_core.settings.config import SpendSettings, load_settings
from lgrep_core.storage.spend import (
    LEDGER_NAME,
    SpendLedger,
    crossed_thresholds,
    describe_spend,
    format_usd,
    price_table,
    spend_warnings,
)


def test_totals_per_project_and_overall_with_prices(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path)
    assert ledger.totals(price_table(SpendSettings())) is None
    ledger.record("/a", "voyage", "voyage-code-3", 1_000_000, 300)
    ledger.record("/a", "voyage", "voyage-code-3", 500_000, 100)
    ledger.record("/b", "openai", "text-embedding-3-small", 2_000_000, 700)
    assert stat.S_IMODE((tmp_path / LEDGER_NAME).stat().st_mode) == 0o600

    prices = price_table(SpendSettings())
    a = SpendLedger(tmp_path).totals(prices, project="/a")
    assert a is not None and a.tokens == 1_500_000 and a.requests == 2
    assert a.cost_usd == pytest.approx(0.27)
    total = SpendLedger(tmp_path).totals(prices)
    assert total is not None and total.cost_usd == pytest.approx(0.27 + 0.04) and total.cost_known
    assert SpendLedger(tmp_path).totals(prices, project="/c") is None


def test_user_prices_lie_over_the_built_in_ones_and_unknown_models_are_named(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path)
    ledger.record("/a", "openai", "house-model", 2_000_000, 10)
    ledger.record("/a", "voyage", "voyage-code-3", 1_000_000, 10)
    report = ledger.report(SpendSettings(), "/a")
    assert report.total is not None and report.total.unpriced_models == ("house-model",)
    assert report.total.cost_usd == pytest.approx(0.18)
    assert "unknown" in describe_spend(report.total) and any("house-model" in w for w in report.warnings)
    priced = ledger.report(SpendSettings(prices={"house-model": 0.5, "voyage-code-3": 0.2}), "/a")
    assert priced.total is not None and priced.total.cost_known
    assert priced.total.cost_usd == pytest.approx(1.0 + 0.2)
    assert priced.warnings == ()


def test_a_damaged_or_cut_line_is_skipped_not_fatal(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path)
    ledger.record("/a", "voyage", "voyage-code-3", 100, 1)
    with (tmp_path / LEDGER_NAME).open("a") as f:
        f.write('{"time": 1, "project": "/a", "tokens": "many"}\n[1, 2]\n{"time": 2, "proj')
    ledger2 = SpendLedger(tmp_path)
    totals = ledger2.totals(price_table(SpendSettings()))
    assert totals is not None and totals.tokens == 100 and totals.requests == 1


def test_warnings_name_the_highest_threshold_passed() -> None:
    settings = SpendSettings(warn_usd=[10, 5])
    assert settings.warn_usd == [5.0, 10.0]
    ledger_total = SpendLedger(Path("/nonexistent")).totals({})
    assert ledger_total is None and spend_warnings(None, settings.warn_usd) == ()
    from lgrep_core.domain.models import SpendTotals

    assert spend_warnings(SpendTotals(10, 1, 4.99), [5, 10]) == ()
    (warning,) = spend_warnings(SpendTotals(10, 1, 7.5), [5, 10])
    assert "$5.00" in warning and "$7.50" in warning
    (warning,) = spend_warnings(SpendTotals(10, 1, 12.0), [5, 10])
    assert "$10.00" in warning
    assert crossed_thresholds(4.0, 11.0, [5, 10]) == [5, 10] and crossed_thresholds(5.0, 6.0, [5, 10]) == []
    assert format_usd(0.000263) == "$0.0003" and format_usd(1234.5) == "$1,234.50" and format_usd(0) == "$0.00"


def test_spend_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="negative"):
        SpendSettings(prices={"m": -1})
    with pytest.raises(ValueError, match="above 0"):
        SpendSettings(warn_usd=[0])


def test_a_project_file_may_not_touch_money_or_the_provider(tmp_path: Path) -> None:
    (tmp_path / ".lgrep.yaml").write_text("spend:\n  confirm_above_usd: 1000000\n")
    with pytest.raises(ConfigError, match="may not set"):
        load_settings(tmp_path, env={}, user_config=tmp_path / "none")
    (tmp_path / ".lgrep.yaml").write_text("embedding:\n  provider: voyage\n")
    with pytest.raises(ConfigError, match="may not set"):
        load_settings(tmp_path, env={}, user_config=tmp_path / "none")
