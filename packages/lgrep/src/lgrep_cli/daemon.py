"""`lgrep serve`: the daemon. Both roles in one process: the search readers (one model, one snapshot
per project in use) and the single writer and watcher of the cache dir.

Commands and agents share it: a search is a call, not a process start and a snapshot load; indexing
requests from several agents queue on one writer per project; a watched project stays fresh. It
stops on SIGTERM (`lgrep serve --stop`), and by itself after `server.idle_exit_s` with no call, no
project it was asked to watch and no job (watch lease renewals are not calls, and a watch only
leases hold keeps nobody's daemon awake: ADR 0024).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lgrep_core.domain.models import ServerInfo, ServerRole
from lgrep_core.rpc.server import (
    ActivityInterceptor,
    ServerRuntime,
    add_server_service,
    make_server_info,
    run_server,
    server_interceptors,
)
from lgrep_core.settings.config import LgrepSettings

if TYPE_CHECKING:
    from lgrep_core.embeddings.base import EmbeddingProvider
    from lgrep_index.server import IndexRole
    from lgrep_search.projects import ProjectSearchers

__all__ = ["Daemon", "build_daemon", "serve_both"]

log = logging.getLogger("lgrep.daemon")


@dataclass
class Daemon:
    """The daemon's parts, built and holding their locks but not yet serving (`build_daemon`).
    `serve` runs them until the process is stopped; a test may start `runtime` with `install` itself
    to hold a daemon in its own process (tests/e2e/test_search_after_status.py)."""

    settings: LgrepSettings
    runtime: ServerRuntime
    embedder: EmbeddingProvider
    searchers: ProjectSearchers
    role: IndexRole
    install: Callable[[Any], list[str]]
    maintain: Callable[[], bool]
    warm_up: Callable[[], None]

    def serve(self, *, ready_fd: int | None = None) -> None:
        """Serve until SIGTERM/SIGINT or idle (lgrep_core.rpc.server.run_server)."""
        run_server(
            self.runtime,
            self.install,
            ready_fd=ready_fd,
            maintenance=self.maintain,
            on_stop=[self.role.close, self.searchers.close],
            after_start=[self.warm_up],
        )


def serve_both(settings: LgrepSettings, socket_path: Path, *, ready_fd: int | None = None) -> None:
    """Run the daemon until it is stopped.

    Raises:
        IndexBusyError: another daemon serves this socket, or another index server writes this cache dir.
    """
    build_daemon(settings, socket_path).serve(ready_fd=ready_fd)


def build_daemon(settings: LgrepSettings, socket_path: Path) -> Daemon:
    """Claim the socket and build both roles (see the module docstring).

    Raises:
        IndexBusyError: another daemon serves this socket, or another index server writes this cache dir.
    """
    from lgrep_core.embeddings.base import is_remote
    from lgrep_index.server import build_index_role
    from lgrep_search.service import add_search_service

    from . import parts

    activity = ActivityInterceptor()
    runtime = ServerRuntime(
        socket_path,
        tcp_port=settings.server.tcp_port,
        interceptors=server_interceptors(settings, activity),
        what="lgrep daemon",
        cache_dir=settings.cache_dir,
    )
    runtime.claim()  # before anything heavy: a second daemon refuses at once
    embedder = parts.embedder(settings)
    # One provider per process, shared by every agent; projects opted out of a cloud one get the local model.
    embedders = parts.embedders(settings, embedder)
    searchers = parts.searchers(settings, embedders)
    role = build_index_role(
        settings,
        embedders,
        on_commit=searchers.refresh,
        resident=lambda: {p.root for p in searchers.resident()},
        forget=searchers.drop,
        # Another process (`lgrep-index watch`) may be the writer: then search read-only, and take
        # over as the writer when it goes (maintain below).
        read_only_if_busy=True,
    )
    # A project nobody watches whose checkout moved (a branch switch) is brought up to date before
    # a search answers (lgrep_index.freshness, ADR 0024).
    searchers.freshen = role.freshness.freshen
    started = datetime.now(UTC)

    def install(server: Any) -> list[str]:
        def info() -> ServerInfo:
            return make_server_info(
                settings,
                embedder,
                runtime,
                [ServerRole.INDEX, ServerRole.SEARCH] if role.writer else [ServerRole.SEARCH],
                resident=len(searchers.resident()),
                started=started,
                watched=role.watches.watched(),
            )

        return [add_server_service(server, info), add_search_service(server, searchers), role.install(server)]

    def maintain() -> bool:
        role.take_writer()
        role.tick()
        searchers.poll()
        searchers.evict()
        idle = settings.server.idle_exit_s
        return not idle or activity.idle_s() < idle or role.busy()

    def warm_up() -> None:
        # Load the model now, not on the first query; then watch what a previous daemon watched and
        # finish the vector fills it left. A cloud provider has no model here to load: a call would
        # only send text and cost a request. Stopping waits for this thread (a session being built
        # when the interpreter finalizes aborts the process), and a daemon told to stop meanwhile
        # watches nothing.
        if not is_remote(embedder) and not runtime.stopping.is_set():
            try:
                embedder.embed_query("warm up")
            except Exception:
                log.exception("loading the embedding model failed")
        if not runtime.stopping.is_set():
            role.start_writing()

    return Daemon(settings, runtime, embedder, searchers, role, install, maintain, warm_up)
