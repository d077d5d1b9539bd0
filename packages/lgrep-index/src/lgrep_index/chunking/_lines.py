"""A file as lines: cheap token estimates over any line range, and line-aligned packing.

Token counts are estimated, never computed with a tokenizer: a line costs its characters without
indentation (capped at `MAX_LINE_CHARS`) plus one for the newline, divided by `CHARS_PER_TOKEN`.
Indentation is left out because it is nearly free for BPE tokenizers and dropped entirely by
WordPiece (MiniLM), so counting it would make deeply nested code look twice its real size.
"""

from __future__ import annotations

import re
from itertools import accumulate

__all__ = ["CHARS_PER_TOKEN", "MAX_LINE_CHARS", "Lines", "pack"]

CHARS_PER_TOKEN = 4
"""About four characters per token for English and code under BPE and WordPiece alike."""

MAX_LINE_CHARS = 400
"""A longer line (minified code, embedded data) is cut in chunk content and counted at this length."""

_ELLIPSIS = " …"
# Lines that carry no meaning on their own: closers such as `}`, `end`, `});`, `fi`. (One star
# before the keyword only: two adjacent stars over the same class backtrack quadratically.)
_TRIVIAL = re.compile(r"^[\s(){}\[\];,.]*(?:(?:end|fi|done|esac)[\s(){}\[\];,.]*)?$")


class Lines:
    """The lines of one file (newlines already normalised to "\\n"), 0-based."""

    __slots__ = ("_blank", "_cum", "_long", "raw")

    def __init__(self, text: str) -> None:
        raw = text.split("\n")
        if raw and raw[-1] == "":
            raw.pop()  # a final newline ends the last line; it does not start another
        self.raw = raw
        sizes = list(map(len, map(str.strip, raw)))
        self._blank = [not n for n in sizes]
        self._long = max(map(len, raw), default=0) > MAX_LINE_CHARS
        if self._long:
            sizes = [min(n, MAX_LINE_CHARS) for n in sizes]
        self._cum = list(accumulate(sizes, initial=0))

    @property
    def count(self) -> int:
        return len(self.raw)

    def blank(self, i: int) -> bool:
        return self._blank[i]

    def trivial(self, i: int) -> bool:
        """Blank, or only closing punctuation / `end`."""
        return self._blank[i] or _TRIVIAL.match(self.raw[i]) is not None

    def tokens(self, start: int, end: int) -> int:
        """Estimated tokens of lines start..end (inclusive); 0 for an empty range."""
        if end < start:
            return 0
        chars = self._cum[end + 1] - self._cum[start] + end - start + 1  # + one newline per line
        return -(-chars // CHARS_PER_TOKEN)

    def text(self, start: int, end: int) -> str:
        """Lines start..end joined, each cut at `MAX_LINE_CHARS`."""
        if not self._long:
            return "\n".join(self.raw[start : end + 1])
        return "\n".join(
            line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + _ELLIPSIS
            for line in self.raw[start : end + 1]
        )

    def all_blank(self) -> bool:
        return all(self._blank)

    def first_nonblank(self, start: int, end: int) -> int | None:
        for i in range(start, end + 1):
            if not self._blank[i]:
                return i
        return None

    def last_nonblank(self, start: int, end: int) -> int | None:
        for i in range(end, start - 1, -1):
            if not self._blank[i]:
                return i
        return None

    def any_blank(self, start: int, end: int) -> bool:
        return any(self._blank[start : end + 1])


def pack(
    lines: Lines, start: int, end: int, *, budget: int, first_budget: int | None = None, overlap: int = 0
) -> list[tuple[int, int]]:
    """Cut lines start..end into line-aligned pieces of at most `budget` tokens.

    The first piece may use `first_budget` instead. Consecutive pieces share about `overlap`
    tokens of lines. A cut prefers to fall on a blank line in the second half of a piece. A
    single line larger than the budget is a piece of its own (its content is capped by
    `Lines.text`). Blank lines never start or end a piece; an all-blank range gives no pieces.
    """
    first = lines.first_nonblank(start, end)
    if first is None:
        return []
    budget = max(budget, 1)
    overlap = max(0, min(overlap, budget // 2))
    pieces: list[tuple[int, int]] = []
    s = first
    while True:
        limit = first_budget if first_budget is not None and not pieces else budget
        e = s
        while e < end and lines.tokens(s, e + 1) <= limit:
            e += 1
        if e < end:
            for k in range(e, s + (e - s) // 2, -1):
                if lines.blank(k):
                    e = k - 1
                    break
        last = lines.last_nonblank(s, e)
        pieces.append((s, e if last is None else last))
        if e >= end:
            break
        nxt = e + 1
        if overlap:
            while nxt - 1 > s and lines.tokens(nxt - 1, e) <= overlap:
                nxt -= 1
        s = max(nxt, s + 1)
        following = lines.first_nonblank(s, end)
        if following is None:
            break
        s = following
    return pieces
