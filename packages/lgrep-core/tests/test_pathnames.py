"""File names that are not valid UTF-8: how they are shown, and how a shown path finds the file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from lgrep_core.domain import pathnames
from lgrep_core.domain.errors import InvalidRequestError, NotFoundError
from lgrep_core.domain.pathnames import (
    collides,
    disk_path,
    display_name,
    display_path,
    read_project_file,
    undisplay_name,
)

needs_byte_names = pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that stores raw byte names")


def _name(raw: bytes) -> str:
    """A file name as os.scandir gives it: undecodable bytes as surrogates."""
    return os.fsdecode(raw)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"plain.py", "plain.py"),
        ("ünïcødé 日本.py".encode(), "ünïcødé 日本.py"),
        (b"back\\slash.py", "back\\slash.py"),  # valid UTF-8: shown as it is, backslash and all
        (b"caf\xe9.py", "caf\\xe9.py"),
        (b"\xff\xfe", "\\xff\\xfe"),
        (b"mixed \xc3\xa9 \xe9.py", "mixed é \\xe9.py"),
        (b"back\\slash\xe9", "back\\\\slash\\xe9"),  # escaped: its backslashes are doubled
        (b"caf\\xe9\xff", "caf\\\\xe9\\xff"),
    ],
)
def test_display_and_back(raw: bytes, shown: str) -> None:
    name = _name(raw)
    assert display_name(name) == shown
    json.dumps(shown).encode("utf-8")  # always valid JSON and UTF-8
    if shown == name:
        assert undisplay_name(shown) is None  # a literal name is never read as an escape
    else:
        assert undisplay_name(shown) == name
        assert os.fsencode(undisplay_name(shown) or "") == raw


@pytest.mark.parametrize("shown", ["caf\\xe9.py", "a\\b", "x\\x4", "\\\\", "caf\\xc3\\xa9"])
def test_text_that_display_name_never_escapes_is_literal(shown: str) -> None:
    # valid-UTF-8 results, a backslash that is no escape, a short escape: only a literal name
    assert undisplay_name(shown) is None or display_name(undisplay_name(shown) or "") == shown


def test_display_path_escapes_each_name() -> None:
    assert display_path("src/app.py") == "src/app.py"
    assert display_path(_name(b"d\xe9/sub/f\xff.py")) == "d\\xe9/sub/f\\xff.py"


def test_collides_only_when_a_literal_sibling_shows_the_same() -> None:
    escaped = _name(b"caf\xe9.py")
    assert collides(escaped, {escaped, "caf\\xe9.py"})
    assert not collides(escaped, {escaped, "other.py"})
    assert not collides("caf\\xe9.py", {escaped, "caf\\xe9.py"})  # the literal one is kept


@needs_byte_names
def test_disk_path_finds_escaped_and_literal_names(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path)
    os.makedirs(root + b"/d\xe9/sub")  # noqa: PTH103 - pathlib cannot take bytes
    with open(root + b"/d\xe9/sub/f\xff.py", "wb") as handle:  # noqa: PTH123 - pathlib cannot take bytes
        handle.write(b"escaped\n")
    (tmp_path / "plain.py").write_text("plain\n")
    (tmp_path / "lit\\xe9.py").write_text("literal\n")

    assert disk_path(tmp_path, "plain.py") == tmp_path / "plain.py"
    assert disk_path(tmp_path, "d\\xe9/sub/f\\xff.py").read_bytes() == b"escaped\n"
    assert disk_path(tmp_path, "lit\\xe9.py").read_text() == "literal\n"
    assert not disk_path(tmp_path, "gone\\xe9.py").exists()


@needs_byte_names
def test_disk_path_prefers_the_literal_name(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path)
    with open(root + b"/caf\xe9.py", "wb") as handle:  # noqa: PTH123 - pathlib cannot take bytes
        handle.write(b"escaped\n")
    (tmp_path / "caf\\xe9.py").write_text("literal\n")
    assert disk_path(tmp_path, "caf\\xe9.py").read_text() == "literal\n"


# ------------------------------------------------------------------ opening a project file safely


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "project"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("inside = True\n")
    outside = tmp_path / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "pkg" / "mod.py").write_text("SECRET = 'outside the project'\n")
    return root, outside


def _swap_for_symlink(folder: Path, target: Path) -> None:
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(target, target_is_directory=True)


def test_a_folder_swapped_for_a_symlink_before_it_is_opened_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = _project(tmp_path)
    seen: list[str] = []

    def swap(_folder: int, name: str) -> None:
        seen.append(name)
        if name == "src":  # the root is open, `src` is next: the window a check-then-open leaves
            _swap_for_symlink(root / "src", outside)

    monkeypatch.setattr(pathnames, "before_open_hook", swap)
    with pytest.raises(InvalidRequestError, match="symbolic link"):
        read_project_file(root, "src/pkg/mod.py", 1000)
    assert seen == ["src"]


def test_a_folder_swapped_after_it_was_opened_is_read_where_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = _project(tmp_path)

    def swap(_folder: int, name: str) -> None:
        if name == "mod.py":  # `src` and `pkg` are open: the file is read from the folder held
            _swap_for_symlink(root / "src", outside)

    monkeypatch.setattr(pathnames, "before_open_hook", swap)
    data, st = read_project_file(root, "src/pkg/mod.py", 1000)
    assert data == b"inside = True\n" and st.st_size == len(data)


def test_what_an_open_of_a_project_file_refuses(tmp_path: Path) -> None:
    root, outside = _project(tmp_path)
    (root / "link.py").symlink_to(outside / "pkg" / "mod.py")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "folder.py").mkdir()
    os.mkfifo(root / "pipe.py")
    for rel, error, words in [
        ("link.py", InvalidRequestError, "symbolic link"),
        ("linked/pkg/mod.py", InvalidRequestError, "symbolic link"),
        ("folder.py", InvalidRequestError, "not a regular file"),
        ("pipe.py", InvalidRequestError, "not a regular file"),  # O_NONBLOCK: no hang
        ("src/pkg/gone.py", NotFoundError, "no longer exists"),
        ("src/pkg/mod.py/x", NotFoundError, "no longer exists"),
        ("gone/mod.py", NotFoundError, "no longer exists"),
        ("../outside/pkg/mod.py", InvalidRequestError, "not a path inside"),
        ("/etc/passwd", InvalidRequestError, "not a path inside"),
    ]:
        with pytest.raises(error, match=words):
            read_project_file(root, rel, 1000)
    assert read_project_file(root, "src/pkg/mod.py", 6)[0] == b"inside"


@needs_byte_names
def test_an_escaped_name_opens_the_file_with_those_bytes(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / _name(b"caf\xe9")).mkdir(parents=True)
    (root / _name(b"caf\xe9") / "a.py").write_text("x = 1\n")
    assert read_project_file(root, "caf\\xe9/a.py", 100)[0] == b"x = 1\n"
