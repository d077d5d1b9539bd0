"""The embedding provider protocol."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = [
    "Attempt",
    "AttemptObserver",
    "EmbeddingProvider",
    "RemoteEmbeddingProvider",
    "Vectors",
    "declared_dimension",
    "is_remote",
    "model_label",
    "token_counter",
]

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


@dataclass(frozen=True, slots=True)
class Attempt:
    """One HTTP request as it is about to leave: `request` names the request across its tries,
    `number` is the try (1, 2, ...), `texts` the indices of the call's texts it carries."""

    request: str
    number: int
    texts: tuple[int, ...]


class AttemptObserver(Protocol):
    """Told of every request a remote provider sends, each retry included: `sending` before any byte
    leaves (it must have recorded the attempt when it returns: a crash after it still leaves the
    record), and `outcome` once it is known ("ok", "http 500", "timeout", "cancelled", ...). An
    attempt with no outcome was possibly received by the provider."""

    def sending(self, attempt: Attempt) -> None: ...

    def outcome(self, attempt: Attempt, outcome: str, tokens: int | None) -> None: ...


@runtime_checkable
class RemoteEmbeddingProvider(EmbeddingProvider, Protocol):
    """A provider that sends text off this machine (Voyage, OpenAI-compatible endpoints) and is
    billed per token. The indexer embeds through `embed_documents_billed`, so it can record what
    each call cost (the spend ledger) and what left the machine (the egress log); searches call
    `embed_query`, which sends only the query text."""

    remote: bool  # always True: `is_remote` reads it

    def embed_documents_billed(
        self, texts: Sequence[str], *, attempts: AttemptObserver | None = None
    ) -> tuple[Vectors, int]:
        """`embed_documents`, and the tokens the provider billed for these texts (its API's
        reported usage, summed over the requests the call made). `attempts` hears of every request
        sent, each retry included, before it leaves and when its outcome is known.

        Raises:
            EmbeddingError: the provider failed after its retries (the message says why).
        """
        ...

    def estimate_tokens(self, texts: Sequence[str]) -> int:
        """About how many tokens these texts will be billed, without sending them (for a plan)."""
        ...


def is_remote(embedder: EmbeddingProvider) -> bool:
    """The provider sends text off this machine (and costs money)."""
    return bool(getattr(embedder, "remote", False))


def model_label(embedder: EmbeddingProvider) -> str:
    """The model as an index's identity and a server's handshake name it: `all-MiniLM-L6-v2 (int8)`
    for a provider with variants of one model (their vectors differ), else the model's name."""
    variant = getattr(embedder, "variant", "")
    return f"{embedder.model} ({variant})" if variant else embedder.model


def declared_dimension(embedder: EmbeddingProvider) -> int:
    """The dimension as configured, without asking a provider that detects it on first use (0 then):
    what a server's handshake reports, so that answering it never sends anything."""
    declared = getattr(embedder, "declared_dimension", None)
    return int(declared) if declared is not None else embedder.dimension


def token_counter(embedder: EmbeddingProvider) -> tuple[str, Callable[[Sequence[str]], list[int]]]:
    """The embedding model's own tokenizer, as (its name, texts -> token counts).

    The local model counts with its WordPiece tokenizer ([CLS] and [SEP] not counted); a cloud
    provider with cl100k_base, which is OpenAI's embedding models' own and an estimate for others
    (Voyage's tokenizer does not ship offline)."""
    count = getattr(embedder, "count_tokens", None)
    if count is not None and not is_remote(embedder):
        local: Callable[[Sequence[str]], list[int]] = count
        return f"{embedder.model} WordPiece", lambda texts: [max(0, n - 2) for n in local(list(texts))]
    from lgrep_core.embeddings.tokens import count_tokens

    exact = embedder.model.startswith("text-embedding-3")
    return ("cl100k_base" if exact else f"cl100k_base (estimate for {embedder.model})"), count_tokens
