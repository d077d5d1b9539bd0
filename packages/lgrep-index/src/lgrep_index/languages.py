"""Which language a file holds, what kind of content that is, and how each grammar spells definitions.

Three tables live here and nothing else:

- detection: extension / special file name / shebang -> language name (lower case, stable: it is
  stored in the index and used as a search filter);
- language -> `ContentType` (code, docs, config);
- per-language tree-sitter node-type tables (`LanguageSpec`) for the symbol-aware chunker. Node
  type names were read off the grammars bundled in tree-sitter-language-pack 0.13.0; a grammar
  upgrade that renames a node shows up as a failing fixture in tests/test_chunker.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import PurePosixPath

from lgrep_core.domain.models import ChunkKind, ContentType

__all__ = [
    "AST_LANGUAGES",
    "CONFIG_LANGUAGES",
    "DOC_LANGUAGES",
    "TEXT_LANGUAGE",
    "DefRule",
    "LanguageSpec",
    "Role",
    "content_type_for",
    "detect_language",
    "language_from_shebang",
    "spec_for",
]

TEXT_LANGUAGE = "text"
"""Language of plain text files and of anything we cannot identify (line windows)."""

_EXTENSIONS: dict[str, str] = {
    # the 19 symbol-aware languages
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".tpp": "cpp",
    ".inl": "cpp",
    ".cs": "csharp",
    ".csx": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".ru": "ruby",
    ".podspec": "ruby",
    ".php": "php",
    ".phtml": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".sbt": "scala",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".ksh": "bash",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".zig": "zig",
    ".bzl": "starlark",
    ".star": "starlark",
    # docs
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".mkd": "markdown",
    ".rst": "rst",
    ".txt": TEXT_LANGUAGE,
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".org": "org",
    ".tex": "latex",
    # config
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".jsonc": "json",
    ".json5": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "ini",
    ".properties": "properties",
    ".env": "dotenv",
    ".xml": "xml",
    ".xsd": "xml",
    ".xsl": "xml",
    ".xslt": "xml",
    ".plist": "xml",
    ".csproj": "xml",
    ".fsproj": "xml",
    ".vbproj": "xml",
    ".props": "xml",
    ".targets": "xml",
    ".tf": "hcl",
    ".tfvars": "hcl",
    ".hcl": "hcl",
    # other code: line windows, but a real language label for filters
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".sass": "scss",
    ".less": "less",
    ".sql": "sql",
    ".vue": "vue",
    ".svelte": "svelte",
    ".proto": "proto",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".dart": "dart",
    ".r": "r",
    ".jl": "julia",
    ".ml": "ocaml",
    ".mli": "ocaml",
    ".pl": "perl",
    ".pm": "perl",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".m": "objc",
    ".mm": "objc",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".clj": "clojure",
    ".cljs": "clojure",
    ".cljc": "clojure",
    ".erl": "erlang",
    ".hrl": "erlang",
    ".groovy": "groovy",
    ".gradle": "groovy",
    ".nix": "nix",
    ".cmake": "cmake",
    ".mk": "make",
    ".vim": "vim",
    ".elm": "elm",
    ".nim": "nim",
    ".cr": "crystal",
    ".sol": "solidity",
    ".v": "verilog",
    ".sv": "verilog",
    ".vhd": "vhdl",
    ".asm": "asm",
    ".s": "asm",
    ".dockerfile": "dockerfile",
}

_FILENAMES: dict[str, str] = {
    "makefile": "make",
    "gnumakefile": "make",
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "gemfile": "ruby",
    "rakefile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    "guardfile": "ruby",
    "brewfile": "ruby",
    "capfile": "ruby",
    "berksfile": "ruby",
    "thorfile": "ruby",
    "dangerfile": "ruby",
    "fastfile": "ruby",
    "appfile": "ruby",
    ".irbrc": "ruby",
    ".pryrc": "ruby",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".bash_login": "bash",
    ".bash_logout": "bash",
    ".bash_aliases": "bash",
    ".profile": "bash",
    ".zshrc": "bash",
    ".zshenv": "bash",
    ".zprofile": "bash",
    ".envrc": "bash",
    "pkgbuild": "bash",
    "cmakelists.txt": "cmake",
    "jenkinsfile": "groovy",
    "build": "starlark",
    "build.bazel": "starlark",
    "workspace": "starlark",
    "workspace.bazel": "starlark",
    "module.bazel": "starlark",
    "tiltfile": "starlark",
    "pipfile": "toml",
    ".babelrc": "json",
    ".eslintrc": "json",
    ".prettierrc": "json",
    ".swcrc": "json",
    ".clang-format": "yaml",
    ".clang-tidy": "yaml",
    ".yamllint": "yaml",
    ".editorconfig": "ini",
    ".gitconfig": "ini",
    ".npmrc": "ini",
    ".pylintrc": "ini",
    "go.mod": "gomod",
    "go.work": "gomod",
}

_SHEBANGS: dict[str, str] = {
    "python": "python",
    "python2": "python",
    "python3": "python",
    "pypy": "python",
    "pypy3": "python",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "dash": "bash",
    "ksh": "bash",
    "node": "javascript",
    "nodejs": "javascript",
    "deno": "typescript",
    "bun": "typescript",
    "ruby": "ruby",
    "lua": "lua",
    "php": "php",
    "perl": "perl",
    "elixir": "elixir",
    "runhaskell": "haskell",
}
_SHEBANG = re.compile(r"^#!\s*(\S+)(?:\s+(?:-\S+\s+)*(\S+))?")

DOC_LANGUAGES = frozenset({"markdown", "rst", TEXT_LANGUAGE, "asciidoc", "org", "latex"})
CONFIG_LANGUAGES = frozenset(
    {"yaml", "toml", "json", "ini", "properties", "dotenv", "xml", "hcl", "gomod", "requirements"}
)


def detect_language(path: str) -> str | None:
    """The language of `path` by its special name or extension; None when we do not know it.

    `path` may be project-relative or absolute, '/'- or '\\'-separated. Unknown files are left to
    the caller (the chunker then cuts line windows labelled "text").
    """
    name = PurePosixPath(path.replace("\\", "/")).name
    lower = name.lower()
    special = _FILENAMES.get(lower)
    if special is not None:
        return special
    if lower.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    if lower.startswith("requirements") and lower.endswith((".txt", ".in")):
        return "requirements"
    if lower.startswith(".env.") or lower == ".env":
        return "dotenv"
    dot = lower.rfind(".")
    if dot <= 0:  # no extension, or a dotfile such as ".gitignore"
        return None
    return _EXTENSIONS.get(lower[dot:])


def language_from_shebang(first_line: str) -> str | None:
    """`#!/usr/bin/env python3` -> "python"; None when the line is no shebang we know."""
    match = _SHEBANG.match(first_line)
    if match is None:
        return None
    program = match.group(1).rsplit("/", 1)[-1]
    if program == "env" and match.group(2):
        program = match.group(2).rsplit("/", 1)[-1]
    program = program.rstrip("0123456789.") or program  # python3.12 -> python
    return _SHEBANGS.get(program) or _SHEBANGS.get(program + "3")


def content_type_for(language: str | None) -> ContentType:
    """Code for programming languages, docs for prose, config for data files, text when unknown."""
    if language is None:
        return ContentType.TEXT
    if language in DOC_LANGUAGES:
        return ContentType.DOCS
    if language in CONFIG_LANGUAGES:
        return ContentType.CONFIG
    return ContentType.CODE


# ---------------------------------------------------------------------------------------------
# tree-sitter node-type tables


class Role(StrEnum):
    """How the chunker treats a definition's inside."""

    LEAF = "leaf"  # one chunk (split by lines if too big); nested definitions stay inside it
    CONTAINER = "container"  # too big -> a header chunk plus one chunk per member definition
    NAMESPACE = "namespace"  # like a container, but when split it emits no header chunk of its own


@dataclass(frozen=True, slots=True)
class DefRule:
    """How one node type defines a symbol."""

    kind: ChunkKind
    role: Role = Role.LEAF
    methods: bool = False  # FUNCTION members of this definition are METHODs
    name_field: str = "name"
    body_field: str = "body"
    needs_body: bool = False  # `struct point *p` names a type, only `struct point {...}` defines it
    default_name: str = ""
    multiline_only: bool = False  # one-line forms (`type Id = string`) stay in the surrounding block


_FN = DefRule(ChunkKind.FUNCTION)
_METHOD = DefRule(ChunkKind.METHOD)
_CLASS = DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True)
_TYPE = DefRule(ChunkKind.CLASS)  # a type whose members are not definitions (struct, enum, data)
_NS = DefRule(ChunkKind.MODULE, Role.NAMESPACE)


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """Node types that matter to the chunker for one tree-sitter grammar."""

    name: str
    defs: Mapping[str, DefRule]
    grammar: str = ""  # name for tree_sitter_language_pack.get_parser when it differs from `name`
    # Nodes around a definition that belong to its span (decorators, `export`, `template <...>`).
    wrappers: frozenset[str] = frozenset()
    # Top-level nodes that make up the file's anchor chunk (imports, package clauses...).
    anchors: frozenset[str] = frozenset()
    # Top-level nodes of these types join the anchor when their text matches `anchor_pattern`.
    anchor_pattern_types: frozenset[str] = frozenset()
    anchor_pattern: re.Pattern[str] | None = None
    # Attributes/annotations standing on their own lines attach to the next definition, like comments.
    attributes: frozenset[str] = frozenset()
    # Declarations/assignments whose value may be a function or a class (`const f = () => {}`).
    value_defs: frozenset[str] = frozenset()
    function_values: frozenset[str] = frozenset()
    class_values: frozenset[str] = frozenset()
    # Elixir-style `def name do ... end`: call node type and target keyword -> rule.
    call_type: str = ""
    call_defs: Mapping[str, DefRule] = field(default_factory=dict[str, DefRule])
    # Haskell/Elixir define one function by several adjacent clauses: merge them into one chunk.
    merge_clauses: bool = False
    # Multi-line nodes that never hold a definition, so the walk does not enter them (data literals).
    opaque: frozenset[str] = frozenset()

    @property
    def parser_name(self) -> str:
        return self.grammar or self.name


_PYTHON_DATA = frozenset(
    {
        "dictionary",
        "list",
        "tuple",
        "set",
        "list_comprehension",
        "dictionary_comprehension",
        "set_comprehension",
        "generator_expression",
    }
)
_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "generator_function"})
_JS_DEFS: dict[str, DefRule] = {
    "function_declaration": _FN,
    "generator_function_declaration": _FN,
    "class_declaration": _CLASS,
    "method_definition": _FN,
}
_TS_DEFS: dict[str, DefRule] = {
    **_JS_DEFS,
    "abstract_class_declaration": _CLASS,
    "interface_declaration": _TYPE,
    "enum_declaration": _TYPE,
    "type_alias_declaration": DefRule(ChunkKind.CLASS, multiline_only=True),
    "internal_module": _NS,
    "module": DefRule(ChunkKind.MODULE, Role.NAMESPACE, needs_body=True),
}
_JAVASCRIPT = LanguageSpec(
    "javascript",
    _JS_DEFS,
    wrappers=frozenset({"export_statement"}),
    anchors=frozenset({"import_statement"}),
    # re-exports, `export { a, b }`, `const x = require("x")`, "use strict"
    anchor_pattern_types=frozenset(
        {"export_statement", "lexical_declaration", "variable_declaration", "expression_statement"}
    ),
    anchor_pattern=re.compile(
        r"^(?:export\s+(?:\*|\{[^}]*\}\s*(?:from\b|;|$)|type\s*\{)"
        r"|(?:const|let|var)\s+[^=]+=\s*require\s*\(|['\"]use \w+['\"])"
    ),
    attributes=frozenset({"decorator"}),
    value_defs=frozenset(
        {"lexical_declaration", "variable_declaration", "expression_statement", "field_definition", "pair"}
    ),
    function_values=_JS_FUNCTION_VALUES,
    class_values=frozenset({"class"}),
)
_TYPESCRIPT = replace(
    _JAVASCRIPT,
    name="typescript",
    defs=_TS_DEFS,
    wrappers=frozenset({"export_statement", "ambient_declaration"}),
    value_defs=frozenset(
        {
            "lexical_declaration",
            "variable_declaration",
            "expression_statement",
            "public_field_definition",
            "pair",
        }
    ),
)

_C_DEFS: dict[str, DefRule] = {
    "function_definition": DefRule(ChunkKind.FUNCTION, name_field="declarator"),
    "struct_specifier": DefRule(ChunkKind.CLASS, needs_body=True),
    "union_specifier": DefRule(ChunkKind.CLASS, needs_body=True),
    "enum_specifier": DefRule(ChunkKind.CLASS, needs_body=True),
    # typedef struct {...} name; -- only when it holds a body (checked in the chunker)
    "type_definition": DefRule(ChunkKind.CLASS, name_field="declarator", body_field="type", needs_body=True),
}
_CPP_DEFS: dict[str, DefRule] = {
    **_C_DEFS,
    "struct_specifier": DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True, needs_body=True),
    "union_specifier": DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True, needs_body=True),
    "class_specifier": DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True, needs_body=True),
    "namespace_definition": DefRule(ChunkKind.MODULE, Role.NAMESPACE, default_name="(anonymous)"),
}

_SPECS: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in [
        LanguageSpec(
            "python",
            defs={"function_definition": _FN, "class_definition": _CLASS},
            wrappers=frozenset({"decorated_definition"}),
            anchors=frozenset({"import_statement", "import_from_statement", "future_import_statement"}),
            anchor_pattern_types=frozenset({"expression_statement"}),
            anchor_pattern=re.compile(r"^__all__\s*[:=+]"),
            opaque=_PYTHON_DATA,
        ),
        _JAVASCRIPT,
        _TYPESCRIPT,
        replace(_TYPESCRIPT, name="tsx"),
        LanguageSpec(
            "go",
            defs={
                "function_declaration": _FN,
                "method_declaration": _METHOD,
                "type_spec": _TYPE,
            },
            wrappers=frozenset({"type_declaration"}),
            anchors=frozenset({"package_clause", "import_declaration"}),
        ),
        LanguageSpec(
            "rust",
            defs={
                "function_item": _FN,
                "struct_item": _TYPE,
                "enum_item": _TYPE,
                "union_item": _TYPE,
                "trait_item": _CLASS,
                "impl_item": DefRule(ChunkKind.MODULE, Role.CONTAINER, methods=True, name_field="type"),
                "mod_item": DefRule(ChunkKind.MODULE, Role.NAMESPACE, needs_body=True),
                "macro_definition": _FN,
            },
            anchors=frozenset({"use_declaration", "extern_crate_declaration", "mod_item", "inner_attribute_item"}),
            attributes=frozenset({"attribute_item"}),
        ),
        LanguageSpec(
            "java",
            defs={
                "class_declaration": _CLASS,
                "interface_declaration": _CLASS,
                "enum_declaration": _CLASS,
                "record_declaration": _CLASS,
                "annotation_type_declaration": _CLASS,
                "method_declaration": _FN,
                "constructor_declaration": _FN,
                "compact_constructor_declaration": _FN,
            },
            anchors=frozenset({"package_declaration", "import_declaration", "module_declaration"}),
        ),
        LanguageSpec(
            "c",
            defs=_C_DEFS,
            anchors=frozenset({"preproc_include"}),
        ),
        LanguageSpec(
            "cpp",
            defs=_CPP_DEFS,
            wrappers=frozenset({"template_declaration"}),
            anchors=frozenset({"preproc_include", "using_declaration", "alias_declaration"}),
        ),
        LanguageSpec(
            "csharp",
            defs={
                "class_declaration": _CLASS,
                "struct_declaration": _CLASS,
                "interface_declaration": _CLASS,
                "record_declaration": _CLASS,
                "enum_declaration": _TYPE,
                "method_declaration": _FN,
                "constructor_declaration": _FN,
                "destructor_declaration": _FN,
                "operator_declaration": DefRule(ChunkKind.FUNCTION, default_name="operator"),
                "namespace_declaration": _NS,
            },
            anchors=frozenset({"using_directive", "file_scoped_namespace_declaration", "extern_alias_directive"}),
            attributes=frozenset({"attribute_list"}),
        ),
        LanguageSpec(
            "ruby",
            defs={
                "method": _FN,
                "singleton_method": _FN,
                "class": _CLASS,
                "module": _NS,
                "singleton_class": DefRule(ChunkKind.CLASS, Role.NAMESPACE, methods=True),
            },
            anchor_pattern_types=frozenset({"call"}),
            anchor_pattern=re.compile(r"^(?:require|require_relative|load|autoload)\b"),
        ),
        LanguageSpec(
            "php",
            defs={
                "function_definition": _FN,
                "method_declaration": _FN,
                "class_declaration": _CLASS,
                "interface_declaration": _CLASS,
                "trait_declaration": _CLASS,
                "enum_declaration": _CLASS,
                "namespace_definition": DefRule(ChunkKind.MODULE, Role.NAMESPACE, needs_body=True),
            },
            anchors=frozenset({"namespace_definition", "namespace_use_declaration", "declare_statement", "php_tag"}),
            anchor_pattern_types=frozenset({"expression_statement"}),
            anchor_pattern=re.compile(r"^(?:require|include)(?:_once)?\b"),
            attributes=frozenset({"attribute_list"}),
        ),
        LanguageSpec(
            "kotlin",
            defs={
                "class_declaration": _CLASS,
                "object_declaration": _CLASS,
                "companion_object": DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True, default_name="Companion"),
                "function_declaration": _FN,
                "secondary_constructor": DefRule(ChunkKind.FUNCTION, default_name="constructor"),
            },
            anchors=frozenset({"package_header", "import_list", "import_header", "file_annotation"}),
        ),
        LanguageSpec(
            "swift",
            defs={
                "class_declaration": _CLASS,
                "protocol_declaration": _CLASS,
                "function_declaration": _FN,
                "init_declaration": DefRule(ChunkKind.FUNCTION, default_name="init"),
                "deinit_declaration": DefRule(ChunkKind.FUNCTION, default_name="deinit"),
            },
            anchors=frozenset({"import_declaration"}),
        ),
        LanguageSpec(
            "scala",
            defs={
                "class_definition": _CLASS,
                "object_definition": _CLASS,
                "trait_definition": _CLASS,
                "enum_definition": _CLASS,
                "function_definition": _FN,
            },
            anchors=frozenset({"package_clause", "import_declaration", "export_declaration"}),
            attributes=frozenset({"annotation"}),
        ),
        LanguageSpec(
            "lua",
            defs={"function_declaration": _FN},
            anchor_pattern_types=frozenset({"variable_declaration"}),
            anchor_pattern=re.compile(r"^local\s+[\w\s,]+=\s*require\b"),
            value_defs=frozenset({"variable_declaration", "assignment_statement"}),
            function_values=frozenset({"function_definition"}),
        ),
        LanguageSpec(
            "bash",
            defs={"function_definition": _FN},
            anchor_pattern_types=frozenset({"command"}),
            anchor_pattern=re.compile(r"^(?:source|\.|set|shopt)\s"),
        ),
        LanguageSpec(
            "elixir",
            defs={},
            call_type="call",
            call_defs={
                "def": _FN,
                "defp": _FN,
                "defmacro": _FN,
                "defmacrop": _FN,
                "defguard": _FN,
                "defguardp": _FN,
                "defdelegate": _FN,
                "defmodule": DefRule(ChunkKind.MODULE, Role.CONTAINER),
                "defprotocol": DefRule(ChunkKind.MODULE, Role.CONTAINER),
                "defimpl": DefRule(ChunkKind.MODULE, Role.CONTAINER),
            },
            anchor_pattern_types=frozenset({"call"}),
            anchor_pattern=re.compile(r"^(?:import|alias|require|use|Mix\.install)\b"),
            attributes=frozenset({"unary_operator"}),  # @doc / @spec / @impl above a def
            merge_clauses=True,
        ),
        LanguageSpec(
            "haskell",
            defs={
                "function": _FN,
                "bind": _FN,
                "signature": _FN,
                "data_type": _TYPE,
                "newtype": _TYPE,
                "class": DefRule(ChunkKind.CLASS, Role.CONTAINER, methods=True, body_field="declarations"),
                "instance": DefRule(ChunkKind.MODULE, Role.CONTAINER, methods=True, body_field="declarations"),
            },
            anchors=frozenset({"header", "imports", "import", "pragma"}),
            merge_clauses=True,
        ),
        LanguageSpec(
            "zig",
            # Decl is resolved in the chunker: FnProto -> function, `const X = struct {...}` -> class.
            defs={
                "Decl": _FN,
                "TestDecl": DefRule(ChunkKind.FUNCTION, default_name="test"),
            },
            anchor_pattern_types=frozenset({"Decl"}),
            anchor_pattern=re.compile(r"^(?:pub\s+)?(?:const|var)\s+\w+\s*=\s*@import\s*\("),
        ),
        # Starlark (Bazel BUILD/.bzl, Tiltfile) is a Python subset: the Python grammar reads it.
        LanguageSpec(
            "starlark",
            grammar="python",
            defs={"function_definition": _FN},
            anchor_pattern_types=frozenset({"expression_statement"}),
            anchor_pattern=re.compile(r"^load\s*\("),
            opaque=_PYTHON_DATA,
        ),
    ]
}

AST_LANGUAGES = frozenset(_SPECS)
"""Languages chunked by definitions (tree-sitter)."""


def spec_for(language: str) -> LanguageSpec | None:
    """The node-type table of `language`, or None when it has no symbol-aware chunking."""
    return _SPECS.get(language)
