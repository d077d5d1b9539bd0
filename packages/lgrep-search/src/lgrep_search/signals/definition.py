"""Definitions of the queried names rank first: someone who types a name wants where it is defined,
ahead of every place that merely uses it. Chunks that define a name gain a boost whether or not a
channel found them."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import re2
from lgrep_core.domain.models import ChunkKind

from lgrep_search.corpus import Corpus, file_name_key
from lgrep_search.fusion import Candidate
from lgrep_search.query import ParsedQuery, QueryKind

__all__ = [
    "DEFINITION_BOOST",
    "DEFINITION_FILE_MATCH_SCALE",
    "DEFINITION_WEAK_SCALE",
    "EMBEDDED_DEFINITION_SCALE",
    "boost_definitions",
    "definition_pattern",
]

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

_ANCHOR = ChunkKind.ANCHOR.value


def boost_definitions(
    corpus: Corpus, cands: dict[int, Candidate], query: ParsedQuery, top: float, mask: np.ndarray | None
) -> None:
    """Boost the chunks that define the query's `definition_names` (adding them as candidates when no
    channel found them), by DEFINITION_BOOST best-scores `top` for a symbol query and a share
    of that for names inside a sentence."""
    if query.kind is QueryKind.SYMBOL:
        unit = DEFINITION_BOOST * top
    else:
        unit = DEFINITION_BOOST * EMBEDDED_DEFINITION_SCALE * top
    for name in query.definition_names:
        _boost_name(corpus, name, unit, cands, mask)


def _boost_name(corpus: Corpus, name: str, unit: float, cands: dict[int, Candidate], mask: np.ndarray | None) -> None:
    """Boost the chunks that define `name`: full strength where a definition line of exactly that
    name is in the chunk, weaker for a symbol-table match without one (a constructor, an `impl`
    block, a name that differs in case)."""
    last = re.split(r"::|\.|->|\\", name)[-1]
    pattern = definition_pattern(name)
    tiers: dict[int, float] = {}
    for i in corpus.symbol_index.chunks_defining(name).tolist():
        text = corpus.contents[i]
        exact_line = corpus.symbols[i] == last and name in text and pattern.search(text) is not None
        tiers[i] = 1.0 if exact_line else DEFINITION_WEAK_SCALE
    named = [i for f in corpus.files_named(name) for i in corpus.chunks_of(f)]
    for i in (*cands, *named):  # definition lines inside other chunks (a method in a class chunk)
        if i not in tiers:
            text = corpus.contents[i]
            if name in text and pattern.search(text):
                tiers[i] = 1.0
    lname = name.lower()
    for i, tier in tiers.items():
        if (mask is not None and not mask[i]) or corpus.kinds[i] == _ANCHOR:
            continue  # an anchor's "symbol" is its file's name, not a definition
        c = cands.get(i)
        if c is None:
            c = cands[i] = Candidate()
        if "definition" in c.signals:
            continue
        boost = unit * tier * (DEFINITION_FILE_MATCH_SCALE if _file_named(corpus.paths[i], lname) else 1.0)
        c.score += boost
        c.signals["definition"] = boost
        c.why.append(f"defines {name}" if tier == 1.0 else f"named {corpus.symbols[i]}, like {name}")


def _file_named(path: str, name: str) -> bool:
    """Is the file named after `name` (Logger.php for Logger, indifferent_hash.rb for IndifferentHash)?"""
    key = file_name_key(path)
    name = re.split(r"::|\.|->|\\", name)[-1].lower().replace("_", "")
    return key in (name, name + "s")


# ------------------------------------------------------------------------------- definition lines

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
# re2 grows a pattern's automaton (DFA) as it scans, up to a share of `max_mem` (8 MB by default), and
# keeps it while the pattern lives: a cached pattern held ~650 KB after 19 MB of code. The patterns
# here scan only chunks that contain the name, so a small budget costs no speed (3.2 against 3.6 ms a
# query over 560 queries of new names), and a daemon's heap no longer creeps as names come and go
# (+32 MB after 600 such queries with the default budget, +3 with this; docs/benchmarks.md).
_RE2_OPTIONS.max_mem = 256 * 1024


# Compiled patterns of the names asked for most recently: each costs ~0.6 ms to compile and holds
# ~30 KB and its automaton (at most `max_mem` above). 512 of them, with re2's default budget, took a
# daemon warm on 41.6k chunks from 442 to 496 MB over 400 queries of new names, growing still.
DEFINITION_PATTERNS_CACHED = 32


@lru_cache(maxsize=DEFINITION_PATTERNS_CACHED)
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
