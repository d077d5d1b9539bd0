"""A file's outline for skeletons: its imports and definitions as the chunker's parser sees them.

Made from the text it is given (the file as it is now), so a skeleton is never older than the file.
Search renders it (lgrep_search.structure); it reaches search as an `Outliner` the process that
runs both hands over, so search itself needs no parser.
"""

from __future__ import annotations

import logging
import re

from lgrep_core.domain.structure import FileOutline, OutlineItem
from tree_sitter import Node

from lgrep_index.chunker import MAX_STRUCTURED_CHARS
from lgrep_index.chunking._code import is_anchor, outline_code
from lgrep_index.chunking._docs import markdown_items, rst_items
from lgrep_index.chunking._emit import Item
from lgrep_index.chunking._lines import Lines
from lgrep_index.chunking._ts import end_row
from lgrep_index.languages import LanguageSpec, detect_language, language_from_shebang, spec_for

__all__ = ["outline_file"]

log = logging.getLogger(__name__)

_COMMENT_LEAD = re.compile(r"^\s*(?:///?|//!|/\*\*?|\*|#+!?|--+|;+|%+|\{-\|?|<!--)\s?")
_COMMENT_START = re.compile(r"^\s*(?://|/\*|\*|#(?!\[)|--|;|%|\{-|<!--)")
_COMMENT_TAIL = re.compile(r"\s*(?:\*/|-\}|-->)\s*$")
_DOCSTRING = re.compile(r"""^\s*(?:[rRbBuU]{0,2})("{3}|'{3}|"|')(.*)$""")
_DOC_MAX = 160
SIGNATURE_MAX_LINES = 40
_DOCSTRING_LANGUAGES = frozenset({"python", "starlark"})


def outline_file(path: str, text: str) -> FileOutline | None:
    """The outline of `text` as the file `path`; None when lgrep knows no structure for its language."""
    language = detect_language(path)
    if language is None and text.startswith("#!"):
        language = language_from_shebang(text.split("\n", 1)[0])
    if language is None or len(text) > MAX_STRUCTURED_CHARS:
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = Lines(text)
    if language in ("markdown", "rst"):
        items = markdown_items(lines) if language == "markdown" else rst_items(lines)
        return FileOutline(language, (), tuple(_item(it, lines, docs=True) for it in items))
    spec = spec_for(language)
    if spec is None:
        return None
    # whole signatures (the chunker repeats at most 6 lines of one in front of a split piece)
    code = outline_code(spec, lines, text, module_symbol="", max_tokens=1 << 30, head_max_lines=SIGNATURE_MAX_LINES)
    imports = _imports(spec, code.src, code.tree.root_node)
    docstrings = language in _DOCSTRING_LANGUAGES
    return FileOutline(language, imports, tuple(_item(it, lines, docstrings=docstrings) for it in code.items))


def _imports(spec: LanguageSpec, src: bytes, root: Node) -> tuple[tuple[int, int], ...]:
    """Line ranges of the file's top-level import / package / use statements, whole (a multi-line
    `use a::{...};` with its closing line), wherever they stand (Zig imports at the bottom)."""
    out: list[tuple[int, int]] = []
    for node in root.named_children:
        # `mod x;` is an import, `mod tests { ... }` is code (the outline has its definitions)
        if "comment" not in node.type and node.child_by_field_name("body") is None and is_anchor(spec, src, node):
            out.append((node.start_point[0] + 1, end_row(node) + 1))
    return tuple(out)


def _item(it: Item, lines: Lines, *, docs: bool = False, docstrings: bool = False) -> OutlineItem:
    sig_start, sig_end = it.head if it.head is not None else (it.start, it.start)
    if docs:
        sig_start = sig_end = it.start
    return OutlineItem(
        kind=str(it.kind),
        name=it.symbol,
        scope=it.scope,
        start_line=it.start + 1,
        signature_start=sig_start + 1,
        signature_end=sig_end + 1,
        end_line=it.end + 1,
        doc="" if docs else _doc(lines, it.start, sig_start, sig_end, it.end, docstrings=docstrings),
        children=tuple(_item(c, lines, docs=docs, docstrings=docstrings) for c in it.children),
        # what stands between its comments and its signature: decorators and attributes, with their
        # arguments (@property, #[test], @Deprecated("...")); they change what the definition is
        attributes=tuple(
            row + 1
            for row in range(it.start, sig_start)
            if lines.raw[row].strip() and not _COMMENT_START.match(lines.raw[row])
        ),
    )


def _doc(lines: Lines, start: int, sig_start: int, sig_end: int, end: int, *, docstrings: bool) -> str:
    """The first line of the docstring under the signature (Python) or else of the comment block
    above it (attached to the definition by the chunker)."""
    raw = lines.raw
    for row in range(sig_end + 1, min(end, sig_end + 3) + 1) if docstrings else ():
        line = raw[row].strip()
        if not line:
            continue
        m = _DOCSTRING.match(line)
        if m is not None:
            body = m.group(2).strip()
            quote = m.group(1)
            if body.endswith(quote):
                body = body[: -len(quote)].strip()
            if not body and row + 1 <= end:
                body = raw[row + 1].strip()
            return body[:_DOC_MAX]
        break
    for row in range(start, sig_start):
        if not _COMMENT_START.match(raw[row]):
            continue  # an attribute or decorator (`#[cfg(test)]`, `@Deprecated(`, `[Obsolete]`), or its arguments
        line = _COMMENT_TAIL.sub("", _COMMENT_LEAD.sub("", raw[row])).strip()
        if line:
            return line[:_DOC_MAX]
    return ""
