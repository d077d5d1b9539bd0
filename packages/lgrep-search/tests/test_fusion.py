"""Weighted reciprocal rank fusion."""

from __future__ import annotations

import numpy as np
from lgrep_search.fusion import RRF_K, fuse


def _list(*chunks: int) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(chunks, dtype=np.int64), np.linspace(1.0, 0.5, len(chunks), dtype=np.float32)


def test_agreement_between_channels_wins_and_weights_count() -> None:
    cands = fuse({"bm25": _list(1, 2), "vector": _list(2, 3)}, {"bm25": 1.0, "vector": 1.0})
    assert max(cands, key=lambda i: cands[i].score) == 2  # second in one list, first in the other
    assert cands[2].fused == 1 / (RRF_K + 2) + 1 / (RRF_K + 1)
    assert cands[2].ranks == {"bm25": 1, "vector": 0} and cands[2].raw == {"bm25": 0.5, "vector": 1.0}
    light = fuse({"bm25": _list(1), "fuzzy": _list(3)}, {"bm25": 1.0, "fuzzy": 0.3})
    assert light[3].score == 0.3 / (RRF_K + 1) < light[1].score
