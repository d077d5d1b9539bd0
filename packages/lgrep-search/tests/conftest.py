"""Small in-memory corpora for the searcher's unit tests: no index on disk, no model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from lgrep_search.corpus import COLUMNS, Corpus

MakeCorpus = Callable[..., Corpus]


def _corpus(*rows: dict[str, Any]) -> Corpus:
    """A snapshot of the given chunks, each a dict with `path` and `content` and optionally any other
    column (COLUMNS); a chunk spans its content's lines unless it says otherwise. No vectors."""
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for row in rows:
        unknown = set(row) - set(COLUMNS)
        assert not unknown, unknown
        start = row.get("start_line", 1)
        filled = {
            "start_line": start,
            "end_line": start + row["content"].count("\n"),
            "symbol": "",
            "scope": (),
            "signature": "",
            "kind": "function",
            "language": "python",
            "content_type": "code",
            "search_text": "",
            "vec_key": "",
            "refs": "",
            **row,
        }
        for c in COLUMNS:
            cols[c].append(filled[c])
    return Corpus.build(cols, [], np.zeros((0, 8), dtype=np.float32))


@pytest.fixture
def make_corpus() -> MakeCorpus:
    return _corpus
