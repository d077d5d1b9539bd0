"""Language detection, content types, and the per-language node-type tables."""

from __future__ import annotations

from typing import cast

import pytest
from lgrep_core.domain.models import ContentType
from lgrep_index.languages import (
    AST_LANGUAGES,
    LanguageSpec,
    content_type_for,
    detect_language,
    language_from_shebang,
    spec_for,
)
from tree_sitter_language_pack import SupportedLanguage, get_language

REQUIRED = [
    "python",
    "typescript",
    "tsx",
    "javascript",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "csharp",
    "ruby",
    "php",
    "kotlin",
    "swift",
    "scala",
    "lua",
    "bash",
    "elixir",
    "haskell",
    "zig",
]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("pkg/auth.py", "python"),
        ("stubs/os.pyi", "python"),
        ("src/app.ts", "typescript"),
        ("src/App.tsx", "tsx"),
        ("src/app.js", "javascript"),
        ("src/App.jsx", "javascript"),
        ("src/mod.mjs", "javascript"),
        ("src/mod.cjs", "javascript"),
        ("main.go", "go"),
        ("src/lib.rs", "rust"),
        ("Main.java", "java"),
        ("src/x.c", "c"),
        ("include/x.h", "c"),
        ("src/x.cpp", "cpp"),
        ("src/x.cc", "cpp"),
        ("include/x.hpp", "cpp"),
        ("Program.cs", "csharp"),
        ("lib/x.rb", "ruby"),
        ("index.php", "php"),
        ("Main.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("App.swift", "swift"),
        ("Main.scala", "scala"),
        ("init.lua", "lua"),
        ("deploy.sh", "bash"),
        ("lib/x.ex", "elixir"),
        ("test/x_test.exs", "elixir"),
        ("src/Main.hs", "haskell"),
        ("src/main.zig", "zig"),
        ("README.md", "markdown"),
        ("docs/index.rst", "rst"),
        ("notes.txt", "text"),
        ("config.yaml", "yaml"),
        (".github/workflows/ci.yml", "yaml"),
        ("pyproject.toml", "toml"),
        ("package.json", "json"),
        ("setup.cfg", "ini"),
        ("pom.xml", "xml"),
        ("schema.sql", "sql"),
    ],
)
def test_detect_by_extension(path: str, language: str) -> None:
    assert detect_language(path) == language


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("Makefile", "make"),
        ("sub/GNUmakefile", "make"),
        ("Dockerfile", "dockerfile"),
        ("docker/Dockerfile.dev", "dockerfile"),
        ("Gemfile", "ruby"),
        ("Rakefile", "ruby"),
        ("demo.gemspec", "ruby"),
        ("home/.bashrc", "bash"),
        (".zshrc", "bash"),
        ("CMakeLists.txt", "cmake"),
        ("BUILD.bazel", "starlark"),
        ("requirements-dev.txt", "requirements"),
        (".env.local", "dotenv"),
        ("go.mod", "gomod"),
    ],
)
def test_detect_special_file_names(path: str, language: str) -> None:
    assert detect_language(path) == language


def test_detection_ignores_case_and_separators() -> None:
    assert detect_language("SRC/MAIN.PY") == "python"
    assert detect_language("src\\win\\main.go") == "go"
    assert detect_language("/abs/path/Makefile") == "make"


@pytest.mark.parametrize("path", ["LICENSE", "README", ".gitignore", "data.bin", "archive.tar.gz", "x.unknownext"])
def test_unknown_files_are_none(path: str) -> None:
    assert detect_language(path) is None


@pytest.mark.parametrize(
    ("line", "language"),
    [
        ("#!/usr/bin/env python3", "python"),
        ("#!/usr/bin/python3.12", "python"),
        ("#!/bin/sh", "bash"),
        ("#!/usr/bin/env -S node --no-warnings", "javascript"),
        ("#! /usr/bin/env ruby", "ruby"),
        ("#!/usr/bin/env frobnicate", None),
        ("# not a shebang", None),
    ],
)
def test_shebangs(line: str, language: str | None) -> None:
    assert language_from_shebang(line) == language


def test_content_types() -> None:
    assert content_type_for("python") is ContentType.CODE
    assert content_type_for("sql") is ContentType.CODE
    assert content_type_for("markdown") is ContentType.DOCS
    assert content_type_for("rst") is ContentType.DOCS
    assert content_type_for("text") is ContentType.DOCS
    assert content_type_for("yaml") is ContentType.CONFIG
    assert content_type_for("json") is ContentType.CONFIG
    assert content_type_for("toml") is ContentType.CONFIG
    assert content_type_for("ini") is ContentType.CONFIG
    assert content_type_for("xml") is ContentType.CONFIG
    assert content_type_for(None) is ContentType.TEXT


def test_every_required_language_has_a_table() -> None:
    assert set(REQUIRED) <= AST_LANGUAGES
    assert spec_for("markdown") is None
    assert spec_for("nonsense") is None


def _node_types(spec: LanguageSpec) -> set[str]:
    names = set(spec.defs) | set(spec.wrappers) | set(spec.anchors) | set(spec.anchor_pattern_types)
    names |= set(spec.attributes) | set(spec.value_defs) | set(spec.function_values) | set(spec.class_values)
    names |= set(spec.opaque)
    if spec.call_type:
        names.add(spec.call_type)
    return names


@pytest.mark.parametrize("name", sorted(AST_LANGUAGES))
def test_tables_name_only_node_types_the_bundled_grammar_has(name: str) -> None:
    """A grammar upgrade that renames a node type must fail here, not silently lose definitions."""
    spec = spec_for(name)
    assert spec is not None
    language = get_language(cast("SupportedLanguage", spec.parser_name))
    unknown = sorted(t for t in _node_types(spec) if not language.id_for_node_kind(t, True))
    assert unknown == []
