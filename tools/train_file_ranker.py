"""Learn a files ranking for task questions, and check it, reproducibly (issues 24 and 39; ADRs
0020 and 0035).

Since issue 39 it learns from issues (`--source issues`, the default): issues-dev's train split, whose
states tools/bench_issues.py builds, checked on its dev split and on swebench-dev:

    uv run --frozen python tools/train_file_ranker.py --source issues \\
        --dev-cache /work/bench/swebench-cache [--l2 0.3 --l2 1] [--drop fact.history] [--ship]

Steps (`--step` runs some): train and dev (every built issue's candidate files with their FEATURES ->
CACHE/issues-<split>.npz), swe (swebench-dev's, with --dev-cache), fit: a pairwise logistic model
(numpy, deterministic) that starts from the fused ranking and whose L2 pulls it back there; for each
L2 strength every training repository is held out in turn, the strength whose held-out questions rank
best is fitted on all -> CACHE/model.json, with its data manifest and its dev scores beside the fused
ranking's. `--ship` copies it into lgrep_search (only when ADR 0035's rule holds: that is a decision
made from the report, not by the tool).

The older source, commit history (`--source commits`, issue 24):

    uv run --frozen python tools/train_file_ranker.py --source commits --clones /work/bench/train \\
        --cache /work/bench/train-cache --dev-cache /work/bench/swebench-cache

Clones: `git clone` of each TRAINING_REPOS entry into --clones/<folder> (the `fetch` verb's
mirrors will do); their default branch (MINED_REF) is what is mined.

What it learns from: commits of public repositories that are in no benchmark (TRAINING_REPOS; the
tool refuses any repository of ../shared/bench's sets or of SWE-bench Lite's held-out test). A
commit whose message reads like a task (at least MIN_MESSAGE_CHARS once trailers and pull-request
numbers are stripped) and whose change touches 1 to MAX_GOLD existing non-test source files is a
question: its message is the query, those files are the answer, and the repository at the commit's
parent is what is searched, as an issue and its fix are in SWE-bench.

Steps (each skips what an earlier run finished; `--step` runs some):
1. mine: the questions, MAX_PER_REPO most recent per repository -> CACHE/instances.jsonl;
2. build: an incremental lgrep index per repository, commit after commit, each state saved as
   tools/bench_swebench.py saves its own (same code, same checks);
3. features: every question's candidate files (what `lgrep search --files` ranks: every file an
   evidence list of lgrep_search/files.py found) with their features (FEATURES) and whether each
   is an answer -> CACHE/features.npz;
4. dev (with --dev-cache): the same for the development set's saved states -> dev-features.npz;
5. fit: as above.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_swebench as swe
from bench_search import LgrepRunner
from lgrep_search.file_model import FEATURES, feature_matrix
from lgrep_search.files import Evidence

PROJECT = Path(__file__).resolve().parents[1]
SHARED_BENCH = PROJECT.parent / "shared" / "bench"

# owner/name -> clone folder under --clones. Python projects with descriptive commit messages: a
# graph library, a documentation generator, a migration tool, a build system, two packaging tools,
# a syntax highlighter.
TRAINING_REPOS = {
    "networkx/networkx": "networkx",
    "mkdocs/mkdocs": "mkdocs",
    "sqlalchemy/alembic": "alembic",
    "mesonbuild/meson": "meson",
    "pypa/pip": "pip",
    "python-poetry/poetry": "poetry",
    "pygments/pygments": "pygments",
}
# SWE-bench Lite's repositories beyond the development set: the held-out test. Never trained on.
HELD_OUT = {
    "astropy/astropy", "django/django", "matplotlib/matplotlib", "mwaskom/seaborn", "pallets/flask",
    "psf/requests", "pydata/xarray", "pylint-dev/pylint", "pytest-dev/pytest", "scikit-learn/scikit-learn",
    "sphinx-doc/sphinx", "sympy/sympy",
}  # fmt: skip
# The history mined: the clone's default branch as cloned (the build step moves HEAD), the commits
# read, newest first, and the questions kept per repository.
MINED_REF = "origin/HEAD"
HISTORY_DEPTH = 4000
MAX_PER_REPO = 120
MIN_MESSAGE_CHARS = 200
MAX_GOLD = 3
SOURCE_SUFFIXES = (".py",)
_TRAILER = re.compile(r"^[A-Z][A-Za-z-]+(-[a-z]+)*: \S.*$")
_PR_NUMBER = re.compile(r"\s*\((#|gh-)\d+\)")
_DOC_FOLDERS = ("doc", "docs", "documentation", "changes", "changelog", "news", "examples", "example")
_TEST_FOLDERS = ("test cases", "unittests", "testing", "benchmarks")
_VENDORED_FOLDERS = ("_vendor", "vendor", "vendored", "third_party")


def benchmark_repos() -> set[str]:
    """Every repository some benchmark set of ../shared/bench uses, and the held-out test."""
    names = set(HELD_OUT)
    for folder in ("semble", "vocab-dev"):
        path = SHARED_BENCH / folder / "repos.json"
        if path.is_file():
            for repo in json.loads(path.read_text(encoding="utf-8")):
                names.add(repo["url"].split("github.com/")[1].removesuffix(".git").lower())
    dev = SHARED_BENCH / "swebench-dev" / "instances.jsonl"
    if dev.is_file():
        names |= {json.loads(line)["repo"] for line in dev.read_text(encoding="utf-8").splitlines() if line.strip()}
    return {n.lower() for n in names}


# ------------------------------------------------------------------------------------------ mine


def clean_message(body: str) -> str:
    """A commit message as a question: without its trailer block (Signed-off-by:, Closes:, ...) and
    pull-request numbers."""
    lines = body.strip().splitlines()
    while lines and (not lines[-1].strip() or _TRAILER.match(lines[-1].strip())):
        lines.pop()
    return _PR_NUMBER.sub("", "\n".join(lines)).strip()


def is_source(path: str) -> bool:
    """Code a fix edits: a source file outside tests, docs and examples."""
    *folders, _name = path.split("/")
    if not path.endswith(SOURCE_SUFFIXES) or swe.is_test_path(path):
        return False
    lowered = [f.lower() for f in folders]
    return not any(f in _DOC_FOLDERS or f in _TEST_FOLDERS or f in _VENDORED_FOLDERS for f in lowered)


def mine(repo: str, clone: Path, ref: str = MINED_REF) -> list[dict[str, Any]]:
    """The questions of one repository, oldest first (see the module docstring)."""
    log = subprocess.run(
        ["git", "-C", str(clone), "log", "--first-parent", "--no-merges", "-n", str(HISTORY_DEPTH),
         "--format=%x1e%H%x00%P%x00%ct%x00%B%x00", "--name-status", ref],
        capture_output=True, text=True, check=True, errors="replace",
    ).stdout  # fmt: skip
    out: list[dict[str, Any]] = []
    for record in log.split("\x1e")[1:]:
        sha, parents, stamp, body, names = record.split("\x00", 4)
        if len(parents.split()) != 1:
            continue
        changes = [line.split("\t") for line in names.strip().splitlines() if line.strip()]
        gold = [c[-1] for c in changes if is_source(c[-1])]
        if not 1 <= len(gold) <= MAX_GOLD or any(c[0] != "M" for c in changes if c[-1] in gold):
            continue
        message = clean_message(body)
        if len(message) < MIN_MESSAGE_CHARS:
            continue
        out.append({
            "instance_id": f"{repo.replace('/', '__')}-{sha[:12]}",
            "repo": repo,
            "base_commit": parents.strip(),
            "commit": sha,
            "created_at": datetime.fromtimestamp(int(stamp), UTC).isoformat(),
            "problem_statement": message,
            "gold_files": sorted(gold),
        })  # fmt: skip
        if len(out) == MAX_PER_REPO:
            break
    return out[::-1]


def load(cache: Path) -> dict[str, list[swe.Instance]]:
    out: dict[str, list[swe.Instance]] = {}
    for line in (cache / "instances.jsonl").read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        out.setdefault(raw["repo"], []).append(
            swe.Instance(raw["instance_id"], raw["repo"], raw["base_commit"], raw["created_at"],
                         raw["problem_statement"], tuple(raw["gold_files"]))
        )  # fmt: skip
    return {repo: sorted(insts, key=lambda i: i.created_at) for repo, insts in out.items()}


def step_mine(clones: Path, cache: Path) -> None:
    banned = benchmark_repos()
    rows: list[dict[str, Any]] = []
    for repo, folder in TRAINING_REPOS.items():
        if repo.lower() in banned:
            raise SystemExit(f"{repo} is in a benchmark set: never trained on")
        got = mine(repo, clones / folder)
        print(f"mined {repo}: {len(got)} questions", file=sys.stderr, flush=True)
        rows += got
    cache.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (cache / "instances.jsonl").write_text(text, encoding="utf-8")


def step_build(clones: Path, cache: Path) -> None:
    runner = LgrepRunner(cache)
    for repo, insts in load(cache).items():
        folder = TRAINING_REPOS[repo]
        states = swe.States(cache / "states" / folder)
        result = swe.build_repo(repo, clones / folder, insts, runner, states, label=folder)
        print(f"built {repo}: {result['seconds']:.0f} s", file=sys.stderr, flush=True)


# -------------------------------------------------------------------------------------- features
# The features are lgrep_search.file_model's: the shipped model is applied to what it was fitted on.

Rows = list[tuple[str, str, np.ndarray, np.ndarray, int]]  # (repository, id, features, is-gold, gold files)


def question_features(
    repo: str,
    insts: list[swe.Instance],
    states: swe.States,
    embedder: Any,
    clone: Path | None = None,
    unwanted: Callable[[str], bool] | None = None,
) -> Rows:
    """Every question with a saved state: its files answer's candidate files and their features
    (files.rank_files's evidence, through Searcher.on_file_evidence), and which are its answers.
    A gold file `unwanted` names (a test, when training) is neither an answer nor a wrong one: its
    row is left out and it is not counted among the question's answers."""
    from lgrep_core.domain.models import SearchRequest
    from lgrep_search.searcher import Searcher

    rows: Rows = []
    for inst in insts:
        if not states.done(inst.instance_id):
            continue
        corpus = states.corpus(inst.instance_id)
        seen: list[tuple[list[int], Evidence]] = []
        history = states.history(inst.instance_id, clone, inst.base_commit) if clone is not None else None
        searcher = Searcher(None, embedder, corpus=corpus, history=history)
        searcher.on_file_evidence = lambda files, ev, seen=seen: seen.append((files, ev))
        query, _cut = swe.prepare_query(inst.query)
        searcher.search(SearchRequest(query, limit=10, files=True))
        if seen:
            files, evidence = seen[0]
            skipped = {g for g in inst.gold if unwanted is not None and unwanted(g)}
            kept = [f for f in files if corpus.files[f] not in skipped]
            y = np.array([corpus.files[f] in inst.gold for f in kept], dtype=bool)
            golds = len(inst.gold) - len(skipped)
            if golds:
                rows.append((repo, inst.instance_id, feature_matrix(kept, evidence), y, golds))
    return rows


def save_rows(path: Path, rows: Rows) -> None:
    np.savez_compressed(
        path,
        x=np.concatenate([r[2] for r in rows]), y=np.concatenate([r[3] for r in rows]),
        qid=np.concatenate([np.full(len(r[3]), q) for q, r in enumerate(rows)]),
        repo=np.array([r[0] for r in rows]), ids=np.array([r[1] for r in rows]),
        golds=np.array([r[4] for r in rows]), features=np.array(FEATURES),
    )  # fmt: skip


def load_rows(path: Path) -> dict[str, np.ndarray]:
    data = dict(np.load(path))
    if tuple(data["features"]) != FEATURES:
        raise SystemExit(f"{path} was made by other code: run the features step again")
    return data


def step_features(clones: Path, cache: Path) -> None:
    """The training questions' features (a question no evidence list answers teaches nothing)."""
    runner = LgrepRunner(cache)
    insts = load(cache)
    embedder = runner.embedder_for(clones / TRAINING_REPOS[next(iter(insts))])
    rows: Rows = []
    for repo, repo_insts in insts.items():
        states = swe.States(cache / "states" / TRAINING_REPOS[repo])
        got = question_features(repo, repo_insts, states, embedder, clones / TRAINING_REPOS[repo])
        rows += [r for r in got if r[3].any()]
    save_rows(cache / "features.npz", rows)
    print(f"features: {len(rows)} questions", file=sys.stderr, flush=True)


def step_dev_features(
    dev_data: Path, dev_cache: Path, cache: Path, out: str = "dev-features.npz", clones: Path = Path("/work/bench")
) -> None:
    """The development set's features, from tools/bench_swebench.py's saved states: to check a
    model there (never to fit it)."""
    runner = LgrepRunner(dev_cache)
    insts = swe.load_instances(dev_data, set(), set())
    embedder = runner.embedder_for(PROJECT)
    rows: Rows = []
    for repo, repo_insts in insts.items():
        states = swe.States(dev_cache / "swebench" / swe.REPOS[repo][0])
        rows += question_features(repo, repo_insts, states, embedder, clones / swe.REPOS[repo][0])
    cache.mkdir(parents=True, exist_ok=True)
    save_rows(cache / out, rows)
    print(f"development features: {len(rows)} questions", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------- fit

# Pairwise logistic regression: L2 strength, Adam steps and rate; negatives per question (the files
# the fused ranking puts first: the ones a gold file has to pass).
L2 = 1e-3
# The L2 strengths tried by default; cross-validation by repository picks one (step_fit).
L2_GRID = (0.1, 0.3, 1.0, 3.0)
STEPS_ADAM = 600
RATE = 0.05
NEGATIVES = 50
KS = (1, 3, 5, 10)


def _pairs(
    x: np.ndarray, y: np.ndarray, qid: np.ndarray, fused_col: int, questions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Feature differences gold - other for the chosen questions, and each pair's weight (every
    question weighs 1 in all)."""
    diffs: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for q in questions:
        rows = np.flatnonzero(qid == q)
        gold = rows[y[rows]]
        other = rows[~y[rows]]
        other = other[np.argsort(-x[other, fused_col], kind="stable")[:NEGATIVES]]
        if not len(gold) or not len(other):
            continue
        d = (x[gold][:, None, :] - x[other][None, :, :]).reshape(-1, x.shape[1])
        diffs.append(d)
        weights.append(np.full(len(d), 1.0 / len(d)))
    return np.concatenate(diffs), np.concatenate(weights)


def fit(
    x: np.ndarray, y: np.ndarray, qid: np.ndarray, questions: np.ndarray, fused_col: int, l2: float = L2
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, scale, weights) of the pairwise model fitted on `questions`. The weights start from
    the fused ranking (all weight on `fused`) and L2 pulls them back towards it, not towards zero:
    the stronger `l2`, the closer the model stays to the fallback it has to beat."""
    rows = np.isin(qid, questions)
    mean = x[rows].mean(axis=0)
    scale = x[rows].std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    d, pw = _pairs(z, y, qid, fused_col, questions)
    pw = pw / pw.sum()
    prior = np.zeros(x.shape[1])
    prior[fused_col] = 1.0
    w = prior.copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, STEPS_ADAM + 1):
        margin = d @ w
        grad = -(d * (pw / (1.0 + np.exp(margin)))[:, None]).sum(axis=0) + 2 * l2 * (w - prior)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= RATE * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return mean, scale, w


def accuracy(
    scores: np.ndarray, y: np.ndarray, qid: np.ndarray, questions: np.ndarray, golds: np.ndarray
) -> dict[str, float]:
    """Acc@k (every gold file in the first k; a gold file no list found counts as missed) and MRR."""
    hits = dict.fromkeys(KS, 0)
    mrr = 0.0
    for q in questions:
        rows = np.flatnonzero(qid == q)
        order = rows[np.argsort(-scores[rows], kind="stable")]
        ranks = np.flatnonzero(y[order])
        if len(ranks) == golds[q]:
            for k in KS:
                hits[k] += int(ranks.max() < k)
        mrr += 1.0 / (ranks.min() + 1) if len(ranks) else 0.0
    n = max(len(questions), 1)
    return {**{f"acc@{k}": round(100 * v / n, 1) for k, v in hits.items()}, "mrr": round(float(mrr) / n, 3)}


def predict(params: tuple[np.ndarray, np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The model's score of each row of `x`; `params` is `fit`'s (mean, scale, weights)."""
    mean, scale, weights = params
    return ((x - mean) / scale) @ weights


def _groups(data: dict[str, np.ndarray], language: dict[str, str]) -> dict[str, np.ndarray]:
    """Question indexes per repository, per language (when the ids have one) and all together."""
    out: dict[str, np.ndarray] = {}
    for repo in sorted(set(data["repo"].tolist())):
        out[repo] = np.flatnonzero(data["repo"] == repo)
    langs = np.array([language.get(str(i), "") for i in data["ids"]])
    for lang in sorted(set(langs.tolist()) - {""}):
        out[f"language {lang}"] = np.flatnonzero(langs == lang)
    out["all"] = np.arange(len(data["repo"]))
    return out


def step_fit(
    cache: Path,
    train_file: str = "features.npz",
    evals: dict[str, str] | None = None,
    language: dict[str, str] | None = None,
    provenance: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
    l2s: tuple[float, ...] = (L2,),
) -> dict[str, Any]:
    """Fit with each training repository held out in turn, for each L2 strength of `l2s` (all
    reported); the strength whose held-out questions rank best (Acc@5, then Acc@1, then MRR, over
    every held-out question) is fitted on all and written to CACHE/model.json. Each of `evals`
    (name -> features file in CACHE, e.g. the development set's) is scored by that model beside the
    fused ranking, per repository and language: it never chooses anything."""
    data = load_rows(cache / train_file)
    # a variant without some features: their columns are zero, so their weights stay zero
    kept = np.array([not any(name.startswith(p) for p in drop) for name in FEATURES], dtype=np.float64)
    x, y, qid, repos, golds = data["x"] * kept, data["y"], data["qid"], data["repo"], data["golds"]
    fused_col = FEATURES.index("fused")
    everything = np.arange(len(repos))
    report: dict[str, Any] = {"held_out": {}, "held_out_all": {}, "by_l2": {}}
    best: tuple[tuple[float, float, float], float] | None = None
    for l2 in l2s:
        held: dict[str, dict[str, Any]] = {}
        pooled = np.zeros(len(x))  # every question scored by the model that never saw its repository
        for repo in sorted(set(repos.tolist())):
            test = np.flatnonzero(repos == repo)
            scores = predict(fit(x, y, qid, np.flatnonzero(repos != repo), fused_col, l2), x)
            rows = np.isin(qid, test)
            pooled[rows] = scores[rows]
            held[repo] = {
                "questions": len(test),
                "fused": accuracy(x[:, fused_col], y, qid, test, golds),
                "learned": accuracy(scores, y, qid, test, golds),
            }
        overall = {
            "questions": len(repos),
            "fused": accuracy(x[:, fused_col], y, qid, everything, golds),
            "learned": accuracy(pooled, y, qid, everything, golds),
        }
        report["by_l2"][str(l2)] = {"held_out": held, "held_out_all": overall}
        print(f"l2 {l2}, held out, all: {overall}", file=sys.stderr, flush=True)
        learned = overall["learned"]
        key = (learned["acc@5"], learned["acc@1"], learned["mrr"])
        if best is None or key > best[0]:
            best = (key, l2)
            report["held_out"], report["held_out_all"] = held, overall
    assert best is not None
    l2 = best[1]
    report["l2"] = l2
    print(f"chosen by held-out repositories: l2 {l2}", file=sys.stderr, flush=True)
    mean, scale, w = fit(x, y, qid, everything, fused_col, l2)
    model = {
        "features": list(FEATURES),
        "mean": mean.tolist(), "scale": scale.tolist(), "weights": w.tolist(),
        "trained": time.strftime("%Y-%m-%d"),
        "repositories": sorted(set(repos.tolist())),
        "questions": len(repos),
        "fit": {
            "l2": l2, "l2_tried": list(l2s), "toward": "fused",
            "steps": STEPS_ADAM, "rate": RATE, "negatives": NEGATIVES, "seed": None,
        },
        "provenance": provenance or {},
        "dropped": list(drop),
        "held_out": report["held_out"],
        "held_out_all": report["held_out_all"],
    }  # fmt: skip
    for name, weight in sorted(zip(FEATURES, w, strict=True), key=lambda p: -abs(p[1])):
        print(f"  {name:22s} {weight:+.3f}", file=sys.stderr)
    for name, file in (evals or {"development": "dev-features.npz"}).items():
        path = cache / file
        if not path.is_file():
            continue
        dev = load_rows(path)
        dev["x"] = dev["x"] * kept
        learned = predict((mean, scale, w), dev["x"])
        report[name] = {}
        for group, questions in _groups(dev, language or {}).items():
            report[name][group] = {
                "questions": len(questions),
                "fused": accuracy(dev["x"][:, fused_col], dev["y"], dev["qid"], questions, dev["golds"]),
                "learned": accuracy(learned, dev["y"], dev["qid"], questions, dev["golds"]),
            }
            print(f"{name} {group}: {report[name][group]}", file=sys.stderr, flush=True)
        model[name] = report[name]
    (cache / "model.json").write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {cache / 'model.json'}", file=sys.stderr)
    return report


# ---------------------------------------------------------------------------------------- issues
# The training source since issue 39: issues-dev's issues (tools/bench_issues.py builds their
# states), fitted on the train split only; the dev split and swebench-dev check it.


def issues_features(split: str, data: Path, issues_cache: Path, cache: Path) -> Path:
    """Features of every built issue of one split of issues-dev -> CACHE/issues-<split>.npz."""
    import bench_issues as issues

    part = issues.read_split()
    by_repo: dict[str, list[dict[str, Any]]] = {}
    for row in issues.load_rows(data):
        if part.get(row["repo"]) == split:
            by_repo.setdefault(row["repo"], []).append(row)
    runner = LgrepRunner(issues_cache)
    embedder = None
    rows: Rows = []
    for repo, repo_rows in sorted(by_repo.items()):
        clone = issues.clone_of(issues.DEFAULT_MIRRORS, issues.DEFAULT_CLONES, repo)
        if clone is None:
            continue
        insts, _lacking = issues.instances(repo_rows, clone)
        states = swe.States(issues_cache / "issues" / repo.replace("/", "+"))
        if not any(states.done(i.instance_id) for i in insts):
            continue
        embedder = embedder or runner.embedder_for(clone)
        # Training: a fix's test files are not what the ranking is for (tests rank below source unless
        # asked for), so they teach nothing either way; dev and swebench-dev score them as the benchmark does.
        unwanted = issues.is_test if split == "train" else None
        got = question_features(repo, insts, states, embedder, clone, unwanted)
        # a training question no evidence list answers teaches nothing; an evaluation one counts as missed
        rows += [r for r in got if r[3].any()] if split == "train" else got
    out = cache / f"issues-{split}.npz"
    cache.mkdir(parents=True, exist_ok=True)
    save_rows(out, rows)
    print(f"issues {split}: {len(rows)} questions -> {out}", file=sys.stderr, flush=True)
    return out


def provenance(data: Path, cache: Path, train_file: str) -> dict[str, Any]:
    """What the model was fitted on: the data file's and the split's digests and the question ids."""
    import hashlib

    import bench_issues as issues

    ids = sorted(str(i) for i in load_rows(cache / train_file)["ids"])
    return {
        "data": "issues-dev/issues.jsonl",
        "data_sha256": hashlib.sha256((data / "issues.jsonl").read_bytes()).hexdigest(),
        "split": "tools/issues_split.json",
        "split_sha256": hashlib.sha256(issues.SPLIT_FILE.read_bytes()).hexdigest(),
        "questions_sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest(),
        "command": "uv run --frozen python tools/train_file_ranker.py --source issues",
    }


SHIPPED = PROJECT / "packages" / "lgrep-search" / "src" / "lgrep_search" / "file_ranker.json"


def ship(cache: Path) -> None:
    """Copy CACHE/model.json into the package, where lgrep_search.file_model reads it."""
    model = json.loads((cache / "model.json").read_text(encoding="utf-8"))
    SHIPPED.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    print(f"shipped {SHIPPED}", file=sys.stderr)


# ------------------------------------------------------------------------------------------ main

STEPS = ("mine", "build", "features", "dev", "fit")
ISSUE_STEPS = ("train", "dev", "swe", "fit")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", choices=("issues", "commits"), default="issues", help="what to learn from")
    ap.add_argument("--clones", type=Path, help="commits: folder with one clone per TRAINING_REPOS entry")
    ap.add_argument("--cache", type=Path, default=Path("/work/bench/ranker-cache"), help="features, model (kept)")
    ap.add_argument("--issues-data", type=Path, default=SHARED_BENCH / "issues-dev")
    ap.add_argument("--issues-cache", type=Path, default=Path("/work/bench/issues-cache"), help="bench_issues's")
    ap.add_argument("--dev-data", type=Path, default=swe.DEFAULT_DATA, help="the swebench-dev folder")
    ap.add_argument(
        "--dev-cache", type=Path, help="tools/bench_swebench.py's --cache, built: score the model on its states too"
    )
    ap.add_argument("--dev-clones", type=Path, default=Path("/work/bench"), help="the clones `sympy` and `sphinx`")
    ap.add_argument("--step", action="append", help=f"only these steps (issues: {ISSUE_STEPS}; commits: {STEPS})")
    ap.add_argument("--ship", action="store_true", help="copy the fitted model into lgrep_search")
    ap.add_argument("--drop", action="append", default=[], help="fit without the features named with this prefix")
    ap.add_argument(
        "--l2",
        type=float,
        action="append",
        help=f"L2 strengths to choose from by held-out repositories (default {L2_GRID})",
    )
    args = ap.parse_args()
    started = time.perf_counter()
    if args.source == "issues":
        steps = args.step or list(ISSUE_STEPS)
        for split in ("train", "dev"):
            if split in steps:
                issues_features(split, args.issues_data, args.issues_cache, args.cache)
        if "swe" in steps and args.dev_cache is not None:
            step_dev_features(args.dev_data, args.dev_cache, args.cache, "swe-dev.npz", args.dev_clones)
        if "fit" in steps:
            import bench_issues as issues

            language = {r["instance_id"]: r["language"] for r in issues.load_rows(args.issues_data)}
            step_fit(
                args.cache,
                "issues-train.npz",
                {"issues_dev": "issues-dev.npz", "swebench_dev": "swe-dev.npz"},
                language,
                provenance(args.issues_data, args.cache, "issues-train.npz"),
                tuple(args.drop),
                tuple(args.l2 or L2_GRID),
            )
        if args.ship:
            ship(args.cache)
        print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        return 0
    if args.clones is None:
        raise SystemExit("--source commits needs --clones")
    steps = args.step or list(STEPS)
    if "mine" in steps:
        step_mine(args.clones, args.cache)
    if "build" in steps:
        step_build(args.clones, args.cache)
    if "features" in steps:
        step_features(args.clones, args.cache)
    if "dev" in steps and args.dev_cache is not None:
        step_dev_features(args.dev_data, args.dev_cache, args.cache, clones=args.dev_clones)
    if "fit" in steps:
        step_fit(args.cache, l2s=tuple(args.l2 or (L2,)))
    print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
