"""The constants of lgrep's rank fusion, shared by the searcher that fuses one project's channels
(lgrep_search.fusion) and the application API that merges several projects' answers into one
ranking (lgrep_core.domain.merge), which must weigh the channels as the searcher did."""

from __future__ import annotations

__all__ = ["NATURAL_WEIGHTS", "RRF_K", "SYMBOL_WEIGHTS", "weights_for"]

# The constant of reciprocal rank fusion (Cormack et al. 2009); 60 is the published default.
RRF_K = 60

# Reciprocal-rank-fusion weights per query kind. A name is found by matching it: symbol queries lean
# on BM25 alone and skip the encoder (vector weight 0) unless neither lexical channel finds anything;
# sentences weigh BM25 and the embedding equally. The fuzzy channel stays light for both: a heavier
# fuzzy weight on symbol queries (1.0) let near-miss names crowd out the exact definition (all 62
# repositories: 0.8772 vs 0.8784, symbol 0.960 vs 0.970); adding the vector back (0.3) cost 0.001.
SYMBOL_WEIGHTS = {"bm25": 1.0, "fuzzy": 0.3, "vector": 0.0}
NATURAL_WEIGHTS = {"bm25": 1.0, "fuzzy": 0.3, "vector": 1.0}


def weights_for(symbol: bool, bm25_weight: float | None) -> dict[str, float]:
    """The channel weights of a symbol query or a sentence, with the request's BM25 weight if set."""
    weights = dict(SYMBOL_WEIGHTS if symbol else NATURAL_WEIGHTS)
    if bm25_weight is not None:
        weights["bm25"] = bm25_weight
    return weights
