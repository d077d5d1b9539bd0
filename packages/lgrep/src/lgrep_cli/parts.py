"""The parts lgrep's engines are made of, assembled in one place for both engines of this package: the
daemon (`daemon.serve_both`) and the in-process engine (`local.LocalEngine`, with the release and
planning runs only this process makes). Each part is built from the settings it is given: a command's
settings are read once (`lgrep_core.settings.config.load_settings`), and a project's own file
(`.lgrep.yaml`) only where a part works on that one project.

Heavy imports (LanceDB, the model runtime, tree-sitter) happen inside the functions: the shells
import this module only when they run lgrep themselves."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lgrep_core.settings.config import LgrepSettings

if TYPE_CHECKING:
    import threading

    from lgrep_core.domain.models import IndexProgress
    from lgrep_core.embeddings.base import EmbeddingProvider
    from lgrep_core.embeddings.registry import Embedders
    from lgrep_index.pipeline import Indexer
    from lgrep_index.tags import TagIndexer
    from lgrep_search.projects import ProjectSearchers

__all__ = ["embedder", "embedders", "indexer", "searchers", "tag_indexer"]


def embedder(settings: LgrepSettings, root: Path | None = None) -> EmbeddingProvider:
    """The embedding provider for the project at `root` (its `.lgrep.yaml` may opt out of a cloud
    provider), or, without one, the provider a server shares among its projects."""
    from lgrep_core.embeddings.registry import make_embedder

    config = settings.embedding if root is None else settings.embedding.for_project(root)
    return make_embedder(config, settings.cache_dir)


def embedders(settings: LgrepSettings, shared: EmbeddingProvider) -> Embedders:
    """The providers of a process that serves several projects: `shared` for every project that
    keeps the configured provider, the local model for those that opt out of a cloud one."""
    from lgrep_core.embeddings.registry import Embedders

    return Embedders(settings.embedding, settings.cache_dir, shared)


def searchers(settings: LgrepSettings, providers: Embedders, **options: Any) -> ProjectSearchers:
    """The readers of every project (one snapshot a project in use), with skeletons from the index's
    outliner; `options` as lgrep_search.projects.ProjectSearchers takes them (`background`,
    `identity`)."""
    from lgrep_index.outline import outline_file
    from lgrep_search.projects import ProjectSearchers

    return ProjectSearchers(settings, providers, outliner=outline_file, **options)


def indexer(
    settings: LgrepSettings,
    root: Path,
    *,
    progress: Callable[[IndexProgress], None] | None = None,
    cancel: threading.Event | None = None,
    seed: bool = False,
) -> Indexer:
    """One index run of the project at `root`, with its provider (`seed`: ask the team store whatever
    the run finds, as `lgrep seed` does)."""
    from lgrep_index.pipeline import Indexer

    return Indexer(
        settings, root, embedder(settings, root), progress=progress, cancel=cancel, seed="always" if seed else "auto"
    )


def tag_indexer(settings: LgrepSettings, root: Path, **options: Any) -> TagIndexer:
    """One run over the repository's tags into its versions index (local, or `versions.store`);
    `options` as lgrep_index.tags.TagIndexer takes them."""
    from lgrep_core.storage.versions import VersionStore, store_location
    from lgrep_index.tags import TagIndexer

    location = store_location(settings.cache_dir, settings.versions.store, root)
    store = VersionStore(location, storage_options=settings.versions.storage_options, label=str(root))
    return TagIndexer(settings, root, embedder(settings, root), store, **options)
