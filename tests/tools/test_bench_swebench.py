"""The file-localization benchmark's metric and BM25 floor (tools/bench_swebench.py), on hand-made cases."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest

from tests.tools.conftest import load_tool


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_tool("bench_swebench")


def test_acc_at_k_needs_every_gold_file_and_mrr_counts_the_first(bench: ModuleType) -> None:
    ranks = [
        bench.gold_ranks(["a.py", "g.py", "b.py"], ["g.py"]),  # rank 2
        bench.gold_ranks(["g.py"], ["g.py"]),  # rank 1
        bench.gold_ranks(["x.py", "y.py"], ["g.py"]),  # absent
        bench.gold_ranks(["h.py", "a.py", "b.py", "c.py", "g.py"], ["g.py", "h.py"]),  # first 1, all by 5
    ]
    assert ranks == [(2, 2), (1, 1), (None, None), (1, 5)]
    s = bench.summarize(ranks)
    assert s["acc@1"] == pytest.approx(25.0)
    assert s["acc@3"] == pytest.approx(50.0)
    assert s["acc@5"] == s["acc@10"] == pytest.approx(75.0)
    assert s["mrr"] == pytest.approx((1 / 2 + 1 + 0 + 1) / 4)


def test_identifiers_split_on_case_and_underscores(bench: ModuleType) -> None:
    assert bench.identifier_tokens("parseHTTPResponse(is_integer, x2) # MatrixSymbol 42") == [
        "parse",
        "http",
        "response",
        "is",
        "integer",
        "matrix",
        "symbol",
    ]


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("sympy/core/tests/test_basic.py", True),
        ("tests/roots/test-root/conf.py", True),
        ("sphinx/testing/util.py", False),
        ("sympy/utilities/pytest.py", False),
        ("lib/foo_test.py", True),
        ("conftest.py", True),
        ("sphinx/ext/autodoc/__init__.py", False),
    ],
)
def test_test_files(bench: ModuleType, path: str, is_test: bool) -> None:
    assert bench.is_test_path(path) is is_test


def test_bm25_scores_match_the_formula(bench: ModuleType) -> None:
    texts = ["matrix symbol matrix", "symbol printer latex latex latex", "parse expr"]
    query = "latex matrix matrix"
    vocab = bench.Vocabulary()
    docs = [vocab.counts(bench.identifier_tokens(t)) for t in texts]
    got = bench.bm25_scores(docs, vocab.counts(bench.identifier_tokens(query)), k1=1.2, b=0.75)

    tokens = [t.split() for t in texts]
    avg = sum(map(len, tokens)) / len(tokens)
    want = []
    for doc in tokens:
        score = 0.0
        for term in query.split():  # a query term counts once per occurrence
            df = sum(term in d for d in tokens)
            idf = math.log(1 + (len(tokens) - df + 0.5) / (df + 0.5))
            tf = doc.count(term)
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(doc) / avg))
        want.append(score)
    assert want[0] > want[1] > want[2] == 0.0
    assert got.tolist() == pytest.approx(want)
    assert bench.rank_by_score(["a.py", "b.py", "c.py"], got) == ["a.py", "b.py", "c.py"]


def test_a_state_a_stopped_build_left_unfinished_lends_no_vectors(bench: ModuleType, tmp_path: Path) -> None:
    """Its vectors are saved again, all of them, when it is built again: counting them as saved
    would leave them out of that save, and lose them."""
    import json

    import numpy as np

    for name, finished in (("done", True), ("stopped", False)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "vector_keys.json").write_text(json.dumps([f"key-{name}"]))
        np.save(folder / "vectors.npy", np.ones((1, 4), np.float32))
        if finished:
            (folder / "meta.json").write_text("{}")
    states = bench.States(tmp_path)
    assert states.missing_vectors(["key-done", "key-stopped"]) == ["key-stopped"]


def test_a_lexical_build_saves_chunks_without_vectors_and_answers_files_from_them(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--lexical` states (a proxy built in minutes): the index is brought to each commit with its
    vector phase left pending, the state holds no vectors, and scoring answers files from it."""
    import subprocess

    clone = tmp_path / "repo"
    (clone / "pkg").mkdir(parents=True)

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True, text=True)
        return out.stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (clone / "pkg" / "tokens.py").write_text("def verify_token(token):\n    return token.signature_ok()\n")
    (clone / "pkg" / "colors.py").write_text("def paint(canvas):\n    return canvas.fill('red')\n")
    git("add", ".")
    git("commit", "-qm", "first")
    first = git("rev-parse", "HEAD")
    (clone / "pkg" / "tokens.py").write_text("def verify_token(token, leeway=0):\n    return token.signature_ok()\n")
    git("commit", "-qam", "second")
    second = git("rev-parse", "HEAD")
    insts = [
        bench.Instance("r-1", "o/r", first, "2020", "verify_token rejects a good token", ("pkg/tokens.py",)),
        bench.Instance("r-2", "o/r", second, "2021", "paint(canvas) fills the wrong color", ("pkg/colors.py",)),
    ]
    # What the runner would set itself (the cache, no user config), set here so the test restores it.
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "no-user-config.yaml").touch()
    monkeypatch.setenv("LGREP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LGREP_CONFIG", str(tmp_path / "cache" / "no-user-config.yaml"))
    runner = bench.LgrepRunner(tmp_path / "cache")
    states = bench.States(tmp_path / "cache" / "states")
    built = bench.build_repo("o/r", clone, insts, runner, states, label="r", vectors=False)
    assert [row["vectors_embedded"] for row in built["instances"]] == [0, 0]
    assert [states.meta(i.instance_id)["vectors"] for i in insts] == [False, False]
    corpus = states.corpus("r-2")
    assert corpus.matrix_keys == [] and len(corpus) > 0
    rows, _timing = bench.score_repo("o/r", clone, insts, states, ["files"], None, 100, floor=False)
    assert [row["embed_ms"] for row in rows] == [None, None]  # nothing embedded for a lexical state
    assert [row["lgrep"]["files"]["top"][0] for row in rows] == ["pkg/tokens.py", "pkg/colors.py"]
