"""The spend ledger: what cloud embedding providers billed, per project and overall, and what it cost.

One append-only file of JSON lines in the cache dir, `spend.jsonl` (mode 0600), one line per
embedding request the indexer made: when, which project, provider and model, the tokens the provider
billed and the chunks sent. Only the writer of the cache dir appends to it (the daemon, or a command
indexing in its own process while holding the project's write lock); every line is one `write` to a
file opened with O_APPEND, so two writers of different projects never interleave within a line. It
survives restarts and `lgrep clean` (money spent stays spent); a line cut short by a crash is skipped.

Costs are not stored: they are computed when read, from the price table (`DEFAULT_PRICES` under the
user's `spend.prices`), so a price added later applies to tokens already spent. A model without a price
is counted in tokens and named as unpriced: its cost is unknown, and lgrep says so rather than guess.
See docs/adr/0013-spend-ledger-and-egress-log.md.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lgrep_core.domain.errors import StorageError
from lgrep_core.domain.models import SpendTotals

if TYPE_CHECKING:  # light on purpose: `lgrep status` prints spend without loading pydantic
    from lgrep_core.settings.config import SpendSettings

__all__ = [
    "DEFAULT_PRICES",
    "LEDGER_NAME",
    "LedgerEntry",
    "SpendLedger",
    "SpendReport",
    "crossed_thresholds",
    "describe_spend",
    "format_usd",
    "price_table",
    "spend_warnings",
]

log = logging.getLogger(__name__)

LEDGER_NAME = "spend.jsonl"

DEFAULT_PRICES: Mapping[str, float] = {
    # US dollars per million tokens, list prices of November 2026.
    "voyage-code-3": 0.18,
    "text-embedding-3-small": 0.02,
    "text-embedding-3-large": 0.13,
}


def price_table(settings: SpendSettings) -> dict[str, float]:
    """The built-in prices with the user's `spend.prices` laid over them."""
    return {**DEFAULT_PRICES, **settings.prices}


def format_usd(amount: float) -> str:
    """$12.34, or $0.0012 for amounts below a cent (a small project costs fractions of one)."""
    return f"${amount:,.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One embedding request: `tokens` billed by the provider for `chunks` chunks of `project`."""

    time: float
    project: str
    provider: str
    model: str
    tokens: int
    chunks: int

    def to_json(self) -> str:
        return json.dumps(
            {
                "time": round(self.time, 3),
                "project": self.project,
                "provider": self.provider,
                "model": self.model,
                "tokens": self.tokens,
                "chunks": self.chunks,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, line: str) -> LedgerEntry | None:
        try:
            data = json.loads(line)
            entry = cls(
                time=float(data["time"]),
                project=str(data["project"]),
                provider=str(data["provider"]),
                model=str(data["model"]),
                tokens=int(data["tokens"]),
                chunks=int(data["chunks"]),
            )
        except (ValueError, TypeError, KeyError):
            return None
        return entry if entry.tokens >= 0 and math.isfinite(entry.time) else None


@dataclass(frozen=True, slots=True)
class SpendReport:
    """A project's spend, the cache dir's total and the warnings the thresholds call for (None when
    the ledger holds nothing for it)."""

    project: SpendTotals | None
    total: SpendTotals | None
    warnings: tuple[str, ...]


class SpendLedger:
    """The ledger of one cache dir."""

    def __init__(self, cache_dir: Path) -> None:
        self.path = cache_dir / LEDGER_NAME

    def append(self, entry: LedgerEntry) -> None:
        """Record one request.

        Raises:
            StorageError: the ledger cannot be written.
        """
        data = (entry.to_json() + "\n").encode("utf-8", "surrogateescape")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError(f"cannot write the spend ledger {self.path}: {exc.strerror or exc}") from None

    def record(self, project: str, provider: str, model: str, tokens: int, chunks: int) -> LedgerEntry:
        entry = LedgerEntry(time.time(), project, provider, model, tokens, chunks)
        self.append(entry)
        return entry

    def entries(self) -> Iterator[LedgerEntry]:
        """Every readable line, oldest first (a damaged line is skipped)."""
        try:
            handle = self.path.open("r", encoding="utf-8", errors="surrogateescape")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot read the spend ledger {self.path}: {exc.strerror or exc}") from None
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                entry = LedgerEntry.from_json(line)
                if entry is None:
                    log.info("%s line %d is damaged; skipping it", self.path, number)
                    continue
                yield entry

    def totals(self, prices: Mapping[str, float], project: str | None = None) -> SpendTotals | None:
        """Everything spent (of one project, when named); None when the ledger has nothing for it."""
        return _sum((e for e in self.entries() if project is None or e.project == project), prices)

    def report(self, settings: SpendSettings, project: str) -> SpendReport:
        prices = price_table(settings)
        entries = list(self.entries())
        total = _sum(entries, prices)
        mine = _sum((e for e in entries if e.project == project), prices)
        return SpendReport(mine, total, spend_warnings(total, settings.warn_usd))


def _sum(entries: Iterator[LedgerEntry] | Sequence[LedgerEntry], prices: Mapping[str, float]) -> SpendTotals | None:
    tokens_by_model: dict[str, int] = {}
    requests = 0
    for e in entries:
        tokens_by_model[e.model] = tokens_by_model.get(e.model, 0) + e.tokens
        requests += 1
    if not requests:
        return None
    cost = sum(tokens * prices[m] / 1e6 for m, tokens in tokens_by_model.items() if m in prices)
    unpriced = tuple(sorted(m for m, tokens in tokens_by_model.items() if m not in prices and tokens))
    return SpendTotals(sum(tokens_by_model.values()), requests, cost, unpriced)


def crossed_thresholds(before_usd: float, after_usd: float, thresholds: Sequence[float]) -> list[float]:
    """The thresholds a spend passed on its way from `before_usd` to `after_usd`."""
    return [t for t in sorted(thresholds) if before_usd < t <= after_usd]


def spend_warnings(total: SpendTotals | None, thresholds: Sequence[float]) -> tuple[str, ...]:
    """One warning naming the highest threshold the total has reached, and one for unknown costs."""
    if total is None:
        return ()
    out: list[str] = []
    passed = [t for t in sorted(thresholds) if total.cost_usd >= t]
    if passed:
        out.append(
            f"cloud embedding spend has passed {format_usd(passed[-1])}: about {format_usd(total.cost_usd)} "
            f"so far ({total.tokens:,} tokens) across every project of this cache dir"
        )
    if total.unpriced_models:
        out.append(
            f"the cost of {', '.join(total.unpriced_models)} is unknown (no price): the warnings cannot count it; "
            "set spend.prices in your config file"
        )
    return tuple(out)


def describe_spend(totals: SpendTotals) -> str:
    """`12,345 tokens in 3 requests, about $0.0022` (and which models have no price)."""
    requests = f"{totals.requests:,} request{'' if totals.requests == 1 else 's'}"
    text = f"{totals.tokens:,} tokens in {requests}, about {format_usd(totals.cost_usd)}"
    if totals.unpriced_models:
        text += f" plus the unknown cost of {', '.join(totals.unpriced_models)}"
    return text
