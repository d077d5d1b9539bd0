"""The one-writer lock of a project's index (and of its release index), and the cache folders it lives in."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import time
from pathlib import Path

from lgrep_core.domain.errors import IndexBusyError, StorageError
from lgrep_core.storage.schema import project_dir

__all__ = ["WriteLock", "make_dir", "versions_lock"]

log = logging.getLogger(__name__)


class WriteLock:
    """One writer per project: an advisory `flock` that the kernel drops if the holder dies."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def acquire(
        self,
        timeout_s: float,
        project_root: Path,
        *,
        doing: str = "indexing",
        advice: str = "wait for it to finish, or pass --wait SECONDS to queue behind it",
    ) -> None:
        """Raises:
        IndexBusyError: another process holds the lock for longer than `timeout_s`; the message says
            what it is `doing` and what the user can do (`advice`: only flags the caller has).
        """
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot open the lock file {self._path}: {exc.strerror}") from None
        deadline = time.monotonic() + timeout_s
        delay = 0.05
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise StorageError(f"cannot lock {self._path}: {exc.strerror}") from None
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise IndexBusyError(
                        f"another lgrep process (pid {holder}) is indexing {project_root}, so lgrep cannot "
                        f"go on {doing} it now; {advice}"
                    ) from None
                if delay == 0.05:
                    log.warning("waiting for another lgrep process (pid %s) indexing %s", holder, project_root)
                # Polling, not sleeping to paper over a race: flock has no timed wait.
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def versions_lock(cache_dir: Path, root: Path) -> WriteLock:
    """The lock of the one writer of a repository's release index (`lgrep index --tags`), in the
    project's folder whatever store the index lives in; `lgrep clean` takes it too."""
    folder = project_dir(cache_dir, root.resolve())
    make_dir(folder)
    return WriteLock(folder / "versions.lock")


def make_dir(path: Path) -> None:
    """Create a folder of the cache (0700), or say clearly why it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:
        raise StorageError(f"cannot use the cache folder {path}: a file of that name is in the way") from None
    except OSError as exc:
        raise StorageError(
            f"cannot use the cache folder {path}: {exc.strerror}; set LGREP_CACHE_DIR (or index.cache_dir in "
            "your config file) to a folder you can write"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise StorageError(f"cannot use the cache folder {path}: it is not writable")
