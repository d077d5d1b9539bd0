"""The path-penalty signal: tests, docs and their like rank below the code they are about, unless the
query asks for them or the channels agree on them."""

from __future__ import annotations

import pytest
from lgrep_core.domain.models import SearchRequest, SearchType
from lgrep_search.fusion import Candidate
from lgrep_search.query import parse_query
from lgrep_search.searcher import Searcher
from lgrep_search.signals.penalty import DOCS_PENALTY, PATH_RULES, apply_path_penalties

SOURCE = {"path": "src/auth.py", "content": "def verify_token(token):\n    return token.signed\n"}
TEST = {
    "path": "tests/test_auth.py",
    "content": "def test_verify_token():\n    token = make_token()\n    assert verify_token(token)\n",
}
GUIDE = {"path": "docs/auth.md", "content": "Verify a token with verify_token.\n", "content_type": "docs"}
TEST_FACTOR = next(rule.factor for rule in PATH_RULES if rule.name == "test")


def _two(corpus, first: str, second: str, **first_ranks: int) -> dict[int, Candidate]:
    a, b = corpus.paths.index(first), corpus.paths.index(second)
    return {
        a: Candidate(fused=1 / 61, score=1 / 61, ranks=first_ranks or {"bm25": 0}),
        b: Candidate(fused=1 / 62, score=1 / 62, ranks={"bm25": 1}),
    }


def test_a_test_file_ranks_below_the_code_it_tests(make_corpus) -> None:
    corpus = make_corpus(SOURCE, TEST)
    cands = _two(corpus, "tests/test_auth.py", "src/auth.py")
    apply_path_penalties(corpus, cands, parse_query("verify token"))
    test, source = cands[corpus.paths.index("tests/test_auth.py")], cands[corpus.paths.index("src/auth.py")]
    assert test.score == 1 / 61 * TEST_FACTOR < source.score == 1 / 62
    assert test.why == [f"test file ×{TEST_FACTOR:g}"] and source.signals == {}


def test_unless_the_query_asks_for_tests(make_corpus) -> None:
    corpus = make_corpus(SOURCE, TEST)
    cands = _two(corpus, "tests/test_auth.py", "src/auth.py")
    apply_path_penalties(corpus, cands, parse_query("verify token tests"))
    assert cands[corpus.paths.index("tests/test_auth.py")].score == 1 / 61


def test_unless_two_channels_rank_it_first(make_corpus) -> None:
    corpus = make_corpus(SOURCE, TEST)
    cands = _two(corpus, "tests/test_auth.py", "src/auth.py", bm25=0, vector=0)
    apply_path_penalties(corpus, cands, parse_query("verify token"))
    test = cands[corpus.paths.index("tests/test_auth.py")]
    assert test.score == 1 / 61 and test.why == ["test file, not penalised: first in 2+ channels"]


def test_docs_rank_below_code_unless_asked_for(make_corpus) -> None:
    corpus = make_corpus(SOURCE, GUIDE)
    cands = _two(corpus, "docs/auth.md", "src/auth.py")
    apply_path_penalties(corpus, cands, parse_query("verify token"))
    assert cands[corpus.paths.index("docs/auth.md")].score == 1 / 61 * DOCS_PENALTY
    cands = _two(corpus, "docs/auth.md", "src/auth.py")
    apply_path_penalties(corpus, cands, parse_query("verify token guide"))
    assert cands[corpus.paths.index("docs/auth.md")].score == 1 / 61


def test_through_the_searcher_the_signal_decides_the_order(make_corpus) -> None:
    corpus = make_corpus(SOURCE, TEST)
    request = SearchRequest("verify token", search_type=SearchType.BM25)
    off = Searcher(None, None, disable=frozenset({"penalty"}), corpus=corpus).search(request).results
    on = Searcher(None, None, corpus=corpus).search(request).results
    assert off[0].path == "tests/test_auth.py"  # it says "token" more often
    assert on[0].path == "src/auth.py"


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("src/__mocks__/api.js", "test"),
        ("src/__fixtures__/user.json", "test"),
        ("e2e/login.spec.ts", "test"),
        ("src/test/java/com/acme/ParserTest.java", "test"),
        ("pkg/parser_test.go", "test"),
        ("bench/parse.c", "example"),
        ("src/jmh/java/com/acme/ParserBench.java", "example"),
        ("src/pip/_vendor/requests/api.py", "vendored"),
        ("lib/vendored/six.py", "vendored"),
        ("3rdparty/zlib/inflate.c", "vendored"),
        ("third-party/fmt/format.h", "vendored"),
        ("Pods/Alamofire/Source/Session.swift", "vendored"),
    ],
)
def test_each_ecosystems_tests_examples_and_vendored_copies(path: str, rule: str) -> None:
    assert [r.name for r in PATH_RULES if r.pattern.search(path)] == [rule]


@pytest.mark.parametrize("path", ["src/parser.py", "lib/bench_utils.py", "src/vendors.py", "app/e2e_config.py"])
def test_source_files_take_no_path_penalty(path: str) -> None:
    assert [r.name for r in PATH_RULES if r.pattern.search(path)] == []
