"""List the files of a project that are worth indexing, in a reproducible order.

`walk` yields `WalkedFile`s sorted by their project-relative POSIX path. It never follows a
symbolic link and never raises on a file or folder it cannot read: it reports it to `on_skip` and
moves on. Files are left out silently when an ignore rule says so; files left out for any other
reason are reported as a `SkippedFile` with one of the `SKIP_*` reasons.

Ignore rules, lowest precedence first (the last matching pattern wins, as in git):

1. `.git/info/exclude` of the root and every `.gitignore` in the tree, each relative to its own
   folder (skipped when `WalkOptions.respect_gitignore` is false). Files above the root, git's
   global excludes file and the exclude file of a worktree (`.git` as a file) are not read.
2. The built-in defaults below: lock files, dependency, virtualenv, cache and build folders.
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
(`caf\\xe9.py`, see `lgrep_core.pathnames`), `WalkedFile.abs_path` keeps its real bytes, and ignore
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
"""

from __future__ import annotations

import codecs
import logging
import os
import re
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import re2
from lgrep_core.errors import LgrepError, NotFoundError
from lgrep_core.pathnames import collides, disk_path, display_name, display_path, is_utf8, open_project_file, read_up_to
from lgrep_core.secrets import path_has_secret
from lgrep_core.text import decode_text
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

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

logger = logging.getLogger(__name__)

SKIP_TOO_LARGE = "too-large"
SKIP_BINARY = "binary"
SKIP_SECRET = "secret"
SKIP_UNREADABLE = "unreadable"
SKIP_SYMLINK = "symlink"
SKIP_MINIFIED = "minified"
SKIP_GENERATED = "generated"

GITIGNORE_NAME = ".gitignore"
LGREPIGNORE_NAME = ".lgrepignore"

# Bytes inspected to classify a file (binary, generated, minified); git and ripgrep also look at 8 KiB.
_SNIFF_BYTES = 8192
# More than this share of control characters (other than whitespace, backspace, escape) means binary.
_BINARY_CONTROL_RATIO = 0.10
# The "generated" banner must sit in the header; later mentions are ordinary prose or code.
_GENERATED_HEADER_LINES = 10
# Minified .js/.css: an average line over 300 characters across at least 1 KiB. Hand-written code
# averages 30-60; minified bundles run to thousands.
_MINIFIED_MIN_SAMPLE = 1024
_MINIFIED_AVG_LINE = 300
# Ignore files larger than this are not ignore files anyone wrote by hand.
_MAX_IGNORE_FILE_BYTES = 1_000_000
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

_CACHEDIR_TAG = "CACHEDIR.TAG"
_CACHEDIR_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
_VENV_MARKER = "pyvenv.cfg"

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)

# Never descended into, never re-includable.
_VCS_DIRS = frozenset({".git", ".hg", ".svn", ".jj", ".bzr", "_darcs", "CVS"})
_VCS_FILES = frozenset({".git"})  # a worktree's or submodule's `.git` file

# Built-in default folders (layer 2): dependencies, virtualenvs, caches, build output, IDE metadata.
_DEFAULT_DIRS = frozenset(
    {
        # dependencies and vendored code
        "node_modules",
        "bower_components",
        "jspm_packages",
        "vendor",
        ".pnpm-store",
        ".yarn",
        # Python
        ".venv",
        "venv",
        "__pypackages__",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".pytype",
        ".pyre",
        ".tox",
        ".nox",
        ".hypothesis",
        ".eggs",
        ".ipynb_checkpoints",
        ".direnv",
        # build output
        "dist",
        "build",
        "target",
        "out",
        "_build",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".angular",
        ".turbo",
        ".parcel-cache",
        ".docusaurus",
        ".cache",
        ".gradle",
        ".dart_tool",
        ".stack-work",
        "elm-stuff",
        "zig-cache",
        ".zig-cache",
        "zig-out",
        ".terraform",
        ".terragrunt-cache",
        ".serverless",
        # coverage reports
        "coverage",
        "htmlcov",
        ".nyc_output",
        # IDE metadata (settings, not code; `.vscode` is kept: its tasks and launch files are small)
        ".idea",
        ".vs",
    }
)
_DEFAULT_DIR_SUFFIXES = (".egg-info",)

# Built-in default files (layer 2): lock files and other machine-written noise.
_DEFAULT_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lock",
        "deno.lock",
        "cargo.lock",
        "poetry.lock",
        "pdm.lock",
        "uv.lock",
        "pipfile.lock",
        "gemfile.lock",
        "composer.lock",
        "podfile.lock",
        "pubspec.lock",
        "mix.lock",
        "flake.lock",
        "packages.lock.json",
        "go.sum",
        "go.work.sum",
        ".terraform.lock.hcl",
        ".ds_store",
    }
)
# Source maps and SVG path data are machine-written and useless to a code search.
_DEFAULT_FILE_SUFFIXES = (".lock", ".lockfile", ".map", ".svg")

# Binary by extension: skipped without opening the file.
_BINARY_EXTENSIONS = frozenset(
    {
        # images
        *("png", "jpg", "jpeg", "gif", "bmp", "ico", "icns", "tif", "tiff", "webp", "avif", "heic"),
        *("heif", "psd", "xcf", "raw", "cr2", "nef", "dng", "jxl", "jp2", "eps", "ai", "sketch", "fig"),
        # fonts
        *("ttf", "otf", "woff", "woff2", "eot", "ttc", "fon"),
        # audio and video
        *("mp3", "wav", "flac", "ogg", "oga", "opus", "m4a", "aac", "wma", "aiff", "mid", "midi"),
        *("mp4", "m4v", "mov", "avi", "mkv", "webm", "wmv", "flv", "mpg", "mpeg", "3gp", "swf"),
        # archives and packages
        *("zip", "tar", "gz", "tgz", "bz2", "tbz2", "xz", "txz", "zst", "7z", "rar", "lz", "lz4"),
        *("lzma", "z", "cab", "jar", "war", "ear", "aar", "whl", "egg", "apk", "aab", "ipa", "deb"),
        *("rpm", "dmg", "iso", "img", "msi", "msix", "vsix", "nupkg", "gem", "crx", "xpi", "lockb"),
        # compiled code and objects
        *("exe", "dll", "so", "dylib", "a", "lib", "o", "obj", "ko", "bin", "elf", "class", "dex"),
        *("pyc", "pyo", "pyd", "wasm", "beam", "node", "pdb", "ilk", "exp", "idb", "rlib", "rmeta"),
        # documents
        *("pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "rtf", "epub"),
        # databases and data
        *("db", "sqlite", "sqlite3", "mdb", "accdb", "dbf", "npy", "npz", "pkl", "pickle", "joblib"),
        *("h5", "hdf5", "parquet", "feather", "arrow", "avro", "orc", "onnx", "pt", "pth", "ckpt"),
        *("safetensors", "tflite", "gguf", "mat", "sav", "dat", "lance", "idx"),
        # 3D, CAD and design
        *("blend", "fbx", "glb", "3ds", "max", "dwg", "stl", "usdz"),
    }
)

_GENERATED_SUFFIXES = (
    ".pb.go",
    ".pb.gw.go",
    "_pb2.py",
    "_pb2.pyi",
    "_pb2_grpc.py",
    "_pb2_grpc.pyi",
    ".pb.cc",
    ".pb.h",
    ".pb.swift",
    "_pb.js",
    "_pb.d.ts",
    "_grpc_pb.js",
    "_grpc_pb.d.ts",
    ".g.dart",
    ".freezed.dart",
    ".designer.cs",
)
_GENERATED_PREFIXES = ("zz_generated.",)
_GENERATED_INFIX = ".generated."
_MINIFIED_SUFFIXES = (".min.js", ".min.mjs", ".min.cjs", ".min.css")
_MINIFIABLE_EXTENSIONS = frozenset({"js", "mjs", "cjs", "css"})

_GENERATED_BANNER = re.compile(
    r"(?<![\w@])@generated\b"
    r"|\bgenerated\b.{0,120}\bdo not (?:edit|modify)\b"
    r"|\bdo not (?:edit|modify)\b.{0,120}\bgenerated\b"
    r"|^\W*(?:this (?:file|code|module) (?:is|was|has been) )?"
    r"(?:auto-?generated|automatically generated|machine generated)\b",
    re.IGNORECASE | re.MULTILINE,
)

_SECRET_NAMES = frozenset(
    {
        ".env",
        ".envrc",
        ".npmrc",
        ".pypirc",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".git-credentials",
        ".htpasswd",
        "credentials.json",
        "secrets.yaml",
        "secrets.yml",
        "secrets.json",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
    }
)
_SECRET_SUFFIXES = (
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".jks",
    ".keystore",
    ".kdbx",
    ".p8",
    ".ppk",
    ".tfstate",
    ".tfstate.backup",
)
# (parent folder, file name) pairs: credentials stored under a tool's dot-folder.
_SECRET_IN_DIR = frozenset({(".aws", "credentials"), (".docker", "config.json"), (".kube", "config")})
# `.env.example` and friends document the variables and hold no values; they are worth indexing.
_ENV_TEMPLATE_PARTS = frozenset({"example", "sample", "template", "dist"})

# Bytes that occur in text: printable ASCII, high bytes (UTF-8, legacy code pages), and the
# whitespace and control characters source files use (BEL, BS, TAB, LF, VT, FF, CR, ESC).
_TEXT_BYTES = bytes({7, 8, 9, 10, 11, 12, 13, 27} | set(range(0x20, 0x100)) - {0x7F})
_UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


@dataclass(frozen=True, slots=True)
class WalkedFile:
    """A file to index. `path` is relative to the root, '/'-separated, without '.' or '..' parts."""

    path: str
    abs_path: Path
    size: int
    mtime_ns: int


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
    walker = _Walker(root_abs, options or WalkOptions(), on_skip)
    return walker.run()


def read_text(file: WalkedFile, max_file_bytes: int) -> str | None:
    """Read and decode a walked file for indexing; never raises.

    Returns None when the file should not be indexed after all: it is binary, it grew past
    `max_file_bytes`, or it vanished or became unreadable since the walk.
    """
    # Opened name by name below the root, no symlink followed (lgrep_core.pathnames): a folder
    # swapped for a symlink since the walk listed it cannot lead the read out of the project.
    depth = file.path.count("/") + 1
    parts = file.abs_path.parts
    try:
        fd, st = open_project_file(Path(*parts[:-depth]), "/".join(parts[-depth:]))
    except LgrepError as exc:
        logger.debug("cannot open %s: %s", file.path, exc.message)
        return None
    try:
        if st.st_size > max_file_bytes:
            return None
        data = read_up_to(fd, max_file_bytes + 1)
    except OSError as exc:
        logger.debug("cannot read %s: %s", file.path, exc)
        return None
    finally:
        os.close(fd)
    if len(data) > max_file_bytes or _looks_binary(data[:_SNIFF_BYTES]):
        return None
    return decode_text(data)


def is_secret_path(path: str) -> bool:
    """Whether a file at this project-relative path must never be indexed (keys, tokens, credentials)."""
    parts = path.replace("\\", "/").rsplit("/", 2)
    name = parts[-1].lower()
    parent = parts[-2].lower() if len(parts) > 1 else ""
    if name in _SECRET_NAMES or name.endswith(_SECRET_SUFFIXES) or (parent, name) in _SECRET_IN_DIR:
        return True
    if name.startswith(".env.") or name.endswith(".env"):
        return _ENV_TEMPLATE_PARTS.isdisjoint(name.split("."))
    if name.endswith(".json") and ("credentials" in name or name.startswith("client_secret")):
        return True
    # A token in the path (`tokens/ghp_....txt`, `backup/hvs....`): a credential store by its name,
    # and the name itself would reach the index, search results and the embedder (ADR 0005).
    return path_has_secret(path)


# --- ignore rules -------------------------------------------------------------------------------


def _escape_glob(text: str) -> str:
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


def _compile(lines: Iterable[str], prefix: str, source: str) -> _Layer | None:
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
    glob of the `\\xNN` that paths show for it (lgrep_core.pathnames), any other surrogate as U+FFFD."""
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
class _Rules:
    """The ignore layers in force in one folder, rebased to the root, lowest precedence first.

    Each ignore file is compiled once, into its own layer; a folder's rules are its parent's plus
    its own ignore files, so nothing is recompiled on the way down."""

    git: tuple[_Layer, ...] = ()
    lgrep: tuple[_Layer, ...] = ()

    def extend(self, git: _Layer | None, lgrep: _Layer | None) -> _Rules:
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
        return _Rules(
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


def _is_default_dir(name: str) -> bool:
    return name in _DEFAULT_DIRS or name.endswith(_DEFAULT_DIR_SUFFIXES)


def _is_default_file(lower_name: str) -> bool:
    return lower_name in _DEFAULT_FILES or lower_name.endswith(_DEFAULT_FILE_SUFFIXES)


def _extension(lower_name: str) -> str:
    dot = lower_name.rfind(".")
    return lower_name[dot + 1 :] if dot > 0 else ""


def _is_generated_name(lower_name: str) -> bool:
    return (
        lower_name.endswith(_GENERATED_SUFFIXES)
        or lower_name.startswith(_GENERATED_PREFIXES)
        or _GENERATED_INFIX in lower_name
    )


# --- content ------------------------------------------------------------------------------------


def _name_verdict(lower_name: str, rel: str, rules: _Rules) -> str | None:
    """Why a file is skipped by its name alone (a credential, a binary extension, a generated or
    minified name that no lgrep negation re-includes), or None. The walk and TreeRules share it."""
    if is_secret_path(rel):
        return SKIP_SECRET
    if _extension(lower_name) in _BINARY_EXTENSIONS:
        return SKIP_BINARY
    by_name = (
        SKIP_GENERATED
        if _is_generated_name(lower_name)
        else SKIP_MINIFIED
        if lower_name.endswith(_MINIFIED_SUFFIXES)
        else None
    )
    return by_name if by_name is not None and not rules.reincludes(rel, is_dir=False) else None


def _content_verdict(head: bytes, lower_name: str, rel: str, rules: _Rules) -> str | None:
    """Why a file is skipped by its first bytes (binary; a generated banner or minified text that
    no lgrep negation re-includes), or None. A generated or minified *name* that was re-included is
    kept whatever its content says."""
    if _looks_binary(head):
        return SKIP_BINARY
    if _is_generated_name(lower_name) or lower_name.endswith(_MINIFIED_SUFFIXES):
        return None  # only reached when a negation re-included the name
    reason = (
        SKIP_GENERATED
        if _has_generated_banner(head)
        else SKIP_MINIFIED
        if _extension(lower_name) in _MINIFIABLE_EXTENSIONS and _looks_minified(head)
        else None
    )
    return reason if reason is not None and not rules.reincludes(rel, is_dir=False) else None


def _looks_binary(head: bytes) -> bool:
    if not head or head.startswith(_UTF32_BOMS) or head.startswith(_UTF16_BOMS):
        return False
    if b"\x00" in head:
        return True
    control = len(head.translate(None, _TEXT_BYTES))
    return control > len(head) * _BINARY_CONTROL_RATIO


def _has_generated_banner(head: bytes) -> bool:
    if head.startswith(_UTF32_BOMS) or head.startswith(_UTF16_BOMS):
        header = "\n".join(decode_text(head).splitlines()[:_GENERATED_HEADER_LINES])
    else:
        raw = b"\n".join(head.split(b"\n", _GENERATED_HEADER_LINES)[:_GENERATED_HEADER_LINES])
        if b"generated" not in raw.lower():  # every banner says "generated"; skip the regex
            return False
        header = decode_text(raw)
    return _GENERATED_BANNER.search(header) is not None


def _looks_minified(head: bytes) -> bool:
    if len(head) < _MINIFIED_MIN_SAMPLE:
        return False
    return len(head) / (head.count(b"\n") + 1) > _MINIFIED_AVG_LINE


# --- the walk -----------------------------------------------------------------------------------


class _Entry(Protocol):
    """What the walk asks of a folder entry, never following a symlink: an `os.DirEntry` of a
    listing, or a `_PathEntry` when `PathRules` looks at one path on its own."""

    @property
    def path(self) -> str: ...

    def is_dir(self, *, follow_symlinks: bool = True) -> bool: ...

    def is_file(self, *, follow_symlinks: bool = True) -> bool: ...

    def is_symlink(self) -> bool: ...


class _PathEntry:
    """An entry known by the `lstat` of its path (what `os.DirEntry` knows from a listing)."""

    __slots__ = ("_mode", "path")

    def __init__(self, path: str, mode: int) -> None:
        self.path = path
        self._mode = mode

    @classmethod
    def lstat(cls, path: str) -> _PathEntry | None:
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


class _Walker:
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
        rules = self._root_rules()
        listing = self._list(str(self._root), "", rules, is_root=True)
        if listing is None:
            return
        # Depth-first over folders whose entries are sorted by name + ('/' if folder): this visits
        # paths in plain string order of the full relative path.
        stack: list[tuple[Iterator[tuple[str, os.DirEntry[str]]], str, _Rules]] = [(iter(listing[0]), "", listing[1])]
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
                if not self._keep_dir(name, rel, rules):
                    continue
                child = self._list(entry.path, rel + "/", rules, is_root=False)
                if child is not None:
                    stack.append((iter(child[0]), rel + "/", child[1]))
            else:
                walked = self._check_file(entry, name, rel, rules)
                if walked is not None:
                    yield walked

    def _root_rules(self) -> _Rules:
        git = None
        if self._options.respect_gitignore:
            git_dir = self._root / ".git"
            # Neither `.git` nor `.git/info` may be a symlink: it could lead the read out of the root.
            if git_dir.is_dir() and not git_dir.is_symlink() and not (git_dir / "info").is_symlink():
                lines = self._read_ignore_file(str(git_dir / "info" / "exclude"), ".git/info/exclude")
                if lines:
                    git = _compile(lines, "", ".git/info/exclude")
        extra = _compile(self._options.extra_ignore_patterns, "", "index.ignore_patterns")
        return _Rules().extend(git, extra)

    def _keep_dir(self, name: str, rel: str, rules: _Rules) -> bool:
        if name in _VCS_DIRS or rel in self._excluded_dirs:
            return False
        if _is_default_dir(name):
            if not rules.reincludes(rel, is_dir=True):
                return False
        elif rules.ignores(rel, is_dir=True):
            return False
        return True

    def _list(
        self, abs_dir: str, prefix: str, rules: _Rules, *, is_root: bool
    ) -> tuple[list[tuple[str, os.DirEntry[str]]], _Rules] | None:
        """List a folder: its entries with their displayed names (lgrep_core.pathnames), sorted for
        the walk, and the rules in force inside it."""
        try:
            with os.scandir(abs_dir) as scan:
                entries = list(scan)
        except OSError as exc:
            logger.warning("cannot list %s: %s", abs_dir, exc)
            self._skip(prefix.rstrip("/") or ".", SKIP_UNREADABLE)
            return None
        by_name = {entry.name: entry for entry in entries}
        inner = self._folder_rules(prefix[:-1], rules, by_name.get, is_root=is_root)
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

    def _folder_rules(
        self, rel: str, rules: _Rules, lookup: Callable[[str], _Entry | None], *, is_root: bool
    ) -> _Rules | None:
        """The rules in force inside the folder `rel` ('' at the root): its parent's `rules` plus its
        own ignore files. None when the walk does not enter it: it holds a cache tag, or it is a
        virtualenv that no lgrep negation re-includes. `lookup` finds an entry of the folder by name."""
        if not is_root:
            tag = lookup(_CACHEDIR_TAG)
            if tag is not None and self._is_cachedir_tag(tag):
                return None
            if lookup(_VENV_MARKER) is not None and not rules.reincludes(rel, is_dir=True):
                return None
        prefix = rel + "/" if rel else ""
        escaped = "".join(_escape_glob(part) + "/" for part in prefix.split("/")[:-1])
        git = lgrep = None
        if self._options.respect_gitignore and (entry := lookup(GITIGNORE_NAME)) is not None:
            lines = self._read_ignore_entry(entry, prefix + GITIGNORE_NAME)
            git = _compile(lines, escaped, prefix + GITIGNORE_NAME) if lines else None
        if (entry := lookup(LGREPIGNORE_NAME)) is not None:
            lines = self._read_ignore_entry(entry, prefix + LGREPIGNORE_NAME)
            lgrep = _compile(lines, escaped, prefix + LGREPIGNORE_NAME) if lines else None
        return rules.extend(git, lgrep)

    @staticmethod
    def _is_cachedir_tag(entry: _Entry) -> bool:
        try:
            if not entry.is_file(follow_symlinks=False):
                return False
            fd = os.open(entry.path, _OPEN_FLAGS)
            try:
                return os.read(fd, len(_CACHEDIR_SIGNATURE)) == _CACHEDIR_SIGNATURE
            finally:
                os.close(fd)
        except OSError:
            return False

    def _read_ignore_entry(self, entry: _Entry, rel: str) -> list[str]:
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
            if size > _MAX_IGNORE_FILE_BYTES:
                logger.warning(
                    "%s is %d bytes, over the %d an ignore file may have: not read", rel, size, _MAX_IGNORE_FILE_BYTES
                )
                return []
            data = read_up_to(fd, _MAX_IGNORE_FILE_BYTES)
        except OSError as exc:
            logger.warning("cannot read %s: %s", rel, exc)
            return []
        finally:
            os.close(fd)
        return data.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace").splitlines()

    @staticmethod
    def _ignored_file(name: str, rel: str, rules: _Rules) -> bool:
        """Whether the ignore rules leave a file out silently: a version-control file, a built-in
        default that no lgrep negation re-includes, or a file an ignore pattern names."""
        if name in _VCS_FILES:
            return True
        if _is_default_file(name.lower()):
            return not rules.reincludes(rel, is_dir=False)
        return rules.ignores(rel, is_dir=False)

    def _check_file(self, entry: _Entry, name: str, rel: str, rules: _Rules) -> WalkedFile | None:
        if self._ignored_file(name, rel, rules):
            return None
        lower = name.lower()
        if entry.is_symlink():
            self._skip(rel, SKIP_SYMLINK)
            return None
        by_name = _name_verdict(lower, rel, rules)
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
            head = os.read(fd, _SNIFF_BYTES)
        except OSError as exc:
            logger.debug("cannot read %s: %s", rel, exc)
            self._skip(rel, SKIP_UNREADABLE)
            return None
        finally:
            os.close(fd)

        by_content = _content_verdict(head, lower, rel, rules)
        if by_content is not None:
            self._skip(rel, by_content)
            return None
        return WalkedFile(rel, Path(entry.path), st.st_size, st.st_mtime_ns)


def _sort_key(item: tuple[str, os.DirEntry[str]]) -> str:
    name, entry = item
    try:
        return name + "/" if entry.is_dir(follow_symlinks=False) else name
    except OSError:
        return name


# --- one path at a time -------------------------------------------------------------------------


class PathRules:
    """The walk's decision about single project-relative paths, without walking the project.

    It runs the walker's own rule code (`_Walker`): a folder's rules are its parent's plus its own
    ignore files, each folder is looked at once (`lstat` of its markers and ignore files, not a
    listing) and its rules are cached, so asking about a path costs a dictionary lookup and the
    pattern match of its name. For the file watcher (is an event worth reporting?) and for indexing
    a list of paths (`Indexer.update`).

    Paths are '/'-separated, relative to the root, without '.' or '..' parts, names shown as the
    walk shows them (`lgrep_core.pathnames`); anything else (absolute, '..', empty) is never
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
        self._walker = _Walker(self.root, self.options, self._skipped.append)
        self._folders: dict[str, _Rules | None] = {}

    def considers(self, path: str, *, is_dir: bool = False) -> bool:
        """Whether the walk would look at this path: every folder above it is entered and no ignore
        rule (version-control names, built-in defaults, ignore files, configured patterns, cache
        tags and virtualenv markers of its folders) leaves it out. Checks by name and rules only: a
        considered file may still be skipped for its content, size, name (secrets, binary and
        generated names) or type (`check` says)."""
        parts = _relative_parts(path)
        if parts is None:
            return False
        if is_dir:
            return self._folder(parts) is not None
        rules = self._folder(parts[:-1])
        return rules is not None and not _Walker._ignored_file(parts[-1], path, rules)

    def check(self, path: str) -> WalkedFile | SkippedFile | None:
        """What the walk would do with the file at `path` now: the `WalkedFile` it would yield, the
        `SkippedFile` it would report (too large, binary, secret, symlink, generated, ...), or None
        when it would not see it at all (ignored, missing, a folder or another non-regular file)."""
        parts = _relative_parts(path)
        if parts is None:
            return None
        rules = self._folder(parts[:-1])
        if rules is None:
            return None
        entry = _PathEntry.lstat(str(disk_path(self.root, path)))
        if entry is None or entry.is_dir(follow_symlinks=False):
            return None
        self._skipped.clear()
        walked = self._walker._check_file(entry, parts[-1], path, rules)
        if walked is not None:
            return walked
        return self._skipped[-1] if self._skipped else None

    def is_rule_source(self, path: str) -> bool:
        """Whether a change to this file can change what the walk considers: an ignore file
        (`.lgrepignore`, and `.gitignore` unless git's rules are off), `.git/info/exclude`, or the
        `CACHEDIR.TAG` / `pyvenv.cfg` that make the walk skip a folder, in a folder the walk enters.
        (The project's `.lgrep.yaml` changes the options themselves: see lgrep_core.config.)"""
        parts = _relative_parts(path)
        if parts is None:
            return False
        name, folder = parts[-1], parts[:-1]
        if parts == [".git", "info", "exclude"]:
            return self.options.respect_gitignore
        is_source = (
            name == LGREPIGNORE_NAME
            or (name == GITIGNORE_NAME and self.options.respect_gitignore)
            or (name in (_CACHEDIR_TAG, _VENV_MARKER) and bool(folder))
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

    def _folder(self, parts: Sequence[str]) -> _Rules | None:
        """The rules in force inside a folder, or None when the walk does not enter it."""
        depth = len(parts)
        while depth and "/".join(parts[:depth]) not in self._folders:
            depth -= 1
        if depth == 0 and "" not in self._folders:
            root = str(self.root)
            self._folders[""] = self._walker._folder_rules(
                "", self._walker._root_rules(), lambda name: _PathEntry.lstat(f"{root}/{name}"), is_root=True
            )
        rules = self._folders["/".join(parts[:depth])]
        while rules is not None and depth < len(parts):
            rel = "/".join(parts[: depth + 1])
            rules, exists = self._enter(parts[depth], rel, rules)
            if exists:
                self._folders[rel] = rules
            depth += 1
        return rules

    def _enter(self, name: str, rel: str, parent: _Rules) -> tuple[_Rules | None, bool]:
        """(rules inside the folder `rel` or None when the walk does not enter it, whether it exists)."""
        abs_dir = str(disk_path(self.root, rel))
        entry = _PathEntry.lstat(abs_dir)
        if entry is not None and not entry.is_dir(follow_symlinks=False):
            return None, True  # a symlink or a file: the walk never enters it
        if not self._walker._keep_dir(name, rel, parent):
            return None, entry is not None
        if entry is None:
            return parent, False

        def lookup(child: str) -> _Entry | None:
            return _PathEntry.lstat(f"{abs_dir}/{child}")

        return self._walker._folder_rules(rel, parent, lookup, is_root=False), True


def is_project_path(path: str) -> bool:
    """Whether `path` has the form of a project-relative path: '/'-separated names, none empty, '.'
    or '..', not absolute. Anything else never names a file of the project."""
    return _relative_parts(path) is not None


def _relative_parts(path: str) -> list[str] | None:
    """The names of a project-relative path, or None when it is not one (absolute, empty names,
    '.' or '..', a NUL)."""
    if not path or "\x00" in path:
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


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
        root = _Rules().extend(None, _compile(options.extra_ignore_patterns, "", "index.ignore_patterns"))
        self._folders: dict[str, _Rules | None] = {"": self._own_rules("", root)}

    def _own_rules(self, folder: str, parent: _Rules) -> _Rules:
        prefix = folder + "/" if folder else ""
        if prefix + LGREPIGNORE_NAME not in self._paths:
            return parent
        data = self._read_ignore(prefix + LGREPIGNORE_NAME, _MAX_IGNORE_FILE_BYTES) or b""
        lines = data[:_MAX_IGNORE_FILE_BYTES].removeprefix(codecs.BOM_UTF8).decode("utf-8", "replace").splitlines()
        escaped = "".join(_escape_glob(part) + "/" for part in prefix.split("/")[:-1])
        return parent.extend(None, _compile(lines, escaped, prefix + LGREPIGNORE_NAME) if lines else None)

    def _folder(self, folder: str) -> _Rules | None:
        if folder in self._folders:
            return self._folders[folder]
        parent_name, _, name = folder.rpartition("/")
        parent = self._folder(parent_name)
        rules: _Rules | None = None
        if parent is not None:
            if name in _VCS_DIRS:
                rules = None
            elif _is_default_dir(name) or (
                f"{folder}/{_CACHEDIR_TAG}" in self._paths or f"{folder}/{_VENV_MARKER}" in self._paths
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
        if rules is None or _Walker._ignored_file(name, path, rules):
            return None
        if is_symlink:
            return SKIP_SYMLINK
        by_name = _name_verdict(name.lower(), path, rules)
        if by_name is not None:
            return by_name
        return SKIP_TOO_LARGE if size > self._options.max_file_bytes else ""

    def judge_content(self, path: str, data: bytes) -> str:
        """By content (binary, generated banner, minified), as the walk judges a file's first
        bytes: a skip reason, or "" to index it."""
        folder, _, name = path.rpartition("/")
        rules = self._folder(folder) or _Rules()
        return _content_verdict(data[:_SNIFF_BYTES], name.lower(), path, rules) or ""
