"""A symbol index derived with `merged` answers exactly like one built from scratch."""

from __future__ import annotations

import random

import numpy as np
from lgrep_search.fuzzy import SymbolIndex

NAMES = ["getUser", "getUsers", "get_user", "Router", "route", "routes", "parseConfig", "parse_config", "x", ""]


def _edit(rng: random.Random, old: list[str]) -> tuple[np.ndarray, list[str], np.ndarray, list[str]]:
    keep = np.asarray([rng.random() < 0.7 for _ in old], dtype=bool)
    new = [rng.choice([*NAMES, f"fresh{rng.randrange(5)}"]) for _ in range(rng.randint(0, 6))]
    kept = [s for s, k in zip(old, keep, strict=True) if k]
    slots = set(rng.sample(range(len(kept) + len(new)), len(new)))
    position = np.asarray([i for i in range(len(kept) + len(new)) if i not in slots] + sorted(slots), dtype=np.int64)
    final = [""] * len(position)
    for i, s in enumerate(kept + new):
        final[position[i]] = s
    return keep, new, position, final


def _same(a: SymbolIndex, b: SymbolIndex, words: list[str]) -> None:
    assert len(a) == len(b) and a._names == b._names
    assert {k: sorted(v) for k, v in a._buckets.items()} == {k: sorted(v) for k, v in b._buckets.items()}
    for name in b._names:
        assert a.chunks_defining(name).tolist() == b.chunks_defining(name).tolist(), name
    for word in words:
        assert a.match(word) == b.match(word), word
    n = 1 + max([int(a._ids.max()) if len(a._ids) else 0, int(b._ids.max()) if len(b._ids) else 0])
    sa, ba = a.scores(words, n)
    sb, bb = b.scores(words, n)
    assert np.allclose(sa, sb) and ba == bb


def test_a_chain_of_edits_matches_a_fresh_build_after_each() -> None:
    rng = random.Random(11)
    words = ["getuser", "getUsr", "rout", "parseconfig", "fresh1", "missing"]
    for _chain in range(10):
        symbols = [rng.choice(NAMES) for _ in range(rng.randint(1, 40))]
        index = SymbolIndex(symbols)
        for _edit_no in range(6):  # merged indexes are merged again, as a watched project's are
            keep, new, position, symbols = _edit(rng, symbols)
            index = index.merged(keep, new, position)
            _same(index, SymbolIndex(symbols), words)


def test_merging_leaves_the_old_index_as_it_was() -> None:
    old = SymbolIndex(["getUser", "Router", "route"])
    before = (list(old._names), dict(old._slot), old._ids.copy(), {k: list(v) for k, v in old._buckets.items()})
    old.merged(np.asarray([False, True, True]), ["getUsers"], np.asarray([1, 2, 0]))
    assert (old._names, old._slot, {k: list(v) for k, v in old._buckets.items()}) == (before[0], before[1], before[3])
    assert old._ids.tolist() == before[2].tolist()
    assert old.chunks_defining("getuser").tolist() == [0]
