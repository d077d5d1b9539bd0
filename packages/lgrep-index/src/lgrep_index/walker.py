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

Never indexed, whatever the ignore files say: version-control folders (`.git`, `.hg`, `.svn`,
`.jj`, ...), the lgrep cache (`WalkOptions.cache_dir`, and any folder holding a `CACHEDIR.TAG`),
secrets (`is_secret_path`), symbolic links, binary files (by extension, a NUL byte in the first
8 KiB, or too many control characters), and files larger than `max_file_bytes`.

Reported but overridable by an `.lgrepignore` negation naming the file: minified files (`*.min.js`
or a very long average line in a `.js`/`.css` file) and generated files (`*.pb.go`, `*_pb2.py`,
`*.generated.*`, ..., or a "generated, do not edit" banner in the first lines).

`vendor/` folders are excluded by default: Go, PHP and Ruby keep third-party code there, which
drowns a project's own code in search results. Re-include them with `!vendor/` in `.lgrepignore`.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lgrep_core.errors import NotFoundError
from pathspec import GitIgnoreSpec
from pathspec.pattern import Pattern

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
_NON_ASCII_DECODED = re.compile("[^\x00-\x7f\ufffd]")


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
    try:
        fd = os.open(file.abs_path, _OPEN_FLAGS)
    except OSError as exc:
        logger.debug("cannot open %s: %s", file.path, exc)
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_file_bytes:
            return None
        data = _read_up_to(fd, max_file_bytes + 1)
    except OSError as exc:
        logger.debug("cannot read %s: %s", file.path, exc)
        return None
    finally:
        os.close(fd)
    if len(data) > max_file_bytes or _looks_binary(data[:_SNIFF_BYTES]):
        return None
    return _decode(data)


def is_secret_path(path: str) -> bool:
    """Whether a file at this project-relative path must never be indexed (keys, tokens, credentials)."""
    parts = path.replace("\\", "/").rsplit("/", 2)
    name = parts[-1].lower()
    parent = parts[-2].lower() if len(parts) > 1 else ""
    if name in _SECRET_NAMES or name.endswith(_SECRET_SUFFIXES) or (parent, name) in _SECRET_IN_DIR:
        return True
    if name.startswith(".env.") or name.endswith(".env"):
        return _ENV_TEMPLATE_PARTS.isdisjoint(name.split("."))
    return name.endswith(".json") and ("credentials" in name or name.startswith("client_secret"))


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


def _compile(lines: Iterable[str], prefix: str, source: str) -> tuple[list[Pattern], list[Pattern]]:
    """Compile ignore lines into (file patterns, folder patterns); invalid lines are logged and dropped."""
    file_patterns: list[Pattern] = []
    dir_patterns: list[Pattern] = []
    for line in lines:
        rebased = _rebase(line, prefix)
        if rebased is None:
            continue
        try:
            file_pattern = GitIgnoreSpec.from_lines([rebased[0]]).patterns[0]
            dir_pattern = GitIgnoreSpec.from_lines([rebased[1]]).patterns[0]
        except (ValueError, re.error) as exc:  # pathspec raises re.error for some bad ranges
            logger.warning("%s: ignoring invalid pattern %r: %s", source, line, exc)
            continue
        file_patterns.append(file_pattern)
        dir_patterns.append(dir_pattern)
    return file_patterns, dir_patterns


_MATCH_ALL: Pattern = GitIgnoreSpec.from_lines(["*"]).patterns[0]


def _spec(patterns: Sequence[Pattern]) -> GitIgnoreSpec | None:
    # The patterns came out of GitIgnoreSpec.from_lines; its pattern class differs between pathspec
    # 0.12 and 1.x, so they are typed as the common base.
    return GitIgnoreSpec(patterns) if patterns else None  # pyright: ignore[reportArgumentType]


@dataclass(frozen=True, slots=True)
class _Rules:
    """The ignore patterns in force in one folder, rebased to the root, lowest precedence first."""

    git_files: tuple[Pattern, ...]
    git_dirs: tuple[Pattern, ...]
    lgrep_files: tuple[Pattern, ...]
    lgrep_dirs: tuple[Pattern, ...]
    file_spec: GitIgnoreSpec | None
    dir_spec: GitIgnoreSpec | None
    # The lgrep layers behind a match-everything pattern standing for a built-in default that
    # matches the path: the answer is "ignored" unless an lgrep pattern matching the path itself
    # (not one of its folders) says otherwise.
    override_file_spec: GitIgnoreSpec | None
    override_dir_spec: GitIgnoreSpec | None

    @classmethod
    def build(
        cls,
        git_files: Sequence[Pattern],
        git_dirs: Sequence[Pattern],
        lgrep_files: Sequence[Pattern],
        lgrep_dirs: Sequence[Pattern],
    ) -> _Rules:
        return cls(
            tuple(git_files),
            tuple(git_dirs),
            tuple(lgrep_files),
            tuple(lgrep_dirs),
            _spec([*git_files, *lgrep_files]),
            _spec([*git_dirs, *lgrep_dirs]),
            _spec([_MATCH_ALL, *lgrep_files]) if lgrep_files else None,
            _spec([_MATCH_ALL, *lgrep_dirs]) if lgrep_dirs else None,
        )

    def extend(
        self,
        git: tuple[list[Pattern], list[Pattern]] | None,
        lgrep: tuple[list[Pattern], list[Pattern]] | None,
    ) -> _Rules:
        if not (git and git[0]) and not (lgrep and lgrep[0]):
            return self
        git = git or ([], [])
        lgrep = lgrep or ([], [])
        return _Rules.build(
            [*self.git_files, *git[0]],
            [*self.git_dirs, *git[1]],
            [*self.lgrep_files, *lgrep[0]],
            [*self.lgrep_dirs, *lgrep[1]],
        )

    def ignores(self, path: str, is_dir: bool) -> bool:
        spec = self.dir_spec if is_dir else self.file_spec
        return spec is not None and spec.check_file(path).include is True

    def reincludes(self, path: str, is_dir: bool) -> bool:
        """Whether an lgrep-layer negation names this path itself (overriding a built-in default)."""
        spec = self.override_dir_spec if is_dir else self.override_file_spec
        return spec is not None and spec.check_file(path).include is False


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


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _looks_binary(head: bytes) -> bool:
    if not head or head.startswith(_UTF32_BOMS) or head.startswith(_UTF16_BOMS):
        return False
    if b"\x00" in head:
        return True
    control = len(head.translate(None, _TEXT_BYTES))
    return control > len(head) * _BINARY_CONTROL_RATIO


def _decode(data: bytes) -> str:
    for bom, encoding in (*((b, "utf-32") for b in _UTF32_BOMS), *((b, "utf-16") for b in _UTF16_BOMS)):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    if _NON_ASCII_DECODED.search(text):
        return text  # mostly UTF-8 with a few bad bytes
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _has_generated_banner(head: bytes) -> bool:
    if head.startswith(_UTF32_BOMS) or head.startswith(_UTF16_BOMS):
        header = "\n".join(_decode(head).splitlines()[:_GENERATED_HEADER_LINES])
    else:
        raw = b"\n".join(head.split(b"\n", _GENERATED_HEADER_LINES)[:_GENERATED_HEADER_LINES])
        if b"generated" not in raw.lower():  # every banner says "generated"; skip the regex
            return False
        header = _decode(raw)
    return _GENERATED_BANNER.search(header) is not None


def _looks_minified(head: bytes) -> bool:
    if len(head) < _MINIFIED_MIN_SAMPLE:
        return False
    return len(head) / (head.count(b"\n") + 1) > _MINIFIED_AVG_LINE


# --- the walk -----------------------------------------------------------------------------------


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
        return frozenset({rel.as_posix()}) if rel.parts else frozenset()

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
        stack: list[tuple[Iterator[os.DirEntry[str]], str, _Rules]] = [(iter(listing[0]), "", listing[1])]
        while stack:
            entries, prefix, rules = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            rel = prefix + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                self._skip(rel, SKIP_UNREADABLE)
                continue
            if is_dir:
                if not self._keep_dir(entry.name, rel, rules):
                    continue
                child = self._list(entry.path, rel + "/", rules, is_root=False)
                if child is not None:
                    stack.append((iter(child[0]), rel + "/", child[1]))
            else:
                walked = self._check_file(entry, rel, rules)
                if walked is not None:
                    yield walked

    def _root_rules(self) -> _Rules:
        git: tuple[list[Pattern], list[Pattern]] = ([], [])
        if self._options.respect_gitignore:
            git_dir = self._root / ".git"
            if git_dir.is_dir() and not git_dir.is_symlink():
                lines = self._read_ignore_file(str(git_dir / "info" / "exclude"), ".git/info/exclude")
                if lines:
                    git = _compile(lines, "", ".git/info/exclude")
        extra = _compile(self._options.extra_ignore_patterns, "", "index.ignore_patterns")
        return _Rules.build(git[0], git[1], extra[0], extra[1])

    def _keep_dir(self, name: str, rel: str, rules: _Rules) -> bool:
        if name in _VCS_DIRS or rel in self._excluded_dirs:
            return False
        if _is_default_dir(name):
            if not rules.reincludes(rel, is_dir=True):
                return False
        elif rules.ignores(rel, is_dir=True):
            return False
        if not name.isascii() and not _encodable(name):
            self._skip(rel, SKIP_UNREADABLE)
            return False
        return True

    def _list(
        self, abs_dir: str, prefix: str, rules: _Rules, *, is_root: bool
    ) -> tuple[list[os.DirEntry[str]], _Rules] | None:
        """List a folder: its entries sorted for the walk, and the rules in force inside it."""
        try:
            with os.scandir(abs_dir) as scan:
                entries = list(scan)
        except OSError as exc:
            logger.warning("cannot list %s: %s", abs_dir, exc)
            self._skip(prefix.rstrip("/") or ".", SKIP_UNREADABLE)
            return None
        by_name = {entry.name: entry for entry in entries}
        if not is_root:
            rel = prefix[:-1]
            if _CACHEDIR_TAG in by_name and self._is_cachedir_tag(by_name[_CACHEDIR_TAG]):
                return None
            if _VENV_MARKER in by_name and not rules.reincludes(rel, is_dir=True):
                return None
        escaped = "".join(_escape_glob(part) + "/" for part in prefix.split("/")[:-1])
        git = lgrep = None
        if self._options.respect_gitignore and GITIGNORE_NAME in by_name:
            lines = self._read_ignore_entry(by_name[GITIGNORE_NAME], prefix + GITIGNORE_NAME)
            git = _compile(lines, escaped, prefix + GITIGNORE_NAME) if lines else None
        if LGREPIGNORE_NAME in by_name:
            lines = self._read_ignore_entry(by_name[LGREPIGNORE_NAME], prefix + LGREPIGNORE_NAME)
            lgrep = _compile(lines, escaped, prefix + LGREPIGNORE_NAME) if lines else None
        entries.sort(key=_sort_key)
        return entries, rules.extend(git, lgrep)

    @staticmethod
    def _is_cachedir_tag(entry: os.DirEntry[str]) -> bool:
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

    def _read_ignore_entry(self, entry: os.DirEntry[str], rel: str) -> list[str]:
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
            data = _read_up_to(fd, _MAX_IGNORE_FILE_BYTES)
        except OSError as exc:
            logger.warning("cannot read %s: %s", rel, exc)
            return []
        finally:
            os.close(fd)
        return data.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace").splitlines()

    def _check_file(self, entry: os.DirEntry[str], rel: str, rules: _Rules) -> WalkedFile | None:
        name = entry.name
        lower = name.lower()
        if name in _VCS_FILES:
            return None
        if _is_default_file(lower):
            if not rules.reincludes(rel, is_dir=False):
                return None
        elif rules.ignores(rel, is_dir=False):
            return None

        if entry.is_symlink():
            self._skip(rel, SKIP_SYMLINK)
            return None
        if not name.isascii() and not _encodable(name):
            self._skip(rel, SKIP_UNREADABLE)
            return None
        if is_secret_path(rel):
            self._skip(rel, SKIP_SECRET)
            return None
        extension = _extension(lower)
        if extension in _BINARY_EXTENSIONS:
            self._skip(rel, SKIP_BINARY)
            return None
        # Generated or minified by name, or by content: an lgrep negation naming the file keeps it.
        by_name = (
            SKIP_GENERATED
            if _is_generated_name(lower)
            else SKIP_MINIFIED
            if lower.endswith(_MINIFIED_SUFFIXES)
            else None
        )
        if by_name is not None and not rules.reincludes(rel, is_dir=False):
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

        if _looks_binary(head):
            self._skip(rel, SKIP_BINARY)
            return None
        if by_name is None:
            reason = (
                SKIP_GENERATED
                if _has_generated_banner(head)
                else SKIP_MINIFIED
                if extension in _MINIFIABLE_EXTENSIONS and _looks_minified(head)
                else None
            )
            if reason is not None and not rules.reincludes(rel, is_dir=False):
                self._skip(rel, reason)
                return None
        return WalkedFile(rel, Path(entry.path), st.st_size, st.st_mtime_ns)


def _sort_key(entry: os.DirEntry[str]) -> str:
    try:
        return entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name
    except OSError:
        return entry.name


def _encodable(name: str) -> bool:
    """Whether a file name is valid Unicode (not raw bytes smuggled in as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
