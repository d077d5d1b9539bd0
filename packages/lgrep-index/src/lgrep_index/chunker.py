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

Each code chunk also carries `refs` (lgrep_core.domain.structure): the definitions whose signature starts
in it, and the calls, type uses and imports on its lines (chunking._refs), each line given to the
tightest chunk that spans it. Search builds callers, callees and skeletons from them.

Token counts are estimates (`chunking._lines`): characters without indentation / 4. Newlines are
normalised (CRLF and CR count as one line break, as editors do), so line numbers match editors.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from lgrep_core.domain.models import Chunk, ChunkKind, ContentType
from lgrep_core.domain.secrets import redact_path
from lgrep_core.domain.structure import STRUCTURE_VERSION, Definition, Reference, encode_entries

from lgrep_index.chunking._code import CodeOutline, outline_code
from lgrep_index.chunking._config import config_items
from lgrep_index.chunking._docs import markdown_items, rst_items
from lgrep_index.chunking._emit import SPLIT_MARKER, Emitter, Item, Planned
from lgrep_index.chunking._lines import MAX_LINE_CHARS, Lines
from lgrep_index.chunking._refs import file_refs
from lgrep_index.languages import (
    TEXT_LANGUAGE,
    LanguageSpec,
    content_type_for,
    detect_language,
    language_from_shebang,
    spec_for,
)

__all__ = ["CHUNKER_VERSION", "MAX_LINE_CHARS", "SPLIT_MARKER", "chunk_file", "detect_language", "overflow_text"]

log = logging.getLogger(__name__)

CHUNKER_VERSION = f"4.{STRUCTURE_VERSION}"
"""Bump whenever the chunks produced for some input change; stored in the index metadata.
2: the indexer redacts secrets before chunking (lgrep_core.domain.secrets), so indexes of version 1 may hold
secrets verbatim and must be rebuilt.
3: chunks carry their definitions and references (`refs`); the suffix is the format's version. A
long `export { ... } from` counts as an import however long it is (it was cut at 300 bytes). An
index of an older chunker with the same embedding model is re-chunked by the next run, keeping its
vectors (ADR 0016).
4: the scanner reads more forms (unquoted config values with punctuation, Makefile, markup, command
lines, Vault and other token formats; ADR 0005), so chunks of version 3 may hold secrets it now finds."""

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
    structure: bool = True,
) -> list[Chunk]:
    """Cut one file into searchable chunks, in file order.

    `path` is project-relative ('/'-separated) and only labels the chunks and names the anchor.
    `language` None means: detect it from the path, then from a shebang; unknown files are cut
    into windows labelled "text". `use_ast=False` cuts every file into windows. `structure=False`
    leaves `refs` empty (about half the chunking time, for callers that do not store it). Never raises on
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
    found: _Structure | None = None
    if use_ast and _structured_ok(text, lines):
        try:
            planned, found = _structured(path, lang, text, lines, emitter, refs=structure)
        except Exception:  # a chunker bug or grammar failure costs this file its structure, not the run
            log.warning(
                "structured chunking of %s (%s) failed; using line windows", redact_path(path), lang, exc_info=True
            )
            planned, found = [], None
    if not planned:
        planned = emitter.split(0, lines.count - 1, ChunkKind.WINDOW)
    chunks = _render(path, lang, content_type, lines, planned)
    if found is not None:
        chunks = _with_refs(chunks, found)
    return chunks


def _structured_ok(text: str, lines: Lines) -> bool:
    if len(text) > MAX_STRUCTURED_CHARS:
        return False
    return len(text) < 4 * MINIFIED_AVG_LINE_CHARS or len(text) / lines.count <= MINIFIED_AVG_LINE_CHARS


@dataclass(slots=True)
class _Structure:
    """A code file's definitions and references, before they are handed to its chunks."""

    definitions: list[Definition]
    references: list[Reference]


def _structured(
    path: str, lang: str, text: str, lines: Lines, emitter: Emitter, *, refs: bool
) -> tuple[list[Planned], _Structure | None]:
    """Definition/section/key chunks, or [] when the file has none (the caller cuts windows), and
    for code the file's structure (also when it has no definitions: a script's calls count)."""
    if lang == "markdown":
        return emitter.emit(markdown_items(lines)), None
    if lang == "rst":
        return emitter.emit(rst_items(lines)), None
    if lang in ("json", "yaml", "toml", "ini"):
        return emitter.emit(config_items(lang, lines, text)), None
    spec = spec_for(lang)
    if spec is None:
        return [], None
    outline = outline_code(spec, lines, text, module_symbol=_module_symbol(path), max_tokens=emitter.max_tokens)
    structure = _Structure(_definitions(outline.items), _references(path, lang, spec, outline)) if refs else None
    if not outline.items:
        return [], structure
    return emitter.emit(outline.items, [outline.anchor] if outline.anchor is not None else None), structure


def _references(path: str, lang: str, spec: LanguageSpec, outline: CodeOutline) -> list[Reference]:
    try:
        return file_refs(lang, spec.parser_name, outline.tree.root_node)
    except Exception:  # a query bug costs the file its references, never its chunks
        log.warning("finding references in %s (%s) failed", redact_path(path), lang, exc_info=True)
        return []


def _definitions(items: list[Item]) -> list[Definition]:
    """Every definition of the outline, nested ones included; `line` is where its signature starts."""
    out: list[Definition] = []
    stack = list(reversed(items))
    while stack:
        it = stack.pop()
        if it.symbol:
            line = (it.head[0] if it.head is not None else it.start) + 1
            out.append(Definition(it.symbol, line, it.end + 1, it.scope, str(it.kind)))
        stack.extend(reversed(it.children))
    return out


def _with_refs(chunks: list[Chunk], structure: _Structure) -> list[Chunk]:
    """Each definition and reference goes to the tightest chunk spanning its line (the anchor only
    takes lines no other chunk has)."""
    if not chunks:
        return chunks
    last = max(c.end_line for c in chunks)
    owner = [-1] * (last + 2)
    width = [1 << 30] * (last + 2)
    for i, c in enumerate(chunks):
        span = c.end_line - c.start_line + (1 << 20 if c.kind is ChunkKind.ANCHOR else 0)
        for line in range(c.start_line, c.end_line + 1):
            if span < width[line]:
                owner[line] = i
                width[line] = span
    defs: list[list[Definition]] = [[] for _ in chunks]
    refs: list[list[Reference]] = [[] for _ in chunks]
    for d in structure.definitions:
        i = owner[d.line] if 0 <= d.line <= last else -1
        if i >= 0:
            defs[i].append(d)
    for r in structure.references:
        i = owner[r.line] if 0 <= r.line <= last else -1
        if i >= 0:
            refs[i].append(r)
    out: list[Chunk] = []
    for i, c in enumerate(chunks):
        if defs[i] or refs[i]:
            unique = sorted(set(refs[i]), key=lambda r: (r.line, r.kind, r.name, r.qualifier, r.member))
            out.append(replace(c, refs=encode_entries(defs[i], unique)))
        else:
            out.append(c)
    return out


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


def overflow_text(lines: list[str], chunk: Chunk) -> str:
    """The text past MAX_LINE_CHARS of each long line of a chunk (its content holds the rest)."""
    return "\n".join(
        line[MAX_LINE_CHARS:] for line in lines[chunk.start_line - 1 : chunk.end_line] if len(line) > MAX_LINE_CHARS
    )
