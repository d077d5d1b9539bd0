"""An index derived with `merged` scores exactly like one built from scratch over the same chunks."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys

import numpy as np
import pytest
from lgrep_search import lexical
from lgrep_search.lexical import LexicalIndex, Vocabulary

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


def test_a_merge_that_brings_new_terms_scores_them_as_a_fresh_build_does() -> None:
    rng = random.Random(5)
    old = [_doc(rng) for _ in range(30)]
    new = [(["brand", "new", "w1", "ünïcode"], ["fresh"], ["w0"]), (["w2", "brand"], [], ["w3"])]
    index = LexicalIndex(*_fields(old))
    merged = index.merged(np.ones(len(old), dtype=bool), *_fields(new))
    fresh = LexicalIndex(*_fields(old + new))
    for query in (["brand"], ["fresh", "w1"], ["ünïcode", "new"], WORDS[:10]):
        assert np.allclose(merged.scores(query), fresh.scores(query), atol=1e-6), query
    # The old terms keep their ids; the new ones follow them.
    assert all(merged.vocab.get(term) == index.vocab.get(term) for term in index.vocab)
    assert sorted(merged.vocab.get(t) or 0 for t in ("brand", "new", "ünïcode", "fresh")) == list(
        range(len(index.vocab), len(index.vocab) + 4)
    )


def test_a_vocabulary_finds_each_term_by_its_id_and_no_other_term() -> None:
    terms = ["parse", "ParseError", "ü", "日本", "x" * 300, "a\udcff", "parse_"]
    vocab = Vocabulary(terms)
    assert len(vocab) == len(terms)
    assert list(vocab) == terms
    assert [vocab.get(t) for t in terms] == list(range(len(terms)))
    assert [vocab.get(t) for t in ("pars", "parse__", "", "Ü")] == [None] * 4
    assert Vocabulary().get("parse") is None


def test_terms_whose_hashes_collide_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "_term_hash", lambda term: len(term) % 2)  # every term collides with half the others
    terms = [f"t{i}" for i in range(50)] + [f"term{i}" for i in range(50)]
    vocab = Vocabulary(terms)
    assert [vocab.get(t) for t in terms] == list(range(100))
    assert vocab.get("t50") is None and vocab.get("nope") is None
    ids, bigger = vocab.numbered(["t3", "new1", "term7", "new2"])  # a load's page of terms, or a merge's
    assert ids.tolist() == [3, 100, 57, 101]
    assert [bigger.get(t) for t in [*terms, "new1", "new2"]] == list(range(102))
    assert vocab.get("new1") is None  # the vocabulary it grew from is unchanged


def test_a_grouped_index_scores_but_is_not_merged_again() -> None:
    index = LexicalIndex(*_fields([(["a", "b"], [], ["p"]), (["b"], [], ["q"]), (["c"], [], ["q"])]))
    files = index.grouped(np.asarray([0, 1, 1]), 2)
    assert files.scores(["b"])[0] > 0 and files.scores(["c"])[0] == 0
    with pytest.raises(ValueError, match="scores only"):
        files.merged(np.ones(2, dtype=bool), [], [], [])
    with pytest.raises(ValueError, match="scores only"):
        files.grouped(np.zeros(2, dtype=np.int64), 1)


def test_a_pickled_vocabulary_finds_its_terms_in_a_process_with_other_hashes() -> None:
    """Python salts its string hashes per process; a pickle (the SWE-bench tool keeps snapshots so)
    carries the terms, and the loading process hashes them again."""
    terms = [f"term{i}" for i in range(2_000)] + ["ünïcode", "a\udcff"]
    blob = pickle.dumps(Vocabulary(terms))
    code = (
        "import pickle, sys\n"
        "vocab = pickle.loads(sys.stdin.buffer.read())\n"
        "print(sum(vocab.get(t) == i for i, t in enumerate(vocab)), len(vocab), vocab.get('term1999'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=blob,
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "7"},
    ).stdout.decode()
    assert out.split() == [str(len(terms)), str(len(terms)), "1999"]
