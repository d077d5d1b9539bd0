"""The search side of a server: one snapshot and searcher per project, shared by every client.

A server process holds one embedding model (its process settings) and opens projects on demand, as
clients name them. Each request is answered with the project's own settings (its `.lgrep.yaml` may
set `search.*`); a project indexed with another embedding model than the one this process serves is
a clear error, never a silent mix of vectors. Snapshots of projects nobody asked about for a while
are dropped (`evict`), so memory follows what agents are working on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lgrep_core.app.scope import Purpose, Scope, project_for, scoped_glob
from lgrep_core.domain.errors import IndexMismatchError, InvalidRequestError, NotFoundError
from lgrep_core.domain.models import (
    ComponentInfo,
    FileList,
    FileSlice,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    ListComponentsRequest,
    ListFilesRequest,
    ListVersionsRequest,
    RelatedResult,
    Release,
    SearchRequest,
    SearchResponse,
    Skeleton,
    SkeletonRequest,
    SymbolMatch,
    TraceRequest,
    TraceResult,
)
from lgrep_core.domain.pathnames import existing_project_root, request_root
from lgrep_core.domain.structure import Outliner
from lgrep_core.embeddings.base import EmbeddingProvider, model_label, token_counter
from lgrep_core.embeddings.registry import Embedders, as_embedders
from lgrep_core.settings.config import LgrepSettings, SearchSettings, load_settings
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.storage.schema import IndexIdentity
from lgrep_core.storage.versions import VersionStore, store_location

from . import reads, structure
from .corpus import Corpus
from .pathfilter import relative_to_root
from .releases import ReleaseIndex
from .searcher import DEFAULT_LIMIT, Searcher
from .skeleton import render_skeleton
from .snapshot import Snapshots

__all__ = ["ProjectSearchers", "ResidentProject", "project_root"]

log = logging.getLogger(__name__)


def project_root(text: str) -> Path:
    """A project root as a client names it (lgrep_core.domain.pathnames.existing_project_root)."""
    return existing_project_root(text)


@dataclass(frozen=True, slots=True)
class ResidentProject:
    """A project whose snapshot a server holds in memory."""

    root: Path
    chunks: int
    estimated_bytes: int
    idle_s: float


@dataclass(slots=True)
class _Project:
    snapshots: Snapshots
    searcher: Searcher
    settings: LgrepSettings
    settings_key: tuple[int, int] | None
    notes: tuple[str, ...] = ()  # what every answer says about this index (built by an older chunker)


# What this lgrep would build an index with, for a project's settings and embedding model
# (lgrep_index.pipeline.identity_for, handed over by the process that has both).
Identity = Callable[[LgrepSettings, EmbeddingProvider], IndexIdentity]


class ProjectSearchers:
    """Searches any project under one process's settings and embedding model. Thread-safe."""

    def __init__(
        self,
        settings: LgrepSettings,
        embedder: EmbeddingProvider | Embedders,
        *,
        background: bool = True,
        outliner: Outliner | None = None,
        identity: Identity | None = None,
    ) -> None:
        """`outliner` parses a file for its skeleton (lgrep_index.outline.outline_file, handed over
        by the process that has both); without one, skeletons are unavailable. `identity` says what
        an index built now would be (lgrep_index.pipeline.identity_for): an index built otherwise is
        an error when its vectors cannot be compared with the query's, else answered with a note."""
        self.settings = settings
        self.outliner = outliner
        self.identity = identity
        # One provider, or one per project (a project opted out of a cloud provider uses the local model).
        self.embedders = as_embedders(embedder)
        self.embedder = self.embedders.primary
        self.background = background
        # Called with a project's root before a search of it (the daemon: lgrep_index.freshness);
        # True when it changed the index, which the search then reads at its newest version.
        self.freshen: Callable[[Path], bool] | None = None
        self._projects: dict[Path, _Project] = {}
        self._releases: dict[str, ReleaseIndex] = {}
        self._release_settings: dict[Path, tuple[tuple[int, int] | None, SearchSettings]] = {}
        self._lock = threading.Lock()

    def search(self, request: SearchRequest) -> SearchResponse:
        """Answer one request with its project's settings filling what the request leaves unset.

        Raises:
            InvalidRequestError: the request is malformed.
            NotFoundError: the project or its index does not exist.
            IndexMismatchError: the index was built with another embedding model.
            StorageError: the index cannot be read.
        """
        request.validate()
        if request.component:
            root = self._release_root(request.project_root)
            search = self._release_search_settings(root)
            return self.releases(root).search(
                replace(
                    request,
                    project_root=str(root),
                    limit=request.limit if request.limit is not None else search.limit,
                    bm25_weight=request.bm25_weight if request.bm25_weight is not None else search.bm25_weight,
                )
            )
        scope = self.resolve(request.project_root)
        root = scope.project
        project = self._project(root)
        if self.freshen is not None and self.freshen(root) and project.snapshots.loaded is not None:
            project.snapshots.refresh()
        search = project.settings.search
        request = replace(
            request,
            project_root=str(root),
            path_glob=_glob(scope, request.path_glob),
            limit=request.limit if request.limit is not None else search.limit,
            bm25_weight=request.bm25_weight if request.bm25_weight is not None else search.bm25_weight,
        )
        response = project.searcher.search(request)
        return replace(
            response, project_root=str(root), scope=scope.within or "", notes=(*response.notes, *project.notes)
        )

    def resolve(self, text: str) -> Scope:
        """The project a request's root names (lgrep_core.app.scope.project_for): a folder inside an
        indexed project is that project, kept to the folder.

        Raises:
            InvalidRequestError: not an absolute path.
            NotFoundError: not an existing folder.
        """
        root = project_root(text)
        with self._lock:
            if root in self._projects:
                return Scope(root)
        return project_for(self.settings.cache_dir, root, Purpose.SEARCH)

    def _inside(self, scope: Scope, path: str) -> str:
        """A path relative to the folder a request named, relative to its project."""
        return f"{scope.within}/{path}" if scope.within and path else path

    def get_file(self, request: GetFileRequest) -> FileSlice:
        """Lines of an indexed file (reads.get_file), or of a file at a released version."""
        request.validate()
        if request.component:
            return self.releases(self._release_root(request.project_root)).get_file(request)
        scope = self.resolve(request.project_root)
        project = self._project(scope.project)
        request = replace(request, project_root=str(scope.project), path=self._inside(scope, request.path))
        return reads.get_file(project.snapshots.reader, project.snapshots.current(), request)

    def find_symbol(self, request: FindSymbolRequest) -> list[SymbolMatch]:
        """Definitions by name (reads.find_symbol); the project's search.limit when the request sets none."""
        request.validate()
        scope = self.resolve(request.project_root)
        project = self._project(scope.project)
        return reads.find_symbol(
            project.snapshots.current(),
            request.name,
            limit=request.limit or project.settings.search.limit or DEFAULT_LIMIT,
            kinds=request.kinds,
            languages=request.languages,
            path_glob=_glob(scope, request.path_glob),
        )

    def list_files(self, request: ListFilesRequest) -> FileList:
        """The files of a project's index (reads.list_files), or of a released version."""
        request.validate()
        if request.component:
            return self.releases(self._release_root(request.project_root)).list_files(request)
        scope = self.resolve(request.project_root)
        project = self._project(scope.project)
        return reads.list_files(
            project.snapshots.current(),
            path_glob=_glob(scope, request.path_glob),
            languages=request.languages,
            limit=request.limit,
        )

    def find_related(self, request: FindRelatedRequest) -> RelatedResult:
        """Code related to a place (reads.find_related)."""
        request.validate()
        scope = self.resolve(request.project_root)
        project = self._project(scope.project)
        limit = request.limit or project.settings.search.limit or DEFAULT_LIMIT
        corpus = project.snapshots.current()
        path = self._inside(scope, request.path)
        return reads.find_related(corpus, path, request.line, limit=limit, graph=_graph_or_none(corpus))

    def skeleton(self, request: SkeletonRequest) -> Skeleton:
        """A file's skeleton, from the file as it is on disk now (lgrep_search.skeleton).

        Raises:
            NotFoundError: the file is not indexed or is gone.
            InvalidRequestError: lgrep knows no structure for the file's language, or this process
                has no parser (a search-only reader).
        """
        request.validate()
        if self.outliner is None:
            raise InvalidRequestError("this search reader cannot parse files; ask the lgrep daemon (`lgrep serve`)")
        scope = self.resolve(request.project_root)
        root = scope.project
        project = self._project(root)
        corpus = project.snapshots.current()
        request = replace(request, project_root=str(root), path=self._inside(scope, request.path))
        text = reads.indexed_text(root, corpus, request.path)
        outline = self.outliner(request.path, text)
        if outline is None:
            language = reads.language_of(corpus, request.path)
            raise InvalidRequestError(
                f"lgrep knows no structure for {request.path} ({language or 'unknown language'}); "
                "read it with lgrep_get_file"
            )
        content, definitions = render_skeleton(request.path, text, outline)
        name, count = token_counter(self.embedders.for_project(root))
        tokens, file_tokens = count([content, text])
        return Skeleton(
            path=request.path,
            language=outline.language,
            content=content,
            definitions=definitions,
            total_lines=len(text.splitlines()),
            tokens=tokens,
            file_tokens=file_tokens,
            tokens_saved=max(0, file_tokens - tokens),
            tokenizer=name,
        )

    def trace(self, request: TraceRequest) -> TraceResult:
        """Callers and callees of a symbol (lgrep_search.structure.trace).

        Raises NotFoundError when nothing of that name is defined, or the index has no structure yet."""
        request.validate()
        scope = self.resolve(request.project_root)
        project = self._project(scope.project)
        corpus = project.snapshots.current()
        path = self._inside(scope, relative_to_root(request.path, scope.folder)) if request.path else ""
        return structure.trace(corpus, structure.graph_of(corpus), replace(request, path=path))

    def list_components(self, request: ListComponentsRequest) -> list[ComponentInfo]:
        """The components of a repository's released versions."""
        request.validate()
        return self.releases(self._release_root(request.project_root)).components()

    def list_versions(self, request: ListVersionsRequest) -> list[Release]:
        """A component's versions, newest first."""
        request.validate()
        return self.releases(self._release_root(request.project_root)).releases(request.component)

    def _release_search_settings(self, root: Path) -> SearchSettings:
        """A repository's search settings for release queries: its own file's, read again only when
        that file changes (a reader without a checkout uses the process settings)."""
        if not root.is_dir():
            return self.settings.search
        key = _settings_key(root)
        with self._lock:
            cached = self._release_settings.get(root)
        if cached is not None and cached[0] == key:
            return cached[1]
        search = load_settings(root).settings.search
        with self._lock:
            self._release_settings[root] = (key, search)
        return search

    def _location(self, root: Path) -> str:
        return store_location(self.settings.cache_dir, self.settings.versions.store, root)

    def _release_root(self, text: str) -> Path:
        """The repository a release request names. With versions on object storage a reader needs no
        checkout: the path only names the repository (its folder name picks the store's folder)."""
        path = request_root(text)
        return project_for(
            self.settings.cache_dir, path, Purpose.RELEASES, versions_store=self.settings.versions.store
        ).project

    def releases(self, root: Path) -> ReleaseIndex:
        """The versions index of a repository (opened on first use, shared by every request). It
        is opened outside the lock: on object storage that takes round trips other requests must
        not wait for."""
        location = self._location(root)
        with self._lock:
            index = self._releases.get(location)
        if index is not None:
            return index
        store = VersionStore(location, storage_options=self.settings.versions.storage_options, label=str(root))
        store.open()  # NotFoundError when `lgrep index --tags` never ran
        identity = store.identity()
        embedder = self.embedders.for_project(root)
        if identity.model != model_label(embedder) or identity.dimension != embedder.dimension:
            raise IndexMismatchError(
                f"the versions of {root} were indexed with {identity.model} ({identity.dimension} d), "
                f"this server embeds with {model_label(embedder)} ({embedder.dimension} d): run "
                f"`lgrep index --tags --force {root}` with the server's model"
            )
        with self._lock:  # two first requests at once: the first to get here wins, the other's is dropped
            return self._releases.setdefault(
                location, ReleaseIndex(store, embedder, cached_versions=self.settings.versions.cached_versions)
            )

    def snapshots(self, root: Path) -> Snapshots:
        """The snapshots of a project (opened on first use), for the other read calls."""
        return self._project(root).snapshots

    def _project(self, root: Path) -> _Project:
        key = _settings_key(root)
        with self._lock:
            project = self._projects.get(root)
            if project is not None and project.settings_key == key:
                return project
        # A project's settings are read when it is first opened and again when its file changes.
        settings = load_settings(root).settings
        reader = ProjectReader(self.settings.cache_dir, root)
        embedder = self.embedders.for_project(root)
        notes = self._check_identity(reader, settings, embedder)
        with self._lock:
            project = self._projects.get(root)
            if project is None:
                snapshots = Snapshots(reader, background=self.background)
                project = _Project(snapshots, Searcher(snapshots, embedder), settings, key, notes)
                self._projects[root] = project
            else:
                project.settings, project.settings_key, project.notes = settings, key, notes
            return project

    def _check_identity(
        self, reader: ProjectReader, settings: LgrepSettings, embedder: EmbeddingProvider
    ) -> tuple[str, ...]:
        """The one identity check of every read (the daemon's and a command's in this process): an
        index whose vectors another model made is an error; one chunked by another lgrep or other
        chunking settings is answered, with a note saying how to bring it up to date."""
        stored = reader.meta(reader.version()).get("identity") or {}
        self._check_model(reader, stored, embedder)
        if self.identity is None:
            return ()
        expected = self.identity(settings, embedder)
        differs = [
            f"{what} {stored.get(key)} (this lgrep: {getattr(expected, key)})"
            for key, what in (("chunker_version", "chunker"), ("chunking", "chunking"), ("schema_version", "schema"))
            if str(stored.get(key)) != str(getattr(expected, key))
        ]
        if not differs:
            return ()
        return (
            f"the index of {reader.root} was built with {', '.join(differs)}: `lgrep index {reader.root}` "
            "brings it up to date and keeps its vectors",
        )

    def _check_model(self, reader: ProjectReader, identity: dict[str, Any], embedder: EmbeddingProvider) -> None:
        model = str(identity.get("model", ""))
        served = model_label(embedder)
        same = (
            identity.get("provider") == embedder.provider
            and model == served
            and int(identity.get("dimension") or 0) == embedder.dimension
        )
        if not same:
            raise IndexMismatchError(
                f"the index of {reader.root} was built with {identity.get('provider')}/{model} "
                f"({identity.get('dimension')} d), but this server embeds queries with "
                f"{embedder.provider}/{served} ({embedder.dimension} d): re-index the project with "
                f"this server's model (`lgrep index --force {reader.root}`) or serve it with the model it was "
                "built with"
            )

    def refresh(self, root: Path) -> None:
        """A writer in this process changed `root`'s index: refresh its snapshot now (in the
        background), so the next query already sees the change."""
        with self._lock:
            project = self._projects.get(root)
        if project is not None and project.snapshots.loaded is not None:
            project.snapshots.refresh_soon()

    def poll(self) -> None:
        """Start a background refresh of every held snapshot whose index moved on (a writer in
        another process committed). Costs two small file reads per project."""
        with self._lock:
            projects = list(self._projects.values())
        for project in projects:
            if project.snapshots.loaded is not None:
                project.snapshots.refresh_soon()

    # ------------------------------------------------------------------------------ memory

    def resident(self) -> list[ResidentProject]:
        now = time.monotonic()
        out: list[ResidentProject] = []
        with self._lock:
            projects = list(self._projects.items())
        for root, project in projects:
            corpus = project.snapshots.loaded
            if corpus is not None:
                out.append(
                    ResidentProject(root, len(corpus), corpus.estimated_bytes(), now - project.snapshots.last_used)
                )
        return out

    def evict(self) -> list[Path]:
        """Drop snapshots idle longer than `server.snapshot_idle_s`, then the least recently used
        ones while the rest are over `server.snapshot_budget_mb`. Returns the roots dropped."""
        server = self.settings.server
        budget = server.snapshot_budget_mb * 1024 * 1024
        resident = sorted(self.resident(), key=lambda p: -p.idle_s)  # idlest first
        total = sum(p.estimated_bytes for p in resident)
        dropped: list[Path] = []
        for p in resident:
            if p.idle_s > server.snapshot_idle_s or (total > budget and len(resident) - len(dropped) > 1):
                self.drop(p.root)
                total -= p.estimated_bytes
                dropped.append(p.root)
        for root in dropped:
            log.info("dropped the snapshot of %s from memory", root)
        # Release snapshots (at most versions.cached_versions per repository) go after the same idle time.
        with self._lock:
            releases = list(self._releases.values())
        for index in releases:
            if time.monotonic() - index.last_used > server.snapshot_idle_s:
                index.drop()
        return dropped

    def drop(self, root: Path) -> bool:
        with self._lock:
            project = self._projects.pop(root, None)
        if project is None:
            return False
        project.snapshots.close()
        return True

    def close(self) -> None:
        with self._lock:
            roots = list(self._projects)
            releases = list(self._releases.values())
            self._releases.clear()
        for root in roots:
            self.drop(root)
        for index in releases:
            index.drop()


def _glob(scope: Scope, path_glob: str | None) -> str | None:
    """A request's path filter (relative to the folder it named, or absolute inside it) as a filter
    over the project's paths, kept to that folder."""
    glob = relative_to_root(path_glob, scope.folder) if path_glob else None
    return scoped_glob(scope.within, glob or None)


def _graph_or_none(corpus: Corpus) -> structure.CodeGraph | None:
    try:
        return structure.graph_of(corpus)
    except NotFoundError:  # an index without structure: related code by meaning and names alone
        return None


def _settings_key(root: Path) -> tuple[int, int] | None:
    try:
        st = (root / ".lgrep.yaml").lstat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
