"""The separate processes of the design card: `lgrep-index watch` as the single writer and watcher,
`lgrep-search serve` as readers that can be scaled, and `lgrep watch` through the daemon. Every
process is started for real and stopped at the end."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.models import FindSymbolRequest, ListProjectsRequest, SearchRequest, SearchType, StatusRequest
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.testing.standins import EmbeddingStandIn

pytestmark = [pytest.mark.slow, pytest.mark.model]

BIN = Path(sys.executable).parent


class Servers:
    """Server processes of one cache dir, each started until it says it listens."""

    def __init__(self, env: dict[str, str], cache: Path) -> None:
        self.env = env
        self.cache = cache
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, program: str, *args: str) -> subprocess.Popen[bytes]:
        read_fd, write_fd = os.pipe()
        with (self.cache / f"{program}.log").open("ab") as log:
            proc = subprocess.Popen(
                [str(BIN / program), *args, "--ready-fd", str(write_fd)],
                pass_fds=(write_fd,),
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=self.cache,
            )
        self.processes.append(proc)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as ready:
            line = ready.readline().decode()
        if not line.startswith("ready"):
            proc.wait(timeout=30)
            raise AssertionError(f"{program} did not start: {(self.cache / f'{program}.log').read_text()[-2000:]}")
        return proc

    def stop_all(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.processes:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


@pytest.fixture
def servers(daemon) -> Iterator[Servers]:
    handle = Servers(daemon.lgrep.env, daemon.cache)
    try:
        yield handle
    finally:
        handle.stop_all()


def _indexed(client: LgrepClient, root: Path) -> bool:
    try:
        return client.call(StatusRequest(str(root))).indexed
    except NotFoundError:  # the writer has not started its first index yet
        return False


def _top_path(client: LgrepClient, root: Path, query: str) -> str | None:
    results = client.call(SearchRequest(query, project_root=str(root), search_type=SearchType.BM25)).results
    return results[0].path if results else None


def test_a_reader_started_before_an_update_sees_it_without_restarting(
    wait_for, daemon, servers, mini_repo: Path
) -> None:
    daemon.lgrep("index", str(mini_repo), "--no-daemon")
    servers.start("lgrep-search", "serve", "--socket", str(daemon.cache / "r1.sock"))
    servers.start("lgrep-search", "serve", "--socket", str(daemon.cache / "r2.sock"))
    readers = [LgrepClient.connect(socket_path=daemon.cache / f"r{i}.sock") for i in (1, 2)]
    try:
        for reader in readers:
            assert reader.server_info().roles and reader.call(SearchRequest("token", str(mini_repo))).results
        (mini_repo / "billing.py").write_text(
            "def charge_customer_card(card, amount):\n    return card.charge(amount)\n"
        )
        daemon.lgrep("index", str(mini_repo), "--no-daemon")  # a writer in another process
        for reader in readers:
            found = wait_for(
                lambda r=reader: _top_path(r, mini_repo, "charge_customer_card") == "billing.py",
                30,
                "a running reader to see the new file",
            )
            assert found
    finally:
        for reader in readers:
            reader.close()


def test_the_writer_watches_and_readers_follow(wait_for, daemon, servers, mini_repo: Path) -> None:
    servers.start("lgrep-index", "watch", str(mini_repo), "--socket", str(daemon.cache / "w.sock"))
    with LgrepClient.connect(socket_path=daemon.cache / "w.sock") as writer:
        wait_for(lambda: _indexed(writer, mini_repo), 120, "the first index of the watched project")
        assert [p.project_root for p in writer.call(ListProjectsRequest()) if p.watched] == [str(mini_repo.resolve())]
    servers.start("lgrep-search", "serve", "--socket", str(daemon.cache / "r.sock"))
    with LgrepClient.connect(socket_path=daemon.cache / "r.sock") as reader:
        assert reader.call(SearchRequest("token", str(mini_repo))).results
        # An editor's atomic save: a temp file renamed over the target.
        temp = mini_repo / ".billing.py.swp"
        temp.write_text("def refund_customer_payment(payment):\n    return payment.refund()\n")
        temp.replace(mini_repo / "billing.py")
        started = time.monotonic()
        wait_for(lambda: _top_path(reader, mini_repo, "refund_customer_payment") == "billing.py", 30, "the saved file")
        assert time.monotonic() - started < 30

        # Then by vector as well: its chunk gets its embedding (committed just after its text).
        def by_vector() -> bool:
            vector = reader.call(
                SearchRequest("refund a customer's payment", str(mini_repo), search_type=SearchType.VECTOR)
            )
            return vector.vectors_pending == 0 and any(h.path == "billing.py" for h in vector.results)

        wait_for(by_vector, 30, "the saved file's vector")
        # A second writer for the same cache dir refuses.
    second = subprocess.run(
        [str(BIN / "lgrep-index"), "watch", str(mini_repo), "--socket", str(daemon.cache / "w2.sock")],
        env=servers.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert second.returncode == 1 and "already the writer" in second.stderr, second.stderr


def test_lgrep_watch_keeps_a_project_fresh_through_a_branch_switch_and_its_removal(
    wait_for, daemon, mini_repo: Path, make_repo
) -> None:
    make_repo(mini_repo / "generated", 300, distinct=False)
    daemon.lgrep("index", str(mini_repo))
    assert "now watched" in daemon.lgrep("watch", str(mini_repo)).err
    assert "already watched" in daemon.lgrep("watch", str(mini_repo)).err
    assert "no longer watched" in daemon.lgrep("unwatch", str(mini_repo)).err
    assert "was not watched" in daemon.lgrep("unwatch", str(mini_repo)).err
    assert "now watched" in daemon.lgrep("watch", str(mini_repo)).err
    assert daemon.lgrep("status", str(mini_repo), "--json").json()["watched"] is True
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        # A branch switch: hundreds of files rewritten at once, one removed folder, one new file.
        for path in sorted((mini_repo / "generated").rglob("*.py"))[:250]:
            path.write_text(path.read_text().replace("handler_0_", "switched_handler_"))
        shutil.rmtree(mini_repo / "generated" / "pkg3")
        (mini_repo / "branch_only.py").write_text("def only_on_the_new_branch():\n    return True\n")
        wait_for(lambda: _top_path(client, mini_repo, "only_on_the_new_branch") == "branch_only.py", 60, "the branch")
        wait_for(
            lambda: (
                not client.call(FindSymbolRequest(str(mini_repo), "handler_0_1", limit=1000))
                or all(
                    "pkg3" not in m.location.path
                    for m in client.call(FindSymbolRequest(str(mini_repo), "handler_0_1", limit=1000))
                )
            ),
            60,
            "the removed folder to leave the index",
        )
        # The project's own settings change: what they now ignore leaves the index.
        before = client.call(FindSymbolRequest(str(mini_repo), "switched_handler_1", limit=1000))
        assert any(m.location.path.startswith("generated/") for m in before)
        (mini_repo / ".lgrep.yaml").write_text("index:\n  ignore_patterns: ['generated/']\n")
        wait_for(
            lambda: all(
                not m.location.path.startswith("generated/")
                for m in client.call(FindSymbolRequest(str(mini_repo), "switched_handler_1", limit=1000))
            ),
            60,
            "the newly ignored folder to leave the index",
        )
        # The project folder disappears: the daemon stops watching it and keeps serving.
        shutil.rmtree(mini_repo)
        wait_for(
            lambda: not any(p.watched for p in client.call(ListProjectsRequest())), 30, "the daemon to stop watching"
        )
        assert client.server_info().pid > 0


def test_search_works_beside_a_standalone_writer(wait_for, daemon, servers, mini_repo: Path) -> None:
    with EmbeddingStandIn("openai", dimension=64) as embedder:
        servers.env.update(
            {
                "LGREP_EMBEDDING_PROVIDER": "openai",
                "LGREP_EMBEDDING_BASE_URL": embedder.base_url,
                "LGREP_EMBEDDING_DIMENSIONS": "64",
                "OPENAI_API_KEY": "test-key",
            }
        )
        writer_proc = servers.start("lgrep-index", "watch", str(mini_repo), "--socket", str(daemon.cache / "w.sock"))
        with LgrepClient.connect(socket_path=daemon.cache / "w.sock") as writer:
            wait_for(lambda: _indexed(writer, mini_repo), 120, "the first index of the watched project")
        # `lgrep search` starts a daemon; the watcher is the writer, so the daemon serves it read-only.
        found = daemon.lgrep("search", "verify the token signature", str(mini_repo), "--json", timeout=60)
        assert found.json()["results"], found.err
        status = daemon.lgrep("serve", "--status", "--json").json()
        assert status["roles"] == ["search"], status
        # A write through that daemon fails at once, naming the writer.
        refused = daemon.lgrep("index", str(mini_repo), "--yes", check=False, timeout=60)
        assert refused.code == 1 and f"pid {writer_proc.pid}" in refused.err and "read-only" in refused.err, refused.err
        # Once the writer is gone, the daemon takes over its role (and its watch list).
        writer_proc.send_signal(signal.SIGTERM)
        writer_proc.wait(timeout=60)
        wait_for(
            lambda: daemon.lgrep("serve", "--status", "--json").json()["roles"] == ["index", "search"],
            30,
            "the daemon to become the writer",
        )
        assert daemon.lgrep("serve", "--status", "--json").json()["watched_projects"] == [str(mini_repo.resolve())]
