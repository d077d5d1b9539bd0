"""The embedding provider protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["EmbeddingProvider", "Vectors", "model_label"]

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns text into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def provider(self) -> str: ...  # "local", "voyage", "openai"

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed chunks for the index; returns an array of shape (len(texts), dimension).

        Raises:
            EmbeddingError: the provider failed.
        """
        ...

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query; returns shape (dimension,)."""
        ...


def model_label(embedder: EmbeddingProvider) -> str:
    """The model as an index's identity and a server's handshake name it: `all-MiniLM-L6-v2 (int8)`
    for a provider with variants of one model (their vectors differ), else the model's name."""
    variant = getattr(embedder, "variant", "")
    return f"{embedder.model} ({variant})" if variant else embedder.model
