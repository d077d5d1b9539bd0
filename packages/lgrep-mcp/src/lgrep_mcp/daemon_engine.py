"""The daemon as a long-lived shell's engine (lgrep_core.api.Engine): connected on the first call
(starting the daemon when none runs, as a command does) and connected again when the daemon went
away (stopped, restarted, idle-exited) between two calls. The MCP server holds one for its life.

A command lives for one call and uses the client connect_daemon gives it directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from lgrep_core.errors import ServerUnavailableError
from lgrep_core.models import (
    CancelResult,
    ChunkKind,
    ComponentInfo,
    FileList,
    FileSlice,
    ProjectStatus,
    RelatedResult,
    Release,
    RemoveResult,
    SearchRequest,
    SearchResponse,
    Skeleton,
    SymbolMatch,
    TraceDirection,
    TraceResult,
    WatchResult,
)

if TYPE_CHECKING:
    from lgrep_core.api import PathText
    from lgrep_core.client import IndexStream, LgrepClient
    from lgrep_core.endpoints import ClientSettings

__all__ = ["DaemonEngine"]

T = TypeVar("T")


class DaemonEngine:
    """One connection to the daemon, made on first use and made again if the daemon went away."""

    def __init__(
        self,
        settings: Callable[[], ClientSettings] | None = None,
        *,
        on_connect: Callable[[], None] | None = None,
    ) -> None:
        """`settings` gives the client settings when the first call connects (default: the user's,
        lgrep_core.endpoints.client_settings). `on_connect` is told each time a connection is made
        (the daemon may be a new one: lgrep_mcp.leases takes its watch leases again at once)."""
        self._settings = settings
        self._on_connect = on_connect
        self._client: LgrepClient | None = None
        self._lock = threading.Lock()

    def _call(self, fn: Callable[[LgrepClient], T]) -> T:
        try:
            return fn(self._connected())
        except ServerUnavailableError:
            self.reset()  # the daemon stopped (or was restarted): one more try starts or finds it
            return fn(self._connected())

    def _connected(self) -> LgrepClient:
        with self._lock:
            if self._client is None:
                from lgrep_core.daemon_client import connect_daemon
                from lgrep_core.endpoints import client_settings

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

    def close(self) -> None:
        self.reset()

    # ------------------------------------------------------------------ lgrep_core.api.Engine

    def search(self, request: SearchRequest) -> SearchResponse:
        return self._call(lambda c: c.search(request))

    def index(
        self, project_root: PathText, *, force: bool = False, wait_vectors: bool = True, timeout: float | None = None
    ) -> IndexStream:
        return self._call(lambda c: c.index(project_root, force=force, wait_vectors=wait_vectors, timeout=timeout))

    def status(self, project_root: PathText) -> ProjectStatus:
        return self._call(lambda c: c.status(project_root))

    def watch(self, project_root: PathText, *, debounce_ms: int | None = None) -> WatchResult:
        return self._call(lambda c: c.watch(project_root, debounce_ms=debounce_ms))

    def unwatch(self, project_root: PathText) -> bool:
        return self._call(lambda c: c.unwatch(project_root))

    def remove(self, project_root: PathText) -> RemoveResult:
        return self._call(lambda c: c.remove(project_root))

    def cancel_index(self, project_root: PathText) -> CancelResult:
        return self._call(lambda c: c.cancel_index(project_root))

    def get_file(
        self,
        project_root: PathText,
        path: PathText,
        start_line: int = 0,
        end_line: int = 0,
        *,
        component: str = "",
        version: str = "",
    ) -> FileSlice:
        return self._call(
            lambda c: c.get_file(project_root, path, start_line, end_line, component=component, version=version)
        )

    def find_symbol(
        self,
        project_root: PathText,
        name: str,
        *,
        limit: int | None = None,
        kinds: Sequence[ChunkKind] = (),
        languages: Sequence[str] = (),
        path_glob: str | None = None,
    ) -> list[SymbolMatch]:
        return self._call(
            lambda c: c.find_symbol(
                project_root, name, limit=limit, kinds=kinds, languages=languages, path_glob=path_glob
            )
        )

    def find_related(
        self, project_root: PathText, path: PathText, line: int, *, limit: int | None = None
    ) -> RelatedResult:
        return self._call(lambda c: c.find_related(project_root, path, line, limit=limit))

    def skeleton(self, project_root: PathText, path: PathText) -> Skeleton:
        return self._call(lambda c: c.skeleton(project_root, path))

    def trace(
        self,
        project_root: PathText,
        symbol: str,
        *,
        path: PathText = "",
        depth: int = 1,
        direction: TraceDirection = TraceDirection.BOTH,
        limit: int | None = None,
        offset: int = 0,
        resolve_imports: bool = True,
    ) -> TraceResult:
        return self._call(
            lambda c: c.trace(
                project_root,
                symbol,
                path=path,
                depth=depth,
                direction=direction,
                limit=limit,
                offset=offset,
                resolve_imports=resolve_imports,
            )
        )

    def list_files(
        self,
        project_root: PathText,
        *,
        path_glob: str | None = None,
        languages: Sequence[str] = (),
        limit: int | None = None,
        component: str = "",
        version: str = "",
    ) -> FileList:
        return self._call(
            lambda c: c.list_files(
                project_root,
                path_glob=path_glob,
                languages=languages,
                limit=limit,
                component=component,
                version=version,
            )
        )

    def list_components(self, project_root: PathText) -> list[ComponentInfo]:
        return self._call(lambda c: c.list_components(project_root))

    def list_versions(self, project_root: PathText, component: str) -> list[Release]:
        return self._call(lambda c: c.list_versions(project_root, component))
