"""The in-memory snapshot a searcher answers from: chunk metadata as arrays, the BM25 postings, the
symbol table and the vector matrix. LanceDB stays the store of record; this is rebuilt when the
index changes (a new table version) and costs one scan of the chunks and vectors tables."""

from __future__ import annotations

import bisect
import logging
import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from lgrep_core.storage.store import ProjectStore
from lgrep_core.text import analyze, identifier_terms, path_terms

from .fuzzy import SymbolIndex
from .lexical import LexicalIndex
from .ranking import path_words

__all__ = ["COLUMNS", "Corpus", "file_name_key", "read_columns"]

log = logging.getLogger(__name__)

COLUMNS = [
    "path",
    "start_line",
    "end_line",
    "symbol",
    "kind",
    "language",
    "content_type",
    "content",
    "search_text",
    "vec_key",
]


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
    kinds: list[str]
    languages: list[str]
    content_types: list[str]
    contents: list[str]
    cut: np.ndarray  # bool per chunk: its content cut long lines (the rest is searchable, not shown)
    vec_row: np.ndarray  # per chunk: row of `matrix`, -1 while its vector is pending
    matrix: np.ndarray  # unit vectors
    lexical: LexicalIndex
    symbol_index: SymbolIndex
    version: tuple[object, ...]
    load_ms: float

    def __len__(self) -> int:
        return len(self.paths)

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
    def language_array(self) -> np.ndarray:
        return np.asarray(self.languages, dtype=object)

    @cached_property
    def content_type_array(self) -> np.ndarray:
        return np.asarray(self.content_types, dtype=object)

    @cached_property
    def _file_bounds(self) -> np.ndarray:
        """Chunks are grouped by file: file f's chunks are rows bounds[f]:bounds[f + 1]."""
        return np.searchsorted(self.file_of, np.arange(len(self.files) + 1)).astype(np.int64)

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
    def load(cls, store: ProjectStore) -> Corpus:
        """Read the chunks and their vectors from a project's store.

        Raises StorageError when the tables cannot be read."""
        started = time.perf_counter()
        version = store.generation()
        cols = read_columns(store)
        keys, matrix = store.load_vectors({k for k in cols["vec_key"] if k})
        corpus = cls.build(cols, keys, matrix, version)
        corpus.load_ms = (time.perf_counter() - started) * 1000
        log.debug("loaded %d chunks, %d vectors in %.0f ms", len(corpus), len(keys), corpus.load_ms)
        return corpus

    @classmethod
    def build(
        cls, cols: dict[str, list], keys: list[str], matrix: np.ndarray, version: tuple[object, ...] = ()
    ) -> Corpus:
        """Build a snapshot from chunk columns (COLUMNS) and the vectors their `vec_key`s name."""
        paths: list[str] = cols["path"]
        # Group by file then line so a file's chunks sit together (stable results across loads).
        order = sorted(range(len(paths)), key=lambda i: (paths[i], cols["start_line"][i], cols["end_line"][i]))
        cols = {c: [v[i] for i in order] for c, v in cols.items()}
        paths = cols["path"]
        files = sorted(set(paths))
        file_no = {f: i for i, f in enumerate(files)}
        symbols = [s or "" for s in cols["symbol"]]
        contents = [c or "" for c in cols["content"]]
        overflow = [x or "" for x in cols.get("search_text") or [""] * len(contents)]

        path_cache: dict[str, list[str]] = {}
        for f in files:
            path_cache[f] = path_terms(f)
        lexical = LexicalIndex(
            [analyze(f"{c}\n{x}" if x else c) for c, x in zip(contents, overflow, strict=True)],
            [list(identifier_terms(s)) if s else [] for s in symbols],
            [path_cache[p] for p in paths],
        )

        row_of = {k: i for i, k in enumerate(keys)}
        vec_row = np.asarray([row_of.get(k, -1) if k else -1 for k in cols["vec_key"]], dtype=np.int32)
        if len(matrix):
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)

        corpus = cls(
            paths=paths,
            file_of=np.asarray([file_no[p] for p in paths], dtype=np.int32),
            files=files,
            start_line=np.asarray(cols["start_line"], dtype=np.int32),
            end_line=np.asarray(cols["end_line"], dtype=np.int32),
            symbols=symbols,
            kinds=[k or "" for k in cols["kind"]],
            languages=[lang or "" for lang in cols["language"]],
            content_types=[t or "code" for t in cols["content_type"]],
            contents=contents,
            cut=np.asarray([bool(x) for x in overflow], dtype=bool),
            vec_row=vec_row,
            matrix=matrix,
            lexical=lexical,
            # Anchors carry their file's name: the fuzzy channel finds files by name as well as symbols.
            symbol_index=SymbolIndex(symbols),
            version=version,
            load_ms=0.0,
        )
        return corpus


def read_columns(store: ProjectStore) -> dict[str, list]:
    """The COLUMNS of every chunk in a store, as Python lists."""
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for batch in store.iter_chunk_rows(COLUMNS):
        for c in COLUMNS:
            cols[c].extend(batch.column(c).to_pylist())
    return cols
