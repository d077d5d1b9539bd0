import shutil
from pathlib import Path

import numpy as np
import pytest
from lgrep_core.domain.errors import IndexBusyError, IndexMismatchError, NotFoundError, StorageError
from lgrep_core.domain.models import EMBEDDING_TEXT_VERSION
from lgrep_core.storage.schema import CHUNK_COLUMNS, IndexIdentity, chunks_schema, path_key
from lgrep_core.storage.store import ProjectStore

IDENTITY = IndexIdentity("local", "all-MiniLM-L6-v2 (int8)", 4, "c1", "512/64/ast")
HOSTILE = [
    "x' OR '1'='1",
    "a'b.py",
    "a\\'b.py",
    "trailing\\",
    "a'; DROP TABLE chunks; --.py",
    'dq"uote.py',
    "ünï/cödé 🎉.py",
    "new\nline.py",
    "%_like.py",
    "path_key IN ('x').py",
]


def test_the_column_list_is_the_tables_schema() -> None:
    assert tuple(chunks_schema().names) == CHUNK_COLUMNS


def _rows(paths: list[str], tag: str) -> dict[str, list[object]]:
    cols: dict[str, list[object]] = {n: [] for n in CHUNK_COLUMNS}
    for i, p in enumerate(paths):
        cols["id"].append(f"{tag}-{path_key(p)}")
        cols["path"].append(p)
        cols["path_key"].append(path_key(p))
        cols["language"].append("python")
        cols["content_type"].append("code")
        cols["kind"].append("function")
        cols["symbol"].append(f"f{i}")
        cols["scope"].append([f"f{i}"])
        cols["signature"].append("")
        cols["start_line"].append(1)
        cols["end_line"].append(2)
        cols["content"].append(f"def f{i}(): {tag}")
        cols["search_text"].append(f"def f{i} {tag}")
        cols["vec_key"].append(f"{tag}{i}")
        cols["file_hash"].append("h")
        cols["refs"].append("")
    return cols


def _store(tmp_path: Path) -> ProjectStore:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    store = ProjectStore(tmp_path / "cache", root)
    store.create(IDENTITY)
    store.open()
    return store


def _paths(store: ProjectStore) -> list[str]:
    return sorted(store.chunks.to_arrow().column("path").to_pylist())


def test_hostile_paths_replace_and_delete_only_their_own_rows(tmp_path: Path) -> None:
    store = _store(tmp_path)
    bystanders = [f"bystander{i}.py" for i in range(5)]
    store.replace_files(_rows([*HOSTILE, *bystanders], "v1"), [path_key(p) for p in [*HOSTILE, *bystanders]])
    assert store.chunks.count_rows() == len(HOSTILE) + 5

    # Replacing each hostile file touches that file only.
    for p in HOSTILE:
        store.replace_files(_rows([p], "v2"), [path_key(p)])
    assert store.chunks.count_rows() == len(HOSTILE) + 5
    table = store.chunks.to_arrow().to_pylist()
    assert {r["path"] for r in table if r["content"].endswith("v2")} == set(HOSTILE)

    # The classic injection value deletes nothing but itself.
    store.delete_files([path_key("x' OR '1'='1")])
    assert store.chunks.count_rows() == len(HOSTILE) + 4
    store.delete_files([path_key(p) for p in HOSTILE])
    assert _paths(store) == bystanders


def test_identity_mismatch_says_what_to_run(tmp_path: Path) -> None:
    store = _store(tmp_path)
    other = IndexIdentity("local", "all-MiniLM-L6-v2 (fp32)", 4, "c1", "512/64/ast")
    with pytest.raises(IndexMismatchError, match="lgrep index --force"):
        store.check_identity(other)
    store.check_identity(IDENTITY)


def test_index_from_before_the_embedding_text_version_asks_for_a_rebuild(tmp_path: Path) -> None:
    store = _store(tmp_path)
    old = IDENTITY.as_dict()
    del old["embedding_text"]  # what meta.json held before the field existed
    store.write_meta(identity=old)
    expected = rf"embedding text 1, config says .*embedding text {EMBEDDING_TEXT_VERSION}"
    with pytest.raises(IndexMismatchError, match=expected) as err:
        store.check_identity(IDENTITY)
    assert "lgrep index --force" in err.value.message


def test_missing_and_damaged_index(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    store = ProjectStore(tmp_path / "cache", root)
    with pytest.raises(NotFoundError, match="lgrep index"):
        store.open()
    store.create(IDENTITY)
    store.meta_path.write_text("{not json")
    with pytest.raises(StorageError, match="--force"):
        ProjectStore(tmp_path / "cache", root).open()


def test_damaged_tables_are_a_clear_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.replace_files(_rows(["a.py"], "v1"), [path_key("a.py")])
    store.close()
    import shutil

    shutil.rmtree(store.data_dir / "lance" / "chunks.lance" / "_versions")
    with pytest.raises(StorageError, match="--force"):
        ProjectStore(tmp_path / "cache", tmp_path / "proj").open()


def test_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = store.lock()
    first.acquire(0, store.root)
    try:
        with pytest.raises(IndexBusyError, match="another lgrep process"):
            ProjectStore(tmp_path / "cache", store.root).lock().acquire(0.2, store.root)
    finally:
        first.release()
    again = store.lock()
    again.acquire(0, store.root)
    again.release()


def test_vectors_round_trip_and_pending(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.replace_files(_rows(["a.py", "b.py"], "v"), [path_key("a.py"), path_key("b.py")])
    assert store.pending_vector_keys() == {"v0", "v1"}
    vecs = np.eye(4, dtype=np.float32)[:1]
    store.add_vectors(["v0"], vecs)
    assert store.pending_vector_keys() == {"v1"}
    assert store.missing_vector_keys(["v0", "v1", "x' OR '1'='1"]) == {"v1", "x' OR '1'='1"}
    assert store.missing_vector_keys([]) == set()
    keys, matrix = store.load_vectors()
    assert keys == ["v0"]
    assert matrix.shape == (1, 4)
    assert np.allclose(matrix[0], vecs[0])


def test_manifest_paths_under_folders(tmp_path: Path) -> None:
    from lgrep_core.storage.store import FileRecord

    store = _store(tmp_path)
    paths = [
        "lib",
        "lib/x.py",
        "lib/sub/y.py",
        "lib0",
        "lib-a/x.py",
        "library/z.py",
        "lib.py",
        "a/lib/x.py",
        "ünï/cödé.py",
        "ünï/sub/ü.py",
        "ünïx/no.py",
        "%_like/x.py",
        "%_likeX/y.py",
        "l_b/x.py",
        *HOSTILE,
    ]
    store.manifest_put(FileRecord(p, 1, 1, "h", "python", 1) for p in paths)
    assert sorted(store.manifest_paths_under(["lib"])) == ["lib/sub/y.py", "lib/x.py"]
    assert sorted(store.manifest_paths_under(["ünï", "%_like"])) == [
        "%_like/x.py",
        "ünï/cödé 🎉.py",
        "ünï/cödé.py",
        "ünï/sub/ü.py",
    ]
    assert store.manifest_paths_under(["l_b"]) == ["l_b/x.py"]  # no LIKE wildcards
    assert store.manifest_paths_under(["lib/sub", "a"]) == ["lib/sub/y.py", "a/lib/x.py"]
    assert store.manifest_paths_under(["nothing", ""]) == []


def test_path_keys_with_chunks(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.replace_files(_rows(HOSTILE[:4], "v1"), [path_key(p) for p in HOSTILE[:4]])
    asked = [path_key(p) for p in HOSTILE]
    assert store.path_keys_with_chunks(asked) == {path_key(p) for p in HOSTILE[:4]}
    assert store.path_keys_with_chunks([]) == set()


def test_tables_are_compacted_after_many_rows_or_many_small_commits(tmp_path: Path) -> None:
    from lgrep_core.storage import _compaction

    store = _store(tmp_path)
    for i in range(3):  # several small fragments in each table: something to compact
        store.append_chunks(_rows([f"f{i}.py"], f"t{i}"))
        store.add_vectors([f"t{i}0"], np.eye(4, dtype=np.float32)[:1])
    limit = _compaction.COMPACT_AFTER_COMMITS
    for _ in range(limit - 1):
        store.note_chunk_writes(3)
        store.note_vector_writes(1)
    store.note_chunk_writes(0)  # a run that wrote nothing is no commit
    meta = store.read_meta()
    assert (meta["commits_since_compaction"], meta["rows_since_compaction"]) == (limit - 1, 3 * (limit - 1))
    assert (meta["vector_commits_since_compaction"], meta["vector_rows_since_compaction"]) == (limit - 1, limit - 1)
    versions = (store.chunks.version, store.vectors.version)
    store.note_chunk_writes(1)
    store.note_vector_writes(1)
    meta = store.read_meta()
    assert meta["commits_since_compaction"] == meta["vector_commits_since_compaction"] == 0
    assert store.chunks.version > versions[0] and store.vectors.version > versions[1]  # optimize committed
    store.note_vector_writes(_compaction.COMPACT_AFTER_ROWS)  # one large commit compacts at once
    assert store.read_meta()["vector_rows_since_compaction"] == 0


def test_a_reader_of_a_deleted_generation_fails_without_recreating_it(tmp_path: Path) -> None:
    from lgrep_core.domain.errors import StorageError
    from lgrep_core.storage.reader import ProjectReader

    store = _store(tmp_path)
    store.replace_files(_rows(["a.py"], "v1"), [path_key("a.py")])
    store.record_versions()
    reader = ProjectReader(tmp_path / "cache", tmp_path / "proj")
    version = reader.version()
    generation = store.dir / version.generation
    store.close()
    shutil.rmtree(generation)  # what a rebuild's publish does to the generation it replaces
    with pytest.raises(StorageError, match="was replaced"):
        reader.read_chunks(version, ["path"])
    assert not generation.exists(), "a reader must never create files (LanceDB's connect makes folders)"
