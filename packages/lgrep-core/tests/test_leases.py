"""What an MCP server's environment says about its watch leases (lgrep_core.leases): the ttl it
asks for and whether it holds any (ADR 0024)."""

from __future__ import annotations

import pytest
from lgrep_core.leases import DEFAULT_TTL_S, TTL_ENV, WATCH_ENV, lease_ttl_s, leases_wanted


@pytest.mark.parametrize(
    ("text", "ttl"), [(None, DEFAULT_TTL_S), ("3", 3.0), (" 2.5 ", 2.5), ("soon", DEFAULT_TTL_S), ("-4", DEFAULT_TTL_S)]
)
def test_the_ttl_comes_from_the_environment_or_the_default(text: str | None, ttl: float) -> None:
    assert lease_ttl_s({} if text is None else {TTL_ENV: text}) == ttl


@pytest.mark.parametrize(
    ("text", "wanted"), [(None, True), ("1", True), ("", True), ("0", False), ("off", False), (" FALSE ", False)]
)
def test_leases_are_held_unless_the_environment_says_no(text: str | None, wanted: bool) -> None:
    assert leases_wanted({} if text is None else {WATCH_ENV: text}) is wanted
