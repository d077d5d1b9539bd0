"""The built-in rules by name: folders and files never indexed or left out by default (version
control, dependencies, virtualenvs, caches, build output, lock files), the ignore files and marker
files the walk looks for, binary extensions, and generated and minified file names."""

from __future__ import annotations

__all__ = [
    "BINARY_EXTENSIONS",
    "CACHEDIR_SIGNATURE",
    "CACHEDIR_TAG",
    "GITIGNORE_NAME",
    "LGREPIGNORE_NAME",
    "MINIFIED_SUFFIXES",
    "VCS_DIRS",
    "VCS_FILES",
    "VENV_MARKER",
    "extension",
    "is_default_dir",
    "is_default_file",
    "is_generated_name",
]

GITIGNORE_NAME = ".gitignore"
LGREPIGNORE_NAME = ".lgrepignore"

CACHEDIR_TAG = "CACHEDIR.TAG"
CACHEDIR_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
VENV_MARKER = "pyvenv.cfg"

# Never descended into, never re-includable.
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".jj", ".bzr", "_darcs", "CVS"})
VCS_FILES = frozenset({".git"})  # a worktree's or submodule's `.git` file

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
BINARY_EXTENSIONS = frozenset(
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
MINIFIED_SUFFIXES = (".min.js", ".min.mjs", ".min.cjs", ".min.css")


def is_default_dir(name: str) -> bool:
    return name in _DEFAULT_DIRS or name.endswith(_DEFAULT_DIR_SUFFIXES)


def is_default_file(lower_name: str) -> bool:
    return lower_name in _DEFAULT_FILES or lower_name.endswith(_DEFAULT_FILE_SUFFIXES)


def extension(lower_name: str) -> str:
    dot = lower_name.rfind(".")
    return lower_name[dot + 1 :] if dot > 0 else ""


def is_generated_name(lower_name: str) -> bool:
    return (
        lower_name.endswith(_GENERATED_SUFFIXES)
        or lower_name.startswith(_GENERATED_PREFIXES)
        or _GENERATED_INFIX in lower_name
    )
