"""Why a project is watched (lgrep_index.watching.Watches, ADR 0024), in one process with real
watchers and a stand-in for the writer: leases watch an indexed project while one is live, expire
unrenewed, and end the watch with the last one; an explicit watch outlives them; the user's unwatch
wins over them and is remembered; a lease never watches a project without an index."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.config import LgrepSettings
from lgrep_index import watching
from lgrep_index.watching import LEASE_TTL_MIN_S, Watches, load_unwatched, load_watched


class _Jobs:
    """The writer: records the catch-up runs a watch asks for."""

    def __init__(self) -> None:
        self.submitted: list[Path] = []

    def submit(self, root: Path, **_: object) -> None:
        self.submitted.append(root)


@pytest.fixture
def indexed(monkeypatch: pytest.MonkeyPatch) -> set[Path]:
    """The projects that have an index (a lease watches only those)."""
    roots: set[Path] = set()
    monkeypatch.setattr(watching, "_indexed", lambda settings, root: root in roots)
    return roots


@pytest.fixture
def watches(tmp_path: Path) -> Iterator[Watches]:
    settings = LgrepSettings.model_validate({"index": {"cache_dir": str(tmp_path / "cache")}})
    made = Watches(settings, _Jobs())  # type: ignore[arg-type]
    yield made
    made.close()


def _project(tmp_path: Path, name: str = "p") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "a.py").write_text("A = 1\n")
    return root.resolve()


def test_leases_watch_until_the_last_one_ends(watches: Watches, indexed: set[Path], tmp_path: Path) -> None:
    root = _project(tmp_path)
    indexed.add(root)
    first = watches.hold(root, "one", 30)
    assert (first.watched, first.leases, first.ttl_s) == (True, 1, 30)
    assert watches.hold(root, "two", 30).leases == 2
    assert watches.hold(root, "one", 30).leases == 2  # a renewal, not a second lease
    assert watches.release(root, "one") and root in watches.watched()
    assert not watches.release(root, "one")
    assert watches.release(root, "two") and root not in watches.watched()
    assert watches.asked() == set() and load_watched(watches.settings.cache_dir) == []  # leases are not saved


def test_an_unrenewed_lease_expires(watches: Watches, indexed: set[Path], tmp_path: Path) -> None:
    root = _project(tmp_path)
    indexed.add(root)
    lease = watches.hold(root, "killed", 0.1)
    assert lease.ttl_s == LEASE_TTL_MIN_S and lease.watched  # the server bounds the ttl
    watches.tick()
    assert root in watches.watched()  # not yet
    deadline = time.monotonic() + LEASE_TTL_MIN_S + 5
    while root in watches.watched():
        assert time.monotonic() < deadline, "the lease never expired"
        watches.tick()
        time.sleep(0.05)
    assert watches.leases(root) == 0


def test_a_lease_waits_for_an_index_and_never_starts_one(watches: Watches, indexed: set[Path], tmp_path: Path) -> None:
    root = _project(tmp_path)
    lease = watches.hold(root, "agent", 30)
    assert not lease.watched and "no index yet" in lease.detail and lease.leases == 1
    watches.tick()
    assert root not in watches.watched() and watches.jobs.submitted == []  # type: ignore[attr-defined]
    indexed.add(root)  # the first search built it
    watches.tick()
    assert root in watches.watched()


def test_an_explicit_watch_outlives_leases_and_unwatch_wins(
    watches: Watches, indexed: set[Path], tmp_path: Path
) -> None:
    root = _project(tmp_path)
    indexed.add(root)
    watches.hold(root, "agent", 30)
    assert watches.watch(root).already_watched
    watches.release(root, "agent")
    assert root in watches.watched() and watches.asked() == {root}
    assert load_watched(watches.settings.cache_dir) == [root]

    watches.hold(root, "agent", 30)
    assert watches.unwatch(root) and root not in watches.watched()
    again = watches.hold(root, "agent", 30)
    assert not again.watched and "lgrep unwatch" in again.detail
    watches.tick()
    assert root not in watches.watched()
    assert load_unwatched(watches.settings.cache_dir) == [root] and load_watched(watches.settings.cache_dir) == []
    # A new server remembers the user's choice; `watch` lifts it.
    restarted = Watches(watches.settings, _Jobs())  # type: ignore[arg-type]
    try:
        assert not restarted.hold(root, "agent", 30).watched  # even before it restores its watches
        restarted.restore()
        assert not restarted.hold(root, "agent", 30).watched
        restarted.watch(root)
        assert restarted.hold(root, "agent", 30).watched and load_unwatched(watches.settings.cache_dir) == []
    finally:
        restarted.close()


def test_forgetting_a_removed_index_keeps_the_leases(watches: Watches, indexed: set[Path], tmp_path: Path) -> None:
    root = _project(tmp_path)
    indexed.add(root)
    watches.watch(root)
    watches.hold(root, "agent", 30)
    indexed.discard(root)  # `lgrep clean`
    assert watches.forget(root) and root not in watches.watched() and watches.leases(root) == 1
    watches.tick()
    assert root not in watches.watched()
    indexed.add(root)  # indexed again: the lease watches it again (not an unwatch)
    watches.tick()
    assert root in watches.watched()
