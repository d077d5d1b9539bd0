"""A search that follows a status (or an index run's summary) answers from that state or a newer one,
never from the snapshot before it, through the daemon the `lgrep` commands use.

The daemon runs in this test's process (`lgrep_cli.daemon.build_daemon`: the roles, services and
hooks `lgrep serve` runs; its maintenance loop, whose polls only start the background refreshes held
here, is left out) and the commands talk to it over its socket as they would to `lgrep serve`. Living
in the test's process lets the test decide when the daemon's background work may go on: its
snapshot refreshes (`Snapshots._background_refresh`, started by a writer's poke after each commit)
wait until the test lets them, and so may its embedding. Before the fix a search answered from the
snapshot it held while such a refresh was pending, so these tests failed every time (not now and
then, as the end-to-end tests whose race this is: a status saying `vectors_pending: 0` followed by
a search answering with vectors still pending).
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lgrep_search.snapshot import Snapshots

from tests.conftest import InProcessLgrep

pytestmark = [pytest.mark.slow, pytest.mark.model]

# A bound on every wait for the held daemon's threads, so that a bug fails the test instead of
# hanging it; the tests never wait this long when lgrep works.
HOLD_S = 120.0


@dataclass
class HeldDaemon:
    """A daemon in this process, and the gates of its background work (set: may go on)."""

    lgrep: InProcessLgrep
    daemon: Any  # lgrep_cli.daemon.Daemon
    refreshes: threading.Event = field(default_factory=threading.Event)
    embedding: threading.Event = field(default_factory=threading.Event)
    refresh_threads: list[threading.Thread] = field(default_factory=list)

    def release(self) -> None:
        self.refreshes.set()
        self.embedding.set()


@pytest.fixture
def held_daemon(model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldDaemon]:
    from lgrep_cli.daemon import build_daemon
    from lgrep_core.settings.config import load_settings

    # A short cache dir: its socket's path must fit a unix socket address (~107 bytes).
    cache = Path(tempfile.mkdtemp(prefix="lgh-", dir="/tmp"))
    (cache / "models").symlink_to(model_dir, target_is_directory=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_") and k != "XDG_CONFIG_HOME"}
    env.update({"HOME": str(home), "LGREP_CACHE_DIR": str(cache), "LGREP_SERVER__AUTOSTART": "0"})
    # The daemon's threads read the environment too (a project's settings, when a job starts after a
    # command returned): this process has the commands' environment for the whole test.
    for key in list(os.environ):
        if key not in env:
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    switch_interval = sys.getswitchinterval()  # a server lowers it for its process

    held: HeldDaemon | None = None
    real_refresh = Snapshots._background_refresh

    def held_refresh(self: Snapshots) -> None:
        assert held is not None
        held.refresh_threads.append(threading.current_thread())
        if held.refreshes.wait(HOLD_S):
            real_refresh(self)

    monkeypatch.setattr(Snapshots, "_background_refresh", held_refresh)
    settings = load_settings(None).settings
    daemon = None
    try:
        daemon = build_daemon(settings, settings.socket_path)
        held = HeldDaemon(InProcessLgrep(cache, env), daemon)
        held.embedding.set()  # embedding goes on unless a test holds it
        real_embed: Callable[[Sequence[str]], Any] = daemon.embedder.embed_documents

        def held_embed(texts: Sequence[str]) -> Any:
            assert held is not None
            held.embedding.wait(HOLD_S)
            return real_embed(texts)

        monkeypatch.setattr(daemon.embedder, "embed_documents", held_embed)
        daemon.runtime.on_stop(daemon.role.close)
        daemon.runtime.on_stop(daemon.searchers.close)
        daemon.runtime.start(daemon.install)
        daemon.role.start_writing()
        yield held
    finally:
        if held is not None:
            held.release()
            for thread in held.refresh_threads:
                thread.join(HOLD_S)
        if daemon is not None:
            daemon.runtime.stop()
            faulthandler.cancel_dump_traceback_later()  # the stop's deadline is for a process that exits
        sys.setswitchinterval(switch_interval)
        shutil.rmtree(cache, ignore_errors=True)


def test_a_search_after_a_status_saying_vectors_complete_has_every_vector(
    held_daemon: HeldDaemon, wait_for: Callable[..., Any], mini_repo: Path
) -> None:
    lgrep, repo = held_daemon.lgrep, str(mini_repo)
    held_daemon.embedding.clear()  # the fill behind `--no-wait` waits until the snapshot is loaded
    quick = lgrep("index", repo, "--no-wait", "--json").json()
    assert quick["vectors_pending"] == quick["chunks_total"] > 0
    early = lgrep("search", "verify the token signature", repo, "--json").json()
    assert early["vectors_pending"] == quick["chunks_total"]  # the daemon holds this snapshot now

    held_daemon.embedding.set()  # the fill goes on; the daemon's snapshot refreshes stay held
    wait_for(
        lambda: lgrep("status", repo, "--json").json()["vectors_pending"] == 0, HOLD_S, "the status to say complete"
    )
    answer = lgrep("search", "verify the token signature", repo, "--json").json()
    assert answer["vectors_pending"] == 0, "the search answered from the snapshot before the status"
    by_vector = lgrep("search", "verify the token signature", repo, "--json", "--type", "vector").json()
    assert by_vector["vectors_pending"] == 0 and by_vector["results"][0]["path"] == "auth/tokens.py"


def test_a_search_after_an_index_summary_finds_what_it_indexed(held_daemon: HeldDaemon, mini_repo: Path) -> None:
    lgrep, repo = held_daemon.lgrep, str(mini_repo)
    first = lgrep("index", repo, "--json").json()
    assert lgrep("search", "charge the customer's card", repo, "--json").json()["results"]  # the snapshot, loaded
    (mini_repo / "billing.py").write_text("def charge_customer_card(card, amount):\n    return card.charge(amount)\n")
    summary = lgrep("index", repo, "--json").json()
    assert summary["files_indexed"] == 1 and summary["chunks_total"] > first["chunks_total"]
    assert summary["vectors_pending"] == 0
    answer = lgrep("search", "charge_customer_card", repo, "--json").json()
    assert answer["results"] and answer["results"][0]["path"] == "billing.py", answer["results"][:1]
    assert answer["chunks_searched"] == summary["chunks_total"]
