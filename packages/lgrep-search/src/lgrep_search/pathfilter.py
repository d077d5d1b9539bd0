"""The `--path` filter: which project-relative paths a folder, file name or path glob selects.

A glob comes from the user (or, through a server, from any client), so it is matched in time linear
in the path: it is translated once per pattern into an re2 regex (re2 never backtracks), with the
semantics of `fnmatch.fnmatchcase` (`*` and `?` cross folders, `[...]` and `[!...]` sets, no escapes).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path

import re2
from lgrep_core.domain.errors import InvalidRequestError

__all__ = ["MAX_PATTERN_CHARS", "path_matcher", "relative_to_root", "translate"]

# A longer filter is no path anyone typed; it also bounds the automaton built per query.
MAX_PATTERN_CHARS = 4096

_GLOB_CHARS = re.compile(r"[*?\[]")
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.never_capture = True


def _literal(ch: str) -> str:
    return ch if ch.isalnum() and ch.isascii() else f"\\x{{{ord(ch):x}}}"


def _set_body(stuff: str) -> str:
    """A Python set body (as fnmatch builds it) as an re2 set body: the same escapes, and every '['
    escaped, which re2 would otherwise read as the start of a POSIX class (`[:alpha:]`)."""
    out: list[str] = []
    i = 0
    while i < len(stuff):
        ch = stuff[i]
        if ch == "\\" and i + 1 < len(stuff):
            out.append(_literal(stuff[i + 1]))
            i += 2
            continue
        if ch == "-" and 0 < i < len(stuff) - 1:
            out.append("-")  # a range; fnmatch escaped every other hyphen
        else:
            out.append(_literal(ch))
        i += 1
    return "".join(out)


def translate(pattern: str) -> str:
    """The re2 regex (to be matched in full) of a shell glob, meaning exactly what
    `fnmatch.fnmatchcase` means by it (the bracket rules are those of CPython 3.11's `translate`)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(_literal("["))
                continue
            stuff = pattern[i:j]
            if "-" not in stuff:
                stuff = stuff.replace("\\", r"\\")
            else:
                chunks: list[str] = []
                k = i + 2 if pattern[i] == "!" else i + 1
                while True:
                    k = pattern.find("-", k, j)
                    if k < 0:
                        break
                    chunks.append(pattern[i:k])
                    i = k + 1
                    k = k + 3
                chunk = pattern[i:j]
                if chunk:
                    chunks.append(chunk)
                else:
                    chunks[-1] += "-"
                for k in range(len(chunks) - 1, 0, -1):  # drop empty ranges, as fnmatch does
                    if chunks[k - 1][-1] > chunks[k][0]:
                        chunks[k - 1] = chunks[k - 1][:-1] + chunks[k][1:]
                        del chunks[k]
                stuff = "-".join(s.replace("\\", r"\\").replace("-", r"\-") for s in chunks)
            i = j + 1
            if not stuff:
                out.append("[^\\x00-\\x{10ffff}]")  # an empty set: matches nothing
            elif stuff == "!":
                out.append(".")
            elif stuff[0] == "!":
                out.append(f"[^{_set_body(stuff[1:])}]")
            else:
                out.append(f"[{_set_body(stuff if stuff[0] != '^' else chr(92) + stuff)}]")
        else:
            out.append(_literal(c))
    return f"(?s:{''.join(out)})"


@functools.lru_cache(maxsize=64)
def path_matcher(pattern: str) -> Callable[[str], bool]:
    """A test for the project-relative paths a `--path` value selects.

    `src/auth` and `src/auth/` select everything under that folder (and a file of that path); a
    glob without a slash (`*.go`) matches file names anywhere; otherwise the glob matches the whole
    relative path, `*` crossing folders (`src/*.py` includes src/a/b.py), and `**/` may also match
    nothing (`src/**/*.py` includes src/a.py).

    Raises InvalidRequestError for a pattern over MAX_PATTERN_CHARS characters.
    """
    pattern = pattern.strip().removeprefix("./")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidRequestError(
            f"the path filter is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}"
        )
    if not _GLOB_CHARS.search(pattern):
        folder = pattern.rstrip("/")
        return lambda path: path == folder or path.startswith(folder + "/")
    if "/" not in pattern:
        by_name = re2.compile(translate(pattern), _OPTIONS)
        return lambda path: by_name.fullmatch(path.rsplit("/", 1)[-1]) is not None
    regex = translate(pattern)
    if "**/" in pattern:
        regex = f"{regex}|{translate(pattern.replace('**/', ''))}"
    whole = re2.compile(regex, _OPTIONS)
    return lambda path: whole.fullmatch(path) is not None


def relative_to_root(pattern: str, root: Path) -> str:
    """A `--path` value relative to the project root: an absolute path (or glob) inside `root` is
    made relative to it (the root itself gives ''); anything else is returned as it is.

    Symbolic links in the part before the first glob character are resolved, as the root is.

    Raises InvalidRequestError for an absolute path outside the root.
    """
    text = pattern.strip()
    if not Path(text).is_absolute():
        return pattern
    parts = Path(text).parts
    fixed = next((i for i, part in enumerate(parts) if _GLOB_CHARS.search(part)), len(parts))
    head = Path(*parts[:fixed])
    tail = list(parts[fixed:])
    candidates = [Path(os.path.normpath(head))]
    with contextlib.suppress(OSError, RuntimeError):
        candidates.append(head.resolve())
    for base in (root, root.resolve()):
        for candidate in candidates:
            try:
                rel = candidate.relative_to(base)
            except ValueError:
                continue
            joined = "/".join([*rel.parts, *tail])
            return joined + "/" if text.endswith("/") and joined else joined
    raise InvalidRequestError(f"the path filter {text!r} is outside the project root {root}")
