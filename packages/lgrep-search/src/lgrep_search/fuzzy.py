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
from lgrep_core.domain.text import QUERY_STOPWORDS
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

__all__ = ["FuzzyMatch", "SymbolIndex", "query_identifiers", "symbol_parts"]

# Scores of one name match; an exact name is worth most, then one typo, a prefix, two typos.
EXACT_SCORE = 1.0
EDIT_SCORES = {1: 0.8, 2: 0.6}
PREFIX_SCORE_MIN = 0.5  # prefix covering little of the name; grows to 0.9 as the prefix nears the whole
MIN_FUZZY_LEN = 4  # shorter words match exactly only: "get" is one edit from "set" and "let"
TWO_EDITS_MIN_LEN = 8  # two typos only in long names: "parse" is two edits from "parser"'s cousins
MIN_PREFIX_LEN = 4
MAX_NAMES_PER_WORD = 50

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:::|\.|->|\\)[A-Za-z_][A-Za-z0-9_]*)*")


def symbol_parts(name: str) -> list[str]:
    """A symbol as asked for, by its parts: `Auth.verify`, `Auth::verify`, `auth->verify` and
    Ruby's `Auth#verify` all give ["Auth", "verify"] (the last part is the name)."""
    return [p for p in name.replace("::", ".").replace("->", ".").replace("#", ".").split(".") if p]


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
    """Lowercased symbol name -> the chunks that define it. Immutable; `merged` derives the index of
    an edited snapshot without going over every symbol again."""

    def __init__(self, symbols: Sequence[str]) -> None:
        by_name: dict[str, list[int]] = {}
        for i, name in enumerate(map(str.lower, symbols)):
            if name:
                by_name.setdefault(name, []).append(i)
        self._names = sorted(by_name)
        # The chunks of all names in one array, name by name (slot by slot): `_ids[_ptr[s]:_ptr[s+1]]`
        # are the chunks of the name in slot `s`, in order. A slot is never reused, so an update
        # renumbers every chunk with one array operation instead of one per name.
        self._slot = {name: s for s, name in enumerate(by_name)}
        self._slot_names: list[str | None] = list(by_name)  # None: the name has no chunk any more
        lists = list(by_name.values())
        self._ids = np.asarray([i for ids in lists for i in ids], dtype=np.int32)
        self._ptr = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([len(ids) for ids in lists], out=self._ptr[1:])
        # Typo candidates are looked up by first letter and length: a name more than two characters
        # longer or shorter cannot be within two edits, and a typo in the first letter is rare enough
        # not to pay a scan of every name for (at 100,000 chunks the full scan cost 12 ms a word).
        self._buckets: dict[tuple[str, int], list[str]] = {}
        for name in self._names:
            self._buckets.setdefault((name[0], len(name)), []).append(name)

    def merged(self, keep: np.ndarray, symbols: Sequence[str], position: np.ndarray) -> SymbolIndex:
        """The index of this one's chunks where `keep` is true, followed by chunks defining
        `symbols`, then moved: chunk i of that list goes to place `position[i]` (Corpus.updated).
        This index is left as it is (a query may be reading it)."""
        n_kept = int(keep.sum())
        remap = np.full(len(keep), -1, dtype=np.int64)
        remap[keep] = position[:n_kept]
        old_counts = np.diff(self._ptr)
        rows = remap[self._ids]
        alive = rows >= 0
        out = SymbolIndex.__new__(SymbolIndex)
        out._slot, out._names, out._buckets = dict(self._slot), list(self._names), dict(self._buckets)
        out._slot_names = list(self._slot_names)
        new_slots: list[int] = []
        new_rows: list[int] = []
        for j, name in enumerate(map(str.lower, symbols)):
            if not name:
                continue
            slot = out._slot.get(name)
            if slot is None:
                slot = out._slot[name] = len(out._slot_names)
                out._slot_names.append(name)
                out._add_name(name)
            new_slots.append(slot)
            new_rows.append(int(position[n_kept + j]))
        slots = np.concatenate(
            [
                np.repeat(np.arange(len(old_counts), dtype=np.int64), old_counts)[alive],
                np.asarray(new_slots, dtype=np.int64),
            ]
        )
        all_rows = np.concatenate([rows[alive], np.asarray(new_rows, dtype=np.int64)])
        order = np.lexsort((all_rows, slots))
        counts = np.bincount(slots, minlength=len(out._slot_names))
        out._ids = all_rows[order].astype(np.int32)
        out._ptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=out._ptr[1:])
        for slot in np.flatnonzero((counts[: len(old_counts)] == 0) & (old_counts > 0)).tolist():
            name = out._slot_names[slot]
            if name is not None:
                out._slot_names[slot] = None
                del out._slot[name]
                out._drop_name(name)
        return out

    def _add_name(self, name: str) -> None:
        bisect.insort(self._names, name)
        key = (name[0], len(name))
        self._buckets[key] = [*self._buckets.get(key, ()), name]  # a copy: the old index shares the rest

    def _drop_name(self, name: str) -> None:
        del self._names[bisect.bisect_left(self._names, name)]
        key = (name[0], len(name))
        rest = [n for n in self._buckets.get(key, ()) if n != name]
        if rest:
            self._buckets[key] = rest
        else:
            self._buckets.pop(key, None)

    def __len__(self) -> int:
        return len(self._names)

    def chunks_defining(self, name: str) -> np.ndarray:
        slot = self._slot.get(name.lower())
        if slot is None:
            return np.empty(0, dtype=np.int32)
        return self._ids[self._ptr[slot] : self._ptr[slot + 1]]

    def match(self, word: str) -> list[FuzzyMatch]:
        """Names within edit distance of `word`, or starting with it; best first."""
        w = word.lower()
        found: dict[str, FuzzyMatch] = {}
        if w in self._slot:
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
                np.maximum.at(per_word, self.chunks_defining(m.name), m.score)
                if m.name not in best or best[m.name].score < m.score:
                    best[m.name] = m
            out += per_word
        return out, best
