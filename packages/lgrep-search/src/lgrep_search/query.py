"""A query, parsed once: every later stage (channels, fusion weights, ranking signals) reads what it
needs from the `ParsedQuery`, never from the raw text again."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

import re2
from lgrep_core.domain.text import QUERY_STOPWORDS, identifier_parts, stem

from .fuzzy import query_identifiers
from .lexical import query_terms
from .question import QuestionParts, is_task_question, parse_question

__all__ = ["ASKS_FOR", "ParsedQuery", "QueryKind", "classify_query", "embedded_identifiers", "parse_query"]


class QueryKind(StrEnum):
    SYMBOL = "symbol"  # a bare or qualified identifier: `HandlerStack`, `Sinatra::Base`, `parse_args`
    NATURAL = "natural"  # words: "how are routes matched"


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str  # as typed (the encoder embeds it as is)
    kind: QueryKind
    terms: tuple[str, ...]  # BM25 terms (lexical.query_terms)
    identifiers: tuple[str, ...]  # identifier-like words for the fuzzy channel (fuzzy.query_identifiers)
    keywords: frozenset[str]  # stemmed words to find in file names and folders
    embedded: tuple[str, ...]  # names written inside a sentence ("how ZodType parses input")
    definition_names: tuple[str, ...]  # the names whose definitions the query asks for
    asks_for: frozenset[str]  # kinds of file the query names (ASKS_FOR keys): "test", "docs", ...
    # A task-length question (an issue, a report: question.py): its parts, and one BM25 weight per
    # term of `terms`. None for a short question, whose terms count once per repetition.
    parts: QuestionParts | None = None
    weights: tuple[float, ...] | None = None


def parse_query(text: str) -> ParsedQuery:
    if is_task_question(text):
        return _parse_task(text)
    kind = classify_query(text)
    identifiers = tuple(query_identifiers(text))
    embedded = tuple(embedded_identifiers(text))
    if kind is QueryKind.SYMBOL:
        definition_names = identifiers or (text.strip(),)
    else:
        definition_names = embedded
    return ParsedQuery(
        text=text,
        kind=kind,
        terms=tuple(query_terms(text)),
        identifiers=identifiers,
        keywords=query_keywords(text),
        embedded=embedded,
        definition_names=definition_names,
        asks_for=frozenset(name for name, pattern in ASKS_FOR.items() if pattern.search(text)),
    )


# ------------------------------------------------------------------------------- task questions

# A task question's term weights: each term counts by how often the question uses it, saturating
# (BM25's query-term saturation, k3), plus a bonus where the title or a name in the code, a
# traceback or a qualified name uses it: what the reporter put first or pasted is the evidence.
TASK_TERM_K3 = 1.2
TASK_TITLE_BONUS = 1.0
TASK_NAME_BONUS = 1.0
# Names of a task question whose definitions the chunk ranking boosts: those the title uses, then
# those it calls or a traceback runs, at most this many (files.py weighs every name's definitions).
TASK_DEFINITION_NAMES = 8


def _parse_task(text: str) -> ParsedQuery:
    parts = parse_question(text)
    counts: dict[str, int] = {}
    for term in query_terms(text):
        counts[term] = counts.get(term, 0) + 1
    title_terms = set(query_terms(parts.title))
    name_terms = {t for name in parts.identifiers for t in query_terms(name)}
    terms = tuple(counts)
    weights = tuple(
        n * (TASK_TERM_K3 + 1) / (TASK_TERM_K3 + n)
        + TASK_TITLE_BONUS * (t in title_terms)
        + TASK_NAME_BONUS * (t in name_terms)
        for t, n in counts.items()
    )
    names = tuple(dict.fromkeys((*parts.title_names, *parts.called)))[:TASK_DEFINITION_NAMES]
    return ParsedQuery(
        text=text,
        kind=QueryKind.NATURAL,
        terms=terms,
        identifiers=tuple(parts.identifiers),
        keywords=query_keywords(" ".join((parts.title, *names))),
        embedded=names,
        definition_names=names,
        asks_for=frozenset(name for name, pattern in ASKS_FOR.items() if pattern.search(parts.title)),
        parts=parts,
        weights=weights,
    )


# ---------------------------------------------------------------------------------------- query type

# One identifier, possibly qualified (`a.b`, `A::B`, `a->b`, `A\B`), that shows it is a name: it has
# an uppercase letter, an underscore or a separator. A lowercase single word ("session") is a topic,
# not a name, and is better served by the semantic channel.
# re2, not re: the query may be long, and Python's re takes quadratic time on "AAAA...A!" here.
_SYMBOL_QUERY = re2.compile(
    r"^(?:[A-Za-z_][A-Za-z0-9_]*(?:(?:::|\\|->|\.)[A-Za-z_][A-Za-z0-9_]*)+"
    r"|_[A-Za-z0-9_]*"
    r"|[A-Za-z][A-Za-z0-9]*[A-Z_][A-Za-z0-9_]*"
    r"|[A-Z][A-Za-z0-9]*)$"
)
# camelCase / PascalCase / snake_case names inside a sentence ("how ZodType parses input").
_EMBEDDED_IDENT = re.compile(
    r"\b(?:[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+"
    r"|[A-Z]{2,}[a-z][A-Za-z0-9]*)\b"
)


def classify_query(query: str) -> QueryKind:
    return QueryKind.SYMBOL if _SYMBOL_QUERY.match(query.strip()) else QueryKind.NATURAL


def embedded_identifiers(query: str) -> list[str]:
    return list(dict.fromkeys(_EMBEDDED_IDENT.findall(query)))


# ------------------------------------------------------------------------------------- path words


def query_keywords(query: str) -> frozenset[str]:
    """Stemmed query words, as `signals.path_match.path_words` stems a file's name and folder."""
    words: set[str] = set()
    for ident in re.findall(r"[A-Za-z][A-Za-z0-9]*", query):
        if ident.lower() in QUERY_STOPWORDS:
            continue
        for p in identifier_parts(ident):
            if len(p) > 2 and p not in QUERY_STOPWORDS:
                words.add(stem(p))
    return frozenset(words)


# ------------------------------------------------------------------------- kinds of file asked for

# Query words that ask for exactly the files a path penalty (signals/penalty.py, by the same names)
# would push down: "auth tests" wants the tests.
ASKS_FOR: dict[str, re.Pattern[str]] = {
    "test": re.compile(r"\b(?:tests?|testing|spec|specs|fixtures?|mocks?)\b", re.IGNORECASE),
    "example": re.compile(r"\b(?:examples?|samples?|demos?|bench(?:mark)?s?)\b", re.IGNORECASE),
    "vendored": re.compile(r"\b(?:vendor(?:ed)?|third.party)\b", re.IGNORECASE),
    "compat": re.compile(r"\b(?:compat(?:ibility)?|legacy)\b", re.IGNORECASE),
    "generated": re.compile(r"\bgenerated\b", re.IGNORECASE),
    "declaration": re.compile(r"\b(?:types?|declarations?|d\.ts)\b", re.I),
    "docs": re.compile(r"\b(?:docs?|documentation|readme|guide|tutorial|changelog|manual)\b", re.IGNORECASE),
}
