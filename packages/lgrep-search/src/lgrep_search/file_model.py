"""A learned ranking of files for task questions (an issue or a bug report pasted whole).

files.rank_files fuses its evidence lists by reciprocal rank with fixed weights. For a task question
the shipped model, when there is one, re-scores the same candidate files: a linear function of each
file's evidence (`FEATURES`, read from files.Evidence by `feature_matrix`), fitted by
tools/train_file_ranker.py on issues of training repositories only (issues-dev's train split) and
written next to this module as MODEL_FILE. The fused ranking stays the fallback: without the file,
with a file made for other features, or with the `file_model` signal turned off, files are ranked
as before. Short questions never use it (it learned from issues).

The features are relative within one question (a list's reciprocal rank, a score over the list's
best), so one model serves every repository and language.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from .fusion import RRF_K

if TYPE_CHECKING:
    from .files import Evidence

__all__ = ["FACTS", "FEATURES", "LISTS", "MODEL_FILE", "NAMED_KINDS", "FileModel", "feature_matrix", "shipped_model"]

log = logging.getLogger(__name__)

MODEL_FILE = "file_ranker.json"
# The evidence lists, in files.py's order.
LISTS = ("chunks", "file_bm25", "vector", "defines", "named", "path")
# Kinds of a named file, in files.py's order of trust.
NAMED_KINDS = ("frame", "mention", "module", "import")
# Evidence.facts read as features: how many of the question's names the file defines (log1p), and
# flags: it defines a title's, a called or an error's name; it is the innermost frame; its match
# to the title alone (over the best's); the path rules that apply to it (signals/penalty.py); the
# repository's history (history.py): past commits like the question, co-change with the first
# files, how often (log1p) and how lately it changed.
FACTS = (
    "defines.names",
    "defines.title",
    "defines.called",
    "defines.error",
    "named.innermost",
    "title.rel",
    "path.test",
    "path.example",
    "path.vendored",
    "path.generated",
    "path.reexport",
    "path.docs",
    "history.msg.rel",
    "history.msg.top",
    "history.co.rel",
    "history.freq",
    "history.recent",
)
# Feature names, in matrix column order: per list its reciprocal rank, its top-heavy rank and its
# score over the list's best; then the named kinds, the cosine gap, the file's size and candidate
# chunks, its path penalty, the fused score files.py computed, and the FACTS.
FEATURES = (
    *(f"{name}.rrf" for name in LISTS),
    *(f"{name}.top" for name in LISTS),
    *(f"{name}.rel" for name in LISTS),
    *(f"named.{kind}" for kind in NAMED_KINDS),
    "vector.gap",
    "size.chunks",
    "size.candidates",
    "penalty.log",
    "fused",
    *(f"fact.{name}" for name in FACTS),
)


def feature_matrix(files: list[int], ev: Evidence) -> np.ndarray:
    """The FEATURES of `files` (rows in that order)."""
    col = {name: k for k, name in enumerate(FEATURES)}
    x = np.zeros((len(files), len(FEATURES)), dtype=np.float64)
    row = {f: k for k, f in enumerate(files)}
    for name in LISTS:
        for rank, f in enumerate(ev.ranks.get(name, [])):
            k = row.get(f)
            if k is not None:
                x[k, col[f"{name}.rrf"]] = RRF_K / (RRF_K + rank + 1)
                x[k, col[f"{name}.top"]] = 1.0 / (rank + 1)
        scores = ev.scores.get(name, {})
        best = max(scores.values(), default=0.0)
        if name != "vector" and best > 0:
            for f, k in row.items():
                x[k, col[f"{name}.rel"]] = scores.get(f, 0.0) / best
    sims = ev.scores.get("vector", {})
    if sims:
        top = max(sims.values())
        floor = min(sims.values())
        for f, k in row.items():
            sim = sims.get(f, floor)
            x[k, col["vector.rel"]] = sim
            x[k, col["vector.gap"]] = top - sim
    for f, kind in ev.named_kind.items():
        k = row.get(f)
        if k is not None:
            x[k, col[f"named.{kind}"]] = 1.0
    for f, k in row.items():
        x[k, col["size.chunks"]] = math.log1p(ev.chunks.get(f, 0))
        x[k, col["size.candidates"]] = math.log1p(ev.candidates.get(f, 0))
        x[k, col["penalty.log"]] = math.log(max(ev.penalty.get(f, 1.0), 1e-6))
    fused = ev.fused
    top_fused = max(fused.values(), default=0.0)
    if top_fused > 0:
        for f, k in row.items():
            x[k, col["fused"]] = fused.get(f, 0.0) / top_fused
    for f, facts in ev.facts.items():
        k = row.get(f)
        if k is None:
            continue
        for name, value in facts.items():
            c = col.get(f"fact.{name}")
            if c is not None:
                x[k, c] = math.log1p(value) if name == "defines.names" else value
    return x


@dataclass(frozen=True)
class FileModel:
    """A linear scorer over standardized features: ((x - mean) / scale) @ weights."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray

    @classmethod
    def from_json(cls, data: dict[str, object]) -> FileModel:
        features = tuple(str(f) for f in data["features"])  # type: ignore[attr-defined]
        arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
        if any(a.shape != (len(features),) for a in arrays) or not all(np.isfinite(a).all() for a in arrays):
            raise ValueError("a model's mean, scale and weights must be finite, one per feature")
        return cls(features, *arrays)

    def scores(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.weights


@lru_cache(maxsize=1)
def shipped_model() -> FileModel | None:
    """The model shipped beside this module, or None (no file, or one for other features: then the
    fused ranking answers, and the log says why once)."""
    try:
        text = resources.files("lgrep_search").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    try:
        model = FileModel.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("the shipped file ranking model is unusable (%s): files are ranked by fused evidence", exc)
        return None
    if model.features != FEATURES:
        log.warning("the shipped file ranking model was fitted on other features: files are ranked by fused evidence")
        return None
    return model
