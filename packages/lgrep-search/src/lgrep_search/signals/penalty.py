"""Path penalties: tests, examples, vendored and generated code, re-export barrels, declaration stubs
and docs mention what they are about without being it, so their chunks are scaled down, unless the
query asks for that kind of file or the channels agree that the chunk is the answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from lgrep_core.domain.models import ContentType

from lgrep_search.corpus import Corpus
from lgrep_search.fusion import Candidate
from lgrep_search.query import ParsedQuery

__all__ = ["DOCS_PENALTY", "PATH_RULES", "PENALTY_EXEMPT_FIRST_IN", "PathRule", "apply_path_penalties", "path_penalty"]


@dataclass(frozen=True, slots=True)
class PathRule:
    name: str  # also the query's `asks_for` word that lifts it (query.ASKS_FOR)
    pattern: re.Pattern[str]
    factor: float


_TEST_FILE = re.compile(
    r"(?:^|/)(?:test_[^/]*|[^/]*_test|[^/]*_spec|[^/]*\.(?:test|spec)|[^/]*Tests?|[^/]*Spec|[^/]*Suite|"
    r"test_helpers?[^/]*)\.[A-Za-z0-9]+$"
)
_TEST_DIR = re.compile(
    r"(?:^|/)(?:tests?|__tests__|__mocks__|__fixtures__|e2e|spec|specs|testing|testdata|test-fixtures|fixtures)/"
)

# All path penalties together: off → on 0.8685 → 0.8793 on 62 (factors taken from semble's stack, not
# tuned here). Each is lifted when the query asks for exactly these files (query.ASKS_FOR by name).
PATH_RULES = (
    # Tests and fixtures mention every name they exercise; the code under test is the answer.
    PathRule("test", re.compile(f"{_TEST_FILE.pattern}|{_TEST_DIR.pattern}"), 0.3),
    # Examples and benchmarks restate the API rather than implement it.
    PathRule(
        "example", re.compile(r"(?:^|/)(?:_?examples?|samples?|demos?|benchmarks?|bench|benches|jmh|docs?_src)/"), 0.3
    ),
    # Vendored and amalgamated copies duplicate the real source (single_include/ in nlohmann-json;
    # pip's _vendor/, C++'s 3rdparty/, CocoaPods' Pods/); a script or stylesheet named with its
    # version is a library's release copied in (static/jquery-3.5.1.js, bootstrap-4.3.1.min.css).
    PathRule(
        "vendored",
        re.compile(
            r"(?:^|/)(?:vendor|_vendor|vendored|third_party|thirdparty|third-party|3rdparty|node_modules|"
            r"bower_components|Pods|external|single_include)/"
            r"|[-_.]v?\d+\.\d+(?:\.\d+)*(?:\.min)?\.(?:js|css)$"
        ),
        0.3,
    ),
    # Compatibility shims re-export the real implementation under an old name.
    PathRule("compat", re.compile(r"(?:^|/)(?:compat|_compat|legacy)/"), 0.3),
    # Generated code is read by machines.
    PathRule(
        "generated",
        re.compile(
            r"(?:\.pb\.go|_pb2(?:_grpc)?\.pyi?|\.generated\.[A-Za-z]+|\.g\.dart|\.min\.js|_generated\.[A-Za-z]+)$"
        ),
        0.5,
    ),
    # Re-export barrels and package metadata name everything and define little (no query lifts this).
    PathRule("reexport", re.compile(r"(?:^|/)(?:__init__\.py|package-info\.java|index\.d\.ts)$"), 0.7),
    # Declaration stubs describe types implemented elsewhere.
    PathRule("declaration", re.compile(r"\.d\.ts$"), 0.7),
)

# ...except a chunk that at least this many channels rank first: when BM25 and the embedding agree
# that the deploy guide answers "database migrations on startup", a penalty should not overrule them
# (off → 2: subset 0.8650 → 0.8720).
PENALTY_EXEMPT_FIRST_IN = 2
# Prose about the code ranks below the code unless the query asks for documentation ("docs" in
# query.ASKS_FOR) (1.0 / 0.7 / 0.5 → 0.8582 / 0.8646 / 0.8650 on the subset).
DOCS_PENALTY = 0.5


def apply_path_penalties(corpus: Corpus, cands: dict[int, Candidate], query: ParsedQuery) -> None:
    """Scale each candidate by its file's path penalty, unless PENALTY_EXEMPT_FIRST_IN channels
    rank it first."""
    for i, c in cands.items():
        is_docs = corpus.content_types[i] == ContentType.DOCS.value
        factor, applied = path_penalty(corpus.paths[i], is_docs, query)
        if not applied:
            continue
        if sum(1 for r in c.ranks.values() if r == 0) >= PENALTY_EXEMPT_FIRST_IN:
            c.why.append(f"{'+'.join(applied)} file, not penalised: first in {PENALTY_EXEMPT_FIRST_IN}+ channels")
            continue
        c.score *= factor
        c.signals["penalty"] = factor
        c.why.append(f"{'+'.join(applied)} file ×{factor:g}")


@lru_cache(maxsize=65536)
def _path_rules(path: str) -> tuple[PathRule, ...]:
    return tuple(rule for rule in PATH_RULES if rule.pattern.search(path))


def path_penalty(path: str, is_docs: bool, query: ParsedQuery) -> tuple[float, list[str]]:
    """The multiplicative penalty for a file and the names of the rules that applied."""
    factor = 1.0
    applied: list[str] = []
    for rule in _path_rules(path):
        if rule.name not in query.asks_for:
            factor *= rule.factor
            applied.append(rule.name)
    if is_docs and "docs" not in query.asks_for:
        factor *= DOCS_PENALTY
        applied.append("docs")
    return factor, applied
