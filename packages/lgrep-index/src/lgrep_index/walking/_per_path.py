"""The walk's decisions one path at a time, without walking: `PathRules` for the files of the
working tree (the file watcher, `Indexer.update`) and `TreeRules` for the files of a git tree (tags),
both with the walk's own rule code."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from lgrep_core.domain.pathnames import disk_path

from lgrep_index.walking._defaults import (
    CACHEDIR_TAG,
    GITIGNORE_NAME,
    LGREPIGNORE_NAME,
    VCS_DIRS,
    VENV_MARKER,
    is_default_dir,
)
from lgrep_index.walking._ignore import MAX_IGNORE_FILE_BYTES, Rules, compile_ignore, escape_glob
from lgrep_index.walking._model import SKIP_SYMLINK, SKIP_TOO_LARGE, SkippedFile, WalkedFile, WalkOptions
from lgrep_index.walking._paths import ignored_file, name_verdict, relative_parts
from lgrep_index.walking._sniff import SNIFF_BYTES, content_verdict
from lgrep_index.walking._walk import Entry, PathEntry, Walker

__all__ = ["PathRules", "TreeRules"]


class PathRules:
    """The walk's decision about single project-relative paths, without walking the project.

    It runs the walker's own rule code (`Walker`): a folder's rules are its parent's plus its own
    ignore files, each folder is looked at once (`lstat` of its markers and ignore files, not a
    listing) and its rules are cached, so asking about a path costs a dictionary lookup and the
    pattern match of its name. For the file watcher (is an event worth reporting?) and for indexing
    a list of paths (`Indexer.update`).

    Paths are '/'-separated, relative to the root, without '.' or '..' parts, names shown as the
    walk shows them (`lgrep_core.domain.pathnames`); anything else (absolute, '..', empty) is never
    considered. A folder that exists but is not a real folder (a symlink to one, say) is never
    entered, as in the walk, so nothing outside the root is ever considered. A folder that does not
    exist (deleted) counts as a plain folder of its parent, and is not cached.

    Not thread-safe: one instance per thread. After an ignore file or a folder changes, `forget`
    what was cached about it (or `clear` everything).
    """

    def __init__(self, root: Path, options: WalkOptions | None = None) -> None:
        self.root = Path(os.path.normpath(Path(root).absolute()))
        self.options = options or WalkOptions()
        self._skipped: list[SkippedFile] = []
        self._walker = Walker(self.root, self.options, self._skipped.append)
        self._folders: dict[str, Rules | None] = {}

    def considers(self, path: str, *, is_dir: bool = False) -> bool:
        """Whether the walk would look at this path: every folder above it is entered and no ignore
        rule (version-control names, built-in defaults, ignore files, configured patterns, cache
        tags and virtualenv markers of its folders) leaves it out. Checks by name and rules only: a
        considered file may still be skipped for its content, size, name (secrets, binary and
        generated names) or type (`check` says)."""
        parts = relative_parts(path)
        if parts is None:
            return False
        if is_dir:
            return self._folder(parts) is not None
        rules = self._folder(parts[:-1])
        return rules is not None and not ignored_file(parts[-1], path, rules)

    def check(self, path: str) -> WalkedFile | SkippedFile | None:
        """What the walk would do with the file at `path` now: the `WalkedFile` it would yield, the
        `SkippedFile` it would report (too large, binary, secret, symlink, generated, ...), or None
        when it would not see it at all (ignored, missing, a folder or another non-regular file)."""
        parts = relative_parts(path)
        if parts is None:
            return None
        rules = self._folder(parts[:-1])
        if rules is None:
            return None
        entry = PathEntry.lstat(str(disk_path(self.root, path)))
        if entry is None or entry.is_dir(follow_symlinks=False):
            return None
        self._skipped.clear()
        walked = self._walker.check_file(entry, parts[-1], path, rules)
        if walked is not None:
            return walked
        return self._skipped[-1] if self._skipped else None

    def is_rule_source(self, path: str) -> bool:
        """Whether a change to this file can change what the walk considers: an ignore file
        (`.lgrepignore`, and `.gitignore` unless git's rules are off), `.git/info/exclude`, or the
        `CACHEDIR.TAG` / `pyvenv.cfg` that make the walk skip a folder, in a folder the walk enters.
        (The project's `.lgrep.yaml` changes the options themselves: see lgrep_core.settings.config.)"""
        parts = relative_parts(path)
        if parts is None:
            return False
        name, folder = parts[-1], parts[:-1]
        if parts == [".git", "info", "exclude"]:
            return self.options.respect_gitignore
        is_source = (
            name == LGREPIGNORE_NAME
            or (name == GITIGNORE_NAME and self.options.respect_gitignore)
            or (name in (CACHEDIR_TAG, VENV_MARKER) and bool(folder))
        )
        return is_source and self._folder(folder) is not None

    def forget(self, folder: str) -> None:
        """Drop what is cached about a folder and everything under it ('' for all)."""
        if not folder:
            self._folders.clear()
            return
        below = folder + "/"
        for key in [k for k in self._folders if k == folder or k.startswith(below)]:
            del self._folders[key]

    def clear(self) -> None:
        self._folders.clear()

    def _folder(self, parts: Sequence[str]) -> Rules | None:
        """The rules in force inside a folder, or None when the walk does not enter it."""
        depth = len(parts)
        while depth and "/".join(parts[:depth]) not in self._folders:
            depth -= 1
        if depth == 0 and "" not in self._folders:
            root = str(self.root)
            self._folders[""] = self._walker.folder_rules(
                "", self._walker.root_rules(), lambda name: PathEntry.lstat(f"{root}/{name}"), is_root=True
            )
        rules = self._folders["/".join(parts[:depth])]
        while rules is not None and depth < len(parts):
            rel = "/".join(parts[: depth + 1])
            rules, exists = self._enter(parts[depth], rel, rules)
            if exists:
                self._folders[rel] = rules
            depth += 1
        return rules

    def _enter(self, name: str, rel: str, parent: Rules) -> tuple[Rules | None, bool]:
        """(rules inside the folder `rel` or None when the walk does not enter it, whether it exists)."""
        abs_dir = str(disk_path(self.root, rel))
        entry = PathEntry.lstat(abs_dir)
        if entry is not None and not entry.is_dir(follow_symlinks=False):
            return None, True  # a symlink or a file: the walk never enters it
        if not self._walker.keep_dir(name, rel, parent):
            return None, entry is not None
        if entry is None:
            return parent, False

        def lookup(child: str) -> Entry | None:
            return PathEntry.lstat(f"{abs_dir}/{child}")

        return self._walker.folder_rules(rel, parent, lookup, is_root=False), True


class TreeRules:
    """The walk's decisions for the files of a git tree (a tag), which are never on disk.

    The same rules as the walk, minus what only a working tree has: `.gitignore` does not apply (a
    tag holds only tracked files), there are no symlinks to follow (they are skipped), and sizes come
    from git. Built-in defaults, the configured `index.ignore_patterns`, the tree's own
    `.lgrepignore` files (read through `read_ignore`), cache tags, virtualenv markers, secrets by
    name, binary, generated and minified files are judged as the walk judges them.
    """

    def __init__(
        self, paths: Iterable[str], options: WalkOptions, read_ignore: Callable[[str, int], bytes | None]
    ) -> None:
        """`read_ignore(path, limit)`: the bytes of an `.lgrepignore` of the tree, or None when it is
        larger than `limit` (it must not be read then) or cannot be read."""
        self._options = options
        self._read_ignore = read_ignore
        self._paths = frozenset(paths)
        root = Rules().extend(None, compile_ignore(options.extra_ignore_patterns, "", "index.ignore_patterns"))
        self._folders: dict[str, Rules | None] = {"": self._own_rules("", root)}

    def _own_rules(self, folder: str, parent: Rules) -> Rules:
        prefix = folder + "/" if folder else ""
        if prefix + LGREPIGNORE_NAME not in self._paths:
            return parent
        data = self._read_ignore(prefix + LGREPIGNORE_NAME, MAX_IGNORE_FILE_BYTES) or b""
        lines = data[:MAX_IGNORE_FILE_BYTES].removeprefix(codecs.BOM_UTF8).decode("utf-8", "replace").splitlines()
        escaped = "".join(escape_glob(part) + "/" for part in prefix.split("/")[:-1])
        return parent.extend(None, compile_ignore(lines, escaped, prefix + LGREPIGNORE_NAME) if lines else None)

    def _folder(self, folder: str) -> Rules | None:
        if folder in self._folders:
            return self._folders[folder]
        parent_name, _, name = folder.rpartition("/")
        parent = self._folder(parent_name)
        rules: Rules | None = None
        if parent is not None:
            if name in VCS_DIRS:
                rules = None
            elif is_default_dir(name) or (
                f"{folder}/{CACHEDIR_TAG}" in self._paths or f"{folder}/{VENV_MARKER}" in self._paths
            ):
                rules = self._own_rules(folder, parent) if parent.reincludes(folder, is_dir=True) else None
            elif not parent.ignores(folder, is_dir=True):
                rules = self._own_rules(folder, parent)
        self._folders[folder] = rules
        return rules

    def judge(self, path: str, *, size: int, is_symlink: bool = False) -> str | None:
        """By name and size: None when the walk would not see the file at all (ignored), a skip
        reason (SKIP_*), or "" when its content decides (`judge_content`)."""
        folder, _, name = path.rpartition("/")
        rules = self._folder(folder)
        if rules is None or ignored_file(name, path, rules):
            return None
        if is_symlink:
            return SKIP_SYMLINK
        by_name = name_verdict(name.lower(), path, rules)
        if by_name is not None:
            return by_name
        return SKIP_TOO_LARGE if size > self._options.max_file_bytes else ""

    def judge_content(self, path: str, data: bytes) -> str:
        """By content (binary, generated banner, minified), as the walk judges a file's first
        bytes: a skip reason, or "" to index it."""
        folder, _, name = path.rpartition("/")
        rules = self._folder(folder) or Rules()
        return content_verdict(data[:SNIFF_BYTES], name.lower(), path, rules) or ""
