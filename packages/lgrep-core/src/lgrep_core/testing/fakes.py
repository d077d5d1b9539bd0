"""Deterministic stand-ins for tests: no model, no network."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence

import numpy as np

from lgrep_core.embeddings.base import Vectors
from lgrep_core.text import identifier_parts

__all__ = ["FakeEmbedder"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FakeEmbedder:
    """A hashed bag of identifier parts: texts sharing words get similar vectors, so vector search
    behaves plausibly in tests. Counts calls so tests can prove what was (not) embedded."""

    def __init__(self, dimension: int = 384, model: str = "all-MiniLM-L6-v2") -> None:
        self._dimension = dimension
        self._model = model
        self._lock = threading.Lock()
        self.embedded_texts: list[str] = []

    @property
    def provider(self) -> str:
        return "local"

    @property
    def model(self) -> str:
        return self._model

    @property
    def variant(self) -> str:
        return "int8"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.embedded_texts.extend(texts)
        out = np.zeros((len(texts), self._dimension), np.float32)
        for i, text in enumerate(texts):
            out[i] = self._vector(text)
        return out

    def embed_query(self, text: str) -> Vectors:
        return self._vector(text)

    def _vector(self, text: str) -> Vectors:
        vec = np.zeros(self._dimension, np.float32)
        for word in _WORD.findall(text):
            for part in [*identifier_parts(word), word.lower()]:
                h = int.from_bytes(hashlib.blake2b(part.encode(), digest_size=8).digest(), "little")
                vec[h % self._dimension] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0:
            vec[0] = 1.0
            return vec
        return vec / norm
