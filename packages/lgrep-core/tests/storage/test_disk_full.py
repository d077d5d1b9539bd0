"""A full disk or quota, however a storage layer reports it, is told apart from a damaged index."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest
from lgrep_core.domain.errors import StorageError
from lgrep_core.storage.layout import DiskFullError, disk_full_error


def _chained() -> BaseException:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise ValueError("commit failed") from inner
    except ValueError as outer:
        return outer


@pytest.mark.parametrize(
    "exc",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        RuntimeError(
            "LanceError(IO): Generic LocalFileSystem error: failed to write: No space left on device (os error 28)"
        ),
        sqlite3.OperationalError("database or disk is full"),
        _chained(),
    ],
)
def test_a_full_disk_is_recognised(tmp_path: Path, exc: BaseException) -> None:
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "data").write_bytes(b"x" * 2_000_000)
    error = disk_full_error(exc, tmp_path / "index", "lgrep index /p")
    assert isinstance(error, DiskFullError) and isinstance(error, StorageError)
    assert "is full" in error.message and "the index takes 2.0 MB so far" in error.message
    assert "`lgrep index /p`" in error.message and "--force" not in error.message


@pytest.mark.parametrize(
    "exc",
    [OSError(errno.EIO, "Input/output error"), ValueError("bad footer"), RuntimeError("os error 280)")],
)
def test_other_failures_are_not_a_full_disk(tmp_path: Path, exc: BaseException) -> None:
    assert disk_full_error(exc, tmp_path, "lgrep index /p") is None
