"""Build the configured embedding provider."""

from __future__ import annotations

from pathlib import Path

from lgrep_core.config import EmbeddingSettings
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.errors import ConfigError

__all__ = ["make_embedder"]


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
    raise ConfigError(f"unknown embedding provider {settings.provider!r}")  # pragma: no cover
