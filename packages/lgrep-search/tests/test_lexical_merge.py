"""An index derived with `merged` scores exactly like one built from scratch over the same chunks."""

from __future__ import annotations

import random

import numpy as np
from lgrep_search.lexical import LexicalIndex

WORDS = [f"w{i}" for i in range(40)]


def _doc(rng: random.Random) -> tuple[list[str], list[str], list[str]]:
    return (
        [rng.choice(WORDS) for _ in range(rng.randint(0, 30))],
        [rng.choice(WORDS)] if rng.random() < 0.7 else [],
        [rng.choice(WORDS[:5])],
    )


def _fields(
    docs: list[tuple[list[str], list[str], list[str]]],
) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    return [d[0] for d in docs], [d[1] for d in docs], [d[2] for d in docs]


def test_merged_with_removed_inserted_and_moved_documents_matches_a_fresh_build() -> None:
    rng = random.Random(3)
    for _round in range(20):
        old = [_doc(rng) for _ in range(rng.randint(1, 60))]
        keep = np.asarray([rng.random() < 0.8 for _ in old], dtype=bool)
        new = [_doc(rng) for _ in range(rng.randint(0, 8))]
        kept = [d for d, k in zip(old, keep, strict=True) if k]
        # New documents land anywhere; kept ones keep their order (as a snapshot sorted by file does).
        slots = sorted(rng.sample(range(len(kept) + len(new)), len(new)))
        position = np.empty(len(kept) + len(new), dtype=np.int64)
        kept_slots = [i for i in range(len(position)) if i not in set(slots)]
        position[: len(kept)] = kept_slots
        position[len(kept) :] = slots
        final: list[tuple[list[str], list[str], list[str]]] = [([], [], [])] * len(position)
        for i, d in enumerate(kept + new):
            final[position[i]] = d

        index = LexicalIndex(*_fields(old))
        merged = index.merged(keep, *_fields(new), position=position)
        fresh = LexicalIndex(*_fields(final))
        for query in (["w1"], ["w2", "w3"], WORDS[:10], ["w39", "nothing"]):
            assert np.allclose(merged.scores(query), fresh.scores(query), atol=1e-6), query
