"""Code-aware text analysis shared by the indexer (what it stores) and the searcher (what it asks).

One analyzer serves documents and queries alike, so `parse config`, `parseConfig`, `parse_config` and
`ConfigParser` all meet on the same terms: identifiers are split on camelCase, snake_case, digits and
dots, lowercased and stemmed; a compound identifier also keeps its whole lowercased form, so an exact
identifier in a query matches more strongly than its pieces.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

__all__ = [
    "QUERY_STOPWORDS",
    "analyze",
    "clear_term_caches",
    "decode_text",
    "identifier_parts",
    "identifier_terms",
    "path_terms",
    "stem",
]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
# camelCase / PascalCase / acronym / digit boundaries: parseHTTPResponse2 -> parse HTTP Response 2
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Words that carry no meaning in a search query ("how does X work"). Only queries drop them: in code
# `is`, `for` and `in` are keywords and BM25's idf already makes them nearly free.
QUERY_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "by",
        "can",
        "could",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)

# Suffixes a light English stemmer strips (longest first), with what replaces them. Chosen for
# identifiers, where one root appears as verb, noun and agent: parse/parser/parsing/parsed,
# handle/handler, route/router/routing, validate/validation/validator, serialize/serialization. A full
# Porter stemmer keeps `parser` apart from `parse`, the one conflation code search needs most.
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("ifications", "ifi"),
    ("ification", "ifi"),
    ("izations", "iz"),
    ("ization", "iz"),
    ("isations", "is"),
    ("isation", "is"),
    ("ations", ""),
    ("ation", ""),
    ("ators", ""),
    ("ator", ""),
    ("ating", ""),
    ("ated", ""),
    ("ates", ""),
    ("ate", ""),
    ("ments", ""),
    ("ment", ""),
    ("ness", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "i"),
    ("ers", ""),
    ("ors", ""),
    ("ed", ""),
    ("er", ""),
    ("or", ""),
    ("es", ""),
    ("s", ""),
)
_MIN_STEM = 3
# Entries in each term cache. Code repeats a few thousand words most of the time, so a small cache
# loads a snapshot as fast as a large one (4.7 s for 41.6k chunks with 2k to 200k entries; 11.9 s with
# none), while a large one, filled during a load and emptied after it, leaves its freed entries as
# holes among the snapshot's own small objects: 200k entries kept ~22 MB more of a 41.6k-chunk load
# resident (docs/benchmarks.md, "Memory ceilings", second part).
_TERM_CACHE = 4096
_VOWELS = frozenset("aeiouy")
_KEEP_S_AFTER = frozenset("sui")  # class, status, analysis: a final s that is not a plural


@lru_cache(maxsize=_TERM_CACHE)
def stem(word: str) -> str:
    """`parsing` -> `pars`, `handlers` -> `handl`, `validation` -> `valid`, `queries` -> `queri`.

    Lowercase ASCII words only; a word of four characters loses only a plural s, and a stem is never
    shorter than three characters or without a vowel.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if len(word) == 4:  # keys, maps, args: only a plural s comes off a word this short
        return word[:-1] if word[-1] == "s" and word[-2] not in _KEEP_S_AFTER | {"e"} else word
    base = word
    for suffix, repl in _SUFFIXES:
        if not word.endswith(suffix):
            continue
        cut = word[: -len(suffix)]
        if suffix == "s" and cut[-1] in _KEEP_S_AFTER:
            break
        cut += repl
        if len(cut) >= _MIN_STEM and _VOWELS.intersection(cut):
            base = cut
            break
    if base.endswith("e") and len(base) > _MIN_STEM:
        base = base[:-1]
    elif base.endswith("y") and len(base) > _MIN_STEM:
        base = base[:-1] + "i"  # query/queries, retry/retries, entry/entries meet on queri, retri, entri
    # mapped -> mapp -> map, running -> runn -> run (but keep -ll, -ss, -zz: call, class, buzz)
    if base != word and len(base) > _MIN_STEM and base[-1] == base[-2] and base[-1] not in "lsz" + "aeiou":
        base = base[:-1]
    return base


def identifier_parts(identifier: str) -> list[str]:
    """`parseHTTPResponse` -> ['parse', 'http', 'response']; `config_parser` -> ['config', 'parser']."""
    parts: list[str] = []
    for piece in identifier.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return parts


@lru_cache(maxsize=_TERM_CACHE)
def identifier_terms(identifier: str) -> tuple[str, ...]:
    """The index terms of one identifier: its stemmed parts, plus the whole lowercased identifier when
    it is compound (`getUserById` -> get, user, by, id, getuserbyid)."""
    parts = identifier_parts(identifier)
    terms = [stem(p) for p in parts]
    if len(parts) > 1:
        terms.append(identifier.lower())
    return tuple(terms)


def clear_term_caches() -> None:
    """Empty the caches of `stem` and `identifier_terms`. They pay within one pass over a corpus
    and little across passes: a process that keeps running drops them after each load
    (lgrep_search.snapshot)."""
    stem.cache_clear()
    identifier_terms.cache_clear()


def analyze(text: str) -> list[str]:
    """All index terms of a text, in order (repeats kept: BM25 counts them)."""
    out: list[str] = []
    for ident in _IDENT.findall(text):
        out.extend(identifier_terms(ident))
    return out


def path_terms(path: str) -> list[str]:
    """Terms of a file path, extension dropped: `src/auth/jwt_verifier.py` -> src, auth, jwt, verifi."""
    head, _, name = path.rpartition("/")
    stem_name = name.split(".", 1)[0] if not name.startswith(".") else name
    return analyze(f"{head} {stem_name}")


_UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_NON_ASCII_DECODED = re.compile("[^\x00-\x7f\ufffd]")


def decode_text(data: bytes) -> str:
    """A source file's bytes as text, the one way the indexer and file reads both use (so line
    numbers agree): a UTF-32/16 BOM decides; else UTF-8 (a BOM dropped), keeping a few bad bytes as
    U+FFFD when the rest is non-ASCII UTF-8; else Windows-1252, or Latin-1 as the last resort."""
    for bom, encoding in (*((b, "utf-32") for b in _UTF32_BOMS), *((b, "utf-16") for b in _UTF16_BOMS)):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    if _NON_ASCII_DECODED.search(text):
        return text  # mostly UTF-8 with a few bad bytes
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")
