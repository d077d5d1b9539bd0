"""Answers at a released version from the searchers a daemon holds: resolution, caching, eviction."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.models import ListVersionsRequest, SearchRequest
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.versions import VersionStore, store_location
from lgrep_core.testing.fakes import FakeEmbedder
from lgrep_core.testing.repos import git, write_tagged_repo
from lgrep_index.tags import TagIndexer
from lgrep_search.projects import ProjectSearchers


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[LgrepSettings, Path]:
    repo = write_tagged_repo(tmp_path / "mono", agent_releases=3, server_releases=1)
    git(repo.root, "tag", "agent-v0.4.0-rc.1")
    settings = LgrepSettings.model_validate(
        {
            "index": {"cache_dir": str(tmp_path / "cache")},
            "server": {"snapshot_idle_s": 30},
            "versions": {"scopes": {"agent": ["agent"], "server": ["server"]}, "cached_versions": 2},
        }
    )
    store = VersionStore(store_location(settings.cache_dir, "", repo.root))
    TagIndexer(settings, repo.root, FakeEmbedder(), store).run()
    return settings, repo.root


def test_latest_skips_prereleases_and_ranges_take_them_only_when_named(indexed: tuple[LgrepSettings, Path]) -> None:
    settings, root = indexed
    searchers = ProjectSearchers(settings, FakeEmbedder(), background=False)
    index = searchers.releases(root)
    assert index.resolve("agent", "latest")[0].version == "0.3.0"
    assert index.resolve("agent", "")[0].version == "0.3.0"
    assert index.resolve("agent", ">=0.4.0-rc.0")[0].version == "0.4.0-rc.1"
    assert index.resolve("agent", "0.4.0-rc.1")[0].prerelease is True
    assert searchers.list_versions(ListVersionsRequest(str(root), "agent"))[0].version == "0.4.0-rc.1"
    with pytest.raises(NotFoundError, match=re.escape("0.4.0-rc.1, 0.3.0, 0.2.0, 0.1.0")):
        index.resolve("agent", "^2")


def test_versions_stay_in_memory_up_to_the_limit_and_go_when_idle(indexed: tuple[LgrepSettings, Path]) -> None:
    settings, root = indexed
    searchers = ProjectSearchers(settings, FakeEmbedder(), background=False)
    for version in ("0.1.0", "0.2.0", "0.3.0"):
        answer = searchers.search(SearchRequest("run the task", str(root), component="agent", version=version))
        assert answer.release is not None and answer.release.version == version
    index = searchers.releases(root)
    assert len(index._corpora) == 2  # versions.cached_versions
    again = searchers.search(SearchRequest("run the task", str(root), component="agent", version="0.3.0"))
    assert "load_ms" not in again.timings_ms  # answered from memory
    searchers.evict()
    assert len(index._corpora) == 2  # used just now: not idle
    index.last_used -= 60  # a minute without a query, past server.snapshot_idle_s
    searchers.evict()
    assert not index._corpora
