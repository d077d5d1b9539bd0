"""What an MCP server's environment says about its watch leases (lgrep_mcp.leases): the ttl it
asks for and whether it holds any (ADR 0024), and how it takes a lease the daemon refuses."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lgrep_core.domain.errors import InvalidRequestError
from lgrep_core.domain.models import ReleaseWatchLeaseRequest, WatchLease, WatchLeaseRequest
from lgrep_mcp.leases import DEFAULT_TTL_S, TTL_ENV, WATCH_ENV, WatchLeases, lease_ttl_s, leases_wanted


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


class _Refusing:
    """A daemon's client that refuses a lease on one folder, as a daemon at its lease bound does."""

    def __init__(self, refused: Path) -> None:
        self.refused = refused
        self.calls: list[Path] = []
        self._handlers: dict[type[Any], Callable[[Any], Any]] = {
            WatchLeaseRequest: self._renew,
            ReleaseWatchLeaseRequest: self._release,
        }

    def call(self, request: Any) -> Any:
        return self._handlers[type(request)](request)

    def _renew(self, request: WatchLeaseRequest) -> WatchLease:
        folder = Path(request.project_root)
        self.calls.append(folder)
        if folder == self.refused:
            raise InvalidRequestError("this server already holds watch leases on 64 folders, the limit (64 ...)")
        return WatchLease(str(folder), watched=True, ttl_s=request.ttl_s, leases=1)

    def _release(self, request: ReleaseWatchLeaseRequest) -> bool:
        return True

    def close(self) -> None:
        pass


def test_a_refused_lease_is_logged_once_and_the_others_are_renewed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A daemon at its lease bound refuses new leases (InvalidRequestError): the renewal thread
    warns once, keeps its other leases and asks again at each renewal; it never raises (a client's
    tools do not depend on its leases)."""
    a, b = tmp_path / "a", tmp_path / "b"
    client = _Refusing(refused=b)
    leases = WatchLeases([a, b], ttl_s=9)
    monkeypatch.setattr(leases, "_connected", lambda: client)
    with caplog.at_level(logging.DEBUG, logger="lgrep_mcp.leases"):
        leases.renew()
        leases.renew()
    assert set(leases.granted) == {a} and client.calls == [a, b, a, b]
    refusals = [r for r in caplog.records if "no watch lease on" in r.getMessage()]
    assert [r.levelno for r in refusals] == [logging.WARNING, logging.DEBUG]
    assert "64 folders, the limit" in refusals[0].getMessage()
    client.refused = tmp_path / "none"  # room again: granted at the next renewal
    leases.renew()
    assert set(leases.granted) == {a, b}
    leases.stop()
