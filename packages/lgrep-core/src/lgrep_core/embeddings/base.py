"""The embedding provider protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["EmbeddingProvider", "Vectors"]

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
