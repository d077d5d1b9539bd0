"""The names a source file references — calls, type uses, imports — found with tree-sitter queries.

One query per language (`_ref_queries.QUERIES`) runs over the syntax tree the chunker already
parsed, in C, so the whole file costs about a millisecond per thousand lines. Its captures follow
one convention:

- `@callee`: the called expression (`foo`, `self.foo`, `pkg.Foo`, `Foo::new`, `a.b.c`), reduced
  here to the called name and the receiver text (its "qualifier");
- `@name` and optionally `@qual`: the same, when the grammar names the two parts itself
  (Java `method_invocation`, Ruby `call`, PHP member calls);
- `@type`: a type name used (an annotation, a base class, a generic argument);
- `@import`: an import statement, read by the language's import reader (`_imports`), or `@local` and
  `@module` captured directly (`const x = require('./x')`).

What comes out is a list of `Reference`s (lines 1-based). `chunker` hands each chunk the refs on its
lines and `refs_text` stores them in one text column (format in `lgrep_core.domain.structure`).
Resolution (which file an import names, which definition a call reaches) happens when a trace is
asked, against the files the index holds then, so it never goes stale (lgrep_search.languages).
"""

from __future__ import annotations

import re
import threading

from lgrep_core.domain.structure import Reference, RefKind
from tree_sitter import Node, Query, QueryCursor
from tree_sitter_language_pack import SupportedLanguage, get_language

from lgrep_index.chunking._code import strip_generics
from lgrep_index.chunking._imports import IDENTIFIER, destructured, read_import
from lgrep_index.chunking._ref_queries import NOT_CALLS, QUERIES

__all__ = ["file_refs", "supports_refs"]

_MAX_QUAL = 120
_SPACE = re.compile(r"\s+")
_SPLIT = re.compile(r"\s*(?:::|\?\.|\.|->|:)\s*")


_lock = threading.Lock()
_compiled: dict[str, Query] = {}


def supports_refs(language: str) -> bool:
    return language in QUERIES


def _query(language: str, grammar: str) -> Query:
    with _lock:
        q = _compiled.get(language)
        if q is None:
            q = Query(get_language(grammar_name(grammar)), QUERIES[language])
            _compiled[language] = q
        return q


def grammar_name(grammar: str) -> SupportedLanguage:
    return grammar  # type: ignore[return-value]  # names come from our own language tables


def file_refs(language: str, grammar: str, root: Node) -> list[Reference]:
    """Every reference in the tree under `root`, in no particular order."""
    if language not in QUERIES:
        return []
    query = _query(language, grammar)
    skip = NOT_CALLS.get(language, frozenset())
    out: list[Reference] = []
    for _, caps in QueryCursor(query).matches(root):
        if "import" in caps:
            node = caps["import"][0]
            row = node.start_point[0] + 1
            if "module" in caps and "local" in caps:
                module = _node_text(caps["module"][0])
                for local, member in destructured(_node_text(caps["local"][0])):
                    out.append(Reference(RefKind.IMPORT, local, row, module, member))
                continue
            for local, module, member in read_import(language, _node_text(node)):
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
        if not name or name in skip or not IDENTIFIER.match(name):
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
    if IDENTIFIER.match(text):  # most callees and type names are one plain identifier
        return text, ""
    text = strip_generics(_SPACE.sub("", text)).rstrip(":.")
    parts = _SPLIT.split(text)
    name = parts[-1].lstrip("&*@$\\").rstrip("!")
    qual = text[: len(text) - len(parts[-1])].rstrip(":.->?") if len(parts) > 1 else ""
    return name, _clean_qual(qual)


def _last_name(text: str) -> str:
    name, _ = _split_callee(text)
    return name if IDENTIFIER.match(name) else ""
