"""The MCP server's one connection to the lgrep daemon: made on the first tool call (starting the
daemon when none runs, like the CLI) and made again if the daemon went away."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from lgrep_core.errors import ServerUnavailableError

__all__ = ["DaemonLink"]

T = TypeVar("T")


class DaemonLink:
    """One connection to the daemon, made on first use and made again if the daemon went away."""

    def __init__(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()

    def call(self, fn: Callable[[Any], T]) -> T:
        try:
            return fn(self._connected())
        except ServerUnavailableError:
            self.reset()  # the daemon stopped (or was restarted): one more try starts or finds it
            return fn(self._connected())

    def _connected(self) -> Any:
        with self._lock:
            if self._client is None:
                from lgrep_core.daemon_client import connect_daemon
                from lgrep_core.endpoints import client_settings

                cs = client_settings()
                client = connect_daemon(cs, start=True)
                if client is None:
                    raise ServerUnavailableError(
                        f"the lgrep daemon is not running and could not be started (see {cs.cache_dir / 'serve.log'}; "
                        "`lgrep serve` starts it by hand)"
                    )
                self._client = client
            return self._client

    def reset(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client = None
