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

`open_project_file` opens a project file by such a path the way a server must, when the project may
change under it: name by name, each relative to the folder opened before it, none followed if it is a
symbolic link. A check of the path followed by an open of it (even with O_NOFOLLOW) would let a folder
swapped for a symlink between the two lead the open out of the project.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Container
from pathlib import Path

from lgrep_core.domain.errors import InvalidRequestError, NotFoundError

__all__ = [
    "collides",
    "disk_path",
    "display_name",
    "display_path",
    "is_utf8",
    "open_project_file",
    "read_project_file",
    "request_root",
    "undisplay_name",
]

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


def request_root(text: str) -> Path:
    """The path a request names as its project root, checked but not looked up: lgrep_core.app.scope's
    `project_for` then says which project it is (some purposes take a path that no longer exists).

    Raises:
        InvalidRequestError: empty, with a NUL, or relative (a server must not resolve it in its own cwd).
    """
    if not text or not text.strip():
        raise InvalidRequestError("the request names no project root")
    if "\x00" in text:
        raise InvalidRequestError("the project root contains a NUL character")
    path = Path(text)
    if not path.is_absolute():
        raise InvalidRequestError(f"the project root must be an absolute path, got {text!r}")
    return path


def existing_project_root(text: str) -> Path:
    """A project root as a request names it: an absolute path to an existing folder, resolved.

    Raises:
        InvalidRequestError: empty, with a NUL, or relative (a server must not resolve it in its own cwd).
        NotFoundError: not an existing folder.
    """
    path = request_root(text)
    if not path.is_dir():
        raise NotFoundError(f"{text} is not a directory")
    return path.resolve()


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", 0)
# O_NONBLOCK: a FIFO planted under an indexed name must not hang the open (it is refused after fstat).
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

# Tests only: called with (folder fd, name) before each name of a path is opened below its folder,
# so a test can swap a folder for a symlink exactly between two steps of an open.
before_open_hook: Callable[[int, str], None] | None = None


def open_project_file(root: Path, rel: str) -> tuple[int, os.stat_result]:
    """Open the regular file that the displayed project-relative path `rel` names, for reading, and
    return its descriptor (the caller closes it) and its `fstat`.

    The root is opened as a folder, then each name below it relative to the folder opened before it
    (`dir_fd`), with O_NOFOLLOW (and O_DIRECTORY for folders): a name that is a symbolic link is
    refused wherever it sits, even if it was swapped in after any earlier check of the path. Names
    are taken literally when they exist, else decoded from their escapes (as `disk_path`).

    Raises:
        NotFoundError: a name of the path does not exist (the file was deleted or moved), or cannot
            be opened.
        InvalidRequestError: `rel` is not a project-relative path, a name of it is a symbolic link,
            or it names something other than a regular file.
    """
    names = rel.split("/")
    if not rel or "\x00" in rel or any(name in ("", ".", "..") for name in names):
        raise InvalidRequestError(f"{rel!r} is not a path inside the project")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise NotFoundError(f"cannot open the project {root}: {exc.strerror}") from None
    try:
        for depth, name in enumerate(names):
            last = depth == len(names) - 1
            child = _open_name(fd, name, _FILE_FLAGS if last else _DIR_FLAGS, rel, root)
            os.close(fd)
            fd = child
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidRequestError(f"{rel} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_project_file(root: Path, rel: str, limit: int) -> tuple[bytes, os.stat_result]:
    """At most `limit` bytes of a project file, opened as `open_project_file` opens it, and the
    `fstat` of the file they were read from (never a second look-up of the path).

    Raises:
        NotFoundError, InvalidRequestError: as `open_project_file`; NotFoundError also when reading fails.
    """
    fd, st = open_project_file(root, rel)
    try:
        data = read_up_to(fd, limit)
    except OSError as exc:
        raise NotFoundError(f"cannot read {rel} in {root}: {exc.strerror}") from None
    finally:
        os.close(fd)
    return data, st


def read_up_to(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from `fd`, read 1 MiB at a time (a short read is not the end)."""
    parts: list[bytes] = []
    left = limit
    while left > 0:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _open_name(folder: int, name: str, flags: int, rel: str, root: Path) -> int:
    """Open one name of `rel` below the folder descriptor `folder` (see `open_project_file`)."""
    candidates = [name]
    if "\\" in name and (real := undisplay_name(name)) is not None:
        candidates.append(real)  # the literal name first, as disk_path
    for candidate in candidates:
        if before_open_hook is not None:
            before_open_hook(folder, candidate)
        try:
            return os.open(candidate, flags, dir_fd=folder)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_symlink(folder, candidate):
                raise InvalidRequestError(
                    f"{rel} is a symbolic link or lies under one; lgrep does not follow it"
                ) from None
            if exc.errno == errno.ENOTDIR:
                break  # a file where the path has a folder: the path names nothing
            raise NotFoundError(f"cannot open {rel} in {root}: {exc.strerror}") from None
    raise NotFoundError(f"{rel} no longer exists in {root}")


def _is_symlink(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False
