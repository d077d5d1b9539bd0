"""The embedded default provider: all-MiniLM-L6-v2 on onnxruntime + tokenizers, without torch.

This module runs the model: it tokenizes, plans padded batches, runs the onnxruntime session and
mean-pools the hidden states, and keeps track of the providers whose model is in memory. The graph it
runs is built from the installed weights and cached on first use by `minilm` (seconds, once per
cache dir; later processes only load the cached file).

The int8 graph runs one text per inference. It computes one activation range per run, so a text
batched with others got a vector that depended on them (cosine ~0.996 to the same text alone), and
the same chunk embedded on two machines, or in a fresh build and an update, differed: enough to swap
near-ties, and to make a team index's seeded vectors differ from a local build's (ADR 0034). One
text per run makes a text's vector depend on the text alone. Measured here on real chunks: no slower
(25.4-25.8 against 24.7-25.5 chunks/s batched; padding is gone); short texts 16-20% slower (228
against 265-286/s), which chunks rarely are. The fp32 graph has no activation ranges: it batches
texts of similar length (`batch_tokens` padded tokens at most).

Each inference runs on one core, and a call with several runs does `threads` of them at once (one
session, weights shared; onnxruntime releases the GIL while it runs). Measured against one batch at a
time on two intra-op threads: more chunks per CPU-second (the two threads of one small MatMul wait on
each other), the gaps between runs (tokenizing, padding, pooling) filled by the other batch, and a
query's own embedding no slower.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from lgrep_core.domain.errors import EmbeddingError, ProviderUnavailableError
from lgrep_core.embeddings.base import Vectors
from lgrep_core.embeddings.minilm import (
    INSTALL_HINT,
    MAX_POSITIONS,
    MODEL_NAME,
    MODEL_SUBDIR,
    Variant,
    default_threads,
    ensure_models,
    load_tokenizer,
    weights_dir,
)

try:
    import onnxruntime as ort
    from tokenizers import Tokenizer
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"the local embedding provider needs onnxruntime and tokenizers: {INSTALL_HINT}") from exc

__all__ = ["LocalMiniLMProvider", "loaded_count"]

logger = logging.getLogger(__name__)

DIMENSION: Final = 384

# A batch only holds texts up to this much longer than its shortest: padding then stays small, and
# int8 activation ranges stay shared between similar texts (mixing 2- and 49-token texts took the
# worst reference cosine from 0.995 to 0.989).
_BUCKET_RATIO: Final = 1.25
_BUCKET_SLACK: Final = 2


class LocalMiniLMProvider:
    """all-MiniLM-L6-v2 run on this machine (satisfies `EmbeddingProvider`).

    Construction is cheap: the tokenizer and the onnxruntime session load on first use, and the
    first use of a cache dir also builds the ONNX graphs (a few seconds).
    """

    def __init__(
        self,
        cache_dir: Path,
        *,
        quantized: bool = True,
        threads: int | None = None,
        max_tokens: int = 256,
        batch_tokens: int = 512,
    ) -> None:
        if not 2 <= max_tokens <= MAX_POSITIONS:
            raise ValueError(f"max_tokens must be between 2 and {MAX_POSITIONS}, got {max_tokens}")
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be positive, got {batch_tokens}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be positive, got {threads}")
        self._cache_dir = Path(cache_dir)
        self._variant: Variant = "int8" if quantized else "fp32"
        self._threads = threads if threads is not None else default_threads()
        self._max_tokens = max_tokens
        self._batch_tokens = batch_tokens
        self._configured_batch_tokens = batch_tokens
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()
        _PROVIDERS.add(self)

    @property
    def provider(self) -> str:
        return "local"

    @property
    def model(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def variant(self) -> Variant:
        """Which graph runs: "int8" (dynamically quantized, the default) or "fp32"."""
        return self._variant

    @property
    def max_tokens(self) -> int:
        """Tokens the model sees per text, [CLS] and [SEP] included; the rest is cut off."""
        return self._max_tokens

    @property
    def batch_tokens(self) -> int:
        """Padded tokens per inference batch; the indexer lowers it when memory runs short."""
        return self._batch_tokens

    @batch_tokens.setter
    def batch_tokens(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"batch_tokens must be positive, got {value}")
        self._batch_tokens = value

    @property
    def configured_batch_tokens(self) -> int:
        """The batch size this provider was made with, which `batch_tokens` returns to once an
        indexer that lowered it is done (the provider is shared by a daemon's jobs)."""
        return self._configured_batch_tokens

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed texts; returns float32 of shape (len(texts), 384), each row L2-normalised.

        Raises:
            ProviderUnavailableError: the weights are not installed or the graph cannot be built.
            EmbeddingError: inference failed.
        """
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        runtime = self._load()
        encodings = runtime.tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]

        def embed_batch(batch: list[int]) -> None:
            width = max(lengths[i] for i in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                input_ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            out[batch] = _mean_pool_normalise(runtime.run(input_ids, mask), mask)  # rows no other batch writes

        # int8: one text per run (the module docstring says why); the runs still go `threads` at a time.
        batches = _plan_batches(lengths, 1 if self._variant == "int8" else self._batch_tokens)
        if len(batches) == 1 or self._threads == 1:
            for batch in batches:
                embed_batch(batch)
            return out
        with ThreadPoolExecutor(min(self._threads, len(batches)), thread_name_prefix="lgrep-embed") as pool:
            for _ in pool.map(embed_batch, batches):  # re-raises the first batch's failure
                pass
        return out

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query; returns float32 of shape (384,). Queries get no prefix."""
        return self.embed_documents([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed several queries at once (a task question's windows): each row is what
        `embed_query` gives for that text (one text per int8 run), the runs spread over the threads."""
        return self.embed_documents(texts)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text, [CLS] and [SEP] included, before truncation.

        A count above `max_tokens` means the text's tail would not reach the model.
        """
        if isinstance(texts, str):
            raise TypeError("count_tokens takes a sequence of texts, not one string")
        if not texts:
            return []
        return [len(e.ids) for e in self._load().counter.encode_batch(list(texts))]

    def release_memory(self) -> None:
        """Drop the inference session (and its memory arena); the next call reloads it (~0.3 s)."""
        with self._lock:
            self._runtime = None

    def _load(self) -> _Runtime:
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                self._runtime = _Runtime.open(self._cache_dir / MODEL_SUBDIR, self._variant, self._max_tokens)
            return self._runtime


_PROVIDERS: weakref.WeakSet[LocalMiniLMProvider] = weakref.WeakSet()


def loaded_count() -> int:
    """Providers of this process whose model is in memory now (an inference session is open)."""
    return sum(1 for provider in list(_PROVIDERS) if provider._runtime is not None)


def _plan_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Group text indices into batches: shortest first, at most `batch_tokens` padded tokens each
    (always at least one text), and no text much longer than its batch's shortest."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches: list[list[int]] = []
    batch: list[int] = []
    shortest = 0
    for i in order:
        n = lengths[i]
        if batch and ((len(batch) + 1) * n > batch_tokens or n > shortest * _BUCKET_RATIO + _BUCKET_SLACK):
            batches.append(batch)
            batch = []
        if not batch:
            shortest = n
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


def _mean_pool_normalise(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Vectors:
    weights = mask.astype(np.float32)
    summed = np.einsum("bsh,bs->bh", hidden, weights)
    pooled = summed / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


@dataclass(frozen=True)
class _Runtime:
    session: ort.InferenceSession
    tokenizer: Tokenizer  # truncates to max_tokens
    counter: Tokenizer  # does not truncate

    @classmethod
    def open(cls, model_dir: Path, variant: Variant, max_tokens: int) -> _Runtime:
        weights = weights_dir()
        model_path = ensure_models(model_dir, weights, variant)
        tokenizer = load_tokenizer(weights, max_tokens)
        counter = load_tokenizer(weights, None)
        options = ort.SessionOptions()
        # One core per run: parallelism comes from running batches at once (see the module docstring).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Should a pool ever be configured, idle workers sleep: a spinning pool kept both cores busy after
        # each query embedding and doubled the search that followed (10k chunks: 5.4 -> 2.9 ms p50).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The CPU arena stays on: without it int8 ran at 38-42 chunks/s instead of 68-77 here. It does
        # keep every block it grew to, over the many (batch, length) shapes indexing feeds it, so the
        # indexer calls release_memory() when it nears its budget.
        started = time.perf_counter()
        try:
            session = ort.InferenceSession(
                str(model_path),
                sess_options=options,
                providers=["CPUExecutionProvider"],
                # The fused contrib SkipLayerNormalization kernel measured 3x slower than plain Add +
                # LayerNormalization on CPU here (whole model: 55 vs 65 chunks/s at 256 tokens).
                disabled_optimizers=["SkipLayerNormFusion"],
            )
        except Exception as exc:  # onnxruntime raises its own pybind exception types
            raise ProviderUnavailableError(
                f"onnxruntime cannot load the cached {MODEL_NAME} graph {model_path}: {exc}; "
                f"delete {model_dir} to rebuild it"
            ) from exc
        logger.debug("loaded %s (%s) in %.2f s", model_path.name, variant, time.perf_counter() - started)
        return cls(session=session, tokenizer=tokenizer, counter=counter)

    def run(self, input_ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        try:
            outputs = self.session.run(["last_hidden_state"], {"input_ids": input_ids, "attention_mask": mask})
        except Exception as exc:  # onnxruntime raises its own pybind exception types
            raise EmbeddingError(f"{MODEL_NAME} inference failed on a batch of shape {input_ids.shape}: {exc}") from exc
        return np.asarray(outputs[0], dtype=np.float32)
