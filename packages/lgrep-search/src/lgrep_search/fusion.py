"""Weighted reciprocal rank fusion: the channels' ranked lists become one set of candidates, each
scored by the sum over channels of weight / (RRF_K + rank), with weights chosen by the kind of query."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from lgrep_core.domain.rrf import NATURAL_WEIGHTS, RRF_K, SYMBOL_WEIGHTS, weights_for

from .query import QueryKind

__all__ = ["NATURAL_WEIGHTS", "RRF_K", "SYMBOL_WEIGHTS", "Candidate", "channel_weights", "fuse"]

# RRF_K and the weights per query kind live in lgrep_core.domain.rrf: merging several projects' answers
# (lgrep_core.domain.merge) weighs the channels as this fusion does.


def channel_weights(kind: QueryKind, bm25_weight: float | None) -> dict[str, float]:
    return weights_for(kind is QueryKind.SYMBOL, bm25_weight)


@dataclass(slots=True)
class Candidate:
    fused: float = 0.0  # the weighted reciprocal-rank-fusion score
    score: float = 0.0  # after the ranking signals
    ranks: dict[str, int] = field(default_factory=dict)  # channel -> 0-based rank
    raw: dict[str, float] = field(default_factory=dict)  # channel -> the channel's own score
    signals: dict[str, float] = field(default_factory=dict)  # signal -> its effect
    why: list[str] = field(default_factory=list)


def fuse(lists: Mapping[str, tuple[np.ndarray, np.ndarray]], weights: Mapping[str, float]) -> dict[int, Candidate]:
    """Chunk -> candidate for every chunk in any list (channel -> (chunks, scores), best first), its
    score the fused one. Channels are summed in the order of `lists`."""
    cands: dict[int, Candidate] = {}
    for name, (idx, vals) in lists.items():
        w = weights[name]
        for rank, (i, v) in enumerate(zip(idx.tolist(), vals.tolist(), strict=True)):
            c = cands.get(i)
            if c is None:
                c = cands[i] = Candidate()
            c.ranks[name] = rank
            c.raw[name] = v
            c.fused += w / (RRF_K + rank + 1)
    for c in cands.values():
        c.score = c.fused
    return cands
