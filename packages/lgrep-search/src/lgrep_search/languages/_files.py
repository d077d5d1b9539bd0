"""The files of a snapshot as module resolution looks them up: by path, by folder, by a path's tail
and by a folder's name. Nothing here knows a language."""

from __future__ import annotations

import functools
import posixpath
from collections import defaultdict
from collections.abc import Iterable, Sequence

__all__ = ["ProjectFiles"]


class ProjectFiles:
    """The paths of a snapshot's files; a file is its number in `paths` (the graph's file number)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = paths
        self.index: dict[str, int] = {p: i for i, p in enumerate(paths)}
        self.dirs: dict[str, list[int]] = defaultdict(list)
        for f, path in enumerate(paths):
            self.dirs[posixpath.dirname(path)].append(f)
        # every folder that holds an indexed file at any depth (package folders hold only subfolders)
        self.dirs_all: set[str] = set()
        for folder in list(self.dirs):
            up = folder
            while up and up not in self.dirs_all:
                self.dirs_all.add(up)
                up = posixpath.dirname(up)
        self._packages: dict[str, list[str]] = {}

    def get(self, path: str) -> int | None:
        """The file at `path` (relative, no leading slash), or None."""
        return self.index.get(path)

    def folders_named(self, name: str) -> list[str]:
        """The folders called `name` at any depth, outside node_modules."""
        cached = self._packages.get(name)
        if cached is None:
            cached = [d for d in self.dirs_all if posixpath.basename(d) == name and "node_modules" not in d]
            self._packages[name] = cached
        return cached

    def suffix_matches(self, suffix: str) -> Iterable[tuple[str, int]]:
        """The files whose path is `suffix` or ends with `/suffix`, with their paths."""
        g = self.index.get(suffix)
        if g is not None:
            yield suffix, g
            return
        tail = "/" + suffix
        for p in self._by_tail.get(_tail(suffix) if "/" in suffix else suffix, ()):
            if p.endswith(tail):
                yield p, self.index[p]

    @functools.cached_property
    def _by_tail(self) -> dict[str, list[str]]:
        """Paths by their last two parts (`pkg/__init__.py`) and by their name (`json.py`): suffix
        lookups without a scan of every path."""
        out: dict[str, list[str]] = defaultdict(list)
        for p in self.index:
            out[_tail(p)].append(p)
            out[posixpath.basename(p)].append(p)
        return out


def _tail(path: str) -> str:
    return "/".join(path.rsplit("/", 2)[-2:])
