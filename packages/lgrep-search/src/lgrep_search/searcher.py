"""Answer a query from a project's index, in the order the data flows:

parse the query once (query.py) → retrieve ranked candidate lists from the channels over the
in-memory snapshot (retrieval.py: BM25, cosine similarity, fuzzy symbol names) → fuse them by
weighted reciprocal rank fusion, weights by the kind of query (fusion.py) → the ranking signals, each
in its own module beside its constants (signals/: definition, path_match, file_coherence, penalty)
→ select the top results, at most a few per file (signals/diversify.py) → hits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np
from lgrep_core.domain.errors import InvalidRequestError, LgrepError
from lgrep_core.domain.models import FileHit, LineRange, MatchType, SearchHit, SearchRequest, SearchResponse, SearchType
from lgrep_core.domain.pathnames import disk_path
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.storage.layout import HISTORY_FILE, read_history

from .corpus import Corpus
from .file_model import shipped_model
from .files import FILE_CHANNEL_DEPTH, Evidence, RankedFile, rank_files
from .fusion import RRF_K, Candidate, channel_weights, fuse
from .fuzzy import FuzzyMatch
from .history import HistoryIndex
from .pathfilter import relative_to_root
from .query import ParsedQuery, QueryKind, parse_query
from .retrieval import CHANNEL_DEPTH, explain_fuzzy, filter_mask, retrieve
from .signals.definition import boost_definitions
from .signals.diversify import select
from .signals.file_coherence import boost_coherent_files
from .signals.path_match import boost_path_matches
from .signals.penalty import apply_path_penalties
from .snapshot import Snapshots

__all__ = ["DEFAULT_LIMIT", "RRF_K", "SIGNALS", "Searcher", "snippet"]

log = logging.getLogger(__name__)

# Results when a request does not say (the front ends pass the project's search.limit).
DEFAULT_LIMIT = 10
# What a result's snippet may hold; the line range always names the whole chunk.
SNIPPET_MAX_LINES = 40
SNIPPET_MAX_CHARS = 2000


# The ranking signals, by the names explanations and ablations use.
SIGNALS = frozenset(
    {"definition", "path_match", "file_coherence", "penalty", "diversify", "adaptive_weights", "file_model"}
)


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
        history: HistoryIndex | None = None,
    ) -> None:
        """`ranking=False` returns fused channel order as is; `disable` turns single ranking signals
        off (names in SIGNALS), for the benchmark's ablations. With no snapshots, `corpus` is a fixed
        snapshot (benchmarks) and results are not checked against the files on disk, and `history`
        its git history (else the history kept beside the project's index is read)."""
        unknown = disable - SIGNALS
        if unknown:
            raise InvalidRequestError(f"unknown ranking signals {sorted(unknown)}; known: {sorted(SIGNALS)}")
        self.snapshots = snapshots
        self.embedder = embedder
        self.ranking = ranking
        self.disable = disable
        self._corpus: Corpus | None = corpus
        self._fixed_history = history
        self._history: tuple[tuple[int, int], HistoryIndex | None] | None = None
        # Sees each files ranking's candidate files and their evidence (tools/train_file_ranker.py).
        self.on_file_evidence: Callable[[list[int], Evidence], None] | None = None
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
        limit = request.limit or DEFAULT_LIMIT
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
        mask = filter_mask(corpus, path_glob, request.languages, request.content_types) if filtered else None
        searched = int(mask.sum()) if mask is not None else len(corpus)

        query = parse_query(request.query)
        adaptive = "adaptive_weights" not in self.disable
        weights = channel_weights(query.kind if adaptive else QueryKind.NATURAL, request.bm25_weight)

        # A task question (an issue pasted whole) is answered file by file even as chunks: the
        # files its evidence ranks (files.py), each with its best chunk, since "which code do I
        # read for this task" is a question about files (a chunk list ranked on its own put the
        # right file in its first 5 less often: docs/benchmarks.md, issue 24).
        by_files = request.files or (
            query.parts is not None and self.ranking and request.search_type is SearchType.HYBRID
        )

        t0 = time.perf_counter()
        found = retrieve(
            corpus,
            query,
            search_type=request.search_type,
            weights=weights,
            mask=mask,
            embedder=self.embedder,
            depth=FILE_CHANNEL_DEPTH if by_files else CHANNEL_DEPTH,
        )
        if found.embedding_ms is not None:
            timings["query_embedding_ms"] = found.embedding_ms
        timings["retrieval_ms"] = (time.perf_counter() - t0) * 1000 - timings.get("query_embedding_ms", 0.0)

        t0 = time.perf_counter()
        cands = fuse(found.lists, found.weights)
        if self.ranking and cands:
            # The file ranking weighs each file's definitions of the question's names itself; the
            # chunk signal's scan of every candidate's text would only repeat it.
            skip = frozenset({"definition"}) if by_files else frozenset()
            self._rank(corpus, query, cands, mask, found.fuzzy_best, skip=skip)
        hits: list[SearchHit] = []
        files: list[FileHit] = []
        ranked: list[RankedFile] = []
        if by_files:
            model = shipped_model() if self.ranking and "file_model" not in self.disable else None
            ranked = rank_files(
                corpus,
                query,
                cands,
                sims=found.sims,
                mask=mask,
                limit=limit,
                on_evidence=self.on_file_evidence,
                model=model,
                history=self.history() if query.parts is not None else None,
            )
        if request.files:
            timings["ranking_ms"] = (time.perf_counter() - t0) * 1000
            stale = self._stale_paths(corpus, {corpus.files[r.file] for r in ranked})
            files = [self._file_hit(corpus, r, stale) for r in ranked]
        else:
            if by_files:
                chosen = _chunks_of_files(ranked, cands, limit)
            else:
                chosen = select(corpus, cands, limit, self.ranking and "diversify" not in self.disable)
            timings["ranking_ms"] = (time.perf_counter() - t0) * 1000
            stale = self._stale_paths(
                corpus, {corpus.paths[i] for i, _ in chosen} | {corpus.files[r.file] for r in ranked}
            )
            hits = [self._hit(corpus, i, c, stale) for i, c in chosen]
            # A task question's chunk answer leads with the files it was ranked by: the files to
            # open, then their best chunks (an agent that pasted an issue wants both).
            files = [self._file_hit(corpus, r, stale) for r in ranked]
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return SearchResponse(
            files=files,
            results=hits,
            timings_ms={k: round(v, 3) for k, v in timings.items()},
            chunks_searched=searched,
            vectors_pending=corpus.vectors_pending,
            query_kind=str(query.kind),
            search_type=request.search_type,
            notes=found.notes,
        )

    # ------------------------------------------------------------------------------------- ranking

    def _rank(
        self,
        corpus: Corpus,
        query: ParsedQuery,
        cands: dict[int, Candidate],
        mask: np.ndarray | None,
        fuzzy_best: dict[str, FuzzyMatch],
        *,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        """The ranking signals, in order, but those in `skip`; boosts are in units of the best fused score."""
        top = max(c.fused for c in cands.values())
        off = self.disable | skip
        if "definition" not in off:  # definitions of the queried names, candidates or not
            boost_definitions(corpus, cands, query, top, mask)
        if "path_match" not in off:  # query words in the file's name and folder
            boost_path_matches(corpus, cands, query, top)
        if "file_coherence" not in off:  # several matching chunks lift the file's best one
            boost_coherent_files(corpus, cands, top)
        if "penalty" not in off:  # tests, examples, vendored, generated, docs, ...
            apply_path_penalties(corpus, cands, query)
        if fuzzy_best:
            explain_fuzzy(corpus, cands, fuzzy_best)

    # ------------------------------------------------------------------------------------- results

    def _hit(self, corpus: Corpus, i: int, c: Candidate, stale: set[str]) -> SearchHit:
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
            kind=corpus.kind_of(i),
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

    def _file_hit(self, corpus: Corpus, r: RankedFile, stale: set[str]) -> FileHit:
        path = corpus.files[r.file]
        first = corpus.chunks_of(r.file)
        return FileHit(
            path=path,
            score=round(r.score, 6),
            language=corpus.languages[first.start] if len(first) else "",
            ranges=tuple(
                LineRange(int(corpus.start_line[i]), int(corpus.end_line[i]), corpus.symbols[i]) for i in r.chunks
            ),
            why=tuple(r.why),
            stale=path in stale,
        )

    def history(self) -> HistoryIndex | None:
        """The project's git history for task questions: the one given, or the one kept beside
        the index (read again when its file changes)."""
        if self.snapshots is None:
            return self._fixed_history
        path = self.snapshots.reader.dir / HISTORY_FILE
        try:
            st = path.stat()
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        if self._history is None or self._history[0] != key:
            kept = read_history(self.snapshots.reader.dir)
            self._history = (key, HistoryIndex(kept) if kept is not None else None)
        return self._history[1]

    def _stale_paths(self, corpus: Corpus, paths: set[str]) -> set[str]:
        """The result files that changed on disk since they were indexed (by their stat, as the
        indexer decides it: `FileRecord.matches`; size and mtime only for a record from an older
        manifest that lacks ctime and inode)."""
        if self.snapshots is None or corpus.version is None or not paths:
            return set()
        reader = self.snapshots.reader
        try:
            indexed = self.snapshots.indexed_stats(corpus)
        except LgrepError:
            # A rebuild replaced the snapshot's generation since it was loaded: the new one's
            # manifest describes the same files on disk.
            try:
                indexed = reader.manifest(reader.version(), sorted(paths))
            except LgrepError:
                return set()
        stale: set[str] = set()
        for path in paths:
            try:
                st = disk_path(reader.root, path).lstat()  # a path may show escaped bytes
            except OSError:
                stale.add(path)  # deleted since it was indexed
                continue
            rec = indexed.get(path)
            if rec is None or not rec.matches(
                st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, unknown_matches=True
            ):
                stale.add(path)
        return stale


# ---------------------------------------------------------------------------------------- helpers


def _chunks_of_files(ranked: list[RankedFile], cands: dict[int, Candidate], limit: int) -> list[tuple[int, Candidate]]:
    """Up to `limit` chunks of the ranked files: the best chunk of each file in the files' order,
    then the second best of each, and so on; each scored as its file, with its file's evidence."""
    chosen: list[tuple[int, Candidate]] = []
    for depth in range(max((len(r.chunks) for r in ranked), default=0)):
        for r in ranked:
            if len(chosen) >= limit:
                return chosen
            if depth < len(r.chunks):
                i = r.chunks[depth]
                c = cands.get(i) or Candidate()
                c.score = r.score
                c.why.extend(w for w in r.why if w not in c.why)
                chosen.append((i, c))
    return chosen


def snippet(content: str) -> tuple[str, bool]:
    lines = content.splitlines()
    cut = "\n".join(lines[:SNIPPET_MAX_LINES])
    if len(cut) > SNIPPET_MAX_CHARS:
        cut = cut[:SNIPPET_MAX_CHARS].rsplit("\n", 1)[0] or cut[:SNIPPET_MAX_CHARS]
    return cut, len(cut) < len(content.rstrip("\n"))
