"""File names that are not valid UTF-8: how they appear in lgrep's paths, and how such a path leads
back to the file on disk.

A POSIX file name is a string of bytes; Python hands one that does not decode as UTF-8 over with each
undecodable byte as a lone surrogate (U+DC80-U+DCFF), which neither JSON, the terminal nor the index
can hold. The walker stores, prints and returns every project-relative path with each of its names
passed through `display_name`:

* a name that is valid UTF-8 and holds no backslash is kept as it is (nearly every name);
* any other name is escaped: each undecodable byte becomes `\\xNN` (two lower-case hex digits, what
  `bytes.decode("utf-8", "backslashreplace")` writes) and each backslash becomes `\\\\`. So the byte
  0xE9 in `caf\\xe9.py` shows as `caf\\xe9.py`, and the escaped name reads back to its exact bytes.

A name that is valid UTF-8 and holds a backslash is shown as it is, not escaped: such a name is a
normal file name that a user or an agent can type and open. It may look exactly like an escaped name:
a file literally named `caf\\xe9.py` and a file named `caf` + byte 0xE9 + `.py` both show as
`caf\\xe9.py`. The walker then keeps the literal one and skips the other (`collides`), and
`disk_path` tries the literal name before decoding the escape, so every indexed path names exactly
one file.

Ignore patterns and `--path` filters match these displayed paths.
"""

from __future__ import annotations

import os
import re
from collections.abc import Container
from pathlib import Path

__all__ = ["collides", "disk_path", "display_name", "display_path", "is_utf8", "undisplay_name"]

# The two escapes `display_name` writes; any other backslash in a displayed name is a literal one.
_ESCAPE = re.compile(r"\\(?:\\|x[0-9a-f]{2})")


def is_utf8(name: str) -> bool:
    """Whether text is valid Unicode, not raw bytes smuggled in as surrogates (os.fsdecode)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display_name(name: str) -> str:
    """The name as lgrep shows it: as it is when valid UTF-8, else escaped (see the module doc)."""
    if name.isascii() or is_utf8(name):
        return name
    return os.fsencode(name).replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def display_path(rel: str) -> str:
    """`display_name` of each '/'-separated name of a relative path."""
    if rel.isascii() or is_utf8(rel):
        return rel
    return "/".join(display_name(part) for part in rel.split("/"))


def undisplay_name(shown: str) -> str | None:
    """The real name (with surrogates for its undecodable bytes) of a name `display_name` escaped,
    or None when `shown` is not such an escaped name (then it can only be a literal name)."""
    if "\\" not in shown:
        return None
    raw = bytearray()
    pos = 0
    for match in _ESCAPE.finditer(shown):
        literal = shown[pos : match.start()]
        if "\\" in literal:
            return None  # a backslash that is not one of our escapes
        raw += literal.encode("utf-8")
        token = match.group()
        raw += b"\\" if token == "\\\\" else bytes((int(token[2:], 16),))
        pos = match.end()
    rest = shown[pos:]
    if "\\" in rest:
        return None
    raw += rest.encode("utf-8")
    name = os.fsdecode(bytes(raw))
    # Escaping is only ever applied to names that are not valid UTF-8.
    return name if not is_utf8(name) else None


def collides(name: str, siblings: Container[str]) -> bool:
    """Whether an escaped `name` shows exactly like another name of the same folder (`siblings`
    holds the folder's real names); the walker then skips it, keeping the literal name."""
    shown = display_name(name)
    return shown != name and shown in siblings


def disk_path(root: Path, rel: str) -> Path:
    """The file on disk that the displayed project-relative path `rel` names.

    Each name is taken literally when a file or folder of that name exists, else decoded from its
    escapes (`undisplay_name`); a path that names nothing comes back taken literally."""
    if "\\" not in rel:
        return Path(root, rel)
    current = Path(root)
    for part in rel.split("/"):
        literal = current / part
        if "\\" in part and not os.path.lexists(literal):
            real = undisplay_name(part)
            if real is not None:
                current /= real
                continue
        current = literal
    return current


def existing_project_root(text: str) -> Path:
    """A project root as a request names it: an absolute path to an existing folder, resolved.

    Raises:
        InvalidRequestError: empty, with a NUL, or relative (a server must not resolve it in its own cwd).
        NotFoundError: not an existing folder.
    """
    from lgrep_core.errors import InvalidRequestError, NotFoundError

    if not text or not text.strip():
        raise InvalidRequestError("the request names no project root")
    if "\x00" in text:
        raise InvalidRequestError("the project root contains a NUL character")
    path = Path(text)
    if not path.is_absolute():
        raise InvalidRequestError(f"the project root must be an absolute path, got {text!r}")
    if not path.is_dir():
        raise NotFoundError(f"{text} is not a directory")
    return path.resolve()
