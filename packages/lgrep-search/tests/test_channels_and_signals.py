"""Unit checks of the pieces `lgrep search` is built from; tests/e2e covers them through the CLI."""

import numpy as np
import pytest
from lgrep_core.domain.models import SearchType
from lgrep_core.domain.text import analyze, identifier_terms, path_terms
from lgrep_search.fusion import channel_weights
from lgrep_search.fuzzy import SymbolIndex, query_identifiers
from lgrep_search.lexical import FieldWeights, LexicalIndex, query_terms
from lgrep_search.pathfilter import path_matcher
from lgrep_search.query import QueryKind, classify_query, parse_query
from lgrep_search.retrieval import DENSE_TRUST, retrieve, top
from lgrep_search.signals.definition import definition_pattern
from lgrep_search.signals.penalty import path_penalty


def _index(docs: list[tuple[str, str, str]], weights: FieldWeights | None = None) -> LexicalIndex:
    return LexicalIndex(
        [analyze(c) for c, _, _ in docs],
        [list(identifier_terms(s)) if s else [] for _, s, _ in docs],
        [path_terms(p) for _, _, p in docs],
        weights or FieldWeights(),
    )


def test_bm25_prefers_rare_terms_and_the_symbol_field() -> None:
    idx = _index(
        [
            ("return the value", "", "a.py"),
            ("def load_config(path): return parse(path)", "load_config", "config.py"),
            ("config config config value", "", "b.py"),
        ]
    )
    scores = idx.scores(query_terms("load config"))
    assert int(np.argmax(scores)) == 1
    assert scores[0] == 0.0
    assert idx.idf("load") > idx.idf("config")


def test_bm25_path_field_counts_but_less_than_text() -> None:
    docs = [("verify the token signature", "", "x/misc.py"), ("nothing relevant here", "", "auth/verify.py")]
    scores = _index(docs).scores(query_terms("verify"))
    assert scores[0] > scores[1] > 0
    none = _index(docs, FieldWeights(path=0.0)).scores(query_terms("verify"))
    assert none[1] == 0.0


def test_bm25_mask_zeroes_excluded_chunks() -> None:
    idx = _index([("alpha beta", "", "a.py"), ("alpha", "", "b.py")])
    scores = idx.scores(["alpha"], mask=np.array([False, True]))
    assert scores[0] == 0.0 and scores[1] > 0


def test_coverage_is_the_share_of_distinct_query_terms_a_chunk_holds() -> None:
    idx = _index([("parse the config file", "", "a.py"), ("render html", "", "b.py")])
    terms = query_terms("parse config config colour")  # pars, config, config, colour
    assert idx.coverage(terms, 0) == pytest.approx(2 / 3)
    assert idx.coverage(terms, 1) == 0.0
    assert idx.coverage([], 0) == 0.0


@pytest.mark.parametrize(
    ("query", "trusted"),
    [
        ("parse the config file", False),  # the best chunk holds the question's words: as before
        ("read settings from disk at startup", True),  # other words than the code's: lean on vectors
        ("x" * 120 + "\nread settings\nfrom disk\n", False),  # a task question keeps its own weighing
    ],
)
def test_the_dense_channel_counts_more_when_the_words_miss_the_code(make_corpus, query: str, trusted: bool) -> None:
    corpus = make_corpus(
        {"path": "cfg.py", "content": "def parse_config_file(path):\n    return load(path)"},
        {"path": "html.py", "content": "def render(page):\n    return page"},
    )
    weights = channel_weights(QueryKind.NATURAL, None)
    found = retrieve(
        corpus, parse_query(query), search_type=SearchType.HYBRID, weights=weights, mask=None, embedder=None
    )
    assert found.weights["vector"] == (weights["vector"] * DENSE_TRUST if trusted else weights["vector"])
    assert found.weights["bm25"] == weights["bm25"]


def test_query_terms_drop_stopwords_unless_nothing_is_left() -> None:
    assert query_terms("how does the router match") == ["rout", "match"]
    assert query_terms("how") == ["how"]


def test_fuzzy_finds_typos_prefixes_and_exact_names() -> None:
    sym = SymbolIndex(["getUserById", "getUsers", "Router", "", "route"])
    best = {m.name: m.how for m in sym.match("getUsrById")}
    assert best["getuserbyid"] == "edit1"
    assert sym.match("getUserBy")[0].how == "prefix"
    assert (sym.match("router")[0].name, sym.match("router")[0].how) == ("router", "exact")
    assert sym.match("get") == []  # too short for anything but an exact name
    scores, best_match = sym.scores(["getUsrById"], 5)
    assert int(np.argmax(scores)) == 0 and best_match["getuserbyid"].how == "edit1"


def test_query_identifiers_split_qualified_names() -> None:
    assert query_identifiers("Sinatra::Base") == ["Sinatra::Base", "Base"]
    assert query_identifiers("how the router works") == ["router", "works"]


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("HandlerStack", QueryKind.SYMBOL),
        ("Sinatra::Base", QueryKind.SYMBOL),
        ("parse_args", QueryKind.SYMBOL),
        ("http.Client", QueryKind.SYMBOL),
        ("session", QueryKind.NATURAL),
        ("how are routes matched", QueryKind.NATURAL),
    ],
)
def test_query_kind(query: str, kind: QueryKind) -> None:
    assert classify_query(query) is kind


def test_channel_weights_lean_by_kind_and_take_an_override() -> None:
    sym, nat = channel_weights(QueryKind.SYMBOL, None), channel_weights(QueryKind.NATURAL, None)
    assert sym["vector"] == 0 < nat["vector"] and sym["bm25"] >= nat["bm25"]
    assert channel_weights(QueryKind.NATURAL, 0.25)["bm25"] == 0.25


@pytest.mark.parametrize(
    "line",
    [
        "class Router:",
        "pub struct Router {",
        "type Router struct {",
        "export class Router<T> {",
        "defmodule Plug.Router do",
    ],
)
def test_definition_pattern_matches_definitions(line: str) -> None:
    assert definition_pattern("Router").search(line)


@pytest.mark.parametrize("line", ["r = Router()", "import Router", "return new Router(x)", "class Routers:"])
def test_definition_pattern_ignores_uses(line: str) -> None:
    assert not definition_pattern("Router").search(line)


def test_path_penalties_and_their_exemptions() -> None:
    assert path_penalty("tests/test_auth.py", False, parse_query("auth"))[1] == ["test"]
    assert path_penalty("tests/test_auth.py", False, parse_query("auth tests"))[1] == []
    assert path_penalty("src/auth.py", True, parse_query("auth"))[1] == ["docs"]
    assert path_penalty("types/index.d.ts", False, parse_query("session"))[0] < 1
    assert path_penalty("src/auth.py", False, parse_query("auth")) == (1.0, [])
    assert path_penalty("themes/basic/static/jquery-3.5.1.js", False, parse_query("search"))[1] == ["vendored"]
    assert path_penalty("static/bootstrap-4.3.1.min.css", False, parse_query("grid"))[1] == ["vendored"]
    assert path_penalty("static/searchtools.js", False, parse_query("search")) == (1.0, [])
    assert path_penalty("api/v1.2/routes.js", False, parse_query("routes")) == (1.0, [])


@pytest.mark.parametrize(
    ("path", "glob", "ok"),
    [
        ("src/auth/jwt.py", "src/auth", True),
        ("src/authz/x.py", "src/auth", False),
        ("src/auth/jwt.py", "*.py", True),
        ("src/a/b/c.py", "src/**/*.py", True),
        ("src/c.py", "src/**/*.py", True),
        ("lib/c.py", "src/*.py", False),
        ("web/a.ts", "*.py", False),
    ],
)
def test_path_filter_globs(path: str, glob: str, ok: bool) -> None:
    assert path_matcher(glob)(path) is ok


def test_top_orders_best_first_and_skips_empty() -> None:
    idx, vals = top(np.array([0.0, 3.0, 1.0, 3.0], dtype=np.float32), 10, positive=True)
    assert idx.tolist() == [1, 3, 2] and vals.tolist() == [3.0, 3.0, 1.0]
