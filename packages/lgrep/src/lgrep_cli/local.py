"""lgrep in this process, when no daemon serves a command (none can be started, autostart is off, or
--no-daemon): `LocalEngine`, the in-process implementation of lgrep_core.api.Engine, and the release
and planning use cases only this process runs. Imported only here because they are heavy (LanceDB,
the model runtime)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from lgrep_core.config import LgrepSettings, load_settings
from lgrep_core.errors import DeadlineExceededError, ServerUnavailableError
from lgrep_core.memory import limit_heap_arenas
from lgrep_core.models import (
    CancelResult,
    ChunkKind,
    ComponentInfo,
    FileList,
    FileSlice,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexProgress,
    IndexSummary,
    ListFilesRequest,
    ProjectStatus,
    RelatedResult,
    Release,
    RemoveResult,
    SearchRequest,
    SearchResponse,
    Skeleton,
    SkeletonRequest,
    SymbolMatch,
    TagsSummary,
    TraceDirection,
    TraceRequest,
    TraceResult,
    WatchResult,
)

if TYPE_CHECKING:
    from lgrep_index.plan import IndexPlan
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
) -> IndexSummary:
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_index.pipeline import Indexer

    limit_heap_arenas()  # before LanceDB's and the model's threads: see lgrep_core.memory
    embedder = make_embedder(settings.embedding.for_project(root), settings.cache_dir)
    return Indexer(settings, root, embedder, progress=progress, cancel=cancel).run(
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
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_index.plan import plan_index

    embedder = make_embedder(settings.embedding.for_project(root), settings.cache_dir)
    if remote_only and not is_remote(embedder):
        return None
    return plan_index(settings, root, embedder, force=force)


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
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.storage.versions import VersionStore, store_location
    from lgrep_index.tags import TagIndexer

    limit_heap_arenas()
    embedder = make_embedder(settings.embedding.for_project(root), settings.cache_dir)
    location = store_location(settings.cache_dir, settings.versions.store, root)
    store = VersionStore(location, storage_options=settings.versions.storage_options, label=str(root))
    indexer = TagIndexer(settings, root, embedder, store, tag_patterns=tag_patterns, progress=progress, approve=approve)
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
    """lgrep's use cases in this process (lgrep_core.api.Engine), with the daemon client's
    signatures and answers: reads go through the same ProjectSearchers the daemon uses (defaults,
    identity check and project resolution included), an index run through the same Indexer.

    Each project is read with its own settings (its `.lgrep.yaml`); `lock_timeout_s` is how long an
    index run queues behind another writer of the project (None: it fails at once, IndexBusyError)."""

    def __init__(self, settings: LgrepSettings, *, lock_timeout_s: float | None = None, fill_behind: bool = True):
        """`fill_behind`: a run that does not wait for vectors starts a detached filler for them
        (`spawn_vector_filler`); the filler itself runs with it off."""
        self.settings = settings
        self.lock_timeout_s = lock_timeout_s
        self.fill_behind = fill_behind
        self._searchers: ProjectSearchers | None = None

    def _reads(self) -> ProjectSearchers:
        if self._searchers is None:
            from lgrep_core.embeddings.registry import Embedders, make_embedder
            from lgrep_index.outline import outline_file
            from lgrep_index.pipeline import identity_for
            from lgrep_search.projects import ProjectSearchers

            limit_heap_arenas()  # before LanceDB's and the model's threads: see lgrep_core.memory
            embedder = make_embedder(self.settings.embedding, self.settings.cache_dir)
            self._searchers = ProjectSearchers(
                self.settings,
                Embedders(self.settings.embedding, self.settings.cache_dir, embedder),
                background=False,
                outliner=outline_file,
                identity=identity_for,
            )
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

    def index(
        self, project_root: PathText, *, force: bool = False, wait_vectors: bool = True, timeout: float | None = None
    ) -> LocalIndexRun:
        root = _absolute(project_root)
        settings = load_settings(root).settings
        lock_timeout_s = self.lock_timeout_s
        fill_behind = self.fill_behind and not wait_vectors

        def work(progress: Callable[[IndexProgress], None], cancel: threading.Event) -> IndexSummary:
            summary = index(
                settings,
                root,
                force=force,
                wait_vectors=wait_vectors,
                lock_timeout_s=lock_timeout_s,
                progress=progress,
                cancel=cancel,
            )
            if fill_behind and summary.vectors_pending:
                spawn_vector_filler(settings, root)
            return summary

        return LocalIndexRun(work, timeout=timeout, name=f"lgrep-index {root.name}")

    def status(self, project_root: PathText) -> ProjectStatus:
        root = _absolute(project_root)
        return status(load_settings(root).settings, root)

    def watch(self, project_root: PathText, *, debounce_ms: int | None = None) -> WatchResult:
        raise ServerUnavailableError(
            "watching needs the lgrep daemon, and it is not in use here (--no-daemon, server.autostart "
            f"off, or it could not be started: see {self.settings.cache_dir / 'serve.log'})"
        )

    def unwatch(self, project_root: PathText) -> bool:
        # No daemon: the list it would watch again when it starts is the truth to edit.
        return unwatch_saved(self.settings.cache_dir, _absolute(project_root))

    def remove(self, project_root: PathText) -> RemoveResult:
        from lgrep_index.projects import remove_project

        return remove_project(self.settings, _absolute(project_root))

    def cancel_index(self, project_root: PathText) -> CancelResult:
        return CancelResult(cancelled=0, stopped=True)  # no run of this process is going on

    # ------------------------------------------------------------------ search side

    def search(self, request: SearchRequest) -> SearchResponse:
        request = replace(request, project_root=str(_absolute(request.project_root))).validate()
        return self._reads().search(request)

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
        root = _absolute(project_root)
        request = GetFileRequest(str(root), _relative(root, path), start_line, end_line, component, version)
        return self._reads().get_file(request.validate())

    def list_components(self, project_root: PathText) -> list[ComponentInfo]:
        return self._reads().list_components(str(_absolute(project_root)))

    def list_versions(self, project_root: PathText, component: str) -> list[Release]:
        return self._reads().list_versions(str(_absolute(project_root)), component)

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
        request = FindSymbolRequest(
            str(_absolute(project_root)), name, limit, tuple(kinds), tuple(languages), path_glob
        ).validate()
        return self._reads().find_symbol(request)

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
        request = ListFilesRequest(
            str(_absolute(project_root)), path_glob, tuple(languages), limit, component, version
        ).validate()
        return self._reads().list_files(request)

    def find_related(
        self, project_root: PathText, path: PathText, line: int, *, limit: int | None = None
    ) -> RelatedResult:
        root = _absolute(project_root)
        return self._reads().find_related(FindRelatedRequest(str(root), _relative(root, path), line, limit).validate())

    def skeleton(self, project_root: PathText, path: PathText) -> Skeleton:
        root = _absolute(project_root)
        return self._reads().skeleton(SkeletonRequest(str(root), _relative(root, path)).validate())

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
        root = _absolute(project_root)
        rel = _relative(root, path) if path else ""
        request = TraceRequest(str(root), symbol, rel, depth, direction, limit, offset, resolve_imports)
        return self._reads().trace(request.validate())


class LocalIndexRun:
    """An index run of this process (lgrep_core.api.IndexRun): the Indexer works on a thread of its
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


def _absolute(path: PathText) -> Path:
    return Path(path).expanduser().resolve()


def _relative(root: Path, path: PathText) -> str:
    """A project-relative path, as the client makes it (absolute paths must lie inside the root)."""
    from lgrep_core.errors import InvalidRequestError

    target = Path(path)
    if not target.is_absolute():
        return target.as_posix()
    try:
        return target.resolve().relative_to(root).as_posix()
    except ValueError:
        raise InvalidRequestError(f"{path} is not inside the project {root}") from None
