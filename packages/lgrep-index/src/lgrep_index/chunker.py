"""Symbol-aware chunking: one chunk per definition, by walking tree-sitter syntax trees.

`chunk_file` is the whole API. What it produces, by file kind:

- **code** (the 19 languages of `languages.AST_LANGUAGES`, plus Starlark): an ANCHOR chunk
  (imports, package/module clauses, the leading comment or docstring; at most 40 lines), one
  chunk per function / method / class-like definition with its scope chain and signature, and
  BLOCK chunks for top-level code between definitions. A class that fits in `max_tokens` is one
  chunk; a bigger one is a header chunk (signature, fields, up to the first member) plus a chunk
  per member. A file without definitions is cut into line windows instead.
- **Markdown / RST**: a SECTION chunk per heading (scope = the heading chain).
- **JSON / YAML / TOML / INI**: a CONFIG chunk per top-level key (see `chunking._config`).
- **anything else**, and any file whose structured chunking fails: WINDOW chunks of about
  `max_tokens` with `overlap_tokens` of overlap.

Spans are 1-based inclusive line numbers of the file. Content is those lines (lines longer than
`MAX_LINE_CHARS` are cut), except for a piece of a split definition that starts below the
definition's signature: its content is the signature lines, a line holding only `SPLIT_MARKER`,
and then exactly the piece's lines. So the embedder always sees the signature, and a reader can
map content back to lines by dropping everything up to the marker line.

Token counts are estimates (`chunking._lines`): characters without indentation / 4. Newlines are
normalised (CRLF and CR count as one line break, as editors do), so line numbers match editors.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath

from lgrep_core.models import Chunk, ChunkKind, ContentType

from lgrep_index.chunking._code import outline_code
from lgrep_index.chunking._config import config_items
from lgrep_index.chunking._docs import markdown_items, rst_items
from lgrep_index.chunking._emit import SPLIT_MARKER, Emitter, Planned
from lgrep_index.chunking._lines import MAX_LINE_CHARS, Lines
from lgrep_index.languages import (
    TEXT_LANGUAGE,
    content_type_for,
    detect_language,
    language_from_shebang,
    spec_for,
)

__all__ = ["CHUNKER_VERSION", "MAX_LINE_CHARS", "SPLIT_MARKER", "chunk_file", "detect_language"]

log = logging.getLogger(__name__)

CHUNKER_VERSION = "2"
"""Bump whenever the chunks produced for some input change; stored in the index metadata.
2: the indexer redacts secrets before chunking (lgrep_core.secrets), so indexes of version 1 may hold
secrets verbatim and must be rebuilt."""

MIN_MAX_TOKENS = 32
"""Smaller budgets would cut every definition into single lines; the settings floor is 32 too."""

MAX_STRUCTURED_CHARS = 2_000_000
"""Bigger files (generated code, data dumps) are cut into windows without parsing."""

MINIFIED_AVG_LINE_CHARS = 300
"""A file whose lines average more than this is minified or data: windows, not definitions."""

_MODULE_INDEX_STEMS = frozenset({"__init__", "index", "mod"})


def chunk_file(
    path: str,
    text: str,
    *,
    language: str | None = None,
    max_tokens: int = 512,
    overlap_tokens: int = 64,
    use_ast: bool = True,
) -> list[Chunk]:
    """Cut one file into searchable chunks, in file order.

    `path` is project-relative ('/'-separated) and only labels the chunks and names the anchor.
    `language` None means: detect it from the path, then from a shebang; unknown files are cut
    into windows labelled "text". `use_ast=False` cuts every file into windows. Never raises on
    odd input (syntax errors, binary-looking text, huge lines); an empty or blank file gives [].
    """
    detected = language if language is not None else detect_language(path)
    if detected is None and text.startswith("#!"):
        detected = language_from_shebang(text[: text.find("\n")] if "\n" in text else text)
    lang = detected or TEXT_LANGUAGE
    content_type = content_type_for(detected)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = Lines(text)
    if lines.count == 0 or lines.all_blank():
        return []
    max_tokens = max(max_tokens, MIN_MAX_TOKENS)
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))
    emitter = Emitter(lines, max_tokens, overlap_tokens)

    planned: list[Planned] = []
    if use_ast and _structured_ok(text, lines):
        try:
            planned = _structured(path, lang, text, lines, emitter)
        except Exception:  # a chunker bug or grammar failure costs this file its structure, not the run
            log.warning("structured chunking of %s (%s) failed; using line windows", path, lang, exc_info=True)
            planned = []
    if not planned:
        planned = emitter.split(0, lines.count - 1, ChunkKind.WINDOW)
    return _render(path, lang, content_type, lines, planned)


def _structured_ok(text: str, lines: Lines) -> bool:
    if len(text) > MAX_STRUCTURED_CHARS:
        return False
    return len(text) < 4 * MINIFIED_AVG_LINE_CHARS or len(text) / lines.count <= MINIFIED_AVG_LINE_CHARS


def _structured(path: str, lang: str, text: str, lines: Lines, emitter: Emitter) -> list[Planned]:
    """Definition/section/key chunks, or [] when the file has none (the caller cuts windows)."""
    if lang == "markdown":
        return emitter.emit(markdown_items(lines))
    if lang == "rst":
        return emitter.emit(rst_items(lines))
    if lang in ("json", "yaml", "toml", "ini"):
        return emitter.emit(config_items(lang, lines, text))
    spec = spec_for(lang)
    if spec is None:
        return []
    outline = outline_code(spec, lines, text, module_symbol=_module_symbol(path), max_tokens=emitter.max_tokens)
    if not outline.items:
        return []
    return emitter.emit(outline.items, [outline.anchor] if outline.anchor is not None else None)


def _module_symbol(path: str) -> str:
    """`pkg/auth.py` -> "auth"; `pkg/__init__.py`, `src/index.ts`, `foo/mod.rs` -> the folder name."""
    p = PurePosixPath(path.replace("\\", "/"))
    stem = p.stem
    if stem in _MODULE_INDEX_STEMS and p.parent.name:
        return p.parent.name
    return stem


def _render(path: str, language: str, content_type: ContentType, lines: Lines, planned: list[Planned]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for p in planned:
        content = p.render(lines)
        if not content.strip():
            continue
        chunks.append(
            Chunk(
                path=path,
                language=language,
                start_line=p.start + 1,
                end_line=p.end + 1,
                content=content,
                kind=p.kind,
                symbol=p.symbol,
                scope=p.scope,
                signature=p.signature,
                content_type=content_type,
            )
        )
    return chunks
