"""Several projects' answers to one question, merged into one ranking (ADR 0026).

A project's scores cannot be compared with another's as they are: fusion scores are rank-derived
(weight / (RRF_K + rank)) and the ranking signals add in units of the project's own best fused
score, so the best chunk of a project that has nothing to do with the question scores as high as
the best chunk of the one that answers it. Merged by score, repository A's questions asked of A and
B fell from 0.876 to 0.705 NDCG@10 on A's answers (docs/benchmarks.md, "Several projects in one
question"). The merge here uses what is comparable across indexes instead:

1. **One fusion over all the answers.** Each channel's own scores (BM25, cosine, fuzzy; in every
   hit's `scores`) rank the hits of every project together, as one index would: a hit's rank in a
   channel becomes its own rank plus the hits of the other projects that channel scored higher. The
   fused score is recomputed with those ranks and the channel weights of the query's kind
   (lgrep_core.domain.rrf), and the hit's ranking signals are kept as the ratio of its score to its fused
   score.
2. **Calibrated by meaning.** Cosine similarity is an absolute measure (for one embedding model),
   so each project's scores are scaled by its best cosine over the best cosine of all the projects
   that share its model: a project whose closest chunk is further from the question ranks lower.

Vector scores of projects indexed with different models are never compared: each model's projects
are ranked and calibrated among themselves. Both steps are parameter-free (RRF_K and the weights
are the searcher's); on 796 questions of 20 repository pairs they keep NDCG@10 at 0.843.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lgrep_core.domain.models import FileHit, SearchHit, SearchResponse, SearchType
from lgrep_core.domain.rrf import RRF_K, weights_for

__all__ = ["ProjectAnswer", "calibration", "merge_files", "merge_hits"]

_CHANNELS = ("bm25", "vector", "fuzzy")


@dataclass(frozen=True, slots=True)
class ProjectAnswer:
    """One project's answer to the question, and the embedding model of its index (its vector
    scores compare only with those of the same model; "" when unknown)."""

    project: Path
    response: SearchResponse
    model: str = ""


def merge_hits(
    answers: Sequence[ProjectAnswer], limit: int, *, bm25_weight: float | None = None
) -> list[tuple[Path, SearchHit]]:
    """The `limit` best chunks of all the answers, each with its project, best first; a hit's
    `score` is its merged score (see the module docstring)."""
    factor = calibration(answers)
    raws = {
        (i, channel): sorted(h.scores[f"{channel}_score"] for h in a.response.results if f"{channel}_score" in h.scores)
        for i, a in enumerate(answers)
        for channel in _CHANNELS
    }
    ranked: list[tuple[float, int, Path, SearchHit]] = []
    for i, answer in enumerate(answers):
        others = [j for j in range(len(answers)) if j != i]
        for hit in answer.response.results:
            weights = _weights(answer.response, bm25_weight, hit)
            merged = 0.0
            for channel in _CHANNELS:
                raw = hit.scores.get(f"{channel}_score")
                if raw is None:
                    continue
                # Its rank among every project's hits: its own, plus the other projects' hits this
                # channel scored higher (cosines only of projects with the same model).
                above = sum(
                    len(raws[j, channel]) - bisect_right(raws[j, channel], raw)
                    for j in others
                    if channel != "vector" or answers[j].model == answer.model
                )
                merged += weights.get(channel, 0.0) / (RRF_K + hit.scores.get(f"{channel}_rank", 1.0) + above)
            fused = hit.scores.get("fused", 0.0)
            score = hit.score * (merged / fused) if fused > 0 else hit.score
            ranked.append((score * factor[answer.project], len(ranked), answer.project, hit))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    return [(project, replace(hit, score=round(score, 6))) for score, _, project, hit in ranked[:limit]]


def merge_files(
    answers: Sequence[ProjectAnswer], calibrating: Sequence[ProjectAnswer], limit: int
) -> list[tuple[Path, FileHit]]:
    """The `limit` best files of all the files answers, each with its project, best first. A
    file's evidence carries no channel scores, so each project's file scores are only calibrated by
    meaning, from `calibrating`: the same question's chunk answers."""
    factor = calibration(calibrating)
    ranked = [
        (hit.score * factor.get(a.project, 1.0), order, a.project, hit)
        for order, (a, hit) in enumerate((a, h) for a in answers for h in a.response.files)
    ]
    ranked.sort(key=lambda r: (-r[0], r[1]))
    return [(project, replace(hit, score=round(score, 6))) for score, _, project, hit in ranked[:limit]]


def calibration(answers: Sequence[ProjectAnswer]) -> dict[Path, float]:
    """Each project's scale: its best cosine over the best of the projects with the same model (1
    when its answer has no cosine, or the model's best is not positive)."""
    best = {a.project: _best_cosine(a.response) for a in answers}
    top: dict[str, float] = {}
    for a in answers:
        mine = best[a.project]
        if mine is not None:
            top[a.model] = max(top.get(a.model, mine), mine)
    factor: dict[Path, float] = {}
    for a in answers:
        mine, most = best[a.project], top.get(a.model)
        factor[a.project] = 1.0 if mine is None or most is None or most <= 0 else max(mine, 0.0) / most
    return factor


def _best_cosine(response: SearchResponse) -> float | None:
    return max((h.scores["vector_score"] for h in response.results if "vector_score" in h.scores), default=None)


def _weights(response: SearchResponse, bm25_weight: float | None, hit: SearchHit) -> dict[str, float]:
    """The fusion weights the searcher used: its one channel's, or those of the query's kind in a
    hybrid search (a symbol query's vector channel weighs 1 when it ran: nothing lexical matched)."""
    if response.search_type not in (SearchType.HYBRID, None):
        return dict.fromkeys(_CHANNELS, 1.0)
    weights = weights_for(response.query_kind == "symbol", bm25_weight)
    if not weights["vector"] and "vector_score" in hit.scores:
        weights["vector"] = 1.0
    return weights
