"""The in-memory snapshot a searcher answers from: chunk metadata as arrays, the BM25 postings, the
symbol table and the vector matrix. LanceDB stays the store of record. A first load costs one scan of
the chunks and vectors tables; a later version of the index is applied by `updated`, which reads and
analyses only the files that changed (their keys come from the writer's change log)."""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from operator import itemgetter
from typing import Any, overload

import numpy as np
from lgrep_core.domain.errors import StorageError
from lgrep_core.domain.models import Chunk, ChunkKind
from lgrep_core.domain.text import analyze, identifier_terms, path_terms
from lgrep_core.storage.reader import ChangeSet, IndexVersion, ProjectReader
from lgrep_core.storage.schema import path_key

from .fuzzy import SymbolIndex
from .lexical import FieldWeights, LexicalIndex, Vocabulary, postings
from .messages import MessageIndex
from .signals.path_match import path_words
from .texts import ChunkTexts, pack

__all__ = ["COLUMNS", "RESIDENT_BYTES_PER_CHUNK", "Corpus", "file_name_key"]

log = logging.getLogger(__name__)

COLUMNS = [
    "path",
    "start_line",
    "end_line",
    "symbol",
    "scope",
    "signature",
    "kind",
    "language",
    "content_type",
    "content",
    "search_text",
    "vec_key",
    "refs",
]


# What a loaded snapshot costs the process per chunk beyond its arrays and compressed texts: the
# per-chunk Python lists (paths, symbols, scopes, signatures, keys), the symbol index, the lookups
# built on first use (files' BM25, path words, module names) and what the load leaves in the heap.
# Measured 2026-11-27 on a 41,633-chunk snapshot: 179 MB of RSS with every lookup built, 109 MB of it
# arrays, texts and vocabulary (docs/benchmarks.md, "Memory ceilings, second part"; 2,900 before the
# term caches were made small, ADR 0030). Without it the estimate was half the cost, and a daemon's
# 1 GB snapshot budget let ~2 GB stay resident.
RESIDENT_BYTES_PER_CHUNK = 1800

# A full load reads the short columns whole (they are kept), the texts a page at a time.
_TEXT_COLUMNS = ["path", "content", "search_text", "refs"]
_SHORT_COLUMNS = [c for c in COLUMNS if c not in ("content", "search_text", "refs")]
# Rows per page of texts: ~3 MB of code; the page's strings are garbage before the next is read.
LOAD_PAGE_ROWS = 1024
_EMPTY_TEXT = pack("")
_FIELDS = FieldWeights()

_KINDS = frozenset(k.value for k in ChunkKind)
# A package's own file, which a module path names by its folder (corpus.module_path).
_PACKAGE_FILES = frozenset({"__init__", "index", "mod"})


def file_name_key(path: str) -> str:
    """`lib/sinatra/indifferent_hash.rb` -> `indifferenthash`; `Dapper/SqlMapper.Async.cs` -> `sqlmapper.async`."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower().replace("_", "").replace("-", "")


@dataclass(eq=False)
class Corpus:
    paths: list[str]  # per chunk
    file_of: np.ndarray  # per chunk: index into `files`
    files: list[str]
    start_line: np.ndarray
    end_line: np.ndarray
    symbols: list[str]
    scopes: list[tuple[str, ...]]  # enclosing definitions, outermost first
    signatures: list[str]
    kinds: list[str]
    languages: list[str]
    content_types: list[str]
    contents: ChunkTexts  # compressed: only the shown and checked chunks are ever decompressed
    refs: ChunkTexts  # per chunk: what it defines and references (lgrep_core.domain.structure), compressed
    cut: np.ndarray  # bool per chunk: its content cut long lines (the rest is searchable, not shown)
    vec_keys: list[str]  # per chunk: its embedding key
    vec_row: np.ndarray  # per chunk: row of `matrix`, -1 while its vector is pending
    matrix: np.ndarray  # unit vectors
    matrix_keys: list[str]  # per row of `matrix`: its embedding key
    lexical: LexicalIndex
    symbol_index: SymbolIndex
    version: IndexVersion | None  # None for a fixed snapshot (benchmarks)
    load_ms: float
    # The buffer `matrix` is the first rows of, when vectors are still being filled in (`_with_vectors`).
    matrix_room: _MatrixRoom | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.paths)

    def kind_of(self, i: int) -> ChunkKind | None:
        """Chunk `i`'s kind (None for a value this version does not know)."""
        kind = self.kinds[i]
        return ChunkKind(kind) if kind in _KINDS else None

    def estimated_bytes(self) -> int:
        """About what this snapshot costs the process: its arrays exactly, its Python objects (the
        per-chunk lists, the vocabulary) and what the load leaves in the heap by a measured constant
        per chunk (`RESIDENT_BYTES_PER_CHUNK`)."""
        lex = self.lexical
        arrays = self.matrix.nbytes + lex._docs.nbytes + lex._tf.nbytes + lex._weights.nbytes + lex._idf.nbytes
        text = self.contents.nbytes + self.refs.nbytes + 30 * len(lex.vocab)  # packed: ~28 bytes a term
        return arrays + text + RESIDENT_BYTES_PER_CHUNK * len(self.paths)

    @property
    def vectors_pending(self) -> int:
        return int((self.vec_row < 0).sum())

    @cached_property
    def _path_word_index(self) -> tuple[dict[str, np.ndarray], list[str]]:
        by_word: dict[str, list[int]] = {}
        for f, path in enumerate(self.files):
            for w in path_words(path):
                by_word.setdefault(w, []).append(f)
        return {w: np.asarray(ids, dtype=np.int32) for w, ids in by_word.items()}, sorted(by_word)

    def path_match_counts(self, keywords: frozenset[str], min_prefix: int) -> np.ndarray:
        """Per file, how many of the keywords its name or folder matches: the same word, or one a
        prefix (of at least `min_prefix` characters) of the other ("depend" ~ "dependencies")."""
        index, words = self._path_word_index
        counts = np.zeros(len(self.files), dtype=np.int32)
        for kw in keywords:
            hits = [kw] if kw in index else []
            lo = bisect.bisect_left(words, kw)
            while lo < len(words) and words[lo].startswith(kw):
                if len(kw) >= min_prefix and words[lo] != kw:
                    hits.append(words[lo])
                lo += 1
            hits += [kw[:n] for n in range(min_prefix, len(kw)) if kw[:n] in index]
            if hits:
                counts[np.unique(np.concatenate([index[h] for h in hits]))] += 1
        return counts

    @cached_property
    def file_numbers(self) -> dict[str, int]:
        """File path -> its index in `files`."""
        return {f: i for i, f in enumerate(self.files)}

    @cached_property
    def language_array(self) -> np.ndarray:
        return np.asarray(self.languages, dtype=object)

    @cached_property
    def content_type_array(self) -> np.ndarray:
        return np.asarray(self.content_types, dtype=object)

    @cached_property
    def _file_bounds(self) -> np.ndarray:
        """Chunks are grouped by file: file f's chunks are rows bounds[f]:bounds[f + 1]."""
        return np.searchsorted(self.file_of, np.arange(len(self.files) + 1)).astype(np.int64)

    @cached_property
    def file_lexical(self) -> LexicalIndex:
        """BM25 over whole files, each file's terms its chunks' summed (for ranking files)."""
        return self.lexical.grouped(self.file_of, len(self.files))

    @cached_property
    def message_index(self) -> MessageIndex:
        """The messages the code raises, warns or logs (messages.py), per file: built on a task
        question's first use, carried over an incremental update (`updated`)."""
        return MessageIndex.of_files(self._code_texts(range(len(self))))

    def _code_texts(self, rows: Iterable[int]) -> dict[str, list[str]]:
        """Path -> the texts of its code chunks among `rows`."""
        out: dict[str, list[str]] = {}
        for i in rows:
            if self.content_types[i] == "code":
                out.setdefault(self.paths[i], []).append(self.contents[i])
        return out

    @cached_property
    def _files_by_base_name(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for f, path in enumerate(self.files):
            out.setdefault(path.rsplit("/", 1)[-1], []).append(f)
        return out

    def module_path(self, file_no: int) -> str:
        """A file's path as a module name reads it: no extension, a package's own file (`__init__`,
        `index`, `mod`) standing for its folder (`a/b/__init__.py` -> `a/b`)."""
        stem_path = (
            self.files[file_no].rsplit(".", 1)[0]
            if "." in self.files[file_no].rsplit("/", 1)[-1]
            else self.files[file_no]
        )
        folder, _, name = stem_path.rpartition("/")
        return folder if name in _PACKAGE_FILES and folder else stem_path

    @cached_property
    def module_paths(self) -> dict[str, list[int]]:
        """The last part of each file's module path (`module_path`) -> the files with it."""
        out: dict[str, list[int]] = {}
        for f in range(len(self.files)):
            out.setdefault(self.module_path(f).rsplit("/", 1)[-1], []).append(f)
        return out

    def files_with_name(self, name: str) -> list[int]:
        """Files whose name (the last part of the path) is exactly `name`."""
        return self._files_by_base_name.get(name, [])

    def chunks_of(self, file_no: int) -> range:
        b = self._file_bounds
        return range(int(b[file_no]), int(b[file_no + 1]))

    @cached_property
    def _files_by_name(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for f, path in enumerate(self.files):
            out.setdefault(file_name_key(path), []).append(f)
        return out

    def files_named(self, name: str) -> list[int]:
        """Files named after `name`: `Logger` -> Logger.php, `IndifferentHash` -> indifferent_hash.rb,
        `Router` -> router.go or routers.py."""
        key = name.lower().replace("_", "")
        return self._files_by_name.get(key, []) + self._files_by_name.get(key + "s", [])

    @classmethod
    def load(cls, reader: ProjectReader, version: IndexVersion, page_rows: int = LOAD_PAGE_ROWS) -> Corpus:
        """Read every chunk of `version` and its vectors.

        The short columns are read whole and sorted by file; the texts a page of `page_rows` rows at
        a time, each page analysed into BM25 postings and compressed before the next is read; the
        vectors a page at a time into one matrix. What it builds equals `build` over the same rows,
        without ever holding every chunk's text (or every stored vector twice) at once.

        Raises StorageError when the tables cannot be read."""
        started = time.perf_counter()
        cols, order = _sorted_by_file(reader.read_chunks(version, _SHORT_COLUMNS))
        n = len(order)
        place = np.empty(n, dtype=np.int64)
        place[order] = np.arange(n, dtype=np.int64)
        paths, symbols = cols["path"], [s or "" for s in cols["symbol"]]
        contents, refs = [_EMPTY_TEXT] * n, [_EMPTY_TEXT] * n
        cut = np.zeros(n, dtype=bool)
        # Each page numbers its terms in a dict of its own, then they are looked up in (or added to)
        # the packed vocabulary: the term strings die with the page, and do not pin the heap's pages
        # among the snapshot's long-lived objects as one dict over all pages did (-9 MB at 41.6k).
        vocab = Vocabulary()
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        start = 0
        for page in reader.iter_chunk_pages(version, _TEXT_COLUMNS, page_rows):
            at = place[start : start + len(page["path"])].tolist()
            if len(at) != len(page["path"]) or page["path"] != [paths[i] for i in at]:
                raise StorageError(f"the index of {reader.root} changed while it was read; try again")
            start += len(at)
            texts = [x or "" for x in page["content"]]
            overflow = [x or "" for x in page["search_text"]]
            for i, text, ref, more in zip(at, texts, page["refs"], overflow, strict=True):
                contents[i], refs[i], cut[i] = pack(text), pack(ref or ""), bool(more)
            fields = _fields([paths[i] for i in at], texts, overflow, [symbols[i] for i in at])
            local: dict[str, int] = {}
            docs, terms, tf = postings(
                local, 0, contents=fields[0], symbols=fields[1], paths=fields[2], weights=_FIELDS
            )
            ids, vocab = vocab.numbered(list(local))
            parts.append((place[start - len(at) : start][docs].astype(np.int32), ids[terms], tf))
        if start != n:
            raise StorageError(f"the index of {reader.root} changed while it was read; try again")
        lexical = LexicalIndex.of_postings(vocab, n, parts, _FIELDS)
        del parts
        cols["cut"] = cut  # type: ignore[assignment]
        keys, matrix, room = _read_unit_vectors(reader, version, {k for k in cols["vec_key"] if k})
        corpus = cls._assemble(
            cols,
            contents=ChunkTexts.of_packed(contents),
            refs=ChunkTexts.of_packed(refs),
            overflow=None,
            symbols=symbols,
            lexical=lexical,
            keys=keys,
            matrix=matrix,
            version=version,
        )
        corpus.matrix_room = room
        corpus.load_ms = (time.perf_counter() - started) * 1000
        log.debug("loaded %d chunks, %d vectors in %.0f ms", len(corpus), len(keys), corpus.load_ms)
        return corpus

    @classmethod
    def build(
        cls, cols: dict[str, list], keys: list[str], matrix: np.ndarray, version: IndexVersion | None = None
    ) -> Corpus:
        """Build a snapshot from chunk columns (COLUMNS) and the vectors their `vec_key`s name."""
        cols, _ = _sorted_by_file(cols)
        contents = [c or "" for c in cols["content"]]
        overflow = [x or "" for x in cols.get("search_text") or [""] * len(contents)]
        symbols = [s or "" for s in cols["symbol"]]
        lexical = LexicalIndex(*_fields(cols["path"], contents, overflow, symbols))
        return cls._assemble(
            cols,
            contents=ChunkTexts(contents),
            refs=ChunkTexts(r or "" for r in cols.get("refs") or [""] * len(contents)),
            overflow=overflow,
            symbols=symbols,
            lexical=lexical,
            keys=keys,
            matrix=_unit(matrix),
            version=version,
        )

    @classmethod
    def of_chunks(cls, chunks: Iterable[Chunk]) -> Corpus:
        """A snapshot of chunks as the chunker made them, without vectors (tools and tests that
        need no index)."""
        cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        for ch in chunks:
            row = {
                "path": ch.path,
                "start_line": ch.start_line,
                "end_line": ch.end_line,
                "symbol": ch.symbol,
                "scope": ch.scope,
                "signature": ch.signature,
                "kind": str(ch.kind),
                "language": ch.language,
                "content_type": str(ch.content_type),
                "content": ch.content,
                "search_text": "",
                "vec_key": "",
                "refs": ch.refs,
            }
            for c in COLUMNS:
                cols[c].append(row[c])
        return cls.build(cols, [], np.zeros((0, 1), dtype=np.float32))

    def updated(self, reader: ProjectReader, version: IndexVersion, changes: ChangeSet) -> Corpus:
        """This snapshot moved to `version`: the chunks of the changed files are read again (only
        theirs), vectors are added for the embedding keys that gained one, and the BM25 postings of
        every unchanged chunk are reused."""
        started = time.perf_counter()
        if not changes.path_keys:  # only vectors were added: a vector fill going on
            corpus = self._with_vectors(reader, version, changes.vec_keys)
            corpus.load_ms = (time.perf_counter() - started) * 1000
            log.debug("applied %d new vectors in %.0f ms", len(corpus.matrix) - len(self.matrix), corpus.load_ms)
            return corpus
        keep = np.ones(len(self), dtype=bool)
        changed_files = np.zeros(len(self.files), dtype=bool)
        if len(self.files):
            changed_files = np.asarray([path_key(f) in changes.path_keys for f in self.files], dtype=bool)
            keep = ~changed_files[self.file_of]
        new = reader.read_chunks(version, COLUMNS, sorted(changes.path_keys))
        kept = np.flatnonzero(keep)
        rows = kept.tolist()
        merged: dict[str, list] = {
            "path": _take(self.paths, rows) + new["path"],
            "start_line": self.start_line[kept].tolist() + new["start_line"],
            "end_line": self.end_line[kept].tolist() + new["end_line"],
            "symbol": _take(self.symbols, rows) + [x or "" for x in new["symbol"]],
            "scope": _take(self.scopes, rows) + [tuple(x or ()) for x in new["scope"]],
            "signature": _take(self.signatures, rows) + [x or "" for x in new["signature"]],
            "kind": _take(self.kinds, rows) + [x or "" for x in new["kind"]],
            "language": _take(self.languages, rows) + [x or "" for x in new["language"]],
            "content_type": _take(self.content_types, rows) + [x or "code" for x in new["content_type"]],
            "cut": self.cut[kept].tolist() + [bool(x) for x in new["search_text"]],
            "vec_key": _take(self.vec_keys, rows) + [x or "" for x in new["vec_key"]],
        }
        # Vectors: rows this snapshot holds are reused; keys that gained a vector, and new chunks'
        # keys (content-addressed: an edit that restores earlier code finds its vector stored), are read.
        row_of = {k: r for r, k in enumerate(self.matrix_keys)}
        missing = {k for k in merged["vec_key"] if k and k not in row_of}
        fetch = sorted(missing & (changes.vec_keys | {k for k in new["vec_key"] if k}))
        add_keys, add_matrix = reader.read_vectors(version, fetch) if fetch else ([], self.matrix[:0])
        used = sorted({row_of[k] for k in merged["vec_key"] if k in row_of})
        keys = [self.matrix_keys[r] for r in used] + add_keys
        matrix = np.vstack([self.matrix[used], _unit(add_matrix)]) if len(add_keys) else self.matrix[used]

        new_contents = [x or "" for x in new["content"]]
        sorted_cols, order = _inserted_by_file(merged, len(rows))
        contents = self.contents.taken(rows).plus(new_contents).taken(order)
        refs = self.refs.taken(rows).plus(x or "" for x in new.get("refs") or [""] * len(new_contents)).taken(order)
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        n_old = len(kept)
        overflow_new = [x or "" for x in new["search_text"]]
        fields = _fields(new["path"], new_contents, overflow_new, merged["symbol"][n_old:])
        lexical = self.lexical.merged(keep, *fields, position=position)
        symbol_index = self.symbol_index.merged(keep, merged["symbol"][n_old:], position)
        corpus = self._assemble(
            sorted_cols,
            contents=contents,
            refs=refs,
            overflow=None,
            symbols=sorted_cols["symbol"],
            lexical=lexical,
            keys=keys,
            matrix=matrix,
            version=version,
            symbol_index=symbol_index,
        )
        if "message_index" in self.__dict__:  # built already: read only the changed files' messages
            changed = [self.files[f] for f in np.flatnonzero(changed_files).tolist()] + new["path"]
            fresh = [i for p in sorted(set(new["path"])) for i in corpus.chunks_of(corpus.file_numbers[p])]
            corpus.__dict__["message_index"] = self.message_index.updated(changed, corpus._code_texts(fresh))
        corpus.load_ms = (time.perf_counter() - started) * 1000
        log.debug(
            "applied %d changed files (%d chunks) in %.0f ms", len(changes.path_keys), len(new["path"]), corpus.load_ms
        )
        return corpus

    @cached_property
    def _pending_by_key(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The chunks without a vector, by their key's hash: (hashes sorted, chunk of each, how many
        distinct keys: the rows the fill may add). Made once per vector fill and carried by the
        snapshots of the fill (a chunk that gained its vector since is told by its `vec_row`), so a
        commit of the fill finds the chunks of the keys it brought without walking every pending
        chunk (~0.2 s a commit at 538k chunks)."""
        pending = np.flatnonzero(self.vec_row < 0)
        keys = [self.vec_keys[i] for i in pending.tolist()]
        hashes = np.fromiter((_key_hash(k) for k in keys), dtype=np.int64, count=len(keys))
        order = np.argsort(hashes, kind="stable")
        n_keys = len(set(keys))
        return hashes[order], pending[order].astype(np.int32), n_keys

    def _with_vectors(self, reader: ProjectReader, version: IndexVersion, gained: frozenset[str]) -> Corpus:
        """This snapshot at a version that only added vectors. Every chunk, text, posting and cached
        lookup is shared with this one; the pending chunks whose keys gained a vector get their rows,
        appended in place to a buffer sized for every pending key once (`_MatrixRoom`): a fill of 500k
        chunks commits a thousand times, and copying the snapshot (or its matrix) at each of them
        held two snapshots at once and cost seconds of CPU a commit."""
        hashes, chunks, n_keys = self._pending_by_key
        waiting: dict[str, list[int]] = {}  # each gained key -> its chunks still without a vector here
        gained_keys = list(gained)
        wanted = np.fromiter((_key_hash(k) for k in gained_keys), dtype=np.int64, count=len(gained_keys))
        starts = np.searchsorted(hashes, wanted, side="left").tolist()
        ends = np.searchsorted(hashes, wanted, side="right").tolist()
        for key, start, end in zip(gained_keys, starts, ends, strict=True):
            for i in chunks[start:end].tolist():
                if self.vec_row[i] < 0 and self.vec_keys[i] == key:
                    waiting.setdefault(key, []).append(i)
        fetch = sorted(waiting)
        add_keys, add_matrix = reader.read_vectors(version, fetch) if fetch else ([], self.matrix[:0])
        matrix, room = _MatrixRoom.append(self.matrix, self.matrix_room, _unit(add_matrix), room_for=n_keys)
        vec_row = self.vec_row
        if add_keys:
            vec_row = vec_row.copy()
            for j, key in enumerate(add_keys):
                vec_row[waiting[key]] = len(self.matrix_keys) + j
        keys = self.matrix_keys + add_keys
        corpus = replace(self, vec_row=vec_row, matrix=matrix, matrix_keys=keys, version=version, matrix_room=room)
        # What `cached_property` computed from the chunks holds for the new snapshot too.
        own = {f.name for f in fields(self)}
        corpus.__dict__.update({k: v for k, v in self.__dict__.items() if k not in own})
        return corpus

    @classmethod
    def _assemble(
        cls,
        cols: dict[str, list],
        *,
        contents: ChunkTexts,
        refs: ChunkTexts,
        overflow: list[str] | None,
        symbols: list[str],
        lexical: LexicalIndex,
        keys: list[str],
        matrix: np.ndarray,
        version: IndexVersion | None,
        symbol_index: SymbolIndex | None = None,
    ) -> Corpus:
        # Repeated values share one string object: a path per chunk, a handful of kinds, languages
        # and content types, and each embedding key once for the chunk and the matrix row.
        files = sorted(set(cols["path"]))
        file_no = {f: i for i, f in enumerate(files)}
        paths: list[str] = [files[file_no[p]] for p in cols["path"]]
        row_of = {k: i for i, k in enumerate(keys)}
        vec_keys = [keys[row_of[k]] if k in row_of else (k or "") for k in cols["vec_key"]]
        vec_row = np.asarray([row_of.get(k, -1) if k else -1 for k in vec_keys], dtype=np.int32)
        cut = cols["cut"] if overflow is None else [bool(x) for x in overflow]
        return cls(
            paths=paths,
            file_of=np.asarray([file_no[p] for p in paths], dtype=np.int32),
            files=files,
            start_line=np.asarray(cols["start_line"], dtype=np.int32),
            end_line=np.asarray(cols["end_line"], dtype=np.int32),
            symbols=symbols,
            scopes=[tuple(x or ()) for x in cols["scope"]],
            signatures=[x or "" for x in cols["signature"]],
            kinds=_shared(k or "" for k in cols["kind"]),
            languages=_shared(lang or "" for lang in cols["language"]),
            content_types=_shared(t or "code" for t in cols["content_type"]),
            contents=contents,
            refs=refs,
            cut=np.asarray(cut, dtype=bool),
            vec_keys=vec_keys,
            vec_row=vec_row,
            matrix=matrix,
            matrix_keys=list(keys),
            lexical=lexical,
            # Anchors carry their file's name: the fuzzy channel finds files by name as well as symbols.
            symbol_index=symbol_index if symbol_index is not None else SymbolIndex(symbols),
            version=version,
            load_ms=0.0,
        )


_key_hash = hash  # a name of its own, so a test can make every key collide


@dataclass(eq=False)
class _MatrixRoom:
    """A vector matrix with room for the rows a vector fill will add. Each snapshot's `matrix` is the
    first rows of `data`; only the snapshot that ends at `filled` (the newest) may append in place,
    so an older snapshot, still answering queries, never sees its rows change. Room that was never
    written costs no memory (numpy's large empty arrays are untouched pages)."""

    data: np.ndarray
    filled: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def append(
        matrix: np.ndarray, room: _MatrixRoom | None, rows: np.ndarray, *, room_for: int
    ) -> tuple[np.ndarray, _MatrixRoom | None]:
        """`matrix` with `rows` after it, and the room it is now the first rows of. `room_for`: how
        many rows may still come (the pending keys) when a new buffer is made."""
        if not len(rows):
            return matrix, room
        n, m = len(matrix), len(rows)
        if room is not None:
            with room.lock:
                if room.filled == n and n + m <= len(room.data):
                    room.data[n : n + m] = rows
                    room.filled = n + m
                    return room.data[: n + m], room
        data = np.empty((n + max(m, room_for), rows.shape[1]), dtype=np.float32)
        data[:n] = matrix
        data[n : n + m] = rows
        return data[: n + m], _MatrixRoom(data, n + m)


def _shared(values: Iterable[str]) -> list[str]:
    """The values, equal ones as one object (a column of a few distinct words)."""
    seen: dict[str, str] = {}
    return [seen.setdefault(v, v) for v in values]


def _take(values: Sequence[Any], rows: list[int]) -> list[Any]:
    """values[i] for each i of rows, as a list (in C: a snapshot's columns are long)."""
    if len(rows) < 2:
        return [values[i] for i in rows]
    return list(itemgetter(*rows)(values))


def _inserted_by_file(cols: dict[str, list], n_sorted: int) -> tuple[dict[str, list], list[int]]:
    """Like `_sorted_by_file`, for columns whose first `n_sorted` rows are already in order and
    whose other rows belong to files none of those rows has (an update's changed files): only the
    new rows are sorted, then each file's rows are inserted where the file sorts."""
    paths, starts, ends = cols["path"], cols["start_line"], cols["end_line"]
    new = sorted(range(n_sorted, len(paths)), key=lambda i: (paths[i], starts[i], ends[i]))
    kept_paths = paths[:n_sorted]
    at = [bisect.bisect_left(kept_paths, paths[i]) for i in new]
    order: list[int] = np.insert(np.arange(n_sorted), at, new).tolist() if new else list(range(n_sorted))
    return {c: _take(v, order) for c, v in cols.items()}, order


def _sorted_by_file(cols: dict[str, list]) -> tuple[dict[str, list], list[int]]:
    """Columns reordered by file then line, so a file's chunks sit together (and results are stable
    across loads), with the order used: row i of the result is row order[i] of the input."""
    paths = cols["path"]
    order = sorted(range(len(paths)), key=lambda i: (paths[i], cols["start_line"][i], cols["end_line"][i]))
    return {c: [v[i] for i in order] for c, v in cols.items()}, order


def _fields(
    paths: list[str], contents: list[str], overflow: list[str], symbols: list[str]
) -> tuple[Sequence[list[str]], Sequence[list[str]], Sequence[list[str]]]:
    """The three BM25 fields of each chunk: its text (with what long lines cut), its symbol, its path.
    Texts and symbols are analysed when the index asks for them, one chunk at a time."""
    path_cache: dict[str, list[str]] = {}
    for f in set(paths):
        path_cache[f] = path_terms(f)
    return (
        _Analysed(lambda i: analyze(f"{contents[i]}\n{overflow[i]}" if overflow[i] else contents[i]), len(contents)),
        _Analysed(lambda i: list(identifier_terms(symbols[i])) if symbols[i] else [], len(symbols)),
        [path_cache[p] for p in paths],
    )


class _Analysed(Sequence[list[str]]):
    """Terms of row i, computed on access (a full load never holds every chunk's terms at once)."""

    def __init__(self, terms_of: Callable[[int], list[str]], n: int) -> None:
        self._terms_of = terms_of
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> list[str]: ...
    @overload
    def __getitem__(self, i: slice) -> list[list[str]]: ...
    def __getitem__(self, i: int | slice) -> list[str] | list[list[str]]:
        if isinstance(i, slice):
            return [self._terms_of(j) for j in range(*i.indices(self._n))]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return self._terms_of(i % self._n if self._n else i)


def _read_unit_vectors(
    reader: ProjectReader, version: IndexVersion, wanted: set[str]
) -> tuple[list[str], np.ndarray, _MatrixRoom | None]:
    """The stored vectors of the `wanted` keys, each key once in storage order, as unit rows of one
    matrix filled a page at a time (as `_unit(read_vectors(...))` would give, without a second copy).
    The matrix is made with a row for every wanted key: while some are pending, it is returned as
    the first rows of that buffer, with the room the vector fill appends to (`_MatrixRoom`)."""
    dim = int(reader.meta(version)["identity"]["dimension"])
    data = np.empty((len(wanted), dim), dtype=np.float32)
    keys: list[str] = []
    seen: set[str] = set()
    for page_keys, page in reader.iter_vector_pages(version):
        take = [i for i, k in enumerate(page_keys) if k in wanted and k not in seen]
        if not take:
            continue
        seen.update(page_keys[i] for i in take)
        keys.extend(page_keys[i] for i in take)
        data[len(keys) - len(take) : len(keys)] = _unit(page[take])
    if len(keys) < len(data):  # chunks whose vector is pending
        return keys, data[: len(keys)], _MatrixRoom(data, len(keys))
    return keys, data, None


def _unit(matrix: np.ndarray) -> np.ndarray:
    if not len(matrix):
        return np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
