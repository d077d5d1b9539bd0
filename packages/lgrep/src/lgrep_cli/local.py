"""Commands done in this process, when no daemon serves them (none can be started, autostart is off,
or --no-daemon): the same use cases the daemon runs, imported only here because they are heavy
(LanceDB, the model runtime)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from lgrep_core.config import LgrepSettings
from lgrep_core.memory import limit_heap_arenas
from lgrep_core.models import (
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
    ProjectState,
    ProjectStatus,
    RelatedResult,
    Release,
    SearchRequest,
    SearchResponse,
    Skeleton,
    SkeletonRequest,
    SymbolMatch,
    TagsSummary,
    TraceDirection,
    TraceRequest,
    TraceResult,
)

if TYPE_CHECKING:
    from lgrep_index.plan import IndexPlan

__all__ = [
    "Reads",
    "index",
    "index_tags",
    "plan",
    "remove",
    "search",
    "spawn_vector_filler",
    "status",
    "unwatch_saved",
]

# How long a search that has to build the index first waits for another process building it.
SEARCH_BUILD_WAIT_S = 3600.0


def index(
    settings: LgrepSettings,
    root: Path,
    *,
    force: bool = False,
    wait_vectors: bool = True,
    lock_timeout_s: float | None = None,
    progress: Callable[[IndexProgress], None] | None = None,
) -> IndexSummary:
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_index.pipeline import Indexer

    limit_heap_arenas()  # before LanceDB's and the model's threads: see lgrep_core.memory
    embedder = make_embedder(settings.embedding.for_project(root), settings.cache_dir)
    return Indexer(settings, root, embedder, progress=progress).run(
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


def search(
    settings: LgrepSettings, root: Path, request: SearchRequest, *, notice: Callable[[str], None]
) -> SearchResponse:
    """Search in this process, building the index first if there is none (`notice` says so)."""
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.storage.reader import ProjectReader
    from lgrep_core.storage.store import ProjectStore
    from lgrep_index.pipeline import identity_for
    from lgrep_search.searcher import Searcher
    from lgrep_search.snapshot import Snapshots

    limit_heap_arenas()
    store = ProjectStore(settings.cache_dir, root)
    state = store.state()
    if state is ProjectState.BUILDING:
        store.open()  # raises the error that says who is building it
    if state is not ProjectState.READY:
        why = {
            ProjectState.INTERRUPTED: "its first index did not finish; finishing it first",
            ProjectState.OUTDATED: "its index was written by an older lgrep; rebuilding it first",
        }.get(state, "has no index yet; building it first")
        notice(f"{root} {why}")
        # Another search may have started the same build a moment ago: queue behind it (its run
        # publishes the index; this one then only checks for changes) instead of failing.
        index(settings, root, lock_timeout_s=SEARCH_BUILD_WAIT_S)
    embedder = make_embedder(settings.embedding.for_project(root), settings.cache_dir)
    store.check_identity(identity_for(settings, embedder))
    searcher = Searcher(Snapshots(ProjectReader(settings.cache_dir, root), background=False), embedder)
    return searcher.search(request)


def status(settings: LgrepSettings, root: Path) -> ProjectStatus:
    from lgrep_index.projects import project_status

    return project_status(settings, root)


def remove(settings: LgrepSettings, root: Path) -> bool:
    from lgrep_index.projects import remove_project

    return remove_project(settings, root).removed


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


class Reads:
    """get_file, find_symbol and find_related of one project in this process, with the same
    signatures as the daemon's client (so a command uses either)."""

    def __init__(self, settings: LgrepSettings, root: Path) -> None:
        from lgrep_core.embeddings.registry import make_embedder
        from lgrep_index.outline import outline_file
        from lgrep_search.projects import ProjectSearchers

        limit_heap_arenas()
        self._searchers = ProjectSearchers(
            settings,
            make_embedder(settings.embedding.for_project(root), settings.cache_dir),
            background=False,
            outliner=outline_file,
        )

    def __enter__(self) -> Reads:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def get_file(
        self,
        root: Path,
        path: Path | str,
        start_line: int = 0,
        end_line: int = 0,
        *,
        component: str = "",
        version: str = "",
    ) -> FileSlice:
        request = GetFileRequest(str(root), _relative(root, path), start_line, end_line, component, version)
        return self._searchers.get_file(request)

    def search(self, request: SearchRequest) -> SearchResponse:
        return self._searchers.search(request)

    def list_components(self, root: Path) -> list[ComponentInfo]:
        return self._searchers.list_components(str(root))

    def list_versions(self, root: Path, component: str) -> list[Release]:
        return self._searchers.list_versions(str(root), component)

    def find_symbol(
        self, root: Path, name: str, *, kinds: tuple[ChunkKind, ...] = (), limit: int | None = None
    ) -> list[SymbolMatch]:
        return self._searchers.find_symbol(FindSymbolRequest(str(root), name, limit, kinds))

    def list_files(
        self,
        root: Path,
        *,
        path_glob: str | None = None,
        languages: tuple[str, ...] = (),
        limit: int | None = None,
        component: str = "",
        version: str = "",
    ) -> FileList:
        return self._searchers.list_files(ListFilesRequest(str(root), path_glob, languages, limit, component, version))

    def find_related(self, root: Path, path: Path | str, line: int, *, limit: int | None = None) -> RelatedResult:
        return self._searchers.find_related(FindRelatedRequest(str(root), _relative(root, path), line, limit))

    def skeleton(self, root: Path, path: Path | str) -> Skeleton:
        return self._searchers.skeleton(SkeletonRequest(str(root), _relative(root, path)))

    def trace(
        self,
        root: Path,
        symbol: str,
        *,
        path: Path | str = "",
        depth: int = 1,
        direction: TraceDirection = TraceDirection.BOTH,
        limit: int | None = None,
        offset: int = 0,
        resolve_imports: bool = True,
    ) -> TraceResult:
        rel = _relative(root, path) if path else ""
        request = TraceRequest(str(root), symbol, rel, depth, direction, limit, offset, resolve_imports)
        return self._searchers.trace(request)


def _relative(root: Path, path: Path | str) -> str:
    """A project-relative path, as the client makes it (absolute paths must lie inside the root)."""
    from lgrep_core.errors import InvalidRequestError

    target = Path(path)
    if not target.is_absolute():
        return target.as_posix()
    try:
        return target.resolve().relative_to(root).as_posix()
    except ValueError:
        raise InvalidRequestError(f"{path} is not inside the project {root}") from None
