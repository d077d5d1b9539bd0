"""From definition regions (`Item`) to planned chunks: whole, split with the signature, or header +
members, with the code between definitions grouped into blocks.

Every parser (tree-sitter code, Markdown/RST sections, config keys) produces a tree of `Item`s;
this module is the one place that decides chunk boundaries, so the rules hold for all of them:

- an item that fits in `max_tokens` is one chunk;
- a container (class, impl, config mapping...) that does not fit becomes a header chunk (its lines
  up to the first member) plus the members' own chunks; a namespace-like item emits no header;
- anything else too big is cut into line-aligned pieces with overlap, and each piece that does not
  contain the item's signature lines gets them in front of its content, followed by a line holding
  only `SPLIT_MARKER` (see `Planned.render`);
- lines between items at one level are gaps: all-trivial gaps (`}`, `end`, blank) are dropped, tiny
  gaps join an adjacent chunk, the rest become BLOCK chunks.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass, field
from typing import TypedDict

from lgrep_core.domain.models import ChunkKind

from lgrep_index.chunking._lines import Lines, pack

__all__ = ["MIN_BLOCK_TOKENS", "SPLIT_MARKER", "Emitter", "Item", "Planned", "settle"]

SPLIT_MARKER = "⋮"
"""Separates repeated signature lines from the piece's own lines in a split piece's content."""

MIN_BLOCK_TOKENS = 24
"""A gap smaller than this (about two short statements) joins a neighbouring chunk when one can
take it, rather than becoming a chunk of its own."""

SIGNATURE_MAX_CHARS = 200

# `def f(\n    a,\n    b,\n)` collapses to "def f( a, b, )": tidy it to "def f(a, b)".
_OPEN_SPACE = re.compile(r"([(\[]) ")
_CLOSE_SPACE = re.compile(r",? ([)\]])")


@dataclass(slots=True)
class Item:
    """A definition-like region of a file. Lines are 0-based and inclusive."""

    start: int
    end: int
    kind: ChunkKind
    symbol: str
    scope: tuple[str, ...]
    signature: str = ""
    head: tuple[int, int] | None = None  # signature lines, repeated in front of split pieces
    children: list[Item] = field(default_factory=list["Item"])
    container: bool = False  # members are chunked separately when this does not fit
    header_chunk: bool = True  # when split: a chunk for the lines before the first member
    split_nested: bool = False  # split even when it fits, if a member is itself a container


@dataclass(slots=True)
class Planned:
    """A chunk before rendering. Lines are 0-based and inclusive."""

    start: int
    end: int
    kind: ChunkKind
    symbol: str = ""
    scope: tuple[str, ...] = ()
    signature: str = ""
    prefix: tuple[int, int] | None = None  # signature lines shown before the piece (split pieces)
    whole: bool = True  # not a piece of a split item: may absorb a tiny neighbouring gap

    def render(self, lines: Lines) -> str:
        """The chunk's content.

        The content of a split piece that starts after its item's signature lines is those lines,
        a line holding only `SPLIT_MARKER`, then the piece's lines; everything after the marker
        line is exactly lines `start..end` of the file (long lines cut). Other chunks are exactly
        their lines.
        """
        body = lines.text(self.start, self.end)
        if self.prefix is None:
            return body
        return f"{lines.text(*self.prefix)}\n{SPLIT_MARKER}\n{body}"


def clean_signature(text: str) -> str:
    """One line, whitespace collapsed, trailing `{` `:` `=` dropped, at most `SIGNATURE_MAX_CHARS`."""
    sig = " ".join(text.split()).rstrip(" {:=")
    sig = _OPEN_SPACE.sub(r"\1", _CLOSE_SPACE.sub(r"\1", sig))
    if len(sig) > SIGNATURE_MAX_CHARS:
        sig = sig[: SIGNATURE_MAX_CHARS - 1].rstrip() + "…"
    return sig


def settle(
    items: list[Item],
    lo: int,
    hi: int,
    lines: Lines,
    *,
    attachable: Container[int] = (),
    merge_clauses: bool = False,
) -> list[Item]:
    """Put sibling items in order and make their line spans disjoint and honest.

    Spans are clipped to lo..hi and to after the previous sibling (same-line neighbours: the
    first one keeps the line; an item left empty is dropped, its text stays in its neighbour),
    lose trailing blank lines, and grow upwards over directly preceding comment/attribute lines
    (`attachable`). With `merge_clauses`, adjacent items of one kind and symbol (Haskell
    equations, Elixir function clauses) become one. Members are settled the same way, inside
    their parent.
    """
    items.sort(key=lambda it: it.start)
    out: list[Item] = []
    lower = lo
    for it in items:
        s = max(it.start, lower)
        e = min(it.end, hi)
        while e > s and lines.blank(e):
            e -= 1
        while s - 1 >= lower and (s - 1) in attachable:
            s -= 1
        if s > e:
            continue
        if merge_clauses and out:
            prev = out[-1]
            if (
                prev.symbol == it.symbol
                and prev.kind == it.kind
                and not prev.children
                and all(lines.blank(k) or k in attachable for k in range(prev.end + 1, s))
            ):
                prev.end = e
                lower = e + 1
                continue
        it.start, it.end = s, e
        if it.children:
            inner_lo = s + 1 if it.header_chunk else s
            it.children = settle(it.children, inner_lo, e, lines, attachable=attachable, merge_clauses=merge_clauses)
        out.append(it)
        lower = e + 1
    return out


class _Labels(TypedDict):
    symbol: str
    scope: tuple[str, ...]
    signature: str
    head: tuple[int, int] | None


@dataclass(slots=True)
class _Run:
    """The chunks of one item, and which of them may absorb a tiny gap before / after them."""

    chunks: list[Planned]
    first: Planned | None
    last: Planned | None


class Emitter:
    """Turns settled items into planned chunks for one file."""

    def __init__(self, lines: Lines, max_tokens: int, overlap_tokens: int) -> None:
        self.lines = lines
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens

    def emit(self, items: list[Item], first: list[Planned] | None = None) -> list[Planned]:
        """Chunks for a whole file; `first` (the anchor) precedes the first item."""
        return self._level(items, 0, self.lines.count - 1, (), list(first or ()))

    def split(
        self,
        start: int,
        end: int,
        kind: ChunkKind,
        *,
        symbol: str = "",
        scope: tuple[str, ...] = (),
        signature: str = "",
        head: tuple[int, int] | None = None,
    ) -> list[Planned]:
        """Lines start..end as one chunk, or as pieces that each show the `head` lines."""
        lines = self.lines
        if lines.tokens(start, end) <= self.max_tokens:
            s = lines.first_nonblank(start, end)
            e = lines.last_nonblank(start, end)
            if s is None or e is None:
                return []
            return [Planned(s, e, kind, symbol, scope, signature)]
        head_tokens = lines.tokens(*head) if head is not None else 0
        rest = max(self.max_tokens - head_tokens - 1, self.max_tokens // 2)
        ranges = pack(lines, start, end, budget=rest, first_budget=self.max_tokens, overlap=self.overlap_tokens)
        out: list[Planned] = []
        for s, e in ranges:
            prefix = None
            if head is not None and s > head[0]:
                prefix = (head[0], min(head[1], s - 1))
            out.append(Planned(s, e, kind, symbol, scope, signature, prefix, whole=len(ranges) == 1))
        return out

    @staticmethod
    def _labels(it: Item) -> _Labels:
        return {"symbol": it.symbol, "scope": it.scope, "signature": it.signature, "head": it.head}

    def _item(self, it: Item) -> list[Planned]:
        lines = self.lines
        kids = it.children
        fits = lines.tokens(it.start, it.end) <= self.max_tokens
        if not it.container or not kids:
            return self.split(it.start, it.end, it.kind, **self._labels(it))
        if fits and not (it.split_nested and any(k.container for k in kids)):
            return [Planned(it.start, it.end, it.kind, it.symbol, it.scope, it.signature)]
        if not it.header_chunk:
            return self._level(kids, it.start, it.end, it.scope, [])
        first = kids[0].start
        header = self.split(it.start, first - 1, it.kind, **self._labels(it))
        return self._level(kids, first, it.end, it.scope, header)

    def _level(self, items: list[Item], lo: int, hi: int, scope: tuple[str, ...], head: list[Planned]) -> list[Planned]:
        """Chunks of sibling items between lines lo..hi, with the gaps between them."""
        entries: list[_Run | tuple[int, int]] = []  # chunk runs and (start, end) gaps, in order
        cur = lo
        if head:
            if head[0].start > lo:
                entries.append((lo, head[0].start - 1))
            entries.append(_Run(head, head[0], head[-1]))
            cur = head[-1].end + 1
        for it in items:
            if it.start > cur:
                entries.append((cur, it.start - 1))
            planned = self._item(it)
            if planned:
                # Only the item's own single chunk may grow downwards: never a member of a split class.
                last = planned[0] if len(planned) == 1 and planned[0].whole else None
                entries.append(_Run(planned, planned[0] if planned[0].whole else None, last))
            cur = max(cur, it.end + 1)
        if cur <= hi:
            entries.append((cur, hi))

        out: list[Planned] = []
        prev: Planned | None = None
        for i, entry in enumerate(entries):
            if isinstance(entry, _Run):
                out.extend(entry.chunks)
                prev = entry.last
                continue
            following = entries[i + 1] if i + 1 < len(entries) else None
            nxt = following.first if isinstance(following, _Run) else None
            blocks = self._gap(entry[0], entry[1], scope, prev, nxt)
            out.extend(blocks)
            prev = blocks[-1] if len(blocks) == 1 else None
        return out

    def _gap(
        self, start: int, end: int, scope: tuple[str, ...], prev: Planned | None, nxt: Planned | None
    ) -> list[Planned]:
        lines = self.lines
        s, e = start, end
        while s <= e and lines.trivial(s):
            s += 1
        while e >= s and lines.trivial(e):
            e -= 1
        if s > e:
            return []
        if lines.tokens(s, e) < MIN_BLOCK_TOKENS and (prev is not None or nxt is not None):
            limit = self.max_tokens
            next_ok = nxt is not None and lines.tokens(s, nxt.end) <= limit
            prev_ok = prev is not None and lines.tokens(prev.start, e) <= limit
            touches_next = nxt is not None and not lines.any_blank(e + 1, nxt.start - 1)
            touches_prev = prev is not None and not lines.any_blank(prev.end + 1, s - 1)
            if next_ok and nxt is not None and ((touches_next and not touches_prev) or not prev_ok):
                nxt.start = s
                return []
            if prev_ok and prev is not None:
                prev.end = e
                return []
        return self.split(s, e, ChunkKind.BLOCK, scope=scope)
