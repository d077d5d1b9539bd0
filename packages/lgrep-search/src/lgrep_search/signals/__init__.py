"""Code-aware ranking: what turns fused retrieval candidates into the answer an agent wants.

One module per signal, each a function over (corpus, candidates, parsed query, ...) that the searcher
applies in this order: `definition`, `path_match`, `file_coherence`, `penalty`, then `diversify`
selects the results. Every knob is a named constant beside its signal, with the reason for it and
what it measured on semble's benchmark (NDCG@10; "62" = all obtainable repositories, "subset" = the
19-repository one; the full tables are in docs/benchmarks.md, from `tools/bench_search.py --ablate`).
Signal off → Δ on 62: definition −0.014, path_match −0.022, file_coherence −0.019, penalty −0.011,
diversify −0.028.
Boosts are additive, in units of the best fused score of the query, so they mean the same whatever the
channel mix; penalties are multiplicative.
"""
