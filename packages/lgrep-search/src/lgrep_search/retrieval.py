"""The retrieval channels over a snapshot: BM25 over code-aware terms (lexical.py), fuzzy matching of
symbol names (fuzzy.py) and cosine similarity over the stored embeddings, each giving a ranked list of
candidate chunks, restricted to the chunks the request's filters let through."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from lgrep_core.domain.errors import EmbeddingError, InvalidRequestError
from lgrep_core.domain.models import ContentType, SearchType
from lgrep_core.embeddings.base import EmbeddingProvider

from .corpus import Corpus
from .fusion import Candidate
from .fuzzy import FuzzyMatch
from .pathfilter import path_matcher
from .query import ParsedQuery

__all__ = [
    "CHANNELS",
    "CHANNEL_DEPTH",
    "Retrieved",
    "embed_question",
    "explain_fuzzy",
    "filter_mask",
    "question_windows",
    "retrieve",
    "top",
]

log = logging.getLogger(__name__)

# Each channel contributes this many candidates before fusion: deep enough that a chunk ranked low by
# one channel but high by another still meets the ranking stack.
CHANNEL_DEPTH = 100

CHANNELS = {
    SearchType.HYBRID: ("bm25", "vector", "fuzzy"),
    SearchType.VECTOR: ("vector",),
    SearchType.BM25: ("bm25",),
    SearchType.FUZZY: ("fuzzy",),
}


@dataclass(slots=True)
class Retrieved:
    lists: dict[str, tuple[np.ndarray, np.ndarray]]  # channel -> (chunks, scores), best first
    weights: dict[str, float]  # fusion weight of each channel that ran or could have
    fuzzy_best: dict[str, FuzzyMatch]  # matched name (lowercased) -> its best fuzzy match
    embedding_ms: float | None  # time to embed the query, when it was
    notes: tuple[str, ...] = ()  # the query could not be embedded: the lexical channels answered alone
    sims: np.ndarray | None = None  # per chunk: cosine similarity to the query (-inf: none), when embedded


def retrieve(
    corpus: Corpus,
    query: ParsedQuery,
    *,
    search_type: SearchType,
    weights: Mapping[str, float],
    mask: np.ndarray | None,
    embedder: EmbeddingProvider | None,
    depth: int = CHANNEL_DEPTH,
) -> Retrieved:
    """Run the channels of `search_type`, each giving its `depth` best chunks. In a hybrid search a
    channel weighted 0 does not run, except the vector channel when neither lexical channel found
    anything."""
    channels = CHANNELS[search_type]
    if search_type is SearchType.HYBRID:
        kept = {ch: w for ch, w in weights.items() if w > 0}
        channels = tuple(ch for ch in channels if ch in kept or ch == "vector")
    else:
        kept = dict.fromkeys(channels, 1.0)

    lists: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    fuzzy_best: dict[str, FuzzyMatch] = {}
    if "bm25" in channels:
        scores = corpus.lexical.scores(query.terms, mask, query.weights)
        lists["bm25"] = top(scores, depth, positive=True)
        if kept.get("vector", 0) > 0 and query.parts is None:
            best = lists["bm25"][0]
            held = corpus.lexical.coverage(query.terms, int(best[0])) if len(best) else 0.0
            if held < WEAK_LEXICAL:
                kept["vector"] *= DENSE_TRUST
    if "fuzzy" in channels:
        scores, fuzzy_best = corpus.symbol_index.scores(query.identifiers, len(corpus))
        if mask is not None:
            scores[~mask] = 0.0
        lists["fuzzy"] = top(scores, depth, positive=True)
    # Symbol queries weigh the vector 0 and skip the encoder, unless nothing lexical matched.
    if "vector" in channels and "vector" not in kept and not any(len(idx) for idx, _ in lists.values()):
        kept["vector"] = 1.0
    embedding_ms = None
    if "vector" in kept and embedder is not None and len(corpus.matrix):
        t0 = time.perf_counter()
        try:
            qvec = embed_question(embedder, query)
        except EmbeddingError as exc:
            if search_type is SearchType.VECTOR:
                raise  # a vector-only search has nothing else to answer with
            # A cloud provider that is down or rate-limited must not take search down with it.
            log.warning("the query could not be embedded (%s); answering with the lexical channels", exc.message)
            note = f"the query could not be embedded ({exc.message}); these results are lexical only"
            kept.pop("vector", None)
            return Retrieved(lists=lists, weights=kept, fuzzy_best=fuzzy_best, embedding_ms=None, notes=(note,))
        embedding_ms = (time.perf_counter() - t0) * 1000
        sims = np.full(len(corpus), -np.inf, dtype=np.float32)
        has = corpus.vec_row >= 0
        sims[has] = (corpus.matrix @ qvec)[corpus.vec_row[has]]
        if mask is not None:
            sims[~mask] = -np.inf
        lists["vector"] = top(sims, depth, positive=False)
        return Retrieved(lists=lists, weights=kept, fuzzy_best=fuzzy_best, embedding_ms=embedding_ms, sims=sims)
    return Retrieved(lists=lists, weights=kept, fuzzy_best=fuzzy_best, embedding_ms=None)


# Per-query trust in the dense channel: when the chunk BM25 ranks first holds fewer than half of a
# short question's distinct words, its words did not find the code (a question put in other words
# than the code's), and the vector channel counts DENSE_TRUST times in the fusion. When the words
# do find the code, nothing changes. Measured, with 1.5 and 3 and an idf-weighted share:
# docs/benchmarks.md (issue 24, second part).
WEAK_LEXICAL = 0.5
DENSE_TRUST = 2.0


# A task question is embedded in windows of about this many characters (cut at line ends), each with
# the title in front, and the windows' vectors averaged: the encoder reads ~256 tokens of a text, and
# an issue's evidence (a traceback, a snippet) is often past them.
WINDOW_CHARS = 1000


def embed_question(embedder: EmbeddingProvider, query: ParsedQuery) -> np.ndarray:
    """The query's unit vector: of the text itself, or for a task question the mean of its windows'.

    Raises EmbeddingError from the provider."""
    if query.parts is None:
        texts = [query.text]
    else:
        texts = question_windows(query.text, query.parts.title)
    several = getattr(embedder, "embed_queries", None)  # a provider that embeds queries together
    if len(texts) > 1 and callable(several):
        together = np.asarray(several(texts), dtype=np.float32)
        vecs = [_unit(row) for row in together]
    else:
        vecs = [_unit(np.asarray(embedder.embed_query(t), dtype=np.float32)) for t in texts]
    return vecs[0] if len(vecs) == 1 else _unit(np.mean(vecs, axis=0))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def question_windows(text: str, title: str, size: int = WINDOW_CHARS) -> list[str]:
    """The question in consecutive windows of at most ~`size` characters, cut at line ends (a longer
    line is cut where it reaches the size); every window after the first starts with the title."""
    windows: list[str] = []
    current: list[str] = []
    length = 0
    for whole in text.strip().splitlines():
        line = whole
        while len(line) > size:
            if current:
                windows.append("\n".join(current))
                current, length = [], 0
            windows.append(line[:size])
            line = line[size:]
        if length + len(line) > size and current:
            windows.append("\n".join(current))
            current, length = [], 0
        current.append(line)
        length += len(line) + 1
    if current:
        windows.append("\n".join(current))
    windows = [w for w in windows if w.strip()] or [text]
    return [windows[0]] + [f"{title}\n{w}" for w in windows[1:]]


def top(scores: np.ndarray, depth: int, *, positive: bool) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the `depth` best scores, best first (ties by chunk order)."""
    valid = scores > 0 if positive else np.isfinite(scores)
    n_valid = int(valid.sum())
    if n_valid == 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    k = min(depth, n_valid)
    if k < len(scores):
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(len(scores))
    part = part[valid[part]]
    order = part[np.lexsort((part, -scores[part]))]
    return order, scores[order]


def explain_fuzzy(corpus: Corpus, cands: Mapping[int, Candidate], fuzzy_best: Mapping[str, FuzzyMatch]) -> None:
    """Say which query word a candidate's name was matched from, when not exactly."""
    for i, c in cands.items():
        m = fuzzy_best.get(corpus.symbols[i].lower())
        if m is not None and m.how != "exact":
            c.why.append(f"name {corpus.symbols[i]} ~ {m.word} ({m.how})")


# ---------------------------------------------------------------------------------------- filters

_CONTENT_TYPES = frozenset(t.value for t in ContentType)


def filter_mask(
    corpus: Corpus, path_glob: str | None, languages: tuple[str, ...], content_types: tuple[ContentType, ...]
) -> np.ndarray:
    """Chunks that pass every filter: the path glob, any of the languages, any of the content types.

    Raises InvalidRequestError for a language no indexed file has or an unknown content type."""
    mask = np.ones(len(corpus), dtype=bool)
    if path_glob:
        matches = path_matcher(path_glob)
        ok = np.asarray([matches(f) for f in corpus.files], dtype=bool)
        mask &= ok[corpus.file_of]
    if languages:
        wanted = {lang.lower() for lang in languages}
        known = set(corpus.languages) - {""}
        unknown = sorted(wanted - known)
        if unknown and not wanted & known:
            raise InvalidRequestError(
                f"no indexed files are in language {', '.join(map(repr, unknown))}; indexed: {', '.join(sorted(known))}"
            )
        mask &= np.isin(corpus.language_array, sorted(wanted))
    if content_types:
        wanted_ct = {str(t).lower() for t in content_types}
        bad = sorted(wanted_ct - _CONTENT_TYPES)
        if bad:
            raise InvalidRequestError(
                f"unknown content type {', '.join(map(repr, bad))}: use one of {', '.join(sorted(_CONTENT_TYPES))}"
            )
        mask &= np.isin(corpus.content_type_array, sorted(wanted_ct))
    return mask
