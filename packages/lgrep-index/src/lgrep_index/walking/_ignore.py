"""Ignore patterns compiled to rules: the lines of each ignore source (`.gitignore`,
`.lgrepignore`, `.git/info/exclude`, the configured `index.ignore_patterns`) rebased to the root and
translated to re2 regexes matched in time linear in the path, one layer per source; a folder's
`Rules` are its parent's plus its own ignore files. Limits bound the work patterns can cause."""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import re2
from lgrep_core.domain.pathnames import is_utf8
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

__all__ = ["MAX_IGNORE_FILE_BYTES", "Rules", "compile_ignore", "escape_glob"]

logger = logging.getLogger(__name__)

# Ignore files larger than this are not ignore files anyone wrote by hand.
MAX_IGNORE_FILE_BYTES = 1_000_000
# Ignore patterns are matched in time linear in the path and in the patterns (re2; Python's `re`
# backtracks exponentially on `a*a*a*a*a*a*a*a*a*a*a*a*b`), and each pattern costs work for every path
# the walk meets: these limits bound that work. Past them, lines are dropped with a warning.
# A line this long is no hand-written pattern.
_MAX_IGNORE_LINE_CHARS = 4096
# Patterns of one ignore source, and of all the sources in force in one folder (a folder's own and
# its parents'). Hand-written ignore files hold tens to hundreds; generated ones a few thousand.
_MAX_IGNORE_PATTERNS = 5_000
_MAX_PATTERNS_IN_FORCE = 10_000
# Single-character wildcards (`?`, `[...]`) after a `*` in one name: each one doubles the states of
# the pattern's automaton (`*a????` must remember where each recent 'a' was). Hand-written patterns
# have one or two (`*.py[cod]`, `.*.sw?`).
_MAX_WILDCARDS_AFTER_STAR = 6
# Ignore patterns are matched by re2 filters of at most this many regexes and characters each: small
# enough that re2's automata fit its default memory budget, large enough to share the prefilter.
_GROUP_REGEXES = 256
_GROUP_CHARS = 16_384


def escape_glob(text: str) -> str:
    escaped = "".join("\\" + ch if ch in "\\*?[" else ch for ch in text)
    return "\\" + escaped if escaped[:1] in ("!", "#") else escaped


def _rebase(line: str, prefix: str) -> tuple[str, str] | None:
    """Rewrite one ignore-file line to apply from the root; return (file form, folder form).

    `prefix` is the glob-escaped folder of the ignore file with a trailing '/', or '' at the root.
    The folder form drops the trailing '/' of directory-only patterns: it is matched only against
    folders, which is exactly what such a pattern means, and it keeps pathspec from treating the
    folder itself as a descendant match.
    """
    end = len(line)
    while end and line[end - 1] == " " and not (end > 1 and line[end - 2] == "\\"):
        end -= 1
    text = line[:end]
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    body = text[1:] if negate else text
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    anchored = "/" in body
    body = body.removeprefix("/")
    if not body:
        return None
    if prefix:
        full = prefix + body if anchored else prefix + "**/" + body
    else:
        full = "/" + body if anchored else body
    bang = "!" if negate else ""
    return bang + full + ("/" if dir_only else ""), bang + full


def compile_ignore(lines: Iterable[str], prefix: str, source: str) -> _Layer | None:
    """Compile the lines of one ignore source into a layer; invalid or oversized lines are logged
    and dropped, and so are the lines past the first `_MAX_IGNORE_PATTERNS` patterns."""
    file_globs: list[_Glob] = []
    dir_globs: list[_Glob] = []
    texts: list[str] = []
    for number, line in enumerate(lines, 1):
        if len(line) > _MAX_IGNORE_LINE_CHARS:
            logger.warning(
                "%s: line %d is %d characters long, over the limit of %d; ignoring it",
                source,
                number,
                len(line),
                _MAX_IGNORE_LINE_CHARS,
            )
            continue
        rebased = _rebase(_glob_safe(line), prefix)
        if rebased is None:
            continue
        if _window_wildcards(line) > _MAX_WILDCARDS_AFTER_STAR:
            logger.warning(
                "%s: ignoring pattern %r: more than %d '?' or '[...]' after a '*' in one name",
                source,
                line,
                _MAX_WILDCARDS_AFTER_STAR,
            )
            continue
        if len(texts) >= _MAX_IGNORE_PATTERNS:
            logger.warning("%s: more than %d patterns; ignoring the rest", source, _MAX_IGNORE_PATTERNS)
            break
        try:
            file_glob = _Glob.parse(rebased[0])
            dir_glob = _Glob.parse(rebased[1])
        except (ValueError, re.error) as exc:  # pathspec raises re.error for some bad ranges
            logger.warning("%s: ignoring invalid pattern %r: %s", source, line, exc)
            continue
        if file_glob is None or dir_glob is None:
            continue
        file_globs.append(file_glob)
        dir_globs.append(dir_glob)
        texts.append(line)
    if not texts:
        return None
    files = _GlobSet(file_globs)
    dirs = _GlobSet(dir_globs)
    for index in sorted(files.rejected | dirs.rejected):
        logger.warning("%s: ignoring pattern %r: not supported by the matcher", source, texts[index])
    return _Layer(files, dirs, source, len(texts))


def _window_wildcards(line: str) -> int:
    """The most single-character wildcards (`?`, `[...]`) that follow a `*` within one name of the
    pattern (see `_MAX_WILDCARDS_AFTER_STAR`)."""
    most = count = 0
    starred = escaped = False
    for ch in line:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "/":
            starred, count = False, 0
        elif ch == "*":
            starred = True
        elif starred and ch in "?[":
            count += 1
            most = max(most, count)
    return most


def _glob_safe(line: str) -> str:
    """A pattern from the environment may hold undecodable bytes (as surrogates); write each as the
    glob of the `\\xNN` that paths show for it (lgrep_core.domain.pathnames), any other surrogate as U+FFFD."""
    if line.isascii() or is_utf8(line):
        return line
    out: list[str] = []
    for ch in line:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\\\x{code - 0xDC00:02x}")
        else:
            out.append("\ufffd" if 0xD800 <= code <= 0xDFFF else ch)
    return "".join(out)


# The directory marker of pathspec's gitignore regexes: where present, the pattern can match one of
# the path's folders rather than the path itself. `(?:marker|$)` at the end means "either".
_DIR_MARK = "(?P<ps_d>/)"
_DIR_MARK_OR_END = f"(?:{_DIR_MARK}|$)"
# A regex that matched: (pattern index, include, priority).
_Hit = tuple[int, bool, int]

# Priorities of a match, as git (and pathspec) rank them: a pattern naming the path itself beats one
# naming a folder of it.
_NAMES_FOLDER = 1
_NAMES_PATH = 2


@dataclass(frozen=True, slots=True)
class _Glob:
    """One ignore pattern, rebased to the root, as linear-time regexes.

    `include` is True for a pattern that ignores, False for a negation. `path_regex` matches when the
    pattern names the path itself, `folder_regex` when it names one of the path's folders (a pattern
    `build` names `build/x.py` through its folder)."""

    include: bool
    path_regex: str | None
    folder_regex: str | None

    @classmethod
    def parse(cls, line: str) -> _Glob | None:
        """Translate with pathspec (git's wildmatch rules); its regexes are only ever matched here,
        by re2. None for a line that is no pattern. Raises ValueError or re.error for a bad one."""
        with warnings.catch_warnings():
            # Python warns about `[[` ("possible nested set"), which is a literal '[' in a glob.
            warnings.simplefilter("ignore", FutureWarning)
            pattern = GitIgnoreSpecPattern(line)
        if pattern.include is None or pattern.regex is None:
            return None
        regex = pattern.regex.pattern
        if not isinstance(regex, str):
            return None
        regex = _literal_brackets_in_sets(regex)
        if regex.endswith(_DIR_MARK_OR_END):
            base = regex.removesuffix(_DIR_MARK_OR_END)
            return cls(pattern.include, base + "$", base + "/")
        if _DIR_MARK in regex:
            return cls(pattern.include, None, regex.replace(_DIR_MARK, "/"))
        return cls(pattern.include, regex, None)


def _literal_brackets_in_sets(regex: str) -> str:
    """Escape every '[' inside a character set of a pathspec regex.

    pathspec copies a glob's bracket expression into the regex as it is; Python reads a '[' inside
    a set as a literal, re2 reads `[:alpha:]` there as a POSIX class. Escaping keeps the meaning
    the patterns have always had (a glob `[[:a]` matches '[', ':' or 'a')."""
    if "[" not in regex:
        return regex
    out: list[str] = []
    i, end = 0, len(regex)
    in_set = False
    while i < end:
        ch = regex[i]
        if ch == "\\" and i + 1 < end:
            out.append(regex[i : i + 2])
            i += 2
            continue
        if not in_set:
            if ch == "[":
                in_set = True
                out.append(ch)
                i += 1
                if i < end and regex[i] == "^":
                    out.append("^")
                    i += 1
                if i < end and regex[i] == "]":  # a ']' first in a set is a literal
                    out.append("\\]")
                    i += 1
                continue
        elif ch == "]":
            in_set = False
        elif ch == "[":
            ch = "\\["
        out.append(ch)
        i += 1
    return "".join(out)


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    return options


_RE2_OPTIONS = _re2_options()


class _GlobSet:
    """The patterns of one ignore source, matched against a path in time linear in its length.

    Python's `re` backtracks, so a pattern like `a*a*a*a*a*a*a*a*a*a*a*a*b` against a long name takes
    exponential time; re2 does not. The patterns go into re2 filters (`FilteredRE2`: a literal
    prefilter, then one automaton per candidate) in groups small enough for re2's memory budget; a
    group whose filter does not compile falls back to one compiled regex per pattern. Patterns re2
    cannot parse are left out and listed in `rejected` (their indices).
    """

    __slots__ = ("_groups", "rejected")

    def __init__(self, globs: Sequence[_Glob]) -> None:
        self.rejected: set[int] = set()
        # A group: a filter and what each of its regexes stands for, or (when the filter did not
        # compile) regexes matched one by one.
        self._groups: list[tuple[re2.Filter, list[_Hit]] | list[tuple[re2._Regexp, _Hit]]] = []
        regexes: list[tuple[str, _Hit]] = []
        for index, glob in enumerate(globs):
            if glob.path_regex is not None:
                regexes.append((glob.path_regex, (index, glob.include, _NAMES_PATH)))
            if glob.folder_regex is not None:
                regexes.append((glob.folder_regex, (index, glob.include, _NAMES_FOLDER)))
        start = 0
        while start < len(regexes):
            end, size = start, 0
            while end < len(regexes) and end - start < _GROUP_REGEXES and size < _GROUP_CHARS:
                size += len(regexes[end][0])
                end += 1
            self._add_group(regexes[start:end])
            start = end

    def _add_group(self, regexes: Sequence[tuple[str, _Hit]]) -> None:
        prefilter = re2.Filter()
        added: list[tuple[str, _Hit]] = []
        for regex, hit in regexes:
            if hit[0] in self.rejected:
                continue
            try:
                prefilter.Add(regex, _RE2_OPTIONS)
            except re2.error:
                self.rejected.add(hit[0])
                continue
            added.append((regex, hit))
        if any(hit[0] in self.rejected for _, hit in added):
            self._add_group(added)  # one variant of a pattern failed after the other was added
            return
        if not added:
            return
        try:
            prefilter.Compile()
        except re2.error:
            singles: list[tuple[re2._Regexp, _Hit]] = []
            for regex, hit in added:
                try:
                    singles.append((re2.compile(regex, _RE2_OPTIONS), hit))
                except re2.error:
                    self.rejected.add(hit[0])
            self._groups.append([(compiled, hit) for compiled, hit in singles if hit[0] not in self.rejected])
            return
        self._groups.append((prefilter, [hit for _, hit in added]))

    def matches(self, path: str) -> Iterator[_Hit]:
        """(pattern index, include, priority) of every regex that matches `path`, in pattern order."""
        for group in self._groups:
            if isinstance(group, tuple):
                prefilter, hits = group
                for i in prefilter.Match(path) or ():
                    yield hits[i]
            else:
                for compiled, hit in group:
                    if compiled.search(path) is not None:
                        yield hit


@dataclass(frozen=True, slots=True)
class _Layer:
    """The patterns of one ignore source (an ignore file, or the configured patterns): `files`
    matches file paths, `dirs` folder paths (which drops the trailing '/' of folder-only patterns)."""

    files: _GlobSet
    dirs: _GlobSet
    source: str
    size: int  # patterns


def _fold(state: tuple[bool, int] | None, layers: Iterable[_GlobSet], path: str) -> tuple[bool, int] | None:
    """Apply the matching patterns of `layers` to `state`, lowest precedence first, as pathspec's
    GitIgnoreSpec decides: the last pattern naming the path itself wins; failing that, the last
    pattern naming one of its folders. `state` is (ignored, priority) of the deciding match so far,
    None before any."""
    for layer in layers:
        for _, include, priority in layer.matches(path):
            if state is None or priority >= state[1]:
                state = (include, priority)
    return state


@dataclass(frozen=True, slots=True)
class Rules:
    """The ignore layers in force in one folder, rebased to the root, lowest precedence first.

    Each ignore file is compiled once, into its own layer; a folder's rules are its parent's plus
    its own ignore files, so nothing is recompiled on the way down."""

    git: tuple[_Layer, ...] = ()
    lgrep: tuple[_Layer, ...] = ()

    def extend(self, git: _Layer | None, lgrep: _Layer | None) -> Rules:
        in_force = sum(layer.size for layer in (*self.git, *self.lgrep))
        for layer in (git, lgrep):
            if layer is not None and in_force + layer.size > _MAX_PATTERNS_IN_FORCE:
                logger.warning(
                    "%s: ignoring this file: with the ignore files above it, more than %d patterns",
                    layer.source,
                    _MAX_PATTERNS_IN_FORCE,
                )
                git = None if layer is git else git
                lgrep = None if layer is lgrep else lgrep
            elif layer is not None:
                in_force += layer.size
        if git is None and lgrep is None:
            return self
        return Rules(
            self.git if git is None else (*self.git, git),
            self.lgrep if lgrep is None else (*self.lgrep, lgrep),
        )

    def ignores(self, path: str, is_dir: bool) -> bool:
        layers = (*self.git, *self.lgrep)
        state = _fold(None, (layer.dirs if is_dir else layer.files for layer in layers), path)
        return state is not None and state[0]

    def reincludes(self, path: str, is_dir: bool) -> bool:
        """Whether an lgrep-layer negation names this path itself (overriding a built-in default):
        the lgrep layers applied behind a match-everything pattern standing for the default."""
        if not self.lgrep:
            return False
        state = _fold((True, _NAMES_PATH), (layer.dirs if is_dir else layer.files for layer in self.lgrep), path)
        return state is not None and not state[0]
