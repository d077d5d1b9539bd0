"""Callers, callees and related code from the structure the chunker stores, resolved per language.

Each project here is chunked by the real chunker (lgrep_index) and searched by the real graph
(lgrep_search.structure); only the index storage is skipped (the e2e tests cover it)."""

from __future__ import annotations

import pytest
from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.models import MatchType, Resolution, TraceDirection, TraceRequest
from lgrep_index.chunker import chunk_file
from lgrep_search.corpus import Corpus
from lgrep_search.reads import find_related
from lgrep_search.structure import CodeGraph, trace


def _corpus(files: dict[str, str]) -> Corpus:
    return Corpus.of_chunks(ch for path, text in files.items() for ch in chunk_file(path, text))


def _trace(files: dict[str, str], symbol: str, **kw: object):
    corpus = _corpus(files)
    request = TraceRequest("/p", symbol, **kw)  # type: ignore[arg-type]
    return trace(corpus, CodeGraph(corpus), request)


def _edges(result) -> set[tuple[str, str, str, str]]:
    """(direction, caller, callee or '?', resolution) of every edge."""
    out = set()
    for e in result.edges:
        callee = ".".join(e.callee.scope) if e.callee is not None else "?"
        out.add((e.direction.value, ".".join(e.caller.scope) or "<top>", callee, e.resolution.value))
    return out


PY = {
    "pkg/__init__.py": "",
    "pkg/auth.py": (
        "from .tokens import decode\n"
        "from werkzeug.utils import redirect\n\n\n"
        "class Auth:\n"
        "    def verify(self, token):\n"
        "        claims = decode(token)\n"
        "        return self.check(claims)\n\n"
        "    def check(self, claims):\n"
        "        return redirect(claims)\n"
    ),
    "pkg/tokens.py": "def decode(token):\n    return token.split('.')\n\n\ndef redirect(x):\n    return x\n",
    "app.py": (
        "from pkg import auth\n"
        "import pkg.tokens\n\n\n"
        "def login(t):\n"
        "    a = auth.Auth()\n"
        "    pkg.tokens.decode(t)\n"
        "    return a.verify(t)\n"
    ),
}


def test_python_calls_resolve_through_imports_self_and_leave_libraries_out() -> None:
    result = _trace(PY, "Auth.verify")
    assert _edges(result) == {
        ("callers", "login", "Auth.verify", "name"),  # `a.verify`: a variable; its type is not known
        ("callees", "Auth.verify", "decode", "import"),
        ("callees", "Auth.verify", "Auth.check", "local"),
    }
    check = _trace(PY, "check")
    # `redirect` comes from werkzeug (not in the project): no edge to pkg/tokens.py's redirect
    assert not [e for e in check.edges if e.direction is TraceDirection.CALLEES]
    decode = _trace(PY, "decode", direction=TraceDirection.CALLERS)
    assert _edges(decode) == {
        ("callers", "Auth.verify", "decode", "import"),
        ("callers", "login", "decode", "import"),  # pkg.tokens.decode(...) through `import pkg.tokens`
    }


def test_names_only_links_every_definition_of_a_name_as_osgrep_does() -> None:
    check = _trace(PY, "check", resolve_imports=False, direction=TraceDirection.CALLEES)
    assert _edges(check) == {("callees", "Auth.check", "redirect", "name")}


def test_depth_cycles_budget_and_paging() -> None:
    files = {
        "a.py": "from b import pong\n\n\ndef ping(n):\n    return pong(n - 1)\n",
        "b.py": "from a import ping\n\n\ndef pong(n):\n    return ping(n) if n else 0\n",
    }
    result = _trace(files, "ping", depth=3)
    # a cycle: ping -> pong -> ping is reported once each way and not followed forever
    assert _edges(result) == {
        ("callers", "pong", "ping", "import"),
        ("callers", "ping", "pong", "import"),
        ("callees", "ping", "pong", "import"),
        ("callees", "pong", "ping", "import"),
    }
    many = {f"m{i}.py": f"from core import work\n\n\ndef use{i}():\n    return work()\n" for i in range(12)}
    many["core.py"] = "def work():\n    return 1\n"
    first = _trace(many, "work", limit=5)
    assert (len(first.edges), first.total, first.next_offset) == (5, 12, 5)
    rest = _trace(many, "work", limit=5, offset=10)
    assert (len(rest.edges), rest.next_offset) == (2, 0)
    pages = {e.caller.symbol for page in (0, 5, 10) for e in _trace(many, "work", limit=5, offset=page).edges}
    assert pages == {f"use{i}" for i in range(12)}


def test_ambiguous_names_are_listed_not_guessed() -> None:
    files = {
        "x.py": "class A:\n    def run(self):\n        return 1\n",
        "y.py": "class B:\n    def run(self):\n        return 2\n",
        "z.py": "def go(obj):\n    return obj.run()\n",
    }
    result = _trace(files, "run")
    assert result.ambiguous and not result.edges
    assert {d.path for d in result.definitions} == {"x.py", "y.py"}
    picked = _trace(files, "run", path="x.py", direction=TraceDirection.CALLERS)
    assert not picked.ambiguous
    (edge,) = picked.edges
    # the call may mean A.run (the one traced) or B.run: it says both
    assert edge.callee is not None and edge.callee.path == "x.py" and edge.resolution is Resolution.NAME
    assert {c.path for c in edge.candidates} == {"x.py", "y.py"}
    go = _trace(files, "go", direction=TraceDirection.CALLEES)
    (edge,) = go.edges
    assert edge.callee is None and len(edge.candidates) == 2


def test_unknown_symbol_is_a_clear_error() -> None:
    with pytest.raises(NotFoundError, match="no definition of 'nothing_here'"):
        _trace(PY, "nothing_here")


def test_typescript_imports_barrels_and_this() -> None:
    files = {
        "src/util.ts": "export function normalize(x: string): string {\n  return x.trim();\n}\n",
        "src/index.ts": "export * from './util';\nexport { Schema } from './schema';\n",
        "src/schema.ts": (
            "import { normalize } from './util';\n"
            "import { readFile } from 'fs';\n\n"
            "export class Schema {\n"
            "  parse(x: string): string {\n"
            "    return this.clean(normalize(x));\n"
            "  }\n"
            "  clean(x: string): string {\n"
            "    return readFile(x);\n"
            "  }\n"
            "}\n"
        ),
        "src/app.ts": (
            "import { Schema, normalize } from './index';\n\n"
            "export function main() {\n  return new Schema().parse(normalize('a'));\n}\n"
        ),
        "src/other.ts": "export function readFile(p: string) {\n  return p;\n}\n",
    }
    result = _trace(files, "normalize", direction=TraceDirection.CALLERS)
    assert _edges(result) == {
        ("callers", "Schema.parse", "normalize", "import"),
        ("callers", "main", "normalize", "import"),  # through the barrel's `export * from './util'`
    }
    parse = _trace(files, "parse", direction=TraceDirection.CALLEES)
    assert _edges(parse) == {
        ("callees", "Schema.parse", "Schema.clean", "local"),
        ("callees", "Schema.parse", "normalize", "import"),
    }
    clean = _trace(files, "clean", direction=TraceDirection.CALLEES)
    assert not clean.edges  # readFile comes from 'fs', not from src/other.ts
    main = _trace(files, "main", direction=TraceDirection.CALLEES)
    assert ("callees", "main", "Schema", "import") in _edges(main)


def test_go_packages_resolve_by_import_path_and_folder() -> None:
    files = {
        "go.mod": "module example.com/app\n",
        "internal/store/store.go": "package store\n\nfunc Open(p string) *DB {\n\treturn newDB(p)\n}\n",
        "internal/store/db.go": "package store\n\ntype DB struct{}\n\nfunc newDB(p string) *DB {\n\treturn &DB{}\n}\n",
        "cmd/main.go": (
            'package main\n\nimport (\n\t"fmt"\n\tst "example.com/app/internal/store"\n)\n\n'
            'func main() {\n\tdb := st.Open("x")\n\tfmt.Println(db)\n}\n'
        ),
    }
    assert _edges(_trace(files, "Open")) == {
        ("callers", "main", "Open", "import"),
        ("callees", "Open", "newDB", "local"),  # another file of the same package
    }


def test_rust_use_paths_and_java_imports() -> None:
    rust = {
        "src/lib.rs": "mod parser;\nuse crate::parser::parse;\n\npub fn run(s: &str) -> u32 {\n    parse(s)\n}\n",
        "src/parser.rs": "pub fn parse(s: &str) -> u32 {\n    helper(s)\n}\n\nfn helper(s: &str) -> u32 {\n    1\n}\n",
        "src/other.rs": "pub fn parse(s: &str) -> u32 {\n    2\n}\n",
    }
    assert _edges(_trace(rust, "run", direction=TraceDirection.CALLEES)) == {("callees", "run", "parse", "import")}
    java = {
        "src/main/java/com/acme/util/Strings.java": (
            "package com.acme.util;\n\npublic class Strings {\n"
            "    public static String trim(String s) { return s.trim(); }\n}\n"
        ),
        "src/main/java/com/acme/other/Strings.java": (
            "package com.acme.other;\n\npublic class Strings {\n"
            "    public static String trim(String s) { return s; }\n}\n"
        ),
        "src/main/java/com/acme/App.java": (
            "package com.acme;\n\nimport com.acme.util.Strings;\n\npublic class App {\n"
            "    public String run(String s) { return Strings.trim(s); }\n}\n"
        ),
    }
    result = _trace(java, "run", direction=TraceDirection.CALLEES)
    (edge,) = result.edges
    assert edge.resolution is Resolution.IMPORT and edge.callee is not None
    assert edge.callee.path == "src/main/java/com/acme/util/Strings.java"


def test_find_related_says_which_relation_found_each_result() -> None:
    corpus = _corpus(PY)
    graph = CodeGraph(corpus)
    related = find_related(corpus, "pkg/auth.py", 7, limit=10, graph=graph)
    assert related.anchor.symbol == "Auth"  # a small class is one chunk, its methods inside
    by_symbol = {h.symbol: set(h.match) for h in related.related}
    assert MatchType.CALLER in by_symbol["login"]  # calls Auth() and a.verify()
    assert MatchType.CALLEE in by_symbol["decode"]
    assert MatchType.CALLER not in by_symbol["decode"]


def test_calls_that_cannot_be_told_apart_by_name_are_not_resolved_as_if_they_could() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/json/__init__.py": "import json as _json\n\n\ndef dumps(o):\n    return _json.dumps(o)\n",
        "pkg/store.py": (
            "from typing import overload\n\n\n"
            "class Store:\n"
            "    def open(self, p):\n        return p\n\n"
            "    def get(self, k):\n        return self.cache.get(k)\n\n\n"
            "@overload\ndef load(p: str) -> str: ...\n@overload\ndef load(p: int) -> int: ...\n"
            "def load(p):\n    return open(p).read()\n\n\n"
            "def first(rows):\n    return rows[0].get('id')\n"
        ),
    }
    corpus = _corpus(files)
    graph = CodeGraph(corpus)
    # `_json.dumps`: the standard library's json, not pkg/json (a package's own folder is no import root)
    dumps = trace(corpus, graph, TraceRequest("/p", "dumps", direction=TraceDirection.CALLEES))
    assert not dumps.edges
    # `open(p)`: the builtin; a bare call never reaches another class's method in Python
    # `self.cache.get(k)`: a value of unknown type, not Store.get itself
    load = trace(corpus, graph, TraceRequest("/p", "load", direction=TraceDirection.CALLEES))
    assert not load.edges and len(load.definitions) == 3 and not load.ambiguous  # overloads are one
    get = trace(corpus, graph, TraceRequest("/p", "Store.get", direction=TraceDirection.CALLERS))
    assert {(e.caller.symbol, e.resolution) for e in get.edges} == {
        ("first", Resolution.NAME),
        ("get", Resolution.NAME),
    }
    own = trace(corpus, graph, TraceRequest("/p", "Store.get", direction=TraceDirection.CALLEES))
    # `self.cache.get`: only the name says it could be Store.get, and the edge says so
    assert {(e.callee.symbol if e.callee else "?", e.resolution) for e in own.edges} == {("get", Resolution.NAME)}


def test_a_monorepos_own_packages_and_renamed_exports_resolve() -> None:
    files = {
        "packages/core/src/index.ts": "export * from './types';\nexport { enumType as enum };\n"
        "function enumType(v: string[]) {\n  return v;\n}\n",
        "packages/core/src/types.ts": "export function object(shape: object) {\n  return shape;\n}\n",
        "packages/app/src/main.ts": (
            "import * as z from '@acme/core';\nimport { readFile } from 'node:fs';\n\n"
            "export function main() {\n  z.enum(['a']);\n  z.object({}).optional();\n  return readFile('x');\n}\n"
        ),
    }
    result = _trace(files, "main", direction=TraceDirection.CALLEES)
    found = {(e.callee.symbol, e.callee.path, e.resolution) for e in result.edges if e.callee is not None}
    assert found == {
        ("enumType", "packages/core/src/index.ts", Resolution.IMPORT),
        ("object", "packages/core/src/types.ts", Resolution.IMPORT),
    }
