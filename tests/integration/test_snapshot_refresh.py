"""A reader's snapshot follows the writer's commits: small changes are applied file by file (from the
writer's change log), and the result is the snapshot a full load of the same version would give."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lgrep_core.domain.models import SearchRequest
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.reader import IndexVersion, ProjectReader
from lgrep_core.testing import FakeEmbedder
from lgrep_index.pipeline import Indexer
from lgrep_search.corpus import Corpus
from lgrep_search.searcher import Searcher
from lgrep_search.snapshot import Snapshots

QUERIES = ["verify token", "open session", "parse config value", "render page", "module 7 helper"]


def _setup(tmp_path: Path, files: int = 30):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    for i in range(files):
        (root / "pkg" / f"mod{i}.py").write_text(
            f'"""Module {i}."""\n\n\ndef helper_{i}(value):\n    return value + {i}\n\n\n'
            f"class Thing{i}:\n    def render_page(self, page):\n        return page * {i}\n"
        )
    (root / "auth.py").write_text("def verify_token(token):\n    return token.valid\n")
    (root / "session.py").write_text("def open_session(user):\n    return user.session\n")
    settings = load_settings(
        None, env={"LGREP_CACHE_DIR": str(tmp_path / "cache")}, user_config=tmp_path / "none"
    ).settings
    return root, settings


def _assert_same(a: Corpus, b: Corpus) -> None:
    """Two snapshots hold the same chunks, vectors and BM25 scores."""
    assert a.paths == b.paths and a.files == b.files
    assert a.symbols == b.symbols and a.kinds == b.kinds and a.contents == b.contents
    assert np.array_equal(a.start_line, b.start_line) and np.array_equal(a.end_line, b.end_line)
    assert np.array_equal(a.cut, b.cut) and a.vec_keys == b.vec_keys
    assert np.array_equal(a.vec_row >= 0, b.vec_row >= 0)
    has = a.vec_row >= 0
    assert np.allclose(a.matrix[a.vec_row[has]], b.matrix[b.vec_row[has]])
    for query in QUERIES:
        terms = query.split()
        assert np.allclose(a.lexical.scores(terms), b.lexical.scores(terms), atol=1e-6), query
    assert len(a.symbol_index) == len(b.symbol_index)


def test_edits_are_applied_file_by_file_and_match_a_full_load(tmp_path: Path) -> None:
    root, settings = _setup(tmp_path)
    (root / "limits.py").write_text("def check(amount):\n    raise ValueError('the amount is over the card limit')\n")
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader = ProjectReader(settings.cache_dir, root)
    snapshots = Snapshots(reader, background=False)
    first = snapshots.current()
    assert snapshots.full_loads == 1
    assert set(first.message_index.by_path) == {"limits.py"}  # built, so the update carries it

    (root / "auth.py").write_text("def verify_token(token):\n    return token.valid and token.signed\n")
    (root / "pkg" / "mod3.py").unlink()
    (root / "billing.py").write_text(
        "def charge_card(card, amount):\n    if card.expired:\n"
        "        raise ValueError(f'an expired card cannot be charged {amount}')\n    return card.charge(amount)\n"
    )
    Indexer(settings, root, embedder).run()

    updated = snapshots.current()
    assert updated is not first and snapshots.full_loads == 1  # applied, not reloaded
    assert "billing.py" in updated.files and "pkg/mod3.py" not in updated.files
    loaded = Corpus.load(reader, reader.version())
    _assert_same(updated, loaded)
    assert "message_index" in updated.__dict__  # carried over, only the changed files read again
    assert updated.message_index.by_path == loaded.message_index.by_path
    assert set(updated.message_index.by_path) == {"limits.py", "billing.py"}
    hits = Searcher(snapshots, embedder).search(SearchRequest("charge_card")).results
    assert hits[0].path == "billing.py"


def test_vectors_filled_in_later_reach_the_snapshot(tmp_path: Path) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run(wait_vectors=False)
    reader = ProjectReader(settings.cache_dir, root)
    snapshots = Snapshots(reader, background=False)
    assert snapshots.current().vectors_pending == len(snapshots.current())

    Indexer(settings, root, embedder).run()  # the vector phase only
    filled = snapshots.current()
    assert filled.vectors_pending == 0 and snapshots.full_loads == 1
    _assert_same(filled, Corpus.load(reader, reader.version()))


def test_a_rebuild_is_read_in_full(tmp_path: Path) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    snapshots = Snapshots(ProjectReader(settings.cache_dir, root), background=False)
    snapshots.current()
    Indexer(settings, root, embedder).run(force=True)
    snapshots.current()
    assert snapshots.full_loads == 2


def test_a_large_change_is_read_in_full(tmp_path: Path) -> None:
    root, settings = _setup(tmp_path, files=60)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader = ProjectReader(settings.cache_dir, root)
    snapshots = Snapshots(reader, background=False)
    snapshots.current()
    for i in range(55):
        (root / "pkg" / f"mod{i}.py").write_text(f"def changed_{i}():\n    return {i}\n")
    Indexer(settings, root, embedder).run()
    corpus = snapshots.current()
    assert snapshots.full_loads == 2
    _assert_same(corpus, Corpus.load(reader, reader.version()))


class _Lock:
    """The snapshot's lock, with a hook run as a thread asks for it (before it may have to wait)."""

    def __init__(self, on_ask: Callable[[], None]) -> None:
        self.lock = threading.Lock()
        self.on_ask = on_ask

    def __enter__(self):
        self.on_ask()
        return self.lock.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.lock.__exit__(*exc)


def test_a_query_of_an_unchanged_index_answers_without_the_lock(tmp_path: Path) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    snapshots = Snapshots(ProjectReader(settings.cache_dir, root), background=True)
    searcher = Searcher(snapshots, embedder)
    loaded = snapshots.current()

    def refused() -> None:
        raise AssertionError("a query of an unchanged index asked for the snapshot's lock")

    snapshots._load_lock = _Lock(refused)  # type: ignore[assignment]
    assert searcher.search(SearchRequest("verify_token")).results[0].symbol == "verify_token"
    assert snapshots.loaded is loaded and snapshots.refreshes == 1


def test_a_query_after_a_commit_answers_from_it_before_the_background_refresh_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    snapshots = Snapshots(ProjectReader(settings.cache_dir, root), background=True)
    searcher = Searcher(snapshots, embedder)
    before = snapshots.current()
    poked: list[bool] = []
    monkeypatch.setattr(Snapshots, "_refresh_in_background", lambda self: poked.append(True))  # never runs

    (root / "billing.py").write_text("def charge_card(card, amount):\n    return card.charge(amount)\n")
    Indexer(settings, root, embedder).run()
    snapshots.refresh_soon()  # what a writer in this process does after its commit
    answer = searcher.search(SearchRequest("charge_card"))
    assert poked and answer.results[0].path == "billing.py"
    assert snapshots.loaded is not before and snapshots.refreshes == 2  # refreshed by the query itself


def test_a_query_that_meets_a_running_refresh_waits_for_it_and_refreshes_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    snapshots = Snapshots(ProjectReader(settings.cache_dir, root), background=True)
    searcher = Searcher(snapshots, embedder)
    snapshots.current()
    (root / "billing.py").write_text("def charge_card(card, amount):\n    return card.charge(amount)\n")
    Indexer(settings, root, embedder).run()

    # The background refresh is inside its work, holding the lock, until the query asks for the lock.
    working, query_asks = threading.Event(), threading.Event()
    real_advance = Snapshots._advance

    def advance(self: Snapshots, corpus: Corpus | None, version: IndexVersion) -> Corpus:
        working.set()
        query_asks.wait(60)
        return real_advance(self, corpus, version)

    asker = threading.current_thread()  # the test's thread asks the query

    def note() -> None:
        if threading.current_thread() is asker:
            query_asks.set()

    monkeypatch.setattr(Snapshots, "_advance", advance)
    snapshots._load_lock = _Lock(note)  # type: ignore[assignment]
    snapshots.refresh_soon()
    assert working.wait(60)
    try:
        answer = searcher.search(SearchRequest("charge_card"))
    finally:
        query_asks.set()  # (with a query that did not wait, the refresh must not hang the test)
    assert answer.results[0].path == "billing.py"
    snapshots.wait_for_refresh(timeout=60)
    assert snapshots.refreshes == 2  # the first load and the background refresh: the query added none


def test_a_writer_killed_between_commit_and_record_makes_readers_reload(tmp_path: Path, monkeypatch) -> None:
    from lgrep_core.storage.store import ProjectStore

    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader = ProjectReader(settings.cache_dir, root)
    snapshots = Snapshots(reader, background=False)
    snapshots.current()

    # A run commits chunks and dies before recording the commit (the manifest has the new file).
    (root / "billing.py").write_text("def charge_card(card, amount):\n    return card.charge(amount)\n")

    def die(self: ProjectStore, rows: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ProjectStore, "note_chunk_writes", die)
    with pytest.raises(KeyboardInterrupt):
        Indexer(settings, root, embedder).run()
    monkeypatch.undo()
    Indexer(settings, root, embedder).run()
    corpus = snapshots.current()
    assert "billing.py" in corpus.files and snapshots.full_loads == 2


def _built_whole(reader: ProjectReader) -> Corpus:
    """The snapshot as it was loaded before pages: every column read at once, then `Corpus.build`."""
    from lgrep_search.corpus import COLUMNS

    version = reader.version()
    cols = reader.read_chunks(version, COLUMNS)
    wanted = {k for k in cols["vec_key"] if k}
    keys, matrix = reader.read_vectors(version)
    take = [i for i, k in enumerate(keys) if k in wanted]
    return Corpus.build(cols, [keys[i] for i in take], matrix[take], version)


def _assert_identical(a: Corpus, b: Corpus) -> None:
    """Equal in every column a search reads, and BM25 scores equal to the bit."""
    _assert_same(a, b)
    assert a.scopes == b.scopes and a.signatures == b.signatures and a.refs == b.refs
    assert a.languages == b.languages and a.content_types == b.content_types
    assert a.matrix_keys == b.matrix_keys and np.array_equal(a.vec_row, b.vec_row)
    assert a.matrix.dtype == b.matrix.dtype and np.array_equal(a.matrix, b.matrix)
    assert set(a.lexical.vocab) == set(b.lexical.vocab)
    for terms in ([t] for t in sorted(b.lexical.vocab)):
        assert np.array_equal(a.lexical.scores(terms), b.lexical.scores(terms)), terms
    assert np.array_equal(a.file_lexical.scores(["helper"]), b.file_lexical.scores(["helper"]))


@pytest.mark.parametrize("page_rows", [1, 7, 1024])
def test_a_load_page_by_page_equals_one_of_whole_columns(tmp_path: Path, page_rows: int) -> None:
    root, settings = _setup(tmp_path)
    # A line too long to show (its rest is searchable only), and code that references other code.
    (root / "long.py").write_text("def long_line():\n    return '" + "abc " * 400 + "'\n")
    (root / "calls.py").write_text("from auth import verify_token\n\n\ndef check(t):\n    return verify_token(t)\n")
    embedder = FakeEmbedder()
    reader = ProjectReader(settings.cache_dir, root)

    Indexer(settings, root, embedder).run(wait_vectors=False)  # every vector pending
    pending = Corpus.load(reader, reader.version(), page_rows=page_rows)
    assert pending.vectors_pending == len(pending) > 0 and pending.cut.any()
    _assert_identical(pending, _built_whole(reader))

    Indexer(settings, root, embedder).run()
    (root / "auth.py").write_text("def verify_token(token):\n    return token.valid and token.signed\n")
    Indexer(settings, root, embedder).run()  # the old vector of auth.py stays stored, unused
    loaded = Corpus.load(reader, reader.version(), page_rows=page_rows)
    assert loaded.vectors_pending == 0 and len(loaded.matrix_keys) < len(reader.vector_keys(reader.version()))
    _assert_identical(loaded, _built_whole(reader))


@pytest.mark.parametrize("collide", [False, True], ids=["hashes", "every-key-one-hash"])
def test_a_vector_fill_is_applied_commit_by_commit_without_copying_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collide: bool
) -> None:
    if collide:  # the pending chunks are found by their key's hash: equal hashes must not mix keys
        monkeypatch.setattr("lgrep_search.corpus._key_hash", lambda key: 7)
    root, settings = _setup(tmp_path, files=40)
    settings.index.embed_batch_chunks = 16  # a commit every 16 chunks: many refreshes during the fill
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run(wait_vectors=False)
    reader = ProjectReader(settings.cache_dir, root)
    snapshots = Snapshots(reader, background=False)
    first = snapshots.current()
    assert first.file_lexical.n_docs == len(first.files)  # cached: shared by the snapshots that only add vectors
    seen: list[tuple[Corpus, np.ndarray]] = []

    def refresh(_event: object) -> None:
        corpus = snapshots.current()
        if not seen or corpus is not seen[-1][0]:
            seen.append((corpus, corpus.matrix.copy()))

    Indexer(settings, root, embedder, progress=refresh).run()  # the vector phase only
    last = snapshots.current()
    assert snapshots.full_loads == 1 and last.vectors_pending == 0
    fills = [c for c, _ in seen if 0 < len(c.matrix) < len(last.matrix)]
    assert len(fills) >= 3  # refreshed part way, several times
    assert first.matrix_room is not None and last.matrix_room is first.matrix_room  # the load made the room
    for corpus, matrix in seen:  # an older snapshot's rows never changed under it
        assert np.array_equal(corpus.matrix, matrix)
        assert corpus.contents is first.contents and corpus.lexical is first.lexical
        assert corpus.file_lexical is first.file_lexical
        assert np.array_equal(corpus.vec_row >= 0, np.asarray([k in corpus.matrix_keys for k in corpus.vec_keys]))
    _assert_identical(last, _built_whole(reader))
    _assert_same(last, Corpus.load(reader, reader.version()))


def test_only_the_newest_snapshot_appends_vectors_in_place() -> None:
    from lgrep_search.corpus import _MatrixRoom

    base = np.ones((2, 4), dtype=np.float32)
    a, room = _MatrixRoom.append(base, None, np.full((1, 4), 2, np.float32), room_for=3)
    b, room_b = _MatrixRoom.append(a, room, np.full((1, 4), 3, np.float32), room_for=2)
    assert room_b is room and np.shares_memory(a, b)  # in place, within the room made for the fill
    c, room_c = _MatrixRoom.append(a, room, np.full((1, 4), 4, np.float32), room_for=2)  # `a` is not the newest
    assert room_c is not room and not np.shares_memory(b, c)
    assert b[:, 0].tolist() == [1, 1, 2, 3] and c[:, 0].tolist() == [1, 1, 2, 4] and a[:, 0].tolist() == [1, 1, 2]


def test_a_reader_the_change_log_left_behind_takes_a_fills_vectors_without_reloading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vector fill commits small batches quickly; a big project's snapshot loads slowly. When the
    log no longer reaches back to the snapshot's version but the chunks table did not move, only
    vectors were added: the reader takes them, instead of reloading everything (which took longer
    than the log's reach again, over and over, on a 538k-chunk fill)."""
    monkeypatch.setattr("lgrep_core.storage._changes.CHANGE_LOG_COMMITS", 2)
    root, settings = _setup(tmp_path, files=40)
    settings.index.embed_batch_chunks = 16
    Indexer(settings, root, FakeEmbedder()).run(wait_vectors=False)
    reader = ProjectReader(settings.cache_dir, root)
    snapshots = Snapshots(reader, background=False)
    first = snapshots.current()
    assert first.vectors_pending > 32
    Indexer(settings, root, FakeEmbedder()).run()  # the whole fill while the reader is idle
    assert reader.version().commit - first.version.commit > 2  # past what the log keeps
    last = snapshots.current()
    assert snapshots.full_loads == 1 and last.vectors_pending == 0
    assert last.lexical is first.lexical  # advanced, not reloaded
    _assert_same(last, Corpus.load(reader, reader.version()))

    # Chunks that changed while the log cannot say which: read everything again.
    (root / "auth.py").write_text("def verify_token(token):\n    return token.valid and token.fresh\n")
    Indexer(settings, root, FakeEmbedder()).run()
    changes = reader.dir / reader.version().generation / "changes.json"
    changes.write_text("not json", encoding="utf-8")
    edited = snapshots.current()
    assert snapshots.full_loads == 2 and "token.fresh" in edited.contents[edited.paths.index("auth.py")]
