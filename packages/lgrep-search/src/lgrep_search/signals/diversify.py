"""Selection of the results: best first, and with diversification no overlapping chunks of one file,
a file's later chunks decayed, and at most a few chunks per file."""

from __future__ import annotations

import heapq

from lgrep_search.corpus import Corpus
from lgrep_search.fusion import Candidate

__all__ = ["FILE_SATURATION_DECAY", "MAX_CHUNKS_PER_FILE", "select"]

# At most this many chunks of one file in the results: past that, more of the same file crowds out
# other files that could be the answer (1 / 2 / 3 → 0.8665 / 0.8652 / 0.8676 on the subset).
MAX_CHUNKS_PER_FILE = 3
# Each further chunk from a file already in the results keeps this share of its score
# (0.1 / 0.3 / 0.5 → 0.8674 / 0.8680 / 0.8676 on the subset: flat; 0.5 keeps more context per file).
FILE_SATURATION_DECAY = 0.5


def select(corpus: Corpus, cands: dict[int, Candidate], limit: int, diversify: bool) -> list[tuple[int, Candidate]]:
    """Best first; with `diversify`, overlapping chunks of one file are dropped, a file's later chunks
    decay, and no file gives more than MAX_CHUNKS_PER_FILE."""
    ranked = sorted(cands.items(), key=lambda kv: (-kv[1].score, kv[0]))
    if not diversify:
        return ranked[:limit]
    taken: dict[int, list[int]] = {}
    selected: list[tuple[float, int, Candidate]] = []
    best: list[float] = []  # min-heap of the `limit` best effective scores so far
    for i, c in ranked:
        if len(best) >= limit and c.score <= best[0]:
            break  # scores only fall from here, and decay only lowers them further
        f = int(corpus.file_of[i])
        mine = taken.setdefault(f, [])
        if len(mine) >= MAX_CHUNKS_PER_FILE:
            continue
        s, e = corpus.start_line[i], corpus.end_line[i]
        if any(not (e < corpus.start_line[j] or s > corpus.end_line[j]) for j in mine):
            continue  # overlaps a better chunk of the same file
        eff = c.score * FILE_SATURATION_DECAY ** len(mine)
        if mine:
            c.signals["saturation"] = FILE_SATURATION_DECAY ** len(mine)
        c.score = eff
        mine.append(i)
        selected.append((eff, i, c))
        if len(best) < limit:
            heapq.heappush(best, eff)
        elif eff > best[0]:
            heapq.heapreplace(best, eff)
    selected.sort(key=lambda t: (-t[0], t[1]))
    return [(i, c) for _, i, c in selected[:limit]]
