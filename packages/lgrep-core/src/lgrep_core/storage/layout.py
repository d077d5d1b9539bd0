"""The files of a project's index folder that lgrep itself writes, and what they say about its state.

Imports neither LanceDB nor Arrow, so a command that only asks "is there an index, and who is
building it" stays light. Layout (ADR 0006):

  <cache>/<project>/CURRENT        names the published generation (replaced atomically)
  <cache>/<project>/writer.lock    flock of the one writer; holds its pid
  <cache>/<project>/gen-*/         one generation: meta.json, changes.json, manifest.sqlite, lance/
  <cache>/<project>/history.z      the project's recent git history (lgrep_core.domain.history),
                                   beside the generations: it describes the repository, not an index
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import NotFoundError, StorageError
from lgrep_core.domain.history import History
from lgrep_core.domain.models import ProjectState
from lgrep_core.runtime.locks import lock_holder

__all__ = [
    "CHANGES_FILE",
    "CURRENT_POINTER",
    "HISTORY_FILE",
    "META_FILE",
    "DiskFullError",
    "FileRecord",
    "IndexState",
    "disk_full_error",
    "generations",
    "index_state",
    "is_generation_name",
    "is_remote_location",
    "not_ready_error",
    "project_dir",
    "read_history",
    "read_meta_file",
    "read_pointer",
    "write_history",
    "writer_pid",
]

# The file naming the published generation; replaced atomically when a rebuild completes.
CURRENT_POINTER = "CURRENT"
# Per generation: identity and bookkeeping, including the commit counter and table versions readers use.
META_FILE = "meta.json"
# Per generation: which files each recent commit changed, so a reader can refresh only those.
CHANGES_FILE = "changes.json"
# Per project: its recent git history (read_history, write_history).
HISTORY_FILE = "history.z"
_GENERATION_NAME = re.compile(r"gen-[0-9a-f]{1,20}-[0-9]{1,10}")


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A manifest row: what a file was when it was indexed.

    `ctime_ns` and `inode` are None in a row an older lgrep wrote (its manifest had no such columns):
    unknown, so `matches` says the file may have changed and the next run re-reads it once (its
    content hash decides whether anything is re-chunked) and records them."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    language: str
    chunks: int
    ctime_ns: int | None = None
    inode: int | None = None

    def matches(self, size: int, mtime_ns: int, ctime_ns: int, inode: int, *, unknown_matches: bool = False) -> bool:
        """Whether a file's stat says it is still the file this record describes, as git decides it:
        the same size and mtime, and the same ctime (which, unlike the mtime, no process can set back)
        and inode (a rename over the path replaces it). A stat only: no read. A ctime or inode the
        record does not know counts as a difference, or as a match when `unknown_matches` (a hint
        such as a result's `stale` flag, which then says what size and mtime alone say)."""
        if self.size != size or self.mtime_ns != mtime_ns:
            return False
        if self.ctime_ns is None or self.inode is None:
            return unknown_matches
        return self.ctime_ns == ctime_ns and self.inode == inode


# Where a project's index stands, as a reader sees it. The enum is a domain type (it crosses the wire
# as lgrep.v1.ProjectState); this name stays for the storage code and its callers.
IndexState = ProjectState


def project_dir(cache_dir: Path, root: Path) -> Path:
    """`<cache>/<sha256(absolute project path)[:12]>` (DESIGN section 3)."""
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return cache_dir / digest[:12]


def read_history(index_dir: Path) -> History | None:
    """The history kept in a project's index folder; None when there is none, or it cannot be read
    (it is evidence for ranking, never needed: the next index run writes it again)."""
    try:
        return History.decode((index_dir / HISTORY_FILE).read_bytes())
    except (OSError, ValueError):
        return None


def write_history(index_dir: Path, history: History) -> None:
    """Replace the kept history atomically (a reader sees the old one or the new one)."""
    path = index_dir / HISTORY_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(history.encode())
    tmp.replace(path)


def is_remote_location(location: str) -> bool:
    """Whether a store location (the `versions.store` setting) is on object storage (s3://, gs://,
    az://...), not a local folder (a path, or file://)."""
    return "://" in location and not location.startswith("file://")


def is_generation_name(name: str) -> bool:
    return _GENERATION_NAME.fullmatch(name) is not None


def read_pointer(index_dir: Path, root: Path) -> str | None:
    """The name of the published generation, or None when nothing is published.

    Raises:
        StorageError: the pointer is damaged or names no generation.
    """
    pointer = index_dir / CURRENT_POINTER
    try:
        text = pointer.read_bytes()[:256].decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {pointer}: {exc.strerror}") from None
    if not is_generation_name(text) or not (index_dir / text / META_FILE).is_file():
        raise StorageError(
            f"the index of {root} is damaged (its pointer {pointer} names no index): run `lgrep index --force {root}`"
        )
    return text


def generations(index_dir: Path) -> list[str]:
    """Every generation folder on disk, oldest first."""
    try:
        names = [e.name for e in os.scandir(index_dir) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(n for n in names if is_generation_name(n))


def writer_pid(index_dir: Path) -> str | None:
    """The pid of the process holding the project's write lock, or None if nobody holds it.
    Opens the lock file read-only: a reader never creates files."""
    return lock_holder(index_dir / "writer.lock")


def index_state(index_dir: Path) -> IndexState:
    try:
        if read_pointer(index_dir, index_dir) is not None:
            return IndexState.READY
    except StorageError:
        return IndexState.READY  # damaged, but there is an index: opening it says what to do
    if generations(index_dir):
        return IndexState.BUILDING if writer_pid(index_dir) is not None else IndexState.INTERRUPTED
    if (index_dir / META_FILE).is_file() or (index_dir / "lance").is_dir():
        return IndexState.OUTDATED
    return IndexState.ABSENT


def not_ready_error(index_dir: Path, root: Path) -> NotFoundError:
    """Why a project has nothing to search, and what to run."""
    state = index_state(index_dir)
    if state is IndexState.BUILDING:
        return NotFoundError(
            f"{root} is being indexed for the first time (lgrep pid {writer_pid(index_dir)}); it is "
            "searchable once its files are chunked: try again shortly (`lgrep status` shows progress)"
        )
    if state is IndexState.INTERRUPTED:
        return NotFoundError(
            f"the first index of {root} did not finish (its process stopped): run `lgrep index {root}` to finish it"
        )
    if state is IndexState.OUTDATED:
        return NotFoundError(f"the index of {root} was written by an older lgrep: run `lgrep index --force {root}`")
    return NotFoundError(f"{root} has no index yet: run `lgrep index {root}`")


def read_meta_file(meta_path: Path, root: Path, index_dir: Path) -> dict[str, Any]:
    """A generation's metadata.

    Raises:
        NotFoundError: it does not exist (the index is not ready; the message says why).
        StorageError: it is unreadable or damaged.
    """
    try:
        data = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise not_ready_error(index_dir, root) from None
    except (OSError, ValueError) as exc:
        raise StorageError(
            f"index metadata {meta_path} is unreadable ({exc}): run `lgrep index --force {root}`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("identity"), dict):
        raise StorageError(f"index metadata {meta_path} is damaged: run `lgrep index --force {root}`")
    return data  # pyright: ignore[reportUnknownVariableType]


class DiskFullError(StorageError):
    """A write to an index failed because its disk (or the user's quota on it) is full: the index is not
    damaged, and rebuilding it (which needs more space) is the wrong advice. It travels as a
    StorageError (the wire maps a subclass to its nearest listed ancestor), with its message."""


# How a full disk or quota shows in what the storage layers raise: an OSError's errno, or the text of
# LanceDB's (Rust: "No space left on device (os error 28)") and SQLite's ("database or disk is full").
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_DISK_FULL_TEXTS = (
    "no space left on device",
    "disk quota exceeded",
    "database or disk is full",
    f"os error {errno.ENOSPC})",
    f"os error {errno.EDQUOT})",
)


def _is_disk_full(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _DISK_FULL_ERRNOS:
            return True
        if any(text in str(current).lower() for text in _DISK_FULL_TEXTS):
            return True
        current = current.__cause__ or current.__context__
    return False


def disk_full_error(exc: BaseException, folder: Path | str, rerun: str, *, local: bool = True) -> DiskFullError | None:
    """The error to raise when `exc`, from a write under the index folder `folder`, says the disk or
    the quota is full (None when it does not): how much is free, how much the index takes so far
    (on local disk), that nothing was lost, and `rerun`, the command that goes on once there is room.
    Never `--force`: a rebuild needs more space than going on does."""
    if not _is_disk_full(exc):
        return None
    if not local:
        return DiskFullError(
            f"the storage holding the index at {folder} is full; the index is not damaged and nothing "
            f"indexed so far was lost: free some space, then run `{rerun}` to go on"
        )
    where = Path(folder)
    free = taken = None
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(probe).free
    with contextlib.suppress(OSError):
        taken = sum(p.stat().st_size for p in where.rglob("*") if p.is_file()) if where.is_dir() else None
    sizes = ", ".join(
        part
        for part in (
            f"{_megabytes(free)} free there" if free is not None else "",
            f"the index takes {_megabytes(taken)} so far" if taken is not None else "",
        )
        if part
    )
    return DiskFullError(
        f"the disk holding the index at {where} is full{f' ({sizes})' if sizes else ''}; the index is not "
        f"damaged and nothing indexed so far was lost: free some space, then run `{rerun}` to go on"
    )


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"
