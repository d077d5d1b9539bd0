"""Versions from git tags: lenient parsing, semver order, npm-style ranges (lgrep_core.domain.versions.semver)."""

from __future__ import annotations

import itertools
import random
from operator import attrgetter

import pytest
from lgrep_core.domain.versions.semver import Version, VersionRange, looks_like_range, newest, sort_descending


def v(text: str) -> Version:
    version = Version.parse(text)
    assert version is not None, text
    return version


# --- parsing ---


@pytest.mark.parametrize(
    ("text", "release", "prerelease", "build", "post"),
    [
        ("0.7.3", (0, 7, 3), (), "", None),
        ("1.0.0-rc.1", (1, 0, 0), ("rc", "1"), "", None),
        ("2.1", (2, 1), (), "", None),
        ("7", (7,), (), "", None),
        ("1.2.3.4", (1, 2, 3, 4), (), "", None),
        ("0.1.15+build.5", (0, 1, 15), (), "build.5", None),
        ("1.0.0-rc.1+exp.sha.5114f85", (1, 0, 0), ("rc", "1"), "exp.sha.5114f85", None),
        ("1.0.0rc1", (1, 0, 0), ("rc", "1"), "", None),
        ("1.0.0RC1", (1, 0, 0), ("rc", "1"), "", None),
        ("1.0a1", (1, 0), ("a", "1"), "", None),
        ("2.0b2", (2, 0), ("b", "2"), "", None),
        ("1.0.0.dev3", (1, 0, 0), ("dev", "3"), "", None),
        ("1.0.0alpha.2", (1, 0, 0), ("alpha", "2"), "", None),
        ("1.0.0a1.dev2", (1, 0, 0), ("a", "1", "dev", "2"), "", None),
        ("1.0.0-alpha.beta", (1, 0, 0), ("alpha", "beta"), "", None),
        ("1.0.0-x-y.7", (1, 0, 0), ("x-y", "7"), "", None),
        ("1.0.0.post1", (1, 0, 0), (), "", 1),
        ("1.0post", (1, 0), (), "", 0),
        ("v1.2.3", (1, 2, 3), (), "", None),
        ("V2", (2,), (), "", None),
        ("010.002", (10, 2), (), "", None),
    ],
)
def test_parse(text: str, release: tuple[int, ...], prerelease: tuple[str, ...], build: str, post: int | None) -> None:
    version = v(text)
    assert version.text == text
    assert version.release == release
    assert version.prerelease == prerelease
    assert version.build == build
    assert version.post == post
    assert version.is_prerelease == bool(prerelease)
    assert str(version) == text


def test_parse_strips_surrounding_whitespace() -> None:
    assert v("  1.2.3\n").text == "1.2.3"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "v",
        "latest",
        "main",
        "release-1.2",
        "x1",
        "1.2.3.4.5",
        "1..2",
        ".1",
        "1.2.",
        "1.0.0-",
        "1.0.0-rc..1",
        "1.0.0-rc.",
        "1.0.0+",
        "1.0.0rc.",
        "1.0.0rc..1",
        "1.0.0 rc1",
        "1.0.0-rc.1+",
        "1.0.0.post1.dev2",
        "1.0.0.post1.x",
        "1.0.0-é",
        "１.２.３",  # full-width digits are not ASCII digits
        "1" * 300,
        "1.2.3-" + "a" * 300,
    ],
)
def test_parse_rejects(text: str) -> None:
    assert Version.parse(text) is None


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="1 to 4"):
        Version("1.2.3.4.5", (1, 2, 3, 4, 5))
    with pytest.raises(ValueError, match="empty prerelease"):
        Version("1.0.0-", (1, 0, 0), ("",))
    with pytest.raises(ValueError, match="not both"):
        Version("x", (1,), ("rc",), post=1)


# --- order ---

SEMVER_SPEC_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
]

MIXED_ORDER = [
    "0.1",
    "0.1.15+build.5",
    "0.7.3",
    "0.9.9",
    "1.0.0-0",
    "1.0.0a1",
    "1.0.0b2",
    "1.0.0.dev3",  # semver compares `dev` with `a`, `b`, `rc` as ASCII (documented)
    "1.0.0rc1",
    "1.0.0-rc.2",
    "1.0.0",
    "1.0.0.post1",
    "1.0.0.1",
    "1.0.1",
    "1.2",
    "1.2.3.4",
    "1.9.0",
    "1.10.0",
    "2.0.0-alpha",
    "2",
    "10.0.0",
]


@pytest.mark.parametrize("chain", [SEMVER_SPEC_ORDER, MIXED_ORDER], ids=["semver-spec", "mixed"])
def test_order_is_strictly_increasing(chain: list[str]) -> None:
    versions = [v(text) for text in chain]
    for lower, higher in itertools.pairwise(versions):
        assert lower.precedence < higher.precedence, (lower.text, higher.text)
        assert lower.sort_key < higher.sort_key, (lower.text, higher.text)


@pytest.mark.parametrize("chain", [SEMVER_SPEC_ORDER, MIXED_ORDER], ids=["semver-spec", "mixed"])
def test_sorted_with_sort_key(chain: list[str]) -> None:
    shuffled = [v(text) for text in chain]
    random.Random(7).shuffle(shuffled)
    assert [x.text for x in sorted(shuffled, key=attrgetter("sort_key"))] == chain
    assert [x.text for x in sorted(shuffled, key=lambda x: x.sort_key)] == chain
    assert [x.text for x in sort_descending(shuffled)] == chain[::-1]


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.9.0", "1.10.0"),  # numbers, not strings
        ("1.0.0-beta.2", "1.0.0-beta.11"),
        ("1.0.0-2", "1.0.0-10"),
        ("1.0.0-1", "1.0.0-a"),  # numeric identifiers below alphanumeric ones
        ("1.0.0-alpha.1", "1.0.0-alpha.a"),
        ("1.0.0-alpha", "1.0.0-alpha.0"),  # a prefix is lower
        ("1.0.0-rc.1", "1.0.0"),
        ("1.0.0-rc.1", "1.0.0.1"),
        ("0.9.9", "1.0.0-alpha"),
        ("1.0.0", "1.0.0.post0"),
        ("1.0.0.post1", "1.0.0.post2"),
        ("1.0.0.post9", "1.0.1-alpha"),
        ("1.2.3", "1.2.3.1"),
        ("1.0.0-Beta", "1.0.0-alpha"),  # semver identifiers are ASCII: upper case first
    ],
)
def test_pairs(lower: str, higher: str) -> None:
    assert v(lower).precedence < v(higher).precedence
    assert v(higher).precedence > v(lower).precedence


@pytest.mark.parametrize(
    "texts",
    [
        ["1.2", "1.2.0", "1.2.0.0", "v1.2.0", "1.2.0+b1", "1.2.0+b2"],
        ["1.0.0rc1", "1.0.0-rc.1", "1.0.0.rc1", "1.0.0RC1"],
    ],
)
def test_equal_precedence_sorts_deterministically(texts: list[str]) -> None:
    versions = [v(text) for text in texts]
    assert len({version.precedence for version in versions}) == 1
    assert len({version.sort_key for version in versions}) == len(texts)
    orders = {tuple(x.text for x in sort_descending(perm)) for perm in itertools.permutations(versions)}
    assert len(orders) == 1


def test_versions_are_values() -> None:
    assert v("1.2.3") == v("1.2.3")
    assert v("1.2") != v("1.2.0")  # different text, same precedence
    assert len({v("1.2.3"), v("1.2.3"), v("1.2.4")}) == 2


# --- newest / sort_descending ---


@pytest.mark.parametrize(
    ("texts", "include_prerelease", "expected"),
    [
        (["0.7.3", "1.0.0-rc.1", "0.9.0", "0.10.0"], False, "0.10.0"),
        (["0.7.3", "1.0.0-rc.1", "0.9.0", "0.10.0"], True, "1.0.0-rc.1"),
        (["1.0.0-rc.1", "1.0.0-rc.2", "1.0.0-beta.9"], False, "1.0.0-rc.2"),
        (["1.0.0-rc.1", "1.0.0-rc.2", "1.0.0-beta.9"], True, "1.0.0-rc.2"),
        (["2.0.0-rc.1", "2.0.0", "1.9"], False, "2.0.0"),
        (["2.0.0-rc.1", "2.0.0", "1.9"], True, "2.0.0"),
        (["1.2.3.4", "1.2.3", "1.2.3.post1"], False, "1.2.3.4"),
        (["3"], False, "3"),
    ],
)
def test_newest(texts: list[str], include_prerelease: bool, expected: str) -> None:
    versions = [v(text) for text in texts]
    for perm in itertools.permutations(versions):
        found = newest(perm, include_prerelease=include_prerelease)
        assert found is not None
        assert found.text == expected


def test_newest_of_nothing() -> None:
    assert newest([]) is None
    assert newest(iter(()), include_prerelease=True) is None


def test_newest_ties_are_deterministic() -> None:
    versions = [v("1.2"), v("1.2.0"), v("v1.2.0")]
    picked = {newest(perm) for perm in itertools.permutations(versions)}
    assert len(picked) == 1
    assert picked == {sort_descending(versions)[0]}


def test_sort_descending() -> None:
    tags = ["0.7.3", "1.0.0-rc.1", "2.1", "1.2.3.4", "0.1.15+build.5", "1.0.0rc2", "1.0.0.dev3", "1.0.0"]
    assert [x.text for x in sort_descending(v(t) for t in tags)] == [
        "2.1",
        "1.2.3.4",
        "1.0.0",
        "1.0.0rc2",
        "1.0.0-rc.1",
        "1.0.0.dev3",
        "0.7.3",
        "0.1.15+build.5",
    ]
    assert sort_descending([]) == []


# --- looks_like_range ---


@pytest.mark.parametrize(
    "text",
    [
        "^1.2.3",
        "~1.2",
        "~>1.2",
        ">=1",
        ">1.2",
        "<2",
        "<=1.4.0",
        "=1.2.3",
        "*",
        "x",
        "X",
        "1.x",
        "1.2.x",
        "1.2.X",
        "1.2.*",
        "v1.x",
        "1.2 || 1.4",
        ">=1 <2",
        ">=1,<2",
        "1.2.3 - 1.4",
        "~=1.4",
        "!=1.3",
        "==1.4",
        "1.2 1.3",
    ],
)
def test_looks_like_range(text: str) -> None:
    assert looks_like_range(text)


@pytest.mark.parametrize(
    "text",
    [
        "0.7.3",
        "1.0.0-rc.1",
        "2.1",
        "1.2.3.4",
        "0.1.15+build.5",
        "1.0.0rc1",
        "1.0.0.dev3",
        "v1.2.3",
        "latest",
        "1.0.0-x.7",
        "1.0.0-rc.x",
        "1.0.0+x",
        " 0.7.3 ",
        "",
    ],
)
def test_looks_like_exact_version(text: str) -> None:
    assert not looks_like_range(text)


# --- ranges ---

RANGE_CASES: list[tuple[str, str, bool]] = [
    # comparators
    (">=1.2.3", "1.2.3", True),
    (">=1.2.3", "1.2.2", False),
    (">=1.2.3", "2.0.0", True),
    (">=1.2.3", "1.2.3.1", True),
    (">1.2.3", "1.2.3", False),
    (">1.2.3", "1.2.4", True),
    (">1.2", "1.2.9", False),  # npm: >1.2 is >=1.3.0
    (">1.2", "1.3.0", True),
    ("<2", "1.99.0", True),
    ("<2", "2.0.0", False),
    ("<2", "2", False),
    ("<=1.4.0", "1.4.0", True),
    ("<=1.4.0", "1.4", True),
    ("<=1.4.0", "1.4.1", False),
    ("<=1.4", "1.4.9", True),  # npm: <=1.4 is <1.5.0-0
    ("<=1.4", "1.5.0", False),
    ("=1.2.3", "1.2.3", True),
    ("=1.2.3", "1.2.3+build.7", True),
    ("=1.2.3", "v1.2.3", True),
    ("=1.2.3", "1.2.4", False),
    ("=1.2.3", "1.2.3.post1", False),
    ("1.2.3", "1.2.3", True),
    ("1.2.3", "1.2.3.1", False),
    ("1.2.3.4", "1.2.3.4", True),
    ("1.2.3.4", "1.2.3", False),
    (">=1.2.3.4", "1.2.3.5", True),
    (">=1.2.3.4", "1.2.3", False),
    (">=v1.2", "1.2", True),
    # partial versions are X-ranges
    ("1.2", "1.2", True),
    ("1.2", "1.2.0", True),
    ("1.2", "1.2.9", True),
    ("1.2", "1.2.9.9", True),
    ("1.2", "1.3.0", False),
    ("1.2", "1.1.9", False),
    ("=1.2", "1.2.5", True),
    ("1", "1.9.9", True),
    ("1", "2.0.0", False),
    # AND (space or comma), OR
    (">=1.2.3 <1.4", "1.3.9", True),
    (">=1.2.3 <1.4", "1.4.0", False),
    (">=1.2.3 <1.4", "1.2.2", False),
    (">=1.2.3,<1.4", "1.3.0", True),
    (">=1.2.3,<1.4", "1.4.0", False),
    (">= 1.2.3 , < 1.4", "1.3.0", True),
    (">= 1.2.3 , < 1.4", "1.4.0", False),
    ("<1 || >=2", "0.9", True),
    ("<1 || >=2", "1.5", False),
    ("<1 || >=2", "2.1", True),
    ("1.2.7 || >=1.2.9 <2.0.0", "1.2.7", True),
    ("1.2.7 || >=1.2.9 <2.0.0", "1.2.8", False),
    ("1.2.7 || >=1.2.9 <2.0.0", "1.4.6", True),
    ("1.2.7 || >=1.2.9 <2.0.0", "2.0.0", False),
    # caret
    ("^1.2.3", "1.2.3", True),
    ("^1.2.3", "1.9.9", True),
    ("^1.2.3", "1.2.2", False),
    ("^1.2.3", "2.0.0", False),
    ("^0.2.3", "0.2.3", True),
    ("^0.2.3", "0.2.9", True),
    ("^0.2.3", "0.3.0", False),
    ("^0.2.3", "0.2.2", False),
    ("^0.0.3", "0.0.3", True),
    ("^0.0.3", "0.0.4", False),
    ("^0.0.3", "0.0.2", False),
    ("^1.2", "1.2.0", True),
    ("^1.2", "1.9", True),
    ("^1.2", "2", False),
    ("^0.2", "0.2.7", True),
    ("^0.2", "0.3", False),
    ("^0", "0.9", True),
    ("^0", "1.0", False),
    ("^1.x", "1.0.0", True),
    ("^1.x", "2.0.0", False),
    ("^*", "5.0.0", True),
    # tilde
    ("~1.2.3", "1.2.3", True),
    ("~1.2.3", "1.2.9", True),
    ("~1.2.3", "1.2.2", False),
    ("~1.2.3", "1.3.0", False),
    ("~1.2", "1.2.0", True),
    ("~1.2", "1.2.5", True),
    ("~1.2", "1.3", False),
    ("~1", "1.0.0", True),
    ("~1", "1.9", True),
    ("~1", "2.0", False),
    ("~1", "0.9", False),
    ("~0.2.3", "0.2.5", True),
    ("~0.2.3", "0.3.0", False),
    ("~>1.2", "1.2.5", True),
    ("~>1.2", "1.3", False),
    # wildcards
    ("1.2.x", "1.2.0", True),
    ("1.2.x", "1.2.7", True),
    ("1.2.x", "1.3.0", False),
    ("1.2.x", "1.1.9", False),
    ("1.2.*", "1.2.7", True),
    ("1.2.*", "1.3.0", False),
    ("1.2.X", "1.2.7", True),
    ("1.x", "1.9", True),
    ("1.x", "2.0", False),
    ("1.x.x", "1.9", True),
    ("1.x.x", "0.9", False),
    ("*", "0.0.1", True),
    ("*", "99.0", True),
    ("x", "3.1.4", True),
    (">=*", "3.1.4", True),
    (">*", "3.1.4", False),
    ("<*", "0.0.0", False),
    # hyphen ranges
    ("1.2.3 - 1.4", "1.2.3", True),
    ("1.2.3 - 1.4", "1.4.9", True),
    ("1.2.3 - 1.4", "1.5.0", False),
    ("1.2.3 - 1.4", "1.2.2", False),
    ("1.2.3 - 1.4.0", "1.4.0", True),
    ("1.2.3 - 1.4.0", "1.4.1", False),
    ("1.2 - 2", "1.2.0", True),
    ("1.2 - 2", "2.9", True),
    ("1.2 - 2", "3.0", False),
    ("1.2 - 2", "1.1.9", False),
    ("* - 2", "0.0.1", True),
    ("* - 2", "3.0", False),
    ("1.2.3 - 1.4 || 3", "3.1", True),
    # Python forms
    ("~=1.4", "1.4", True),
    ("~=1.4", "1.9.9", True),
    ("~=1.4", "2.0", False),
    ("~=1.4", "1.3.9", False),
    ("~=1.4.2", "1.4.2", True),
    ("~=1.4.2", "1.4.5", True),
    ("~=1.4.2", "1.5.0", False),
    ("~=1.4.2", "1.4.1", False),
    ("~=1.4.2.1", "1.4.2.7", True),
    ("~=1.4.2.1", "1.4.3", False),
    ("==1.4", "1.4.0", True),
    ("==1.4", "1.4", True),
    ("==1.4", "1.4.1", False),  # Python: exactly 1.4, unlike npm's =1.4
    ("==1.4.*", "1.4.7", True),
    ("==1.4.*", "1.5", False),
    ("!=1.4.1", "1.4.1", False),
    ("!=1.4.1", "1.4.2", True),
    ("!=1.4.*", "1.4.9", False),
    ("!=1.4.*", "1.5.0", True),
    ("!=1.4.*", "1.3.9", True),
    (">=1.0,!=1.3.*,<2", "1.2", True),
    (">=1.0,!=1.3.*,<2", "1.3.5", False),
    (">=1.0,!=1.3.*,<2", "1.4", True),
    (">=1.0,!=1.3.*,<2", "2.0", False),
    (">=1.0, <2.0", "1.5", True),
    # npm's prerelease rule
    ("*", "1.0.0-rc.1", False),
    ("x", "1.0.0rc1", False),
    (">=0.0.0", "1.0.0-rc.1", False),
    ("^1.2.3", "1.3.0-rc.1", False),
    ("^1.2.3", "1.2.4-beta", False),
    ("<2", "2.0.0-rc.1", False),
    ("<2", "1.9.0-rc.1", False),
    ("1.x", "1.5.0-rc.1", False),
    (">=1.0.0-rc.1 <1.0.0", "1.0.0-rc.1", True),
    (">=1.0.0-rc.1 <1.0.0", "1.0.0-rc.2", True),
    (">=1.0.0-rc.1 <1.0.0", "1.0.0rc3", True),
    (">=1.0.0-rc.1 <1.0.0", "1.0.0-beta", False),
    (">=1.0.0-rc.1 <1.0.0", "1.0.0", False),
    (">=1.0.0-rc.1", "1.0.0-rc.2", True),
    (">=1.0.0-rc.1", "1.0.0", True),
    (">=1.0.0-rc.1", "1.1.0-rc.1", False),  # a prerelease of another release
    (">=1.0.0-rc.1", "1.1.0", True),
    ("^1.2.3-beta.2", "1.2.3-beta.4", True),
    ("^1.2.3-beta.2", "1.2.3-beta.1", False),
    ("^1.2.3-beta.2", "1.2.4-beta.1", False),
    ("^1.2.3-beta.2", "1.2.4", True),
    ("~1.2.3-beta.2", "1.2.3-beta.11", True),
    ("~1.2.3-beta.2", "1.2.3", True),
    ("~1.2.3-beta.2", "1.3.0-alpha", False),
    ("1.0.0-rc.1", "1.0.0-rc.1", True),
    ("1.0.0-rc.1", "1.0.0rc1", True),
    ("1.0.0-rc.1", "1.0.0-rc.2", False),
    ("1.2.3-rc.1 - 1.2.3", "1.2.3-rc.5", True),
    ("1.0.0 - 2.0.0-rc.2", "2.0.0-rc.1", True),
    ("1.0.0 - 2.0.0-rc.2", "2.0.0-rc.3", False),
    ("1.0.0 - 2.0.0-rc.2", "2.0.0", False),
    ("<1.0.0 || >=2.0.0-rc.1", "2.0.0-rc.2", True),
    ("<1.0.0 || >=2.0.0-rc.1", "1.0.0-rc.1", False),
    ("1.0.0-rc.1 || >=0.5", "1.0.0-rc.2", False),  # the admitting comparator must be in the same set
    ("1.0.0-rc.1 || >=0.5", "1.0.0", True),
    (">=2.0.0-0 <2.0.0", "2.0.0-alpha", True),
    (">=2.0.0-0 <2.0.0", "2.0.0", False),
    (">=1.0.0.dev1 <1.0.0", "1.0.0rc1", True),
    ("~=1.4rc1", "1.4rc2", True),
    ("~=1.4rc1", "1.5", True),
    ("~=1.4rc1", "2.0", False),
    ("!=1.0.0-rc.1", "1.0.0-rc.2", False),  # != lets no prerelease in
    ("!=1.0.0-rc.1", "1.0.0", True),
    ("!=1.4.*", "1.4.0-rc.1", False),
    ("==1.4.*", "1.4.0-rc.1", False),
    (">=1.4.0-rc.1, ==1.4.*", "1.4.0-rc.2", True),
]


@pytest.mark.parametrize(("spec", "version", "expected"), RANGE_CASES)
def test_range_matches(spec: str, version: str, expected: bool) -> None:
    assert VersionRange.parse(spec).matches(v(version)) is expected


@pytest.mark.parametrize(
    ("spec", "normalized"),
    [
        ("^1.2.3", ">=1.2.3 <2.0.0-0"),
        ("^0.2.3", ">=0.2.3 <0.3.0-0"),
        ("^0.0.3", ">=0.0.3 <0.0.4-0"),
        ("^1.2", ">=1.2.0 <2.0.0-0"),
        ("^0.0", ">=0.0.0 <0.1.0-0"),
        ("^0", ">=0.0.0 <1.0.0-0"),
        ("^1.2.3-beta.2", ">=1.2.3-beta.2 <2.0.0-0"),
        ("~1.2.3", ">=1.2.3 <1.3.0-0"),
        ("~1.2", ">=1.2.0 <1.3.0-0"),
        ("~1", ">=1.0.0 <2.0.0-0"),
        ("1.2.x", ">=1.2.0 <1.3.0-0"),
        ("1.2", ">=1.2.0 <1.3.0-0"),
        ("1.x", ">=1.0.0 <2.0.0-0"),
        ("*", "*"),
        (">1.2", ">=1.3.0"),
        (">1", ">=2.0.0"),
        (">=1.2", ">=1.2.0"),
        ("<1.2", "<1.2.0-0"),
        ("<=1.2", "<1.3.0-0"),
        (">*", "<0.0.0-0"),
        ("=1.2.3", "=1.2.3"),
        ("v1.2.3", "=1.2.3"),
        ("1.2.3.4", "=1.2.3.4"),
        (">= 1.2.3", ">=1.2.3"),
        ("1.2.3 - 1.4", ">=1.2.3 <1.5.0-0"),
        ("1.2.3 - 1.4.0", ">=1.2.3 <=1.4.0"),
        ("* - 2", "<3.0.0-0"),
        ("~=1.4", ">=1.4.0 <2.0.0-0"),
        ("~=1.4.2", ">=1.4.2 <1.5.0-0"),
        ("==1.4", "=1.4.0"),
        ("==1.4.*", ">=1.4.0-0 <1.5.0-0"),
        ("!=1.4.*", "!=1.4.*"),
        ("!=1.4.1", "!=1.4.1"),
        ("<1 || ^2.1", "<1.0.0-0 || >=2.1.0 <3.0.0-0"),
        (">=1.0.0.post2", ">=1.0.0.post2"),
    ],
)
def test_range_desugars_like_npm(spec: str, normalized: str) -> None:
    assert VersionRange.parse(spec).normalized == normalized


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (">>1", r"unexpected '>' in '>>1'"),
        ("=>1", r"unexpected '>'"),
        ("!1", r"unexpected '!'"),
        ("^", r"'\^' needs a version after it"),
        (">=", r"'>=' needs a version after it"),
        ("> =1", r"'>' needs a version after it"),
        (">= >=1", r"'>=' needs a version after it"),
        ("1.2.3 -", r"hyphen range"),
        ("- 1.2.3", r"hyphen range"),
        ("1.2.3 - 1.4 - 2", r"hyphen range"),
        ("1.2.3 - 1.4 <1.3", r"hyphen range"),
        (">=1.2 - 2", r"take no operator"),
        ("1.2.3 - ^1.4", r"take no operator"),
        ("abc", r"'abc' is not a version"),
        (">=abc", r"'abc' is not a version"),
        ("1.2.3.4.5", r"is not a version"),
        ("1.x.3", r"only more wildcards may follow a wildcard"),
        ("1.2.3.4.x", r"more than four parts"),
        ("a.x", r"'a.x' is not a version"),
        ("", r"it is empty"),
        ("   ", r"it is empty"),
        ("1 | 2", r"single '\|'"),
        ("1 ||", r"one side of '\|\|' is empty"),
        ("|| 1", r"one side of '\|\|' is empty"),
        ("1 || , || 2", r"one side of '\|\|' is empty"),
        ("~=1", r"at least two parts"),
        ("~=1.x", r"without wildcards"),
        ("1" * 2000, r"longer than"),
    ],
)
def test_malformed_range(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        VersionRange.parse(spec)
    assert str(caught.value).startswith(f"invalid version range {spec.strip()!r}: ")


def test_range_text() -> None:
    spec = VersionRange.parse("  ^1.2 || 2.x ")
    assert spec.text == "^1.2 || 2.x"
    assert str(spec) == "^1.2 || 2.x"
    assert repr(spec) == "VersionRange('^1.2 || 2.x')"
    assert spec == VersionRange.parse("^1.2 || 2.x")
    assert hash(spec) == hash(VersionRange.parse("^1.2 || 2.x"))


def test_pick_newest_in_range() -> None:
    tags = [v(t) for t in ["0.9.0", "1.0.0", "1.4.2", "1.5.0-rc.1", "1.4.10", "2.0.0", "2.1.0-beta.1"]]
    spec = VersionRange.parse("^1.0")
    found = newest(t for t in tags if spec.matches(t))
    assert found is not None
    assert found.text == "1.4.10"
    prerelease_spec = VersionRange.parse(">=2.1.0-0 <2.2")
    found = newest((t for t in tags if prerelease_spec.matches(t)), include_prerelease=True)
    assert found is not None
    assert found.text == "2.1.0-beta.1"
