"""Embedding providers added at run time under a name of their own.

The built-in providers are chosen in `registry.make_embedder`. This is the one other way in: a
factory registered here under a name that `embedding.provider` may then take. Only
`lgrep_core.testing.remote` registers one (`fake-remote`, a deterministic stand-in for a cloud
provider), and only when an entry point is started with `LGREP_TESTING_PROVIDERS=1` in its
environment (`lgrep_core.cli_support.run_command`), so tests drive the real CLI and daemon with it.
A repository's `.lgrep.yaml` cannot reach it: it may not set `embedding.*` at all (config.PROJECT_KEYS),
and nothing registers a name unless the user's own environment says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lgrep_core.embeddings.base import EmbeddingProvider

__all__ = ["ProviderFactory", "provider_factory", "register_provider"]

# (EmbeddingSettings, cache dir) -> provider
ProviderFactory = Callable[[Any, Path], "EmbeddingProvider"]

_PROVIDERS: dict[str, ProviderFactory] = {}


def register_provider(name: str, factory: ProviderFactory) -> None:
    _PROVIDERS[name] = factory


def provider_factory(name: str) -> ProviderFactory | None:
    return _PROVIDERS.get(name)
