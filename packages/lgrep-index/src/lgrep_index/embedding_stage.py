"""The embedding stage both indexers run after their chunks are stored: the working tree's
(`pipeline.Indexer`, phase 2) and the tags' (`tags.TagIndexer`). Texts go in batches sized under the
memory budget (`MemoryGovernor`), to the local model or through a cloud provider's books
(`RemoteAccounts`: egress scan, spend ledger, egress log); the caller stores what comes back.

    stage = EmbeddingStage(settings, root, project_dir, embedder, dimension=identity.dimension)
    for batch in stage.batches(items):       # (key, path, embedding text)
        done = stage.embed(batch)            # the keys that got vectors, the vectors, tokens billed
        store.add_vectors(done.keys, done.vectors)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lgrep_core.domain.errors import EmbeddingError, IndexingError
from lgrep_core.embeddings.base import EmbeddingProvider, RemoteEmbeddingProvider, is_remote, model_label
from lgrep_core.embeddings.cloud import EmbeddingIncomplete
from lgrep_core.runtime.memory import rss_bytes
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.spend import SpendLedger, crossed_thresholds, format_usd, price_table
from lgrep_core.storage.store import release_free_memory

from lgrep_index.egress import EgressLog, Outgoing, apportion, outgoing

__all__ = ["Embedded", "EmbeddingStage", "MemoryGovernor", "RemoteAccounts", "TextBatch", "embed_texts"]

log = logging.getLogger("lgrep_index.pipeline")  # the name these messages always had


@dataclass(frozen=True, slots=True)
class TextBatch:
    """Embedding texts with their keys and paths, in the order given. `full`: it holds as many
    chunks as the memory budget allows per commit (the last of a run may hold fewer)."""

    keys: list[str]
    paths: list[str]
    texts: list[str]
    full: bool


@dataclass(frozen=True, slots=True)
class Embedded:
    """What one batch gave: the keys that got vectors (all of them, locally; with a cloud provider
    those it sent and got back), their vectors, the tokens billed, and the provider's error when only
    part of the batch arrived (what arrived is still here: it was paid for)."""

    keys: list[str]
    vectors: np.ndarray
    tokens_billed: int
    failure: EmbeddingError | None


class EmbeddingStage:
    """Texts to vectors for one index: its embedder, its cloud books (when the provider is remote)
    and the vector dimension it holds."""

    def __init__(
        self, settings: LgrepSettings, root: Path, project_dir: Path, embedder: EmbeddingProvider, *, dimension: int
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.dimension = dimension
        self.remote: RemoteAccounts | None = (
            RemoteAccounts(settings, root, project_dir, embedder) if is_remote(embedder) else None
        )

    def batches(self, items: Iterable[tuple[str, str, str]]) -> Iterator[TextBatch]:
        """`items` (key, path, embedding text) in batches of the chunks per commit the memory budget
        allows. After each full batch, once the caller has stored it and asks for the next, memory is
        checked and, over the budget, released and the batches made smaller."""
        governor = MemoryGovernor(self.settings.index.memory_budget_mb, self.settings.index.embed_batch_chunks)
        governor.start(self.embedder)
        try:
            keys: list[str] = []
            paths: list[str] = []
            texts: list[str] = []
            for key, path, text in items:
                keys.append(key)
                paths.append(path)
                texts.append(text)
                if len(keys) >= governor.batch_chunks:
                    yield TextBatch(keys, paths, texts, full=True)
                    keys, paths, texts = [], [], []
                    governor.check(self.embedder)
            if keys:
                yield TextBatch(keys, paths, texts, full=False)
        finally:  # the run ended, failed or was cancelled: the next job starts from the configured size
            governor.restore(self.embedder)

    def embed(self, batch: TextBatch) -> Embedded:
        """Embed one batch (see `embed_texts`). Raises IndexingError when the vectors are not of the
        index's shape."""
        stored, vectors, billed, failure = embed_texts(
            self.embedder, self.remote, batch.keys, batch.paths, batch.texts, dimension=self.dimension
        )
        return Embedded(stored, vectors, billed, failure)


def embed_texts(
    embedder: EmbeddingProvider,
    remote: RemoteAccounts | None,
    keys: Sequence[str],
    paths: Sequence[str],
    texts: Sequence[str],
    *,
    dimension: int,
) -> tuple[list[str], np.ndarray, int, EmbeddingError | None]:
    """Embed one batch: locally, or through a cloud provider's books (`remote`: egress scan, spend
    ledger, egress log). Returns the keys that got vectors, their vectors, the tokens billed, and the
    provider's error when only part of the batch arrived (what arrived is still returned: it was
    paid for). Raises IndexingError when the vectors are not of the index's shape."""
    failure: EmbeddingError | None = None
    billed = 0
    if remote is not None:
        sent = [o for o in (outgoing(k, p, t) for k, p, t in zip(keys, paths, texts, strict=True)) if o]
        if len(sent) < len(keys):
            log.warning(
                "%d chunks not sent to %s: their text is a secret even after redaction (they stay BM25-only)",
                len(keys) - len(sent),
                embedder.provider,
            )
        arrived, vectors, billed, failure = remote.embed(sent)
        stored = [o.key for o in arrived]
    else:
        vectors = embedder.embed_documents(texts)
        stored = list(keys)
    vectors = np.asarray(vectors, dtype=np.float32)
    if stored and vectors.shape != (len(stored), dimension):
        raise IndexingError(f"embedder returned shape {vectors.shape}, expected ({len(stored)}, {dimension})")
    return stored, vectors, billed, failure


class RemoteAccounts:
    """Sends texts to a cloud provider and keeps the books: the spend ledger (cache dir), the
    project's egress log, and a warning in the log when the total spend passes a threshold."""

    def __init__(self, settings: LgrepSettings, root: Path, project_dir: Path, embedder: EmbeddingProvider) -> None:
        assert isinstance(embedder, RemoteEmbeddingProvider)
        self.embedder: RemoteEmbeddingProvider = embedder
        self.root = str(root)
        self.ledger = SpendLedger(settings.cache_dir)
        self.egress = EgressLog(project_dir)
        self.prices = price_table(settings.spend)
        self.thresholds = settings.spend.warn_usd
        self._spent_usd: float | None = None  # read from the ledger at the first request

    def embed(self, sent: Sequence[Outgoing]) -> tuple[list[Outgoing], np.ndarray, int, EmbeddingError | None]:
        """Send `sent`; returns the texts that were embedded, their vectors, the tokens billed, and the
        provider's error when some were not (after its retries)."""
        if not sent:
            return [], np.zeros((0, 0), np.float32), 0, None
        texts = [o.text for o in sent]
        if self._spent_usd is None:
            total = self.ledger.totals(self.prices)
            self._spent_usd = total.cost_usd if total is not None else 0.0
        failure: EmbeddingError | None = None
        # Every try of every request is in the egress log before it leaves, and its outcome after.
        attempts = self.egress.observer(sent, provider=self.embedder.provider, model=model_label(self.embedder))
        try:
            vectors, billed = self.embedder.embed_documents_billed(texts, attempts=attempts)
            arrived = list(sent)
        except EmbeddingIncomplete as exc:
            order = sorted(exc.vectors)
            arrived = [sent[i] for i in order]
            vectors = np.stack([exc.vectors[i] for i in order]) if order else np.zeros((0, 0), np.float32)
            billed, failure = exc.tokens, exc
        billed = max(int(billed), 0)
        if arrived or billed:
            self._account(arrived, billed)
        return arrived, vectors, billed, failure

    def _account(self, arrived: Sequence[Outgoing], billed: int) -> None:
        provider, model = self.embedder.provider, model_label(self.embedder)
        # Money first: whatever happens to the vectors now, the request was billed.
        self.ledger.record(self.root, provider, model, billed, len(arrived))
        self.egress.record(arrived, apportion(billed, [o.text for o in arrived]), provider=provider, model=model)
        price = self.prices.get(model)
        if price is not None and self._spent_usd is not None:
            before = self._spent_usd
            self._spent_usd = before + billed * price / 1e6
            for threshold in crossed_thresholds(before, self._spent_usd, self.thresholds):
                log.warning(
                    "cloud embedding spend has passed %s: about %s so far across every project (%s)",
                    format_usd(threshold),
                    format_usd(self._spent_usd),
                    self.ledger.path,
                )


class MemoryGovernor:
    """Keeps the vector phase under the memory budget: past HIGH_WATER of it, and only if memory grew
    since the last time (a reload costs ~0.3 s, so it must not happen every batch), hand Arrow's free
    pages back and drop the inference session with its arena; if that still leaves the process at
    HIGH_WATER or above, halve the chunks per commit and the embedder's tokens per batch."""

    HIGH_WATER = 0.9  # act before the budget, not after: one batch can add tens of MB
    REGROWTH_BYTES = 32 * 1024 * 1024  # growth since the last release that justifies another one
    MIN_BATCH_CHUNKS = 16
    MIN_BATCH_TOKENS = 256

    # What the local model's session takes while it embeds, by its batch size (two batches side by
    # side, as it runs them on two cores): ~200 MB at 1,024 tokens in a 151k-chunk run (328 -> 528 MB
    # over the first 10k chunks), less in proportion below (tools/bench_embed.py: 290, 248 and 227 MB
    # peaks at 1,024, 512 and 256 tokens).
    MODEL_BASE_BYTES = 80 * 1024 * 1024
    MODEL_BYTES_PER_BATCH_TOKEN = 120 * 1024

    def __init__(self, budget_mb: int, batch_chunks: int) -> None:
        self.budget_bytes = budget_mb * 1024 * 1024
        self.batch_chunks = batch_chunks
        self._after_release = 0

    def start(self, embedder: EmbeddingProvider) -> None:
        """Before the first batch: a session grows by a whole batch's worth between two checks, so
        when what the process holds already plus what the model will take at the embedder's batch
        size is past HIGH_WATER, start with smaller batches (halved down to MIN_BATCH_TOKENS)."""
        tokens = getattr(embedder, "batch_tokens", None)
        if not isinstance(tokens, int):
            return
        room = self.budget_bytes * self.HIGH_WATER - rss_bytes()
        start = tokens
        while start > self.MIN_BATCH_TOKENS and self.MODEL_BASE_BYTES + self.MODEL_BYTES_PER_BATCH_TOKEN * start > room:
            start //= 2
        start = max(start, self.MIN_BATCH_TOKENS)
        if start != tokens:
            embedder.batch_tokens = start  # type: ignore[attr-defined]  # optional knob
            log.info("memory: starting the vector phase at %d batch tokens (%d configured)", start, tokens)

    def restore(self, embedder: EmbeddingProvider) -> None:
        """Put the embedder's batch size back to what it was configured with. The provider outlives
        this run (a daemon's jobs share it): a later job, or the next project, starts from its own
        room, not from this run's low-water mark."""
        configured = getattr(embedder, "configured_batch_tokens", None)
        if isinstance(configured, int) and getattr(embedder, "batch_tokens", configured) != configured:
            embedder.batch_tokens = configured  # type: ignore[attr-defined]  # optional knob

    def check(self, embedder: EmbeddingProvider) -> None:
        rss = rss_bytes()
        if rss < self.budget_bytes * self.HIGH_WATER or rss < self._after_release + self.REGROWTH_BYTES:
            return
        release_free_memory()
        release = getattr(embedder, "release_memory", None)
        if callable(release):
            release()  # onnxruntime's arena only shrinks when its session goes
        self._after_release = rss_bytes()
        if self._after_release < self.budget_bytes * self.HIGH_WATER:
            return
        # Still at the high-water mark without the session: what the model grows back to would take
        # the process past the budget (a 151k-chunk run peaked at 510 MB when this waited for the
        # budget itself), so make its batches smaller now. The model's peak with two batches side by
        # side (tools/bench_embed.py, 512 chunks): 290 MB at 1,024 tokens, 248 at 512, 227 at 256.
        self.batch_chunks = max(self.MIN_BATCH_CHUNKS, self.batch_chunks // 2)
        tokens = getattr(embedder, "batch_tokens", None)
        if isinstance(tokens, int):
            embedder.batch_tokens = max(self.MIN_BATCH_TOKENS, tokens // 2)  # type: ignore[attr-defined]  # optional knob
        log.info("memory near the budget: %d chunks per commit, batch tokens %s", self.batch_chunks, tokens)
