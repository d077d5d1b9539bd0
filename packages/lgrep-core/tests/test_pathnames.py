"""File names that are not valid UTF-8: how they are shown, and how a shown path finds the file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from lgrep_core.pathnames import collides, disk_path, display_name, display_path, undisplay_name

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
