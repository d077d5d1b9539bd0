"""The `--path` filter: fnmatch's meaning, matched by re2; absolute paths inside the root."""

from __future__ import annotations

import fnmatch
import random
from pathlib import Path

import pytest
import re2
from lgrep_core.domain.errors import InvalidRequestError
from lgrep_search.pathfilter import MAX_PATTERN_CHARS, path_matcher, relative_to_root, translate


def test_translation_means_what_fnmatch_means() -> None:
    rng = random.Random(3)
    atoms = ["a", "b", "-", "*", "?", "[", "]", "!", "^", "\\", "/", ".", "é", "[a-c]", "[!a]", "[]", "[!]"]
    atoms += ["[^a]", "[[:alpha:]]", "[a-]", "[z-a]", "[a-c-e]", "&&", "|", "~", "\n", " ", "[\\]]"]
    chars = ["a", "b", "c", "d", "-", "/", ".", "]", "[", "!", "^", "\\", "é", "\n", " ", ":", "&", "z"]
    checked = 0
    for _ in range(5000):
        pattern = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 6)))
        regex = re2.compile(translate(pattern))
        for _ in range(20):
            text = "".join(rng.choice(chars) for _ in range(rng.randint(0, 6)))
            assert (regex.fullmatch(text) is not None) is fnmatch.fnmatchcase(text, pattern), (pattern, text)
            checked += 1
    assert checked == 100_000


@pytest.mark.parametrize(
    ("path", "glob", "ok"),
    [
        ("src/auth/jwt.py", "src/auth", True),
        ("src/auth/jwt.py", "./src/auth/", True),
        ("src/auth", "src/auth", True),
        ("src/authz/x.py", "src/auth", False),
        ("src/auth/jwt.py", "*.py", True),
        ("src/a/b/c.py", "src/**/*.py", True),
        ("src/c.py", "src/**/*.py", True),
        ("src/a/b.py", "src/*.py", True),
        ("lib/c.py", "src/*.py", False),
        ("web/a.ts", "*.py", False),
        ("caf\\xe9.py", "caf*", True),  # escaped names (lgrep_core.domain.pathnames) are plain text here
        ("a" * 200 + ".py", "a*a*a*a*a*a*a*a*a*a*a*a*b", False),
        ("a" * 200 + "b", "a*a*a*a*a*a*a*a*a*a*a*a*b", True),
    ],
)
def test_path_matcher(path: str, glob: str, ok: bool) -> None:
    assert path_matcher(glob)(path) is ok


def test_an_overlong_filter_is_a_clear_error() -> None:
    with pytest.raises(InvalidRequestError, match="limit"):
        path_matcher("*a" * MAX_PATTERN_CHARS)


def test_absolute_paths_inside_the_root_become_relative(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src" / "auth").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root, target_is_directory=True)
    assert relative_to_root(f"{root}/src/auth", root) == "src/auth"
    assert relative_to_root(f"{root}/src/auth/", root) == "src/auth/"
    assert relative_to_root(f"{root}/src/**/*.py", root) == "src/**/*.py"
    assert relative_to_root(f"{link}/src/auth", root) == "src/auth"
    assert relative_to_root(f"{root}/../proj/src", root) == "src"
    assert relative_to_root(str(root), root) == ""
    assert relative_to_root("src/auth", root) == "src/auth"
    assert relative_to_root("*.py", root) == "*.py"
    with pytest.raises(InvalidRequestError, match="outside the project root"):
        relative_to_root(str(tmp_path / "elsewhere"), root)
    with pytest.raises(InvalidRequestError, match="outside the project root"):
        relative_to_root(f"{root}/../other/*.py", root)
