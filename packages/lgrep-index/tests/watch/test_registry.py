"""Why a project is watched (lgrep_index.watch.registry.Watches, ADR 0024), in one process with real
watchers and a stand-in for the writer: leases watch an indexed project while one is live, expire
unrenewed, and end the watch with the last one; an explicit watch outlives them; the user's unwatch
wins over them and is remembered; a lease never watches a project without an index; a lease released
while its watch starts leaves no watcher behind; and new leases stop at the bounds, renewals never."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from lgrep_core.domain.errors import InvalidRequestError
from lgrep_core.domain.models import WatchLeaseRequest
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.rpc.grpc_server_setup import add_unix_port
from lgrep_core.rpc.grpc_support import server_options
from lgrep_core.rpc.server import ActivityInterceptor, server_interceptors
from lgrep_core.settings.config import LgrepSettings
from lgrep_index.service import IndexServicer, add_index_service
from lgrep_index.watch import registry
from lgrep_index.watch.registry import (
    LEASE_TTL_MIN_S,
    MAX_LEASED_FOLDERS,
    MAX_LEASES,
    MAX_LEASES_PER_FOLDER,
    Watches,
    load_unwatched,
    load_watched,
)
from lgrep_index.watch.watcher import ProjectWatcher


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
    monkeypatch.setattr(registry, "_indexed", lambda settings, root: root in roots)
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


# ---------------------------------------------------------------------------- a release mid-start


class _Watchers:
    """Every ProjectWatcher the server creates, with a hook run when one has started (the moment
    between "the lease may watch it" and the watcher's registration)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[ProjectWatcher] = []
        self.on_start = lambda: None
        outer = self

        class Recorded(ProjectWatcher):
            def start(self) -> None:
                outer.made.append(self)
                super().start()
                outer.on_start()

        monkeypatch.setattr(registry, "ProjectWatcher", Recorded)


@pytest.mark.parametrize("moment", ["index check", "watcher start"])
@pytest.mark.parametrize("path", ["hold", "tick"])
def test_a_lease_released_while_its_watch_starts_leaves_no_watcher(
    watches: Watches, indexed: set[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, moment: str
) -> None:
    """The holder releases its lease (its MCP server exits) right after the server decided the lease
    may watch the project and before the watcher is registered: release() finds no watcher to stop,
    so the start itself must notice, or a watcher nobody holds keeps a watch slot until unwatch."""
    root = _project(tmp_path)
    watchers = _Watchers(monkeypatch)
    released: list[bool] = []

    def release_once() -> None:
        if not released:
            released.append(watches.release(root, "agent"))

    def is_indexed(settings: LgrepSettings, r: Path) -> bool:
        if moment == "index check" and r in indexed:
            release_once()
        return r in indexed

    monkeypatch.setattr(registry, "_indexed", is_indexed)
    if moment == "watcher start":
        watchers.on_start = release_once
    if path == "hold":
        indexed.add(root)
        lease = watches.hold(root, "agent", 30)
        assert not lease.watched and "ended" in lease.detail
    else:
        assert not watches.hold(root, "agent", 30).watched  # it waits for an index
        indexed.add(root)  # the first search built it: the next tick watches it
        watches.tick()
    assert released == [True]  # the release did happen at that moment
    assert watches.watched() == set() and watches.leases(root) == 0
    assert all(not w.running for w in watchers.made)  # a watcher started for it was stopped
    watches.tick()
    assert watches.watched() == set()


def test_an_explicit_watch_started_while_a_lease_ends_stays(
    watches: Watches, indexed: set[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other way round: the last lease ends as `lgrep watch` registers its watcher (when it asks
    for the catch-up run); the watch asked for is recorded with the registration, so the end of the
    lease does not stop it."""
    root = _project(tmp_path)
    indexed.add(root)
    watches.hold(root, "agent", 30)
    watches.unwatch(root)  # not watched now, and the lease stays
    submit = watches.jobs.submit

    def submit_and_release(root: Path, **kwargs: Any) -> None:
        submit(root, **kwargs)
        watches.release(root, "agent")

    monkeypatch.setattr(watches.jobs, "submit", submit_and_release)
    assert watches.watch(root).watched and watches.leases(root) == 0
    assert watches.watched() == {root} and watches.asked() == {root}


# ---------------------------------------------------------------------------- bounds on leases


def test_new_leases_stop_at_the_bounds_and_renewals_never_do(
    watches: Watches, indexed: set[Path], tmp_path: Path
) -> None:
    """2,000 leased folders kept an idle daemon at ~20% of a core: leases are bounded per folder,
    in folders and in all, with a refusal that says the limit, the count and what to do."""
    assert watches.settings.server.max_watched_projects < MAX_LEASED_FOLDERS  # the folder bound is ours
    folders = [tmp_path / f"f{i}" for i in range(MAX_LEASED_FOLDERS)]
    for folder in folders:
        assert watches.hold(folder, "agent", 30).leases == 1
    with pytest.raises(InvalidRequestError) as refused:
        watches.hold(tmp_path / "one-more", "agent", 30)
    message = refused.value.message
    assert f"on {MAX_LEASED_FOLDERS} folders, the limit ({MAX_LEASED_FOLDERS}" in message
    assert "MCP servers" in message and "lgrep watch" in message
    assert watches.leases(tmp_path / "one-more") == 0
    assert watches.hold(folders[0], "agent", 30).leases == 1  # a renewal at the bound
    assert watches.hold(folders[0], "other", 30).leases == 2  # another holder of a leased folder
    watches.release(folders[1], "agent")
    assert watches.hold(tmp_path / "one-more", "agent", 30).leases == 1  # room again

    for i in range(2, MAX_LEASES_PER_FOLDER):
        watches.hold(folders[0], f"h{i}", 30)
    with pytest.raises(InvalidRequestError, match=rf"already has {MAX_LEASES_PER_FOLDER} watch leases, the limit"):
        watches.hold(folders[0], "made-up", 30)
    assert watches.hold(folders[0], "h2", 30).leases == MAX_LEASES_PER_FOLDER  # renewed

    held = sum(watches.leases(f) for f in [*folders, tmp_path / "one-more"])
    for folder in folders[2:]:
        for i in range(MAX_LEASES_PER_FOLDER - 1):
            if held == MAX_LEASES:
                break
            watches.hold(folder, f"h{i}", 30)
            held += 1
    assert held == MAX_LEASES
    with pytest.raises(InvalidRequestError, match=rf"already holds {MAX_LEASES} watch leases, the limit"):
        watches.hold(folders[-1], "made-up", 30)
    assert watches.hold(folders[-1], "agent", 30).leases >= 1  # renewed


def test_the_folder_bound_follows_a_larger_watch_limit(indexed: set[Path], tmp_path: Path) -> None:
    settings = LgrepSettings.model_validate(
        {"index": {"cache_dir": str(tmp_path / "cache")}, "server": {"max_watched_projects": MAX_LEASED_FOLDERS + 8}}
    )
    watches = Watches(settings, _Jobs(), remember=False)  # type: ignore[arg-type]
    for i in range(MAX_LEASED_FOLDERS + 8):
        watches.hold(tmp_path / f"f{i}", "agent", 30)
    with pytest.raises(InvalidRequestError, match=rf"the limit \({MAX_LEASED_FOLDERS + 8}: the larger of"):
        watches.hold(tmp_path / "one-more", "agent", 30)


@pytest.fixture
def index_server(watches: Watches) -> Iterator[Path]:
    """The real IndexService on Watches, behind the daemon's interceptors, on a unix socket (a
    short folder: socket paths are limited to ~107 bytes); stopped afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="lgrep-", dir="/tmp"))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        interceptors=server_interceptors(watches.settings, ActivityInterceptor()),
        options=server_options(),
    )
    add_index_service(server, IndexServicer(watches.settings, watches.jobs, watches))
    add_unix_port(server, folder / "lgrep.sock")
    server.start()
    try:
        yield folder / "lgrep.sock"
    finally:
        server.stop(grace=None).wait(10)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_refused_lease_is_a_clear_error_over_grpc(index_server: Path, indexed: set[Path], tmp_path: Path) -> None:
    folders = [tmp_path / f"f{i}" for i in range(MAX_LEASED_FOLDERS + 1)]
    for folder in folders:
        folder.mkdir()
    with LgrepClient.connect(socket_path=index_server) as client:
        for folder in folders[:-1]:
            client.call(WatchLeaseRequest(str(folder), "agent", 30))
        with pytest.raises(InvalidRequestError, match=rf"on {MAX_LEASED_FOLDERS} folders, the limit") as refused:
            client.call(WatchLeaseRequest(str(folders[-1]), "agent", 30))
        assert "lgrep watch" in refused.value.message
        assert client.call(WatchLeaseRequest(str(folders[0]), "agent", 30)).leases == 1  # renewals go on
