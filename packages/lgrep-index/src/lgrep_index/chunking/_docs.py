"""Markdown and reStructuredText sections, found line by line.

Headings are easy to recognise from lines (ATX `#`, setext and RST underlines), and a line scan
cannot fail on a malformed document, so no grammar is used here. Fenced code blocks (``` / ~~~)
are skipped so that a `# comment` inside one is not a heading.
"""

from __future__ import annotations

import re

from lgrep_core.domain.models import ChunkKind

from lgrep_index.chunking._emit import Item, clean_signature
from lgrep_index.chunking._lines import Lines

__all__ = ["markdown_items", "rst_items"]

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:[-*+>|]|\d+[.)]\s|#|<|---|\.\. )")
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")

HEADING_MAX_CHARS = 200

Heading = tuple[int, int, str, int]  # (first line, level, text, last line of the heading)


def markdown_items(lines: Lines) -> list[Item]:
    """One SECTION item per heading; empty when the document has no headings."""
    raw = lines.raw
    headings: list[Heading] = []
    fence: str | None = None
    start = 0
    if raw and raw[0].strip() == "---":  # YAML front matter is part of the preamble
        for i in range(1, min(len(raw), 200)):
            if raw[i].strip() in ("---", "..."):
                start = i + 1
                break
    for i in range(start, len(raw)):
        line = raw[i]
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((i, len(atx.group(1)), _atx_text(line[atx.end() :]), i))
            continue
        if i + 1 < len(raw) and not lines.blank(i) and (i == 0 or lines.blank(i - 1)):
            under = _SETEXT.match(raw[i + 1])
            if under and not _NOT_PARAGRAPH.match(line):
                headings.append((i, 1 if under.group(1)[0] == "=" else 2, line.strip(), i + 1))
    return _sections(lines, headings)


def _atx_text(rest: str) -> str:
    """`Install ##` -> "Install" (a closing run of #s is not part of the heading)."""
    text = rest.strip()
    closed = text.rstrip("#")
    if closed != text and (not closed or closed[-1] in " \t"):
        text = closed.rstrip()
    return text


def rst_items(lines: Lines) -> list[Item]:
    """Sections of an RST document; levels follow the order in which adornment styles appear."""
    raw = lines.raw
    headings: list[Heading] = []
    styles: list[tuple[str, bool]] = []
    i = 0
    while i + 1 < len(raw):
        title = raw[i].rstrip()
        over = _RST_ADORNMENT.match(title)
        if over and i + 2 < len(raw):  # overline + title + underline
            text = raw[i + 1].strip()
            under = _RST_ADORNMENT.match(raw[i + 2])
            if text and under and under.group(1) == over.group(1):
                level = _rst_level(styles, (over.group(1), True))
                headings.append((i, level, text, i + 2))
                i += 3
                continue
        under = _RST_ADORNMENT.match(raw[i + 1])
        if (
            title.strip()
            and not over
            and under
            and len(raw[i + 1].rstrip()) >= len(title.strip())
            and not title.startswith(" ")
        ):
            level = _rst_level(styles, (under.group(1), False))
            headings.append((i, level, title.strip(), i + 1))
            i += 2
            continue
        i += 1
    return _sections(lines, headings)


def _rst_level(styles: list[tuple[str, bool]], style: tuple[str, bool]) -> int:
    if style not in styles:
        styles.append(style)
    return styles.index(style) + 1


def _sections(lines: Lines, headings: list[Heading]) -> list[Item]:
    if not headings:
        return []
    items: list[Item] = []
    first = headings[0][0]
    if first > 0 and lines.first_nonblank(0, first - 1) is not None:
        items.append(Item(0, first - 1, ChunkKind.SECTION, "", ()))
    chain: list[tuple[int, str]] = []
    pending: int | None = None  # start of a heading-only section, folded into the next, deeper one
    for n, (line, level, title, last) in enumerate(headings):
        end = headings[n + 1][0] - 1 if n + 1 < len(headings) else lines.count - 1
        text = " ".join(title.split())[:HEADING_MAX_CHARS]
        while chain and chain[-1][0] >= level:
            chain.pop()
        chain.append((level, text))
        start = line if pending is None else pending
        pending = None
        nxt = headings[n + 1] if n + 1 < len(headings) else None
        if nxt is not None and nxt[1] > level and lines.first_nonblank(last + 1, end) is None:
            pending = start  # "# Guide" directly followed by "## Install": one chunk, Install's
            continue
        items.append(
            Item(
                start,
                end,
                ChunkKind.SECTION,
                text,
                tuple(t for _, t in chain if t),
                clean_signature(text if _RST_ADORNMENT.match(lines.raw[line]) else lines.raw[line]),
                head=(line, last),
            )
        )
    return items
