"""The read calls beside search: a file's lines, definitions by name, code related to a place.

Each answers from the project's snapshot and, for file contents, from the file on disk. Only files
the index holds are served (so nothing the walker leaves out — ignored, binary, secret, outside the
root — can be read through them), and their text goes through the same secret redaction as the index.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from lgrep_core.domain.errors import InvalidRequestError, NotFoundError
from lgrep_core.domain.models import (
    ChunkKind,
    ContentType,
    FileList,
    FileSlice,
    GetFileRequest,
    IndexedFile,
    Location,
    MatchType,
    RelatedResult,
    SearchHit,
    SymbolMatch,
)
from lgrep_core.domain.pathnames import read_project_file
from lgrep_core.domain.secrets import sanitize
from lgrep_core.domain.text import decode_text
from lgrep_core.storage.reader import ProjectReader

from .corpus import Corpus
from .fuzzy import symbol_parts
from .pathfilter import path_matcher
from .searcher import snippet
from .structure import CodeGraph, related_by_structure

__all__ = [
    "MAX_FILE_BYTES",
    "find_related",
    "find_symbol",
    "get_file",
    "indexed_text",
    "language_of",
    "list_files",
    "location",
    "slice_lines",
]

# A GetFile answer carries at most this much text; longer files are cut at a line end (`truncated`).
MAX_FILE_BYTES = 1_000_000
# FindRelated: neighbours by vector come from this many candidates before the per-file cap.
RELATED_DEPTH = 200
RELATED_PER_FILE = 2
_CONTENT_TYPES = frozenset(t.value for t in ContentType)


def location(corpus: Corpus, i: int) -> Location:
    """Where chunk `i` of a snapshot is and what it is."""
    content_type = corpus.content_types[i]
    return Location(
        path=corpus.paths[i],
        start_line=int(corpus.start_line[i]),
        end_line=int(corpus.end_line[i]),
        symbol=corpus.symbols[i],
        kind=corpus.kind_of(i),
        language=corpus.languages[i],
        scope=corpus.scopes[i],
        signature=corpus.signatures[i],
        content_type=ContentType(content_type) if content_type in _CONTENT_TYPES else None,
    )


# ------------------------------------------------------------------------------------ GetFile


def get_file(reader: ProjectReader, corpus: Corpus, request: GetFileRequest) -> FileSlice:
    """Lines of an indexed file as they are on disk now.

    Raises:
        NotFoundError: the file is not in the index, or is gone from disk.
        InvalidRequestError: the path leads outside the project (a symlink) or is not a regular file.
    """
    path = request.path
    clean, st = _indexed_text(reader.root, corpus, path)
    content, start, last, total, truncated = slice_lines(path, clean, request.start_line, request.end_line)
    records = reader.manifest(corpus.version, [path]) if corpus.version is not None else {}
    rec = records.get(path)
    # the file that was read, not a second look-up of its path (which may be gone or replaced by now)
    stale = rec is None or not rec.matches(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, unknown_matches=True)
    return FileSlice(
        path=path,
        language=rec.language if rec is not None else language_of(corpus, path),
        content=content,
        start_line=start,
        end_line=last,
        total_lines=total,
        stale=stale,
        truncated=truncated,
    )


def indexed_text(root: Path, corpus: Corpus, path: str) -> str:
    """The text of an indexed file as it is on disk now, secrets redacted as the index has them.

    Raises:
        NotFoundError: the file is not in the index, is gone from disk, or holds credentials.
        InvalidRequestError: the path leads outside the project (a symlink) or is not a regular file.
    """
    return _indexed_text(root, corpus, path)[0]


def _indexed_text(root: Path, corpus: Corpus, path: str) -> tuple[str, os.stat_result]:
    """`indexed_text`, and the fstat of the file it read."""
    if path not in corpus.file_numbers:
        raise NotFoundError(
            f"{path} is not in the index of {root} (not a file there, or one lgrep leaves out: ignored, "
            "binary, too large or a credential)"
        )
    # Opened name by name below the root, no symlink followed (lgrep_core.domain.pathnames): a folder of the
    # path swapped for a symlink after any check cannot lead the read out of the project.
    data, st = read_project_file(root, path, 4 * MAX_FILE_BYTES + 1)
    clean = sanitize(decode_text(data)).text
    if clean is None:
        raise NotFoundError(f"{path} holds credentials; lgrep does not serve it")
    return clean, st


def slice_lines(path: str, text: str, start_line: int, end_line: int) -> tuple[str, int, int, int, bool]:
    """Lines `start_line`..`end_line` of a file's text (1-based, inclusive, 0 for its start or end),
    cut at a line end past MAX_FILE_BYTES: (content, first line, last line, lines in the file, cut).

    Raises InvalidRequestError when the start is past the end of the file."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    total = len(lines)
    start = max(1, start_line or 1)
    end = min(total, end_line or total)
    if start > max(total, 1):
        raise InvalidRequestError(f"{path} has {total} lines; line {start} is past its end")
    picked: list[str] = []
    size = 0
    truncated = False
    for line in lines[start - 1 : end]:
        size += len(line.encode("utf-8", "surrogateescape")) + 1
        if size > MAX_FILE_BYTES and picked:
            truncated = True
            break
        picked.append(line)
    last = start + len(picked) - 1 if picked else start - 1
    return "\n".join(picked) + ("\n" if picked else ""), start, last, total, truncated


def language_of(corpus: Corpus, path: str) -> str:
    """The language an indexed file was chunked as ("" when it has no chunks)."""
    chunks = corpus.chunks_of(corpus.file_numbers[path])
    return corpus.languages[chunks.start] if len(chunks) else ""


# ---------------------------------------------------------------------------------- ListFiles


def list_files(
    corpus: Corpus, *, path_glob: str | None = None, languages: tuple[str, ...] = (), limit: int | None = None
) -> FileList:
    """The files of a snapshot by path, with language, content type, chunks and last line."""
    wanted_langs = {lang.lower() for lang in languages}
    matches_path = path_matcher(path_glob) if path_glob else None
    found: list[IndexedFile] = []
    total = 0
    for file_no, path in sorted(enumerate(corpus.files), key=lambda t: t[1]):
        chunks = corpus.chunks_of(file_no)
        if not len(chunks):
            continue
        first = chunks.start
        if wanted_langs and corpus.languages[first] not in wanted_langs:
            continue
        if matches_path is not None and not matches_path(path):
            continue
        total += 1
        if limit is None or len(found) < limit:
            content_type = corpus.content_types[first]
            found.append(
                IndexedFile(
                    path,
                    corpus.languages[first],
                    ContentType(content_type) if content_type in _CONTENT_TYPES else None,
                    len(chunks),
                    int(corpus.end_line[chunks.start : chunks.stop].max()),
                )
            )
    return FileList(tuple(found), total)


_CONTENT_TYPES = {c.value for c in ContentType}


# --------------------------------------------------------------------------------- FindSymbol


def find_symbol(
    corpus: Corpus,
    name: str,
    *,
    limit: int,
    kinds: tuple[ChunkKind, ...] = (),
    languages: tuple[str, ...] = (),
    path_glob: str | None = None,
) -> list[SymbolMatch]:
    """Definitions named `name` (typo-tolerant; `Auth.verify` also checks the enclosing scope),
    best first: exact names before near ones, definitions before anchors."""
    parts = symbol_parts(name)
    if not parts:
        raise InvalidRequestError(f"{name!r} is not a symbol name")
    last, qualifiers = parts[-1], [q.lower() for q in parts[:-1]]
    wanted_kinds = {k.value for k in kinds}
    wanted_langs = {lang.lower() for lang in languages}
    matches_path = path_matcher(path_glob) if path_glob else None
    found: list[tuple[float, int, bool]] = []
    for m in corpus.symbol_index.match(last):
        for i in corpus.symbol_index.chunks_defining(m.name).tolist():
            if wanted_kinds and corpus.kinds[i] not in wanted_kinds:
                continue
            if wanted_langs and corpus.languages[i] not in wanted_langs:
                continue
            if matches_path is not None and not matches_path(corpus.paths[i]):
                continue
            scope = [s.lower() for s in corpus.scopes[i][:-1]]
            if qualifiers and scope[-len(qualifiers) :] != qualifiers:
                continue
            exact = corpus.symbols[i] == last
            score = m.score + (0.05 if exact else 0.0) - (0.1 if corpus.kinds[i] == ChunkKind.ANCHOR.value else 0.0)
            found.append((score, i, exact or m.how == "exact"))
    found.sort(key=lambda t: (-t[0], corpus.paths[t[1]], int(corpus.start_line[t[1]])))
    return [SymbolMatch(location(corpus, i), round(score, 6), exact) for score, i, exact in found[:limit]]


# -------------------------------------------------------------------------------- FindRelated


def anchor_chunk(corpus: Corpus, path: str, line: int) -> int:
    """The chunk that spans `line` of `path` most tightly (a method rather than its class).

    Raises NotFoundError when the file is not indexed or no chunk spans the line."""
    file_no = corpus.file_numbers.get(path)
    if file_no is None:
        raise NotFoundError(f"{path} is not in the index")
    best = -1
    for i in corpus.chunks_of(file_no):
        if corpus.start_line[i] <= line <= corpus.end_line[i] and corpus.kinds[i] != ChunkKind.ANCHOR.value:
            span = int(corpus.end_line[i] - corpus.start_line[i])
            if best < 0 or span < int(corpus.end_line[best] - corpus.start_line[best]):
                best = i
    if best < 0:
        raise NotFoundError(f"no indexed code spans line {line} of {path}")
    return best


def find_related(corpus: Corpus, path: str, line: int, *, limit: int, graph: CodeGraph | None = None) -> RelatedResult:
    """The chunks most related to the one at `path:line`, never the anchor itself: its callers and
    callees (with `graph`), the chunks nearest in meaning (by their vectors; by shared terms, BM25,
    while its vector is pending) and those referencing the same names. Each hit's `match` says
    which relations found it; at most a few per file come from meaning or names alone."""
    anchor = anchor_chunk(corpus, path, line)
    row = int(corpus.vec_row[anchor])
    if row >= 0 and len(corpus.matrix):
        sims = np.full(len(corpus), -np.inf, dtype=np.float32)
        has = corpus.vec_row >= 0
        sims[has] = (corpus.matrix @ corpus.matrix[row])[corpus.vec_row[has]]
        channel = MatchType.VECTOR
    else:
        terms = [*corpus.symbols[anchor].split(), *corpus.contents[anchor].split()[:64]]
        sims = corpus.lexical.scores([t.lower() for t in terms])
        top = float(sims.max()) if len(sims) else 0.0
        sims = sims / top if top > 0 else sims
        sims[sims <= 0] = -np.inf
        channel = MatchType.BM25
    sims[anchor] = -np.inf
    scored: dict[int, tuple[float, set[MatchType]]] = {}
    for i in np.argsort(-sims, kind="stable")[:RELATED_DEPTH].tolist():
        if np.isfinite(sims[i]):
            scored[i] = (float(sims[i]), {channel})
    if graph is not None:
        for i, (score, hows) in related_by_structure(graph, anchor).items():
            old, old_hows = scored.get(i, (-1.0, set()))
            scored[i] = (max(old, score), old_hows | hows)
    # found several ways: a little ahead of one found one way with the same score
    ranked = sorted(scored.items(), key=lambda t: (-(t[1][0] + 0.05 * (len(t[1][1]) - 1)), t[0]))
    per_file: dict[int, int] = {}
    hits: list[SearchHit] = []
    for i, (score, hows) in ranked:
        if len(hits) >= limit:
            break
        f = int(corpus.file_of[i])
        by_calls = bool(hows & _CALL_RELATIONS)
        if not by_calls and per_file.get(f, 0) >= RELATED_PER_FILE:
            continue
        per_file[f] = per_file.get(f, 0) + 1
        text, cut = snippet(corpus.contents[i])
        hits.append(
            SearchHit(
                path=corpus.paths[i],
                start_line=int(corpus.start_line[i]),
                end_line=int(corpus.end_line[i]),
                symbol=corpus.symbols[i],
                kind=corpus.kind_of(i),
                language=corpus.languages[i],
                score=round(score, 6),
                content=text,
                match=tuple(sorted(hows)),
                truncated=cut or bool(corpus.cut[i]),
            )
        )
    return RelatedResult(anchor=location(corpus, anchor), related=tuple(hits))


_CALL_RELATIONS = frozenset({MatchType.CALLER, MatchType.CALLEE})
