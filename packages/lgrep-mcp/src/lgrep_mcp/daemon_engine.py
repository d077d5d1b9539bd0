"""The daemon as a long-lived shell's engine (lgrep_core.domain.engine.Engine): connected on the first call
(starting the daemon when none runs, as a command does) and connected again when the daemon went
away (stopped, restarted, idle-exited) between two calls. The MCP server holds one for its life.

A command lives for one call and uses the client connect_daemon gives it directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lgrep_core.domain.errors import ServerUnavailableError

if TYPE_CHECKING:
    from lgrep_core.domain.models import IndexProjectRequest, Request
    from lgrep_core.rpc.client import IndexStream, LgrepClient
    from lgrep_core.rpc.endpoints import ClientSettings

__all__ = ["DaemonEngine"]

T = TypeVar("T")
A = TypeVar("A")


class DaemonEngine:
    """One connection to the daemon, made on first use and made again if the daemon went away."""

    def __init__(
        self,
        settings: Callable[[], ClientSettings] | None = None,
        *,
        on_connect: Callable[[], None] | None = None,
    ) -> None:
        """`settings` gives the client settings when the first call connects (default: the user's,
        lgrep_core.rpc.endpoints.client_settings). `on_connect` is told each time a connection is made
        (the daemon may be a new one: lgrep_mcp.leases takes its watch leases again at once)."""
        self._settings = settings
        self._on_connect = on_connect
        self._client: LgrepClient | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lgrep_core.domain.engine.Engine

    def call(self, request: Request[A]) -> A:
        return self._retried(lambda c: c.call(request))

    def index(self, request: IndexProjectRequest, *, timeout: float | None = None) -> IndexStream:
        return self._retried(lambda c: c.index(request, timeout=timeout))

    def close(self) -> None:
        self.reset()

    # ------------------------------------------------------------------ the connection

    def _retried(self, fn: Callable[[LgrepClient], T]) -> T:
        try:
            return fn(self._connected())
        except ServerUnavailableError:
            self.reset()  # the daemon stopped (or was restarted): one more try starts or finds it
            return fn(self._connected())

    def _connected(self) -> LgrepClient:
        with self._lock:
            if self._client is None:
                from lgrep_core.rpc.daemon_client import connect_daemon
                from lgrep_core.rpc.endpoints import client_settings

                cs = self._settings() if self._settings is not None else client_settings()
                client = connect_daemon(cs, start=True)
                if client is None:
                    raise ServerUnavailableError(
                        f"the lgrep daemon is not running and could not be started (see {cs.cache_dir / 'serve.log'}; "
                        "`lgrep serve` starts it by hand)"
                    )
                self._client = client
                if self._on_connect is not None:
                    self._on_connect()
            return self._client

    def reset(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client = None
