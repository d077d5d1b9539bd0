"""The index role of a server, and `lgrep-index`: the single writer and watcher of a cache dir.

`lgrep-index watch PATH...` runs alone as the writer: it indexes and watches the given projects and
serves IndexService on its socket. `lgrep serve` runs the same role beside the search role in one
process. Either way only one index server runs per cache dir (`indexer.lock`), so every project has
one writer however many agents and commands ask for indexing.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import IndexBusyError, StorageError
from lgrep_core.domain.models import ServerInfo, ServerRole
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.embeddings.registry import Embedders
from lgrep_core.rpc.server import (
    THREAD_JOIN_S,
    ActivityInterceptor,
    ServerRuntime,
    add_server_service,
    make_server_info,
    run_server,
    server_interceptors,
)
from lgrep_core.runtime.locks import acquire_pid_lock, release_pid_lock
from lgrep_core.settings.config import LgrepSettings

from .freshness import Freshness
from .jobs import IndexJobs
from .projects import unfinished_vector_fills
from .service import IndexServicer, add_index_service
from .watch.registry import Watches, load_unwatched, load_watched, save_watched

__all__ = ["IndexRole", "build_index_role", "main", "serve_index", "unwatch_saved"]

log = logging.getLogger(__name__)

WRITER_LOCK = "indexer.lock"
# On stop, running index jobs get this long to finish their current commit: as long as the server
# waits for any thread it started. A commit embeds `index.embed_batch_chunks` chunks (256: ~9 s on a
# quiet 2-core machine without VNNI, several times that for the niced index thread under load); 30 s
# let the process end with a worker still inside onnxruntime, which aborts it (SIGABRT) as the
# interpreter finalizes. Past this, the stop's deadline (lgrep_core.rpc.server.STOP_DEADLINE_S) logs
# every stack and exits with status 1 instead.
STOP_JOBS_S = THREAD_JOIN_S


@dataclass
class IndexRole:
    """IndexService's backends in one server process.

    A role built `read_only` (the daemon, when another process such as `lgrep-index watch` is the
    writer of the cache dir) answers status and project lists, refuses every write at once with the
    writer's pid, and becomes the writer (`take_writer`) once that process has gone."""

    cache_dir: Path
    jobs: IndexJobs
    watches: Watches
    servicer: IndexServicer
    freshness: Freshness
    _lock_fd: int | None = field(default=None, repr=False)
    _holder: str = ""
    _closed: bool = False

    def install(self, server: Any) -> str:
        return add_index_service(server, self.servicer)

    @property
    def writer(self) -> bool:
        return self._lock_fd is not None

    def not_writer(self) -> str | None:
        """Why this server cannot write now, or None when it is the writer."""
        if self._lock_fd is not None:
            return None
        return (
            f"another lgrep index server (pid {self._holder}, e.g. `lgrep-index watch`) is the writer of "
            f"{self.cache_dir}: this daemon serves searches read-only meanwhile; index, watch or clean through "
            "that server, or stop it (this daemon then takes over)"
        )

    def take_writer(self) -> bool:
        """Become the writer if nobody else is (a read-only role, after the other writer stopped):
        then watch what the cache dir's watch list names and resume unfinished vector fills.
        True when this role is the writer."""
        if self._lock_fd is not None:
            return True
        if self._closed:
            return False
        fd, holder = acquire_pid_lock(self.cache_dir / WRITER_LOCK)
        if fd is None:
            self._holder = holder
            return False
        self._lock_fd = fd
        log.info("the writer of %s is gone: this server is its writer now", self.cache_dir)
        self.start_writing()
        return True

    def start_writing(self) -> None:
        """Watch again what a previous writer watched, and finish the vector fills it left."""
        if self._lock_fd is None:
            return
        self.watches.restore()
        watched = self.watches.watched()  # a watched project's catch-up run fills its vectors anyway
        for root in unfinished_vector_fills(self.cache_dir):
            if root not in watched:
                log.info("resuming the unfinished vector fill of %s", root)
                self.jobs.submit(root)

    def busy(self) -> bool:
        """Watching a project someone asked for, or running a job: a server with this role is not
        idle. A watch only leases hold is not work of its own: its holders are clients, which keep
        a server awake by calling it, not by renewing their leases (ADR 0024)."""
        return bool(self.watches.asked()) or self.jobs.any_busy()

    def tick(self) -> None:
        """Expire watch leases and start the watches leases may now have (maintenance, every 0.5 s)."""
        if self.writer and not self._closed:
            self.watches.tick()

    def close(self) -> None:
        self._closed = True
        self.watches.close()
        self.jobs.close(timeout=STOP_JOBS_S)
        if self._lock_fd is not None:
            release_pid_lock(self._lock_fd)
            self._lock_fd = None


def build_index_role(
    settings: LgrepSettings,
    embedder: EmbeddingProvider | Embedders,
    *,
    on_commit: Callable[[Path], None] | None = None,
    resident: Callable[[], set[Path]] = set,
    forget: Callable[[Path], object] = lambda root: None,
    read_only_if_busy: bool = False,
) -> IndexRole:
    """Take the cache dir's writer lock and build the role. With `read_only_if_busy`, a cache dir
    that has another writer gives a read-only role (see IndexRole) instead of an error.

    Raises:
        IndexBusyError: another index server is the writer of this cache dir (and not read_only_if_busy).
    """
    settings.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, holder = acquire_pid_lock(settings.cache_dir / WRITER_LOCK)
    if fd is None and not read_only_if_busy:
        raise IndexBusyError(
            f"another lgrep index server (pid {holder}) is already the writer of {settings.cache_dir}; "
            "use that one (or stop it: `lgrep serve --stop`, or end its `lgrep-index watch`)"
        )
    if fd is None:
        log.warning(
            "another lgrep index server (pid %s) is the writer of %s: serving read-only", holder, settings.cache_dir
        )
    jobs = IndexJobs(settings, embedder, on_commit=on_commit)
    watches = Watches(settings, jobs)
    servicer = IndexServicer(settings, jobs, watches, resident=resident, forget=forget)
    freshness = Freshness(settings.cache_dir, jobs, watches.watched)
    role = IndexRole(settings.cache_dir, jobs, watches, servicer, freshness, fd, holder)
    servicer.not_writer = role.not_writer
    freshness.writer = lambda: role.writer
    return role


def unwatch_saved(cache_dir: Path, root: Path) -> bool:
    """Stop watching a project while no index server runs: take it off the saved watch list that
    the next server would watch again, and mark it unwatched for leases. True if it was on it.

    Raises:
        IndexBusyError: an index server is the writer of the cache dir (unwatch through it).
        StorageError: the list cannot be written.
    """
    cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, holder = acquire_pid_lock(cache_dir / WRITER_LOCK)  # no server starts (and loads the list) meanwhile
    if fd is None:
        raise IndexBusyError(
            f"an lgrep index server (pid {holder}) is the writer of {cache_dir} and keeps its watch list: "
            "unwatch through it, or stop it first"
        )
    try:
        saved = load_watched(cache_dir)
        unwatched = set(load_unwatched(cache_dir))
        try:
            # As through a server: leases leave the project alone until it is watched again.
            save_watched(cache_dir, [r for r in saved if r != root], unwatched | {root})
        except OSError as exc:
            raise StorageError(f"cannot save the watched projects in {cache_dir}: {exc.strerror}") from None
        return root in saved
    finally:
        release_pid_lock(fd)


def serve_index(
    settings: LgrepSettings, socket_path: Path, roots: Sequence[Path], *, ready_fd: int | None = None
) -> None:
    """Run the writer: index and watch `roots` (and the projects a previous run watched)."""
    from lgrep_core.embeddings.registry import make_embedder

    embedder = make_embedder(settings.embedding, settings.cache_dir)
    embedders = Embedders(settings.embedding, settings.cache_dir, embedder)
    activity = ActivityInterceptor()
    runtime = ServerRuntime(
        socket_path,
        tcp_port=settings.server.tcp_port,
        interceptors=server_interceptors(settings, activity),
        what="lgrep-index server",
        cache_dir=settings.cache_dir,
    )
    runtime.claim()
    role = build_index_role(settings, embedders)
    started = datetime.now(UTC)

    def install(server: Any) -> list[str]:
        def info() -> ServerInfo:
            return make_server_info(
                settings,
                embedder,
                runtime,
                [ServerRole.INDEX],
                resident=0,
                started=started,
                watched=role.watches.watched(),
            )

        return [add_server_service(server, info), role.install(server)]

    def watch_all() -> None:
        role.start_writing()
        for root in roots:
            role.watches.watch(root)

    def maintain() -> bool:
        role.tick()
        return True

    run_server(runtime, install, ready_fd=ready_fd, maintenance=maintain, on_stop=[role.close], after_start=[watch_all])


def main(argv: Sequence[str] | None = None) -> int:
    """`lgrep-index watch PATH... [--socket PATH]`."""
    import click
    from lgrep_core.app.cli_support import group, run_command, setup_logging, terminal_safe

    @group(context_settings={"help_option_names": ["-h", "--help"]})
    def cli() -> None:
        """The lgrep indexer: the single writer and watcher of a cache dir."""

    @cli.command()
    @click.argument("paths", nargs=-1, type=click.Path(path_type=Path, file_okay=False, exists=True))
    @click.option("--socket", "socket_path", type=click.Path(path_type=Path), help="unix socket to listen on")
    @click.option("--ready-fd", type=int, hidden=True)
    @click.option("-v", "--verbose", is_flag=True, help="log details to stderr")
    def watch(paths: tuple[Path, ...], socket_path: Path | None, ready_fd: int | None, verbose: bool) -> None:
        """Index PATHs, keep them fresh as files change, and serve IndexService."""
        from lgrep_core.app.scope import Purpose, project_for
        from lgrep_core.settings.config import load_settings

        settings = load_settings(None).settings
        setup_logging(settings.log_level, verbose)
        path = socket_path.expanduser().absolute() if socket_path else settings.cache_dir / "index.sock"
        # A folder inside a project is watched as part of it, as `lgrep watch` does.
        scopes = [project_for(settings.cache_dir, p, Purpose.WATCH) for p in paths]
        for note in dict.fromkeys(s.note for s in scopes if s.note):
            click.echo(f"lgrep-index: {terminal_safe(note)}", err=True)
        roots = [s.project for s in scopes]
        serve_index(settings, path, list(dict.fromkeys(roots)), ready_fd=ready_fd)

    return run_command(cli, argv, prog="lgrep-index")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
