"""The compact key set of the vector phase, and the bounded LanceDB session every connection shares."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lgrep_core.storage import engine
from lgrep_core.storage._keys import KeySet
from lgrep_core.storage.schema import CHUNK_COLUMNS, IndexIdentity, path_key
from lgrep_core.storage.store import ProjectStore

IDENTITY = IndexIdentity("local", "all-MiniLM-L6-v2 (int8)", 4, "c1", "512/64/ast")


def test_a_key_set_behaves_as_the_set_of_its_keys() -> None:
    keys = ["b" * 32, "a" * 32, "b" * 32, "v1", "ünï", "x' OR '1'='1"]
    ks = KeySet.from_batches([keys[:3], keys[3:], []])
    assert len(ks) == 5 and bool(ks) and not KeySet.of([])
    assert ks == set(keys) and set(ks) == set(keys) and ks == KeySet.of(reversed(keys))
    assert ks != {"a" * 32} and ks != KeySet.of(["a" * 32])
    assert "v1" in ks and "ünï" in ks and "v" not in ks and "v10" not in ks and 1 not in ks
    # a longer key that starts with a held one, and one past the end of the sorted keys
    at = ks.positions(["v1", "v1x", "zzz", "a" * 32])
    assert at[1] == -1 and at[2] == -1 and at[0] >= 0 and at[3] >= 0
    assert len({int(at[0]), int(at[3])}) == 2  # distinct keys, distinct slots
    assert ks.difference(KeySet.of(["v1", "nope"])) == set(keys) - {"v1"}
    assert KeySet.of([]).positions(["a"]).tolist() == [-1]


def test_a_key_with_a_trailing_nul_is_refused() -> None:
    with pytest.raises(ValueError, match="NUL"):
        KeySet.of(["abc\x00"])


def test_a_key_set_is_smaller_than_a_python_set() -> None:
    keys = [f"{i:032x}" for i in range(10_000)]
    ks = KeySet.of(keys)
    assert ks._keys.nbytes <= 32 * len(keys)
    assert isinstance(ks._keys, np.ndarray)


def _rows(n: int, tag: str) -> dict[str, list[object]]:
    cols: dict[str, list[object]] = {c: [] for c in CHUNK_COLUMNS}
    for i in range(n):
        p = f"{tag}/f{i}.py"
        values: dict[str, object] = {
            "id": f"{tag}-{i}",
            "path": p,
            "path_key": path_key(p),
            "language": "python",
            "content_type": "code",
            "kind": "function",
            "symbol": f"f{i}",
            "scope": [f"f{i}"],
            "signature": f"def f{i}()",
            "start_line": 1,
            "end_line": 2,
            "content": f"def f{i}(): pass",
            "search_text": "",
            "vec_key": f"{tag}{i % 7}",  # keys repeat across chunks, as identical texts do
            "file_hash": "h",
            "refs": "",
        }
        for c in CHUNK_COLUMNS:
            cols[c].append(values[c])
    return cols


def test_the_store_reads_pending_keys_page_by_page_into_a_key_set(tmp_path: Path) -> None:
    store = ProjectStore(tmp_path / "cache", tmp_path)
    store.create(IDENTITY)
    store.open()
    store.append_chunks(_rows(30, "a"))
    store.append_chunks(_rows(30, "b"))
    pending = store.pending_vector_keys()
    assert isinstance(pending, KeySet)
    assert pending == {f"a{i}" for i in range(7)} | {f"b{i}" for i in range(7)}
    store.add_vectors(["a0", "b3"], np.eye(4, dtype=np.float32)[:2])
    assert "a0" not in store.pending_vector_keys() and len(store.pending_vector_keys()) == 12
    # pages smaller than the table return every row once, in table order
    rows = [k for b in store.iter_chunk_rows(["id"], 7) for k in b["id"]]
    assert rows == [f"a-{i}" for i in range(30)] + [f"b-{i}" for i in range(30)]
    assert store.count_pending_chunks() == 60 - 5 - 4  # a0 stands for 5 chunks of "a" (0, 7, .., 28), b3 for 4
    # the store's connection holds its caches in the process's one bounded session
    assert engine._session().approx_num_items > 0
    store.close()
