"""Definitions of a source file, found by walking its tree-sitter syntax tree.

The walk uses an explicit stack (no recursion limit on deeply nested code) and visits little of
the tree: top-level nodes, the members of class-like definitions, and the named children of
non-definition nodes that span several lines (an `if TYPE_CHECKING:` block, an IIFE, a C include
guard, a Haskell `declarations` node). Function bodies are never entered: a function is one chunk
(or split by lines), closures and all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lgrep_core.domain.models import ChunkKind
from tree_sitter import Node, Tree

from lgrep_index.chunking._emit import Item, Planned, clean_signature, settle
from lgrep_index.chunking._lines import Lines
from lgrep_index.chunking._ts import end_row, parser_for
from lgrep_index.languages import DefRule, LanguageSpec, Role

__all__ = ["ANCHOR_MAX_LINES", "CodeOutline", "is_anchor", "outline_code", "strip_generics"]

ANCHOR_MAX_LINES = 40
"""The anchor chunk (imports, package clause, top comment) is a summary: keep it short."""

MAX_DESCENT = 10
"""Non-definition levels entered below a definition or the root while looking for definitions."""

MAX_NESTING = 24
"""Definitions nested deeper than this are chunked as a whole (no member chunks)."""

HEAD_MAX_LINES = 6
"""At most this many signature lines are repeated in front of each piece of a split definition."""

_NAME_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "simple_identifier",
        "constant",
        "name",
        "word",
        "IDENTIFIER",
        "field_identifier",
        "property_identifier",
    }
)
_ATTRIBUTE_LIKE = frozenset(
    {
        "decorator",
        "annotation",
        "marker_annotation",
        "attribute_list",
        "attribute_item",
        "attribute",
        "modifiers",
        "modifier",
    }
)
_COMMENT_TYPES = frozenset({"haddock"})
# Where a definition's body starts when its grammar names no `body` field (Kotlin, Zig...).
_BODY_TYPES = frozenset(
    {
        "class_body",
        "function_body",
        "enum_class_body",
        "block",
        "Block",
        "do_block",
        "compound_statement",
        "declaration_list",
        "template_body",
        "statement_block",
    }
)
# String-like nodes of every grammar: multi-line, never holding a definition.
_OPAQUE = frozenset(
    {
        "string",
        "string_literal",
        "raw_string_literal",
        "concatenated_string",
        "template_string",
        "interpreted_string_literal",
        "raw_string",
        "heredoc_body",
        "heredoc",
        "text_block",
        "multiline_string_literal",
        "line_string_literal",
        "encapsed_string",
        "quoted_content",
    }
)
_DROPPED_QUALIFIERS = frozenset({"prototype", "module", "exports", "this", "self", "window", "global"})
_GENERIC_ARGS = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
_QUALIFIER_SPLIT = re.compile(r"::|\.|:|\\|#")
_GO_RECEIVER = re.compile(r"(\w+)\s*(?:\[[^\]]*\])?\s*\)\s*$")
_NAME_MAX_BYTES = 200
_ANCHOR_TEXT_BYTES = 65536


@dataclass(slots=True)
class CodeOutline:
    """What a source file defines: settled items plus the anchor chunk, if the file has one."""

    items: list[Item]
    anchor: Planned | None
    tree: Tree  # the parse, for the reference queries (chunking._refs)
    src: bytes  # the text it parsed


@dataclass(slots=True)
class _Match:
    rule: DefRule
    outer: Node  # its lines are the definition's span (wrapper included)
    inner: Node  # the definition proper: signature starts here, members are found below it
    name: str
    qualifiers: tuple[str, ...]
    body: Node | None
    kind: ChunkKind | None = None  # overrides rule.kind (Lua `M:method`)


def _text(src: bytes, node: Node, limit: int = _NAME_MAX_BYTES) -> str:
    return src[node.start_byte : min(node.end_byte, node.start_byte + limit)].decode("utf-8", "replace")


def strip_generics(text: str) -> str:
    """`Map<K, List<V>>::get` -> `Map::get`, `Foo[int]` -> `Foo` (nested up to 4 deep)."""
    for _ in range(4):
        stripped = _GENERIC_ARGS.sub("", text)
        if stripped == text:
            break
        text = stripped
    return text


def _qualify(text: str) -> tuple[str, tuple[str, ...]]:
    """`Circle<T>::~Circle` -> ("~Circle", ("Circle",)); `M.add` -> ("add", ("M",))."""
    text = text.strip()
    if text[:1] in ("'", '"', "`"):  # declare module "foo", 'key': function() {...}
        return " ".join(text.strip("'\"`").split()), ()
    text = strip_generics(text)
    parts = [p.strip() for p in _QUALIFIER_SPLIT.split(text)]
    parts = [p for p in parts if p]
    if not parts:
        return "", ()
    name = parts[-1]
    quals = tuple(p for p in parts[:-1] if p not in _DROPPED_QUALIFIERS)
    return " ".join(name.split()), quals


def _is_comment(node_type: str) -> bool:
    return "comment" in node_type or node_type in _COMMENT_TYPES


class _Walker:
    def __init__(self, spec: LanguageSpec, src: bytes, lines: Lines, head_max_lines: int = HEAD_MAX_LINES) -> None:
        self.spec = spec
        self.head_max_lines = head_max_lines
        self.src = src
        self.lines = lines
        self.attachable: set[int] = set()
        self.anchor_ranges: list[tuple[int, int]] = []
        # node types worth a closer look: most nodes are none of these, so skip `match` for them
        self.candidates = frozenset(spec.defs) | spec.wrappers | spec.value_defs | {spec.call_type}

    # -- classification -------------------------------------------------------------------

    def match(self, node: Node) -> _Match | None:
        spec = self.spec
        t = node.type
        if t in spec.wrappers:
            found: _Match | None = None
            for child in node.named_children:
                if _is_comment(child.type) or child.type in _ATTRIBUTE_LIKE:
                    continue
                m = self._match_plain(child)
                if m is not None:
                    if found is not None:
                        return None  # `type ( A int; B string )`: several definitions, not one
                    found = m
            if found is not None:
                found.outer = node
            return found
        return self._match_plain(node)

    def _match_plain(self, node: Node) -> _Match | None:
        spec = self.spec
        t = node.type
        if spec.name == "zig" and t in ("Decl", "TestDecl"):
            return self._match_zig(node)
        rule = spec.defs.get(t)
        if rule is not None:
            return self._match_rule(node, rule)
        if spec.call_type and t == spec.call_type:
            return self._match_call(node)
        if t in spec.value_defs:
            return self._match_value(node)
        return None

    def _match_rule(self, node: Node, rule: DefRule) -> _Match | None:
        if rule.multiline_only and node.end_point[0] == node.start_point[0]:
            return None
        body = node.child_by_field_name(rule.body_field) if rule.body_field else None
        if body is None and not rule.needs_body:
            body = next((c for c in node.named_children if c.type in _BODY_TYPES), None)
        if rule.needs_body:
            if body is None:
                return None
            if rule.body_field == "type":  # typedef: only `typedef struct {...} name;` defines a type
                inner_body = body.child_by_field_name("body")
                if inner_body is None:
                    return None
                body = inner_body
        name, quals = self._name(node, rule, body)
        m = _Match(rule, node, node, name, quals, body)
        spec_name = self.spec.name
        if spec_name == "go" and node.type == "method_declaration":
            receiver = node.child_by_field_name("receiver")
            if receiver is not None:
                found = _GO_RECEIVER.search(_text(self.src, receiver))
                if found:
                    m.qualifiers = (found.group(1),)
        elif spec_name == "lua":
            name_node = node.child_by_field_name("name")
            if name_node is not None and name_node.type == "method_index_expression":
                m.kind = ChunkKind.METHOD
        elif spec_name == "haskell" and node.type == "instance":
            patterns = node.child_by_field_name("patterns")
            if patterns is not None and name:
                m.name = f"{name} {' '.join(_text(self.src, patterns).split())}"
        return m

    def _name(self, node: Node, rule: DefRule, body: Node | None) -> tuple[str, tuple[str, ...]]:
        target = node.child_by_field_name(rule.name_field) if rule.name_field else None
        # C declarators: int *(*name)(args) -> follow `declarator` down to the identifier
        for _ in range(8):
            if target is None or target.type in _NAME_TYPES:
                break
            deeper = target.child_by_field_name("declarator")
            if deeper is None and target.type in ("reference_declarator", "pointer_declarator"):
                named = target.named_children
                deeper = named[-1] if named else None
            if deeper is None:
                break
            target = deeper
        if target is None:
            for child in node.named_children:
                if body is not None and child.start_byte >= body.start_byte:
                    break
                if child.type in _NAME_TYPES:
                    target = child
                    break
        if target is None:
            return rule.default_name, ()
        name, quals = _qualify(_text(self.src, target))
        return name or rule.default_name, quals

    def _match_call(self, node: Node) -> _Match | None:
        """Elixir: `def name(args) do ... end`, `defmodule A.B do ... end`."""
        target = node.child_by_field_name("target")
        if target is None:
            return None
        rule = self.spec.call_defs.get(_text(self.src, target, 16))
        if rule is None:
            return None
        args = next((c for c in node.named_children if c.type == "arguments"), None)
        body = next((c for c in node.named_children if c.type == "do_block"), None)
        name_node = args.named_children[0] if args is not None and args.named_child_count else None
        for _ in range(3):  # `name(x) when guard` -> `name(x)` -> `name`
            if name_node is None:
                break
            if name_node.type == "binary_operator":
                name_node = name_node.child_by_field_name("left")
            elif name_node.type == "call":
                name_node = name_node.child_by_field_name("target")
            else:
                break
        name, quals = _qualify(_text(self.src, name_node)) if name_node is not None else ("", ())
        if rule.role is Role.LEAF:
            quals = ()
        return _Match(rule, node, node, name, quals, body)

    def _match_value(self, node: Node) -> _Match | None:
        """`const f = () => {}`, `M.f = function() end`, `handle = (e) => {...}` (class field)."""
        spec = self.spec
        name_node, value = _value_parts(node)
        if name_node is None or value is None:
            return None
        if value.type in spec.function_values:
            rule = DefRule(ChunkKind.FUNCTION)
        elif value.type in spec.class_values:
            rule = DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True)
        else:
            return None
        name, quals = _qualify(_text(self.src, name_node))
        return _Match(rule, node, node, name, quals, value.child_by_field_name("body"))

    def _match_zig(self, node: Node) -> _Match | None:
        src = self.src
        if node.type == "TestDecl":
            title = next((c for c in node.named_children if c.type.startswith("STRINGLITERAL")), None)
            body = next((c for c in node.named_children if c.type == "Block"), None)
            name = _text(src, title).strip('"') if title is not None else "test"
            return _Match(DefRule(ChunkKind.FUNCTION), node, node, name, (), body)
        for child in node.named_children:
            if child.type == "FnProto":
                ident = child.child_by_field_name("function")
                body = next((c for c in node.named_children if c.type == "Block"), None)
                name = _text(src, ident) if ident is not None else ""
                return _Match(DefRule(ChunkKind.FUNCTION), node, node, name, (), body)
            if child.type == "VarDecl":
                ident = child.child_by_field_name("variable_type_function")
                container = child
                for _ in range(4):  # VarDecl > ErrorUnionExpr > SuffixExpr > ContainerDecl
                    named = [c for c in container.named_children if c.type != "IDENTIFIER"]
                    if not named:
                        break
                    container = named[0]
                    if container.type == "ContainerDecl":
                        name = _text(src, ident) if ident is not None else ""
                        rule = DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True)
                        return _Match(rule, node, node, name, (), container)
                return None
        return None

    # -- traversal ------------------------------------------------------------------------

    def walk(self, root: Node) -> list[Item]:
        spec = self.spec
        lines = self.lines
        opaque = _OPAQUE | spec.opaque
        top: list[Item] = []
        # (node, parent item, parent's rule, descent depth, nesting)
        stack: list[tuple[Node, Item | None, DefRule | None, int, int]] = [
            (child, None, None, 0, 0) for child in reversed(root.named_children)
        ]
        while stack:
            node, parent, parent_rule, depth, nesting = stack.pop()
            t = node.type
            start = node.start_point[0]
            if _is_comment(t) or t in spec.attributes:
                if lines.raw[start][: node.start_point[1]].strip() == "":
                    self.attachable.update(range(start, end_row(node) + 1))
                if parent is None and t in spec.anchors:
                    self.anchor_ranges.append((start, end_row(node)))
                continue
            m = self.match(node) if t in self.candidates else None
            if m is not None:
                item = self._item(m, parent, parent_rule)
                (parent.children if parent is not None else top).append(item)
                if m.rule.role is not Role.LEAF and nesting < MAX_NESTING:
                    stack.extend((child, item, m.rule, 0, nesting + 1) for child in reversed(m.inner.named_children))
                else:
                    item.container = False
                continue
            if parent is None and self._is_anchor(node):
                self.anchor_ranges.append((start, self._anchor_end(node)))
                continue
            if node.end_point[0] > start and depth < MAX_DESCENT and t not in opaque:
                stack.extend(
                    (child, parent, parent_rule, depth + 1, nesting) for child in reversed(node.named_children)
                )
        return top

    def _anchor_end(self, node: Node) -> int:
        """Last row of an anchor node, leaving out trailing comments the grammar tucked inside it
        (Haskell `imports` and Kotlin `import_list` swallow the next definition's doc comment)."""
        end = end_row(node)
        for _ in range(3):
            last = None
            for child in reversed(node.named_children):
                if not _is_comment(child.type):
                    last = child
                    break
                if self.lines.raw[child.start_point[0]][: child.start_point[1]].strip() == "":
                    self.attachable.update(range(child.start_point[0], end_row(child) + 1))
            if last is None:
                break
            end = min(end, end_row(last))
            node = last
        return end

    def _is_anchor(self, node: Node) -> bool:
        return is_anchor(self.spec, self.src, node)

    def _item(self, m: _Match, parent: Item | None, parent_rule: DefRule | None) -> Item:
        rule = m.rule
        kind = m.kind or rule.kind
        if kind is ChunkKind.FUNCTION and parent_rule is not None and parent_rule.methods:
            kind = ChunkKind.METHOD
        base = parent.scope if parent is not None else ()
        scope = base + m.qualifiers + ((m.name,) if m.name else ())
        signature, head = self._signature(m)
        return Item(
            start=m.outer.start_point[0],
            end=end_row(m.outer),
            kind=kind,
            symbol=m.name,
            scope=scope,
            signature=signature,
            head=head,
            container=rule.role is not Role.LEAF,
            header_chunk=rule.role is Role.CONTAINER,
            split_nested=rule.role is Role.NAMESPACE,
        )

    def _signature(self, m: _Match) -> tuple[str, tuple[int, int]]:
        """From the definition's first token (after decorators/annotations) to its body."""
        start_byte, start_row = _signature_start(m.outer)
        body = m.body
        src = self.src
        if body is not None and body.start_byte > start_byte:
            raw = src[start_byte : min(body.start_byte, start_byte + 2000)]
        elif self.head_max_lines > HEAD_MAX_LINES:  # an outline: a bodiless definition is all signature
            raw = src[start_byte : min(m.outer.end_byte, start_byte + 2000)]
        else:
            newline = src.find(b"\n", start_byte, start_byte + 2000)
            raw = src[start_byte : newline if newline >= 0 else start_byte + 2000]
        text = raw.decode("utf-8", "replace").rstrip()
        last = min(start_row + text.count("\n"), start_row + self.head_max_lines - 1, self.lines.count - 1)
        return clean_signature(text), (start_row, max(start_row, last))


def is_anchor(spec: LanguageSpec, src: bytes, node: Node) -> bool:
    """Whether `node` is an import / package / use statement (the stuff of a file's anchor)."""
    t = node.type
    if t in spec.anchors:
        return True
    if spec.anchor_pattern is not None and t in spec.anchor_pattern_types:
        # the whole statement: a long `export { ... } from "./x"` names its module at the end
        return spec.anchor_pattern.match(_text(src, node, _ANCHOR_TEXT_BYTES)) is not None
    return False


def _signature_start(node: Node) -> tuple[int, int]:
    """Byte and row of the first child that is not a decorator, annotation or comment."""
    for child in node.children:
        t = child.type
        if _is_comment(t):
            continue
        if t in ("modifiers", "modifier"):
            for grand in child.children:
                if grand.type not in _ATTRIBUTE_LIKE and not _is_comment(grand.type):
                    return grand.start_byte, grand.start_point[0]
            continue
        if t in _ATTRIBUTE_LIKE:
            continue
        return child.start_byte, child.start_point[0]
    return node.start_byte, node.start_point[0]


def _value_parts(node: Node) -> tuple[Node | None, Node | None]:
    """The name and value of a one-name declaration or assignment, else (None, None)."""
    for _ in range(3):
        name = None
        for field_name in ("name", "left", "property", "key"):
            name = node.child_by_field_name(field_name)
            if name is not None:
                break
        value = node.child_by_field_name("value") or node.child_by_field_name("right")
        if name is not None and value is not None:
            return name, value
        kids = [c for c in node.named_children if not _is_comment(c.type)]
        if node.type == "assignment_statement" and len(kids) == 2:  # Lua: variable_list = expression_list
            names, values = kids
            if names.named_child_count == 1 and values.named_child_count == 1:
                return names.named_children[0], values.named_children[0]
            return None, None
        if len(kids) != 1 or kids[0].type not in (
            "variable_declarator",
            "assignment_expression",
            "assignment_statement",
        ):
            return None, None
        node = kids[0]
    return None, None


def _leading_comment_end(root: Node) -> int | None:
    """Last row of the comments / docstring / directives that open the file, if it opens with one."""
    end: int | None = None
    for child in root.named_children:
        t = child.type
        if _is_comment(t) or t in ("pragma", "php_tag"):
            end = end_row(child)
            continue
        if t == "string":  # Python module docstring (tree-sitter-python puts it at the top level)
            end = end_row(child)
            continue
        if t == "expression_statement" and child.named_child_count == 1:
            only = child.named_children[0]
            if only.type == "string":  # Python module docstring, JS "use strict"
                end = end_row(child)
                continue
        break
    return end


def outline_code(
    spec: LanguageSpec,
    lines: Lines,
    text: str,
    *,
    module_symbol: str,
    max_tokens: int,
    head_max_lines: int = HEAD_MAX_LINES,
) -> CodeOutline:
    """Parse `text` and find its definitions and anchor region.

    Raises whatever tree-sitter raises on a grammar it cannot load; the caller falls back to line
    windows.
    """
    src = text.encode("utf-8", "replace")
    tree = parser_for(spec.parser_name).parse(src)
    root = tree.root_node
    walker = _Walker(spec, src, lines, head_max_lines)
    top = walker.walk(root)
    items = settle(top, 0, lines.count - 1, lines, attachable=walker.attachable, merge_clauses=spec.merge_clauses)
    anchor = _anchor(walker, root, items, module_symbol=module_symbol, max_tokens=max_tokens)
    return CodeOutline(items, anchor, tree, src)


def _anchor(walker: _Walker, root: Node, items: list[Item], *, module_symbol: str, max_tokens: int) -> Planned | None:
    """Imports / package clause / top comment before the first definition, capped in size."""
    lines = walker.lines
    first_def = items[0].start if items else lines.count
    ranges = [r for r in walker.anchor_ranges if r[0] < first_def]
    lead_end = _leading_comment_end(root)
    if not ranges and lead_end is None:
        return None
    start = min([r[0] for r in ranges] + ([0] if lead_end is not None else []))
    end = max([r[1] for r in ranges] + ([lead_end] if lead_end is not None else []))
    end = min(end, first_def - 1, start + ANCHOR_MAX_LINES - 1)
    while end >= start and lines.tokens(start, end) > max_tokens:
        end -= 1
    s = lines.first_nonblank(start, end) if end >= start else None
    e = lines.last_nonblank(start, end) if end >= start else None
    if s is None or e is None:
        return None
    signature = ""
    for r in ranges:
        if r[0] <= e:
            signature = clean_signature(lines.raw[r[0]])
            break
    return Planned(s, e, ChunkKind.ANCHOR, module_symbol, (module_symbol,) if module_symbol else (), signature)
