"""Domain types shared by the indexer and the searcher (no wire or storage types here)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from lgrep_core.text import identifier_parts

__all__ = [
    "EMBEDDING_TEXT_VERSION",
    "Chunk",
    "ChunkKind",
    "ContentType",
    "SearchHit",
    "SearchResponse",
    "SearchType",
    "embedding_text",
]


class ContentType(StrEnum):
    """What a file holds; search filters and ranking penalties use it."""

    CODE = "code"
    DOCS = "docs"
    CONFIG = "config"
    TEXT = "text"


class SearchType(StrEnum):
    """Which retrieval channels a search runs: all of them fused (hybrid), or one alone."""

    HYBRID = "hybrid"
    VECTOR = "vector"
    BM25 = "bm25"
    FUZZY = "fuzzy"  # symbol names, typo-tolerant


class ChunkKind(StrEnum):
    """What a chunk spans. Values are stable: they are stored in the index and printed by `--json`."""

    FUNCTION = "function"
    METHOD = "method"
    CLASS = "class"  # also struct, interface, trait, enum, protocol, module-like type definitions
    MODULE = "module"  # a namespace/module/impl block too small to split further
    ANCHOR = "anchor"  # per-file summary: imports, exports, top comments
    SECTION = "section"  # a Markdown heading section
    CONFIG = "config"  # a top-level key of YAML/TOML/JSON
    BLOCK = "block"  # top-level code between definitions
    WINDOW = "window"  # line-window fallback


@dataclass(frozen=True, slots=True)
class Chunk:
    """One searchable piece of a file.

    Lines are 1-based and inclusive. `scope` is the chain of enclosing definitions, outermost
    first, ending with this chunk's own symbol when it has one (`("Auth", "verify")`).
    """

    path: str  # relative to the project root, '/'-separated
    language: str
    start_line: int
    end_line: int
    content: str
    kind: ChunkKind
    symbol: str = ""
    scope: tuple[str, ...] = ()
    signature: str = ""
    content_type: ContentType = ContentType.CODE

    def embedding_text(self) -> str:
        """The text given to the embedder: path and scope chain first, then the code."""
        return embedding_text(self.path, self.scope, self.content)


# Bump when embedding_text changes: it is part of an index's identity and of every vector's key.
EMBEDDING_TEXT_VERSION = "2"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def embedding_text(path: str, scope: Sequence[str], content: str) -> str:
    """`pkg/jwt_verifier.py › Auth › verifyToken`, then the same names as plain words
    (`pkg jwt verifier auth verify token`), then the chunk's text (DESIGN section 5).

    The word line is for the model: MiniLM reads `verifyToken` as word pieces but "verify token" as
    words it knows. Measured on the benchmark subset: vector channel alone 0.727 -> 0.744 NDCG@10.
    """
    header = path
    if scope:
        header += " › " + " › ".join(scope)
    names = f"{path.rsplit('.', 1)[0]} {' '.join(scope)}"
    words = " ".join(p for ident in _WORD.findall(names) for p in identifier_parts(ident))
    return f"{header}\n{words}\n{content}"


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked result."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    language: str
    score: float
    content: str  # the chunk's text, cut to the snippet budget (see `truncated`)
    match: str  # which channels found it, e.g. "bm25+fuzzy+vector"; "definition" if only the ranking did
    scores: dict[str, float] = field(default_factory=dict)  # per-channel rank/score and per-signal effect
    stale: bool = False  # the file changed on disk since it was indexed
    why: tuple[str, ...] = ()  # the ranking signals that moved it, in words ("defines Router")
    truncated: bool = False  # the snippet is shorter than the chunk


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: list[SearchHit]
    timings_ms: dict[str, float]
    chunks_searched: int
    vectors_pending: int
    query_kind: str = ""  # "symbol" or "natural": how the query was read (it sets the channel weights)
    search_type: str = ""
