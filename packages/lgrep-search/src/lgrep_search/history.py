"""The project's git history as evidence for a task question (lgrep_core.domain.history).

Three kinds, each per file (files.rank_files puts them in Evidence.facts for the learned model):
- messages: the past commits whose messages resemble the question (BM25 over the kept messages,
  analysed as the chunks are), each passing its score on to the files it changed, shared among them;
- co-change: how often a file changed together with the files the question's evidence ranks first;
- activity: how often the file changed, and how lately (against the newest kept commit).

Everything is bounded by the kept history (MAX_COMMITS commits), so a question's lookup does not
grow with the repository's age.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from lgrep_core.domain.history import History
from lgrep_core.domain.text import analyze

__all__ = ["MESSAGE_COMMITS", "HistoryIndex"]

# The best-matching past commits whose files share their scores.
MESSAGE_COMMITS = 30
# Co-change counts only commits with at most this many files (a sweep says nothing of pairs).
COCHANGE_MAX_FILES = 30
_K1 = 1.2
_B = 0.75
_YEAR_S = 365.0 * 86400.0


class HistoryIndex:
    """A History read for questions: postings over its messages, and its commits per file."""

    def __init__(self, history: History) -> None:
        self.head = history.head
        self.shallow = history.shallow
        commits = history.commits
        self.files: list[tuple[str, ...]] = [c.files for c in commits]
        self.shas = [c.sha for c in commits]
        self.subjects = [c.message.split("\n", 1)[0].strip() for c in commits]
        self.times = np.asarray([c.time for c in commits], dtype=np.float64)
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths = np.zeros(len(commits), dtype=np.float64)
        for n, commit in enumerate(commits):
            terms = analyze(commit.message)
            lengths[n] = len(terms)
            counts: dict[str, int] = defaultdict(int)
            for term in terms:
                counts[term] += 1
            for term, tf in counts.items():
                postings[term].append((n, tf))
        self._postings = {
            t: (np.asarray([d for d, _ in p], dtype=np.int32), np.asarray([tf for _, tf in p], dtype=np.float64))
            for t, p in postings.items()
        }
        self._norm = _K1 * (1.0 - _B + _B * lengths / max(float(lengths.mean()) if len(lengths) else 1.0, 1e-9))
        self.by_file: dict[str, list[int]] = defaultdict(list)
        for n, files in enumerate(self.files):
            for f in files:
                self.by_file[f].append(n)

    def __len__(self) -> int:
        return len(self.files)

    def message_scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 of every kept commit's message for the (analysed) terms, each distinct term once."""
        scores = np.zeros(len(self.files), dtype=np.float64)
        n = len(self.files)
        for term in set(terms):
            hit = self._postings.get(term)
            if hit is None:
                continue
            docs, tf = hit
            idf = math.log1p((n - len(docs) + 0.5) / (len(docs) + 0.5))
            scores[docs] += idf * tf * (_K1 + 1.0) / (tf + self._norm[docs])
        return scores

    def by_messages(self, terms: Sequence[str]) -> dict[str, float]:
        """Path -> the summed scores of the MESSAGE_COMMITS best-matching commits that changed it,
        each commit's score shared among its files."""
        return self.like_question(terms)[0]

    def like_question(self, terms: Sequence[str]) -> tuple[dict[str, float], dict[str, int]]:
        """`by_messages`, and per path the best-matching commit that changed it (its index)."""
        scores = self.message_scores(terms)
        out: dict[str, float] = defaultdict(float)
        best: dict[str, int] = {}
        for n in np.argsort(-scores, kind="stable")[:MESSAGE_COMMITS].tolist():
            if scores[n] <= 0:
                break
            files = self.files[n]
            for f in files:
                out[f] += float(scores[n]) / len(files)
                best.setdefault(f, n)
        return out, best

    def describe(self, n: int) -> str:
        """A kept commit in a few words: its short id and its subject."""
        subject = self.subjects[n]
        return f"{self.shas[n][:10]} {subject[:80]}{'...' if len(subject) > 80 else ''}"

    def cochange(self, seeds: Sequence[str]) -> dict[str, float]:
        """Path -> how much it changed with the seed files (the first seed counting most), each
        shared commit weighing 1 / its number of files."""
        out: dict[str, float] = defaultdict(float)
        weight = {s: 1.0 / (k + 1) for k, s in reversed(list(enumerate(seeds)))}
        commits: dict[int, float] = defaultdict(float)
        for s, w in weight.items():
            for n in self.by_file.get(s, ()):
                commits[n] += w
        for n, w in commits.items():
            files = self.files[n]
            if len(files) > COCHANGE_MAX_FILES:
                continue
            for f in files:
                if f not in weight:
                    out[f] += w / len(files)
        return out

    def activity(self, path: str) -> tuple[int, float]:
        """(how many kept commits changed it, how lately: 1 for the newest commit, decaying by a
        factor e a year before it; 0 when it never changed)."""
        changed = self.by_file.get(path)
        if not changed:
            return 0, 0.0
        age = float(self.times[0] - self.times[changed[0]]) if len(self.times) else 0.0
        return len(changed), math.exp(-max(age, 0.0) / _YEAR_S)
