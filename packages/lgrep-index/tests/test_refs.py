"""What each chunk defines and references, for every language with symbol-aware chunking."""

from __future__ import annotations

import pytest
from lgrep_core.domain.structure import Definition, Reference, RefKind, parse_entries
from lgrep_index.chunker import chunk_file
from lgrep_index.chunking import _refs
from lgrep_index.languages import AST_LANGUAGES, spec_for


def _entries(path: str, text: str) -> tuple[list[Definition], list[Reference]]:
    defs: list[Definition] = []
    refs: list[Reference] = []
    for chunk in chunk_file(path, text):
        for e in parse_entries(chunk.refs):
            (defs if isinstance(e, Definition) else refs).append(e)
    return defs, refs


def _calls(refs: list[Reference]) -> set[tuple[str, str]]:
    return {(r.name, r.qualifier) for r in refs if r.kind is RefKind.CALL}


def _imports(refs: list[Reference]) -> set[tuple[str, str, str]]:
    return {(r.name, r.qualifier, r.member) for r in refs if r.kind is RefKind.IMPORT}


# language -> (file name, source, calls expected among the file's calls (name, qualifier))
CASES: dict[str, tuple[str, str, set[tuple[str, str]]]] = {
    "python": (
        "m.py",
        "def f(x):\n    g(x)\n    self.h()\n    os.path.join(x)\n",
        {("g", ""), ("h", "self"), ("join", "os.path")},
    ),
    "javascript": (
        "m.js",
        "function f(x) {\n  g(x);\n  this.h();\n  new Foo();\n}\n",
        {("g", ""), ("h", "this"), ("Foo", "")},
    ),
    "typescript": ("m.ts", "function f(x: Bar): void {\n  g<T>(x);\n  a.b.c();\n}\n", {("g", ""), ("c", "a.b")}),
    "tsx": ("m.tsx", "function F() {\n  const v = useThing();\n  return <div>{v}</div>;\n}\n", {("useThing", "")}),
    "go": ("m.go", "package m\n\nfunc F() {\n\tfmt.Println(g())\n}\n", {("Println", "fmt"), ("g", "")}),
    "rust": (
        "m.rs",
        'fn f() {\n    g();\n    S::new();\n    x.y();\n    println!("a");\n}\n',
        {("g", ""), ("new", "S"), ("y", "x"), ("println", "")},
    ),
    "java": (
        "M.java",
        "class M {\n  void f() {\n    g();\n    a.b();\n    new Q();\n  }\n}\n",
        {("g", ""), ("b", "a"), ("Q", "")},
    ),
    "c": ("m.c", "int f(void) {\n  g(1);\n  s->h(2);\n  return 0;\n}\n", {("g", ""), ("h", "s")}),
    "cpp": (
        "m.cpp",
        "int f() {\n  a::b(1);\n  o.m();\n  new Foo();\n  return 0;\n}\n",
        {("b", "a"), ("m", "o"), ("Foo", "")},
    ),
    "csharp": (
        "M.cs",
        "class M {\n  void F() {\n    G();\n    x.H();\n    new Q();\n  }\n}\n",
        {("G", ""), ("H", "x"), ("Q", "")},
    ),
    "ruby": ("m.rb", "def f(x)\n  g(x)\n  x.h\n  Foo::Bar.new(2)\nend\n", {("g", ""), ("h", "x"), ("new", "Foo::Bar")}),
    "php": ("m.php", "<?php\nfunction f() {\n  g();\n  $x->h();\n  A::b();\n}\n", {("g", ""), ("h", "$x"), ("b", "A")}),
    "kotlin": ("m.kt", "fun f() {\n  g(1)\n  x.h()\n}\n", {("g", ""), ("h", "x")}),
    "swift": ("m.swift", "func f() {\n  g(1)\n  x.h()\n}\n", {("g", ""), ("h", "x")}),
    "scala": ("m.scala", "object O {\n  def f() = {\n    g(1)\n    x.h()\n  }\n}\n", {("g", ""), ("h", "x")}),
    "lua": ("m.lua", "local function f()\n  g(1)\n  x.h()\n  x:m()\nend\n", {("g", ""), ("h", "x"), ("m", "x")}),
    "bash": ("m.sh", "f() {\n  g 1\n  helper --x\n}\n", {("g", ""), ("helper", "")}),
    "elixir": ("m.ex", "defmodule A do\n  def f(x) do\n    g(x)\n    B.h(x)\n  end\nend\n", {("g", ""), ("h", "B")}),
    "haskell": ("M.hs", "module M where\n\nf x = g (M.lookup x)\n", {("g", ""), ("lookup", "M")}),
    "zig": ("m.zig", "fn f() void {\n    g(1);\n    x.h();\n}\n", {("g", ""), ("h", "")}),
    "starlark": ("BUILD", "def f():\n    g(1)\n    native.h()\n", {("g", ""), ("h", "native")}),
}


def test_every_symbol_aware_language_has_a_reference_query_that_compiles() -> None:
    for language in sorted(AST_LANGUAGES):
        spec = spec_for(language)
        assert spec is not None and _refs.supports_refs(language), language
        _refs._query(language, spec.parser_name)  # raises on a node type the grammar lacks


@pytest.mark.parametrize("language", sorted(CASES))
def test_calls_of_each_language(language: str) -> None:
    path, text, expected = CASES[language]
    defs, refs = _entries(path, text)
    found = _calls(refs)
    assert expected <= found, (language, found)
    assert any(d.name in ("f", "F") for d in defs), (language, defs)


def test_definitions_carry_scope_lines_and_kind() -> None:
    text = "class Auth:\n    def verify(self, t):\n        return decode(t)\n\n\ndef decode(t):\n    return t\n"
    defs, refs = _entries("auth.py", text)
    assert {(d.name, d.line, d.end_line, d.scope, d.kind) for d in defs} == {
        ("Auth", 1, 3, ("Auth",), "class"),
        ("verify", 2, 3, ("Auth", "verify"), "method"),
        ("decode", 6, 7, ("decode",), "function"),
    }
    assert [(r.name, r.line) for r in refs if r.kind is RefKind.CALL] == [("decode", 3)]


def test_imports_of_the_resolving_languages() -> None:
    _, py = _entries(
        "m.py",
        "import a.b.c\nimport x.y as z\nfrom .p import (q as r, s)\nfrom .. import t\nfrom u import *\n\nv = 1\n",
    )
    assert _imports(py) == {
        ("a", "a.b.c", ""),
        ("z", "x.y", ""),
        ("r", ".p", "q"),
        ("s", ".p", "s"),
        ("t", "..", "t"),
        ("*", "u", "*"),
    }
    _, ts = _entries(
        "m.ts",
        "import D, { a as b, c } from './x';\nimport * as ns from '../y';\nexport * from './z';\n"
        "export { q } from './q';\nconst { k, l: m } = require('./r');\n\nexport const v = 1;\n",
    )
    assert _imports(ts) == {
        ("D", "./x", "default"),
        ("b", "./x", "a"),
        ("c", "./x", "c"),
        ("ns", "../y", ""),
        ("*", "./z", "*"),
        ("q", "./q", "q"),
        ("k", "./r", "k"),
        ("m", "./r", "l"),
    }
    _, go = _entries("m.go", 'package m\n\nimport (\n\tf "fmt"\n\t"github.com/x/y/v2"\n\t_ "z"\n)\n\nvar V = 1\n')
    assert _imports(go) == {("f", "fmt", ""), ("y", "github.com/x/y/v2", "")}
    _, rs = _entries("m.rs", "mod m;\nuse crate::a::{b, c::D as E, f::*};\nuse super::x::{self};\n\nfn g() {}\n")
    assert _imports(rs) == {
        ("m", "self::m", ""),
        ("b", "crate::a", "b"),
        ("E", "crate::a::c", "D"),
        ("*", "crate::a::f", "*"),
        ("x", "super::x", ""),  # `{self}` binds the module itself
    }
    _, java = _entries("M.java", "import c.d.E;\nimport static c.d.F.g;\nimport c.k.*;\n\nclass M {}\n")
    assert _imports(java) == {("E", "c.d", "E"), ("g", "c.d.F", "g"), ("*", "c.k", "*")}


def test_hostile_text_never_breaks_chunking() -> None:
    # a broken file, binary-looking bytes, a huge qualifier: chunks still come, refs stay one line each
    text = "def f(:\n    g(\x00)\n    " + "a." * 400 + "h()\n"
    chunks = chunk_file("bad.py", text)
    assert chunks
    for c in chunks:
        for line in c.refs.split("\n") if c.refs else ():
            assert len(line) < 1000 and "\x00" not in line.split("\t")[1]
