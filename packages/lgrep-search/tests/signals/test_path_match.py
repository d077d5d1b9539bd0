"""The path-match signal: for a sentence query, chunks whose file name and folder hold the query's
words rise."""

from __future__ import annotations

from lgrep_search.fusion import Candidate
from lgrep_search.query import parse_query
from lgrep_search.signals.path_match import PATH_MATCH_BOOST, boost_path_matches, path_words

CONTENT = "def check(value):\n    return value.ok\n"


def _cands(n: int) -> dict[int, Candidate]:
    return {i: Candidate(fused=1 / (61 + i), score=1 / (61 + i)) for i in range(n)}


def test_a_file_named_after_the_query_words_rises(make_corpus) -> None:
    corpus = make_corpus(
        {"path": "src/auth/token_verifier.py", "content": CONTENT},
        {"path": "src/misc/helpers.py", "content": CONTENT},
    )
    named, other = corpus.paths.index("src/auth/token_verifier.py"), corpus.paths.index("src/misc/helpers.py")
    cands = {other: Candidate(fused=1 / 61, score=1 / 61), named: Candidate(fused=1 / 62, score=1 / 62)}
    boost_path_matches(corpus, cands, parse_query("how is the auth token verified"), 1 / 61)
    assert cands[named].score > cands[other].score == 1 / 61
    # auth, token and verifi of the query's auth, token, verifi: the whole boost
    assert cands[named].signals["path_match"] == PATH_MATCH_BOOST / 61
    assert cands[named].why == ["path matches 100% of the query words"]


def test_the_boost_grows_with_the_share_of_words_matched(make_corpus) -> None:
    corpus = make_corpus(
        {"path": "auth/session.py", "content": CONTENT}, {"path": "auth/token_verifier.py", "content": CONTENT}
    )
    cands = _cands(2)
    boost_path_matches(corpus, cands, parse_query("how is the auth token verified"), 1.0)
    half, whole = cands[corpus.paths.index("auth/session.py")], cands[corpus.paths.index("auth/token_verifier.py")]
    assert half.signals["path_match"] == PATH_MATCH_BOOST / 3
    assert whole.signals["path_match"] == PATH_MATCH_BOOST


def test_prefixes_match_and_symbol_queries_are_left_alone(make_corpus) -> None:
    corpus = make_corpus({"path": "pkg/dependencies.go", "content": CONTENT})
    cands = _cands(1)
    boost_path_matches(corpus, cands, parse_query("resolve depend order"), 1.0)
    assert "path_match" in cands[0].signals  # "depend" ~ "dependencies"
    cands = _cands(1)
    boost_path_matches(corpus, cands, parse_query("Dependencies"), 1.0)
    assert cands[0].signals == {}


def test_path_words_are_the_stemmed_file_and_folder_names() -> None:
    assert path_words("src/auth/jwt_verifier.py") == {"auth", "jwt", "verifi"}
    assert path_words("src/auth/jwtVerifier.py") == {"auth", "jwt", "verifi", "jwtverifier"}
    assert path_words(".github/workflows/ci.yml") == {"workflow", "ci"}
