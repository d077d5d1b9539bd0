"""The program's own messages a task question quotes: where an error is raised, not where it shows.

An issue often pastes what the program printed: `Malformed option description '[enable=]PATTERN',
should look like "opt", "-opt args", ...`. The code that raises, warns or logs that message is where
the behaviour is decided, and often the file the fix changes, while the question's other evidence
(the names it calls, the traceback's frames) leads to where the symptom shows.

A message is a string literal on a line of code that raises, throws, warns, logs an error, panics,
fails or asserts (`_ERROR_LINE`, the same words in every language). It is cut at its format holes
(`%s`, `{}`, `${x}`, `\\n`, `" + x + "`) into fragments, and a fragment of `MIN_WORDS` words or more
(lower-cased words of letters, digits and `_`) that the question holds word for word names the files
that hold it. A fragment more than `MAX_FILES` files hold is a phrase, not a message: it names none.

The index is built once per snapshot from the code chunks' text (`Corpus.message_index`, 1.35 s at
37k chunks) and carried over an incremental update, the changed files' messages read again.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import cast

import re2

__all__ = ["MAX_FILES", "MIN_WORDS", "MessageIndex", "file_messages"]

MIN_WORDS = 3
MIN_CHARS = 12  # a fragment's words joined by spaces: "a b c" says nothing
MAX_FILES = 3
# A literal longer than this is a template or a data blob, not a message.
MAX_LITERAL = 400
MIN_LITERAL = 8
# A longer line is minified code or data: no message is read from it.
MAX_LINE = 1_000

# Repository text is hostile. A literal's pattern could backtrack: re2 (linear time). The others
# cannot (words, one character class) or read a literal of at most MAX_LITERAL characters, and
# Python's `re` is much cheaper per match.
_LITERAL = re2.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|'((?:[^'\\\n]|\\.)*)'|`([^`\n]*)`")
_HOLE = re.compile(r"%\(\w+\)[sdrf]|%[-#0 +]*\d*(?:\.\d+)?[sdrfixXoegcv]|\{[^{}]*\}|\$\{[^}]*\}|\\[ntr]|\s\+\s")
_ERROR_LINE = re.compile(r"raise|throw|error|exception|warn|panic|fatal|fail|assert|abort|die\b|invalid|bail|expect\(")
_WORD = re.compile(r"[a-z0-9_]+")
_QUOTES = ('"', "'", "`")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def file_messages(texts: Iterable[str]) -> frozenset[tuple[str, ...]]:
    """The message fragments (word tuples) in one file's chunk texts."""
    out: set[tuple[str, ...]] = set()
    for original in texts:
        text = original.lower()  # words are compared lower-cased; and `re` is 6x slower ignoring case
        hit = _ERROR_LINE.search(text)
        while hit is not None:
            start = text.rfind("\n", 0, hit.start()) + 1
            end = text.find("\n", hit.end())
            end = len(text) if end < 0 else end
            hit = _ERROR_LINE.search(text, end)
            if end - start > MAX_LINE or not any(q in text[start:end] for q in _QUOTES):
                continue
            for m in _LITERAL.finditer(text[start:end]):
                literal = cast(str, m.group(1) or m.group(2) or m.group(3) or "")
                if not MIN_LITERAL <= len(literal) <= MAX_LITERAL:
                    continue
                for piece in _HOLE.split(literal):
                    words = _WORD.findall(piece)  # the text is lower-cased already
                    if len(words) >= MIN_WORDS and len(" ".join(words)) >= MIN_CHARS:
                        out.add(tuple(words))
    return frozenset(out)


class MessageIndex:
    """Each file's message fragments, by path, and the fragments few enough files hold, by their
    first two words."""

    def __init__(self, by_path: Mapping[str, frozenset[tuple[str, ...]]]) -> None:
        self.by_path = {p: f for p, f in by_path.items() if f}
        holders: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for path, fragments in self.by_path.items():
            for fragment in fragments:
                holders[fragment].append(path)
        self._by_start: dict[tuple[str, ...], list[tuple[tuple[str, ...], tuple[str, ...]]]] = defaultdict(list)
        for fragment, paths in holders.items():
            if len(paths) <= MAX_FILES:
                self._by_start[fragment[:2]].append((fragment, tuple(sorted(paths))))

    @classmethod
    def of_files(cls, texts_by_path: Mapping[str, list[str]]) -> MessageIndex:
        return cls({path: file_messages(texts) for path, texts in texts_by_path.items()})

    def updated(self, changed: Iterable[str], texts_by_path: Mapping[str, list[str]]) -> MessageIndex:
        """This index with the files `changed` dropped and the files of `texts_by_path` read."""
        gone = set(changed)
        by_path = {p: f for p, f in self.by_path.items() if p not in gone}
        by_path.update((path, file_messages(texts)) for path, texts in texts_by_path.items())
        return MessageIndex(by_path)

    def quoted(self, text: str) -> dict[str, tuple[str, ...]]:
        """Path -> the longest of its messages `text` holds word for word (files holding none are absent)."""
        words = _words(text)
        best: dict[str, tuple[str, ...]] = {}
        for i in range(len(words) - 1):
            for fragment, paths in self._by_start.get((words[i], words[i + 1]), ()):
                if tuple(words[i : i + len(fragment)]) != fragment:
                    continue
                for path in paths:
                    if len(fragment) > len(best.get(path, ())):
                        best[path] = fragment
        return best
