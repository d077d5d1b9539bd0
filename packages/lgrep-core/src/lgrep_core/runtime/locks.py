"""Exclusive process locks that say who holds them: an `flock` on a small file holding the owner's pid;
and the check that the folders lgrep keeps them in (the cache dir, a socket's folder) are the user's.

The kernel drops a lock when its process dies, so a lock left by a killed process is free again; the
pid in the file is only for messages ("another lgrep process (pid 123) ..."), never a reason to signal
a process (`lock_holder_pids` asks the kernel who holds a lock).

A folder another user can write lets them plant a socket that lgrep's commands talk to, a lock that
names any process, or an index: `check_private_dir` refuses a folder that is not the user's or that
group or others may write, and any folder above it that someone else could rename it from under
(as ssh does with ~/.ssh). Lock files another user owns or may write are refused the same way.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from lgrep_core.domain.errors import ConfigError, StorageError

__all__ = [
    "acquire_pid_lock",
    "check_owned_file",
    "check_private_dir",
    "ensure_private_dir",
    "lock_holder",
    "lock_holder_pids",
    "open_lock_file",
    "release_pid_lock",
]

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def check_private_dir(path: Path, *, what: str = "lgrep's cache dir") -> None:
    """Refuse `path` (a folder lgrep keeps sockets, locks or indexes in) unless this user owns it and
    nobody else may write it or a folder above it (a sticky, root-owned folder like /tmp is fine above).

    Raises:
        ConfigError: naming the folder and the command that fixes it.
    """
    try:
        real = path.resolve(strict=True)
        info = real.stat()
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot inspect {what} {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{what} {path} is not a folder")
    me = os.geteuid()
    if info.st_uid != me:
        raise ConfigError(
            f"{what} {real} belongs to user id {info.st_uid}, not to you ({me}): lgrep keeps its sockets, "
            "locks and indexes only in a folder you own; set LGREP_CACHE_DIR (or index.cache_dir) to one"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & _OTHERS_WRITE:
        raise ConfigError(
            f"{what} {real} can be written by other users (mode {mode:04o}): run `chmod go-w {real}`, "
            "or set LGREP_CACHE_DIR to a folder only you can write"
        )
    for parent in real.parents:
        try:
            above = parent.stat()
        except OSError as exc:
            raise ConfigError(f"cannot inspect {parent}, above {what} {real}: {exc.strerror}") from None
        sticky = bool(above.st_mode & stat.S_ISVTX)
        if above.st_uid not in (me, 0) or (above.st_mode & _OTHERS_WRITE and not sticky):
            raise ConfigError(
                f"{what} {real} lies in {parent}, which another user can change (owner {above.st_uid}, mode "
                f"{stat.S_IMODE(above.st_mode):04o}): they could swap {what} for their own; set LGREP_CACHE_DIR "
                "to a folder under your home"
            )


def ensure_private_dir(path: Path, *, what: str = "lgrep's cache dir") -> None:
    """Create `path` (0700) if it is missing, then `check_private_dir` it.

    Raises:
        ConfigError: it cannot be created, or it is not private (see check_private_dir).
    """
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(f"cannot create {what} {path}: {exc.strerror}") from None
    check_private_dir(path, what=what)


def check_owned_file(fd: int, path: Path, *, what: str = "the lock file") -> None:
    """Refuse the open file `fd` unless it is a regular file of this user that nobody else may write.

    Raises:
        ConfigError: naming the file and what to do.
    """
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{what} {path} is not a regular file: move it away")
    if info.st_uid != os.geteuid():
        raise ConfigError(
            f"{what} {path} belongs to user id {info.st_uid}, not to you ({os.geteuid()}): lgrep does not use "
            "another user's files; remove it (the folder it is in is not private either: check it)"
        )
    if stat.S_IMODE(info.st_mode) & _OTHERS_WRITE:
        raise ConfigError(
            f"{what} {path} can be written by other users (mode {stat.S_IMODE(info.st_mode):04o}): "
            f"run `chmod 600 {path}`"
        )


def open_lock_file(path: Path) -> int:
    """A descriptor of the lock file at `path`, created 0600 and never opened through a symlink.

    Raises StorageError when it cannot be opened, ConfigError when it is another user's or others
    may write it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise StorageError(f"cannot open the lock file {path}: {exc.strerror}") from None
    try:
        check_owned_file(fd, path)
    except ConfigError:
        os.close(fd)
        raise
    return fd


def acquire_pid_lock(path: Path) -> tuple[int | None, str]:
    """Take the lock at `path` without waiting: `(fd, "")` when taken (this pid is written in the
    file), `(None, holder)` when another process holds it (`holder`: its pid, or "unknown").

    Raises StorageError when the file cannot be opened (never through a symlink) or locked, and
    ConfigError when it is another user's or others may write it."""
    fd = open_lock_file(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None, holder
        raise StorageError(f"cannot lock {path}: {exc.strerror}") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd, ""


def release_pid_lock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def lock_holder(path: Path) -> str | None:
    """The pid (as written) of the process holding the lock at `path`, or None if nobody holds it.
    Opens the file read-only: asking never creates it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def lock_holder_pids(path: Path) -> set[int] | None:
    """The pids the kernel says hold an flock on the file at `path` (Linux: /proc/locks), or None
    where the kernel does not say (another OS)."""
    try:
        info = path.stat()
        with Path("/proc/locks").open(encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (blocked waiters carry "->" and are skipped)
    inode = f":{info.st_ino}"
    pids: set[int] = set()
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(inode):
            major, minor = (int(part, 16) for part in fields[5].split(":")[:2])
            if (major, minor) == (os.major(info.st_dev), os.minor(info.st_dev)) and fields[4].isdigit():
                pids.add(int(fields[4]))
    return pids
