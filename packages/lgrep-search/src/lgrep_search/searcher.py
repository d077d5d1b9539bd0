"""Answer a query from a project's index.

Three retrieval channels over an in-memory snapshot of the index (corpus.py): BM25 over code-aware
terms, cosine similarity over the stored embeddings, and fuzzy matching of symbol names. Their ranked
lists are fused by weighted reciprocal rank fusion, with weights chosen by the kind of query, and the
fused candidates go through the code-aware ranking stack (ranking.py) before the top results are
selected, at most a few per file.
"""

from __future__ import annotations

import heapq
import logging
import re
import time
from dataclasses import dataclass, field

import numpy as np
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.errors import InvalidRequestError, LgrepError
from lgrep_core.models import ChunkKind, ContentType, MatchType, SearchHit, SearchRequest, SearchResponse, SearchType
from lgrep_core.pathnames import disk_path

from . import ranking as rk
from .corpus import Corpus, file_name_key
from .fuzzy import FuzzyMatch, query_identifiers
from .lexical import query_terms
from .pathfilter import path_matcher, relative_to_root
from .snapshot import Snapshots

__all__ = ["DEFAULT_LIMIT", "RRF_K", "SIGNALS", "Searcher", "snippet"]

log = logging.getLogger(__name__)

# The constant of reciprocal rank fusion (Cormack et al. 2009); 60 is the published default.
RRF_K = 60
# Each channel contributes this many candidates before fusion: deep enough that a chunk ranked low by
# one channel but high by another still meets the ranking stack.
CHANNEL_DEPTH = 100
# Results when a request does not say (the front ends pass the project's search.limit).
DEFAULT_LIMIT = 10
# What a result's snippet may hold; the line range always names the whole chunk.
SNIPPET_MAX_LINES = 40
SNIPPET_MAX_CHARS = 2000


# The ranking signals, by the names explanations and ablations use.
SIGNALS = frozenset({"definition", "path_match", "file_coherence", "penalty", "diversify", "adaptive_weights"})


_CHANNELS = {
    SearchType.HYBRID: ("bm25", "vector", "fuzzy"),
    SearchType.VECTOR: ("vector",),
    SearchType.BM25: ("bm25",),
    SearchType.FUZZY: ("fuzzy",),
}


@dataclass(slots=True)
class _Cand:
    fused: float = 0.0  # the weighted reciprocal-rank-fusion score
    score: float = 0.0  # after the ranking signals
    ranks: dict[str, int] = field(default_factory=dict)  # channel -> 0-based rank
    raw: dict[str, float] = field(default_factory=dict)  # channel -> the channel's own score
    signals: dict[str, float] = field(default_factory=dict)  # signal -> its effect
    why: list[str] = field(default_factory=list)


class Searcher:
    """Searches one project from the snapshot its `Snapshots` keeps current, so repeated queries on
    one instance cost array arithmetic, not table scans."""

    def __init__(
        self,
        snapshots: Snapshots | None,
        embedder: EmbeddingProvider | None,
        *,
        ranking: bool = True,
        disable: frozenset[str] = frozenset(),
        corpus: Corpus | None = None,
    ) -> None:
        """`ranking=False` returns fused channel order as is; `disable` turns single ranking signals
        off (names in SIGNALS), for the benchmark's ablations. With no snapshots, `corpus` is a fixed
        snapshot (benchmarks) and results are not checked against the files on disk."""
        unknown = disable - SIGNALS
        if unknown:
            raise InvalidRequestError(f"unknown ranking signals {sorted(unknown)}; known: {sorted(SIGNALS)}")
        self.snapshots = snapshots
        self.embedder = embedder
        self.ranking = ranking
        self.disable = disable
        self._corpus: Corpus | None = corpus
        if snapshots is None and corpus is None:
            raise InvalidRequestError("a searcher needs a project's snapshots or a corpus")

    def corpus(self) -> Corpus:
        """The snapshot to answer from. Raises NotFoundError / StorageError when there is no usable index."""
        if self.snapshots is None:
            assert self._corpus is not None
            return self._corpus
        return self.snapshots.current()

    # -------------------------------------------------------------------------------------- search

    def search(self, request: SearchRequest) -> SearchResponse:
        """Raises:
        InvalidRequestError: a malformed request (SearchRequest.validate) or an unknown filter value.
        NotFoundError / StorageError: no usable index.
        """
        request.validate()
        query = request.query
        limit = request.limit or DEFAULT_LIMIT
        search_type = request.search_type
        started = time.perf_counter()
        timings: dict[str, float] = {}
        path_glob = request.path_glob
        if path_glob and self.snapshots is not None:  # an absolute --path
            path_glob = relative_to_root(path_glob, self.snapshots.reader.root) or None
        loaded = self.snapshots.loaded if self.snapshots is not None else self._corpus
        corpus = self.corpus()
        if corpus is not loaded:
            timings["load_ms"] = corpus.load_ms
        filtered = bool(path_glob or request.languages or request.content_types)
        mask = _filter_mask(corpus, path_glob, request.languages, request.content_types) if filtered else None
        searched = int(mask.sum()) if mask is not None else len(corpus)
        kind = rk.classify_query(query)
        weights = rk.channel_weights(
            kind if "adaptive_weights" not in self.disable else rk.QueryKind.NATURAL, request.bm25_weight
        )
        channels = _CHANNELS[search_type]
        if search_type is SearchType.HYBRID:  # a channel weighted 0 does not run (the vector may, below)
            weights = {ch: w for ch, w in weights.items() if w > 0}
            channels = tuple(ch for ch in channels if ch in weights or ch == "vector")
        else:
            weights = dict.fromkeys(channels, 1.0)

        t0 = time.perf_counter()
        lists: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        fuzzy_best: dict[str, FuzzyMatch] = {}
        if "bm25" in channels:
            scores = corpus.lexical.scores(query_terms(query), mask)
            lists["bm25"] = _top(scores, CHANNEL_DEPTH, positive=True)
        if "fuzzy" in channels:
            scores, fuzzy_best = corpus.symbol_index.scores(query_identifiers(query), len(corpus))
            if mask is not None:
                scores[~mask] = 0.0
            lists["fuzzy"] = _top(scores, CHANNEL_DEPTH, positive=True)
        # Symbol queries weigh the vector 0 and skip the encoder, unless nothing lexical matched.
        if "vector" in channels and "vector" not in weights and not any(len(idx) for idx, _ in lists.values()):
            weights["vector"] = 1.0
        wants_vector = "vector" in weights
        if wants_vector and self.embedder is not None and len(corpus.matrix):
            t1 = time.perf_counter()
            qvec = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
            qvec /= max(float(np.linalg.norm(qvec)), 1e-12)
            timings["query_embedding_ms"] = (time.perf_counter() - t1) * 1000
            sims = np.full(len(corpus), -np.inf, dtype=np.float32)
            has = corpus.vec_row >= 0
            sims[has] = (corpus.matrix @ qvec)[corpus.vec_row[has]]
            if mask is not None:
                sims[~mask] = -np.inf
            lists["vector"] = _top(sims, CHANNEL_DEPTH, positive=False)
        timings["retrieval_ms"] = (time.perf_counter() - t0) * 1000 - timings.get("query_embedding_ms", 0.0)

        t0 = time.perf_counter()
        cands: dict[int, _Cand] = {}
        for name, (idx, vals) in lists.items():
            w = weights[name]
            for rank, (i, v) in enumerate(zip(idx.tolist(), vals.tolist(), strict=True)):
                c = cands.get(i)
                if c is None:
                    c = cands[i] = _Cand()
                c.ranks[name] = rank
                c.raw[name] = v
                c.fused += w / (RRF_K + rank + 1)
        for c in cands.values():
            c.score = c.fused
        if self.ranking and cands:
            self._rank(corpus=corpus, query=query, kind=kind, cands=cands, mask=mask, fuzzy_best=fuzzy_best)
        chosen = _select(corpus, cands, limit, self.ranking and "diversify" not in self.disable)
        timings["ranking_ms"] = (time.perf_counter() - t0) * 1000

        stale = self._stale_paths(corpus, {corpus.paths[i] for i, _ in chosen})
        hits = [self._hit(corpus, i, c, stale) for i, c in chosen]
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return SearchResponse(
            results=hits,
            timings_ms={k: round(v, 3) for k, v in timings.items()},
            chunks_searched=searched,
            vectors_pending=corpus.vectors_pending,
            query_kind=str(kind),
            search_type=search_type,
        )

    # ------------------------------------------------------------------------------------- ranking

    def _rank(
        self,
        *,
        corpus: Corpus,
        query: str,
        kind: rk.QueryKind,
        cands: dict[int, _Cand],
        mask: np.ndarray | None,
        fuzzy_best: dict[str, FuzzyMatch],
    ) -> None:
        top = max(c.fused for c in cands.values())

        off = self.disable
        # 1. Definitions of the queried names, candidates or not.
        if "definition" in off:
            names, unit = [], 0.0
        elif kind is rk.QueryKind.SYMBOL:
            names, unit = query_identifiers(query) or [query.strip()], rk.DEFINITION_BOOST * top
        else:
            names, unit = rk.embedded_identifiers(query), rk.DEFINITION_BOOST * rk.EMBEDDED_DEFINITION_SCALE * top
        for name in names:
            self._boost_definitions(corpus, name, unit, cands, mask)

        # 2. Query words in the file's name and folder.
        if kind is rk.QueryKind.NATURAL and "path_match" not in off:
            keywords = rk.query_keywords(query)
            if keywords:
                counts = corpus.path_match_counts(keywords, rk.PATH_PREFIX_MIN)
                for i, c in cands.items():
                    share = float(counts[corpus.file_of[i]]) / len(keywords)
                    if share >= rk.PATH_MATCH_MIN_SHARE:
                        boost = rk.PATH_MATCH_BOOST * top * share
                        c.score += boost
                        c.signals["path_match"] = boost
                        c.why.append(f"path matches {share:.0%} of the query words")

        # 3. File coherence: several matching chunks lift the file's best one.
        if "file_coherence" not in off:
            self._boost_coherent_files(corpus, cands, top)

        # 4. Path penalties (tests, examples, vendored, generated, docs, ...).
        if "penalty" not in off:
            self._apply_path_penalties(corpus, cands, query)

        if fuzzy_best:
            for i, c in cands.items():
                m = fuzzy_best.get(corpus.symbols[i].lower())
                if m is not None and m.how != "exact":
                    c.why.append(f"name {corpus.symbols[i]} ~ {m.word} ({m.how})")

    def _boost_coherent_files(self, corpus: Corpus, cands: dict[int, _Cand], top: float) -> None:
        file_sum: dict[int, float] = {}
        best_of: dict[int, int] = {}
        strong = sorted(cands.items(), key=lambda kv: -kv[1].score)[: rk.FILE_COHERENCE_TOP]
        # Evidence is each chunk's best channel score, min-max scaled over the strong candidates:
        # fused RRF scores are rank-compressed, and a file of many weak matches must not outweigh
        # one clearly better chunk.
        lo: dict[str, float] = {}
        hi: dict[str, float] = {}
        for _, c in strong:
            for ch, v in c.raw.items():
                lo[ch] = min(lo.get(ch, v), v)
                hi[ch] = max(hi.get(ch, v), v)
        evidence = {
            i: max(
                ((v - lo[ch]) / (hi[ch] - lo[ch]) if hi[ch] > lo[ch] else 1.0 for ch, v in c.raw.items()),
                default=0.0,
            )
            for i, c in strong
        }
        for i, c in strong:
            f = int(corpus.file_of[i])
            file_sum[f] = file_sum.get(f, 0.0) + evidence[i]
            if f not in best_of or c.score > cands[best_of[f]].score:
                best_of[f] = i
        max_sum = max(file_sum.values())
        if max_sum > 0:
            for f, i in best_of.items():
                boost = rk.FILE_COHERENCE_BOOST * top * file_sum[f] / max_sum
                cands[i].score += boost
                cands[i].signals["file_coherence"] = boost

    def _apply_path_penalties(self, corpus: Corpus, cands: dict[int, _Cand], query: str) -> None:
        for i, c in cands.items():
            is_docs = corpus.content_types[i] == ContentType.DOCS.value
            factor, applied = rk.path_penalty(corpus.paths[i], is_docs, query)
            if not applied:
                continue
            if sum(1 for r in c.ranks.values() if r == 0) >= rk.PENALTY_EXEMPT_FIRST_IN:
                c.why.append(
                    f"{'+'.join(applied)} file, not penalised: first in {rk.PENALTY_EXEMPT_FIRST_IN}+ channels"
                )
                continue
            c.score *= factor
            c.signals["penalty"] = factor
            c.why.append(f"{'+'.join(applied)} file ×{factor:g}")

    def _boost_definitions(
        self, corpus: Corpus, name: str, unit: float, cands: dict[int, _Cand], mask: np.ndarray | None
    ) -> None:
        """Boost the chunks that define `name`: full strength where a definition line of exactly that
        name is in the chunk, weaker for a symbol-table match without one (a constructor, an `impl`
        block, a name that differs in case)."""
        last = re.split(r"::|\.|->|\\", name)[-1]
        pattern = rk.definition_pattern(name)
        tiers: dict[int, float] = {}
        for i in corpus.symbol_index.chunks_defining(name).tolist():
            text = corpus.contents[i]
            exact_line = corpus.symbols[i] == last and name in text and pattern.search(text) is not None
            tiers[i] = 1.0 if exact_line else rk.DEFINITION_WEAK_SCALE
        named = [i for f in corpus.files_named(name) for i in corpus.chunks_of(f)]
        for i in (*cands, *named):  # definition lines inside other chunks (a method in a class chunk)
            if i not in tiers:
                text = corpus.contents[i]
                if name in text and pattern.search(text):
                    tiers[i] = 1.0
        lname = name.lower()
        for i, tier in tiers.items():
            if (mask is not None and not mask[i]) or corpus.kinds[i] == _ANCHOR:
                continue  # an anchor's "symbol" is its file's name, not a definition
            c = cands.get(i)
            if c is None:
                c = cands[i] = _Cand()
            if "definition" in c.signals:
                continue
            boost = unit * tier * (rk.DEFINITION_FILE_MATCH_SCALE if _file_named(corpus.paths[i], lname) else 1.0)
            c.score += boost
            c.signals["definition"] = boost
            c.why.append(f"defines {name}" if tier == 1.0 else f"named {corpus.symbols[i]}, like {name}")

    # ------------------------------------------------------------------------------------- results

    def _hit(self, corpus: Corpus, i: int, c: _Cand, stale: set[str]) -> SearchHit:
        content = corpus.contents[i]
        shown, truncated = snippet(content)
        truncated = truncated or bool(corpus.cut[i])
        scores: dict[str, float] = {}
        for name, rank in c.ranks.items():
            scores[f"{name}_rank"] = float(rank + 1)
            scores[f"{name}_score"] = round(float(c.raw[name]), 6)
        scores["fused"] = round(c.fused, 6)
        for name, v in c.signals.items():
            scores[name] = round(v, 6)
        path = corpus.paths[i]
        return SearchHit(
            path=path,
            start_line=int(corpus.start_line[i]),
            end_line=int(corpus.end_line[i]),
            symbol=corpus.symbols[i],
            kind=ChunkKind(corpus.kinds[i]) if corpus.kinds[i] in _KINDS else None,
            language=corpus.languages[i],
            score=round(c.score, 6),
            content=shown,
            match=tuple(MatchType(ch) for ch in sorted(c.ranks))
            or ((MatchType.DEFINITION,) if c.signals.get("definition") else ()),
            scores=scores,
            stale=path in stale,
            why=tuple(c.why),
            truncated=truncated,
        )

    def _stale_paths(self, corpus: Corpus, paths: set[str]) -> set[str]:
        """The result files that changed on disk since they were indexed (by size and mtime)."""
        if self.snapshots is None or corpus.version is None or not paths:
            return set()
        reader = self.snapshots.reader
        try:
            records = reader.manifest(corpus.version, sorted(paths))
        except LgrepError:
            # A rebuild replaced the snapshot's generation since it was loaded: the new one's
            # manifest describes the same files on disk.
            try:
                records = reader.manifest(reader.version(), sorted(paths))
            except LgrepError:
                return set()
        stale: set[str] = set()
        for path in paths:
            rec = records.get(path)
            try:
                st = disk_path(reader.root, path).lstat()  # a path may show escaped bytes
            except OSError:
                stale.add(path)  # deleted since it was indexed
                continue
            if rec is None or rec.size != st.st_size or rec.mtime_ns != st.st_mtime_ns:
                stale.add(path)
        return stale


# ---------------------------------------------------------------------------------------- helpers


def _top(scores: np.ndarray, depth: int, *, positive: bool) -> tuple[np.ndarray, np.ndarray]:
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


def _file_named(path: str, name: str) -> bool:
    """Is the file named after `name` (Logger.php for Logger, indifferent_hash.rb for IndifferentHash)?"""
    key = file_name_key(path)
    name = re.split(r"::|\.|->|\\", name)[-1].lower().replace("_", "")
    return key in (name, name + "s")


def _select(corpus: Corpus, cands: dict[int, _Cand], limit: int, diversify: bool) -> list[tuple[int, _Cand]]:
    """Best first; with `diversify`, overlapping chunks of one file are dropped, a file's later chunks
    decay, and no file gives more than MAX_CHUNKS_PER_FILE."""
    ranked = sorted(cands.items(), key=lambda kv: (-kv[1].score, kv[0]))
    if not diversify:
        return ranked[:limit]
    taken: dict[int, list[int]] = {}
    selected: list[tuple[float, int, _Cand]] = []
    best: list[float] = []  # min-heap of the `limit` best effective scores so far
    for i, c in ranked:
        if len(best) >= limit and c.score <= best[0]:
            break  # scores only fall from here, and decay only lowers them further
        f = int(corpus.file_of[i])
        mine = taken.setdefault(f, [])
        if len(mine) >= rk.MAX_CHUNKS_PER_FILE:
            continue
        s, e = corpus.start_line[i], corpus.end_line[i]
        if any(not (e < corpus.start_line[j] or s > corpus.end_line[j]) for j in mine):
            continue  # overlaps a better chunk of the same file
        eff = c.score * rk.FILE_SATURATION_DECAY ** len(mine)
        if mine:
            c.signals["saturation"] = rk.FILE_SATURATION_DECAY ** len(mine)
        c.score = eff
        mine.append(i)
        selected.append((eff, i, c))
        if len(best) < limit:
            heapq.heappush(best, eff)
        elif eff > best[0]:
            heapq.heapreplace(best, eff)
    selected.sort(key=lambda t: (-t[0], t[1]))
    return [(i, c) for _, i, c in selected[:limit]]


def snippet(content: str) -> tuple[str, bool]:
    lines = content.splitlines()
    cut = "\n".join(lines[:SNIPPET_MAX_LINES])
    if len(cut) > SNIPPET_MAX_CHARS:
        cut = cut[:SNIPPET_MAX_CHARS].rsplit("\n", 1)[0] or cut[:SNIPPET_MAX_CHARS]
    return cut, len(cut) < len(content.rstrip("\n"))


_ANCHOR = ChunkKind.ANCHOR.value


_KINDS = frozenset(k.value for k in ChunkKind)
_CONTENT_TYPES = frozenset(t.value for t in ContentType)


def _filter_mask(
    corpus: Corpus, path_glob: str | None, languages: tuple[str, ...], content_types: tuple[ContentType, ...]
) -> np.ndarray:
    """Chunks that pass every filter: the path glob, any of the languages, any of the content types."""
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


def _path_matches(path: str, pattern: str) -> bool:
    """Whether a `--path` value selects this project-relative path (pathfilter.path_matcher)."""
    return path_matcher(pattern)(path)
