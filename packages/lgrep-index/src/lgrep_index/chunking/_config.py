"""Config files by key: JSON, YAML and TOML through their tree-sitter grammars, INI by lines.

A top-level key whose value spans several lines is a CONFIG chunk of its own (symbol = key); a run
of one-line keys is one CONFIG chunk (symbol = the keys, comma-separated) rather than a chunk per
line. A mapping value too big for one chunk is chunked by its own keys, one level further down
(scope = the key path), down to `MAX_CONFIG_DEPTH`; below that, big values are cut by lines with
the key line repeated in front of each piece.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from lgrep_core.domain.models import ChunkKind
from tree_sitter import Node

from lgrep_index.chunking._emit import Item, clean_signature, settle
from lgrep_index.chunking._lines import Lines
from lgrep_index.chunking._ts import end_row, parser_for

__all__ = ["config_items"]

MAX_CONFIG_DEPTH = 3
"""Nested keys become chunks down to this depth (`services` > `web` > `environment`)."""

GROUP_SYMBOL_MAX_CHARS = 120

_INI_SECTION = re.compile(r"^\s*\[([^\]\n]+)\]\s*(?:[;#].*)?$")
_INI_COMMENT = re.compile(r"^\s*[;#]")
_TOML_KEY_PART = re.compile(r"\"[^\"]*\"|'[^']*'|[^.\s]+")


@dataclass(slots=True)
class _Entry:
    start: int
    end: int
    key: str
    value: Node | None = None  # a mapping whose keys may become chunks of their own
    scope: tuple[str, ...] | None = None  # overrides scope + (key,) (TOML dotted table names)


def config_items(language: str, lines: Lines, text: str) -> list[Item]:
    """Items of a JSON / YAML / TOML / INI file; empty when its shape is not key-based."""
    if language == "ini":
        attachable = {i for i, line in enumerate(lines.raw) if _INI_COMMENT.match(line)}
        return settle(_ini_items(lines), 0, lines.count - 1, lines, attachable=attachable)
    if language not in ("json", "yaml", "toml"):
        return []
    src = text.encode("utf-8", "replace")
    root = parser_for(language).parse(src).root_node
    builder = _Builder(language, src, lines)
    if language == "json":
        entries = builder.json_entries(root)
    elif language == "yaml":
        entries = builder.yaml_entries(root)
    else:
        entries = builder.toml_entries(root)
    items = builder.items(entries, (), 1)
    return settle(items, 0, lines.count - 1, lines, attachable=builder.attachable)


class _Builder:
    def __init__(self, language: str, src: bytes, lines: Lines) -> None:
        self.language = language
        self.src = src
        self.lines = lines
        self.attachable: set[int] = set()

    def _text(self, node: Node) -> str:
        return self.src[node.start_byte : min(node.end_byte, node.start_byte + 300)].decode("utf-8", "replace")

    def _note_comment(self, node: Node) -> bool:
        if node.type != "comment":
            return False
        row = node.start_point[0]
        if self.lines.raw[row][: node.start_point[1]].strip() == "":
            self.attachable.update(range(row, end_row(node) + 1))
        return True

    # -- JSON ---------------------------------------------------------------------------

    def json_entries(self, root: Node) -> list[_Entry]:
        obj = next((c for c in root.named_children if c.type == "object"), None)
        for c in root.named_children:
            self._note_comment(c)
        return list(self._json_pairs(obj)) if obj is not None else []

    def _json_pairs(self, obj: Node) -> Iterator[_Entry]:
        for pair in obj.named_children:
            if self._note_comment(pair) or pair.type != "pair":
                continue
            key = pair.child_by_field_name("key")
            value = pair.child_by_field_name("value")
            name = self._text(key).strip("\"'") if key is not None else ""
            nested = value if value is not None and value.type == "object" else None
            yield _Entry(pair.start_point[0], end_row(pair), name, nested)

    # -- YAML ---------------------------------------------------------------------------

    def yaml_entries(self, root: Node) -> list[_Entry]:
        entries: list[_Entry] = []
        for doc in root.named_children:
            if self._note_comment(doc) or doc.type != "document":
                continue
            for child in doc.named_children:
                if self._note_comment(child):
                    continue
                collection = _yaml_collection(child)
                if collection is not None:
                    entries.extend(self._yaml_members(collection))
        return entries

    def _yaml_members(self, collection: Node) -> Iterator[_Entry]:
        for member in collection.named_children:
            if self._note_comment(member):
                continue
            if member.type == "block_mapping_pair":
                key = member.child_by_field_name("key")
                value = member.child_by_field_name("value")
                name = self._text(key).strip("\"'") if key is not None else ""
                nested = _yaml_collection(value) if value is not None else None
                if nested is not None and nested.type != "block_mapping":
                    nested = None
                yield _Entry(member.start_point[0], end_row(member), name, nested)
            elif member.type == "block_sequence_item":
                yield _Entry(member.start_point[0], end_row(member), self._yaml_item_name(member))

    def _yaml_item_name(self, item: Node) -> str:
        """`- name: Install foo` -> "Install foo" (Ansible tasks, k8s lists); else ""."""
        for child in item.named_children:
            mapping = _yaml_collection(child)
            if mapping is None or mapping.type != "block_mapping":
                continue
            for pair in mapping.named_children:
                key = pair.child_by_field_name("key")
                value = pair.child_by_field_name("value")
                if key is not None and value is not None and self._text(key) in ("name", "id", "key"):
                    return self._text(value).strip("\"'").split("\n", 1)[0]
        return ""

    # -- TOML ---------------------------------------------------------------------------

    def toml_entries(self, root: Node) -> list[_Entry]:
        entries: list[_Entry] = []
        for child in root.named_children:
            if self._note_comment(child):
                continue
            if child.type == "pair":
                key = child.named_children[0] if child.named_child_count else None
                name = self._text(key) if key is not None else ""
                entries.append(_Entry(child.start_point[0], end_row(child), name))
            elif child.type in ("table", "table_array_element"):
                kids = child.named_children
                key = kids[0] if kids else None
                name = " ".join(self._text(key).split()) if key is not None else ""
                end = child.start_point[0]
                for kid in kids[1:]:
                    if not self._note_comment(kid):
                        end = max(end, end_row(kid))
                parts = tuple(p.strip("\"'") for p in _TOML_KEY_PART.findall(name))
                entries.append(_Entry(child.start_point[0], end, name, scope=parts or (name,)))
        return entries

    # -- items --------------------------------------------------------------------------

    def items(self, entries: list[_Entry], scope: tuple[str, ...], depth: int) -> list[Item]:
        items: list[Item] = []
        run: list[_Entry] = []
        for entry in entries:
            if entry.end > entry.start:
                items.extend(self._group(run, scope))
                run = []
                items.append(self._entry_item(entry, scope, depth))
            else:
                run.append(entry)
        items.extend(self._group(run, scope))
        return items

    def _entry_item(self, entry: _Entry, scope: tuple[str, ...], depth: int) -> Item:
        own = entry.scope if entry.scope is not None else scope + ((entry.key,) if entry.key else ())
        children: list[Item] = []
        if entry.value is not None and depth < MAX_CONFIG_DEPTH:
            if self.language == "json":
                nested = list(self._json_pairs(entry.value))
            else:
                nested = list(self._yaml_members(entry.value))
            children = self.items(nested, own, depth + 1)
        return Item(
            entry.start,
            entry.end,
            ChunkKind.CONFIG,
            entry.key,
            own,
            clean_signature(self.lines.raw[entry.start]),
            head=(entry.start, entry.start),
            children=children,
            container=bool(children),
            header_chunk=False,
        )

    def _group(self, run: list[_Entry], scope: tuple[str, ...]) -> list[Item]:
        if not run:
            return []
        if len(run) == 1:
            entry = run[0]
            own = entry.scope if entry.scope is not None else scope + ((entry.key,) if entry.key else ())
            return [Item(entry.start, entry.end, ChunkKind.CONFIG, entry.key, own)]
        symbol = ", ".join(e.key for e in run if e.key)
        if len(symbol) > GROUP_SYMBOL_MAX_CHARS:
            symbol = symbol[: GROUP_SYMBOL_MAX_CHARS - 1].rstrip(", ") + "…"
        return [Item(run[0].start, run[-1].end, ChunkKind.CONFIG, symbol, scope)]


def _yaml_collection(node: Node) -> Node | None:
    """The block mapping / sequence inside a YAML node, if it holds one."""
    for _ in range(3):
        if node.type in ("block_mapping", "block_sequence"):
            return node
        kids = [c for c in node.named_children if c.type not in ("comment", "anchor", "tag")]
        if len(kids) != 1:
            return None
        node = kids[0]
    return node if node.type in ("block_mapping", "block_sequence") else None


def _ini_items(lines: Lines) -> list[Item]:
    headers = [(i, m.group(1).strip()) for i, line in enumerate(lines.raw) if (m := _INI_SECTION.match(line))]
    items: list[Item] = []
    if not headers:
        return items
    if headers[0][0] > 0 and lines.first_nonblank(0, headers[0][0] - 1) is not None:
        items.append(Item(0, headers[0][0] - 1, ChunkKind.CONFIG, "", ()))
    for n, (line, name) in enumerate(headers):
        end = headers[n + 1][0] - 1 if n + 1 < len(headers) else lines.count - 1
        while end > line and (lines.blank(end) or _INI_COMMENT.match(lines.raw[end])):
            end -= 1  # comments right above the next header belong to it
        items.append(
            Item(
                line,
                end,
                ChunkKind.CONFIG,
                name,
                (name,),
                clean_signature(lines.raw[line]),
                head=(line, line),
            )
        )
    return items
