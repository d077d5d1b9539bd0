"""The definition signal: the chunk that defines a queried name ranks above the chunks that use it."""

from __future__ import annotations

from lgrep_core.domain.models import SearchRequest, SearchType
from lgrep_search.corpus import Corpus
from lgrep_search.fusion import Candidate
from lgrep_search.query import parse_query
from lgrep_search.searcher import Searcher
from lgrep_search.signals.definition import (
    DEFINITION_BOOST,
    DEFINITION_FILE_MATCH_SCALE,
    DEFINITION_WEAK_SCALE,
    EMBEDDED_DEFINITION_SCALE,
    boost_definitions,
)

DEFINES = {
    "path": "src/routing.py",
    "symbol": "Router",
    "kind": "class",
    "content": "class Router:\n    def add(self, path, handler):\n        self.routes.append((path, handler))\n",
}
USES = {"path": "src/app.py", "symbol": "main", "content": "def main():\n    Router(Router(Router(Router())))\n"}


def _at(corpus: Corpus, path: str) -> int:
    return corpus.paths.index(path)


def _cand(fused: float) -> Candidate:
    return Candidate(fused=fused, score=fused)


def test_a_definition_outranks_a_mention(make_corpus) -> None:
    corpus = make_corpus(DEFINES, USES)
    d, u = _at(corpus, "src/routing.py"), _at(corpus, "src/app.py")
    cands = {u: _cand(1 / 61), d: _cand(1 / 62)}  # the mention ahead, as BM25 puts it
    boost_definitions(corpus, cands, parse_query("Router"), 1 / 61, None)
    assert cands[d].score == 1 / 62 + DEFINITION_BOOST / 61
    assert cands[u].score == 1 / 61 and "definition" not in cands[u].signals
    assert cands[d].why == ["defines Router"]


def test_through_the_searcher_the_signal_decides_the_order(make_corpus) -> None:
    corpus = make_corpus(DEFINES, USES)
    request = SearchRequest("Router", search_type=SearchType.BM25)
    off = Searcher(None, None, disable=frozenset({"definition"}), corpus=corpus).search(request).results
    on = Searcher(None, None, corpus=corpus).search(request).results
    assert off[0].path == "src/app.py"  # the mention says "Router" most often
    assert on[0].path == "src/routing.py"


def test_a_definition_no_channel_found_joins_the_candidates(make_corpus) -> None:
    corpus = make_corpus(DEFINES, USES)
    d = _at(corpus, "src/routing.py")
    cands: dict[int, Candidate] = {}
    boost_definitions(corpus, cands, parse_query("Router"), 0.5, None)
    assert list(cands) == [d] and cands[d].score == DEFINITION_BOOST * 0.5


def test_a_name_in_a_sentence_counts_less(make_corpus) -> None:
    corpus = make_corpus(DEFINES, USES)
    d = _at(corpus, "src/routing.py")
    cands = {d: _cand(0.0)}
    boost_definitions(corpus, cands, parse_query("where is the Router_table kept"), 1.0, None)
    assert "definition" not in cands[d].signals  # not a name it defines
    boost_definitions(corpus, cands, parse_query("how does myRouter differ from Router"), 1.0, None)
    assert "definition" not in cands[d].signals  # "Router" alone is a word, not an embedded name
    corpus = make_corpus({**DEFINES, "symbol": "RouteTable", "content": "class RouteTable:\n    pass\n"})
    cands = {0: _cand(0.0)}
    boost_definitions(corpus, cands, parse_query("how RouteTable stores routes"), 1.0, None)
    assert cands[0].score == DEFINITION_BOOST * EMBEDDED_DEFINITION_SCALE


def test_a_symbol_without_a_definition_line_is_weaker(make_corpus) -> None:
    rust_impl = {"path": "src/r.rs", "symbol": "Router", "kind": "class", "content": "impl Router {\n}\n"}
    corpus = make_corpus(DEFINES, rust_impl)
    d, weak = _at(corpus, "src/routing.py"), _at(corpus, "src/r.rs")
    cands = {d: _cand(0.0), weak: _cand(0.0)}
    boost_definitions(corpus, cands, parse_query("Router"), 1.0, None)
    assert cands[weak].score == DEFINITION_BOOST * DEFINITION_WEAK_SCALE < cands[d].score
    assert cands[weak].why == ["named Router, like Router"]


def test_the_file_named_after_the_symbol_holds_the_canonical_definition(make_corpus) -> None:
    corpus = make_corpus(DEFINES, {**DEFINES, "path": "src/router.py"})
    other, named = _at(corpus, "src/routing.py"), _at(corpus, "src/router.py")
    cands = {other: _cand(0.0), named: _cand(0.0)}
    boost_definitions(corpus, cands, parse_query("Router"), 1.0, None)
    assert cands[named].score == DEFINITION_BOOST * DEFINITION_FILE_MATCH_SCALE
    assert cands[other].score == DEFINITION_BOOST


def test_anchors_and_filtered_out_chunks_are_not_definitions(make_corpus) -> None:
    anchor = {"path": "src/router.py", "symbol": "router", "kind": "anchor", "content": "class Router:\n"}
    corpus = make_corpus(DEFINES, anchor)
    d, a = _at(corpus, "src/routing.py"), _at(corpus, "src/router.py")
    cands: dict[int, Candidate] = {}
    mask = corpus.file_of != corpus.file_of[d]
    boost_definitions(corpus, cands, parse_query("Router"), 1.0, mask)
    assert cands == {}
    boost_definitions(corpus, cands, parse_query("Router"), 1.0, None)
    assert list(cands) == [d] and a not in cands
