"""Deterministic stand-ins for tests: no model, no network."""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lgrep_core.domain.models import FileSlice, GetFileRequest
from lgrep_core.domain.text import identifier_parts
from lgrep_core.embeddings.base import Attempt, AttemptObserver, Vectors

__all__ = ["DiskEngine", "FakeEmbedder", "FakeRemoteEmbedder"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BILLED_TOKEN = re.compile(r"\w+|[^\w\s]")


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


class FakeRemoteEmbedder:
    """A cloud provider without the cloud: implements RemoteEmbeddingProvider deterministically.

    It bills one token per word or punctuation mark (`billed_tokens`), while its `estimate_tokens`
    guesses from length (a character count / 4, as a plan would without the provider's tokenizer),
    so plans and bills differ as they do with a real provider. Every text it receives is kept in
    `received` as ("document" | "query", text). (Through real processes, tests use the stand-in
    servers of lgrep_core.testing.standins instead.)
    """

    remote = True

    def __init__(
        self,
        model: str = "voyage-code-3",
        dimension: int = 64,
        *,
        provider: str = "fake-remote",
    ) -> None:
        self._vectors = FakeEmbedder(dimension, model)
        self._provider = provider
        self._model = model
        self._dimension = dimension
        self._lock = threading.Lock()
        self.received: list[tuple[str, str]] = []
        self.requests = 0
        self.tokens_billed = 0

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    @staticmethod
    def billed_tokens(text: str) -> int:
        return len(_BILLED_TOKEN.findall(text))

    def estimate_tokens(self, texts: Sequence[str]) -> int:
        return sum(math.ceil(len(t) / 4) for t in texts)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.embed_documents_billed(texts)[0]

    def embed_documents_billed(
        self, texts: Sequence[str], *, attempts: AttemptObserver | None = None
    ) -> tuple[Vectors, int]:
        attempt = Attempt(f"fake-{self.requests + 1}", 1, tuple(range(len(texts))))
        if attempts is not None:
            attempts.sending(attempt)
        self._receive("document", texts)
        tokens = sum(self.billed_tokens(t) for t in texts)
        with self._lock:
            self.requests += 1
            self.tokens_billed += tokens
        if attempts is not None:
            attempts.outcome(attempt, "ok", tokens)
        return self._vectors.embed_documents(texts), tokens

    def embed_query(self, text: str) -> Vectors:
        self._receive("query", [text])
        return self._vectors.embed_query(text)

    def _receive(self, kind: str, texts: Sequence[str]) -> None:
        with self._lock:
            self.received.extend((kind, t) for t in texts)


class DiskEngine:
    """The one engine call `lgrep_get_file` makes, answered from disk with no index: a file's lines as
    they are now (for tests of what the MCP server does around a call, such as receipts)."""

    def call(self, request: GetFileRequest) -> FileSlice:
        assert isinstance(request, GetFileRequest), request
        text = (Path(request.project_root) / request.path).read_text()
        lines = len(text.splitlines())
        return FileSlice(request.path, "python", text, 1, lines, lines)

    def close(self) -> None:
        return None
