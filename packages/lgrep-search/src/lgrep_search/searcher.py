"""Answer a query from a project's index: vector and BM25 results fused by reciprocal rank fusion.

The full code-aware ranking stack is its own piece of work; this is the plain, honest baseline that
the quick start and the benchmark build on.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.errors import InvalidRequestError
from lgrep_core.models import SearchHit, SearchResponse
from lgrep_core.storage.store import ProjectStore

__all__ = ["RRF_K", "SearchType", "Searcher"]

log = logging.getLogger(__name__)

# The constant of reciprocal rank fusion (Cormack et al. 2009); 60 is the published default and the
# value semble and most hybrid engines use.
RRF_K = 60
# Each channel contributes this many candidates per requested result before fusion.
CANDIDATES_PER_RESULT = 5
MIN_CANDIDATES = 50

_COLUMNS = ["path", "start_line", "end_line", "symbol", "kind", "language", "content", "vec_key"]


class SearchType(StrEnum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    BM25 = "bm25"


@dataclass(slots=True)
class _Candidate:
    row: dict[str, Any]
    ranks: dict[str, int]
    scores: dict[str, float]


class Searcher:
    """Searches one project. Holds the vector matrix in memory once loaded, so repeated queries on
    the same instance cost a matrix product, not a table scan."""

    def __init__(self, store: ProjectStore, embedder: EmbeddingProvider | None) -> None:
        self.store = store
        self.embedder = embedder
        self._keys: list[str] = []
        self._matrix: np.ndarray | None = None
        self._manifest: dict[str, tuple[int, int]] | None = None

    def search(self, query: str, *, limit: int = 10, search_type: SearchType = SearchType.HYBRID) -> SearchResponse:
        """Raises:
        InvalidRequestError: empty query or a non-positive limit.
        NotFoundError / StorageError: no usable index.
        """
        if not query.strip():
            raise InvalidRequestError("the query is empty")
        if limit <= 0:
            raise InvalidRequestError(f"limit must be positive, got {limit}")
        timings: dict[str, float] = {}
        started = time.perf_counter()
        self.store.open()
        depth = max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
        candidates: dict[tuple[str, int, int], _Candidate] = {}

        if search_type in (SearchType.HYBRID, SearchType.BM25):
            t0 = time.perf_counter()
            table = self.store.fts_search(query, depth, [*_COLUMNS, "_score"])
            timings["bm25_ms"] = (time.perf_counter() - t0) * 1000
            scores = table.column("_score").to_pylist() if table.num_rows else []
            for rank, row in enumerate(table.select(_COLUMNS).to_pylist()):
                cand = _candidate(candidates, row)
                cand.ranks["bm25"] = rank
                cand.scores["bm25"] = float(scores[rank])

        if search_type in (SearchType.HYBRID, SearchType.VECTOR) and self.embedder is not None:
            t0 = time.perf_counter()
            qvec = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
            timings["query_embedding_ms"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            self._vector_candidates(qvec, depth, candidates)
            timings["vector_ms"] = (time.perf_counter() - t0) * 1000

        t0 = time.perf_counter()
        ranked = sorted(candidates.values(), key=lambda c: -_rrf(c.ranks))[:limit]
        stale = self._stale_paths({c.row["path"] for c in ranked})
        hits = [
            SearchHit(
                path=c.row["path"],
                start_line=int(c.row["start_line"]),
                end_line=int(c.row["end_line"]),
                symbol=c.row["symbol"] or "",
                kind=c.row["kind"] or "",
                language=c.row["language"] or "",
                score=round(_rrf(c.ranks), 6),
                content=c.row["content"],
                match="+".join(sorted(c.ranks)),
                scores={
                    **{f"{k}_rank": float(v + 1) for k, v in c.ranks.items()},
                    **{f"{k}_score": round(v, 6) for k, v in c.scores.items()},
                },
                stale=c.row["path"] in stale,
            )
            for c in ranked
        ]
        timings["ranking_ms"] = (time.perf_counter() - t0) * 1000
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return SearchResponse(
            results=hits,
            timings_ms={k: round(v, 3) for k, v in timings.items()},
            chunks_searched=self.store.chunks.count_rows(),
            vectors_pending=self._pending(),
        )

    def _vector_candidates(self, qvec: np.ndarray, depth: int, out: dict[tuple[str, int, int], _Candidate]) -> None:
        if self._matrix is None:
            # Only vectors some chunk still refers to; the vectors table also keeps a cache of old ones.
            self._keys, self._matrix = self.store.load_vectors(self.store.chunk_vector_keys())
        if not self._keys:
            return
        sims = self._matrix @ qvec
        top = np.argsort(-sims)[:depth]
        keys = [self._keys[i] for i in top]
        sim_of = {self._keys[i]: float(sims[i]) for i in top}
        order = {k: r for r, k in enumerate(keys)}
        rows = self.store.chunks_by_vector_keys(keys, _COLUMNS).to_pylist()
        rows.sort(key=lambda r: (order[r["vec_key"]], r["path"], r["start_line"]))
        for rank, row in enumerate(rows[:depth]):
            cand = _candidate(out, row)
            cand.ranks["vector"] = rank
            cand.scores["vector"] = sim_of[row["vec_key"]]

    def _pending(self) -> int:
        return self.store.count_pending_chunks(set(self._keys) if self._matrix is not None else None)

    def _stale_paths(self, paths: set[str]) -> set[str]:
        records = self.store.manifest_get(sorted(paths))
        stale: set[str] = set()
        for path in paths:
            rec = records.get(path)
            try:
                st = Path(self.store.root, path).lstat()
            except OSError:
                stale.add(path)  # deleted since it was indexed
                continue
            if rec is None or rec.size != st.st_size or rec.mtime_ns != st.st_mtime_ns:
                stale.add(path)
        return stale


def _candidate(out: dict[tuple[str, int, int], _Candidate], row: dict[str, Any]) -> _Candidate:
    key = (row["path"], int(row["start_line"]), int(row["end_line"]))
    cand = out.get(key)
    if cand is None:
        cand = _Candidate(row=row, ranks={}, scores={})
        out[key] = cand
    return cand


def _rrf(ranks: dict[str, int]) -> float:
    return sum(1.0 / (RRF_K + r + 1) for r in ranks.values())
