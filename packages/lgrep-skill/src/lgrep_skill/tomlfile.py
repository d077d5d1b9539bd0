"""Edit one table of a TOML file (Codex's `config.toml`) without reformatting what the user wrote.

Codex keeps its MCP servers as `[mcp_servers.<name>]` tables in a file people edit by hand
(comments, key order, their own servers, Codex's own `[projects.*]` trust records). An edit here is
a splice, as in `jsonc`: a scanner records where each table header and each `key = value` statement
starts and ends, and `set_table` / `remove_table` replace, insert or cut exactly those lines. The
standard library's `tomllib` checks the file before (a file it cannot parse is an error with its
line and column, and is not touched) and after every edit (the result must hold exactly the intended
values, or the edit is refused rather than written): whatever the scanner does not understand ends
in a clear error, never in a wrong file. Removing a table that `set_table` appended gives back the
original text.

Only the forms `codex mcp add` writes and people write by hand are edited: a `[a.b]` header table,
whose own keys are replaced or inserted and whose other keys and sub-tables stay. A table written
another way (an inline `b = {...}`, dotted keys) is refused with a message saying what to do.
"""

from __future__ import annotations

import copy
import re
import sys
import tomllib
from dataclasses import dataclass, field
from typing import Any

from lgrep_core.domain.errors import ConfigError

from .jsonc import MAX_DEPTH

__all__ = ["dump_value", "get_table", "loads", "remove_table", "set_table"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR = re.compile(r"[^#\r\n]*")
_BLANK_LINE = re.compile(r"[ \t]*\r?\n")


def loads(text: str, source: str = "<text>") -> dict[str, Any]:
    """The document's values. Raises ConfigError naming `source` (and the line and column where
    `tomllib` or the number says): for a file that is not TOML (a key defined twice included), and
    for one lgrep cannot handle safely, as `jsonc` refuses it: nested deeper than MAX_DEPTH (a header
    `[a.a.a....]` thousands of keys deep parses, then ends every copy or comparison of it in a
    RecursionError) or holding an integer too long for Python to convert. Every read of TOML here
    goes through it."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if "twice" in str(exc) or "overwrite" in str(exc):
            # tomllib's words for a key or table written twice ("Cannot overwrite a value"): say it plainly.
            raise ConfigError(
                f"{source}: {exc}: a key or table is defined twice, which TOML does not allow (the client "
                "cannot read the file either): remove one"
            ) from None
        raise ConfigError(f"{source}: {exc}; lgrep leaves the file alone") from None
    except RecursionError:
        raise ConfigError(f"{source}: too deeply nested to edit safely") from None
    except ValueError:  # not a TOMLDecodeError: an integer past Python's limit on digits
        raise ConfigError(f"{source}: {_long_number(text)}: too long to read") from None
    if _depth(doc) > MAX_DEPTH:
        raise ConfigError(f"{source}: nested more than {MAX_DEPTH} levels deep: too deeply nested to edit safely")
    return doc


def _long_number(text: str) -> str:
    """Where the integer too long to convert is (line and column), to name it in the error."""
    limit = sys.get_int_max_str_digits() or 4300
    match = re.search(rf"[0-9][0-9_]{{{limit},}}", text)
    if match is None:
        return "a number"
    line = text.count("\n", 0, match.start()) + 1
    column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
    return f"line {line} column {column}: a number {len(match.group()):,} characters long"


def _depth(doc: dict[str, Any]) -> int:
    """How deeply tables and arrays nest in `doc` (the root is level 1), measured without recursion
    and no further than one level past MAX_DEPTH."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        children: Any = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def get_table(doc: dict[str, Any], path: list[str]) -> Any:
    node: Any = doc
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]  # pyright: ignore[reportUnknownVariableType]
    return node  # pyright: ignore[reportUnknownVariableType]


# ------------------------------------------------------------------------------------- writing


def _string(value: str) -> str:
    out: list[str] = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def dump_value(value: Any) -> str:
    """A TOML value for a string, bool, int, or a list of those (all an MCP entry of ours holds)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(dump_value(v) for v in value) + "]"  # pyright: ignore[reportUnknownVariableType]
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


# ------------------------------------------------------------------------------------- scanning


@dataclass
class _Statement:
    """A `key = value` line: its key path (relative to its table), where its line starts, where its
    value starts and ends, and where its line ends (after the newline)."""

    key: list[str]
    start: int
    value_start: int
    value_end: int
    end: int


@dataclass
class _Table:
    """A `[header]` table: its path, where its header line starts, where its body starts, and its
    statements."""

    path: list[str]
    start: int
    body: int  # just after the header line
    array: bool = False
    statements: list[_Statement] = field(default_factory=list["_Statement"])


class _Scanner:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0

    def error(self, what: str) -> ConfigError:
        line = self.text.count("\n", 0, self.pos) + 1
        return ConfigError(f"{self.source}: line {line}: {what}")

    def blank(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def rest_of_line(self) -> None:
        """Skip whitespace and a comment, then the newline."""
        self.blank()
        if self.text.startswith("#", self.pos):
            eol = self.text.find("\n", self.pos)
            self.pos = len(self.text) if eol < 0 else eol
        if self.text.startswith("\r\n", self.pos):
            self.pos += 2
        elif self.text.startswith("\n", self.pos):
            self.pos += 1

    def string(self) -> str:
        text = self.text
        for quote in ('"""', "'''"):
            if text.startswith(quote, self.pos):
                end = self.pos + 3
                while True:
                    end = text.find(quote, end)
                    if end < 0:
                        raise self.error("unterminated string")
                    if quote == '"""' and _escaped(text, end):
                        end += 1
                        continue
                    break
                while text.startswith(quote[0], end + 3):  # up to two quotes may close the content
                    end += 1
                raw = text[self.pos : end + 3]
                self.pos = end + 3
                return raw
        quote = text[self.pos]
        end = self.pos + 1
        while True:
            nxt = text.find(quote, end)
            eol = text.find("\n", end)
            if nxt < 0 or (0 <= eol < nxt):
                raise self.error("unterminated string")
            if quote == '"' and _escaped(text, nxt):
                end = nxt + 1
                continue
            raw = text[self.pos : nxt + 1]
            self.pos = nxt + 1
            return raw

    def key(self) -> list[str]:
        parts: list[str] = []
        while True:
            self.blank()
            if self.pos < len(self.text) and self.text[self.pos] in "\"'":
                raw = self.string()
                parts.append(loads(f"k = {raw}", self.source)["k"])
            else:
                match = _BARE_KEY.match(self.text, self.pos)
                if match is None:
                    raise self.error("expected a key")
                parts.append(match.group())
                self.pos = match.end()
            self.blank()
            if not self.text.startswith(".", self.pos):
                return parts
            self.pos += 1

    def value(self) -> None:
        """Skip one value: a string, an array or inline table (nested, with strings and comments
        inside), or a scalar up to a comment or the end of its line."""
        text = self.text
        ch = text[self.pos] if self.pos < len(text) else ""
        if ch in ("'", '"'):
            self.string()
            return
        if ch in ("[", "{"):
            depth = 0
            while self.pos < len(text):
                c = text[self.pos]
                if c in "\"'":
                    self.string()
                    continue
                if c == "#":
                    eol = text.find("\n", self.pos)
                    self.pos = len(text) if eol < 0 else eol
                    continue
                depth += 1 if c in "[{" else -1 if c in "]}" else 0
                self.pos += 1
                if depth == 0:
                    return
            raise self.error("unterminated array or inline table")
        match = _SCALAR.match(text, self.pos)
        self.pos = match.end() if match else self.pos
        while text[self.pos - 1 : self.pos] in (" ", "\t"):  # trailing blanks belong to the line
            self.pos -= 1

    def scan(self) -> tuple[list[_Statement], list[_Table]]:
        """The root's statements and every table, in order."""
        root: list[_Statement] = []
        tables: list[_Table] = []
        text = self.text
        while self.pos < len(text):
            line = self.pos
            self.blank()
            if self.pos >= len(text):
                break
            ch = text[self.pos]
            if ch in "#\r\n":
                self.rest_of_line()
            elif ch == "[":
                array = text.startswith("[[", self.pos)
                self.pos += 2 if array else 1
                path = self.key()
                close = "]]" if array else "]"
                if not text.startswith(close, self.pos):
                    raise self.error("expected ']'")
                self.pos += len(close)
                self.rest_of_line()
                tables.append(_Table(path, line, self.pos, array=array))
            else:
                key = self.key()
                if not text.startswith("=", self.pos):
                    raise self.error("expected '='")
                self.pos += 1
                self.blank()
                value_start = self.pos
                self.value()
                value_end = self.pos
                self.rest_of_line()
                (tables[-1].statements if tables else root).append(
                    _Statement(key, line, value_start, value_end, self.pos)
                )
        return root, tables


def _escaped(text: str, pos: int) -> bool:
    """Whether the character at `pos` is escaped by an odd run of backslashes before it."""
    n = 0
    while pos - n - 1 >= 0 and text[pos - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _scan(text: str, source: str) -> tuple[list[_Statement], list[_Table]]:
    return _Scanner(text, source).scan()


def _refused(source: str, path: list[str]) -> ConfigError:
    return ConfigError(
        f"{source}: lgrep cannot edit [{'.'.join(path)}] in this file safely (it is not written as a "
        f"[{'.'.join(path)}] table of its own); edit it by hand"
    )


def _check(after: str, source: str, path: list[str], expected: Any, before: dict[str, Any]) -> str:
    """`after`, once `tomllib` confirms it holds what was intended (`path` set to `expected`, or
    gone when None) and nothing else changed; otherwise the edit is refused."""
    try:
        doc = loads(after, source)
    except ConfigError:
        raise _refused(source, path) from None
    if _pruned(doc, path) != _pruned(_with(before, path, expected), path):
        raise _refused(source, path)
    return after


def _with(doc: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    """A copy of `doc` with `path` set to `value` (None: removed)."""
    out = copy.deepcopy(doc)
    node: Any = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return out


def _pruned(doc: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """`doc` without the tables along `path` left empty (`[mcp_servers]` holding nothing once its
    only server is out: whether a header for it remains is not a difference of values)."""
    out = copy.deepcopy(doc)
    for depth in range(len(path) - 1, 0, -1):
        parent = get_table(out, path[: depth - 1]) if depth > 1 else out
        if isinstance(parent, dict) and parent.get(path[depth - 1]) == {}:
            del parent[path[depth - 1]]
    return out


# ------------------------------------------------------------------------------------- editing


def set_table(text: str, path: list[str], values: dict[str, Any], source: str = "<text>") -> str:
    """`text` with the `[path]` table holding `values`: each key replaced in place or inserted after
    the header, every other key and sub-table of it kept; the table appended at the end when it is
    not there. Idempotent. Raises ConfigError for a file it cannot parse or edit safely."""
    doc = loads(text, source)
    existing = get_table(doc, path)
    if existing is None:
        body = "".join(f"{_key(k)} = {dump_value(v)}\n" for k, v in values.items())
        block = f"[{'.'.join(_key(p) for p in path)}]\n{body}"
        # One blank line before it, always added (so removal knows to take exactly one back); a file
        # without a final newline gets one, and keeps it after uninstall.
        if not text:
            after = block
        elif text.endswith("\n"):
            after = text + "\n" + block
        else:
            after = text + "\n\n" + block
        return _check(after, source, path, values, doc)
    if not isinstance(existing, dict):
        raise _refused(source, path)
    merged: dict[str, Any] = {**existing, **values}  # pyright: ignore[reportUnknownArgumentType]
    if merged == existing:
        return text
    _root, tables = _scan(text, source)
    header = [t for t in tables if t.path == path and not t.array]
    if len(header) != 1:
        raise _refused(source, path)
    table = header[0]
    after = text
    # From the last statement back, so the offsets before each edit stay valid.
    for st in sorted(table.statements, key=lambda s: s.start, reverse=True):
        if len(st.key) == 1 and st.key[0] in values and existing.get(st.key[0]) != values[st.key[0]]:
            after = after[: st.value_start] + dump_value(values[st.key[0]]) + after[st.value_end :]
    have = {st.key[0] for st in table.statements if len(st.key) == 1}
    inserts = "".join(f"{_key(k)} = {dump_value(v)}\n" for k, v in values.items() if k not in have)
    after = after[: table.body] + inserts + after[table.body :]
    return _check(after, source, path, merged, doc)


def remove_table(text: str, path: list[str], source: str = "<text>") -> str:
    """`text` without the `[path]` table and its sub-tables (unchanged when it is not there): the
    exact inverse of `set_table` appending it, whatever was added after it since. Raises ConfigError
    as `set_table` does."""
    doc = loads(text, source)
    if get_table(doc, path) is None:
        return text
    _root, tables = _scan(text, source)
    ours = [t for t in tables if t.path[: len(path)] == path]
    if not any(t.path == path and not t.array for t in ours):
        raise _refused(source, path)
    after = text
    for table in sorted(ours, key=lambda t: t.start, reverse=True):
        # From its header to its last statement: the comments and blank lines after that sit before
        # the next header and belong to it (Codex appends its `[projects.*]` after ours, a user
        # writes `# my servers` above theirs). One blank line goes with it, the separator: the one
        # before the header (set_table put it there), else, for a table with none before it (the
        # user's own, first in the file), one right after its last statement.
        start, end = table.start, table.statements[-1].end if table.statements else table.body
        blank_after = _BLANK_LINE.match(after, end)
        if after[:start].endswith("\n\n"):
            start -= 1
        elif blank_after is not None:
            end = blank_after.end()
        after = after[:start] + after[end:]
    return _check(after, source, path, None, doc)
