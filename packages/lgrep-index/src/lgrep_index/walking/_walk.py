"""The walk over a folder tree (`Walker`): list each folder in path order, carry the ignore rules
down, leave out and report what the rules, names and first bytes say, and yield the rest."""

from __future__ import annotations

import codecs
import logging
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from lgrep_core.domain.pathnames import collides, display_name, display_path, read_up_to

from lgrep_index.walking._defaults import (
    CACHEDIR_SIGNATURE,
    CACHEDIR_TAG,
    GITIGNORE_NAME,
    LGREPIGNORE_NAME,
    VCS_DIRS,
    VENV_MARKER,
    is_default_dir,
)
from lgrep_index.walking._ignore import MAX_IGNORE_FILE_BYTES, Rules, compile_ignore, escape_glob
from lgrep_index.walking._model import (
    SKIP_SYMLINK,
    SKIP_TOO_LARGE,
    SKIP_UNREADABLE,
    SkippedFile,
    WalkedFile,
    WalkOptions,
)
from lgrep_index.walking._paths import ignored_file, name_verdict
from lgrep_index.walking._sniff import SNIFF_BYTES, content_verdict

__all__ = ["Entry", "PathEntry", "Walker"]

logger = logging.getLogger(__name__)

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class Entry(Protocol):
    """What the walk asks of a folder entry, never following a symlink: an `os.DirEntry` of a
    listing, or a `PathEntry` when `PathRules` looks at one path on its own."""

    @property
    def path(self) -> str: ...

    def is_dir(self, *, follow_symlinks: bool = True) -> bool: ...

    def is_file(self, *, follow_symlinks: bool = True) -> bool: ...

    def is_symlink(self) -> bool: ...


class PathEntry:
    """An entry known by the `lstat` of its path (what `os.DirEntry` knows from a listing)."""

    __slots__ = ("_mode", "path")

    def __init__(self, path: str, mode: int) -> None:
        self.path = path
        self._mode = mode

    @classmethod
    def lstat(cls, path: str) -> PathEntry | None:
        try:
            return cls(path, os.lstat(path).st_mode)
        except (OSError, ValueError):  # ValueError: a NUL in the path
            return None

    def _target_mode(self, follow_symlinks: bool) -> int:
        if follow_symlinks and stat.S_ISLNK(self._mode):
            try:
                return Path(self.path).stat().st_mode
            except OSError:
                return 0
        return self._mode

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return stat.S_ISDIR(self._target_mode(follow_symlinks))

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return stat.S_ISREG(self._target_mode(follow_symlinks))

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self._mode)


class Walker:
    def __init__(self, root: Path, options: WalkOptions, on_skip: Callable[[SkippedFile], None] | None) -> None:
        self._root = root
        self._options = options
        self._on_skip = on_skip
        self._excluded_dirs = self._cache_dirs_inside(root, options.cache_dir)

    @staticmethod
    def _cache_dirs_inside(root: Path, cache_dir: Path | None) -> frozenset[str]:
        if cache_dir is None:
            return frozenset()
        try:
            rel = cache_dir.expanduser().resolve().relative_to(root.resolve())
        except (OSError, ValueError):
            return frozenset()
        return frozenset({display_path(rel.as_posix())}) if rel.parts else frozenset()

    def _skip(self, path: str, reason: str) -> None:
        logger.debug("skipping %s (%s)", path, reason)
        if self._on_skip is not None:
            self._on_skip(SkippedFile(path, reason))

    def run(self) -> Iterator[WalkedFile]:
        rules = self.root_rules()
        listing = self._list(str(self._root), "", rules, is_root=True)
        if listing is None:
            return
        # Depth-first over folders whose entries are sorted by name + ('/' if folder): this visits
        # paths in plain string order of the full relative path.
        stack: list[tuple[Iterator[tuple[str, os.DirEntry[str]]], str, Rules]] = [(iter(listing[0]), "", listing[1])]
        while stack:
            entries, prefix, rules = stack[-1]
            item = next(entries, None)
            if item is None:
                stack.pop()
                continue
            name, entry = item
            rel = prefix + name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                self._skip(rel, SKIP_UNREADABLE)
                continue
            if is_dir:
                if not self.keep_dir(name, rel, rules):
                    continue
                child = self._list(entry.path, rel + "/", rules, is_root=False)
                if child is not None:
                    stack.append((iter(child[0]), rel + "/", child[1]))
            else:
                walked = self.check_file(entry, name, rel, rules)
                if walked is not None:
                    yield walked

    def root_rules(self) -> Rules:
        git = None
        if self._options.respect_gitignore:
            git_dir = self._root / ".git"
            # Neither `.git` nor `.git/info` may be a symlink: it could lead the read out of the root.
            if git_dir.is_dir() and not git_dir.is_symlink() and not (git_dir / "info").is_symlink():
                lines = self._read_ignore_file(str(git_dir / "info" / "exclude"), ".git/info/exclude")
                if lines:
                    git = compile_ignore(lines, "", ".git/info/exclude")
        extra = compile_ignore(self._options.extra_ignore_patterns, "", "index.ignore_patterns")
        return Rules().extend(git, extra)

    def keep_dir(self, name: str, rel: str, rules: Rules) -> bool:
        if name in VCS_DIRS or rel in self._excluded_dirs:
            return False
        if is_default_dir(name):
            if not rules.reincludes(rel, is_dir=True):
                return False
        elif rules.ignores(rel, is_dir=True):
            return False
        return True

    def _list(
        self, abs_dir: str, prefix: str, rules: Rules, *, is_root: bool
    ) -> tuple[list[tuple[str, os.DirEntry[str]]], Rules] | None:
        """List a folder: its entries with their displayed names (lgrep_core.domain.pathnames), sorted for
        the walk, and the rules in force inside it."""
        try:
            with os.scandir(abs_dir) as scan:
                entries = list(scan)
        except OSError as exc:
            logger.warning("cannot list %s: %s", abs_dir, exc)
            self._skip(prefix.rstrip("/") or ".", SKIP_UNREADABLE)
            return None
        by_name = {entry.name: entry for entry in entries}
        inner = self.folder_rules(prefix[:-1], rules, by_name.get, is_root=is_root)
        if inner is None:
            return None
        named: list[tuple[str, os.DirEntry[str]]] = []
        for entry in entries:
            if entry.name.isascii():
                named.append((entry.name, entry))
            elif collides(entry.name, by_name.keys()):
                shown = prefix + display_name(entry.name)
                logger.warning("skipping %s: its escaped name is also the name of another file", shown)
                self._skip(shown, SKIP_UNREADABLE)
            else:
                named.append((display_name(entry.name), entry))
        named.sort(key=_sort_key)
        return named, inner

    def folder_rules(
        self, rel: str, rules: Rules, lookup: Callable[[str], Entry | None], *, is_root: bool
    ) -> Rules | None:
        """The rules in force inside the folder `rel` ('' at the root): its parent's `rules` plus its
        own ignore files. None when the walk does not enter it: it holds a cache tag, or it is a
        virtualenv that no lgrep negation re-includes. `lookup` finds an entry of the folder by name."""
        if not is_root:
            tag = lookup(CACHEDIR_TAG)
            if tag is not None and self._is_cachedir_tag(tag):
                return None
            if lookup(VENV_MARKER) is not None and not rules.reincludes(rel, is_dir=True):
                return None
        prefix = rel + "/" if rel else ""
        escaped = "".join(escape_glob(part) + "/" for part in prefix.split("/")[:-1])
        git = lgrep = None
        if self._options.respect_gitignore and (entry := lookup(GITIGNORE_NAME)) is not None:
            lines = self._read_ignore_entry(entry, prefix + GITIGNORE_NAME)
            git = compile_ignore(lines, escaped, prefix + GITIGNORE_NAME) if lines else None
        if (entry := lookup(LGREPIGNORE_NAME)) is not None:
            lines = self._read_ignore_entry(entry, prefix + LGREPIGNORE_NAME)
            lgrep = compile_ignore(lines, escaped, prefix + LGREPIGNORE_NAME) if lines else None
        return rules.extend(git, lgrep)

    @staticmethod
    def _is_cachedir_tag(entry: Entry) -> bool:
        try:
            if not entry.is_file(follow_symlinks=False):
                return False
            fd = os.open(entry.path, _OPEN_FLAGS)
            try:
                return os.read(fd, len(CACHEDIR_SIGNATURE)) == CACHEDIR_SIGNATURE
            finally:
                os.close(fd)
        except OSError:
            return False

    def _read_ignore_entry(self, entry: Entry, rel: str) -> list[str]:
        try:
            if not entry.is_file(follow_symlinks=False):
                return []  # git does not follow a symlinked ignore file either
        except OSError:
            return []
        return self._read_ignore_file(entry.path, rel)

    @staticmethod
    def _read_ignore_file(path: str, rel: str) -> list[str]:
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            return []
        try:
            size = os.fstat(fd).st_size
            if size > MAX_IGNORE_FILE_BYTES:
                logger.warning(
                    "%s is %d bytes, over the %d an ignore file may have: not read", rel, size, MAX_IGNORE_FILE_BYTES
                )
                return []
            data = read_up_to(fd, MAX_IGNORE_FILE_BYTES)
        except OSError as exc:
            logger.warning("cannot read %s: %s", rel, exc)
            return []
        finally:
            os.close(fd)
        return data.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace").splitlines()

    def check_file(self, entry: Entry, name: str, rel: str, rules: Rules) -> WalkedFile | None:
        if ignored_file(name, rel, rules):
            return None
        lower = name.lower()
        if entry.is_symlink():
            self._skip(rel, SKIP_SYMLINK)
            return None
        by_name = name_verdict(lower, rel, rules)
        if by_name is not None:
            self._skip(rel, by_name)
            return None

        try:
            if not entry.is_file(follow_symlinks=False):
                logger.debug("skipping %s: not a regular file", rel)
                return None
            fd = os.open(entry.path, _OPEN_FLAGS)
        except OSError as exc:
            logger.debug("cannot open %s: %s", rel, exc)
            self._skip(rel, SKIP_UNREADABLE)
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > self._options.max_file_bytes:
                self._skip(rel, SKIP_TOO_LARGE)
                return None
            head = os.read(fd, SNIFF_BYTES)
        except OSError as exc:
            logger.debug("cannot read %s: %s", rel, exc)
            self._skip(rel, SKIP_UNREADABLE)
            return None
        finally:
            os.close(fd)

        by_content = content_verdict(head, lower, rel, rules)
        if by_content is not None:
            self._skip(rel, by_content)
            return None
        return WalkedFile(rel, Path(entry.path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _sort_key(item: tuple[str, os.DirEntry[str]]) -> str:
    name, entry = item
    try:
        return name + "/" if entry.is_dir(follow_symlinks=False) else name
    except OSError:
        return name
