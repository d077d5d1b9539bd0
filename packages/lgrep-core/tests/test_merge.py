"""Merging several projects' answers (lgrep_core.domain.merge, ADR 0026): what is comparable across indexes
decides the order, what is not (rank-derived scores, another model's cosines) does not."""

from dataclasses import replace
from pathlib import Path

from lgrep_core.domain.merge import ProjectAnswer, calibration, merge_files, merge_hits
from lgrep_core.domain.models import ChunkKind, FileHit, LineRange, MatchType, SearchHit, SearchResponse, SearchType
from lgrep_core.domain.rrf import RRF_K

A, B = Path("/a"), Path("/b")


def _hit(path: str, rank: int, *, bm25: float | None = None, cosine: float | None = None) -> SearchHit:
    """A hit as a searcher gives it: ranked `rank` (1-based) by each channel that found it, its
    fused score the natural query's weights (1 each) over those ranks, no ranking signal."""
    scores: dict[str, float] = {}
    fused = 0.0
    for channel, raw in (("bm25", bm25), ("vector", cosine)):
        if raw is not None:
            scores[f"{channel}_rank"], scores[f"{channel}_score"] = float(rank), raw
            fused += 1.0 / (RRF_K + rank)
    scores["fused"] = fused
    return SearchHit(path, 1, 2, "", ChunkKind.FUNCTION, "python", fused, "", (MatchType.BM25,), scores=scores)


def _answer(project: Path, hits: list[SearchHit], model: str = "local/m/384") -> ProjectAnswer:
    response = SearchResponse(hits, {}, 10, 0, query_kind="natural", search_type=SearchType.HYBRID)
    return ProjectAnswer(project, response, model)


def test_by_score_alone_two_projects_would_tie_the_merge_asks_the_channels() -> None:
    # Ranked first by both channels in each project, so their own scores are equal; A's chunk is
    # the closer in meaning and the better BM25 match.
    a = _answer(A, [_hit("a.py", 1, bm25=12.0, cosine=0.62), _hit("a2.py", 2, bm25=9.0, cosine=0.55)])
    b = _answer(B, [_hit("b.py", 1, bm25=4.0, cosine=0.31), _hit("b2.py", 2, bm25=3.0, cosine=0.30)])
    assert a.response.results[0].score == b.response.results[0].score
    merged = merge_hits([b, a], 4)
    assert [(p, h.path) for p, h in merged] == [(A, "a.py"), (A, "a2.py"), (B, "b.py"), (B, "b2.py")]
    assert [h.score for _, h in merged] == sorted((h.score for _, h in merged), reverse=True)


def test_a_project_far_from_the_question_is_scaled_down_by_its_best_cosine() -> None:
    a = _answer(A, [_hit("a.py", 1, cosine=0.8)])
    b = _answer(B, [_hit("b.py", 1, cosine=0.4)])
    assert calibration([a, b]) == {A: 1.0, B: 0.5}


def test_cosines_of_different_models_are_never_compared() -> None:
    a = _answer(A, [_hit("a.py", 1, cosine=0.8)], model="local/all-MiniLM-L6-v2/384")
    b = _answer(B, [_hit("b.py", 1, cosine=0.2)], model="voyage/voyage-code-3/1024")
    assert calibration([a, b]) == {A: 1.0, B: 1.0}
    merged = merge_hits([b, a], 2)
    assert merged[0][1].score == merged[1][1].score  # a tie, kept in the order the projects were named
    assert [p for p, _ in merged] == [B, A]


def test_a_project_without_cosines_keeps_its_scale() -> None:
    a = _answer(A, [_hit("a.py", 1, bm25=3.0)])
    b = _answer(B, [_hit("b.py", 1, cosine=0.5)])
    assert calibration([a, b]) == {A: 1.0, B: 1.0}


def test_the_limit_counts_the_merged_answer() -> None:
    a = _answer(A, [_hit(f"a{i}.py", i, bm25=10.0 - i) for i in range(1, 6)])
    b = _answer(B, [_hit(f"b{i}.py", i, bm25=10.5 - i) for i in range(1, 6)])
    merged = merge_hits([a, b], 4)
    assert [h.path for _, h in merged] == ["b1.py", "a1.py", "b2.py", "a2.py"]


def test_files_are_calibrated_by_the_chunk_answers() -> None:
    file_a = FileHit("a.py", 0.03, "python", (LineRange(1, 2),))
    file_b = replace(file_a, path="b.py", score=0.04)
    files_a = ProjectAnswer(A, SearchResponse([], {}, 1, 0, files=[file_a]))
    files_b = ProjectAnswer(B, SearchResponse([], {}, 1, 0, files=[file_b]))
    chunks = [_answer(A, [_hit("a.py", 1, cosine=0.9)]), _answer(B, [_hit("b.py", 1, cosine=0.3)])]
    merged = merge_files([files_a, files_b], chunks, 2)
    assert [(p, h.path) for p, h in merged] == [(A, "a.py"), (B, "b.py")]
    assert merged[1][1].score == round(0.04 * 0.3 / 0.9, 6)
