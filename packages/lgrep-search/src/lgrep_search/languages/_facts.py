"""What a call looks like in each language: which languages share definitions (a family), the
receivers that mean the caller's own object, where a bare `f()` never means a method, the names a
language defines itself, and the languages whose folders are packages."""

from __future__ import annotations

import builtins

__all__ = ["EXPLICIT_SELF", "PACKAGE_FOLDERS", "SELF_RECEIVERS", "builtin_names", "family"]

SELF_RECEIVERS = frozenset({"self", "this", "cls", "Self", "@", "$this", "static", "super"})
"""Receivers of a call on the caller's own object or class (`self.f()`, `this.f()`, `$this->f()`)."""

_FAMILY = {"typescript": "js", "tsx": "js", "javascript": "js", "c": "c", "cpp": "c", "python": "py", "starlark": "py"}

EXPLICIT_SELF = frozenset(
    {
        "python",
        "starlark",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "c",
        "lua",
        "bash",
        "elixir",
        "haskell",
        "zig",
        "php",
    }
)
"""Languages where a bare `f()` never means a method of another class (no implicit `this`)."""

PACKAGE_FOLDERS = frozenset({"go", "java", "kotlin", "scala", "csharp", "swift"})
"""Languages whose files see the definitions of the other files of their folder without an import
(Go: one package a folder; Java, Kotlin, Scala, C#, Swift: the same folder's package too)."""

# Bare calls of these names are the language's own unless the file defines or imports them.
_BUILTINS: dict[str, frozenset[str]] = {
    "py": frozenset(n for n in dir(builtins) if not n.startswith("_")),
    "js": frozenset(
        {
            "require",
            "parseInt",
            "parseFloat",
            "setTimeout",
            "setInterval",
            "clearTimeout",
            "clearInterval",
            "String",
            "Number",
            "Boolean",
            "Symbol",
            "BigInt",
            "Array",
            "Object",
            "Error",
            "TypeError",
            "Promise",
            "Map",
            "Set",
            "WeakMap",
            "WeakSet",
            "Date",
            "RegExp",
            "JSON",
            "isNaN",
            "isFinite",
            "fetch",
            "structuredClone",
            "queueMicrotask",
            "encodeURIComponent",
            "decodeURIComponent",
        }
    ),
    "go": frozenset(
        {
            "append",
            "cap",
            "clear",
            "close",
            "complex",
            "copy",
            "delete",
            "imag",
            "len",
            "make",
            "max",
            "min",
            "new",
            "panic",
            "print",
            "println",
            "real",
            "recover",
        }
    ),
}


def family(language: str) -> str:
    """The family whose definitions a call in `language` may reach by name (TypeScript and
    JavaScript are one, C and C++ one, Python and Starlark one; any other language is its own)."""
    return _FAMILY.get(language, language)


def builtin_names(language_family: str) -> frozenset[str]:
    """The names a bare call of which means the language's own function (`len`, `parseInt`)."""
    return _BUILTINS.get(language_family, frozenset())
