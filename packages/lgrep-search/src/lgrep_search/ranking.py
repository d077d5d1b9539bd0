"""Code-aware ranking: what turns fused retrieval candidates into the answer an agent wants.

Every knob is a named constant with the reason for it and what it measured on semble's benchmark
(NDCG@10; "62" = all obtainable repositories, "subset" = the 19-repository one; the full tables are
in docs/benchmarks.md, from `tools/bench_search.py --ablate`). Signal off → Δ on 62: definition
−0.014, path_match −0.022, file_coherence −0.019, penalty −0.011, diversify −0.028.
Boosts are additive, in units of the best fused score of the query, so they mean the same whatever the
channel mix; penalties are multiplicative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

import re2
from lgrep_core.text import QUERY_STOPWORDS, identifier_parts, stem

__all__ = [
    "QueryKind",
    "channel_weights",
    "classify_query",
    "definition_pattern",
    "embedded_identifiers",
    "path_penalty",
    "path_words",
]


class QueryKind(StrEnum):
    SYMBOL = "symbol"  # a bare or qualified identifier: `HandlerStack`, `Sinatra::Base`, `parse_args`
    NATURAL = "natural"  # words: "how are routes matched"


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


# Reciprocal-rank-fusion weights per query kind. A name is found by matching it: symbol queries lean
# on BM25 alone and skip the encoder (vector weight 0) unless neither lexical channel finds anything;
# sentences weigh BM25 and the embedding equally. The fuzzy channel stays light for both: a heavier
# fuzzy weight on symbol queries (1.0) let near-miss names crowd out the exact definition (all 62
# repositories: 0.8772 vs 0.8784, symbol 0.960 vs 0.970); adding the vector back (0.3) cost 0.001.
SYMBOL_WEIGHTS = {"bm25": 1.0, "fuzzy": 0.3, "vector": 0.0}
NATURAL_WEIGHTS = {"bm25": 1.0, "fuzzy": 0.3, "vector": 1.0}


def channel_weights(kind: QueryKind, bm25_weight: float | None) -> dict[str, float]:
    weights = dict(SYMBOL_WEIGHTS if kind is QueryKind.SYMBOL else NATURAL_WEIGHTS)
    if bm25_weight is not None:
        weights["bm25"] = bm25_weight
    return weights


# ------------------------------------------------------------------------------------ definitions

# Keywords that introduce a definition, across the indexed languages. Case-sensitive: `Class` and
# `Module` in prose or method calls are not definitions.
_DEF_KEYWORDS = (
    "abstract class|data class|sealed class|case class|enum class|class|struct|interface|trait|enum|union"
    "|protocol|extension|record|object|module|defmodule|defprotocol|defimpl|namespace|package|typedef|type"
    "|typealias|newtype|data|def|defp|defmacro|async def|fn|pub fn|func|function|fun|sub|proc|let|const|var"
    "|val|macro_rules!|local function"
)


# Python's `\s` and `\w` (Unicode) in re2's syntax, whose own are ASCII-only.
_SPACE = r"\t\n\x{0b}\f\r\x{1c}-\x{1f}\x{85}\p{Z}"
_WORD = r"\p{L}\p{N}_"
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.never_capture = True
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=512)
def definition_pattern(name: str) -> re2._Regexp:
    """A line that defines `name`: a definition keyword, optional qualifiers, then the name.

    Matched with re2 against indexed text, which a repository controls: with Python's re, a chunk
    holding `def` and a long run of spaces took seconds per query (cubic backtracking). Returns a
    compiled re2 regex (`.search(text)`)."""
    qualifiers = r"(?:[A-Za-z_][A-Za-z0-9_]*(?:\.|::|:))*"
    escaped = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else f"\\x{{{ord(ch):x}}}" for ch in name)
    return re2.compile(
        rf"(?m)(?:^|[{_SPACE}(])(?:{_DEF_KEYWORDS})[{_SPACE}]+(?:[{_WORD}\[\]<>*&:., ]+[{_SPACE}]+)?"
        rf"{qualifiers}{escaped}(?:[^A-Za-z0-9_]|\z)",
        _RE2_OPTIONS,
    )


# A chunk that defines a queried name gains this many best-scores: the definition is what someone who
# types a name wants, ahead of every place that merely uses it (off: symbol 0.970 → 0.891 on 62;
# 1.5 / 3 / 5 → 0.8667 / 0.8676 / 0.8716 on the subset, within noise of each other).
DEFINITION_BOOST = 3.0
# ...and half that for a name inside a sentence, which may be incidental to the question.
EMBEDDED_DEFINITION_SCALE = 0.5
# A symbol-table match without a definition line of exactly that name (a Java constructor, a Rust
# `impl` block, `session()` for `Session`) is weaker evidence than `class Session`.
DEFINITION_WEAK_SCALE = 0.5  # 1.0 → 0.5: 0.8738 → 0.8772 on 62
# A definition in a file named after the symbol (Logger in Logger.php) is the canonical one (with the
# scan of files named after the symbol: subset 0.8525 → 0.8637, symbol 0.911 → 0.964).
DEFINITION_FILE_MATCH_SCALE = 1.5


# ------------------------------------------------------------------------------ path-word matching

# Added (times the share of query words the file's name and folder match) for sentence queries: the
# benchmark's targets and an agent's next `Read` are files, and files are named after what they do
# (0.5 / 1.0 / 2.0 → 0.8630 / 0.8676 / 0.8578 on the subset).
PATH_MATCH_BOOST = 1.0
PATH_MATCH_MIN_SHARE = 0.1
PATH_PREFIX_MIN = 3  # "depend" matches "dependencies"


def path_words(path: str) -> frozenset[str]:
    """Stemmed words of a file's name and its folder's name: `src/auth/jwt_verifier.py` ->
    {auth, jwt, verifi, jwt_verifier}."""
    parts = path.split("/")
    name = parts[-1].split(".", 1)[0] if not parts[-1].startswith(".") else parts[-1]
    words: set[str] = set()
    for piece in ([parts[-2]] if len(parts) > 1 else []) + [name]:
        for ident in re.findall(r"[A-Za-z][A-Za-z0-9]*", piece):
            idp = identifier_parts(ident)
            words.update(stem(p) for p in idp)
            if len(idp) > 1:
                words.add(ident.lower())
    return frozenset(words)


def query_keywords(query: str) -> frozenset[str]:
    words: set[str] = set()
    for ident in re.findall(r"[A-Za-z][A-Za-z0-9]*", query):
        if ident.lower() in QUERY_STOPWORDS:
            continue
        for p in identifier_parts(ident):
            if len(p) > 2 and p not in QUERY_STOPWORDS:
                words.add(stem(p))
    return frozenset(words)


# --------------------------------------------------------------------------------- file coherence

# Each file's best chunk gains this share of the best score, scaled by the file's summed candidate
# score relative to the strongest file: several matching chunks are evidence the file is the topic
# (0 / 0.2 / 0.4 → 0.8446 / 0.8525 / 0.8569 on the subset).
FILE_COHERENCE_BOOST = 0.4
# Only the strongest candidates count as evidence; otherwise a file with many weak chunks wins on volume
# (all candidates: subset 0.8460; 10 / 20 / 30: 0.8508 / 0.8525 / 0.8522).
FILE_COHERENCE_TOP = 20


# -------------------------------------------------------------------------------------- penalties


@dataclass(frozen=True, slots=True)
class PathRule:
    name: str
    pattern: re.Pattern[str]
    factor: float
    unless: re.Pattern[str]  # query words that ask for exactly these files


_TEST_FILE = re.compile(
    r"(?:^|/)(?:test_[^/]*|[^/]*_test|[^/]*_spec|[^/]*\.(?:test|spec)|[^/]*Tests?|[^/]*Spec|[^/]*Suite|"
    r"test_helpers?[^/]*)\.[A-Za-z0-9]+$"
)
_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|__tests__|spec|specs|testing|testdata|test-fixtures|fixtures)/")
_ASKS_TESTS = re.compile(r"\b(?:tests?|testing|spec|specs|fixtures?|mocks?)\b", re.IGNORECASE)

# All path penalties together: off → on 0.8685 → 0.8793 on 62 (factors taken from semble's stack, not
# tuned here).
PATH_RULES = (
    # Tests and fixtures mention every name they exercise; the code under test is the answer.
    PathRule(
        "test",
        re.compile(f"{_TEST_FILE.pattern}|{_TEST_DIR.pattern}"),
        0.3,
        _ASKS_TESTS,
    ),
    # Examples and benchmarks restate the API rather than implement it.
    PathRule(
        "example",
        re.compile(r"(?:^|/)(?:_?examples?|samples?|demos?|benchmarks?|benches|docs?_src)/"),
        0.3,
        re.compile(r"\b(?:examples?|samples?|demos?|bench(?:mark)?s?)\b", re.IGNORECASE),
    ),
    # Vendored and amalgamated copies duplicate the real source (single_include/ in nlohmann-json).
    PathRule(
        "vendored",
        re.compile(r"(?:^|/)(?:vendor|third_party|thirdparty|node_modules|external|single_include)/"),
        0.3,
        re.compile(r"\b(?:vendor(?:ed)?|third.party)\b", re.IGNORECASE),
    ),
    # Compatibility shims re-export the real implementation under an old name.
    PathRule(
        "compat",
        re.compile(r"(?:^|/)(?:compat|_compat|legacy)/"),
        0.3,
        re.compile(r"\b(?:compat(?:ibility)?|legacy)\b", re.IGNORECASE),
    ),
    # Generated code is read by machines.
    PathRule(
        "generated",
        re.compile(
            r"(?:\.pb\.go|_pb2(?:_grpc)?\.pyi?|\.generated\.[A-Za-z]+|\.g\.dart|\.min\.js|_generated\.[A-Za-z]+)$"
        ),
        0.5,
        re.compile(r"\bgenerated\b", re.IGNORECASE),
    ),
    # Re-export barrels and package metadata name everything and define little.
    PathRule(
        "reexport",
        re.compile(r"(?:^|/)(?:__init__\.py|package-info\.java|index\.d\.ts)$"),
        0.7,
        re.compile(r"(?!)"),
    ),
    # Declaration stubs describe types implemented elsewhere.
    PathRule("declaration", re.compile(r"\.d\.ts$"), 0.7, re.compile(r"\b(?:types?|declarations?|d\.ts)\b", re.I)),
)

# ...except a chunk that at least this many channels rank first: when BM25 and the embedding agree
# that the deploy guide answers "database migrations on startup", a penalty should not overrule them
# (off → 2: subset 0.8650 → 0.8720).
PENALTY_EXEMPT_FIRST_IN = 2
# Prose about the code ranks below the code unless the query asks for documentation
# (1.0 / 0.7 / 0.5 → 0.8582 / 0.8646 / 0.8650 on the subset).
DOCS_PENALTY = 0.5
ASKS_DOCS = re.compile(r"\b(?:docs?|documentation|readme|guide|tutorial|changelog|manual)\b", re.IGNORECASE)


@lru_cache(maxsize=65536)
def _path_rules(path: str) -> tuple[PathRule, ...]:
    return tuple(rule for rule in PATH_RULES if rule.pattern.search(path))


def path_penalty(path: str, is_docs: bool, query: str) -> tuple[float, list[str]]:
    """The multiplicative penalty for a file and the names of the rules that applied."""
    factor = 1.0
    applied: list[str] = []
    for rule in _path_rules(path):
        if not rule.unless.search(query):
            factor *= rule.factor
            applied.append(rule.name)
    if is_docs and not ASKS_DOCS.search(query):
        factor *= DOCS_PENALTY
        applied.append("docs")
    return factor, applied


# -------------------------------------------------------------------------------------- selection

# At most this many chunks of one file in the results: past that, more of the same file crowds out
# other files that could be the answer (1 / 2 / 3 → 0.8665 / 0.8652 / 0.8676 on the subset).
MAX_CHUNKS_PER_FILE = 3
# Each further chunk from a file already in the results keeps this share of its score
# (0.1 / 0.3 / 0.5 → 0.8674 / 0.8680 / 0.8676 on the subset: flat; 0.5 keeps more context per file).
FILE_SATURATION_DECAY = 0.5
