"""Release versions parsed from git tags, their order, and npm-style version ranges.

Versions
--------

Tags in the wild mix semver, PEP 440 and plain numbers, so `Version.parse` is lenient::

    version    := ["v" | "V"] release [prerelease | attached | post] ["+" build]
    release    := N ("." N){0,3}                    2.1, 0.7.3, 1.2.3.4 (1 to 4 numeric parts)
    prerelease := "-" ident ("." ident)*            semver: 1.0.0-rc.1, 1.0.0-alpha.beta
    attached   := ["."] letter {alnum | "." | "_" | "-"}
                                                    PEP 440 style: 1.0.0rc1, 1.0a1, 1.0.0.dev3, 1.0.0alpha.2
    post       := ["."] "post" [N]                  PEP 440 post release: 1.0.0.post1 (above 1.0.0)
    build      := {alnum | "." | "_" | "-"}+        metadata, ignored by the order: 0.1.15+build.5

`ident` is a non-empty run of ASCII letters, digits and `-`. An attached suffix is lowercased and cut
into identifiers at `.`, `_`, `-` and at every letter/digit boundary, so `1.0.0rc1` has the
identifiers `rc`, `1` and sorts like `1.0.0-rc.1`. Anything else (`release-1.2`, `1.2.3.4.5`,
`1.0.0-`, a text longer than 256 characters) is not a version: `parse` returns None. Surrounding
whitespace is dropped; `Version.text` keeps the rest exactly as written.

Order (`Version.sort_key`): the numeric parts are compared as numbers, a missing part counting as 0
(`1.2` and `1.2.0` have the same `precedence`; `sort_key` breaks that tie by the text, so sorting is
deterministic); a prerelease sorts below its release, a post release above it; prereleases of the
same release compare as in semver 2.0: identifier by identifier, numeric ones as numbers and below
alphanumeric ones (compared as ASCII strings), and a shorter list of identifiers first when it is a
prefix of the other::

    1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta < 1.0.0-beta < 1.0.0-beta.2 < 1.0.0-beta.11
        < 1.0.0-rc.1 < 1.0.0 < 1.0.0.post1 < 1.0.1

PEP 440's own order of labels is not applied: `1.0.0.dev3` sorts as the semver prerelease `dev.3`
(between `b`/`beta` and `rc`, not below `a1`).

Ranges
------

`VersionRange.parse` reads npm (node-semver) range syntax; the Python forms `~=`, `==`, `!=` and
commas are accepted too:

* comparators `>=1.2.3`, `>1.2`, `<2`, `<=1.4.0`, `=1.2.3` and a bare `1.2.3` (exact);
  whitespace between an operator and its version is allowed (`>= 1.2`);
* comparators separated by spaces or commas are ANDed; `||` ORs such sets;
* X-ranges: `*`, `x`, `1.x`, `1.2.x`, `1.2.*`, and a partial version `1.2` meaning `1.2.x`;
  on partial versions the operators act as in npm: `>1.2` is `>=1.3.0`, `<=1.2` is `<1.3.0-0`;
* caret `^1.2.3` (`>=1.2.3 <2.0.0-0`), `^0.2.3` (`<0.3.0-0`), `^0.0.3` (`<0.0.4-0`), `^1.2`, `^0.x`;
* tilde `~1.2.3` (`>=1.2.3 <1.3.0-0`), `~1.2` (`<1.3.0-0`), `~1` (`<2.0.0-0`); `~>` is npm's alias of `~`;
* hyphen ranges `1.2.3 - 1.4` (`>=1.2.3 <1.5.0-0`; a complete upper version is inclusive);
* Python: `~=1.4` (`>=1.4 <2-0`), `~=1.4.2` (`>=1.4.2 <1.5-0`); `==1.4` is exactly 1.4 (= 1.4.0,
  unlike npm's `=1.4`, which is `1.4.x`); `==1.4.*` is the 1.4 series; `!=1.4.1` and `!=1.4.*` exclude.

A version with three or four numeric parts, or with a prerelease, is complete; fewer parts make a
partial version (an X-range). `X-0` above means "below every prerelease of X", so `<2.0.0-0`
excludes 2.0.0-rc.1 as well as 2.0.0.

Prereleases follow npm's rule: a prerelease version matches a set of ANDed comparators only if it
satisfies all of them *and* one of them was written with a prerelease of the same release (the same
numeric parts, a missing one counting as 0). So `>=1.0.0-rc.1 <1.0.0` takes 1.0.0-rc.2 but not
1.1.0-rc.1, `^1.2.3` takes no prerelease at all, and `*` (like `x` or an empty AND-set) matches
every release but never a prerelease. A `!=` comparator lets no prerelease in. To take
prereleases, name one: `>=2.0.0-0 <2.0.0`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, TypeAlias

__all__ = [
    "Precedence",
    "SortKey",
    "Version",
    "VersionRange",
    "looks_like_range",
    "newest",
    "sort_descending",
]

_MAX_VERSION_LENGTH = 256
_MAX_RANGE_LENGTH = 1024

_Release4: TypeAlias = tuple[int, int, int, int]
_Identifier: TypeAlias = tuple[int, int, str]  # (0, n, "") numeric, (1, 0, s) alphanumeric
# (release padded to four parts, 0 for a prerelease else 1, prerelease identifiers, post number or -1)
Precedence: TypeAlias = tuple[_Release4, int, tuple[_Identifier, ...], int]
# Precedence plus the text, so that 1.2 and 1.2.0 still sort in a fixed order.
SortKey: TypeAlias = tuple[_Release4, int, tuple[_Identifier, ...], int, str]

# Every quantifier is bounded by a separator or the end, and the input by _MAX_VERSION_LENGTH:
# no catastrophic backtracking on a tag from an untrusted repository.
_VERSION = re.compile(
    r"[vV]?(?P<release>[0-9]+(?:\.[0-9]+){0,3})"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)|(?P<attached>\.?[A-Za-z][0-9A-Za-z._-]*))?"
    r"(?:\+(?P<build>[0-9A-Za-z._-]+))?"
)
_ATTACHED_SEPARATORS = re.compile(r"[._-]")
_RUNS = re.compile(r"[a-z]+|[0-9]+")
_WILDCARDS = frozenset({"x", "X", "*"})


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _identifier_key(identifier: str) -> _Identifier:
    return (0, int(identifier), "") if _is_number(identifier) else (1, 0, identifier)


def _pad(parts: Sequence[int]) -> _Release4:
    padded = (*parts, 0, 0, 0, 0)
    return (padded[0], padded[1], padded[2], padded[3])


def _attached_identifiers(suffix: str) -> tuple[str, ...] | None:
    """`rc1` -> (rc, 1); `.dev3` -> (dev, 3); `alpha.2` -> (alpha, 2); None for an empty piece."""
    pieces = _ATTACHED_SEPARATORS.split(suffix.removeprefix(".").lower())
    if any(not piece for piece in pieces):
        return None
    return tuple(run for piece in pieces for run in _RUNS.findall(piece))


@dataclass(frozen=True, order=False)
class Version:
    """A release version as written in a tag; see the module docstring for the grammar and order."""

    text: str
    release: tuple[int, ...]
    prerelease: tuple[str, ...] = ()
    build: str = ""
    post: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= len(self.release) <= 4 or any(part < 0 for part in self.release):
            raise ValueError(f"a version has 1 to 4 non-negative numeric parts, not {self.release!r}")
        if any(not identifier for identifier in self.prerelease):
            raise ValueError(f"empty prerelease identifier in {self.prerelease!r}")
        if self.prerelease and self.post is not None:
            raise ValueError("a version is either a prerelease or a post release, not both")

    @classmethod
    def parse(cls, text: str) -> Version | None:
        """The version written in `text`, or None when it is not one (the grammar is lenient)."""
        text = text.strip()
        if not text or len(text) > _MAX_VERSION_LENGTH:
            return None
        match = _VERSION.fullmatch(text)
        if match is None:
            return None
        release = tuple(int(part) for part in match["release"].split("."))
        prerelease: tuple[str, ...] = ()
        post: int | None = None
        if match["pre"] is not None:
            prerelease = tuple(match["pre"].split("."))
        elif match["attached"] is not None:
            identifiers = _attached_identifiers(match["attached"])
            if identifiers is None:
                return None
            if identifiers[0] == "post":
                if len(identifiers) > 2 or (len(identifiers) == 2 and not _is_number(identifiers[1])):
                    return None
                post = int(identifiers[1]) if len(identifiers) == 2 else 0
            else:
                prerelease = identifiers
        return cls(text, release, prerelease, match["build"] or "", post)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    @cached_property
    def precedence(self) -> Precedence:
        """The order of the version, without the text: equal for `1.2`, `1.2.0` and `1.2.0+b1`."""
        return (
            _pad(self.release),
            0 if self.prerelease else 1,
            tuple(_identifier_key(identifier) for identifier in self.prerelease),
            -1 if self.post is None else self.post,
        )

    @property
    def sort_key(self) -> SortKey:
        """A total order: `precedence`, then the text (`sorted(versions, key=attrgetter("sort_key"))`)."""
        return (*self.precedence, self.text)

    def __str__(self) -> str:
        return self.text


def sort_descending(versions: Iterable[Version]) -> list[Version]:
    """The versions, highest first (ties of precedence in a fixed order, by text)."""
    return sorted(versions, key=lambda version: version.sort_key, reverse=True)


def newest(versions: Iterable[Version], *, include_prerelease: bool = False) -> Version | None:
    """The highest release; the highest prerelease if there is no release (or if `include_prerelease`
    and it is higher); None for no versions."""
    best: Version | None = None
    best_release: Version | None = None
    for version in versions:
        if best is None or version.sort_key > best.sort_key:
            best = version
        if not version.is_prerelease and (best_release is None or version.sort_key > best_release.sort_key):
            best_release = version
    if include_prerelease or best_release is None:
        return best
    return best_release


def looks_like_range(text: str) -> bool:
    """Whether `text` is range syntax rather than one exact version string: it holds `^ ~ < > = ! * , |`
    or whitespace (after stripping the ends: `||`, `1.2.3 - 1.4`, `>=1 <2`), or a numeric part that
    is a wildcard `x`/`X` (`1.x`, `1.2.X`, `x`; not the prerelease `1.0.0-rc.x`). `0.7.3`,
    `1.0.0-rc.1`, `2.1` and `latest` are not."""
    stripped = text.strip()
    if any(char in "^~<>=!*,|" or char.isspace() for char in stripped):
        return True
    if stripped[:1] in ("v", "V"):
        stripped = stripped[1:]
    release = re.split(r"[-+]", stripped, maxsplit=1)[0]  # `x` in a prerelease is a word, not a wildcard
    return any(part in _WILDCARDS for part in release.split("."))


# --- ranges ---

_Operator = Literal["<", "<=", ">", ">=", "=", "!="]
# Longest first, so that `>=` is not read as `>` followed by `=1`.
_OPERATORS = ("~=", "~>", "==", "!=", ">=", "<=", ">", "<", "=", "~", "^")
_OPERATOR_CHARS = frozenset("<>=~^!")


class _MalformedError(Exception):
    """What is wrong with a range; `VersionRange.parse` turns it into a ValueError naming the range."""


def _release_key(parts: Sequence[int]) -> Precedence:
    """The release itself: `1.2` -> 1.2.0.0."""
    return (_pad(parts), 1, (), -1)


def _floor_key(parts: Sequence[int]) -> Precedence:
    """npm's `X-0`: below every prerelease of the release X, above every lower release."""
    return (_pad(parts), 0, (), -1)


def _bump(parts: Sequence[int], index: int) -> tuple[int, ...]:
    """`parts` with part `index` plus one and the parts after it dropped (they count as 0)."""
    padded = _pad(parts)
    return (*padded[:index], padded[index] + 1)


def _format_key(key: Precedence) -> str:
    release, kind, identifiers, post = key
    text = ".".join(str(part) for part in (release if release[3] else release[:3]))
    if kind == 0:
        words = [str(number) if numeric == 0 else word for numeric, number, word in identifiers]
        text += "-" + (".".join(words) if words else "0")
    if post >= 0:
        text += f".post{post}"
    return text


@dataclass(frozen=True)
class _Comparator:
    """One comparison with a bound; `upper` makes `!=` exclude the span [key, upper) (`!=1.4.*`)."""

    op: _Operator
    key: Precedence
    admits: _Release4 | None = None  # the release whose prereleases this comparator lets in (npm rule)
    upper: Precedence | None = None
    label: str = ""

    def test(self, key: Precedence) -> bool:
        if self.upper is not None:
            return not self.key <= key < self.upper
        if self.op == "<":
            return key < self.key
        if self.op == "<=":
            return key <= self.key
        if self.op == ">":
            return key > self.key
        if self.op == ">=":
            return key >= self.key
        if self.op == "=":
            return key == self.key
        return key != self.key

    def __str__(self) -> str:
        return self.label or f"{self.op}{_format_key(self.key)}"


_NOTHING = _Comparator("<", _floor_key((0,)))  # npm's `<0.0.0-0`: no version is below it


@dataclass(frozen=True)
class _Partial:
    """A version in a range, possibly partial (`1.2`) or with wildcards (`1.x`, `*`)."""

    parts: tuple[int, ...]  # the numeric parts written before any wildcard
    version: Version | None  # the version as written; None when it holds a wildcard
    is_x: bool  # an X-range: a wildcard, or fewer than three parts and no prerelease or post suffix


def _parse_partial(text: str) -> _Partial:
    body = text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text
    pieces = body.split(".")
    wild = [piece in _WILDCARDS for piece in pieces]
    if any(wild):
        first = wild.index(True)
        if not all(wild[first:]):
            raise _MalformedError(f"{text!r}: only more wildcards may follow a wildcard")
        if len(pieces) > 4:
            raise _MalformedError(f"{text!r} has more than four parts")
        if not all(_is_number(piece) for piece in pieces[:first]):
            raise _MalformedError(f"{text!r} is not a version")
        return _Partial(tuple(int(piece) for piece in pieces[:first]), None, is_x=True)
    version = Version.parse(text)
    if version is None:
        raise _MalformedError(f"{text!r} is not a version")
    partial = len(version.release) < 3 and not version.prerelease and version.post is None
    return _Partial(version.release, version, is_x=partial)


def _compare(op: _Operator, version: Version) -> _Comparator:
    admits = _pad(version.release) if version.is_prerelease and op != "!=" else None
    return _Comparator(op, version.precedence, admits=admits)


def _lower(partial: _Partial) -> _Comparator:
    """`>=` the partial version: its release for an X-range (`1.2` -> `>=1.2.0`), else itself."""
    if partial.is_x or partial.version is None:
        return _Comparator(">=", _release_key(partial.parts))
    return _compare(">=", partial.version)


def _below_bump(partial: _Partial, index: int) -> _Comparator:
    return _Comparator("<", _floor_key(_bump(partial.parts, index)))


def _x_range(op: str, partial: _Partial) -> list[_Comparator]:
    """npm's replaceXRange: an operator applied to a partial version."""
    n = len(partial.parts)
    if n == 0:
        return [_NOTHING] if op in ("<", ">") else []
    if op == ">":
        return [_Comparator(">=", _release_key(_bump(partial.parts, n - 1)))]
    if op == ">=":
        return [_Comparator(">=", _release_key(partial.parts))]
    if op == "<":
        return [_Comparator("<", _floor_key(partial.parts))]
    if op == "<=":
        return [_below_bump(partial, n - 1)]
    return [_lower(partial), _below_bump(partial, n - 1)]


def _caret(partial: _Partial) -> list[_Comparator]:
    """`^`: changes that do not modify the left-most non-zero part (of the first three)."""
    n = len(partial.parts)
    if n == 0:
        return []
    major, minor, _, _ = _pad(partial.parts)
    if n == 1 and partial.is_x:
        index = 0
    elif n == 2 and partial.is_x:
        index = 1 if major == 0 else 0
    else:
        index = 0 if major else 1 if minor else 2
    return [_lower(partial), _below_bump(partial, index)]


def _tilde(partial: _Partial) -> list[_Comparator]:
    """`~`: patch-level changes if a minor part is given, minor-level changes if not."""
    n = len(partial.parts)
    if n == 0:
        return []
    return [_lower(partial), _below_bump(partial, 0 if n == 1 else 1)]


def _compatible(partial: _Partial, text: str) -> list[_Comparator]:
    """Python's `~=`: at least the version, and the same release but for its last part."""
    version = partial.version
    if version is None:
        raise _MalformedError(f"'~=' takes a version without wildcards, not {text!r}")
    if len(version.release) < 2:
        raise _MalformedError(f"'~=' needs a version with at least two parts ('~=1.4'), not {text!r}")
    return [_compare(">=", version), _below_bump(partial, len(version.release) - 2)]


def _python_equality(op: Literal["==", "!="], partial: _Partial, text: str) -> list[_Comparator]:
    """`==`/`!=` as in Python: an exact version (`==1.4` is 1.4.0), or a prefix with `.*`."""
    if partial.version is not None:
        return [_compare("=" if op == "==" else "!=", partial.version)]
    n = len(partial.parts)
    if n == 0:
        return [] if op == "==" else [_NOTHING]
    low, high = _floor_key(partial.parts), _floor_key(_bump(partial.parts, n - 1))
    if op == "==":
        return [_Comparator(">=", low), _Comparator("<", high)]
    label = "!=" + ".".join(str(part) for part in partial.parts) + ".*"
    return [_Comparator("!=", low, upper=high, label=label)]


def _parse_comparator(token: str) -> list[_Comparator]:
    op = next((candidate for candidate in _OPERATORS if token.startswith(candidate)), "")
    text = token[len(op) :]
    if not text:
        raise _MalformedError(f"{op!r} needs a version after it")
    if text[0] in _OPERATOR_CHARS:
        raise _MalformedError(f"unexpected {text[0]!r} in {token!r}")
    partial = _parse_partial(text)
    if op == "^":
        return _caret(partial)
    if op in ("~", "~>"):
        return _tilde(partial)
    if op == "~=":
        return _compatible(partial, text)
    if op in ("==", "!="):
        return _python_equality(op, partial, text)
    if partial.is_x or partial.version is None:
        return _x_range(op, partial)
    if op in ("", "="):
        return [_compare("=", partial.version)]
    if op == "<":
        return [_compare("<", partial.version)]
    if op == "<=":
        return [_compare("<=", partial.version)]
    if op == ">":
        return [_compare(">", partial.version)]
    return [_compare(">=", partial.version)]


def _hyphen(low: _Partial, high: _Partial) -> list[_Comparator]:
    """npm's `LOW - HIGH`: inclusive; a partial HIGH takes its whole series (`- 1.4` is `<1.5.0-0`)."""
    comparators: list[_Comparator] = []
    if low.parts:
        comparators.append(_lower(low))
    if high.parts:
        if high.is_x or high.version is None:
            comparators.append(_below_bump(high, len(high.parts) - 1))
        else:
            comparators.append(_compare("<=", high.version))
    return comparators


def _parse_set(tokens: list[str]) -> tuple[_Comparator, ...]:
    """One AND-set: the tokens of one side of `||`."""
    if "-" in tokens:
        if len(tokens) != 3 or tokens[1] != "-":
            raise _MalformedError("a hyphen range is 'LOW - HIGH': one version on each side of ' - ' and nothing else")
        for bound in (tokens[0], tokens[2]):
            if bound[0] in _OPERATOR_CHARS:
                raise _MalformedError(f"the bounds of a hyphen range take no operator, not {bound!r}")
        return tuple(_hyphen(_parse_partial(tokens[0]), _parse_partial(tokens[2])))
    merged: list[str] = []
    pending = ""  # an operator written apart from its version: `>= 1.2`
    for token in tokens:
        if pending and token[0] in _OPERATOR_CHARS:
            raise _MalformedError(f"{pending!r} needs a version after it")
        if token in _OPERATORS:
            pending = token
            continue
        merged.append(pending + token)
        pending = ""
    if pending:
        raise _MalformedError(f"{pending!r} needs a version after it")
    return tuple(comparator for token in merged for comparator in _parse_comparator(token))


def _parse_sets(text: str) -> tuple[tuple[_Comparator, ...], ...]:
    if not text:
        raise _MalformedError("it is empty")
    if len(text) > _MAX_RANGE_LENGTH:
        raise _MalformedError(f"it is longer than {_MAX_RANGE_LENGTH} characters")
    sets: list[tuple[_Comparator, ...]] = []
    for alternative in text.split("||"):
        if "|" in alternative:
            raise _MalformedError("a single '|': alternatives are separated by '||'")
        tokens = alternative.replace(",", " ").split()
        if not tokens:
            raise _MalformedError("one side of '||' is empty")
        sets.append(_parse_set(tokens))
    return tuple(sets)


@dataclass(frozen=True, repr=False)
class VersionRange:
    """A set of versions in npm range syntax (see the module docstring), e.g. `^1.2 || >=2.0.0-rc.1 <2.1`."""

    text: str
    sets: tuple[tuple[_Comparator, ...], ...]

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        """The range written in `text`; ValueError saying what is wrong when it is malformed."""
        stripped = text.strip()
        try:
            sets = _parse_sets(stripped)
        except _MalformedError as error:
            raise ValueError(f"invalid version range {stripped!r}: {error}") from None
        return cls(stripped, sets)

    def matches(self, version: Version) -> bool:
        """Whether the version is in the range (prereleases only by npm's rule; see the module docstring)."""
        key = version.precedence
        release = key[0]
        return any(
            all(comparator.test(key) for comparator in comparators)
            and (not version.is_prerelease or any(comparator.admits == release for comparator in comparators))
            for comparators in self.sets
        )

    @property
    def normalized(self) -> str:
        """The range as plain comparators, npm style: `^1.2.3` -> `>=1.2.3 <2.0.0-0`; `*` for any release."""
        return " || ".join(" ".join(str(c) for c in comparators) or "*" for comparators in self.sets)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"VersionRange({self.text!r})"
