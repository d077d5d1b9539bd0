"""Code-aware text helpers shared by the indexer (what it stores) and the searcher (what it asks)."""

from __future__ import annotations

import re

__all__ = ["identifier_parts", "search_text"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# camelCase / PascalCase / acronym boundaries: parseHTTPResponse -> parse HTTP Response
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifier_parts(identifier: str) -> list[str]:
    """`parseHTTPResponse` -> ['parse', 'http', 'response']; `config_parser` -> ['config', 'parser']."""
    parts: list[str] = []
    for piece in identifier.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return parts


def search_text(path: str, symbol: str, content: str) -> str:
    """What the full-text index sees: path words, the symbol, the content, then the pieces of every
    compound identifier in it (the tokenizer splits on punctuation but not on case), so `user` finds
    `getUserName` while `getusername` still matches the whole identifier."""
    extra: list[str] = []
    seen: set[str] = set()
    for ident in _IDENT.findall(f"{symbol} {content}"):
        if ident in seen:
            continue
        seen.add(ident)
        parts = identifier_parts(ident)
        if len(parts) > 1 and any(c.isupper() for c in ident[1:]):
            extra.extend(parts)
    return f"{path}\n{symbol}\n{content}\n{' '.join(extra)}"
