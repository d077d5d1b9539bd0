"""Read and edit JSON with comments (JSONC) without reformatting what the user wrote.

Agent configs are files people edit by hand: OpenCode's `opencode.jsonc` has comments and trailing
commas, Claude Code's `~/.claude.json` holds a lot of state that is not ours. So an edit here is a
splice: the parser records where each member of each object starts and ends, and `set_member` and
`remove_member` replace, insert or cut exactly one member, leaving every other byte as it was.
Removing a member that `set_member` inserted gives back the original text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from lgrep_core.domain.errors import ConfigError

__all__ = ["Node", "add_item", "loads", "parse", "remove_item", "remove_member", "set_member"]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_DEFAULT_UNIT = "  "
# Objects and arrays nested deeper than this are refused: the parser (and every walk of the value)
# recurses once per level, and no client's settings come near it (`[[[[...` 100000 deep would
# otherwise end in a RecursionError).
MAX_DEPTH = 200


@dataclass
class Member:
    key: str
    key_start: int  # offset of the key's opening quote
    value: Node


@dataclass
class Node:
    """A value in the text: its span [start, end) and, for an object, its members in order."""

    start: int
    end: int
    value: Any
    members: list[Member] = field(default_factory=list["Member"])
    items: list[Node] = field(default_factory=list["Node"])  # an array's elements

    @property
    def is_object(self) -> bool:
        return isinstance(self.value, dict)

    def member(self, key: str) -> Member | None:
        return next((m for m in self.members if m.key == key), None)  # one at most: the parser refuses duplicates


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.depth = 0

    def error(self, what: str, pos: int | None = None) -> ConfigError:
        at = self.pos if pos is None else pos
        line = self.text.count("\n", 0, at) + 1
        col = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return ConfigError(f"{self.source}: line {line} column {col}: {what}")

    def skip(self) -> None:
        """Whitespace and // and /* */ comments."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated /* comment")
                self.pos = end + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            raise self.error("unexpected end of file")
        c = self.text[self.pos]
        if c in "{[":
            if self.depth >= MAX_DEPTH:
                raise self.error(f"nested more than {MAX_DEPTH} levels deep: too deeply nested to edit safely")
            self.depth += 1
            try:
                return self.obj() if c == "{" else self.array()
            finally:
                self.depth -= 1
        if c == '"':
            start = self.pos
            return Node(start, self.pos_after_string(), self.string_value(start))
        start = self.pos
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos, literal)
        match = _NUMBER.match(self.text, start)
        if match is None:
            raise self.error(f"unexpected {c!r}")
        self.pos = match.end()
        try:
            number = json.loads(match.group())
        except ValueError:  # an integer past Python's limit on digits (4,300): no setting holds one
            raise self.error(f"a number {len(match.group()):,} characters long: too long to read", start) from None
        return Node(start, self.pos, number)

    def pos_after_string(self) -> int:
        text, i = self.text, self.pos + 1
        while i < len(text):
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == '"':
                self.pos = i + 1
                return self.pos
            if c == "\n":
                break
            i += 1
        raise self.error("unterminated string")

    def string_value(self, start: int) -> str:
        try:
            return json.loads(self.text[start : self.pos])
        except json.JSONDecodeError as exc:
            raise self.error(f"bad string: {exc.msg}", start) from None

    def obj(self) -> Node:
        start = self.pos
        self.pos += 1
        node = Node(start, start, {})
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.error("unterminated object", start)
            if self.text[self.pos] == "}":
                self.pos += 1
                node.end = self.pos
                return node
            if self.text[self.pos] != '"':
                raise self.error("expected a quoted key")
            key_start = self.pos
            self.pos_after_string()
            key = self.string_value(key_start)
            if key in node.value:
                # Clients keep one of the two (JavaScript's JSON.parse the last), and whichever lgrep
                # showed or edited, the other could be the live one: a repository can hide an entry so.
                raise self.error(
                    f"{json.dumps(key, ensure_ascii=False)} appears twice in the same object; lgrep cannot tell "
                    "which one the client uses: remove one",
                    key_start,
                )
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.error("expected ':'")
            self.pos += 1
            value = self.value()
            node.members.append(Member(key, key_start, value))
            node.value[key] = value.value
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("}", self.pos):
                raise self.error("expected ',' or '}'")

    def array(self) -> Node:
        start = self.pos
        self.pos += 1
        node = Node(start, start, [])
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.error("unterminated array", start)
            if self.text[self.pos] == "]":
                self.pos += 1
                node.end = self.pos
                return node
            item = self.value()
            node.items.append(item)
            node.value.append(item.value)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                raise self.error("expected ',' or ']'")


def parse(text: str, source: str = "<text>") -> Node:
    """The document's root value, with spans. Raises ConfigError (naming `source`, line and column)
    on anything that is not JSON with comments and trailing commas, and on what no client's settings
    hold and lgrep cannot read safely: a key twice in one object (which one counts is the client's
    guess, so an entry could hide behind another), nesting deeper than MAX_DEPTH, an integer too long
    for Python to convert."""
    parser = _Parser(text, source)
    root = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise parser.error("unexpected text after the value")
    return root


def loads(text: str, source: str = "<text>") -> Any:
    return parse(text, source).value


# ------------------------------------------------------------------------------------- editing


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    indent = re.match(r"[ \t]*", text[line_start:])
    return indent.group() if indent else ""


def _unit(text: str) -> str:
    """The document's indentation step (the first indented line's), two spaces if none."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else _DEFAULT_UNIT


def dump(value: Any, indent: str = "", unit: str = _DEFAULT_UNIT) -> str:
    """`value` as JSON laid out like hand-written config: objects one member a line, lists of
    plain values on one line."""
    if isinstance(value, dict) and value:
        inner = indent + unit
        body = ",\n".join(
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {dump(v, inner, unit)}" for k, v in value.items()
        )
        return "{\n" + body + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        inner = indent + unit
        return "[\n" + ",\n".join(inner + dump(v, inner, unit) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def _walk(root: Node, path: list[str], source: str) -> tuple[Node, int]:
    """The deepest existing object along `path` and how many keys of `path` it consumed."""
    node, depth = root, 0
    if not node.is_object:
        raise ConfigError(f"{source}: the file holds {type(node.value).__name__}, not a JSON object")
    for key in path[:-1]:
        member = node.member(key)
        if member is None:
            return node, depth
        if not member.value.is_object:
            raise ConfigError(f"{source}: {'.'.join(path[: depth + 1])} is not an object")
        node, depth = member.value, depth + 1
    return node, depth


def set_member(text: str, path: list[str], value: Any, source: str = "<text>") -> str:
    """`text` with the member at `path` set to `value`: replaced in place if it exists, otherwise
    appended to its object (creating the objects along `path` that are missing). Idempotent."""
    root = parse(text, source)
    parent, depth = _walk(root, path, source)
    rest = path[depth:]
    member = parent.member(rest[0]) if len(rest) == 1 else None
    unit = _unit(text)
    if member is not None:
        if member.value.value == value and type(member.value.value) is type(value):
            return text
        indent = _line_indent(text, member.key_start)
        return text[: member.value.start] + dump(value, indent, unit) + text[member.value.end :]
    nested: Any = value
    for key in reversed(rest[1:]):
        nested = {key: nested}
    key = rest[0]
    if parent.members:
        last = parent.members[-1]
        indent = _line_indent(text, last.key_start)
        if text.rfind("\n", parent.start, last.key_start) < 0:  # members on the `{` line: one level in
            indent = _line_indent(text, parent.start) + unit
        member_text = f"{json.dumps(key, ensure_ascii=False)}: {dump(nested, indent, unit)}"
        comma = _comma_after(text, last.value.end)
        if comma is None:
            return text[: last.value.end] + f",\n{indent}{member_text}" + text[last.value.end :]
        # A trailing comma (JSONC): the new member goes on its own line after the last one's line (and
        # its comment), with a trailing comma of its own, as the file writes them.
        eol = text.find("\n", comma)
        rest_of_line = text[comma + 1 : eol].strip() if eol >= 0 else "?"
        if 0 <= eol < parent.end and (not rest_of_line or rest_of_line.startswith("//")):
            return text[:eol] + f"\n{indent}{member_text}," + text[eol:]
        return text[: comma + 1] + f" {member_text}," + text[comma + 1 :]
    outer = _line_indent(text, parent.start)
    indent = outer + unit
    member_text = f"{json.dumps(key, ensure_ascii=False)}: {dump(nested, indent, unit)}"
    close = parent.end - 1
    if not text[parent.start + 1 : close].strip():
        return text[: parent.start + 1] + f"\n{indent}{member_text}\n{outer}" + text[close:]
    # Only comments inside: they stay, and the member goes on a line of its own before the `}`.
    nl = text.rfind("\n", parent.start, close)
    if nl >= 0 and not text[nl + 1 : close].strip():
        return text[: nl + 1] + f"{indent}{member_text}\n" + text[nl + 1 :]
    return text[:close] + f" {member_text} " + text[close:]


def remove_member(text: str, path: list[str], source: str = "<text>") -> str:
    """`text` without the member at `path` (unchanged when it is not there)."""
    root = parse(text, source)
    parent, depth = _walk(root, path, source)
    if depth != len(path) - 1:
        return text
    index = next((i for i in range(len(parent.members) - 1, -1, -1) if parent.members[i].key == path[-1]), None)
    if index is None:
        return text
    member = parent.members[index]
    comma = _comma_after(text, member.value.end)
    if comma is None:
        if index > 0:  # the last member: from the end of the one before (its comma included)
            return text[: parent.members[index - 1].value.end] + text[member.value.end :]
        return _remove_sole(text, parent, member)
    line_start = text.rfind("\n", 0, member.key_start)
    if line_start >= 0 and not text[line_start + 1 : member.key_start].strip():
        return text[:line_start] + text[comma + 1 :]  # the member's own lines and its comma
    end = comma + 1
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[: member.key_start] + text[end:]


def _remove_sole(text: str, parent: Node, member: Member) -> str:
    before = text[parent.start + 1 : member.key_start]
    after = text[member.value.end : parent.end - 1]
    if not before.strip() and not after.strip():
        return text[: parent.start + 1] + text[parent.end - 1 :]  # nothing else in it: `{}`
    # Comments around it stay: the member's own line goes, or else just the member.
    line_start = text.rfind("\n", 0, member.key_start) + 1
    eol = text.find("\n", member.value.end)
    if not text[line_start : member.key_start].strip() and eol >= 0 and not text[member.value.end : eol].strip():
        return text[:line_start] + text[eol + 1 :]
    return text[: member.key_start] + text[member.value.end :]


def _comma_after(text: str, pos: int) -> int | None:
    """The offset of the comma that follows a value ending at `pos` (comments between skipped), if any."""
    parser = _Parser(text, "")
    parser.pos = pos
    parser.skip()
    return parser.pos if text.startswith(",", parser.pos) else None


def _array_at(text: str, path: list[str], source: str) -> Node | None:
    node = parse(text, source)
    for key in path:
        member = node.member(key) if node.is_object else None
        if member is None:
            return None
        node = member.value
    if not isinstance(node.value, list):
        raise ConfigError(f"{source}: {'.'.join(path)} is not a list")
    return node


def add_item(text: str, path: list[str], value: Any, source: str = "<text>") -> str:
    """`text` with `value` appended to the list at `path` (created if missing); unchanged when the
    list holds it already."""
    array = _array_at(text, path, source)
    if array is None:
        return set_member(text, path, [value], source)
    if value in array.value:
        return text
    item = json.dumps(value, ensure_ascii=False)
    if not array.items:
        close = array.end - 1
        if not text[array.start + 1 : close].strip():
            return text[: array.start + 1] + item + text[close:]
        # Only comments inside: they stay, and the item goes on a line of its own before the `]`.
        nl = text.rfind("\n", array.start, close)
        if nl >= 0 and not text[nl + 1 : close].strip():
            indent = _line_indent(text, array.start) + _unit(text)
            return text[: nl + 1] + f"{indent}{item}\n" + text[nl + 1 :]
        spaced = text[close - 1] in " \t"
        return text[:close] + (f"{item} " if spaced else f" {item}") + text[close:]
    last = array.items[-1]
    comma = _comma_after(text, last.end)
    if comma is not None:
        return text[: comma + 1] + f" {item}," + text[comma + 1 :]
    if "\n" in text[array.start : last.start]:
        return text[: last.end] + f",\n{_line_indent(text, last.start)}{item}" + text[last.end :]
    return text[: last.end] + f", {item}" + text[last.end :]


def remove_item(text: str, path: list[str], value: Any, source: str = "<text>") -> str:
    """`text` without `value` in the list at `path` (the exact inverse of `add_item`)."""
    array = _array_at(text, path, source)
    if array is None or value not in array.value:
        return text
    index = array.value.index(value)
    item = array.items[index]
    comma = _comma_after(text, item.end)
    if len(array.items) == 1 and not text[array.start + 1 : item.start].strip():
        tail = text[item.end : array.end - 1]
        if not tail.strip() or tail.strip() == ",":
            return text[: array.start + 1] + text[array.end - 1 :]
    if comma is None and index > 0:
        return text[: array.items[index - 1].end] + text[item.end :]
    if comma is not None:
        end = comma + 1
        if index > 0 and index == len(array.items) - 1:  # a trailing comma: keep the one before
            return text[: array.items[index - 1].end] + text[item.end :]
        while end < len(text) and text[end] in " \t":
            end += 1
        if "\n" in text[item.end : end] or (end < len(text) and text[end] == "\n"):
            line_start = text.rfind("\n", 0, item.start)
            if line_start >= 0 and not text[line_start + 1 : item.start].strip():
                return text[:line_start] + text[comma + 1 :]
        return text[: item.start] + text[end:]
    if len(array.items) == 1:  # alone among comments (as add_item puts it there): its line, or its spaces
        line_start = text.rfind("\n", 0, item.start) + 1
        eol = text.find("\n", item.end)
        if not text[line_start : item.start].strip() and eol >= 0 and not text[item.end : eol].strip():
            return text[:line_start] + text[eol + 1 :]
        if text[item.start - 1 : item.start] == " ":
            if text[item.end : item.end + 1] == " ":
                return text[: item.start] + text[item.end + 1 :]
            return text[: item.start - 1] + text[item.end :]
    return text[: item.start] + text[item.end :]
