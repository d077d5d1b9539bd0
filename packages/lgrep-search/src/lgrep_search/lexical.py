"""BM25 over code-aware terms, held in memory as precomputed postings.

Three fields per chunk, merged BM25F-style into one weighted term frequency before length
normalisation: the chunk's text, its symbol (the name it defines) and its file path. The postings store
each (term, chunk) pair's saturated, length-normalised weight, so a query costs one gather-add per
query term over that term's posting list: well under a millisecond at 10,000 chunks.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from lgrep_core.domain.text import QUERY_STOPWORDS, analyze

__all__ = ["BM25_B", "BM25_K1", "FieldWeights", "LexicalIndex", "Vocabulary", "postings", "query_terms"]

# Okapi defaults (Robertson & Zaragoza 2009); code chunks are short and fairly uniform in length,
# where the textbook values do as well as any we tried.
BM25_K1 = 1.2
BM25_B = 0.75
_SCORING_ONLY = np.zeros(0, dtype=np.float32)


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """How much one occurrence of a term counts in each field, relative to the chunk text."""

    # A term in the name a chunk defines says more than one in its body: the chunk *is* that thing.
    symbol: float = 2.0
    # File paths name what a file is about (auth/jwt.py), but every chunk of the file shares them, so
    # one mention there counts less than one in the text.
    path: float = 0.5


def query_terms(query: str) -> list[str]:
    """The analysed query, stopwords (`how`, `the`, `does`) dropped unless nothing else is left."""
    terms = analyze(query)
    kept = [t for t in terms if t not in QUERY_STOPWORDS]
    return kept or terms


_term_hash = hash  # a name of its own, so a test can make every term collide


class Vocabulary:
    """Term -> term id of a built index, packed: the terms' UTF-8 in one buffer in id order, and
    their hashes sorted beside their ids. A dict of the 105k terms of a 41.6k-chunk project held
    12.5 MB of small objects; this holds about 3 MB in four flat arrays, and an edit extends it
    without copying a dict (`numbered`). A lookup (under a microsecond; a dict's is 0.03) hashes the term, finds
    the hash by binary search and compares the stored bytes, so two terms with one hash stay apart.

    The hashes are Python's own (salted per process, and cached in each string): a pickle keeps
    the terms only, and the process that loads it hashes them again."""

    __slots__ = ("_blob", "_ends", "_hashes", "_ids")

    def __init__(self, terms: Iterable[str] = ()) -> None:
        """`terms` in id order: the first is id 0."""
        terms = list(terms)
        encoded = [_encode(t) for t in terms]
        hashes = np.fromiter((_term_hash(t) for t in terms), dtype=np.int64, count=len(terms))
        ids = np.argsort(hashes, kind="stable")
        self._set(b"".join(encoded), np.cumsum([len(t) for t in encoded], dtype=np.int64), hashes[ids], ids)

    def _set(self, blob: bytes, ends: np.ndarray, hashes: np.ndarray, ids: np.ndarray) -> None:
        # Python arrays, not numpy's: `bisect` and indexing on them cost a third of numpy's per call.
        self._blob = blob
        self._ends = array("q", ends.astype(np.int64).tobytes())
        self._hashes = array("q", hashes.astype(np.int64).tobytes())
        self._ids = array("i", ids.astype(np.int32).tobytes())

    def __len__(self) -> int:
        return len(self._ends)

    def __getstate__(self) -> tuple[bytes, bytes]:
        return self._blob, self._ends.tobytes()

    def __setstate__(self, state: tuple[bytes, bytes]) -> None:
        blob, ends = state
        self._blob, self._ends = blob, array("q", ends)
        self.__init__(list(self))  # hashes of this process

    def get(self, term: str) -> int | None:
        h = _term_hash(term)
        tid = self._find(term, h, bisect_left(self._hashes, h))
        return tid if tid >= 0 else None

    def _find(self, term: str, h: int, at: int) -> int:
        """The id of `term` (hash `h`), looked for from `at`, where its hash would sort; -1 if absent."""
        hashes, encoded = self._hashes, _encode(term)
        while at < len(hashes) and hashes[at] == h:
            tid = self._ids[at]
            if self._bytes(tid) == encoded:
                return tid
            at += 1
        return -1

    def _bytes(self, tid: int) -> bytes:
        return self._blob[self._ends[tid - 1] if tid else 0 : self._ends[tid]]

    def __iter__(self) -> Iterator[str]:
        return (self._bytes(i).decode("utf-8", "surrogatepass") for i in range(len(self)))

    def numbered(self, terms: Sequence[str]) -> tuple[np.ndarray, Vocabulary]:
        """The id of each of `terms` (distinct), the ones not in this vocabulary numbered after its
        own in the order given; and the vocabulary that holds them all."""
        hashes = np.fromiter((_term_hash(t) for t in terms), dtype=np.int64, count=len(terms))
        at = np.searchsorted(np.frombuffer(self._hashes, dtype=np.int64), hashes).tolist()  # where each would be
        ids = np.empty(len(terms), dtype=np.int32)
        new: list[str] = []
        for i, (term, h, first) in enumerate(zip(terms, hashes.tolist(), at, strict=True)):
            tid = self._find(term, h, first)
            if tid < 0:
                tid = len(self) + len(new)
                new.append(term)
            ids[i] = tid
        return ids, self.with_terms(new)

    def with_terms(self, new: Sequence[str]) -> Vocabulary:
        """This vocabulary and `new` (terms it does not hold), numbered after its own."""
        if not new:
            return self
        encoded = [_encode(t) for t in new]
        ends = len(self._blob) + np.cumsum([len(t) for t in encoded], dtype=np.int64)
        new_hashes = np.array([_term_hash(t) for t in new], dtype=np.int64)
        order = np.argsort(new_hashes, kind="stable")
        old_hashes = np.frombuffer(self._hashes, dtype=np.int64)
        at = np.searchsorted(old_hashes, new_hashes[order], side="right")
        out = Vocabulary.__new__(Vocabulary)
        out._set(
            self._blob + b"".join(encoded),
            np.concatenate([np.frombuffer(self._ends, dtype=np.int64), ends]),
            np.insert(old_hashes, at, new_hashes[order]),
            np.insert(np.frombuffer(self._ids, dtype=np.int32), at, len(self) + order),
        )
        return out


def _encode(term: str) -> bytes:
    return term.encode("utf-8", "surrogatepass")


class LexicalIndex:
    """Immutable BM25F index over a list of chunks; chunk i of the input is document i.

    `merged` derives the index of an edited list of chunks from this one, analysing only the new
    chunks: a reader applying a one-file change does not re-read every chunk's text."""

    def __init__(
        self,
        contents: Sequence[Sequence[str]],
        symbols: Sequence[Sequence[str]],
        paths: Sequence[Sequence[str]],
        weights: FieldWeights = FieldWeights(),
    ) -> None:
        vocab: dict[str, int] = {}
        docs, terms, tf = postings(vocab, 0, contents=contents, symbols=symbols, paths=paths, weights=weights)
        self._finish(vocab, n_docs=len(contents), docs=docs, terms=terms, tf=tf, weights=weights)

    @classmethod
    def of_postings(
        cls,
        vocab: dict[str, int] | Vocabulary,
        n_docs: int,
        parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
        weights: FieldWeights = FieldWeights(),
    ) -> LexicalIndex:
        """The index of `n_docs` documents from postings made in parts (`postings`, each part's
        documents renumbered to their place): a load that analyses a page at a time. It scores
        exactly as the index built from the same documents in one go."""
        out = cls.__new__(cls)
        docs, terms, tf = (
            (np.concatenate([p[i] for p in parts]) for i in range(3))
            if parts
            else (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
        )
        out._finish(vocab, n_docs=n_docs, docs=docs, terms=terms, tf=tf, weights=weights)
        return out

    def _finish(
        self,
        vocab: dict[str, int] | Vocabulary,
        *,
        n_docs: int,
        docs: np.ndarray,
        terms: np.ndarray,
        tf: np.ndarray,
        weights: FieldWeights,
        presorted: bool = False,
    ) -> None:
        """`presorted`: the postings already run by term, then document. A dict vocabulary (a
        build's) is packed; its ids are its insertion order, as `postings` gives them."""
        self.vocab = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
        self.n_docs = n_docs
        self.field_weights = weights
        doc_len = np.bincount(docs, weights=tf, minlength=n_docs).astype(np.float32)
        avg_len = float(doc_len.mean()) if n_docs else 1.0
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * doc_len[docs] / max(avg_len, 1e-9))
        weight = tf * (BM25_K1 + 1.0) / (tf + norm)
        if presorted:
            self._docs, self._tf, self._weights = docs, tf, weight.astype(np.float32)
        else:
            order = np.lexsort((docs, terms))  # by term, then document
            self._docs = docs[order]
            self._tf = tf[order]  # kept for `merged`
            self._weights = weight[order].astype(np.float32)
        df = np.bincount(terms, minlength=len(vocab))
        self._ptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df, out=self._ptr[1:])
        # BM25+-style floor keeps idf positive for terms in more than half the chunks.
        self._idf = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)

    def merged(
        self,
        keep: np.ndarray,
        contents: Sequence[Sequence[str]],
        symbols: Sequence[Sequence[str]],
        paths: Sequence[Sequence[str]],
        position: np.ndarray | None = None,
    ) -> LexicalIndex:
        """The index of this one's documents where `keep` is true, followed by the new documents
        given by their fields; `position[i]` (when given) moves document i of that list to place
        `position[i]`, and must keep the kept documents in their order (new ones go anywhere).
        Statistics (lengths, idf) are recomputed over the result, so it scores exactly as an index
        built from scratch over the same documents would.

        The kept postings stay sorted by (term, document) through that renumbering, so only the new
        documents' postings are sorted and then inserted: no sort of the whole index per edit."""
        self._check_mergeable()
        new_id = np.cumsum(keep, dtype=np.int64) - 1
        terms = np.repeat(np.arange(len(self.vocab), dtype=np.int32), np.diff(self._ptr))
        alive = keep[self._docs]
        old_docs = new_id[self._docs[alive]].astype(np.int32)
        n_kept = int(keep.sum())
        local: dict[str, int] = {}  # the new documents' terms, then numbered as a load's page is
        docs, local_terms, tf = postings(
            local, n_kept, contents=contents, symbols=symbols, paths=paths, weights=self.field_weights
        )
        ids, vocab = self.vocab.numbered(list(local))
        new_terms = ids[local_terms]
        if position is not None:
            old_docs = position[old_docs].astype(np.int32)
            docs = position[docs].astype(np.int32)
        old_terms, old_tf = terms[alive], self._tf[alive]
        order = np.lexsort((docs, new_terms))
        docs, new_terms, tf = docs[order], new_terms[order], tf[order]
        n_docs = n_kept + len(contents)
        old_key = old_terms.astype(np.int64) * n_docs + old_docs
        at = np.searchsorted(old_key, new_terms.astype(np.int64) * n_docs + docs)
        out = LexicalIndex.__new__(LexicalIndex)
        out._finish(
            vocab,
            n_docs=n_docs,
            docs=np.insert(old_docs, at, docs),
            terms=np.insert(old_terms, at, new_terms),
            tf=np.insert(old_tf, at, tf),
            weights=self.field_weights,
            presorted=True,
        )
        return out

    def scores(
        self, terms: Sequence[str], mask: np.ndarray | None = None, weights: Sequence[float] | None = None
    ) -> np.ndarray:
        """BM25 score of every chunk for the (already analysed) query terms; repeated terms count
        once per repetition, and `weights` (one per term) scale each term's part. Chunks outside
        `mask` score 0."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        for n, term in enumerate(terms):
            tid = self.vocab.get(term)
            if tid is None:
                continue
            lo, hi = self._ptr[tid], self._ptr[tid + 1]
            scale = self._idf[tid] * (weights[n] if weights is not None else 1.0)
            out[self._docs[lo:hi]] += scale * self._weights[lo:hi]
        if mask is not None:
            out[~mask] = 0.0
        return out

    def grouped(self, group_of: np.ndarray, n_groups: int) -> LexicalIndex:
        """The index whose documents are groups of this one's (document i in group `group_of[i]`),
        each group's term frequencies the sum of its documents': a whole file's BM25 from its
        chunks', without analysing any text again."""
        self._check_mergeable()
        terms = np.repeat(np.arange(len(self.vocab), dtype=np.int64), np.diff(self._ptr))
        key = terms * n_groups + group_of[self._docs].astype(np.int64)
        uniq, inverse = np.unique(key, return_inverse=True)  # sorted: by term, then group
        tf = np.bincount(inverse, weights=self._tf, minlength=len(uniq)).astype(np.float32)
        out = LexicalIndex.__new__(LexicalIndex)
        out._finish(
            self.vocab,
            n_docs=n_groups,
            docs=(uniq % n_groups).astype(np.int32),
            terms=(uniq // n_groups).astype(np.int32),
            tf=tf,
            weights=self.field_weights,
            presorted=True,
        )
        out._tf = _SCORING_ONLY  # its term frequencies are needed only to merge or group it again (-3 MB at 41.6k)
        return out

    def _check_mergeable(self) -> None:
        if self._tf is _SCORING_ONLY:
            raise ValueError("a grouped index scores only: merge or group the index it came from")

    def idf(self, term: str) -> float:
        tid = self.vocab.get(term)
        return float(self._idf[tid]) if tid is not None else 0.0

    def coverage(self, terms: Sequence[str], doc: int) -> float:
        """The share of the query's distinct terms that document `doc` holds (0 for no terms)."""
        distinct = list(dict.fromkeys(terms))
        held = 0
        for term in distinct:
            tid = self.vocab.get(term)
            if tid is None:
                continue
            lo, hi = int(self._ptr[tid]), int(self._ptr[tid + 1])
            at = lo + int(np.searchsorted(self._docs[lo:hi], doc))
            held += at < hi and int(self._docs[at]) == doc
        return held / len(distinct) if distinct else 0.0


def postings(
    vocab: dict[str, int],
    first_doc: int,
    *,
    contents: Sequence[Sequence[str]],
    symbols: Sequence[Sequence[str]],
    paths: Sequence[Sequence[str]],
    weights: FieldWeights,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document, term, weighted term frequency) of every distinct term of every document, BM25F
    style: each field's occurrences count with the field's weight. Adds new terms to `vocab`.

    Documents are taken one at a time (the fields may analyse on access) and the postings grow in
    C arrays: millions of Python ints and floats would fragment the heap a long-lived reader keeps."""
    doc_ids = array("i")
    term_ids = array("i")
    tfs = array("f")
    for doc in range(len(contents)):
        counts: dict[str, float] = {}
        for field_terms, w in ((contents[doc], 1.0), (symbols[doc], weights.symbol), (paths[doc], weights.path)):
            for term in field_terms:
                counts[term] = counts.get(term, 0.0) + w
        for term, tf in counts.items():
            doc_ids.append(first_doc + doc)
            term_ids.append(vocab.setdefault(term, len(vocab)))
            tfs.append(tf)
    return (
        np.frombuffer(doc_ids, dtype=np.int32).copy(),
        np.frombuffer(term_ids, dtype=np.int32).copy(),
        np.frombuffer(tfs, dtype=np.float32).copy(),
    )
