import pytest
from lgrep_core.domain.text import analyze, identifier_parts, identifier_terms, path_terms, stem


@pytest.mark.parametrize(
    ("words", "root"),
    [
        (["parse", "parser", "parsing", "parsed", "parses"], "pars"),
        (["handle", "handler", "handlers", "handling"], "handl"),
        (["validate", "validation", "validator", "validated"], "valid"),
        (["query", "queries"], "queri"),
        (["serialize", "serializer", "serialization"], "serializ"),
        (["user", "users"], "user"),
        (["key", "keys"], "key"),
    ],
)
def test_stem_conflates_the_forms_code_uses(words: list[str], root: str) -> None:
    assert {stem(w) for w in words} == {root}


@pytest.mark.parametrize("word", ["class", "status", "bus", "analysis", "is", "this", "address"])
def test_stem_leaves_words_that_only_look_inflected(word: str) -> None:
    assert stem(word) in {word, word.rstrip("s")} and len(stem(word)) >= 2
    assert stem("class") == "class" and stem("status") == "status"


def test_identifier_parts_split_case_snake_digits() -> None:
    assert identifier_parts("parseHTTPResponse2") == ["parse", "http", "response", "2"]
    assert identifier_parts("config_parser") == ["config", "parser"]
    assert identifier_parts("XMLParser") == ["xml", "parser"]


def test_compound_identifiers_keep_their_whole_form() -> None:
    assert identifier_terms("getUserById") == ("get", "user", "by", "id", "getuserbyid")
    assert identifier_terms("user") == ("user",)


def test_one_analyzer_meets_all_spellings() -> None:
    spellings = ["parse config", "parseConfig", "parse_config", "ConfigParser", "config.parse"]
    term_sets = [set(analyze(s)) for s in spellings]
    assert all({"pars", "config"} <= terms for terms in term_sets)


def test_path_terms_drop_the_extension() -> None:
    assert path_terms("src/auth/jwt_verifier.py") == ["src", "auth", "jwt", "verifi", "jwt_verifier"]
