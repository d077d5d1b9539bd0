"""List the files of a project that are worth indexing, in a reproducible order.

`walk` yields `WalkedFile`s sorted by their project-relative POSIX path. It never follows a
symbolic link and never raises on a file or folder it cannot read: it reports it to `on_skip` and
moves on. Files are left out silently when an ignore rule says so; files left out for any other
reason are reported as a `SkippedFile` with one of the `SKIP_*` reasons.

Ignore rules, lowest precedence first (the last matching pattern wins, as in git):

1. `.git/info/exclude` of the root and every `.gitignore` in the tree, each relative to its own
   folder (skipped when `WalkOptions.respect_gitignore` is false). Files above the root, git's
   global excludes file and the exclude file of a worktree (`.git` as a file) are not read.
2. The built-in defaults (`walking._defaults`): lock files, dependency, virtualenv, cache and build
   folders.
3. `WalkOptions.extra_ignore_patterns` (the configuration's `index.ignore_patterns`), relative to
   the root.
4. Every `.lgrepignore` in the tree, each relative to its own folder.

Only layers 3 and 4 can re-include a built-in default with a negation such as `!vendor/`: a
negation in a `.gitignore` is about what git tracks, not about what is worth searching. As in git,
nothing under an ignored folder can be re-included; ignored folders are not even listed.

Patterns come from the repository, so they are matched with re2, in time linear in the path (the
regexes pathspec translates them to would backtrack exponentially in Python's `re`), and the work
they can cause is bounded: lines over 4 KiB, patterns past 5,000 per file or 10,000 in force in one
folder, and patterns with more than 6 `?`/`[...]` after a `*` in one name are dropped with a warning.

A file or folder name that is not valid UTF-8 is walked, not skipped: its path shows it escaped
(`caf\\xe9.py`, see `lgrep_core.domain.pathnames`), `WalkedFile.abs_path` keeps its real bytes, and ignore
patterns match the escaped form.

Never indexed, whatever the ignore files say: version-control folders (`.git`, `.hg`, `.svn`,
`.jj`, ...), the lgrep cache (`WalkOptions.cache_dir`, and any folder holding a `CACHEDIR.TAG`),
secrets (`is_secret_path`), symbolic links, binary files (by extension, a NUL byte in the first
8 KiB, or too many control characters), and files larger than `max_file_bytes`.

Reported but overridable by an `.lgrepignore` negation naming the file: minified files (`*.min.js`
or a very long average line in a `.js`/`.css` file) and generated files (`*.pb.go`, `*_pb2.py`,
`*.generated.*`, ..., or a "generated, do not edit" banner in the first lines).

`vendor/` folders are excluded by default: Go, PHP and Ruby keep third-party code there, which
drowns a project's own code in search results. Re-include them with `!vendor/` in `.lgrepignore`.

`PathRules` answers the walk's question for one path at a time (would the walk consider it, what
would it yield for it, is it an ignore file) with the same rule code and a per-folder cache: the file
watcher filters events with it and `Indexer.update` checks the paths it is given.

`read_text` decodes UTF-8 (a BOM is dropped), UTF-16/UTF-32 with a BOM, and anything else as
mostly-UTF-8 with replacement characters or, when no valid UTF-8 sequence is present at all, as
cp1252/latin-1. Line endings are kept as they are (CRLF stays CRLF) so that offsets and line
numbers match the file on disk; the chunker splits lines with `str.splitlines`.

The pieces live in `lgrep_index.walking`: `_model` (options, results, skip reasons), `_defaults`
(the built-in lists), `_ignore` (ignore patterns compiled to re2 rules), `_paths` (verdicts by
name: secrets, project paths), `_sniff` (verdicts by first bytes, `read_text`), `_walk` (the walk
itself) and `_per_path` (`PathRules`, `TreeRules`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from lgrep_core.domain.errors import NotFoundError

from lgrep_index.walking._model import (
    SKIP_BINARY,
    SKIP_GENERATED,
    SKIP_MINIFIED,
    SKIP_SECRET,
    SKIP_SYMLINK,
    SKIP_TOO_LARGE,
    SKIP_UNREADABLE,
    SkippedFile,
    WalkedFile,
    WalkOptions,
)
from lgrep_index.walking._paths import is_project_path, is_secret_path
from lgrep_index.walking._per_path import PathRules, TreeRules
from lgrep_index.walking._sniff import read_text
from lgrep_index.walking._walk import Walker

__all__ = [
    "SKIP_BINARY",
    "SKIP_GENERATED",
    "SKIP_MINIFIED",
    "SKIP_SECRET",
    "SKIP_SYMLINK",
    "SKIP_TOO_LARGE",
    "SKIP_UNREADABLE",
    "PathRules",
    "SkippedFile",
    "TreeRules",
    "WalkOptions",
    "WalkedFile",
    "is_project_path",
    "is_secret_path",
    "read_text",
    "walk",
]


def walk(
    root: Path,
    options: WalkOptions | None = None,
    *,
    on_skip: Callable[[SkippedFile], None] | None = None,
) -> Iterator[WalkedFile]:
    """Yield the indexable files under `root`, sorted by path.

    Skipped files are passed to `on_skip` as the walk reaches them; ignored files are not.

    Raises:
        NotFoundError: `root` is not a folder (checked at once, before iteration starts).
    """
    root_abs = Path(os.path.normpath(Path(root).absolute()))
    if not root_abs.is_dir():
        raise NotFoundError(f"cannot index {str(root)!r}: not a folder")
    walker = Walker(root_abs, options or WalkOptions(), on_skip)
    return walker.run()
