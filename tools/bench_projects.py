"""Several projects in one question (ADR 0026): does asking repository A's questions of A and B
together keep A's answers where they were alone? On semble's public benchmark, for each pair of
repositories, each question of either is searched in both (in-process, the `full` mode of
bench_search.py) and the two answers merged; NDCG@10 counts only the question's own repository's
targets, so every hit of the other repository is a miss. Reported: alone, merged by raw score, and
lgrep's merge (lgrep_core.domain.merge.merge_hits).

    uv run --frozen python tools/bench_projects.py --checkouts /work/bench/checkouts --cache /tmp/cache
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search as bs

# Pairs of one language (the hard case: the other repository speaks the question's language, and
# often about the same things; redux/zod is JavaScript and TypeScript), then four of two languages.
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
    ("fastapi", "gin"),
    ("axum", "express"),
    ("circe", "guzzle"),
    ("libuv", "ktor"),
]


def by_score(answers: list[Any], limit: int, files: bool) -> list[tuple[Path, Any]]:
    """The answers merged by their own scores (what lgrep does not do)."""
    hits = [(h.score, a.project, h) for a in answers for h in (a.response.files if files else a.response.results)]
    hits.sort(key=lambda t: -t[0])
    return [(p, h) for _, p, h in hits[:limit]]


def _where(hit: Any, files: bool) -> tuple[str, int, int]:
    """A result as the metric reads it: a file covers every line of it (as bench_search's ripgrep)."""
    return (hit.path, 1, 1 << 31) if files else (hit.path, hit.start_line, hit.end_line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bs.add_corpus_arguments(ap)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--files", action="store_true", help="files answers (a file covers every target in it)")
    args = ap.parse_args()
    from lgrep_core.domain.merge import ProjectAnswer, merge_files, merge_hits
    from lgrep_core.domain.models import SearchRequest

    args.repo = sorted({n for pair in PAIRS for n in pair} | set(args.repo))
    repos = {r.name: r for r in bs.load_selected(args)[0]}
    runner = bs.LgrepRunner(args.cache)
    searchers = {}
    for name, repo in repos.items():
        store, _, _ = runner.index(repo.root)
        searchers[name] = runner.searcher(store, "full")[0]
    rows: dict[str, list[dict]] = {m: [] for m in ("alone", "lgrep", "score")}
    pairs = [(a, b) for a, b in PAIRS if a in repos and b in repos]
    for a, b in pairs:
        same = repos[a].language == repos[b].language
        for mine, other in ((a, b), (b, a)):
            for task in repos[mine].tasks:
                request = SearchRequest(task.query, limit=args.k, explain=True, files=args.files)
                answers = [
                    ProjectAnswer(Path(name), searchers[name].search(request), "local") for name in (mine, other)
                ]
                if args.files:
                    chunks = [
                        ProjectAnswer(
                            Path(name),
                            searchers[name].search(SearchRequest(task.query, limit=5, explain=True)),
                            "local",
                        )
                        for name in (mine, other)
                    ]
                    merged = {"lgrep": merge_files(answers, chunks, args.k), "score": by_score(answers, args.k, True)}
                    alone = [(Path(mine), h) for h in answers[0].response.files]
                else:
                    merged = {"lgrep": merge_hits(answers, args.k), "score": by_score(answers, args.k, False)}
                    alone = [(Path(mine), h) for h in answers[0].response.results]
                for label, found in (("alone", alone), *merged.items()):
                    ranked = [_where(h, args.files) if p.name == mine else ("\0", 0, 0) for p, h in found]
                    rows[label].append(
                        {
                            "repo": mine,
                            "same": same,
                            "ndcg10": bs.ndcg(ranked, task.targets, 10),
                            "other": sum(1 for p, _ in found if p.name != mine),
                        }
                    )
    what = "files" if args.files else "chunks"
    print(f"{len(pairs)} pairs, {len(rows['alone'])} questions (each asked of its repository and the other), {what}")
    for label, found in rows.items():
        other = sum(r["other"] for r in found) / len(found)
        same = bs.repo_mean([r for r in found if r["same"]], "ndcg10")
        mixed = bs.repo_mean([r for r in found if not r["same"]], "ndcg10")
        print(
            f"{label:<6} NDCG@10 {bs.repo_mean(found, 'ndcg10'):.4f} (same language {same:.4f}, other {mixed:.4f})"
            f"   other hits in the top 10: {other:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
