"""What a task-length question holds: an issue or a bug report, pasted as the query.

Such a question is a paragraph or more of plain words around the evidence an agent (or a person)
would follow first: a title, code blocks and `inline code`, tracebacks whose frames name files, lines
and functions, error messages, dotted names (`sympy.core.basic`, `autodoc.ClassDocumenter`) and file
paths. `parse_question` finds each of them once; the channels and the file ranking weigh them
(query.py, files.py). A one-line question has a title and nothing else, and is read as before.

Every pattern here runs on user text of any length: re2 (linear time) where a pattern could
backtrack, plain string scans elsewhere.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import re2

__all__ = ["Frame", "QuestionParts", "is_task_question", "parse_question"]

# A question this long, or of more than this many lines, is read as a task (an issue, a report);
# shorter ones are the short questions the ranking was built for, and stay as they were.
TASK_MIN_CHARS = 200
TASK_MIN_LINES = 3


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a traceback: the file (as written: absolute, relative or `<stdin>`), its line
    and the function."""

    path: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class QuestionParts:
    title: str  # the first non-empty line
    code: str  # the text of code blocks, doctest lines, tracebacks and `inline code`, joined
    prose: str  # the rest
    frames: tuple[Frame, ...]  # traceback frames, in the order written (innermost last)
    paths: tuple[str, ...]  # file paths named anywhere (frames' included), as written, first first
    errors: tuple[str, ...]  # exception and warning names (`IndexError`), first first
    dotted: tuple[str, ...]  # qualified names (`a.b.c`), first first
    identifiers: tuple[str, ...]  # names in the code and in the prose that look like names, first first
    called: tuple[str, ...] = ()  # names called (`f(`) or run in a traceback frame: surely the program's
    title_names: tuple[str, ...] = ()  # identifiers the title uses


def is_task_question(text: str) -> bool:
    stripped = text.strip()
    return len(stripped) >= TASK_MIN_CHARS or stripped.count("\n") + 1 >= TASK_MIN_LINES


# ```lang ... ``` blocks (the closing fence may be missing at the end of the text).
_FENCE = re2.compile(r"(?s)```[^\n]*\n(.*?)(?:```|$)")
_INLINE = re2.compile(r"`([^`\n]+)`")
# Python tracebacks: `File "sympy/matrices/matrices.py", line 1112, in is_upper`.
_PY_FRAME = re2.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.$]+))?')
# Other stacks: `at foo (src/a/b.js:12:5)`, `at com.x.Y.m(Y.java:42)`, `src/a.rs:12:5`, `a.go:12`.
_PATH_LINE = re2.compile(r"((?:[\w.@~-]+/)*[\w.@-]+\.[A-Za-z][A-Za-z0-9]*):(\d+)")
# A file path with at least one folder, or a bare file name with a source-like extension.
_PATH = re2.compile(
    r"(?:^|[\s\"'`(\[<=])((?:\.{0,2}/)?(?:[\w.@~-]+/)+[\w.@-]+\.[A-Za-z][A-Za-z0-9]*"
    r"|[\w-]+\.(?:py|pyi|pyx|js|jsx|ts|tsx|mjs|go|rs|java|kt|scala|rb|php|cs|c|h|cc|cpp|hpp|m|swift|"
    r"ex|exs|hs|lua|sh|zig|ml|dart|rst|md|toml|cfg|ini|yaml|yml|json|txt|html|css))\b"
)
_ERROR = re2.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault|Panic))\b")
_DOTTED = re2.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A name that says it is one: camelCase, PascalCase with a second capital, snake_case, ALLCAPS_X,
# or anything followed by `(` (a call).
_NAMEISH = re.compile(r"[a-z][a-z0-9]*[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|\w*_\w+|[A-Z]{2,}\w*")
_CALL = re2.compile(r"\b([A-Za-z_]\w*)\(")
# Doctest and console lines: `>>> x`, `... x`, `In [3]: x`, `$ cmd`.
_CONSOLE = re2.compile(r"(?m)^\s*(?:>>>|\.\.\.|In \[\d+\]:|\$) ?(.*)$")
# Indented blocks (four spaces or a tab) of at least two lines: code in plain-text reports.
_INDENTED = re2.compile(r"(?m)((?:^(?: {4}|\t)\S.*\n?){2,})")
# The lines a traceback frames its frames with, which name nothing of the project.
_TRACEBACK_NOISE = re2.compile(r'(?m)^.*(?:Traceback \(most recent call last\)|File "[^"\n]*", line \d+).*$')
# Words of code that every program uses: keywords and the most common builtins of the languages
# issues paste (a name the project defines is what the question points at).
_CODE_WORDS = frozenset(keyword.kwlist) | frozenset(
    [
        "self",
        "cls",
        "print",
        "len",
        "range",
        "int",
        "str",
        "float",
        "bool",
        "list",
        "dict",
        "set",
        "tuple",
        "object",
        "type",
        "isinstance",
        "super",
        "repr",
        "true",
        "false",
        "null",
        "nil",
        "none",
        "undefined",
        "var",
        "let",
        "const",
        "function",
        "func",
        "fn",
        "return",
        "new",
        "this",
        "import",
        "from",
        "public",
        "private",
        "static",
        "void",
        "class",
        "def",
        "end",
    ]
)


def parse_question(text: str) -> QuestionParts:
    lines = [line for line in text.splitlines() if line.strip()]
    title = lines[0].strip() if lines else ""
    code_parts: list[str] = []
    spans: list[tuple[int, int]] = []
    for pattern in (_FENCE, _INDENTED, _CONSOLE, _INLINE):
        for span, groups in _matches(pattern, text):
            if not _inside(span[0], spans):
                code_parts.append(groups[0])
                spans.append(span)
    spans.sort()
    prose_parts: list[str] = []
    at = 0
    for start, end in spans:
        if start > at:
            prose_parts.append(text[at:start])
        at = max(at, end)
    prose_parts.append(text[at:])
    code = "\n".join(code_parts)
    prose = "".join(prose_parts)

    frames = [Frame(g[0], int(g[1]), g[2]) for _, g in _matches(_PY_FRAME, text)]
    framed = {f.path for f in frames}
    for _, (path, line) in _matches(_PATH_LINE, text):
        if path not in framed:
            frames.append(Frame(path, int(line), ""))
            framed.add(path)
    paths = _unique([f.path for f in frames if not f.path.startswith("<")] + [g[0] for _, g in _matches(_PATH, text)])
    errors = _unique(g[0] for _, g in _matches(_ERROR, text))
    dotted = _unique(g[0] for _, g in _matches(_DOTTED, text) if not _looks_like_a_file_or_number(g[0]))
    names: list[str] = []
    names += (f.function for f in frames if f.function and not f.function.startswith("<"))
    names += (g[0] for _, g in _matches(_CALL, text))
    called = _unique(n for n in names if len(n) >= 3 and n.lower() not in _CODE_WORDS)
    names += (part for d in dotted for part in d.split("."))
    names += _IDENT.findall(_TRACEBACK_NOISE.sub("", code))
    names += (w for w in _IDENT.findall(prose) if _NAMEISH.fullmatch(w))
    identifiers = _unique(n for n in names if len(n) >= 3 and n.lower() not in _CODE_WORDS)
    return QuestionParts(
        title=title,
        code=code,
        prose=prose,
        frames=tuple(frames),
        paths=tuple(paths),
        errors=tuple(errors),
        dotted=tuple(dotted),
        identifiers=tuple(identifiers),
        called=tuple(called),
        title_names=tuple(n for n in identifiers if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", title)),
    )


def _matches(pattern: Any, text: str) -> Iterator[tuple[tuple[int, int], list[str]]]:
    """A re2 pattern's matches as (span, groups), a group that took no part as ""."""
    for m in pattern.finditer(text):
        yield m.span(), [g or "" for g in m.groups()]


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= pos < end for start, end in spans)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


_FILEISH = re.compile(r"\.(?:py|pyi|js|ts|go|rs|java|rb|php|cs|c|h|cpp|md|rst|txt|toml|cfg|yaml|yml|json|html)$")


def _looks_like_a_file_or_number(name: str) -> bool:
    """`setup.py`, `1.2.3`, `e.g`: dotted, but no qualified name."""
    parts = name.split(".")
    return bool(_FILEISH.search(name)) or name.replace(".", "").isdigit() or max(map(len, parts)) < 3
