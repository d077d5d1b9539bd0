"""File localization on issues-dev: real issues in eight languages -> the files their fix changed.

Data: ../shared/bench/issues-dev (issues.jsonl and its README.md): 1,028 issues from 64 repositories
(Python, JavaScript, C, Java, Rust, Go, TypeScript, C++), each with its base commit and gold files.
The same task and metric as tools/bench_swebench.py, whose build, states and scoring this tool
reuses; what differs is that any repository and any language comes in:

    uv run --frozen python tools/bench_issues.py split                       # (re)write the split
    uv run --frozen python tools/bench_issues.py build --split dev           # index, save states
    uv run --frozen python tools/bench_issues.py score --split dev --out runs/issues-dev.json
    uv run --frozen python tools/bench_issues.py context --split dev --out runs/issues-context.json

Split (tools/issues_split.json, committed): by repository, never by issue. A repository's unit is
itself, or the project it was forked from (FORKS: yt-dlp and youtube-dl share most of their code,
so they are one unit). Units are grouped by the language most of their issues are in; within a
language, in the order of sha1(unit name), units go to `dev` until dev holds DEV_SHARE of the
language's issues, the rest to `train`. The rule looks at names and counts only, never at results.
`dev` is for measuring and is never trained on; `train` is for fitting the learned parts, with
cross-validation by repository inside it.

Repositories come from the search tool's `fetch` as bare mirrors under --mirrors (owner+name/repo,
matched without regard to case); each is cloned once (a local clone: hard links) under --clones.
Repositories too big to fetch, and issues whose base commit the mirror lacks, are listed, not
scored. Within a repository the issues are indexed in the order of their base commit's date, so
each state re-embeds only what changed since the previous one.

Scoring: `files` (`lgrep search --files`, what an agent asks for an issue) and `full` (the chunk
answer's files in order), each also with only code files kept; a BM25 floor over whole code files
of every language with and without test files (TEST_PATH: the test layouts of each ecosystem).
Tables: every gold file within k (LocAgent's Acc@k), any gold file within k (hit@k), MRR; by split,
by language (of the gold files) and by repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import LgrepRunner, write_json
from bench_swebench import (
    FLOOR_KINDS,
    Instance,
    States,
    _lasting_term_caches,
    _QueryMemo,
    build_repo,
    prepare_query,
    ranker,
    score_repo,
    tables,
)

PROJECT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = PROJECT.parent / "shared" / "bench" / "issues-dev"
SPLIT_FILE = PROJECT / "tools" / "issues_split.json"
DEFAULT_MIRRORS = Path("/work/.mirror")
DEFAULT_CLONES = Path("/work/bench/issues-clones")
DEFAULT_CACHE = Path("/work/bench/issues-cache")
# Lexical states (`--lexical`): chunks without vectors, in a cache of their own.
LEXICAL_CACHE = Path("/work/bench/issues-cache-lexical")
# A fork and its origin are one unit of the split: their code is largely the same.
FORKS = {"ytdl-org/youtube-dl": "yt-dlp/yt-dlp"}
DEV_SHARE = 0.4
LANGUAGES = ("python", "javascript", "typescript", "java", "go", "rust", "c", "cpp")

# Code files of every language the set has, and of the languages lgrep's users bring.
_SUFFIXES = """.py .pyx .pyi .js .jsx .mjs .cjs .ts .tsx .mts .cts .java .kt .kts .scala .groovy .go .rs .c .h
.cc .cpp .cxx .hpp .hh .hxx .ipp .inl .m .mm .cs .swift .rb .php .lua .ex .exs .erl .hs .ml .zig .dart .vue .svelte"""
CODE_SUFFIXES = frozenset(_SUFFIXES.split())
# Test files of each ecosystem: test folders (Python's tests/, Java's src/test/, JS's __tests__/,
# Ruby's spec/, Go's and Rust's testdata/), and test files by name (test_x.py, x_test.go,
# x.test.ts, x.spec.js, XTest.java, XTests.cs, XIT.java, x_spec.rb, conftest.py).
TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|spec|specs|testing|testdata|test-?data|fixtures?)/"
    r"|(?:^|/)(?:test_[^/]*|[^/]*_test|[^/]*_tests|[^/]*\.test|[^/]*\.spec|[^/]*_spec|[^/]*Tests?|"
    r"conftest)\.[A-Za-z0-9]+$"
    r"|(?:^|/)[A-Z]\w*IT\.(?:java|kt)$"
)


def is_code(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "." in name and name[name.rindex(".") :].lower() in CODE_SUFFIXES


def is_test(path: str) -> bool:
    return TEST_PATH.search(path) is not None


# ------------------------------------------------------------------------------------------- data


def load_rows(data: Path) -> list[dict[str, Any]]:
    lines = (data / "issues.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def unit_of(repo: str) -> str:
    return FORKS.get(repo, repo)


def make_split(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The split by the rule in the module docstring: {"dev": [...], "train": [...], ...}."""
    units: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        units[unit_of(row["repo"])][row["language"]] += 1
    by_language: dict[str, list[str]] = defaultdict(list)
    for unit, langs in units.items():
        by_language[max(sorted(langs), key=lambda lang: langs[lang])].append(unit)
    dev_units: set[str] = set()
    for names in by_language.values():
        total = sum(sum(units[u].values()) for u in names)
        held = 0
        for unit in sorted(names, key=lambda u: hashlib.sha1(u.encode()).hexdigest()):
            if held < DEV_SHARE * total:
                dev_units.add(unit)
                held += sum(units[unit].values())
    repos = sorted({row["repo"] for row in rows})
    return {
        "rule": f"by repository; forks with their origin ({FORKS}); per majority language, units in "
        f"sha1(name) order to dev until it holds {DEV_SHARE:.0%} of that language's issues",
        "dev": [r for r in repos if unit_of(r) in dev_units],
        "train": [r for r in repos if unit_of(r) not in dev_units],
    }


def read_split(path: Path = SPLIT_FILE) -> dict[str, str]:
    """repository -> "dev" | "train"."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {repo: part for part in ("dev", "train") for repo in data[part]}


def mirror_of(mirrors: Path, repo: str) -> Path | None:
    want = repo.replace("/", "+").lower()
    for folder in mirrors.iterdir() if mirrors.is_dir() else ():
        if folder.name.lower() == want and (folder / "repo").is_dir():
            return folder / "repo"
    return None


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def clone_of(mirrors: Path, clones: Path, repo: str) -> Path | None:
    """A working clone of the repository's mirror (made once), or None when it was not fetched."""
    mirror = mirror_of(mirrors, repo)
    if mirror is None:
        return None
    dest = clones / repo.replace("/", "+")
    if not (dest / ".git").is_dir():
        clones.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["git", "clone", "-q", "--no-checkout", str(mirror), str(dest)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"cloning {repo}: {proc.stderr.strip()}")
    return dest


def instances(rows: list[dict[str, Any]], clone: Path) -> tuple[list[Instance], list[str]]:
    """The repository's instances in order of their base commit's date, and the ids whose base
    commit the clone lacks."""
    dated: list[tuple[int, Instance]] = []
    lacking: list[str] = []
    for row in rows:
        proc = _git(clone, "log", "-1", "--format=%ct", f"{row['base_commit']}^{{commit}}", "--")
        if proc.returncode != 0 or not proc.stdout.strip():
            lacking.append(row["instance_id"])
            continue
        inst = Instance(
            row["instance_id"],
            row["repo"],
            row["base_commit"],
            proc.stdout.strip(),
            row["problem_statement"],
            tuple(row["gold_files"]),
        )
        dated.append((int(proc.stdout.strip()), inst))
    dated.sort(key=lambda pair: (pair[0], pair[1].instance_id))
    return [inst for _, inst in dated], lacking


def selected(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Repository -> its rows, for the split and repositories asked for."""
    split = read_split()
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in load_rows(args.data):
        if args.split != "all" and split.get(row["repo"]) != args.split:
            continue
        if args.repo and row["repo"] not in args.repo:
            continue
        if args.language and row["language"] not in args.language:
            continue
        out[row["repo"]].append(row)
    return dict(out)


# ----------------------------------------------------------------------------------------- report

GROUPINGS = ("split", "language", "repo")


def report(rows: list[dict[str, Any]], columns: list[str]) -> dict[str, Any]:
    """grouping -> column -> group -> summarize() (the groups of one grouping, then "all")."""
    return {
        "split": tables(rows, columns, lambda r: r["split"]),
        "language": tables(rows, columns, lambda r: f"{r['split']} {r['language']}"),
        "repo": tables(rows, columns, lambda r: f"{r['split']} {r['repo']}"),
    }


SIZE_BUCKETS = ((0, 5_000), (5_000, 20_000), (20_000, 10**9))


def speed_table(rows: list[dict[str, Any]], mode: str) -> dict[str, dict[str, float]]:
    """p50/p90 of a mode's search (ms, the query already embedded) and of the embedding, per size
    of the searched snapshot (chunks)."""

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))], 1) if xs else float("nan")

    out: dict[str, dict[str, float]] = {}
    for lo, hi in SIZE_BUCKETS:
        picked = [r for r in rows if lo <= r["chunks"] < hi and "ms" in r["lgrep"][mode]]
        if picked:
            search = [r["lgrep"][mode]["ms"] for r in picked]
            embed = [r["embed_ms"] for r in picked if r["embed_ms"] is not None]
            out[f"{lo}-{hi} chunks"] = {
                "n": len(picked),
                "search_p50": pct(search, 0.5),
                "search_p90": pct(search, 0.9),
                "embed_p50": pct(embed, 0.5),
            }
    return out


def _label(column: str) -> str:
    source, _, name = column.partition(":")
    if source == "floor":
        return f"BM25 floor, {'no tests' if name == 'no_tests' else 'with tests'}"
    return f"lgrep {name}" + (", code files only" if source == "lgrep.code" else "")


def render(by: dict[str, Any], grouping: str) -> str:
    table = by[grouping]
    lines = [f"By {grouping}: Acc@1/3/5/10 (every gold file), hit@1/@5 (any gold file), MRR"]
    groups = list(next(iter(table.values())))
    for group in groups:
        lines.append(f"  {group} ({int(next(iter(table.values()))[group]['n'])})")
        for column, per_group in table.items():
            s = per_group[group]
            lines.append(
                f"    {_label(column):<32}{s['acc@1']:>6.1f}{s['acc@3']:>6.1f}{s['acc@5']:>6.1f}{s['acc@10']:>6.1f}"
                f"   hit {s['hit@1']:>5.1f}{s['hit@5']:>6.1f}   {s['mrr']:.3f}"
            )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- main


def cmd_split(args: argparse.Namespace) -> int:
    split = make_split(load_rows(args.data))
    write_json(SPLIT_FILE, split)
    print(f"{SPLIT_FILE}: {len(split['dev'])} dev, {len(split['train'])} train repositories")
    return 0


def _prepare(args: argparse.Namespace) -> tuple[dict[str, tuple[Path, list[Instance]]], dict[str, Any]]:
    """Repository -> (clone, instances), and what was left out (not fetched, base commit absent)."""
    left: dict[str, Any] = {"not_fetched": {}, "no_base_commit": {}}
    ready: dict[str, tuple[Path, list[Instance]]] = {}
    for repo, rows in sorted(selected(args).items()):
        clone = clone_of(args.mirrors, args.clones, repo)
        if clone is None:
            left["not_fetched"][repo] = len(rows)
            continue
        insts, lacking = instances(rows, clone)
        if lacking:
            left["no_base_commit"][repo] = lacking
        if insts:
            ready[repo] = (clone, insts)
    return ready, left


def _tree_size(clone: Path, commit: str) -> int:
    out = _git(clone, "ls-tree", "-r", "-l", commit).stdout
    return sum(int(f[3]) for f in (line.split("\t")[0].split() for line in out.splitlines()) if f[3].isdigit())


def cmd_build(args: argparse.Namespace) -> int:
    ready, left = _prepare(args)
    print(f"left out: {json.dumps(left)}", file=sys.stderr, flush=True)
    runner = LgrepRunner(args.cache)
    # The cheapest issues first (the tree's size over its issues): results accrue while big ones build.
    order = sorted(
        ready, key=lambda repo: _tree_size(ready[repo][0], ready[repo][1][-1].base_commit) / len(ready[repo][1])
    )
    for repo in order:
        clone, insts = ready[repo]
        states = States(args.cache / "issues" / repo.replace("/", "+"))
        if all(states.done(i.instance_id) for i in insts):
            continue
        result = build_repo(repo, clone, insts, runner, states, label=repo, vectors=not args.lexical)
        print(f"built {repo}: {result['seconds']:.0f} s", file=sys.stderr, flush=True)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    ready, left = _prepare(args)
    split = read_split()
    language = {row["instance_id"]: row["language"] for row in load_rows(args.data)}
    modes = args.mode or ["files", "full"]
    runner = LgrepRunner(args.cache)
    embedder = None
    rows: list[dict[str, Any]] = []
    unbuilt: dict[str, int] = {}
    started = time.perf_counter()
    for repo, (clone, insts) in ready.items():
        states = States(args.cache / "issues" / repo.replace("/", "+"))
        built = [i for i in insts if states.done(i.instance_id)]
        if len(built) < len(insts):
            unbuilt[repo] = len(insts) - len(built)
        if not built:
            continue
        if states.meta(built[0].instance_id).get("vectors", True) == args.lexical:
            kind = "full" if args.lexical else "lexical"
            raise SystemExit(
                f"{repo}'s states under {args.cache} are {kind}: score them with the flag they were built with"
            )
        if embedder is None and not args.lexical:  # lexical states: nothing to embed the question for
            embedder = _QueryMemo(runner.embedder_for(clone))
        repo_rows, _timing = score_repo(repo, clone, built, states, modes, embedder, args.limit, True, is_code, is_test)
        for row in repo_rows:
            row["split"] = split[repo]
            row["language"] = language[row["instance_id"]]
        rows += repo_rows
    if not rows:
        raise SystemExit("no built states to score: run `build` first")
    columns = [f"{source}:{mode}" for mode in modes for source in ("lgrep", "lgrep.code")]
    columns += [f"floor:{kind}" for kind in FLOOR_KINDS]
    by = report(rows, columns)
    for grouping in GROUPINGS:
        print(render(by, grouping) + "\n")
    speed = speed_table(rows, modes[0])
    for bucket, cell in speed.items():
        print(f"speed {modes[0]} {bucket}: {cell}")
    print(f"not fetched: {left['not_fetched']}")
    print(f"base commit absent: { {r: len(ids) for r, ids in left['no_base_commit'].items()} }")
    print(f"not built yet: {unbuilt}")
    print(f"scored {len(rows)} issues in {time.perf_counter() - started:.0f} s")
    if args.out:
        write_json(
            args.out,
            {
                "date": time.strftime("%Y-%m-%d"),
                "split": args.split,
                "modes": modes,
                "tables": by,
                "left_out": left,
                "not_built": unbuilt,
                "speed": speed,
                "instances": rows,
            },
        )
    return 0


# ---------------------------------------------------------------------------------------- context


def _first_mention(text: str, paths: list[str], count: Any) -> tuple[int | None, int | None]:
    """Tokens from the start of an answer's text to the end of the first gold path in it, and to
    the end of the last gold path's first mention (None when one never appears)."""
    ends = []
    for path in paths:
        at = text.find(json.dumps(path))
        ends.append(None if at < 0 else at + len(json.dumps(path)))
    found = [e for e in ends if e is not None]
    first = count(text[: min(found)]) if found else None
    every = count(text[: max(found)]) if found and len(found) == len(ends) else None
    return first, every


def cmd_context(args: argparse.Namespace) -> int:
    """What an agent reads of `lgrep_search`'s MCP answer to an issue (default arguments) before it
    meets the fixed files: the answer as it is now (files first, then chunks) against the same
    chunks alone (the answer before the files led), through the real MCP server over a stand-in
    engine that returns the searcher's answer from the saved state."""
    import dataclasses

    import anyio
    from lgrep_core.domain.models import SearchRequest
    from lgrep_core.testing.engines import FakeEngine
    from lgrep_mcp.budget import TokenCounter
    from lgrep_mcp.roots import AllowedRoots
    from lgrep_mcp.server import build_server
    from lgrep_search.searcher import Searcher
    from mcp.client.client import Client

    ready, _left = _prepare(args)
    runner = LgrepRunner(args.cache)
    counter = TokenCounter()
    rows: list[dict[str, Any]] = []

    async def ask(server: Any, query: str) -> str:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("lgrep_search", {"query": query})
            return "".join(getattr(c, "text", "") for c in result.content)

    for repo, (clone, insts) in ready.items():
        states = States(args.cache / "issues" / repo.replace("/", "+"))
        embedder = None
        for inst in insts:
            if not states.done(inst.instance_id):
                continue
            embedder = embedder or _QueryMemo(runner.embedder_for(clone))
            corpus = states.corpus(inst.instance_id)
            history = states.history(inst.instance_id, clone, inst.base_commit)
            searcher = Searcher(None, embedder, corpus=corpus, history=history)  # type: ignore[arg-type]
            query = prepare_query(inst.query)[0]
            response = searcher.search(SearchRequest(query, limit=10))
            row: dict[str, Any] = {"instance_id": inst.instance_id, "repo": repo}
            for name, answer in (("files_first", response), ("chunks_only", dataclasses.replace(response, files=[]))):
                engine = FakeEngine()
                engine.project(clone)
                engine.answer(SearchRequest, lambda _request, answer=answer: answer)
                server = build_server(AllowedRoots(clone), engine, counter, cache_dir=args.cache)
                text = anyio.run(ask, server, query)
                first, every = _first_mention(text, list(inst.gold), counter.count)
                row[name] = {"first_gold_tokens": first, "all_gold_tokens": every, "answer_tokens": counter.count(text)}
            rows.append(row)
    summary: dict[str, Any] = {}
    for name in ("files_first", "chunks_only"):
        firsts = [r[name]["first_gold_tokens"] for r in rows]
        summary[name] = {
            "questions": len(rows),
            "gold_in_answer": round(100 * sum(f is not None for f in firsts) / max(len(rows), 1), 1),
            "first_gold_p50_tokens": _median([f for f in firsts if f is not None]),
            **{
                f"first_gold_within_{b}": round(
                    100 * sum(f is not None and f <= b for f in firsts) / max(len(rows), 1), 1
                )
                for b in (500, 1000, 2000, 4000)
            },
            "all_gold_in_answer": round(
                100 * sum(r[name]["all_gold_tokens"] is not None for r in rows) / max(len(rows), 1), 1
            ),
            "all_gold_p50_tokens": _median([t for r in rows if (t := r[name]["all_gold_tokens"]) is not None]),
            "answer_p50_tokens": _median([r[name]["answer_tokens"] for r in rows]),
        }
        print(f"{name}: {summary[name]}")
    if args.out:
        write_json(args.out, {"date": time.strftime("%Y-%m-%d"), "summary": summary, "instances": rows})
    return 0


def _median(xs: list[int]) -> float:
    xs = sorted(xs)
    return float(xs[len(xs) // 2]) if xs else float("nan")


def main() -> int:
    _lasting_term_caches()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("split", "build", "score", "context"):
        p = sub.add_parser(name)
        p.add_argument("--data", type=Path, default=DEFAULT_DATA)
        if name == "split":
            continue
        p.add_argument("--split", choices=("dev", "train", "all"), default="dev")
        p.add_argument("--repo", action="append", default=[], help="only these repositories (owner/name)")
        p.add_argument("--language", action="append", default=[], choices=LANGUAGES)
        p.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS)
        p.add_argument("--clones", type=Path, default=DEFAULT_CLONES)
        p.add_argument("--cache", type=Path, help=f"default {DEFAULT_CACHE}, or {LEXICAL_CACHE} with --lexical")
        p.add_argument(
            "--lexical",
            action="store_true",
            help="states without vectors (a proxy: no dense channel; built in minutes, kept apart)",
        )
        if name == "score":
            p.add_argument("--mode", action="append", default=[])
            p.add_argument("--limit", type=int, default=100)
        if name in ("score", "context"):
            p.add_argument("--out", type=Path)
    args = ap.parse_args()
    if hasattr(args, "lexical") and args.cache is None:
        args.cache = LEXICAL_CACHE if args.lexical else DEFAULT_CACHE
    for mode in getattr(args, "mode", []):
        try:
            ranker(mode, args.limit)
        except ValueError:
            raise SystemExit(f"unknown mode {mode!r}") from None
    commands = {"split": cmd_split, "build": cmd_build, "score": cmd_score, "context": cmd_context}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
