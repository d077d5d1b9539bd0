"""Import statements read, one reader a language: each turns a statement's text into
(local name, module, member) bindings (format in `lgrep_core.domain.structure`). Python, JavaScript and
TypeScript, Go, Rust and Java are read closely; any other language's module is bound to its last
segment, kept so that shared names and imports can relate chunks (resolved by name only)."""

from __future__ import annotations

import re
from collections.abc import Callable

from lgrep_core.domain.structure import IMPORT_ALL, SAME_FILE

__all__ = ["IDENTIFIER", "destructured", "read_import"]

IDENTIFIER = re.compile(r"[A-Za-z_$@][\w$!?]*\Z|[^\W\d][\w]*\Z")
"""A name a reference may bind or call, in any of the languages."""
_SPACE = re.compile(r"\s+")

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


def destructured(local: str) -> list[tuple[str, str]]:
    """`x` -> [(x, "")]; `{a, b: c}` -> [(a, a), (c, b)] (for `const ... = require(...)`)."""
    local = local.strip()
    if not local.startswith("{"):
        return [(local, "")] if IDENTIFIER.match(local) else []
    out: list[tuple[str, str]] = []
    for part in local.strip("{} ").split(","):
        key, _, alias = part.partition(":")
        key, alias = key.strip(), alias.strip() or key.strip()
        if IDENTIFIER.match(key) and IDENTIFIER.match(alias):
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
    if not last or not IDENTIFIER.match(last):
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


def read_import(language: str, text: str) -> list[tuple[str, str, str]]:
    """The (local name, module, member) bindings of one import statement of `language`."""
    return _IMPORT_READERS.get(language, _generic_import)(text)
