"""A project's recent git history, as its index keeps it: the commits, newest first, each with its
time, its message and the project files it changed.

lgrep_index.history mines it at index time (and brings it up to date incrementally);
lgrep_search.history reads it as evidence for task questions: past commits whose messages resemble
the question and the files they touched, files that change together with the files a question
names, and how often and how lately each file changed. Bounded (MAX_COMMITS, MAX_MESSAGE_CHARS,
MAX_FILES_PER_COMMIT), so what a question reads does not grow with the repository's age.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass

__all__ = ["MAX_COMMITS", "MAX_FILES_PER_COMMIT", "MAX_MESSAGE_CHARS", "Commit", "History"]

# The newest commits kept (a first-parent, merge-free walk from HEAD).
MAX_COMMITS = 5000
MAX_MESSAGE_CHARS = 2000
# A commit that touches more files than this (a reformat, a vendored update, a rename sweep) says
# nothing about which files belong together: its file list is not kept.
MAX_FILES_PER_COMMIT = 50
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    time: int  # committer time, seconds since the epoch
    message: str
    files: tuple[str, ...]  # project-relative paths it changed (empty when it changed too many)


@dataclass(frozen=True, slots=True)
class History:
    head: str  # the commit the walk started from
    commits: tuple[Commit, ...]  # newest first
    shallow: bool = False  # the clone is shallow: older history is not there

    def encode(self) -> bytes:
        data = {
            "format": _FORMAT,
            "head": self.head,
            "shallow": self.shallow,
            "commits": [[c.sha, c.time, c.message, list(c.files)] for c in self.commits],
        }
        return zlib.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), 6)

    @classmethod
    def decode(cls, blob: bytes) -> History:
        """Raises ValueError for data that is not a history of this format."""
        try:
            data = json.loads(zlib.decompress(blob).decode("utf-8"))
            if data.get("format") != _FORMAT:
                raise ValueError(f"history format {data.get('format')!r}, expected {_FORMAT}")
            commits = tuple(
                Commit(str(sha), int(time), str(message), tuple(str(f) for f in files))
                for sha, time, message, files in data["commits"]
            )
            return cls(str(data["head"]), commits, bool(data.get("shallow", False)))
        except (zlib.error, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"not a history: {exc}") from None
