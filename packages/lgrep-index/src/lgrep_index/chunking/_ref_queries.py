"""What each language's references look like to tree-sitter: one query a language (`QUERIES`, its
captures named as `_refs` reads them: `@callee`, `@name`/`@qual`, `@type`, `@import`,
`@local`/`@module`) and the calls that are no references to code (`NOT_CALLS`)."""

from __future__ import annotations

__all__ = ["NOT_CALLS", "QUERIES"]

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
QUERIES: dict[str, str] = {
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
NOT_CALLS: dict[str, frozenset[str]] = {
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
