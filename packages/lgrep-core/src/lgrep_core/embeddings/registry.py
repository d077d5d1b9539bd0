"""Build the configured embedding provider."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from lgrep_core.domain.errors import ConfigError
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.settings.config import EmbeddingSettings

__all__ = ["Embedders", "as_embedders", "make_embedder", "models_loaded"]


def make_embedder(settings: EmbeddingSettings, cache_dir: Path) -> EmbeddingProvider:
    """Raises:
    ConfigError: the provider/model pair is not supported.
    """
    if settings.provider == "local":
        if settings.model != "all-MiniLM-L6-v2" or settings.dimensions != 384:
            raise ConfigError(
                f"the local provider runs all-MiniLM-L6-v2 (384 dimensions); config asks for "
                f"{settings.model} ({settings.dimensions}): fix embedding.model / embedding.dimensions"
            )
        from lgrep_core.embeddings.local import LocalMiniLMProvider

        return LocalMiniLMProvider(
            cache_dir / "models",
            quantized=settings.quantized,
            threads=settings.threads,
            batch_tokens=settings.batch_tokens,
        )
    if settings.provider == "voyage":
        from lgrep_core.embeddings.voyage import make_voyage

        return make_voyage(settings)
    if settings.provider == "openai":
        from lgrep_core.embeddings.openai_compat import make_openai

        return make_openai(settings)
    raise ConfigError(f"unknown embedding provider {settings.provider!r}")  # pragma: no cover


def models_loaded() -> int:
    """Embedding models in this process's memory now (open inference sessions of every provider made
    here): what a server reports, so that clients sharing it can see they share one model."""
    local = sys.modules.get("lgrep_core.embeddings.local")  # never imported: no provider, no model
    return local.loaded_count() if local is not None else 0


class Embedders:
    """The embedding providers of one process, by project: the configured provider, and the local
    model for the projects the user opted out of a cloud provider (`embedding.local_projects`, or not
    under `embedding.cloud_projects`). Each is built on first use and shared; thread-safe."""

    def __init__(self, settings: EmbeddingSettings | None, cache_dir: Path | None, primary: EmbeddingProvider) -> None:
        self.settings = settings
        self.cache_dir = cache_dir
        self.primary = primary
        self._lock = threading.Lock()
        self._others: dict[str, EmbeddingProvider] = {}

    @classmethod
    def fixed(cls, embedder: EmbeddingProvider) -> Embedders:
        """One provider for every project."""
        return cls(None, None, embedder)

    def for_project(self, root: Path) -> EmbeddingProvider:
        """Raises:
        ConfigError: the provider a project needs cannot be built.
        """
        if self.settings is None or self.cache_dir is None:
            return self.primary
        chosen = self.settings.for_project(root)
        if chosen is self.settings:
            return self.primary
        key = chosen.model_dump_json()
        with self._lock:
            embedder = self._others.get(key)
            if embedder is None:
                embedder = self._others[key] = make_embedder(chosen, self.cache_dir)
            return embedder


def as_embedders(value: EmbeddingProvider | Embedders) -> Embedders:
    return value if isinstance(value, Embedders) else Embedders.fixed(value)
