"""The file-coherence signal: a file with several strong chunks lifts its best chunk above a file with
one slightly better chunk."""

from __future__ import annotations

import pytest
from lgrep_search.fusion import Candidate
from lgrep_search.signals.file_coherence import FILE_COHERENCE_BOOST, FILE_COHERENCE_TOP, boost_coherent_files


def _cand(rank: int, bm25: float) -> Candidate:
    return Candidate(fused=1 / (61 + rank), score=1 / (61 + rank), ranks={"bm25": rank}, raw={"bm25": bm25})


def _corpus(make_corpus):
    rows = [{"path": "one.py", "content": "def a():\n    pass\n"}]
    rows += [{"path": "many.py", "content": f"def b{n}():\n    pass\n", "start_line": 10 * n} for n in range(1, 4)]
    rows += [{"path": "weak.py", "content": "def c():\n    pass\n"}]
    return make_corpus(*rows)  # chunks by file: many.py 0-2, one.py 3, weak.py 4


def test_several_strong_chunks_lift_the_files_best(make_corpus) -> None:
    corpus = _corpus(make_corpus)
    cands = {3: _cand(0, 10.0), 0: _cand(1, 9.5), 1: _cand(2, 9.0), 2: _cand(3, 8.5), 4: _cand(4, 1.0)}
    top = cands[3].fused
    boost_coherent_files(corpus, cands, top)
    assert max(cands, key=lambda i: cands[i].score) == 0  # many.py's best now leads
    assert cands[0].signals["file_coherence"] == pytest.approx(FILE_COHERENCE_BOOST * top)  # the strongest file
    assert "file_coherence" not in cands[1].signals and "file_coherence" not in cands[2].signals
    assert 0 < cands[3].signals["file_coherence"] < cands[0].signals["file_coherence"]
    assert cands[4].signals["file_coherence"] == 0.0  # the weakest evidence scales to nothing


def test_only_the_strongest_candidates_are_evidence(make_corpus) -> None:
    corpus = make_corpus(
        {"path": "one.py", "content": "x\n"},
        *({"path": "many.py", "content": "y\n", "start_line": n} for n in range(1, FILE_COHERENCE_TOP + 6)),
    )
    one = corpus.paths.index("one.py")
    cands = {one: _cand(0, 10.0)}
    for rank, i in enumerate(i for i in range(len(corpus)) if i != one):
        cands[i] = _cand(rank + 1, 9.0 if rank == 0 else 0.5)  # one strong chunk, then volume
    boost_coherent_files(corpus, cands, cands[one].fused)
    assert max(cands, key=lambda i: cands[i].score) == one
