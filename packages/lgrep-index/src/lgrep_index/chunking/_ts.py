"""tree-sitter plumbing shared by the code and config outliners: a parser cache and node helpers."""

from __future__ import annotations

import threading
from typing import cast

from tree_sitter import Node, Parser
from tree_sitter_language_pack import SupportedLanguage, get_parser

__all__ = ["end_row", "parser_for"]

_local = threading.local()


def parser_for(grammar: str) -> Parser:
    """One parser per grammar and thread (parsers are not thread-safe; making one costs ~1 ms)."""
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = {}
        _local.parsers = parsers
    parser = parsers.get(grammar)
    if parser is None:
        parser = get_parser(cast("SupportedLanguage", grammar))  # names come from our own tables
        parsers[grammar] = parser
    return parser


def end_row(node: Node) -> int:
    """The 0-based last line of `node`, not counting a final newline it swallowed."""
    row, col = node.end_point
    if col == 0 and row > node.start_point[0]:
        return row - 1
    return row
