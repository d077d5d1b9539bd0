"""Build the configured embedding provider."""

from __future__ import annotations

import sys
from pathlib import Path

from lgrep_core.config import EmbeddingSettings
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.embeddings.extra import provider_factory
from lgrep_core.errors import ConfigError

__all__ = ["make_embedder", "models_loaded"]


def make_embedder(settings: EmbeddingSettings, cache_dir: Path) -> EmbeddingProvider:
    """Raises:
    ConfigError: the provider/model pair is not supported.
    """
    added = provider_factory(settings.provider)
    if added is not None:  # registered at run time (lgrep_core.embeddings.extra)
        return added(settings, cache_dir)
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
    raise ConfigError(f"unknown embedding provider {settings.provider!r}")  # pragma: no cover


def models_loaded() -> int:
    """Embedding models in this process's memory now (open inference sessions of every provider made
    here): what a server reports, so that clients sharing it can see they share one model."""
    local = sys.modules.get("lgrep_core.embeddings.local")  # never imported: no provider, no model
    return local.loaded_count() if local is not None else 0
