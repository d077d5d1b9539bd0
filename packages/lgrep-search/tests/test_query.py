"""The query is parsed once, into everything the channels and signals read."""

from lgrep_search.query import QueryKind, parse_query


def test_a_symbol_query_looks_for_its_definition() -> None:
    q = parse_query("Sinatra::Base")
    assert q.kind is QueryKind.SYMBOL
    assert q.identifiers == ("Sinatra::Base", "Base")
    assert q.definition_names == q.identifiers
    assert q.embedded == ()


def test_a_symbol_too_short_for_an_identifier_is_still_looked_up_whole() -> None:
    q = parse_query(" Io ")
    assert q.kind is QueryKind.SYMBOL and q.identifiers == ()
    assert q.definition_names == ("Io",)


def test_a_sentence_looks_for_the_names_written_inside_it() -> None:
    q = parse_query("how ZodType parses input with parse_args")
    assert q.kind is QueryKind.NATURAL
    assert q.embedded == ("ZodType", "parse_args")
    assert q.definition_names == q.embedded
    assert parse_query("how are routes matched").definition_names == ()


def test_terms_identifiers_and_keywords_come_from_one_parse() -> None:
    q = parse_query("how does the router match paths")
    assert q.text == "how does the router match paths"
    assert q.terms == ("rout", "match", "path")  # BM25 terms: stemmed, stopwords dropped
    assert "router" in q.identifiers and "how" not in q.identifiers
    assert q.keywords == frozenset({"rout", "match", "path"})  # for file and folder names


def test_the_kinds_of_file_a_query_asks_for() -> None:
    assert parse_query("auth tests").asks_for == {"test"}
    assert parse_query("session").asks_for == frozenset()
    assert parse_query("README guide for the vendored examples").asks_for == {"docs", "vendored", "example"}
    assert parse_query("generated protobuf types").asks_for == {"generated", "declaration"}
