"""Tests of the file walker: ignore rules, built-in excludes, skips, decoding and ordering."""

from __future__ import annotations

import codecs
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.pathnames import display_name
from lgrep_index import walker
from lgrep_index.walker import (
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
    is_secret_path,
    read_text,
    walk,
)
from lgrep_index.walking import _ignore


def _skip_unless_permissions_apply(tmp_path: Path) -> None:
    """Skip when mode bits do not stop this process (root with CAP_DAC_OVERRIDE, Windows)."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"x")
    probe.chmod(0)
    try:
        probe.read_bytes()
    except PermissionError:
        return
    finally:
        probe.chmod(0o644)
        probe.unlink()
    pytest.skip("file permissions do not apply to this process (running as root?)")


def _write(root: Path, rel: str, data: bytes | str = b"x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _run(root: Path, options: WalkOptions | None = None) -> tuple[list[str], dict[str, str]]:
    skipped: dict[str, str] = {}

    def on_skip(item: SkippedFile) -> None:
        skipped[item.path] = item.reason

    paths = [f.path for f in walk(root, options, on_skip=on_skip)]
    return paths, skipped


def _paths(root: Path, options: WalkOptions | None = None) -> list[str]:
    return _run(root, options)[0]


def _walked(root: Path, rel: str) -> WalkedFile:
    return next(f for f in walk(root) if f.path == rel)


# --- basics and ordering ------------------------------------------------------------------------


def test_yields_sorted_relative_posix_paths_with_stat(tmp_path: Path) -> None:
    for rel in ["b.py", "a/z.py", "a/b/c.py", "a-c.py", "a.txt", "A.py", "a/b.py", "_x.py"]:
        _write(tmp_path, rel)
    files = list(walk(tmp_path))
    paths = [f.path for f in files]
    assert paths == sorted(paths)
    assert set(paths) == {"b.py", "a/z.py", "a/b/c.py", "a-c.py", "a.txt", "A.py", "a/b.py", "_x.py"}
    for f in files:
        assert not f.path.startswith("/") and ".." not in f.path.split("/")
        assert f.abs_path == tmp_path / f.path
        assert f.size == 6
        st = (tmp_path / f.path).stat()
        assert (f.mtime_ns, f.ctime_ns, f.inode) == (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def test_order_is_reproducible_regardless_of_creation_order(tmp_path: Path) -> None:
    names = [f"d{i % 7}/f{i}.py" for i in range(60)]
    first, second = tmp_path / "one", tmp_path / "two"
    for rel in names:
        _write(first, rel)
    for rel in reversed(names):
        _write(second, rel)
    assert _paths(first) == _paths(second) == sorted(names)


def test_root_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        walk(tmp_path / "missing")
    _write(tmp_path, "file.py")
    with pytest.raises(NotFoundError):
        walk(tmp_path / "file.py")


def test_relative_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "proj/src/a.py")
    monkeypatch.chdir(tmp_path)
    files = list(walk(Path("proj")))
    assert [f.path for f in files] == ["src/a.py"]
    assert files[0].abs_path == tmp_path / "proj" / "src" / "a.py"


def test_empty_root(tmp_path: Path) -> None:
    assert _run(tmp_path) == ([], {})


# --- .gitignore ----------------------------------------------------------------------------------


def test_nested_gitignore_applies_relative_to_its_folder(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.log\n/top.txt\nlocal/\n")
    _write(tmp_path, "sub/.gitignore", "!keep.log\n/only_here.py\ngen/*.txt\n")
    for rel in [
        "a.log",
        "top.txt",
        "sub/top.txt",
        "local/x.py",
        "sub/local/x.py",
        "sub/deeper/local",  # a file, and `local/` matches folders only
        "sub/keep.log",
        "sub/other.log",
        "sub/deeper/keep.log",
        "sub/only_here.py",
        "sub/deeper/only_here.py",
        "only_here.py",
        "sub/gen/a.txt",
        "sub/gen/a.py",
        "sub/x/gen/a.txt",
        "gen/a.txt",
    ]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [
        ".gitignore",
        "gen/a.txt",
        "only_here.py",
        "sub/.gitignore",
        "sub/deeper/keep.log",
        "sub/deeper/local",
        "sub/deeper/only_here.py",
        "sub/gen/a.py",
        "sub/keep.log",
        "sub/top.txt",
        "sub/x/gen/a.txt",
    ]


def test_deeper_gitignore_overrides_shallower_and_last_pattern_wins(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.txt\n!a.txt\n")
    _write(tmp_path, "sub/.gitignore", "a.txt\n!b.txt\n")
    _write(tmp_path, "sub/deep/.gitignore", "!a.txt\n")
    for rel in ["a.txt", "b.txt", "sub/a.txt", "sub/b.txt", "sub/deep/a.txt", "sub/deep/b.txt"]:
        _write(tmp_path, rel)
    paths = [p for p in _paths(tmp_path) if not p.endswith(".gitignore")]
    assert paths == ["a.txt", "sub/b.txt", "sub/deep/a.txt", "sub/deep/b.txt"]


def test_file_under_ignored_folder_cannot_be_reincluded(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "tmp/\n!tmp/keep.py\nlogs\n!logs/keep.py\n")
    _write(tmp_path, "logs/.gitignore", "!keep.py\n")
    for rel in ["tmp/keep.py", "tmp/other.py", "logs/keep.py", "main.py"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [".gitignore", "main.py"]


def test_contents_pattern_with_reincluded_folder(tmp_path: Path) -> None:
    # `dir/*` ignores the folder's entries, not the folder, so a negation can bring one back.
    _write(tmp_path, ".gitignore", "/conf/*\n!/conf/keep/\n!/conf/main.yaml\n")
    for rel in ["conf/main.yaml", "conf/other.yaml", "conf/keep/a.py", "conf/drop/a.py"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [".gitignore", "conf/keep/a.py", "conf/main.yaml"]


def test_whitelist_idiom(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*\n!*/\n!*.py\n")
    for rel in ["a.py", "a.txt", "src/b.py", "src/b.txt", "src/deep/c.py", "src/deep/c.md"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == ["a.py", "src/b.py", "src/deep/c.py"]


def test_double_star_patterns(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "**/cache/**\n!**/cache/keep.py\nlogs/**/*.txt\nfoo/**\n!foo/bar.py\n")
    for rel in [
        "cache/a.py",
        "x/cache/a.py",
        "x/cache/keep.py",
        "logs/a.txt",
        "logs/1/2/b.txt",
        "logs/1/b.py",
        "foo/bar.py",
        "foo/baz.py",
    ]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [".gitignore", "foo/bar.py", "logs/1/b.py", "x/cache/keep.py"]


def test_gitignore_comments_blank_lines_trailing_spaces_and_escapes(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "# comment\n\n   \nspaced.py   \n\\#hash.py\n\\!bang.py\nend\\ \n")
    for rel in ["# comment", "spaced.py", "#hash.py", "!bang.py", "end ", "kept.py"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == ["# comment", ".gitignore", "kept.py"]


def test_invalid_patterns_are_dropped_not_fatal(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "[z-a]x\n\\\n*.log\n")
    _write(tmp_path, "a.log")
    _write(tmp_path, "a.py")
    assert _paths(tmp_path) == [".gitignore", "a.py"]


def test_git_info_exclude(tmp_path: Path) -> None:
    _write(tmp_path, ".git/info/exclude", "secret_notes/\n*.tmp\n")
    _write(tmp_path, ".gitignore", "!keep.tmp\n")
    for rel in ["secret_notes/a.md", "a.tmp", "keep.tmp", "a.py"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [".gitignore", "a.py", "keep.tmp"]


def test_respect_gitignore_false(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.py\n")
    _write(tmp_path, ".git/info/exclude", "*.md\n")
    _write(tmp_path, ".lgrepignore", "*.txt\n")
    for rel in ["a.py", "b.md", "c.txt"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path, WalkOptions(respect_gitignore=False)) == [
        ".gitignore",
        ".lgrepignore",
        "a.py",
        "b.md",
    ]


def test_symlinked_gitignore_is_not_followed(tmp_path: Path) -> None:
    outside = _write(tmp_path, "outside/ignore-rules", "*.py\n")
    root = tmp_path / "root"
    _write(root, "a.py")
    (root / ".gitignore").symlink_to(outside)
    paths, skipped = _run(root)
    assert paths == ["a.py"]
    assert skipped == {".gitignore": SKIP_SYMLINK}


def test_ignored_folders_are_not_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, ".gitignore", "generated_out/\n")
    _write(tmp_path, "generated_out/a.py")
    _write(tmp_path, "node_modules/pkg/index.js")
    _write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    _write(tmp_path, "src/a.py")
    listed: list[str] = []
    real_scandir = os.scandir

    def recording_scandir(path: str) -> Iterator[os.DirEntry[str]]:
        listed.append(os.path.relpath(path, tmp_path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", recording_scandir)
    assert _paths(tmp_path) == [".gitignore", "src/a.py"]
    assert sorted(listed) == [".", "src"]


def test_agrees_with_git_on_random_trees(tmp_path: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    names = ["a", "b", "c", "src", "lib", "doc", "x.py", "y.txt", "z.log", "keep", "sub"]
    patterns = [
        *("*.log", "!*.log", "a", "a/", "/a", "!a", "!a/", "b/", "*", "!*/", "!*.py", "doc/*.txt"),
        *("**/c", "c/**", "!c/keep", "sub/", "!sub/", "/src/*", "!/src/lib/", "x.py", "!x.py"),
        *("**/keep/", "*/", "a/**/y.txt", "!keep", "lib/*", "!lib/y.txt", "*.txt", "/*", "!/sub"),
    ]
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def build(folder: Path, rng: random.Random, depth: int) -> None:
        for _ in range(rng.randint(1, 4)):
            name = rng.choice(names)
            path = folder / name
            if path.exists():
                continue
            if "." in name or depth >= 3 or rng.random() < 0.4:
                path.write_text("x\n")
            else:
                path.mkdir()
                build(path, rng, depth + 1)
        if rng.random() < 0.6:
            (folder / ".gitignore").write_text("\n".join(rng.sample(patterns, rng.randint(1, 4))) + "\n")

    for seed in range(60):
        root = tmp_path / f"t{seed}"
        root.mkdir()
        subprocess.run([git, "init", "-q"], cwd=root, env=env, check=True)
        build(root, random.Random(seed), 0)
        listing = subprocess.run(
            [git, "ls-files", "-o", "--exclude-standard", "-z"],
            cwd=root,
            env=env,
            capture_output=True,
            check=True,
        ).stdout.decode()
        expected = sorted(p for p in listing.split("\0") if p and not p.endswith(".gitignore"))
        mine = [p for p in _paths(root) if not p.endswith(".gitignore")]
        assert mine == expected, f"seed {seed}"


# --- .lgrepignore and configured patterns -----------------------------------------------------


def test_lgrepignore_nests_and_can_reinclude_what_gitignore_ignores(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.gen.txt\nsnapshots/\n")
    _write(tmp_path, ".lgrepignore", "!important.gen.txt\n!snapshots/\ndocs/\n")
    _write(tmp_path, "pkg/.lgrepignore", "*.md\n")
    for rel in [
        "a.gen.txt",
        "important.gen.txt",
        "snapshots/s.py",
        "docs/guide.md",
        "pkg/readme.md",
        "readme.md",
        "pkg/a.py",
    ]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [
        ".gitignore",
        ".lgrepignore",
        "important.gen.txt",
        "pkg/.lgrepignore",
        "pkg/a.py",
        "readme.md",
        "snapshots/s.py",
    ]


def test_extra_ignore_patterns(tmp_path: Path) -> None:
    for rel in ["a.py", "b.snap", "fixtures/big.json", "src/fixtures/x.py", "keep.snap"]:
        _write(tmp_path, rel)
    options = WalkOptions(extra_ignore_patterns=["*.snap", "/fixtures/", "!keep.snap"])
    assert _paths(tmp_path, options) == ["a.py", "keep.snap", "src/fixtures/x.py"]


def test_lgrepignore_overrides_extra_patterns(tmp_path: Path) -> None:
    _write(tmp_path, ".lgrepignore", "!wanted.snap\n")
    _write(tmp_path, "wanted.snap")
    _write(tmp_path, "other.snap")
    assert _paths(tmp_path, WalkOptions(extra_ignore_patterns=["*.snap"])) == [".lgrepignore", "wanted.snap"]


# --- built-in excludes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        ".git/config",
        ".hg/store/x",
        ".svn/entries",
        ".jj/repo/x",
        "node_modules/react/index.js",
        "web/node_modules/x/y.js",
        "bower_components/x.js",
        ".venv/lib/site.py",
        "venv/lib/site.py",
        "__pypackages__/3.11/lib/x.py",
        "pkg/__pycache__/mod.cpython-311.py",
        ".mypy_cache/x.json",
        ".pytest_cache/v/x",
        ".ruff_cache/x",
        ".tox/py311/x.py",
        ".nox/x.py",
        "dist/app.js",
        "build/lib/x.py",
        "target/debug/x.rs",
        "out/x.js",
        ".next/server/x.js",
        ".nuxt/x.js",
        ".gradle/x.kts",
        ".idea/workspace.xml",
        "coverage/lcov.info",
        ".terraform/modules/x.tf",
        "vendor/github.com/x/y.go",
        "my_pkg.egg-info/PKG-INFO",
        "package-lock.json",
        "web/yarn.lock",
        "pnpm-lock.yaml",
        "Cargo.lock",
        "poetry.lock",
        "uv.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "Pipfile.lock",
        "something.lock",
        "static/app.js.map",
        "assets/logo.svg",
        ".git",
    ],
)
def test_builtin_excludes_without_any_ignore_file(tmp_path: Path, rel: str) -> None:
    _write(tmp_path, rel)
    _write(tmp_path, "main.py")
    assert _run(tmp_path) == (["main.py"], {})


def test_virtualenv_detected_by_pyvenv_cfg(tmp_path: Path) -> None:
    _write(tmp_path, "env/pyvenv.cfg", "home = /usr/bin\n")
    _write(tmp_path, "env/lib/site.py")
    _write(tmp_path, "tools/myenv/pyvenv.cfg", "home = /usr/bin\n")
    _write(tmp_path, "tools/myenv/lib/x.py")
    _write(tmp_path, "config/env/settings.py")  # a folder named env that is not a virtualenv
    assert _paths(tmp_path) == ["config/env/settings.py"]


def test_root_that_is_a_virtualenv_is_walked(tmp_path: Path) -> None:
    _write(tmp_path, "pyvenv.cfg", "home = /usr/bin\n")
    _write(tmp_path, "lib/site.py")
    assert _paths(tmp_path) == ["lib/site.py", "pyvenv.cfg"]


def test_gitignore_negation_cannot_reinclude_builtin_but_lgrepignore_can(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "!vendor/\n!uv.lock\n")
    _write(tmp_path, "vendor/lib/x.go")
    _write(tmp_path, "uv.lock")
    assert _paths(tmp_path) == [".gitignore"]

    _write(tmp_path, ".lgrepignore", "!vendor/\n!uv.lock\n")
    _write(tmp_path, "vendor/node_modules/y.js")  # the negation names vendor/, not what is inside it
    _write(tmp_path, "vendor/lib/.git/HEAD", "x\n")  # version-control folders are never re-included
    assert _paths(tmp_path) == [".gitignore", ".lgrepignore", "uv.lock", "vendor/lib/x.go"]


def test_lgrepignore_can_reinclude_a_virtualenv(tmp_path: Path) -> None:
    _write(tmp_path, "env/pyvenv.cfg", "home = /usr/bin\n")
    _write(tmp_path, "env/lib/site.py")
    _write(tmp_path, ".lgrepignore", "!env/\n")
    assert _paths(tmp_path) == [".lgrepignore", "env/lib/site.py", "env/pyvenv.cfg"]


def test_cache_dir_inside_root_is_never_walked(tmp_path: Path) -> None:
    _write(tmp_path, "lgrep-cache/proj/index.json", "{}\n")
    _write(tmp_path, "src/a.py")
    _write(tmp_path, ".lgrepignore", "!lgrep-cache/\n")
    options = WalkOptions(cache_dir=tmp_path / "lgrep-cache")
    assert _paths(tmp_path, options) == [".lgrepignore", "src/a.py"]
    # A cache outside the root changes nothing.
    assert _paths(tmp_path / "src", WalkOptions(cache_dir=tmp_path / "lgrep-cache")) == ["a.py"]


def test_folders_tagged_as_caches_are_skipped(tmp_path: Path) -> None:
    _write(tmp_path, "cachey/CACHEDIR.TAG", b"Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n")
    _write(tmp_path, "cachey/data.py")
    _write(tmp_path, "notcache/CACHEDIR.TAG", b"not the signature\n")
    _write(tmp_path, "notcache/data.py")
    assert _paths(tmp_path) == ["notcache/CACHEDIR.TAG", "notcache/data.py"]


# --- size, binary, symlinks, special files --------------------------------------------------


def test_size_cap(tmp_path: Path) -> None:
    _write(tmp_path, "exact.py", b"a" * 99 + b"\n")
    _write(tmp_path, "big.py", b"a" * 100 + b"\n")
    paths, skipped = _run(tmp_path, WalkOptions(max_file_bytes=100))
    assert paths == ["exact.py"]
    assert skipped == {"big.py": SKIP_TOO_LARGE}


def test_binary_detection(tmp_path: Path) -> None:
    _write(tmp_path, "nul.dat2", b"abc\x00def")
    _write(tmp_path, "late_nul.txt", b"a" * 9000 + b"\x00")  # beyond the sniffed 8 KiB
    _write(tmp_path, "controls.txt", bytes(range(1, 32)) * 20)
    _write(tmp_path, "image.png", b"not even a png")  # by extension, without opening it
    _write(tmp_path, "archive.tar.gz", b"text")
    _write(tmp_path, "utf16.txt", "hello wörld\n".encode("utf-16"))
    _write(tmp_path, "latin1.txt", "café\n".encode("latin-1"))
    _write(tmp_path, "escapes.txt", b"\x1b[31mred\x1b[0m\tand\x0cform feed\r\n")
    paths, skipped = _run(tmp_path)
    assert paths == ["escapes.txt", "late_nul.txt", "latin1.txt", "utf16.txt"]
    assert skipped == {
        "archive.tar.gz": SKIP_BINARY,
        "controls.txt": SKIP_BINARY,
        "image.png": SKIP_BINARY,
        "nul.dat2": SKIP_BINARY,
    }


def test_symlinks_are_reported_and_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside, "secret_code.py")
    root = tmp_path / "root"
    _write(root, "real/a.py")
    (root / "real" / "loop").symlink_to(root, target_is_directory=True)
    (root / "real" / "up").symlink_to("..", target_is_directory=True)
    (root / "link.py").symlink_to(root / "real" / "a.py")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "escape.py").symlink_to(outside / "secret_code.py")
    (root / "dangling.py").symlink_to(root / "nowhere.py")
    files, skipped = _run(root)
    assert files == ["real/a.py"]
    assert skipped == {
        "dangling.py": SKIP_SYMLINK,
        "escape": SKIP_SYMLINK,
        "escape.py": SKIP_SYMLINK,
        "link.py": SKIP_SYMLINK,
        "real/loop": SKIP_SYMLINK,
        "real/up": SKIP_SYMLINK,
    }


def test_ignored_symlinks_are_not_reported(tmp_path: Path) -> None:
    _write(tmp_path, "a.py")
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    _write(tmp_path, ".gitignore", "link.py\n")
    assert _run(tmp_path) == ([".gitignore", "a.py"], {})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_is_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    _write(tmp_path, "a.py")
    assert _run(tmp_path) == (["a.py"], {})


# --- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "app/.env",
        ".env.local",
        ".env.production",
        "deploy/prod.env",
        ".envrc",
        "certs/server.pem",
        "server.key",
        "store.p12",
        "store.pfx",
        "android/release.jks",
        "release.keystore",
        "AuthKey_ABC.p8",
        "putty.ppk",
        "id_rsa",
        "home/.ssh/id_ed25519",
        "id_ecdsa",
        "id_dsa",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".git-credentials",
        "credentials.json",
        "gcp-credentials.json",
        "client_secret_1234.apps.googleusercontent.com.json",
        ".aws/credentials",
        "home/.docker/config.json",
        ".kube/config",
        "secrets.yaml",
        "k8s/secrets.yml",
        "passwords.kdbx",
        ".htpasswd",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        "SERVER.PEM",
    ],
)
def test_secret_paths(path: str) -> None:
    assert is_secret_path(path)


@pytest.mark.parametrize(
    "path",
    [
        ".env.example",
        ".env.sample",
        ".env.template",
        ".env.local.example",
        "example.env.dist",
        "id_rsa.pub",
        "id_ed25519.pub",
        "environment.py",
        "env.py",
        "keys.py",
        "key.go",
        "config.json",
        "aws/credentials.py",
        "credentials",
        "secrets.py",
        "monkey.rs",
        "docs/secrets.md",
    ],
)
def test_not_secret_paths(path: str) -> None:
    assert not is_secret_path(path)


def test_secret_files_are_skipped_even_when_reincluded(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*\n!*/\n!.env\n!*.pem\n!*.py\n!.gitignore\n!.lgrepignore\n")
    _write(tmp_path, ".lgrepignore", "!.env\n!id_rsa\n")
    _write(tmp_path, ".env", "API_KEY=hunter2\n")
    _write(tmp_path, "certs/tls.pem", "-----BEGIN PRIVATE KEY-----\n")
    _write(tmp_path, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    _write(tmp_path, ".env.example", "API_KEY=\n")
    _write(tmp_path, "app.py")
    paths, skipped = _run(tmp_path)
    assert paths == [".gitignore", ".lgrepignore", "app.py"]
    assert skipped == {".env": SKIP_SECRET, "certs/tls.pem": SKIP_SECRET, "id_rsa": SKIP_SECRET}


# --- minified and generated --------------------------------------------------------------------


def test_minified_and_generated_by_name(tmp_path: Path) -> None:
    for rel in [
        "web/app.min.js",
        "web/site.min.css",
        "api/service.pb.go",
        "api/service_pb2.py",
        "api/service_pb2_grpc.py",
        "ui/schema.generated.ts",
        "lib/model.g.dart",
        "web/app.js",
    ]:
        _write(tmp_path, rel, "let x = 1;\n")
    paths, skipped = _run(tmp_path)
    assert paths == ["web/app.js"]
    assert skipped == {
        "api/service.pb.go": SKIP_GENERATED,
        "api/service_pb2.py": SKIP_GENERATED,
        "api/service_pb2_grpc.py": SKIP_GENERATED,
        "lib/model.g.dart": SKIP_GENERATED,
        "ui/schema.generated.ts": SKIP_GENERATED,
        "web/app.min.js": SKIP_MINIFIED,
        "web/site.min.css": SKIP_MINIFIED,
    }


def test_minified_by_content(tmp_path: Path) -> None:
    line = "function a(b){return b+1}" * 200
    _write(tmp_path, "bundle.js", "/*! license */\n" + line + "\n")
    _write(tmp_path, "styles.css", ".a{color:red}" * 400)
    _write(tmp_path, "tiny.js", "a(b)" * 10)  # too little to judge
    _write(tmp_path, "data.json", "[" + "1," * 2000 + "1]")  # only .js/.css are judged
    _write(tmp_path, "normal.js", "function a(b) {\n  return b + 1;\n}\n" * 200)
    paths, skipped = _run(tmp_path)
    assert paths == ["data.json", "normal.js", "tiny.js"]
    assert skipped == {"bundle.js": SKIP_MINIFIED, "styles.css": SKIP_MINIFIED}


@pytest.mark.parametrize(
    "header",
    [
        "// Code generated by protoc-gen-go. DO NOT EDIT.\n",
        "# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\n",
        '"""\n@generated by mypy-protobuf.  Do not edit manually!\n"""\n',
        "// @generated\n",
        "/* This file is auto-generated. */\n",
        "# This file was automatically generated by tools/gen.py\n",
        "// Autogenerated by Thrift Compiler\n",
        "// DO NOT EDIT: this file is generated from schema.json\n",
        "#!/usr/bin/env python\n# Copyright\n#\n#\n# AUTO-GENERATED FILE\n",
    ],
)
def test_generated_banner(tmp_path: Path, header: str) -> None:
    _write(tmp_path, "mod.py", header + "x = 1\n")
    assert _run(tmp_path) == ([], {"mod.py": SKIP_GENERATED})


@pytest.mark.parametrize(
    "text",
    [
        '"""Tests for the auto-generated client."""\n',
        "# The parser builds a generated AST; edit it freely.\n",
        "x = 1\n" * 10 + "# Code generated by hand. DO NOT EDIT.\n",  # past the header
        "email = 'someone@generated.example'\n",
    ],
)
def test_not_generated(tmp_path: Path, text: str) -> None:
    _write(tmp_path, "mod.py", text)
    assert _run(tmp_path) == (["mod.py"], {})


def test_generated_banner_in_utf16_file(tmp_path: Path) -> None:
    _write(tmp_path, "gen.cs", "// <auto-generated/>\n// Code generated by tool. DO NOT EDIT.\n".encode("utf-16"))
    assert _run(tmp_path) == ([], {"gen.cs": SKIP_GENERATED})


def test_lgrepignore_negation_keeps_generated_and_minified(tmp_path: Path) -> None:
    _write(tmp_path, ".lgrepignore", "!api/*.pb.go\n!schema.py\n!bundle.js\n")
    _write(tmp_path, "api/service.pb.go", "package api\n")
    _write(tmp_path, "schema.py", "# Code generated by x. DO NOT EDIT.\n")
    _write(tmp_path, "bundle.js", "a(b);" * 1000)
    _write(tmp_path, "other.pb.go", "package x\n")
    paths, skipped = _run(tmp_path)
    assert paths == [".lgrepignore", "api/service.pb.go", "bundle.js", "schema.py"]
    assert skipped == {"other.pb.go": SKIP_GENERATED}


# --- unreadable ----------------------------------------------------------------------------------


def test_unreadable_file_by_permissions(tmp_path: Path) -> None:
    _skip_unless_permissions_apply(tmp_path)
    locked = _write(tmp_path, "locked.py")
    _write(tmp_path, "open.py")
    locked.chmod(0)
    try:
        assert _run(tmp_path) == (["open.py"], {"locked.py": SKIP_UNREADABLE})
    finally:
        locked.chmod(0o644)


def test_unlistable_folder_by_permissions(tmp_path: Path) -> None:
    _skip_unless_permissions_apply(tmp_path)
    _write(tmp_path, "locked/a.py")
    _write(tmp_path, "open.py")
    (tmp_path / "locked").chmod(0)
    try:
        assert _run(tmp_path) == (["open.py"], {"locked": SKIP_UNREADABLE})
    finally:
        (tmp_path / "locked").chmod(0o755)


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "locked.py")
    _write(tmp_path, "open.py")
    real_open = os.open

    def denying_open(path: str | os.PathLike[str], flags: int, *args: int, **kwargs: int) -> int:
        if os.fspath(path).endswith("locked.py"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denying_open)
    assert _run(tmp_path) == (["open.py"], {"locked.py": SKIP_UNREADABLE})


def test_unlistable_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "locked/a.py")
    _write(tmp_path, "open.py")
    real_scandir = os.scandir

    def denying_scandir(path: str) -> Iterator[os.DirEntry[str]]:
        if path.endswith("locked"):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denying_scandir)
    assert _run(tmp_path) == (["open.py"], {"locked": SKIP_UNREADABLE})


def test_file_vanishing_during_the_walk(tmp_path: Path) -> None:
    for rel in ["a.py", "b.py", "c.py"]:
        _write(tmp_path, rel)
    skipped: list[SkippedFile] = []
    seen: list[str] = []
    for f in walk(tmp_path, on_skip=skipped.append):
        seen.append(f.path)
        if f.path == "a.py":
            (tmp_path / "b.py").unlink()  # listed already, gone before it is opened
    assert seen == ["a.py", "c.py"]
    assert skipped == [SkippedFile("b.py", SKIP_UNREADABLE)]


def test_folder_vanishing_during_the_walk(tmp_path: Path) -> None:
    _write(tmp_path, "a.py")
    _write(tmp_path, "b/c.py")
    skipped: list[SkippedFile] = []
    seen: list[str] = []
    for f in walk(tmp_path, on_skip=skipped.append):
        seen.append(f.path)
        shutil.rmtree(tmp_path / "b")
    assert seen == ["a.py"]
    assert skipped == [SkippedFile("b", SKIP_UNREADABLE)]


# --- awkward names -------------------------------------------------------------------------------


def test_awkward_names(tmp_path: Path) -> None:
    names = [
        "with space.py",
        "quote's.py",
        'double"quote.py',
        "back\\slash.py",
        "-leading-dash.py",
        "--.py",
        "ünïcødé/日本語.py",
        "emoji_🦀.rs",
        "#hash.py",
        "!bang.py",
        "[brackets]*?.py",
        "tab\tname.py",
        "new\nline.py",
        " leading space.py",
        "trailing space.py ",
    ]
    for rel in names:
        _write(tmp_path, rel)
    files = list(walk(tmp_path))
    assert [f.path for f in files] == sorted(names)
    for f in files:
        assert f.abs_path.read_bytes() == b"x = 1\n"
        assert read_text(f, 1000) == "x = 1\n"


def test_gitignore_inside_folder_with_glob_characters_in_its_name(tmp_path: Path) -> None:
    for folder in ["we[ir]d *dir", "#hash", "!bang", "back\\slash", "wexd adir"]:
        _write(tmp_path, f"{folder}/.gitignore", "drop.py\n/anchored.py\n")
        _write(tmp_path, f"{folder}/drop.py")
        _write(tmp_path, f"{folder}/anchored.py")
        _write(tmp_path, f"{folder}/keep.py")
    _write(tmp_path, "drop.py")
    _write(tmp_path, "anchored.py")
    paths = [p for p in _paths(tmp_path) if not p.endswith(".gitignore")]
    assert paths == [
        "!bang/keep.py",
        "#hash/keep.py",
        "anchored.py",
        "back\\slash/keep.py",
        "drop.py",
        "we[ir]d *dir/keep.py",
        "wexd adir/keep.py",
    ]


needs_byte_names = pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that stores raw byte names")


def _write_raw(root: Path, rel: bytes, data: bytes = b"x = 1\n") -> None:
    path = os.fsencode(root) + b"/" + rel
    os.makedirs(os.path.dirname(path), exist_ok=True)  # noqa: PTH103, PTH120 - pathlib cannot take bytes
    with open(path, "wb") as handle:  # noqa: PTH123 - pathlib cannot take a bytes path
        handle.write(data)


@needs_byte_names
def test_file_and_folder_names_that_are_not_utf8_are_walked_escaped(tmp_path: Path) -> None:
    _write_raw(tmp_path, b"bad\xffname.py", b"x = 1\n")
    _write_raw(tmp_path, b"d\xe9p\xf4t/inner.py", b"y = 2\n")
    _write_raw(tmp_path, b"back\\slash\xe9.py")
    _write(tmp_path, "good.py")
    paths, skipped = _run(tmp_path)
    assert paths == ["back\\\\slash\\xe9.py", "bad\\xffname.py", "d\\xe9p\\xf4t/inner.py", "good.py"]
    assert skipped == {}
    files = {f.path: f for f in walk(tmp_path)}
    assert read_text(files["bad\\xffname.py"], 1000) == "x = 1\n"  # read from the real bytes
    assert read_text(files["d\\xe9p\\xf4t/inner.py"], 1000) == "y = 2\n"


@needs_byte_names
def test_ignore_rules_see_escaped_names(tmp_path: Path) -> None:
    _write_raw(tmp_path, b"drop\xe9.py")
    _write_raw(tmp_path, b"keep\xe9.py")
    _write_raw(tmp_path, b"sub\xff/a.py")
    _write_raw(tmp_path, b"sub\xff/b.py")
    _write(tmp_path, ".gitignore", "drop*.py\n")
    _write_raw(tmp_path, b"sub\xff/.gitignore", b"b.py\n")
    # A pattern from the environment holds the raw byte (a surrogate): it matches the escaped name.
    options = WalkOptions(extra_ignore_patterns=[os.fsdecode(b"keep\xe9.py")])
    assert _paths(tmp_path, options) == [".gitignore", "sub\\xff/.gitignore", "sub\\xff/a.py"]


@needs_byte_names
def test_escaped_name_that_shows_like_a_literal_sibling_is_skipped(tmp_path: Path) -> None:
    _write_raw(tmp_path, b"caf\xe9.py", b"escaped = 1\n")
    _write(tmp_path, "caf\\xe9.py", "literal = 1\n")
    paths, skipped = _run(tmp_path)
    assert paths == ["caf\\xe9.py"]
    assert skipped == {"caf\\xe9.py": SKIP_UNREADABLE}
    assert read_text(_walked(tmp_path, "caf\\xe9.py"), 1000) == "literal = 1\n"


# --- read_text -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"plain\n", "plain\n"),
        (codecs.BOM_UTF8 + "bom ü\n".encode(), "bom ü\n"),
        ("utf16 ü 日本\n".encode("utf-16-le"), None),  # no BOM: NUL bytes, so binary
        (codecs.BOM_UTF16_LE + "le ü 日本\n".encode("utf-16-le"), "le ü 日本\n"),
        (codecs.BOM_UTF16_BE + "be ü 日本\n".encode("utf-16-be"), "be ü 日本\n"),
        (codecs.BOM_UTF32_LE + "32 ü\n".encode("utf-32-le"), "32 ü\n"),
        ("café – naïve\n".encode("cp1252"), "café – naïve\n"),
        (b"caf\xe9 \x81\n", "café \x81\n"),  # undefined in cp1252: latin-1
        ("ü ok ".encode() + b"\xff bad\n", "ü ok \ufffd bad\n"),  # mostly UTF-8: keep it, mark the bad byte
        (b"windows\r\nline\r\nendings\r\n", "windows\r\nline\r\nendings\r\n"),
        (b"old\rmac\r", "old\rmac\r"),
        (b"\x00\x01binary", None),
        (b"", ""),
    ],
)
def test_read_text_decoding(tmp_path: Path, data: bytes, expected: str | None) -> None:
    path = _write(tmp_path, "f.txt", data)
    st = path.stat()
    file = WalkedFile("f.txt", path, len(data), st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    assert read_text(file, 1000) == expected


def test_read_text_rechecks_size_and_survives_vanished_files(tmp_path: Path) -> None:
    _write(tmp_path, "a.py", "x = 1\n")
    file = _walked(tmp_path, "a.py")
    assert read_text(file, 1000) == "x = 1\n"
    (tmp_path / "a.py").write_text("x = 1\n" * 1000)
    assert read_text(file, 1000) is None
    (tmp_path / "a.py").unlink()
    assert read_text(file, 1000) is None


def test_read_text_does_not_follow_a_symlink_swapped_in(tmp_path: Path) -> None:
    _write(tmp_path, "outside.py", "secret = 1\n")
    _write(tmp_path, "root/a.py", "x = 1\n")
    file = _walked(tmp_path / "root", "a.py")
    (tmp_path / "root" / "a.py").unlink()
    (tmp_path / "root" / "a.py").symlink_to(tmp_path / "outside.py")
    assert read_text(file, 1000) is None


def test_read_text_does_not_follow_a_folder_swapped_for_a_symlink_after_the_walk(tmp_path: Path) -> None:
    _write(tmp_path, "outside/pkg/a.py", "secret = 1\n")
    _write(tmp_path, "root/src/pkg/a.py", "x = 1\n")
    file = _walked(tmp_path / "root", "src/pkg/a.py")
    (tmp_path / "root" / "src").rename(tmp_path / "root" / "src.old")
    (tmp_path / "root" / "src").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert read_text(file, 1000) is None


def test_read_text_of_every_walked_file_in_a_mixed_tree(tmp_path: Path) -> None:
    _write(tmp_path, "a.py", "print('hi')\n")
    _write(tmp_path, "b.txt", "naïve\n".encode("latin-1"))
    _write(tmp_path, "c.cs", "class C {}\n".encode("utf-16"))
    texts = {f.path: read_text(f, 1000) for f in walk(tmp_path)}
    assert texts == {"a.py": "print('hi')\n", "b.txt": "naïve\n", "c.cs": "class C {}\n"}


def test_module_exports() -> None:
    assert set(walker.__all__) >= {
        "walk",
        "read_text",
        "is_secret_path",
        "WalkedFile",
        "SkippedFile",
        "WalkOptions",
    }


# --- ignore patterns that are expensive to match ---------------------------------------------------

PATHOLOGICAL = "a*a*a*a*a*a*a*a*a*a*a*a*b"


def test_pathological_patterns_are_matched_without_backtracking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`a*a*...*b` against a long run of 'a' takes Python's backtracking `re` hours; the walker must
    not depend on pathspec picking a linear backend, nor match with Python regexes at all."""
    import pathspec._backends.agg
    from pathspec.pattern import RegexPattern

    def no_python_regex(self: object, file: str) -> None:
        raise AssertionError("ignore patterns must not be matched with Python's re")

    monkeypatch.setattr(pathspec._backends.agg, "_BEST_BACKEND", "simple")
    monkeypatch.setattr(RegexPattern, "match_file", no_python_regex)
    long = "a" * 200
    _write(tmp_path, ".gitignore", f"{PATHOLOGICAL}\n**/{PATHOLOGICAL}/**\n")
    _write(tmp_path, "sub/.gitignore", f"{PATHOLOGICAL}.py\n/x**a*a*a*a*a*a*a*a*a*a*a*a*b/\n")
    for rel in [
        f"{long}.py",
        f"{long}b",
        f"{long}ab",
        f"sub/{long}/{long}.py",
        f"sub/{long}b.py",
        f"sub/x{long}b/k.py",
    ]:
        _write(tmp_path, rel)
    options = WalkOptions(extra_ignore_patterns=[f"**/{PATHOLOGICAL}*/", f"!{long}ab"])
    assert _paths(tmp_path, options) == [
        ".gitignore",
        f"{long}.py",
        f"{long}ab",
        "sub/.gitignore",
        f"sub/{long}/{long}.py",
    ]


def test_ignore_matching_agrees_with_pathspec(tmp_path: Path) -> None:
    """The walker's re2 matcher decides exactly as pathspec's GitIgnoreSpec (Python re) does."""
    from pathspec import GitIgnoreSpec

    rng = random.Random(7)
    atoms = ["a", "b", "ab", "*", "**", "?", "[ab]", "[!a]", "\\*", ".", "x.py", "[]a]", "[[:alpha:]]", "é"]
    names = ["a", "b", "ab", "x.py", "*", "é", "aa", ".a", "[", ":"]

    def pattern() -> str:
        text = "/".join("".join(rng.choice(atoms) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3)))
        return (
            ("!" if rng.random() < 0.3 else "")
            + ("/" if rng.random() < 0.3 else "")
            + text
            + ("/" if rng.random() < 0.3 else "")
        )

    checked = 0
    for _ in range(1500):
        lines = [pattern() for _ in range(rng.randint(1, 5))]
        layer = _ignore.compile_ignore(lines, "", "test")
        if layer is None:
            continue
        spec = GitIgnoreSpec.from_lines(lines, backend="simple")
        rules = _ignore.Rules().extend(layer, None)
        for _ in range(10):
            path = "/".join(
                "".join(rng.choice(names) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 4))
            )
            assert rules.ignores(path, is_dir=False) is (spec.check_file(path).include is True), (lines, path)
            checked += 1
    assert checked > 10_000


def test_brackets_keep_their_meaning(tmp_path: Path) -> None:
    # pathspec reads `[[:al]` as a set of '[', ':', 'a', 'l' (re2 alone would see a POSIX class)
    _write(tmp_path, ".gitignore", "x[[:al]y\n[]]z\n")
    for rel in ["x[y", "x:y", "xay", "xby", "]z", "az"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [".gitignore", "az", "xby"]


def test_overlong_lines_are_dropped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _write(tmp_path, ".gitignore", "a*" * 50_000 + "b\n*.log\n")
    _write(tmp_path, "ab")
    _write(tmp_path, "x.log")
    assert _paths(tmp_path) == [".gitignore", "ab"]
    assert ".gitignore: line 1 is 100001 characters long" in caplog.text


def test_patterns_past_the_limits_are_dropped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_ignore, "_MAX_IGNORE_PATTERNS", 3)
    monkeypatch.setattr(_ignore, "_MAX_PATTERNS_IN_FORCE", 4)
    _write(tmp_path, ".gitignore", "*a??????\n*b???????\n1\n2\n3\n4\n")  # the 2nd has 7 after a '*'
    _write(tmp_path, "sub/.gitignore", "5\n6\n")  # 3 + 2 > 4 in force: the whole file is left out
    for rel in ["xa123456", "xb1234567", "1", "2", "3", "4", "sub/5", "sub/6"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [".gitignore", "3", "4", "sub/.gitignore", "sub/5", "sub/6", "xb1234567"]
    assert "more than 6 '?' or '[...]' after a '*'" in caplog.text
    assert ".gitignore: more than 3 patterns" in caplog.text
    assert "sub/.gitignore: ignoring this file" in caplog.text


def test_many_patterns_fall_back_when_a_filter_does_not_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re2

    class Failing(re2.Filter):
        def Compile(self) -> None:
            raise re2.error("too big")

    monkeypatch.setattr(re2, "Filter", Failing)
    _write(tmp_path, ".gitignore", "*.log\n!keep.log\nbuild/\n")
    for rel in ["a.log", "keep.log", "build/x.py", "a.py"]:
        _write(tmp_path, rel)
    assert _paths(tmp_path) == [".gitignore", "a.py", "keep.log"]


# --- PathRules: the walk's decision for one path ----------------------------------------------------


def _rules_tree(root: Path) -> Path:
    """A project with every kind of rule the walk applies, and a folder outside it."""
    outside = root.parent / f"{root.name}-outside"
    _write(outside, "secret_code.py", "stolen = True\n")
    _write(root, ".gitignore", "*.log\n!keep.log\nbuild-out/\n/only-root.txt\n")
    _write(root, ".lgrepignore", "!important.lock\n")
    _write(root, ".git/HEAD", "ref: refs/heads/main\n")
    _write(root, ".git/info/exclude", "excluded.txt\n")
    _write(root, "sub/.gitignore", "hidden-dir/\n*.tmp\n")
    _write(root, "sub/.lgrepignore", "!vendor/\ndrop.py\n")
    for rel in [
        "a.py",
        "keep.log",
        "other.log",
        "only-root.txt",
        "sub/only-root.txt",
        "excluded.txt",
        "build-out/x.py",
        "sub/build-out/x.py",
        "sub/hidden-dir/x.py",
        "sub/x.tmp",
        "sub/drop.py",
        "sub/keep.py",
        "sub/vendor/y.go",
        "vendor/x.go",
        "node_modules/pkg/index.js",
        "build/gen.py",
        "dist/out.js",
        "a.egg-info/PKG-INFO",
        "important.lock",
        "poetry.lock",
        "docs/private/p.md",
        "docs/public/p.md",
        "env1/lib.py",
        "cachey/data.py",
        ".env",
        "img.png",
        "x_pb2.py",
        "app.min.js",
        "deep/er/still/keep.py",
        "sub/.git",
        "__pycache__/a.pyc",
    ]:
        _write(root, rel)
    _write(root, "env1/pyvenv.cfg", "home = /usr/bin\n")
    _write(root, "cachey/CACHEDIR.TAG", b"Signature: 8a477f597d28d172789f06886806bc55\n")
    _write(root, "big.py", "x = 1\n" * 100)
    _write(root, "nul.py", b"x = 1\x00\n")
    _write(root, "banner.py", "# Code generated by protoc. DO NOT EDIT.\nx = 1\n")
    _write_raw(root, b"caf\xe9.py", b"y = 2\n")
    (root / "link.py").symlink_to(root / "a.py")
    (root / "linkdir").symlink_to(root / "sub", target_is_directory=True)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "sub" / "loop").symlink_to("..", target_is_directory=True)
    return outside


def test_path_rules_agree_with_the_walk_on_every_path(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    outside = _rules_tree(root)
    options = WalkOptions(max_file_bytes=200, extra_ignore_patterns=("docs/private/",))
    walked: dict[str, WalkedFile] = {}
    skipped: dict[str, str] = {}
    for f in walk(root, options, on_skip=lambda s: skipped.__setitem__(s.path, s.reason)):
        walked[f.path] = f
    assert walked and skipped  # the tree exercises both

    rules = walker.PathRules(root, options)
    on_disk: list[str] = []
    for folder, dirs, files in os.walk(root):
        for name in [*files, *(d for d in dirs if (Path(folder) / d).is_symlink())]:
            parts = (Path(folder) / name).relative_to(root).parts
            on_disk.append("/".join(display_name(part) for part in parts))
    assert "caf\\xe9.py" in on_disk and "node_modules/pkg/index.js" in on_disk
    for rel in on_disk:
        looked_at = rel in walked or rel in skipped
        assert rules.considers(rel) == looked_at, rel
        outcome = rules.check(rel)
        if rel in walked:
            assert outcome == walked[rel], rel
        elif rel in skipped:
            assert outcome == SkippedFile(rel, skipped[rel]), rel
        else:
            assert outcome is None, rel

    # Nothing through a symlinked folder, nothing outside, nothing that is not a relative path.
    for rel in ["linkdir/keep.py", "escape/secret_code.py", "sub/loop/a.py", "sub/loop/sub/keep.py"]:
        assert not rules.considers(rel) and rules.check(rel) is None, rel
    assert not rules.considers("linkdir", is_dir=True)
    for bad in ["", "/etc/passwd", "../proj-outside/secret_code.py", "a//b.py", "./a.py", "sub/../a.py", "a\x00.py"]:
        assert not rules.considers(bad) and rules.check(bad) is None, bad
    assert (outside / "secret_code.py").exists()

    # Folders: entered or not, as the walk decides.
    assert rules.considers("sub", is_dir=True) and rules.considers("sub/vendor", is_dir=True)
    for folder in [".git", "node_modules", "vendor", "build", "env1", "cachey", "sub/hidden-dir", "docs/private"]:
        assert not rules.considers(folder, is_dir=True), folder
    # A deleted file or folder is judged by the rules of the folders that remain.
    assert rules.considers("gone/away.py") and rules.check("gone/away.py") is None
    assert not rules.considers("gone/x.log") and not rules.considers("node_modules/gone.js")


def test_path_rules_cache_until_forgotten(tmp_path: Path) -> None:
    _write(tmp_path, "src/a.py")
    _write(tmp_path, "src/b.py")
    rules = walker.PathRules(tmp_path)
    assert rules.considers("src/a.py")
    _write(tmp_path, "src/.gitignore", "a.py\n")
    assert rules.considers("src/a.py")  # cached: the folder's ignore files were read once
    rules.forget("src")
    assert not rules.considers("src/a.py") and rules.considers("src/b.py")
    _write(tmp_path, ".gitignore", "src/\n")
    rules.clear()
    assert not rules.considers("src/b.py")


def test_path_rules_does_not_cache_a_missing_folder(tmp_path: Path) -> None:
    rules = walker.PathRules(tmp_path)
    assert rules.considers("new/a.py")
    _write(tmp_path, "new/.gitignore", "a.py\n")
    assert not rules.considers("new/a.py")


def test_path_rules_rule_sources(tmp_path: Path) -> None:
    _write(tmp_path, "src/a.py")
    _write(tmp_path, "node_modules/pkg/.gitignore", "x\n")
    rules = walker.PathRules(tmp_path)
    for rel in [
        ".gitignore",
        "src/.gitignore",
        "src/.lgrepignore",
        ".git/info/exclude",
        "src/CACHEDIR.TAG",
        "src/pyvenv.cfg",
        "new/dir/.gitignore",
    ]:
        assert rules.is_rule_source(rel), rel
    for rel in [
        "src/a.py",
        "node_modules/pkg/.gitignore",
        "CACHEDIR.TAG",
        "pyvenv.cfg",
        ".git/config",
        "src/.git/info/exclude",
        "../.gitignore",
    ]:
        assert not rules.is_rule_source(rel), rel
    no_git = walker.PathRules(tmp_path, WalkOptions(respect_gitignore=False))
    assert not no_git.is_rule_source(".gitignore") and not no_git.is_rule_source(".git/info/exclude")
    assert no_git.is_rule_source(".lgrepignore")
