"""The names a source file references — calls, type uses, imports — found with tree-sitter queries.

One query per language (`_QUERIES`) runs over the syntax tree the chunker already parsed, in C, so
the whole file costs about a millisecond per thousand lines. Its captures follow one convention:

- `@callee`: the called expression (`foo`, `self.foo`, `pkg.Foo`, `Foo::new`, `a.b.c`), reduced
  here to the called name and the receiver text (its "qualifier");
- `@name` and optionally `@qual`: the same, when the grammar names the two parts itself
  (Java `method_invocation`, Ruby `call`, PHP member calls);
- `@type`: a type name used (an annotation, a base class, a generic argument);
- `@import`: an import statement, read by the language's import reader below, or `@local` and
  `@module` captured directly (`const x = require('./x')`).

What comes out is a list of `Reference`s (lines 1-based). `chunker` hands each chunk the refs on its
lines and `refs_text` stores them in one text column (format in `lgrep_core.structure`).
Resolution (which file an import names, which definition a call reaches) happens when a trace is
asked, against the files the index holds then, so it never goes stale.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

from lgrep_core.structure import IMPORT_ALL, SAME_FILE, Reference, RefKind
from tree_sitter import Node, Query, QueryCursor
from tree_sitter_language_pack import SupportedLanguage, get_language

from lgrep_index.chunking._code import strip_generics

__all__ = ["file_refs", "supports_refs"]

_MAX_QUAL = 120
_IDENT = re.compile(r"[A-Za-z_$@][\w$!?]*\Z|[^\W\d][\w]*\Z")
_SPACE = re.compile(r"\s+")
_SPLIT = re.compile(r"\s*(?:::|\?\.|\.|->|:)\s*")


_PY = """
(call function: (_) @callee)
(type (identifier) @type)
(type (generic_type (identifier) @type))
(type (attribute attribute: (identifier) @type))
(class_definition superclasses: (argument_list (identifier) @type))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @type)))
(import_statement) @import
(import_from_statement) @import
"""
_JS_COMMON = """
(call_expression function: (_) @callee)
(new_expression constructor: (_) @callee)
(import_statement) @import
(export_statement source: (_)) @import
(export_statement (export_clause) !source !declaration) @import
(variable_declarator name: (_) @local value: (call_expression function: (identifier) @_r
  arguments: (arguments . (string (string_fragment) @module))) (#eq? @_r "require")) @import
"""
_TS_TYPES = """
(type_identifier) @type
(extends_clause value: (identifier) @type)
"""
_QUERIES: dict[str, str] = {
    "python": _PY,
    "starlark": """
(call function: (_) @callee)
""",
    "javascript": _JS_COMMON + "(class_heritage (identifier) @type)\n",
    "typescript": _JS_COMMON + _TS_TYPES,
    "tsx": _JS_COMMON + _TS_TYPES,
    "go": """
(call_expression function: (_) @callee)
(type_identifier) @type
(import_spec) @import
""",
    "rust": """
(call_expression function: (_) @callee)
(macro_invocation macro: (_) @callee)
(type_identifier) @type
(use_declaration) @import
(mod_item !body) @import
""",
    "java": """
(method_invocation object: (_)? @qual name: (identifier) @name)
(object_creation_expression type: (_) @callee)
(type_identifier) @type
(import_declaration) @import
""",
    "c": """
(call_expression function: (_) @callee)
(type_identifier) @type
(preproc_include) @import
""",
    "cpp": """
(call_expression function: (_) @callee)
(new_expression type: (_) @callee)
(type_identifier) @type
(preproc_include) @import
""",
    "csharp": """
(invocation_expression function: (_) @callee)
(object_creation_expression type: (_) @callee)
(base_list (identifier) @type)
(using_directive) @import
""",
    "ruby": """
(call receiver: (_)? @qual method: (_) @name)
(superclass (constant) @type)
(superclass (scope_resolution name: (constant) @type))
""",
    "php": """
(function_call_expression function: (_) @callee)
(member_call_expression object: (_) @qual name: (_) @name)
(nullsafe_member_call_expression object: (_) @qual name: (_) @name)
(scoped_call_expression scope: (_) @qual name: (_) @name)
(object_creation_expression [(name) (qualified_name)] @callee)
(named_type) @type
(namespace_use_clause) @import
""",
    "kotlin": """
(call_expression . (_) @callee)
(user_type (type_identifier) @type)
(import_header) @import
""",
    "swift": """
(call_expression . (_) @callee)
(user_type (type_identifier) @type)
(import_declaration) @import
""",
    "scala": """
(call_expression function: (_) @callee)
(instance_expression . (_) @callee)
(type_identifier) @type
(import_declaration) @import
""",
    "lua": """
(function_call name: (_) @callee)
""",
    "bash": """
(command name: (command_name) @callee)
""",
    "elixir": """
(call target: (_) @callee)
""",
    "haskell": """
(apply function: [(variable) (qualified) (constructor)] @callee)
(import) @import
""",
    "zig": """
(SuffixExpr variable_type_function: (IDENTIFIER) @name . (FnCallArguments))
(FieldOrFnCall function_call: (IDENTIFIER) @name)
""",
}
# Elixir and Lua spell definitions and imports as calls; these are not references to code.
_NOT_CALLS: dict[str, frozenset[str]] = {
    "elixir": frozenset(
        {
            "def",
            "defp",
            "defmacro",
            "defmacrop",
            "defmodule",
            "defprotocol",
            "defimpl",
            "defstruct",
            "defdelegate",
            "defguard",
            "defexception",
            "alias",
            "import",
            "require",
            "use",
            "if",
            "unless",
            "case",
            "cond",
            "with",
            "for",
            "fn",
            "quote",
            "unquote",
        }
    ),
    "ruby": frozenset({"require", "require_relative", "attr_accessor", "attr_reader", "attr_writer", "include"}),
}

_lock = threading.Lock()
_compiled: dict[str, Query] = {}


def supports_refs(language: str) -> bool:
    return language in _QUERIES


def _query(language: str, grammar: str) -> Query:
    with _lock:
        q = _compiled.get(language)
        if q is None:
            q = Query(get_language(grammar_name(grammar)), _QUERIES[language])
            _compiled[language] = q
        return q


def grammar_name(grammar: str) -> SupportedLanguage:
    return grammar  # type: ignore[return-value]  # names come from our own language tables


def file_refs(language: str, grammar: str, root: Node) -> list[Reference]:
    """Every reference in the tree under `root`, in no particular order."""
    if language not in _QUERIES:
        return []
    query = _query(language, grammar)
    skip = _NOT_CALLS.get(language, frozenset())
    read_import = _IMPORT_READERS.get(language, _generic_import)
    out: list[Reference] = []
    for _, caps in QueryCursor(query).matches(root):
        if "import" in caps:
            node = caps["import"][0]
            row = node.start_point[0] + 1
            if "module" in caps and "local" in caps:
                module = _node_text(caps["module"][0])
                for local, member in _destructured(_node_text(caps["local"][0])):
                    out.append(Reference(RefKind.IMPORT, local, row, module, member))
                continue
            for local, module, member in read_import(_node_text(node)):
                if local and module and "\n" not in module and "\t" not in module:
                    out.append(Reference(RefKind.IMPORT, local, row, module, member))
            continue
        if "type" in caps:
            node = caps["type"][0]
            name = _last_name(_node_text(node))
            if name:
                out.append(Reference(RefKind.TYPE, name, node.start_point[0] + 1))
            continue
        if "name" in caps:
            node = caps["name"][0]
            name = _node_text(node)
            qual = _clean_qual(_node_text(caps["qual"][0])) if "qual" in caps else ""
        elif "callee" in caps:
            node = caps["callee"][0]
            name, qual = _split_callee(_node_text(node))
        else:
            continue
        if not name or name in skip or not _IDENT.match(name):
            continue
        out.append(Reference(RefKind.CALL, name, node.start_point[0] + 1, qual))
    return out


def _node_text(node: Node) -> str:
    data = node.text or b""
    return data[:400].decode("utf-8", "replace")


def _clean_qual(text: str) -> str:
    text = _SPACE.sub("", text)
    return text if len(text) <= _MAX_QUAL else text[-_MAX_QUAL:]


def _split_callee(text: str) -> tuple[str, str]:
    """`self.auth.verify` -> ("verify", "self.auth"); `Foo::<T>::new` -> ("new", "Foo");
    `foo()(x).bar` -> ("bar", "foo()(x)"); `f<int>` -> ("f", "")."""
    if _IDENT.match(text):  # most callees and type names are one plain identifier
        return text, ""
    text = strip_generics(_SPACE.sub("", text)).rstrip(":.")
    parts = _SPLIT.split(text)
    name = parts[-1].lstrip("&*@$\\").rstrip("!")
    qual = text[: len(text) - len(parts[-1])].rstrip(":.->?") if len(parts) > 1 else ""
    return name, _clean_qual(qual)


def _last_name(text: str) -> str:
    name, _ = _split_callee(text)
    return name if _IDENT.match(name) else ""


# ------------------------------------------------------------------------------------ imports
# Each reader turns an import statement's text into (local name, module, member) bindings.

_PY_FROM = re.compile(r"^\s*from\s+(\S+)\s+import\s+(.*)$", re.S)
_PY_IMPORT = re.compile(r"^\s*import\s+(.*)$", re.S)
_AS = re.compile(r"^\s*([\w.*]+)(?:\s+as\s+(\w+))?\s*$")


def _python_import(text: str) -> list[tuple[str, str, str]]:
    text = re.sub(r"#[^\n]*", "", text).replace("\\\n", " ")
    out: list[tuple[str, str, str]] = []
    m = _PY_FROM.match(text)
    if m:
        module = m.group(1)
        names = m.group(2).strip().strip("()")
        for part in names.split(","):
            a = _AS.match(part)
            if a is None:
                continue
            member = a.group(1)
            if member == "*":
                out.append((IMPORT_ALL, module, IMPORT_ALL))
            else:
                out.append((a.group(2) or member, module, member))
        return out
    m = _PY_IMPORT.match(text)
    if m:
        for part in m.group(1).split(","):
            a = _AS.match(part)
            if a is None:
                continue
            dotted = a.group(1)
            # `import a.b.c` binds `a` (and a.b.c is reached through it); `import a.b as x` binds x
            out.append((a.group(2) or dotted.split(".")[0], dotted, ""))
    return out


_JS_SOURCE = re.compile(r"""from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]""", re.M)
_JS_DEFAULT = re.compile(r"^\s*import\s+(?:type\s+)?([\w$]+)\s*(?:,|from\b)")
_JS_NAMESPACE = re.compile(r"\*\s*as\s+([\w$]+)")
_JS_NAMED = re.compile(r"\{([^}]*)\}")
_JS_SPEC = re.compile(r"^\s*(?:type\s+)?([\w$]+|default)(?:\s+as\s+([\w$]+))?\s*$")


def _js_import(text: str) -> list[tuple[str, str, str]]:
    src = _JS_SOURCE.search(text)
    if src is None:
        # `export { enumType as enum }`: the file's own name under another one
        named = _JS_NAMED.search(text) if text.lstrip().startswith("export") else None
        out: list[tuple[str, str, str]] = []
        for spec in named.group(1).split(",") if named is not None else ():
            s = _JS_SPEC.match(spec)
            if s is not None and s.group(2) and s.group(2) != s.group(1):
                out.append((s.group(2), SAME_FILE, s.group(1)))
        return out
    module = src.group(1) or src.group(2)
    out: list[tuple[str, str, str]] = []
    head = text[: src.start()]
    is_export = head.lstrip().startswith("export")
    if not is_export:
        d = _JS_DEFAULT.match(head)
        if d is not None and d.group(1) not in ("type", "from"):
            out.append((d.group(1), module, "default"))
    ns = _JS_NAMESPACE.search(head)
    if ns is not None:
        out.append((ns.group(1), module, ""))
    elif is_export and re.search(r"export\s+(?:type\s+)?\*", head):
        out.append((IMPORT_ALL, module, IMPORT_ALL))
    named = _JS_NAMED.search(head)
    if named is not None:
        for spec in named.group(1).split(","):
            s = _JS_SPEC.match(spec)
            if s is not None:
                out.append((s.group(2) or s.group(1), module, s.group(1)))
    return out


def _destructured(local: str) -> list[tuple[str, str]]:
    """`x` -> [(x, "")]; `{a, b: c}` -> [(a, a), (c, b)] (for `const ... = require(...)`)."""
    local = local.strip()
    if not local.startswith("{"):
        return [(local, "")] if _IDENT.match(local) else []
    out: list[tuple[str, str]] = []
    for part in local.strip("{} ").split(","):
        key, _, alias = part.partition(":")
        key, alias = key.strip(), alias.strip() or key.strip()
        if _IDENT.match(key) and _IDENT.match(alias):
            out.append((alias, key))
    return out


_GO_SPEC = re.compile(r"""^\s*([\w.]+)?\s*"([^"]+)"\s*$""")
_GO_VERSION = re.compile(r"^v\d+$")


def _go_import(text: str) -> list[tuple[str, str, str]]:
    m = _GO_SPEC.match(text)
    if m is None:
        return []
    path = m.group(2)
    parts = [p for p in path.split("/") if p]
    if not parts:
        return []
    last = parts[-1]
    if _GO_VERSION.match(last) and len(parts) > 1:  # github.com/x/y/v2 -> package y
        last = parts[-2]
    local = m.group(1) or last.replace("-", "_").split(".")[0]
    if local == "_":
        return []
    if local == ".":
        return [(IMPORT_ALL, path, IMPORT_ALL)]
    return [(local, path, "")]


def _rust_import(text: str) -> list[tuple[str, str, str]]:
    text = re.sub(r"//[^\n]*", "", text).strip()
    m = re.match(r"^(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text)
    if m:
        return [(m.group(1), f"self::{m.group(1)}", "")]
    m = re.match(r"^(?:pub(?:\([^)]*\))?\s+)?use\s+(.*?);?\s*$", text, re.S)
    if m is None:
        return []
    out: list[tuple[str, str, str]] = []
    tree = re.sub(r"\s*(::|,|\{|\})\s*", r"\1", _SPACE.sub(" ", m.group(1)).strip())
    _rust_tree(tree, "", out, 0)
    return out


def _rust_tree(tree: str, prefix: str, out: list[tuple[str, str, str]], depth: int) -> None:
    """Expand `a::{b, c::D as E, f::*}` under `prefix` into bindings."""
    if depth > 8 or not tree:
        return
    brace = tree.find("{")
    if brace >= 0 and tree.endswith("}"):
        base = tree[:brace].rstrip(":")
        inner = tree[brace + 1 : -1]
        new_prefix = f"{prefix}::{base}" if prefix and base else (base or prefix)
        for part in _split_top(inner):
            _rust_tree(part, new_prefix, out, depth + 1)
        return
    path, _, alias = tree.partition(" as ")
    if not alias or not re.fullmatch(r"\w+", alias):
        path, alias = tree, ""
    full = f"{prefix}::{path}" if prefix and path else (path or prefix)
    segments = [s for s in full.split("::") if s]
    if not segments:
        return
    last = segments[-1]
    module = "::".join(segments[:-1])
    if last == "*":
        out.append((IMPORT_ALL, module, IMPORT_ALL))
    elif last == "self":
        if len(segments) >= 2:
            out.append((alias or segments[-2], module, ""))
    else:
        out.append((alias or last, module, last))


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside braces."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return [p for p in parts if p]


_JAVA_IMPORT = re.compile(r"^\s*import\s+(static\s+)?(\w+(?:\s*\.\s*\w+)*)(\s*\.\s*\*)?\s*;?", re.S)


def _java_import(text: str) -> list[tuple[str, str, str]]:
    m = _JAVA_IMPORT.match(text)
    if m is None:
        return []
    dotted = re.sub(r"\s+", "", m.group(2))
    if m.group(3):
        return [(IMPORT_ALL, dotted, IMPORT_ALL)]
    module, _, member = dotted.rpartition(".")
    return [(member, module, member)] if module else []


_QUOTED = re.compile(r"""["'<]([^"'<>]+)[>"']""")
_WORDS = re.compile(r"[\w.:\\/@-]+")


def _generic_import(text: str) -> list[tuple[str, str, str]]:
    """Other languages: the imported module as written, bound to its last segment (kept so shared
    names and imports can relate chunks; resolved by name only)."""
    text = text.strip().rstrip(";")
    q = _QUOTED.search(text)
    if q is not None:
        module = q.group(1)
    else:
        words = _WORDS.findall(text)
        words = [w for w in words if w not in ("import", "using", "static", "use", "qualified", "as", "function")]
        if not words:
            return []
        module = words[0]
    last = re.split(r"[./:\\]+", module.rstrip("./:\\*"))[-1]
    last = last.rsplit(".", 1)[0] if "." in last else last
    if not last or not _IDENT.match(last):
        return []
    return [(last, module, "")]


_IMPORT_READERS: dict[str, Callable[[str], list[tuple[str, str, str]]]] = {
    "python": _python_import,
    "javascript": _js_import,
    "typescript": _js_import,
    "tsx": _js_import,
    "go": _go_import,
    "rust": _rust_import,
    "java": _java_import,
}
