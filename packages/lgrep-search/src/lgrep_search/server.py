"""`lgrep-search serve`: a search reader process. Any number may run over the same cache, each on
its own socket; each picks up new index versions (a writer's commits) without a restart."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lgrep_core.domain.models import ServerRole
from lgrep_core.rpc.server import (
    ActivityInterceptor,
    ServerRuntime,
    add_server_service,
    make_server_info,
    run_server,
    server_interceptors,
)
from lgrep_core.settings.config import LgrepSettings

from .projects import ProjectSearchers
from .service import add_search_service

__all__ = ["main", "serve_search"]

log = logging.getLogger(__name__)


def serve_search(settings: LgrepSettings, socket_path: Path, *, ready_fd: int | None = None) -> None:
    """Run a search reader until SIGTERM (or idle past server.idle_exit_s)."""
    from lgrep_core.embeddings.registry import Embedders, make_embedder

    embedder = make_embedder(settings.embedding, settings.cache_dir)
    searchers = ProjectSearchers(settings, Embedders(settings.embedding, settings.cache_dir, embedder))
    activity = ActivityInterceptor()
    runtime = ServerRuntime(
        socket_path,
        tcp_port=settings.server.tcp_port,
        interceptors=server_interceptors(settings, activity),
        what="lgrep-search server",
        cache_dir=settings.cache_dir,
    )
    started = datetime.now(UTC)

    def install(server: Any) -> list[str]:
        info = lambda: make_server_info(  # noqa: E731
            settings, embedder, runtime, [ServerRole.SEARCH], resident=len(searchers.resident()), started=started
        )
        return [add_server_service(server, info), add_search_service(server, searchers)]

    def maintain() -> bool:
        searchers.poll()
        searchers.evict()
        idle = settings.server.idle_exit_s
        return not idle or activity.idle_s() < idle

    run_server(runtime, install, ready_fd=ready_fd, maintenance=maintain, on_stop=[searchers.close])


def main(argv: Sequence[str] | None = None) -> int:
    """`lgrep-search serve [--socket PATH] [--tcp-port N]`."""
    import click
    from lgrep_core.app.cli_support import group, run_command, setup_logging

    @group(context_settings={"help_option_names": ["-h", "--help"]})
    def cli() -> None:
        """lgrep search readers."""

    @cli.command()
    @click.option("--socket", "socket_path", type=click.Path(path_type=Path), help="unix socket to listen on")
    @click.option("--tcp-port", type=click.IntRange(0, 65535), help="also listen on 127.0.0.1:PORT (token required)")
    @click.option("--ready-fd", type=int, hidden=True)
    @click.option("-v", "--verbose", is_flag=True, help="log details to stderr")
    def serve(socket_path: Path | None, tcp_port: int | None, ready_fd: int | None, verbose: bool) -> None:
        """Serve searches over every project in the cache dir."""
        from lgrep_core.settings.config import load_settings

        settings = load_settings(None).settings
        if tcp_port is not None:
            settings.server.tcp_port = tcp_port
        setup_logging(settings.log_level, verbose)
        path = socket_path.expanduser().absolute() if socket_path else settings.cache_dir / f"search-{os.getpid()}.sock"
        serve_search(settings, path, ready_fd=ready_fd)

    return run_command(cli, argv, prog="lgrep-search")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
