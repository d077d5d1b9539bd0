"""Selection: best first; with diversification no overlapping chunks of one file, a file's later
chunks decayed, and at most MAX_CHUNKS_PER_FILE of them."""

from __future__ import annotations

from lgrep_search.fusion import Candidate
from lgrep_search.signals.diversify import FILE_SATURATION_DECAY, MAX_CHUNKS_PER_FILE, select


def _corpus(make_corpus):
    rows = [
        {"path": "big.py", "content": f"def f{n}():\n    pass\n", "start_line": 10 * n}
        for n in range(MAX_CHUNKS_PER_FILE + 3)
    ]
    rows.append({"path": "big.py", "content": "class Outer:\n" + "    x = 1\n" * 30, "start_line": 5})
    rows.append({"path": "other.py", "content": "def g():\n    pass\n"})
    return make_corpus(*rows)


def _scored(corpus) -> dict[int, Candidate]:
    # big.py's chunks (f0..f5 at lines 0, 10, ..., 50, the outer class at 5-35) best; other.py last
    scores = {i: 1.0 - 0.01 * i for i in range(len(corpus))}
    scores[corpus.paths.index("other.py")] = 0.5
    return {i: Candidate(fused=s, score=s) for i, s in scores.items()}


def test_without_diversify_it_is_plain_best_first(make_corpus) -> None:
    corpus = _corpus(make_corpus)
    chosen = select(corpus, _scored(corpus), 10, diversify=False)
    assert [i for i, _ in chosen] == sorted(range(len(corpus)), key=lambda i: -_scored(corpus)[i].score)


def test_caps_chunks_per_file_drops_overlaps_and_decays(make_corpus) -> None:
    corpus = _corpus(make_corpus)
    by_line = {(corpus.paths[i], int(corpus.start_line[i])): i for i in range(len(corpus))}
    f0, outer, f4, other = by_line["big.py", 0], by_line["big.py", 5], by_line["big.py", 40], by_line["other.py", 1]
    cands = _scored(corpus)
    chosen = select(corpus, cands, 10, diversify=True)
    # f1..f3 overlap the outer class, a better chunk of their file; f5 is past the cap
    assert [i for i, _ in chosen] == [f0, other, outer, f4]
    assert MAX_CHUNKS_PER_FILE == 3
    assert cands[outer].signals["saturation"] == FILE_SATURATION_DECAY
    assert cands[outer].score == _scored(corpus)[outer].score * FILE_SATURATION_DECAY
    assert cands[f4].signals["saturation"] == FILE_SATURATION_DECAY**2
    assert "saturation" not in cands[f0].signals and "saturation" not in cands[other].signals


def test_the_limit_holds(make_corpus) -> None:
    corpus = _corpus(make_corpus)
    assert len(select(corpus, _scored(corpus), 2, diversify=True)) == 2
