"""Exclusive process locks that say who holds them: an `flock` on a small file holding the owner's pid.

The kernel drops a lock when its process dies, so a lock left by a killed process is free again; the
pid in the file is only for messages ("another lgrep process (pid 123) ...").
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from lgrep_core.errors import StorageError

__all__ = ["acquire_pid_lock", "lock_holder", "release_pid_lock"]


def acquire_pid_lock(path: Path) -> tuple[int | None, str]:
    """Take the lock at `path` without waiting: `(fd, "")` when taken (this pid is written in the
    file), `(None, holder)` when another process holds it (`holder`: its pid, or "unknown").

    Raises StorageError when the file cannot be opened (never through a symlink) or locked."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise StorageError(f"cannot open the lock file {path}: {exc.strerror}") from None
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
