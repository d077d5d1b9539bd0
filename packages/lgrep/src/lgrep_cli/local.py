"""lgrep in this process, when no daemon serves a command (none can be started, autostart is off, or
--no-daemon): `LocalEngine`, the in-process implementation of lgrep_core.app.api.Engine, and the release
and planning use cases only this process runs. Imported only here because they are heavy (LanceDB,
the model runtime)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from lgrep_core.domain.engine import Handlers, anchored
from lgrep_core.domain.errors import DeadlineExceededError, ServerUnavailableError
from lgrep_core.domain.models import (
    CancelIndexRequest,
    CancelResult,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    ListComponentsRequest,
    ListFilesRequest,
    ListProjectsRequest,
    ListVersionsRequest,
    ProjectInfo,
    ProjectStatus,
    ReleaseWatchLeaseRequest,
    RemoveProjectRequest,
    RemoveResult,
    Request,
    SearchRequest,
    SkeletonRequest,
    StatusRequest,
    TagsSummary,
    TraceRequest,
    UnwatchProjectRequest,
    WatchLeaseRequest,
    WatchProjectRequest,
)
from lgrep_core.runtime.memory import limit_heap_arenas
from lgrep_core.settings.config import LgrepSettings, load_settings

if TYPE_CHECKING:
    from lgrep_index.plan import IndexPlan
    from lgrep_index.publish import PublishSummary
    from lgrep_search.projects import ProjectSearchers

__all__ = [
    "LocalEngine",
    "LocalIndexRun",
    "index",
    "index_tags",
    "plan",
    "spawn_vector_filler",
    "status",
    "unwatch_saved",
]

PathText = str | os.PathLike[str]


def index(
    settings: LgrepSettings,
    root: Path,
    *,
    force: bool = False,
    wait_vectors: bool = True,
    lock_timeout_s: float | None = None,
    progress: Callable[[IndexProgress], None] | None = None,
    cancel: threading.Event | None = None,
    seed: bool = False,
) -> IndexSummary:
    from . import parts

    limit_heap_arenas()  # before LanceDB's and the model's threads: see lgrep_core.runtime.memory
    return parts.indexer(settings, root, progress=progress, cancel=cancel, seed=seed).run(
        force=force, wait_vectors=wait_vectors, lock_timeout_s=lock_timeout_s
    )


@overload
def plan(settings: LgrepSettings, root: Path, *, force: bool = ..., remote_only: Literal[False] = ...) -> IndexPlan: ...
@overload
def plan(settings: LgrepSettings, root: Path, *, force: bool = ..., remote_only: bool) -> IndexPlan | None: ...
def plan(settings: LgrepSettings, root: Path, *, force: bool = False, remote_only: bool = False) -> IndexPlan | None:
    """What indexing would embed and cost now, without sending anything (None with `remote_only`
    when the provider is not a cloud one)."""
    from lgrep_core.embeddings.base import is_remote
    from lgrep_index.plan import plan_index

    from . import parts

    embedder = parts.embedder(settings, root)
    if remote_only and not is_remote(embedder):
        return None
    return plan_index(settings, root, embedder, force=force)


def publish(
    settings: LgrepSettings,
    root: Path,
    *,
    dry_run: bool = False,
    progress: Callable[[IndexProgress], None] | None = None,
    ray_address: str | None = None,
) -> PublishSummary:
    """Publish the repository's HEAD to the team store (lgrep_index.publish), in this process; with
    `ray_address`, the embedding runs on that Ray cluster (lgrep_index.ray_embed)."""
    from lgrep_index.publish import publish as run

    from . import parts

    limit_heap_arenas()
    if ray_address is None or dry_run:
        return run(settings, root, parts.embedder(settings, root), dry_run=dry_run, progress=progress)
    from lgrep_index.ray_embed import TEXTS_PER_ACTOR, RayEmbedder

    embedder = RayEmbedder(settings, ray_address)
    try:
        wide = settings.model_copy(deep=True)
        wide.index.embed_batch_chunks = min(
            10_000, max(wide.index.embed_batch_chunks, TEXTS_PER_ACTOR * embedder.actors)
        )
        return run(wide, root, embedder, progress=progress)
    finally:
        embedder.close()


def index_tags(
    settings: LgrepSettings,
    root: Path,
    *,
    force: bool = False,
    tag_patterns: tuple[str, ...] = (),
    lock_timeout_s: float | None = None,
    progress: Callable[[IndexProgress], None] | None = None,
    approve: Callable[[Any], bool] | None = None,
) -> TagsSummary:
    """Index the repository's tags into its versions index (local or `versions.store`); with a
    cloud provider, `approve` sees the spend estimate before anything is sent."""
    from . import parts

    limit_heap_arenas()
    indexer = parts.tag_indexer(settings, root, tag_patterns=tag_patterns, progress=progress, approve=approve)
    return indexer.run(force=force, lock_timeout_s=lock_timeout_s)


def status(settings: LgrepSettings, root: Path) -> ProjectStatus:
    from lgrep_index.projects import project_status

    return project_status(settings, root)


def unwatch_saved(cache_dir: Path, root: Path) -> bool:
    """Take a project off the watch list the next daemon would watch again (no daemon runs)."""
    from lgrep_index.server import unwatch_saved as unwatch

    return unwatch(cache_dir, root)


def spawn_vector_filler(settings: LgrepSettings, root: Path) -> None:
    """Fill vectors in behind: a detached `lgrep index --vectors-only` that queues on the write lock.

    The child must never import from the project (an untrusted repository may hold a `lgrep_cli.py`
    or a `numpy.py`): `-P` keeps the working directory off `sys.path`, and the working directory is
    the project's index folder, which only lgrep writes, so not even a `.` in PYTHONPATH reaches it.
    """
    from lgrep_core.storage.store import ProjectStore

    store = ProjectStore(settings.cache_dir, root)
    log_path = store.dir / "embed.log"
    with log_path.open("ab") as out:
        subprocess.Popen(
            [sys.executable, "-P", "-m", "lgrep_cli", "index", str(root), "--vectors-only", "--quiet", "--no-daemon"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            cwd=str(store.dir),
            env=os.environ.copy(),
        )


class LocalEngine:
    """lgrep's use cases in this process (lgrep_core.domain.engine.Engine), with the daemon client's
    answers: reads go through the same ProjectSearchers the daemon uses (defaults, identity check
    and project resolution included), an index run through the same Indexer.

    Each project is read with its own settings (its `.lgrep.yaml`); `lock_timeout_s` is how long an
    index run queues behind another writer of the project (None: it fails at once, IndexBusyError)."""

    def __init__(self, settings: LgrepSettings, *, lock_timeout_s: float | None = None, fill_behind: bool = True):
        """`fill_behind`: a run that does not wait for vectors starts a detached filler for them
        (`spawn_vector_filler`); the filler itself runs with it off."""
        self.settings = settings
        self.lock_timeout_s = lock_timeout_s
        self.fill_behind = fill_behind
        self._searchers: ProjectSearchers | None = None
        reads: dict[type[Request[Any]], Callable[[Any], Any]] = {
            kind: self._read(name)
            for kind, name in (
                (SearchRequest, "search"),
                (GetFileRequest, "get_file"),
                (FindSymbolRequest, "find_symbol"),
                (FindRelatedRequest, "find_related"),
                (SkeletonRequest, "skeleton"),
                (TraceRequest, "trace"),
                (ListFilesRequest, "list_files"),
                (ListComponentsRequest, "list_components"),
                (ListVersionsRequest, "list_versions"),
            )
        }
        self.call: Handlers = Handlers(
            {
                **reads,
                StatusRequest: self._status,
                WatchProjectRequest: self._watch,
                WatchLeaseRequest: self._watch,
                UnwatchProjectRequest: self._unwatch,
                ReleaseWatchLeaseRequest: self._no_lease,
                ListProjectsRequest: self._list_projects,
                RemoveProjectRequest: self._remove,
                CancelIndexRequest: self._cancel,
            },
            engine="this process",
        )
        """The answer to one request (lgrep_core.domain.engine.Engine.call)."""

    def _read(self, name: str) -> Callable[[Any], Any]:
        """A handler that anchors the request and hands it to the ProjectSearchers method `name`."""

        def handle(request: Request[Any]) -> Any:
            request = anchored(request).validate()  # a bad request loads nothing
            return getattr(self._reads(), name)(request)

        return handle

    def _reads(self) -> ProjectSearchers:
        if self._searchers is None:
            from lgrep_index.pipeline import identity_for

            from . import parts

            limit_heap_arenas()  # before LanceDB's and the model's threads: see lgrep_core.runtime.memory
            providers = parts.embedders(self.settings, parts.embedder(self.settings))
            self._searchers = parts.searchers(self.settings, providers, background=False, identity=identity_for)
        return self._searchers

    def close(self) -> None:
        if self._searchers is not None:
            self._searchers.close()
            self._searchers = None

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ index side

    def index(self, request: IndexProjectRequest, *, timeout: float | None = None) -> LocalIndexRun:
        request = anchored(request).validate()
        root = Path(request.project_root)
        settings = load_settings(root).settings
        lock_timeout_s = self.lock_timeout_s
        wait_vectors = request.wait_for_vectors
        fill_behind = self.fill_behind and not wait_vectors

        def work(progress: Callable[[IndexProgress], None], cancel: threading.Event) -> IndexSummary:
            summary = index(
                settings,
                root,
                force=request.force,
                wait_vectors=wait_vectors,
                lock_timeout_s=lock_timeout_s,
                progress=progress,
                cancel=cancel,
                seed=request.seed,
            )
            if fill_behind and summary.vectors_pending:
                spawn_vector_filler(settings, root)
            return summary

        return LocalIndexRun(work, timeout=timeout, name=f"lgrep-index {root.name}")

    def _status(self, request: StatusRequest) -> ProjectStatus:
        from lgrep_index.projects import project_status

        root = Path(anchored(request).validate().project_root)
        return project_status(load_settings(root).settings, root, brief=request.brief)

    def _watch(self, request: WatchProjectRequest | WatchLeaseRequest) -> Any:
        raise ServerUnavailableError(
            "watching needs the lgrep daemon, and it is not in use here (--no-daemon, server.autostart "
            f"off, or it could not be started: see {self.settings.cache_dir / 'serve.log'})"
        )

    def _unwatch(self, request: UnwatchProjectRequest) -> bool:
        # No daemon: the list it would watch again when it starts is the truth to edit.
        return unwatch_saved(self.settings.cache_dir, Path(anchored(request).validate().project_root))

    def _no_lease(self, request: ReleaseWatchLeaseRequest) -> bool:
        anchored(request).validate()
        return False  # leases live in a daemon; none runs here

    def _list_projects(self, request: ListProjectsRequest) -> list[ProjectInfo]:
        from lgrep_index.projects import list_projects

        return list_projects(self.settings.cache_dir)

    def _remove(self, request: RemoveProjectRequest) -> RemoveResult:
        from lgrep_index.projects import remove_project

        return remove_project(self.settings, Path(anchored(request).validate().project_root))

    def _cancel(self, request: CancelIndexRequest) -> CancelResult:
        anchored(request).validate()
        return CancelResult(cancelled=0, stopped=True)  # no run of this process is going on


class LocalIndexRun:
    """An index run of this process (lgrep_core.domain.engine.IndexRun): the Indexer works on a thread of its
    own and hands its events over a queue. `cancel()` stops it at its next commit boundary (what it
    committed stays); the process waits for that before it exits, so no write is cut in half."""

    def __init__(
        self,
        work: Callable[[Callable[[IndexProgress], None], threading.Event], IndexSummary],
        *,
        timeout: float | None,
        name: str,
    ) -> None:
        self._events: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self._cancel = threading.Event()
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._done = False

        def run() -> None:
            try:
                summary = work(lambda event: self._events.put(("event", event)), self._cancel)
                self._events.put(("event", summary))
            except BaseException as exc:
                self._events.put(("error", exc))
            self._events.put(("end", None))

        self._thread = threading.Thread(target=run, name=name)
        self._thread.start()

    def __iter__(self) -> LocalIndexRun:
        return self

    def __next__(self) -> IndexProgress | IndexSummary:
        if self._done:
            raise StopIteration
        try:
            if self._deadline is None:
                kind, value = self._events.get()
            else:
                kind, value = self._events.get(timeout=max(0.0, self._deadline - time.monotonic()))
        except queue.Empty:
            raise DeadlineExceededError("indexing goes on in this process; stopped waiting for it") from None
        if kind == "end":
            self._done = True
            raise StopIteration
        if kind == "error":
            self._done = True
            assert isinstance(value, BaseException)
            raise value
        assert isinstance(value, IndexProgress | IndexSummary)
        return value

    def cancel(self) -> None:
        if not self._done:
            self._cancel.set()

    def wait(self) -> None:
        """Wait until the run's thread has ended (after `cancel`, at its next commit boundary)."""
        self._thread.join()
