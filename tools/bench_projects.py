"""Several projects in one question (ADR 0026): does asking repository A's questions of A and B
together keep A's answers where they were alone? On semble's public benchmark, for each pair of
repositories, each question of either is searched in both (in-process, the `full` mode of
bench_search.py) and the two answers merged; NDCG@10 counts only the question's own repository's
targets, so every hit of the other repository is a miss. Reported: alone, merged by raw score, and
lgrep's merge (lgrep_core.merge.merge_hits).

    uv run --frozen python tools/bench_projects.py --checkouts /work/bench/checkouts --cache /tmp/cache
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search as bs

# Pairs of one language (the hard case: the other repository speaks the question's language) and of
# two languages, among the repositories most often checked out.
PAIRS = [
    ("flask", "fastapi"),
    ("requests", "httpx"),
    ("gin", "chi"),
    ("express", "axios"),
    ("sinatra", "rack"),
    ("redux", "zod"),
    ("serde", "axum"),
    ("gson", "jackson-databind"),
    ("bats-core", "nvm"),
    ("circe", "cats"),
    ("guzzle", "monolog"),
    ("ktor", "exposed"),
    ("libuv", "curl"),
    ("plug", "phoenix"),
    ("trpc", "vitest"),
    ("click", "starlette"),
]


def by_score(answers: list[Any], limit: int) -> list[tuple[Path, Any]]:
    hits = [(h.score, a.project, h) for a in answers for h in a.response.results]
    hits.sort(key=lambda t: -t[0])
    return [(p, h) for _, p, h in hits[:limit]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bs.add_corpus_arguments(ap)
    ap.add_argument("-k", type=int, default=10)
    args = ap.parse_args()
    from lgrep_core.merge import ProjectAnswer, merge_hits
    from lgrep_core.models import SearchRequest

    args.repo = sorted({n for pair in PAIRS for n in pair} | set(args.repo))
    repos = {r.name: r for r in bs.load_selected(args)[0]}
    runner = bs.LgrepRunner(args.cache)
    searchers = {}
    for name, repo in repos.items():
        store, _, _ = runner.index(repo.root)
        searchers[name] = runner.searcher(store, "full")[0]
    merges: dict[str, Any] = {"lgrep": merge_hits, "score": by_score}
    rows: dict[str, list[dict]] = {m: [] for m in ["alone", *merges]}
    pairs = [(a, b) for a, b in PAIRS if a in repos and b in repos]
    for a, b in pairs:
        for mine, other in ((a, b), (b, a)):
            for task in repos[mine].tasks:
                request = SearchRequest(task.query, limit=args.k, explain=True)
                answers = [
                    ProjectAnswer(Path(name), searchers[name].search(request), "local") for name in (mine, other)
                ]
                alone = [(h.path, h.start_line, h.end_line) for h in answers[0].response.results]
                rows["alone"].append({"repo": mine, "ndcg10": bs.ndcg(alone, task.targets, 10), "other": 0})
                for label, merge in merges.items():
                    merged = merge(answers, args.k)
                    found = [(h.path, h.start_line, h.end_line) if p.name == mine else ("\0", 0, 0) for p, h in merged]
                    other_hits = sum(1 for p, _ in merged if p.name != mine)
                    rows[label].append({"repo": mine, "ndcg10": bs.ndcg(found, task.targets, 10), "other": other_hits})
    print(f"{len(pairs)} pairs, {len(rows['alone'])} questions (each asked of its repository and the other)")
    for label, found in rows.items():
        other = sum(r["other"] for r in found) / len(found)
        print(f"{label:<6} NDCG@10 {bs.repo_mean(found, 'ndcg10'):.4f}   other hits in the top 10: {other:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
