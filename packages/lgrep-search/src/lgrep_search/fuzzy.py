"""Fuzzy matching of query words against the names chunks define: typos ("getUsrById" finds
`getUserById`), prefixes ("HttpCook" finds `HttpCookies`) and case ("configparser").

Names are compared lowercased. Edit distance comes from rapidfuzz (C++), prefixes from a sorted name
list and bisection, so a lookup costs microseconds per query word even with 100,000 symbols.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from lgrep_core.text import QUERY_STOPWORDS
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

__all__ = ["FuzzyMatch", "SymbolIndex", "query_identifiers"]

# Scores of one name match; an exact name is worth most, then one typo, a prefix, two typos.
EXACT_SCORE = 1.0
EDIT_SCORES = {1: 0.8, 2: 0.6}
PREFIX_SCORE_MIN = 0.5  # prefix covering little of the name; grows to 0.9 as the prefix nears the whole
MIN_FUZZY_LEN = 4  # shorter words match exactly only: "get" is one edit from "set" and "let"
TWO_EDITS_MIN_LEN = 8  # two typos only in long names: "parse" is two edits from "parser"'s cousins
MIN_PREFIX_LEN = 4
MAX_NAMES_PER_WORD = 50

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:::|\.|->|\\)[A-Za-z_][A-Za-z0-9_]*)*")


def query_identifiers(query: str) -> list[str]:
    """Identifier-like words of a query, qualified names (`Sinatra::Base`, `http.Client`) split into
    their last component as well as kept whole."""
    out: list[str] = []
    for word in _WORD.findall(query):
        if word.lower() in QUERY_STOPWORDS or len(word) < 3:
            continue
        out.append(word)
        last = re.split(r"::|\.|->|\\", word)[-1]
        if last != word and len(last) >= 3:
            out.append(last)
    return list(dict.fromkeys(out))


@dataclass(frozen=True, slots=True)
class FuzzyMatch:
    word: str  # the query word
    name: str  # the matched name (lowercased)
    how: str  # "exact", "prefix", "edit1", "edit2"
    score: float


class SymbolIndex:
    """Lowercased symbol name -> the chunks that define it."""

    def __init__(self, symbols: Sequence[str]) -> None:
        by_name: dict[str, list[int]] = {}
        for i, name in enumerate(map(str.lower, symbols)):
            if name:
                by_name.setdefault(name, []).append(i)
        self._names = sorted(by_name)
        # Lists, not arrays: a snapshot update rebuilds this index, and tens of thousands of small
        # arrays cost more to make than the few a query converts.
        self._chunks = by_name
        # Typo candidates are looked up by first letter and length: a name more than two characters
        # longer or shorter cannot be within two edits, and a typo in the first letter is rare enough
        # not to pay a scan of every name for (at 100,000 chunks the full scan cost 12 ms a word).
        self._buckets: dict[tuple[str, int], list[str]] = {}
        for name in self._names:
            self._buckets.setdefault((name[0], len(name)), []).append(name)

    def __len__(self) -> int:
        return len(self._names)

    def chunks_defining(self, name: str) -> np.ndarray:
        return np.asarray(self._chunks.get(name.lower(), ()), dtype=np.int32)

    def match(self, word: str) -> list[FuzzyMatch]:
        """Names within edit distance of `word`, or starting with it; best first."""
        w = word.lower()
        found: dict[str, FuzzyMatch] = {}
        if w in self._chunks:
            found[w] = FuzzyMatch(word, w, "exact", EXACT_SCORE)
        if len(w) >= MIN_FUZZY_LEN:
            max_d = 2 if len(w) >= TWO_EDITS_MIN_LEN else 1
            pool = [n for d in range(-max_d, max_d + 1) for n in self._buckets.get((w[0], len(w) + d), ())]
            for name, dist, _ in process.extract(
                w, pool, scorer=Levenshtein.distance, score_cutoff=max_d, limit=MAX_NAMES_PER_WORD
            ):
                if dist and name not in found:
                    found[name] = FuzzyMatch(word, name, f"edit{int(dist)}", EDIT_SCORES[int(dist)])

        def keep(m: FuzzyMatch) -> None:
            if m.name not in found or found[m.name].score < m.score:
                found[m.name] = m

        if len(w) >= MIN_PREFIX_LEN:
            lo = bisect.bisect_left(self._names, w)
            for name in self._names[lo : lo + MAX_NAMES_PER_WORD]:
                if not name.startswith(w):
                    break
                score = PREFIX_SCORE_MIN + (0.9 - PREFIX_SCORE_MIN) * len(w) / len(name)
                keep(FuzzyMatch(word, name, "prefix", score))
        return sorted(found.values(), key=lambda m: (-m.score, m.name))

    def scores(self, words: Sequence[str], n_chunks: int) -> tuple[np.ndarray, dict[str, FuzzyMatch]]:
        """Per-chunk fuzzy score (best match per query word, summed over words), and the best match
        of each matched name (lowercased), so a result can explain itself by its symbol."""
        out = np.zeros(n_chunks, dtype=np.float32)
        best: dict[str, FuzzyMatch] = {}
        for word in words:
            per_word = np.zeros(n_chunks, dtype=np.float32)
            for m in self.match(word):
                np.maximum.at(per_word, self._chunks[m.name], m.score)
                if m.name not in best or best[m.name].score < m.score:
                    best[m.name] = m
            out += per_word
        return out, best
