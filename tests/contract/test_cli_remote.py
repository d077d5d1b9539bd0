"""The `lgrep` command's search through a running daemon (lgrep_cli.remote.search_running) against the
fake services: one round trip, with the handshake's checks (contract revision, model) kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from lgrep_cli.remote import search_running
from lgrep_core import errors, wire
from lgrep_core.endpoints import ClientSettings
from lgrep_core.models import SearchRequest
from lgrep_core.testing.grpc_fakes import BUSY_ROOT, RunningServer

SERVED = {"provider": "local", "model": "all-MiniLM-L6-v2", "dimension": 384}  # what the fake serves


def _settings(socket_path: Path, **embedding: object) -> ClientSettings:
    return ClientSettings(
        cache_dir=socket_path.parent,
        socket_path=socket_path,
        autostart=True,
        embedding={**SERVED, **embedding},
        log_level="WARNING",
    )


def test_a_running_daemon_answers_the_search(lgrep_server: RunningServer) -> None:
    response = search_running(_settings(lgrep_server.socket_path), SearchRequest("verify", project_root="/p"))
    assert response is not None and [h.path for h in response.results] == ["src/auth.py", "src/session.py"]
    assert [rpc for rpc, _ in lgrep_server.fake.requests] == ["Search"]


@pytest.mark.parametrize("root", ["/p", BUSY_ROOT])  # the refusal comes first, even when the search fails
def test_a_daemon_serving_another_model_is_refused(lgrep_server: RunningServer, root: str) -> None:
    with pytest.raises(errors.ConfigError, match=r"serves local/all-MiniLM-L6-v2 \(384 d\), but this command's"):
        search_running(_settings(lgrep_server.socket_path, dimension=768), SearchRequest("verify", project_root=root))


def test_a_daemon_of_another_contract_revision_is_refused(
    lgrep_server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "CONTRACT_REVISION", 3)
    lgrep_server.fake.contract_revision = 4
    with pytest.raises(errors.ContractMismatchError, match="the server is newer"):
        search_running(_settings(lgrep_server.socket_path), SearchRequest("verify", project_root="/p"))


def test_no_daemon_means_the_long_way(short_dir: Path) -> None:
    assert search_running(_settings(short_dir / "lgrep.sock"), SearchRequest("verify", project_root="/p")) is None
    (short_dir / "lgrep.sock").touch()  # a socket file left behind by a daemon that is gone
    assert search_running(_settings(short_dir / "lgrep.sock"), SearchRequest("verify", project_root="/p")) is None
