"""A reader and a rebuild of the same index in one process: the reader follows the published
generation, even when the rebuild deletes the generation it was loading."""

from __future__ import annotations

from pathlib import Path

import pytest
from lgrep_core.domain.errors import StorageError
from lgrep_core.domain.models import SearchRequest
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.storage.store import ProjectStore
from lgrep_core.testing import FakeEmbedder
from lgrep_index.pipeline import Indexer
from lgrep_search.corpus import Corpus
from lgrep_search.searcher import Searcher
from lgrep_search.snapshot import Snapshots


def _setup(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "auth.py").write_text("def verify_token(token):\n    return token.valid\n")
    settings = load_settings(
        None, env={"LGREP_CACHE_DIR": str(tmp_path / "cache")}, user_config=tmp_path / "none"
    ).settings
    return root, settings


def test_a_reader_follows_a_rebuild_that_deleted_the_generation_it_was_loading(tmp_path: Path, monkeypatch) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader = ProjectReader(settings.cache_dir, root)
    store = ProjectStore(settings.cache_dir, root)
    first = store.generations()

    real_read = ProjectReader.read_chunks
    rebuilt: list[bool] = []

    def read_during_a_rebuild(self: ProjectReader, *args, **kwargs):
        # The load has read the version of the first generation; now a rebuild publishes and deletes
        # it, and the read fails as LanceDB does on files that vanished.
        if not rebuilt:
            rebuilt.append(True)
            Indexer(settings, root, embedder).run(force=True)
            assert store.generations() != first
            raise self.damaged(FileNotFoundError("data/0.lance"))
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(ProjectReader, "read_chunks", read_during_a_rebuild)
    answer = Searcher(Snapshots(reader), embedder).search(SearchRequest("verify_token"))
    assert rebuilt and answer.results[0].symbol == "verify_token"


def test_a_reader_opened_before_a_rebuild_sees_the_new_index(tmp_path: Path) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader = Searcher(Snapshots(ProjectReader(settings.cache_dir, root), background=False), embedder)
    assert reader.search(SearchRequest("verify_token")).results
    (root / "session.py").write_text("def open_session(user):\n    return user.session\n")
    Indexer(settings, root, embedder).run(force=True)
    assert reader.search(SearchRequest("open_session")).results[0].symbol == "open_session"


def test_a_failed_read_without_a_rebuild_is_reported_as_damage(tmp_path: Path, monkeypatch) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader = ProjectReader(settings.cache_dir, root)

    def broken_read(self: ProjectReader, *args, **kwargs):
        raise self.damaged(OSError("torn file"))

    monkeypatch.setattr(ProjectReader, "read_chunks", broken_read)
    with pytest.raises(StorageError, match="lgrep index --force"):
        Searcher(Snapshots(reader), embedder).search(SearchRequest("verify_token"))


def test_results_of_a_replaced_generation_are_still_checked_for_staleness(tmp_path: Path, monkeypatch) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader = ProjectReader(settings.cache_dir, root)
    real_stale = Searcher._stale_paths
    rebuilt: list[bool] = []

    def stale_after_a_rebuild(self: Searcher, corpus: Corpus, paths: set[str]) -> set[str]:
        # The snapshot is loaded; a rebuild now publishes and deletes the generation it came from,
        # before this process has read that generation's manifest.
        if not rebuilt:
            rebuilt.append(True)
            Indexer(settings, root, embedder).run(force=True)
        return real_stale(self, corpus, paths)

    monkeypatch.setattr(Searcher, "_stale_paths", stale_after_a_rebuild)
    answer = Searcher(Snapshots(reader), embedder).search(SearchRequest("verify_token"))
    assert rebuilt and answer.results[0].symbol == "verify_token" and not answer.results[0].stale


def test_a_first_build_killed_before_it_wrote_its_metadata_is_started_again(tmp_path: Path) -> None:
    root, settings = _setup(tmp_path)
    embedder = FakeEmbedder()
    store = ProjectStore(settings.cache_dir, root)
    (store.dir / "gen-18ea961a8ae5bd70-99999").mkdir(parents=True)  # what `create` makes first
    summary = Indexer(settings, root, embedder).run()
    assert summary.created and summary.files_indexed == 1
    assert store.generations() != ["gen-18ea961a8ae5bd70-99999"]
