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
import posixpath
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
# Frames read from other stacks' `path:line` mentions at most (a pasted log can hold thousands).
MAX_FRAMES = 200


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
    imports: tuple[str, ...] = ()  # modules the question's code imports, as dotted names (not in `dotted`)


def is_task_question(text: str) -> bool:
    stripped = text.strip()
    return len(stripped) >= TASK_MIN_CHARS or stripped.count("\n") + 1 >= TASK_MIN_LINES


# ```lang ... ``` blocks (the closing fence may be missing at the end of the text).
_FENCE = re2.compile(r"(?s)```[^\n]*\n(.*?)(?:```|$)")
_INLINE = re2.compile(r"`([^`\n]+)`")
# Python tracebacks: `File "sympy/matrices/matrices.py", line 1112, in is_upper`.
_PY_FRAME = re2.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.$]+))?')
# The stacks of other languages, each printed innermost frame first (parse_question turns each
# innermost last, as Python prints them). JVM: `at com.acme.json.Parser.parse(Parser.java:42)`.
_JVM_FRAME = re2.compile(r"\bat\s+((?:[\w$]+\.)+)([\w$<>-]+)\(([\w$-]+\.(?:java|kt|kts|scala|groovy)):(\d+)\)")
# V8 (`at Object.parse (/app/src/index.js:12:5)`, `at /app/src/index.js:12:5`) and Firefox or
# Safari (`parse@src/index.js:12:5`).
_V8_FRAME = re2.compile(
    r"\bat\s+(?:async\s+|new\s+)?(?:([\w$.<>\[\]]+)\s+\()?((?:file://)?[^\s()]+\.(?:[cm]?js|jsx|[cm]?ts|tsx|vue|svelte))"
    r":(\d+)"
)
_GECKO_FRAME = re2.compile(r"(?m)^\s*([\w$.<>/]*)@((?:file://)?[^\s@]+\.(?:[cm]?js|jsx|[cm]?ts|tsx)):(\d+)")
# Go panics and goroutine dumps: the function's line, then its file's:
# `github.com/acme/x/store.(*Cache).Get(...)` / `\t/src/x/store/cache.go:42 +0x1d`.
_GO_FRAME = re2.compile(r"(?m)^\s*([\w./*()\[\]-]+)\([^\n]*\)\s*\n\s+(\S+\.go):(\d+)")
# Rust backtraces: `  12: tracing_core::dispatcher::get_default` / `      at ./src/dispatcher.rs:123:9`.
_RUST_FRAME = re2.compile(
    r"(?m)^\s*\d+:\s+(?:0x[0-9a-f]+\s+-\s+)?([\w:<>${} ,&]+?)(?:::h[0-9a-f]{16})?\s*\n\s+at\s+(\S+\.rs):(\d+)"
)
# C and C++ from sanitizers, gdb and lldb: `#3 0x4f2b1c in ZSTD_decompressStream /src/lib/zstd.c:1234:5`,
# `#1  0x0000 in foo (a=1) at lib/x.c:12`.
_NATIVE_FRAME = re2.compile(
    r"#\d+\s+(?:0x[0-9a-fA-F]+\s+in\s+)?([\w:~<>]+)\s*(?:\([^)\n]*\)\s*)?(?:at\s+)?"
    r"(\S+\.(?:c|cc|cpp|cxx|h|hh|hpp|hxx|m|mm|zig)):(\d+)"
)
# Ruby: `/app/lib/shop/cart.rb:12:in 'Shop::Cart#total'` (older Rubies quote with a backtick),
# `from lib/x.rb:5:in `block in <main>'`.
_RUBY_FRAME = re2.compile(r"((?:[\w.@~-]*/)*[\w.@-]+\.(?:rb|rake)):(\d+):in [`']([^'\n]*)'")
# PHP: `#0 /var/www/src/Cart.php(42): App\Shop\Cart->total()`.
_PHP_FRAME = re2.compile(r"#\d+\s+((?:[\w.@~-]*/)*[\w.@-]+\.php)\((\d+)\):\s+([\w\\]+(?:->|::))?(\w+)\(")
_STACKS = (_JVM_FRAME, _V8_FRAME, _GECKO_FRAME, _GO_FRAME, _RUST_FRAME, _NATIVE_FRAME, _RUBY_FRAME, _PHP_FRAME)
# Names qualified by `::` (Rust, C++, Ruby, PHP's static calls) or `\` (PHP namespaces).
_SCOPED = re2.compile(r"\b([A-Za-z_]\w*(?:::[A-Za-z_]\w*)+)\b")
_NAMESPACED = re2.compile(r"\b([A-Z]\w*(?:\\[A-Z]\w*)+)\b")
# Modules an import names: `from 'dayjs/plugin/utc'`, `require("./lib/router")`, `import "a/b"`,
# Ruby's `require 'shop/cart'` and `require_relative '../lib/x'`.
_IMPORT = re2.compile(
    r"""(?:\bfrom\s+|\brequire\(\s*|\bimport\(\s*|\bimport\s+|\brequire(?:_relative)?\s+)['"]([@\w.][\w@./-]*)['"]"""
)
# Go imports, also in an `import ( ... )` group: a quoted path whose first part is a host
# (`"google.golang.org/grpc/balancer/grpclb"`, `"github.com/acme/app/store"`).
_GO_IMPORT = re2.compile(
    r'"((?:[a-z0-9-]+\.)+(?:com|org|io|in|net|dev|co|me|cc|xyz|info|edu|gov|cn|de|uk)/[\w.~-]+(?:/[\w.~-]+)*)"'
)
# Other stacks' lines: `at foo (src/a/b.js:12:5)`, `at com.x.Y.m(Y.java:42)`, `src/a.rs:12:5`, `a.go:12`.
_PATH_LINE = re2.compile(r"((?:[\w.@~-]+/)*[\w.@-]+\.[A-Za-z][A-Za-z0-9]*):(\d+)")
# A file path with at least one folder, or a bare file name with a source-like extension.
_PATH = re2.compile(
    r"(?:^|[\s\"'`(\[<=])((?:\.{0,2}/)?(?:[\w.@~-]+/)+[\w.@-]+\.[A-Za-z][A-Za-z0-9]*"
    r"|[\w-]+\.(?:py|pyi|pyx|js|jsx|ts|tsx|mjs|go|rs|java|kt|scala|rb|php|cs|c|h|cc|cpp|hpp|m|swift|"
    r"ex|exs|hs|lua|sh|zig|ml|dart|rst|md|toml|cfg|ini|yaml|yml|json|txt|html|css))\b"
)
# A link to a file of a repository host, whose path is a project file's when the link is to the
# project: `https://github.com/o/r/blob/<ref>/src/a.js#L98`, GitLab's `/-/blob/<ref>/...`, the raw
# file (`raw.githubusercontent.com/o/r/<ref>/...`), Bitbucket's `/src/<ref>/...`. The path is taken
# after the ref (one segment: a branch with a slash in it gives a longer path, which still ends
# with the file's and is matched by its suffix).
_HOST_LINK = re2.compile(
    r"https?://(?:www\.)?(?:github\.com/[\w.-]+/[\w.-]+/(?:blob|tree|raw)|gitlab\.com/(?:[\w.-]+/)+-/(?:blob|tree|raw)"
    r"|raw\.githubusercontent\.com/[\w.-]+/[\w.-]+|bitbucket\.org/[\w.-]+/[\w.-]+/src)"
    r"/[\w.-]+/((?:[\w.@~-]+/)*[\w.@-]+\.[A-Za-z][A-Za-z0-9]*)\b"
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
    for pattern in _STACKS:
        stack = [_frame(pattern, g) for _, g in _matches(pattern, text)]
        frames += reversed(stack)  # innermost last
    framed: dict[str, list[str]] = {}  # file name -> the frames' paths with it
    for f in frames:
        framed.setdefault(posixpath.basename(f.path), []).append(_bare(f.path))
    for _, (path, line) in _matches(_PATH_LINE, text):
        if len(frames) >= MAX_FRAMES:
            break
        same_name = framed.setdefault(posixpath.basename(path), [])
        if not _same_file_framed(_bare(path), same_name):
            frames.append(Frame(path, int(line), ""))
            same_name.append(_bare(path))
    written = sorted(
        [(span[0], g[0]) for span, g in _matches(_PATH, text)]
        + [(span[0], g[0]) for span, g in _matches(_HOST_LINK, text)]
    )
    paths = _unique([f.path for f in frames if not f.path.startswith("<")] + [path for _, path in written])
    errors = _unique(g[0] for _, g in _matches(_ERROR, text))
    dotted = _unique(
        [g[0] for _, g in _matches(_DOTTED, text) if not _looks_like_a_file_or_number(g[0])]
        + [d for _, g in _matches(_SCOPED, text) for d in _as_dotted(g[0].split("::"))]
        + [d for _, g in _matches(_NAMESPACED, text) for d in _as_dotted(g[0].split("\\"))]
    )
    imports = _unique(
        [
            d
            for _, g in _matches(_IMPORT, text)
            if not _GO_IMPORT.fullmatch(f'"{g[0]}"')
            for d in _as_dotted(_module_parts(g[0]))
        ]
        + [d for _, g in _matches(_GO_IMPORT, text) for d in _go_package(g[0])]
    )
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
        imports=tuple(d for d in imports if d not in dotted),
    )


def _bare(path: str) -> str:
    return path.lstrip("./")


def _same_file_framed(path: str, same_name: list[str]) -> bool:
    """Whether a frame already names this file (`same_name`: the framed paths with its file name):
    the same path, or one that ends with the other (`Parser.java` beside `com/acme/Parser.java`,
    `home/u/a.go` beside `/home/u/a.go`)."""
    return any(f == path or f.endswith("/" + path) or path.endswith("/" + f) for f in same_name)


def _frame(pattern: Any, groups: list[str]) -> Frame:
    """A frame of another language's stack, from its pattern's groups."""
    if pattern is _JVM_FRAME:  # the package's folders and the file: com/acme/json/Parser.java
        qualified, method, name, line = groups
        folders = []
        for part in qualified.rstrip(".").split("."):
            if part[:1].isupper():  # the class (and its inner classes) ends the package
                break
            folders.append(part)
        return Frame("/".join([*folders, name]), int(line), method)
    if pattern is _RUBY_FRAME:  # `block in Shop::Cart#total` -> total
        path, line, label = groups
        name = label.split()[-1] if label.split() else ""
        return Frame(path, int(line), _last_name(name.split("#")[-1].rstrip("?!")))
    if pattern is _PHP_FRAME:
        path, line, _owner, method = groups
        return Frame(path, int(line), method)
    function, path, line = groups
    return Frame(path.removeprefix("file://"), int(line), _last_name(function))


def _last_name(qualified: str) -> str:
    """`github.com/a/b/pkg.(*T).Method` -> Method, `core::fmt::write` -> write, `Object.parse` -> parse;
    "" for an anonymous function (`<anonymous>`, `{{closure}}`)."""
    tail = re.split(r"::|[./]", qualified.strip())[-1].strip("()*[]")
    return tail if re.fullmatch(r"[A-Za-z_$][\w$]*", tail) else ""


def _go_package(spec: str) -> list[str]:
    """A Go import path as the dotted names of its package's own file (a package is a folder; its
    main file is conventionally named after it): `google.golang.org/grpc/balancer/grpclb` ->
    balancer.grpclb.grpclb, and the same with one more leading part, since where the module's root
    ends (after the host and one or two parts) is not written in the path."""
    parts = spec.split("/")[1:]  # without the host
    out = []
    for root in (1, 2):
        rest = parts[root:]
        if rest and all(re.fullmatch(r"[A-Za-z_][\w-]*", p) for p in rest):
            out.append(".".join([*rest, rest[-1]]))
    return out


def _module_parts(spec: str) -> list[str]:
    """An import's module as its parts: `./lib/router` -> lib, router; `@scope/pkg/x` -> pkg, x."""
    return [p for p in spec.split("/") if p not in ("", ".", "..") and not p.startswith("@")]


def _as_dotted(parts: list[str]) -> list[str]:
    """A qualified name as the dotted names files.py maps to modules: as written, and without its
    first part (a crate, a vendor namespace or a package name, which a path seldom repeats)."""
    parts = [p.removesuffix(".js").removesuffix(".ts") for p in parts if p]
    out = [".".join(parts)] if len(parts) >= 2 else []
    if len(parts) >= 3:
        out.append(".".join(parts[1:]))
    return [d for d in out if not _looks_like_a_file_or_number(d)]


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
