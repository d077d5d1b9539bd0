"""What the walk takes and gives: its options, the files it yields, and the files it reports as
skipped with their reasons (`SKIP_*`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SKIP_BINARY",
    "SKIP_GENERATED",
    "SKIP_MINIFIED",
    "SKIP_SECRET",
    "SKIP_SYMLINK",
    "SKIP_TOO_LARGE",
    "SKIP_UNREADABLE",
    "SkippedFile",
    "WalkOptions",
    "WalkedFile",
]

SKIP_TOO_LARGE = "too-large"
SKIP_BINARY = "binary"
SKIP_SECRET = "secret"
SKIP_UNREADABLE = "unreadable"
SKIP_SYMLINK = "symlink"
SKIP_MINIFIED = "minified"
SKIP_GENERATED = "generated"


@dataclass(frozen=True, slots=True)
class WalkedFile:
    """A file to index. `path` is relative to the root, '/'-separated, without '.' or '..' parts.
    Its stat as the walk saw it: size, mtime, ctime and inode (what tells a run it changed, as git
    tells it: `FileRecord.matches`)."""

    path: str
    abs_path: Path
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file (or an unlistable folder) left out for a reason other than an ignore rule."""

    path: str
    reason: str


@dataclass
class WalkOptions:
    """What to walk. `cache_dir` is never indexed when it lies inside the root."""

    max_file_bytes: int = 1_000_000
    extra_ignore_patterns: Sequence[str] = ()
    respect_gitignore: bool = True
    cache_dir: Path | None = None
