"""Regexes applied to text a repository or a user controls run in linear time (re2) and mean what
their Python `re` originals meant."""

from __future__ import annotations

import random
import re
import sys

import re2
from lgrep_search.query import QueryKind, classify_query
from lgrep_search.signals import definition
from lgrep_search.signals.definition import definition_pattern


def _python_definition_pattern(name: str) -> re.Pattern[str]:
    """The Python original of `definition_pattern`, as the reference."""
    qualifiers = r"(?:[A-Za-z_][A-Za-z0-9_]*(?:\.|::|:))*"
    return re.compile(
        rf"(?:^|[\s(])(?:{definition._DEF_KEYWORDS})\s+(?:[\w\[\]<>*&:., ]+\s+)?"
        rf"{qualifiers}{re.escape(name)}(?![A-Za-z0-9_])",
        re.MULTILINE,
    )


def test_word_and_space_classes_are_pythons() -> None:
    text = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    assert set(re2.findall(f"[{definition._SPACE}]", text)) == set(re.findall(r"\s", text))
    # re2's Unicode tables may be newer than Python's: a superset, never fewer word characters.
    assert set(re2.findall(f"[{definition._WORD}]", text)) >= set(re.findall(r"\w", text))


def test_definition_pattern_agrees_with_the_python_original() -> None:
    rng = random.Random(11)
    pieces = ["def", "class", "fn", "pub fn", "async def", " ", "  ", "\t", "\n", "(", "Router", "router", "Router2"]
    pieces += ["x.", "A::", "a:", "<T>", "[]", "*", "&", ",", "é", "_", "\u00a0", "\u3000", "= ", "#", "Rou"]
    spaces = [" ", "  ", "\t", "\n", "\u00a0", "\u3000", "\x0b", "\x1c"]
    middles = ["", "x", "a b", "<T>", "[]", "&", "*", "é", "a\tb", "A::", "x,"]
    positives = 0
    for name in ["Router", "a_b", "Ns::Item", "x.y"]:
        mine, reference = definition_pattern(name), _python_definition_pattern(name)
        for i in range(4000):
            if i % 2:
                text = "".join(rng.choice([*pieces, name]) for _ in range(rng.randint(1, 12)))
            else:  # near-definitions: keyword, spaces, an optional type, spaces, qualifiers, the name
                text = "".join(
                    [rng.choice(["", "(", "x", "\n", " "]), rng.choice(["def", "class", "pub fn", "fun"])]
                    + [rng.choice(spaces) for _ in range(rng.randint(0, 2))]
                    + [rng.choice(middles)]
                    + [rng.choice(spaces) for _ in range(rng.randint(0, 2))]
                    + [rng.choice(["", "a.", "A::", "x:", "1."]), name, rng.choice(["", "(", "x", "_", " ", "\n"])]
                )
            expected = reference.search(text) is not None
            assert (mine.search(text) is not None) is expected, (name, text)
            positives += expected
    assert positives > 1500


def test_definition_pattern_on_hostile_text() -> None:
    # Python's re needs about 7 s for this with 1,000 spaces, and the time grows with the cube.
    text = "def" + " " * 20_000 + "x\n" + "class " * 5_000 + "Router"
    assert definition_pattern("Router").search(text) is not None
    assert definition_pattern("Missing").search(text) is None


def test_symbol_query_classification_on_a_long_query() -> None:
    assert classify_query("A" * 200_000 + "!") is QueryKind.NATURAL  # quadratic with Python's re
    assert classify_query("HandlerStack") is QueryKind.SYMBOL
    assert classify_query("Sinatra::Base") is QueryKind.SYMBOL
    assert classify_query("session") is QueryKind.NATURAL


def test_definition_patterns_keep_a_small_automaton_and_still_find_definitions_past_it() -> None:
    """A cached pattern keeps the automaton re2 grew while scanning, up to its memory budget: 512 of
    them with the default budget held ~80 MB in a daemon after a day's questions (docs/benchmarks.md,
    issue 26 third pass). The cache and the budget stay small; a text that outgrows the budget is
    still searched to the end (re2 falls back to its other engines)."""
    assert definition_pattern.cache_info().maxsize == definition.DEFINITION_PATTERNS_CACHED <= 64
    assert definition._RE2_OPTIONS.max_mem <= 1024 * 1024
    rng = random.Random(5)
    words = ["def", "class", "fn", "x", "Router", "route", "(", ")", ":", "=", "é", "\t", "<T>", "a.b", "::"]
    noise = "\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(60_000))
    text = noise.replace("Router", "Rooter") + "\n    pub fn Router(x) {}\n"
    assert definition_pattern("Router").search(text) is not None
    assert (definition_pattern("Rooter").search(text) is not None) is (
        _python_definition_pattern("Rooter").search(text) is not None
    )
