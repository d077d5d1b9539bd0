"""Fresh by default: a long-lived client (the MCP server) keeps its projects watched while it lives.

`WatchLeases` holds one watch lease per folder it is given with the daemon (RenewWatchLease) and
renews them every third of their ttl on a thread of its own; the daemon watches a project while any
lease on it is live and stops when the last one ends. A client killed with -9 never releases: its
leases expire after the ttl. A daemon that restarted knows no lease: the next renewal takes it
again (a renewal and a first lease are the same call). The thread never starts a daemon: the first
tool call does, as before, and `renew_now()` (DaemonEngine's `on_connect`) leases at once then.

Errors are logged and retried at the next renewal: a client's tools work whether or not its leases
do, and a search notices a branch switch by itself (ADR 0024). A lease the daemon refuses (it holds
as many as it allows) is a warning the first time, so the user learns why a folder is not kept
fresh, and a debug line at each renewal after that.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lgrep_core.domain.errors import LgrepError, ServerUnavailableError
from lgrep_core.domain.models import ReleaseWatchLeaseRequest, WatchLease, WatchLeaseRequest

if TYPE_CHECKING:
    from lgrep_core.rpc.client import LgrepClient
    from lgrep_core.rpc.endpoints import ClientSettings

__all__ = ["DEFAULT_TTL_S", "TTL_ENV", "WATCH_ENV", "WatchLeases", "lease_ttl_s", "leases_wanted"]

log = logging.getLogger(__name__)

# A killed client's watch ends this long after its last renewal; renewals go every third of it.
DEFAULT_TTL_S = 30.0
# A renewal or release that takes longer is given up (a wedged daemon must not hold a client's exit).
CALL_TIMEOUT_S = 5.0
TTL_ENV = "LGREP_MCP_LEASE_TTL_S"
# `0` (or false, no, off): hold no lease, as `lgrep mcp --no-watch` (what `lgrep doctor` sets for
# the servers it starts only to check them).
WATCH_ENV = "LGREP_MCP_WATCH"


def leases_wanted(env: dict[str, str] | None = None) -> bool:
    """Whether an MCP server holds watch leases: unless `LGREP_MCP_WATCH` says no."""
    text = (env if env is not None else dict(os.environ)).get(WATCH_ENV, "").strip().lower()
    return text not in {"0", "false", "no", "off"}


def lease_ttl_s(env: dict[str, str] | None = None) -> float:
    """The ttl a client asks for: `LGREP_MCP_LEASE_TTL_S` if it is a number of seconds, else 30 s
    (the daemon bounds it to 2 s - 10 min)."""
    text = (env if env is not None else dict(os.environ)).get(TTL_ENV, "").strip()
    try:
        value = float(text) if text else DEFAULT_TTL_S
    except ValueError:
        log.warning("%s=%r is not a number of seconds: using %g", TTL_ENV, text, DEFAULT_TTL_S)
        return DEFAULT_TTL_S
    return value if value > 0 else DEFAULT_TTL_S


class WatchLeases:
    """Leases on the projects of `folders`, renewed until `stop()` (see the module docstring)."""

    def __init__(
        self,
        folders: Sequence[Path],
        *,
        ttl_s: float = DEFAULT_TTL_S,
        settings: Callable[[], ClientSettings] | None = None,
    ) -> None:
        self.folders = list(dict.fromkeys(folders))
        self.ttl_s = ttl_s
        self.holder = f"lgrep-{os.getpid()}-{secrets.token_hex(6)}"
        self._settings = settings
        self._client: LgrepClient | None = None
        self._granted: dict[Path, WatchLease] = {}
        self._refused: set[Path] = set()  # warned about once, until granted again
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one renewal round at a time
        self._thread: threading.Thread | None = None

    @property
    def granted(self) -> dict[Path, WatchLease]:
        """The last answer for each folder (empty while no daemon answered)."""
        return dict(self._granted)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="lgrep-watch-leases", daemon=True)
            self._thread.start()

    def renew_now(self) -> None:
        """Renew at once (a daemon was just connected or started), not at the next tick."""
        self._wake.set()

    def stop(self) -> None:
        """Release the leases (the daemon stops watching what no one else holds) and stop renewing."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(CALL_TIMEOUT_S)
        if not self._lock.acquire(timeout=CALL_TIMEOUT_S):
            return  # a renewal is stuck on a wedged daemon: the leases expire by themselves
        try:
            client = self._client
            if client is not None and self._granted:
                for folder in self.folders:
                    try:
                        client.call(ReleaseWatchLeaseRequest(str(folder), self.holder))
                    except LgrepError as exc:
                        log.debug("releasing the watch lease on %s: %s", folder, exc.message)
            self._granted.clear()
            self._close()
        finally:
            self._lock.release()

    # ------------------------------------------------------------------------------ internals

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.renew()
            self._wake.wait(max(0.5, self.ttl_s / 3))
            self._wake.clear()

    def renew(self) -> None:
        """One round: renew every lease with the daemon that runs (none: nothing to do)."""
        with self._lock:
            if self._stop.is_set():
                return
            client = self._connected()
            if client is None:
                self._granted.clear()
                return
            for folder in self.folders:
                try:
                    lease = client.call(WatchLeaseRequest(str(folder), self.holder, self.ttl_s))
                except ServerUnavailableError:
                    self._granted.clear()
                    self._close()  # the daemon went away: the next round finds the next one
                    return
                except LgrepError as exc:
                    self._granted.pop(folder, None)
                    level = logging.DEBUG if folder in self._refused else logging.WARNING
                    self._refused.add(folder)
                    log.log(level, "no watch lease on %s (asked again at each renewal): %s", folder, exc.message)
                    continue
                self.ttl_s = min(self.ttl_s, lease.ttl_s)  # the daemon bounds it: renew in time for its ttl
                self._granted[folder] = lease
                self._refused.discard(folder)

    def _connected(self) -> LgrepClient | None:
        if self._client is None:
            from lgrep_core.rpc.daemon_client import connect_daemon
            from lgrep_core.rpc.endpoints import client_settings

            try:
                cs = self._settings() if self._settings is not None else client_settings()
                self._client = connect_daemon(cs, start=False)
                if self._client is not None:
                    self._client.timeout = CALL_TIMEOUT_S  # (commands' clients wait as long as the work)
            except LgrepError as exc:
                log.debug("no daemon to hold watch leases with: %s", exc.message)
                return None
        return self._client

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None
