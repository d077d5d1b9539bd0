"""What the cloud embedding providers share: batching within an API's limits, bounded concurrency,
retries with asynchronous backoff, and one rate limit per process.

A provider module (voyage.py, openai_compat.py) supplies an `Api`: one asynchronous request through
its vendor's SDK, and a verdict on each exception the SDK raises (retry, after how long, or give up
with which error). `CloudEmbedder` turns that into the synchronous `RemoteEmbeddingProvider` the
indexer and the searcher call, from any thread:

- Requests run on one event loop of the provider's own, in a thread of its own. Waiting (for a
  response, for a retry) is `await`, never a sleeping thread: while the indexer's requests back off,
  a search's query embedding goes out at once, and any number of threads share the loop.
- Texts are grouped into requests within the API's limits on texts and tokens (counted with
  cl100k, with a margin for the provider's own tokenizer); at most `concurrency` requests are in
  flight. A text longer than the model takes is cut to fit (the provider would cut it or refuse it).
- 429, 5xx, timeouts, connection errors and malformed responses are retried up to `max_tries` times
  with exponential backoff and full jitter; a Retry-After from the server is honoured, and it holds
  back every request of this process until then (one daemon: one rate limit for all its agents).
- When requests still fail, the call raises `EmbeddingIncomplete` with the vectors that did arrive
  and the tokens billed for them, so the indexer keeps what was paid for and names what is left.
- Every try of a document request is announced to the caller's `AttemptObserver` before it is sent
  and again with its outcome (ok, the HTTP status, a timeout, a lost connection, cancelled): the
  egress log records what (possibly) left, not only what succeeded.
- Queries are embedded with fewer tries and a short wait: an agent's search must answer promptly,
  and falls back to its lexical channels when the provider cannot be reached.

See docs/adr/0014-cloud-embedding-providers.md.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from lgrep_core.domain.errors import EmbeddingError, LgrepError, ProviderUnavailableError
from lgrep_core.embeddings.base import Attempt, AttemptObserver, Vectors
from lgrep_core.embeddings.tokens import count_tokens, cut_tokens

if TYPE_CHECKING:
    from lgrep_core.settings.config import EmbeddingSettings

__all__ = [
    "Api",
    "CloudEmbedder",
    "EmbeddingIncomplete",
    "Limits",
    "MalformedReply",
    "Reply",
    "Verdict",
    "plan_requests",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Backoff: the first retry waits up to BACKOFF_BASE_S, doubling per try, never more than BACKOFF_MAX_S
# (full jitter: a uniform draw below that, so clients that failed together do not retry together).
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 60.0
# A Retry-After longer than this is not waited for: the request fails and says what the server asked.
RETRY_AFTER_MAX_S = 300.0
# Queries: an agent is waiting. Two tries, and no wait longer than this for a retry.
QUERY_TRIES = 2
QUERY_RETRY_MAX_S = 2.0
# The provider's tokenizer is not cl100k: plan requests at this share of the API's token limits.
TOKEN_MARGIN = 0.8


@dataclass(frozen=True, slots=True)
class Limits:
    """An API's limits per request: texts, tokens over all texts, tokens of one text."""

    max_texts: int
    max_tokens: int
    max_text_tokens: int


@dataclass(frozen=True, slots=True)
class Reply:
    """One successful request: a vector per text, in order, and the tokens the provider billed."""

    vectors: list[Sequence[float]]
    tokens: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do about a failed request: retry it (after `retry_after` s when the server said so),
    or give up with `error`. `reason` says what happened, for logs and the final error."""

    reason: str
    retry: bool
    retry_after: float | None = None
    error: LgrepError | None = None


class Api(Protocol):
    """One provider's REST API through its SDK."""

    provider: str
    model: str
    limits: Limits

    async def embed(self, texts: list[str], *, query: bool) -> Reply:
        """One request. Raises whatever the SDK raises; `judge` reads it."""
        ...

    def judge(self, exc: BaseException) -> Verdict: ...

    async def aclose(self) -> None: ...


class MalformedReply(Exception):
    """A provider module's verdict on a 200 answer without the embeddings or usage it promises
    (retried: a proxy's page, a truncated body)."""


class EmbeddingIncomplete(EmbeddingError):
    """Some requests failed after their retries. `vectors` holds the texts that were embedded (by
    index into the call's texts) and `tokens` what the provider billed for them."""

    def __init__(self, message: str, vectors: dict[int, np.ndarray], tokens: int) -> None:
        super().__init__(message)
        self.vectors = vectors
        self.tokens = tokens


@dataclass(slots=True)
class _Gate:
    """When requests may go out again after a server asked everyone to wait (Retry-After)."""

    resume_at: float = 0.0

    def hold(self, seconds: float) -> None:
        self.resume_at = max(self.resume_at, time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.resume_at - time.monotonic())


def plan_requests(
    tokens: Sequence[int], limits: Limits, *, max_texts: int | None, max_tokens: int | None
) -> list[list[int]]:
    """Group text indices into requests, in order, within the limits (the stricter of the API's and
    the user's); a text alone over the token limit goes alone (it was cut to `max_text_tokens`)."""
    texts_cap = min(limits.max_texts, max_texts or limits.max_texts)
    tokens_cap = int(min(limits.max_tokens * TOKEN_MARGIN, max_tokens or limits.max_tokens))
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, n in enumerate(tokens):
        if current and (len(current) >= texts_cap or used + n > tokens_cap):
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        groups.append(current)
    return groups


class _Loop:
    """An event loop in a daemon thread of its own, started on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._get())
        return future.result()

    def _get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()

                def serve() -> None:
                    try:
                        loop.run_forever()
                    finally:
                        loop.run_until_complete(loop.shutdown_asyncgens())
                        loop.close()

                self._thread = threading.Thread(target=serve, name=self._name, daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop

    def close(self, finish: Callable[[], Coroutine[Any, Any, None]]) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        if loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(finish(), loop).result(timeout=5)
        except Exception:
            log.debug("closing the provider's client failed", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)


class CloudEmbedder:
    """A `RemoteEmbeddingProvider` over an `Api` (see the module docstring).

    `dimension`: the configured one, or None to detect it from the first reply (an OpenAI-compatible
    server's unknown model); every reply is checked against it."""

    remote = True

    def __init__(
        self,
        api: Api,
        *,
        dimension: int | None,
        timeout_s: float,
        max_tries: int,
        concurrency: int,
        request_texts: int | None = None,
        request_tokens: int | None = None,
        backoff_base_s: float = BACKOFF_BASE_S,
        backoff_max_s: float = BACKOFF_MAX_S,
    ) -> None:
        self.api = api
        self._dimension = dimension
        self.timeout_s = timeout_s
        self.max_tries = max_tries
        self.concurrency = concurrency
        self.request_texts = request_texts
        self.request_tokens = request_tokens
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._loop = _Loop(f"lgrep-{api.provider}")
        self._gate = _Gate()
        self._semaphore: asyncio.Semaphore | None = None  # made on the loop
        self._stats_lock = threading.Lock()
        self.retries = 0  # requests sent again

    @classmethod
    def configured(cls, api: Api, settings: EmbeddingSettings) -> CloudEmbedder:
        """The provider over `api` with the user's embedding settings (dimension, timeout, tries,
        concurrency, request sizes)."""
        return cls(
            api,
            dimension=settings.dimensions,
            timeout_s=settings.timeout_s,
            max_tries=settings.max_tries,
            concurrency=settings.concurrency,
            request_texts=settings.request_texts,
            request_tokens=settings.request_tokens,
        )

    # ------------------------------------------------------------------ the provider protocol

    @property
    def provider(self) -> str:
        return self.api.provider

    @property
    def model(self) -> str:
        return self.api.model

    @property
    def dimension(self) -> int:
        """The vectors' dimension; for a model of unknown dimension, one short request finds it."""
        if self._dimension is None:
            self.embed_query("dimension probe")
        assert self._dimension is not None
        return self._dimension

    @property
    def declared_dimension(self) -> int:
        """The dimension as configured (0: detected at first use), without sending anything."""
        return self._dimension or 0

    def estimate_tokens(self, texts: Sequence[str]) -> int:
        limit = self.api.limits.max_text_tokens
        return sum(min(n, limit) for n in count_tokens(texts)) if texts else 0

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.embed_documents_billed(texts)[0]

    def embed_documents_billed(
        self, texts: Sequence[str], *, attempts: AttemptObserver | None = None
    ) -> tuple[Vectors, int]:
        """`attempts` hears of each try of each request, before it is sent and with its outcome.

        Raises:
        EmbeddingIncomplete: some requests failed after their retries (what did arrive is in it).
        ConfigError: the provider refused the key.
        EmbeddingError: the provider's answers are unusable (wrong dimension, refused input).
        """
        if not texts:
            return np.zeros((0, self.declared_dimension), dtype=np.float32), 0
        prepared, counts = self._prepare(texts)
        groups = plan_requests(counts, self.api.limits, max_texts=self.request_texts, max_tokens=self.request_tokens)
        return self._loop.run(self._embed_groups(prepared, groups, attempts))

    def embed_query(self, text: str) -> Vectors:
        """Raises:
        ProviderUnavailableError: the provider did not answer within the query's tries.
        ConfigError, EmbeddingError: as embed_documents_billed.
        """
        prepared, _ = self._prepare([text])
        reply = self._loop.run(
            self._request(prepared, query=True, tries=min(QUERY_TRIES, self.max_tries), wait_cap=QUERY_RETRY_MAX_S)
        )
        return self._matrix(reply.vectors, 1)[0]

    def close(self) -> None:
        self._loop.close(self.api.aclose)
        self._semaphore = None

    # ------------------------------------------------------------------ internals

    def _prepare(self, texts: Sequence[str]) -> tuple[list[str], list[int]]:
        """Texts cut to the model's length limit, and their token counts."""
        limit = self.api.limits.max_text_tokens
        counts = count_tokens(texts)
        prepared = list(texts)
        for i, n in enumerate(counts):
            if n > limit:
                prepared[i] = cut_tokens(prepared[i], limit)
                counts[i] = limit
            if not prepared[i].strip():
                prepared[i] = "."  # an empty input is an error at every provider
        return prepared, counts

    async def _embed_groups(
        self, texts: list[str], groups: list[list[int]], attempts: AttemptObserver | None
    ) -> tuple[Vectors, int]:
        async def one(group: list[int]) -> tuple[list[int], Reply]:
            reply = await self._request(
                [texts[i] for i in group], query=False, tries=self.max_tries, observer=attempts, indices=group
            )
            return group, reply

        outcomes = await asyncio.gather(*(one(g) for g in groups), return_exceptions=True)
        done: dict[int, np.ndarray] = {}
        billed = 0
        failures: list[BaseException] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                failures.append(outcome)
                continue
            group, reply = outcome
            billed += reply.tokens
            for i, vec in zip(group, self._matrix(reply.vectors, len(group)), strict=True):
                done[i] = vec
        if failures:
            first = next((f for f in failures if not isinstance(f, ProviderUnavailableError)), failures[0])
            if not isinstance(first, LgrepError):
                raise first
            if len(done) == 0 and not isinstance(first, ProviderUnavailableError):
                raise first  # the key, a refused input: nothing arrived, the error says why
            raise EmbeddingIncomplete(
                f"{first.message} ({len(texts) - len(done)} of {len(texts)} texts not embedded)", done, billed
            ) from first
        return np.stack([done[i] for i in range(len(texts))]), billed

    def _matrix(self, vectors: list[Sequence[float]], expected: int) -> np.ndarray:
        try:
            matrix = np.asarray(vectors, dtype=np.float32)
        except (ValueError, TypeError):
            raise EmbeddingError(
                f"{self.provider} returned vectors of different lengths for one request ({self.model})"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise EmbeddingError(
                f"{self.provider} returned {matrix.shape[0] if matrix.ndim else 0} vectors for {expected} texts"
            )
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
            log.info("%s %s returns %d-dimensional vectors", self.provider, self.model, self._dimension)
        if matrix.shape[1] != self._dimension:
            raise EmbeddingError(
                f"{self.provider} returned {matrix.shape[1]}-dimensional vectors from {self.model}, but "
                f"embedding.dimensions is {self._dimension}: set it to {matrix.shape[1]} (and run "
                "`lgrep index --force`), or ask the endpoint for the dimension configured"
            )
        if not np.all(np.isfinite(matrix)):
            raise EmbeddingError(f"{self.provider} returned a vector with NaN or infinite values ({self.model})")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.maximum(norms, 1e-12)

    async def _request(
        self,
        texts: list[str],
        *,
        query: bool,
        tries: int,
        wait_cap: float = RETRY_AFTER_MAX_S,
        observer: AttemptObserver | None = None,
        indices: Sequence[int] = (),
    ) -> Reply:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        verdict: Verdict | None = None
        request = uuid.uuid4().hex[:16]
        for attempt in range(1, tries + 1):
            # Documents wait out a Retry-After the server gave any request; a query goes out at once
            # (an agent is waiting, and if it is refused too, the search answers lexically).
            hold = 0.0 if query else self._gate.remaining()
            if hold > wait_cap:
                break
            if hold:
                await asyncio.sleep(hold)
            async with self._semaphore:
                if attempt > 1:
                    with self._stats_lock:
                        self.retries += 1
                this = Attempt(request, attempt, tuple(indices))
                if observer is not None:
                    observer.sending(this)  # recorded before any byte leaves; if it cannot be, nothing is sent
                try:
                    # The SDK's own timeout is the request's; this one catches a client that ignores it.
                    reply = await asyncio.wait_for(self.api.embed(texts, query=query), self.timeout_s + 5)
                except asyncio.CancelledError:
                    _tell(observer, this, "cancelled", None)
                    raise
                except Exception as exc:  # the SDK's errors, judged by the provider module
                    verdict = self._judge(exc)
                    _tell(observer, this, _outcome(exc), None)
                else:
                    _tell(observer, this, "ok", reply.tokens)
                    return reply
            if not verdict.retry:
                assert verdict.error is not None
                raise verdict.error
            if attempt == tries:
                break
            if verdict.retry_after is not None:
                if verdict.retry_after > wait_cap:
                    break
                delay = verdict.retry_after
                self._gate.hold(delay)  # every request of this process waits, not only this one
            else:
                delay = random.uniform(0, min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1)))
            log.warning("%s: %s; try %d of %d in %.1f s", self.provider, verdict.reason, attempt + 1, tries, delay)
            await asyncio.sleep(delay)
        reason = verdict.reason if verdict is not None else "its rate limit asks to wait"
        wait = self._gate.remaining()
        asked = f"; it asks to wait {math.ceil(wait)} s more" if wait > 0 else ""
        raise ProviderUnavailableError(
            f"{self.provider} ({self.model}) failed after {tries} tr{'y' if tries == 1 else 'ies'}: {reason}{asked}"
        )

    def _judge(self, exc: BaseException) -> Verdict:
        if isinstance(exc, TimeoutError | asyncio.TimeoutError):
            return Verdict(f"no answer within {self.timeout_s:g} s", retry=True)
        return self.api.judge(exc)


def _outcome(exc: BaseException) -> str:
    """What became of a request that raised, for the egress log: `http <status>` when the server
    answered, else a timeout, a connection that failed, a malformed reply or the error's type."""
    name = type(exc).__name__.lower()
    if isinstance(exc, TimeoutError | asyncio.TimeoutError) or "timeout" in name:
        return "timeout"
    status = getattr(exc, "http_status", None) or getattr(exc, "status_code", None)  # voyageai, openai
    if isinstance(status, int):
        return f"http {status}"
    if isinstance(exc, MalformedReply):
        return "malformed reply"
    if "connection" in name:
        return "connection failed"
    return f"failed ({type(exc).__name__})"


def _tell(observer: AttemptObserver | None, attempt: Attempt, outcome: str, tokens: int | None) -> None:
    """Report an outcome; the record of the attempt itself is already written, so a failure to add
    its outcome is logged, never raised over the request's own result."""
    if observer is None:
        return
    try:
        observer.outcome(attempt, outcome, tokens)
    except Exception as exc:
        log.warning("cannot record the outcome of a request to the provider: %s", exc)
