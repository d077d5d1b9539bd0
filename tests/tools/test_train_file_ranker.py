"""The file ranker's training tool (tools/train_file_ranker.py): which commits become questions,
the features it reads from a files answer's evidence, and the fit, on hand-made cases."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from lgrep_search.files import Evidence

from tests.tools.conftest import load_tool


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_tool("train_file_ranker")


def test_no_training_repository_is_in_a_benchmark(tool: ModuleType) -> None:
    banned = tool.benchmark_repos()
    assert {"sympy/sympy", "sphinx-doc/sphinx", "django/django", "pytest-dev/pytest"} <= banned
    assert not {r.lower() for r in tool.TRAINING_REPOS} & banned


def test_a_message_loses_its_trailers_and_pull_request_numbers(tool: ModuleType) -> None:
    body = "Fix the cache key (#1234)\n\nThe key ignored the path.\n\nSigned-off-by: A <a@b.c>\nCloses: #99\n"
    assert tool.clean_message(body) == "Fix the cache key\n\nThe key ignored the path."


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("src/pkg/cache.py", True),
        ("tests/test_cache.py", False),
        ("pkg/test_cache.py", False),
        ("docs/conf.py", False),
        ("test cases/common/1 trivial/x.py", False),
        ("src/pip/_vendor/rich/text.py", False),
        ("README.md", False),
    ],
)
def test_what_counts_as_source(tool: ModuleType, path: str, source: bool) -> None:
    assert tool.is_source(path) is source


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    ).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def test_mining_keeps_task_like_commits_that_edit_existing_source(tool: ModuleType, tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    long_text = "The parser dropped the last token when the input ended without a newline. " * 4
    base = _commit(repo, {"pkg/parse.py": "def parse(s):\n    return s\n", "tests/test_parse.py": "x = 1\n"}, "Initial")
    fix = _commit(repo, {"pkg/parse.py": "def parse(s):\n    return s.strip()\n", "tests/test_parse.py": "x = 2\n"},
                  f"Fix parse at end of input (#12)\n\n{long_text}")  # fmt: skip
    _commit(repo, {"pkg/parse.py": "def parse(s):\n    return s.split()\n"}, "Short message")
    _commit(repo, {"pkg/new.py": "y = 1\n"}, f"Add a module\n\n{long_text}")  # a new file: nothing to find
    _commit(repo, {"docs/index.md": "# x\n"}, f"Document\n\n{long_text}")  # no source edited
    questions = tool.mine("acme/r", repo, ref="HEAD")
    assert [q["commit"] for q in questions] == [fix]
    (q,) = questions
    assert q["base_commit"] == base and q["gold_files"] == ["pkg/parse.py"]
    assert q["problem_statement"].startswith("Fix parse at end of input\n") and "(#12)" not in q["problem_statement"]


def test_features_read_each_list_by_rank_and_by_its_score_over_the_best(tool: ModuleType) -> None:
    ev = Evidence(
        ranks={"chunks": [3, 1], "file_bm25": [1, 3, 2], "vector": [2, 1], "named": [3]},
        scores={"chunks": {3: 0.5, 1: 0.25}, "file_bm25": {1: 8.0, 3: 4.0, 2: 2.0}, "vector": {1: 0.6, 2: 0.7, 3: 0.4}},
        named_kind={3: "frame"},
        chunks={1: 10, 2: 1, 3: 3},
        candidates={1: 2, 3: 1},
        penalty={1: 1.0, 2: 0.25, 3: 1.0},
        fused={1: 0.04, 2: 0.01, 3: 0.05},
    )
    x = tool.feature_matrix([1, 2, 3], ev)
    col = {name: k for k, name in enumerate(tool.FEATURES)}
    assert x.shape == (3, len(tool.FEATURES))
    assert x[2, col["chunks.top"]] == 1.0 and x[0, col["chunks.top"]] == 0.5 and x[1, col["chunks.top"]] == 0.0
    assert x[0, col["file_bm25.rel"]] == 1.0 and x[1, col["file_bm25.rel"]] == 0.25
    assert x[1, col["vector.gap"]] == 0.0 and x[2, col["vector.gap"]] == pytest.approx(0.3)
    assert x[2, col["named.frame"]] == 1.0 and x[:2, col["named.frame"]].sum() == 0.0
    assert x[1, col["penalty.log"]] == pytest.approx(np.log(0.25)) and x[0, col["penalty.log"]] == 0.0
    assert x[2, col["fused"]] == 1.0 and x[0, col["fused"]] == pytest.approx(0.8)


def test_the_fit_learns_which_evidence_finds_the_answers(tool: ModuleType) -> None:
    """The answer is the file the traceback names; the fused score alone ranks it anywhere."""
    rng = np.random.default_rng(0)
    col = {name: k for k, name in enumerate(tool.FEATURES)}
    xs, ys, qids = [], [], []
    for q in range(60):
        x = rng.normal(size=(20, len(tool.FEATURES)))
        x[:, col["named.frame"]] = 0.0
        gold = int(rng.integers(20))
        x[gold, col["named.frame"]] = 1.0
        xs.append(x)
        ys.append(np.arange(20) == gold)
        qids.append(np.full(20, q))
    x, y, qid = np.concatenate(xs), np.concatenate(ys), np.concatenate(qids)
    golds = np.ones(60, dtype=int)
    fused = col["fused"]
    learned = tool.predict(tool.fit(x, y, qid, np.arange(40), fused), x)
    held_out = np.arange(40, 60)
    assert tool.accuracy(learned, y, qid, held_out, golds)["acc@1"] == 100.0
    assert tool.accuracy(x[:, fused], y, qid, held_out, golds)["acc@1"] < 50.0


def test_a_strong_l2_keeps_the_fused_ranking_and_held_out_repositories_choose_it(
    tool: ModuleType, tmp_path: Path
) -> None:
    """L2 pulls towards the fused ranking, not towards zero; step_fit picks the strength whose
    held-out repositories rank best and writes it into the model."""
    rng = np.random.default_rng(1)
    col = {name: k for k, name in enumerate(tool.FEATURES)}
    xs, ys, qids, repos = [], [], [], []
    for q in range(40):
        x = rng.normal(size=(15, len(tool.FEATURES)))
        gold = int(rng.integers(15))
        x[gold, col["fused"]] += 3.0  # the fused score finds the answer; the other columns are noise
        xs.append(x)
        ys.append(np.arange(15) == gold)
        qids.append(np.full(15, q))
        repos.append(f"o/r{q % 4}")
    x, y, qid = np.concatenate(xs), np.concatenate(ys), np.concatenate(qids)
    fused = col["fused"]
    weights = tool.fit(x, y, qid, np.arange(40), fused, 1e6)[2]
    assert weights[fused] == pytest.approx(1.0, abs=1e-3) and np.abs(np.delete(weights, fused)).max() < 1e-3
    tool.save_rows(
        tmp_path / "train.npz",
        [(repo, f"i{q}", x[qid == q], y[qid == q], 1) for q, repo in enumerate(repos)],
    )
    report = tool.step_fit(tmp_path, "train.npz", evals={}, l2s=(1e-4, 1e3))
    assert set(report["by_l2"]) == {"0.0001", "1000.0"}
    model = json.loads((tmp_path / "model.json").read_text())
    assert model["fit"]["l2"] == report["l2"] and model["fit"]["l2_tried"] == [1e-4, 1e3]
    chosen = report["by_l2"][str(report["l2"])]["held_out_all"]["learned"]
    assert all(chosen["acc@5"] >= r["held_out_all"]["learned"]["acc@5"] for r in report["by_l2"].values())
