"""Reading and writing the files the installers edit, with the rule each scope needs.

**Project scope** (`confine=<project root>`): the files are a repository's, and a repository can
plant symbolic links: `.mcp.json -> ~/.claude.json` would have lgrep copy the user's settings
(tokens included) into the repository, `.claude -> ~/.claude` would have it write into the user's
global settings. So no link below the project root is ever followed, whether it points out of the
project or not: every folder on the way is opened relative to the one before with O_NOFOLLOW
(`openat`), the file itself with O_NOFOLLOW, and a link anywhere on the way is refused with an error
that names it, before anything is read, printed or written. The root itself is the folder the user
named (resolved by the command), so a link there is the user's own choice. Anything that is not a
regular file (a FIFO, a device, a folder) is refused too.

**User scope** (`confine=None`): the files are the user's own; a config that is a link into a
dotfiles repository stays a link: it is read through, and written through to its target (a
temporary file beside the target, renamed over it, the target's mode kept).

**Size**: a file is read whole (it is parsed whole, and edited as text), so what is read is capped,
checked on the open file (fstat) and by reading at most one byte past the cap (a file that grows
meanwhile, or a device, is refused too): a project's files at PROJECT_MAX_BYTES, the `.lgrep.yaml`
cap (a planted 512 MB `.vscode/mcp.json` would otherwise take a gigabyte of memory to read and
decode), the user's own at USER_MAX_BYTES.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from lgrep_core.domain.errors import ConfigError
from lgrep_core.settings.config_sources import MAX_CONFIG_BYTES

__all__ = ["PROJECT_MAX_BYTES", "USER_MAX_BYTES", "delete", "exists", "read_text", "write_text"]

PROJECT_MAX_BYTES = MAX_CONFIG_BYTES
# Claude Code keeps its whole state in ~/.claude.json (every project's settings and, in versions of
# 2025, their prompt history): users have reported 15 MB, 65 MB and 101 MB files
# (anthropics/claude-code#10192, #6394, #2593), which lgrep must still read to add one member. A bound
# still, well past those: a runaway file, or a link to a device, is refused rather than read.
USER_MAX_BYTES = 256_000_000

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
# openat/mkdirat/unlinkat/renameat with O_NOFOLLOW: every POSIX system lgrep runs on.
# (os.replace takes the same dir_fd arguments as os.rename; only os.rename is listed.)
_AT = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd and bool(_NOFOLLOW and _DIRECTORY)


def _link_refusal(link: Path, root: Path) -> ConfigError:
    try:
        target = f" (to {link.readlink()})"
    except OSError:
        target = ""
    return ConfigError(
        f"{link} is a symbolic link{target}; lgrep does not follow links in a project's files, since a "
        "repository could point them at your own settings. Replace it with a regular file or folder "
        f"(or remove it) and run the command again, or install for your user (--user) instead of in {root}"
    )


def _not_regular(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path} is not {what}; lgrep leaves it alone")


def _parts(path: Path, root: Path) -> tuple[str, ...]:
    parts = path.relative_to(root).parts
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"{path} is not a file inside {root}")
    return parts


@contextmanager
def _folder(path: Path, root: Path, *, create: bool) -> Iterator[int | None]:
    """A descriptor of `path`'s folder, reached from `root` one folder at a time without following a
    link (None when a folder on the way is missing and `create` is false)."""
    parts = _parts(path, root)
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        here = root
        for name in parts[:-1]:
            here = here / name
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    yield None
                    return
                with suppress(FileExistsError):  # made meanwhile: opened (and checked) below like any other
                    os.mkdir(name, 0o777, dir_fd=fd)
                nxt = _open_dir(name, fd, here, root)
            except OSError as exc:
                raise _component_error(exc, name, fd, here, root) from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _open_dir(name: str, fd: int, here: Path, root: Path) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _component_error(exc, name, fd, here, root) from None


def _component_error(exc: OSError, name: str, fd: int, here: Path, root: Path) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:
            if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                return _link_refusal(here, root)
        except OSError:
            pass
        return _not_regular(here, "a folder")
    return ConfigError(f"cannot open {here}: {exc.strerror}")


def _check_components(path: Path, root: Path) -> None:
    """Without openat (not POSIX): every component below `root` checked not to be a link."""
    here = root
    for name in _parts(path, root):
        here = here / name
        if here.is_symlink() or getattr(here, "is_junction", lambda: False)():
            raise _link_refusal(here, root)


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; lgrep leaves it alone") from None


def read_text(path: Path, *, confine: Path | None = None) -> str | None:
    """The file's text, or None when it does not exist. Raises ConfigError when it is not UTF-8, and,
    under `confine`, when it or a folder on its way is a link or it is not a regular file."""
    if confine is None:
        try:
            f = path.open("rb")
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise _not_regular(path, "a file") from None
        with f:
            return _decode(_read_capped(f, path, USER_MAX_BYTES, "of a settings file of yours"), path)
    if not _AT:
        _check_components(path, confine)
        return _read_regular(path, str(path), None, confine)
    with _folder(path, confine, create=False) as folder:
        return None if folder is None else _read_regular(path, path.name, folder, confine)


def _read_regular(path: Path, name: str, folder: int | None, confine: Path) -> str | None:
    # O_NONBLOCK: a FIFO planted in the repository must not hang lgrep in open().
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_refusal(path, confine) from None
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise _not_regular(path, "a regular file")
        return _decode(_read_capped(f, path, PROJECT_MAX_BYTES, "of a project's settings file"), path)


def _read_capped(f: BinaryIO, path: Path, cap: int, what: str) -> bytes:
    """The open file's bytes, at most `cap` of them: its size is checked first, then no more than one
    byte past the cap is read (a file that grew since, or one whose size says nothing, like a device)."""
    size = os.fstat(f.fileno()).st_size
    if size > cap:
        raise _too_big(f"{path} is {size:,} bytes, more than", cap, what)
    data = f.read(cap + 1)
    if len(data) > cap:
        raise _too_big(f"{path} holds more than", cap, what)
    return data


def _too_big(start: str, cap: int, what: str) -> ConfigError:
    return ConfigError(f"{start} the {cap:,} bytes lgrep reads {what}; lgrep leaves it alone")


def exists(path: Path, *, confine: Path | None = None) -> bool:
    """Whether something is at `path` (a link counts, so that it is refused rather than skipped)."""
    if confine is None:
        return path.exists()
    if not _AT:
        _check_components(path, confine)
        return os.path.lexists(path)
    with _folder(path, confine, create=False) as folder:
        if folder is None:
            return False
        try:
            os.stat(path.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True


def write_text(path: Path, text: str, *, confine: Path | None = None) -> None:
    """Replace the file's content atomically: a temporary file in the same folder, its mode set to
    the old file's (or the umask's default), renamed over it. Folders on the way are created."""
    data = text.encode("utf-8")
    if confine is not None and _AT:
        with _folder(path, confine, create=True) as folder:
            assert folder is not None
            try:
                old = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            else:
                if stat.S_ISLNK(old.st_mode):
                    raise _link_refusal(path, confine)
                if not stat.S_ISREG(old.st_mode):
                    raise _not_regular(path, "a regular file")
                mode = old.st_mode & 0o7777
            _replace(data, path, mode, folder)
        return
    if confine is not None:
        _check_components(path, confine)
    elif path.is_symlink():
        path = Path(os.path.realpath(path))  # the user's link (dotfiles) stays: its target is written
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    folder = os.open(path.parent, os.O_RDONLY | _DIRECTORY | _CLOEXEC) if _AT else None
    try:
        _replace(data, path, mode, folder)
    finally:
        if folder is not None:
            os.close(folder)


def _replace(data: bytes, path: Path, mode: int, folder: int | None) -> None:
    """Write `data` to a new temporary file beside `path` (in `folder` when given, by name) with
    `mode`, and rename it over `path`."""
    tmp_path = path.with_name(f".{path.name}.{secrets.token_hex(4)}.lgrep-tmp")
    name, tmp = (path.name, tmp_path.name) if folder is not None else (str(path), str(tmp_path))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if hasattr(os, "fchmod"):
                os.fchmod(out.fileno(), mode)
        if not hasattr(os, "fchmod"):
            tmp_path.chmod(mode)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


def delete(path: Path, *, confine: Path | None = None, prune_up_to: Path | None = None) -> None:
    """Remove the file (a link itself, never its target), then the folders it leaves empty, up to
    (not including) `prune_up_to`."""
    if confine is not None and _AT:
        with _folder(path, confine, create=False) as folder:
            if folder is None:
                return
            with suppress(FileNotFoundError):
                os.unlink(path.name, dir_fd=folder)
        stop = prune_up_to
        here = path.parent
        while stop is not None and here != stop and stop in here.parents and confine in here.parents:
            with _folder(here, confine, create=False) as parent:
                if parent is None:
                    return
                try:
                    os.rmdir(here.name, dir_fd=parent)  # not empty, or a link: stays
                except OSError:
                    return
            here = here.parent
        return
    if confine is not None:
        _check_components(path, confine)
    path.unlink(missing_ok=True)
    here, stop = path.parent, prune_up_to
    while stop is not None and here != stop and stop in here.parents:
        try:
            here.rmdir()
        except OSError:
            return
        here = here.parent


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
