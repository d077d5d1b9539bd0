"""lgrep_cli.local.LocalEngine, the in-process engine: it serves every use case through its one
table, anchors what it is given as the daemon's clients do, and answers what needs no index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lgrep_cli.local import LocalEngine
from lgrep_core.domain.errors import InvalidRequestError, NotFoundError, ServerUnavailableError
from lgrep_core.domain.models import (
    USE_CASES,
    CancelIndexRequest,
    CancelResult,
    GetFileRequest,
    ListProjectsRequest,
    ReleaseWatchLeaseRequest,
    RemoveProjectRequest,
    Request,
    StatusRequest,
    UnwatchProjectRequest,
    WatchLeaseRequest,
    WatchProjectRequest,
)
from lgrep_core.settings.config import load_settings


@pytest.fixture
def engine(tmp_path: Path) -> LocalEngine:
    env = {"LGREP_CACHE_DIR": str(tmp_path / "cache")}
    return LocalEngine(load_settings(None, env=env, user_config=tmp_path / "none").settings)


def test_every_use_case_has_a_handler(engine: LocalEngine) -> None:
    assert [kind.__name__ for kind in USE_CASES if kind not in engine.call] == []


def test_a_request_type_it_does_not_serve_is_an_invalid_request(engine: LocalEngine) -> None:
    class Elsewhere(Request[int]):
        __slots__ = ()

        def validate(self) -> Elsewhere:
            return self

    with pytest.raises(InvalidRequestError, match="Elsewhere is not a use case this process serves"):
        engine.call(Elsewhere())


def test_what_needs_no_index(engine: LocalEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotFoundError, match="has no index yet"):
        engine.call(StatusRequest("project", brief=True))  # relative: anchored in the working folder
    assert engine.call(CancelIndexRequest("project")) == CancelResult(cancelled=0, stopped=True)
    assert engine.call(UnwatchProjectRequest(str(project))) is False
    assert engine.call(ReleaseWatchLeaseRequest(str(project), "holder-1")) is False
    assert engine.call(ListProjectsRequest()) == []
    removed = engine.call(RemoveProjectRequest(str(project)))
    assert (removed.removed, removed.bytes_freed) == (False, 0)
    for request in (WatchProjectRequest(str(project)), WatchLeaseRequest(str(project), "holder-1", 30.0)):
        with pytest.raises(ServerUnavailableError, match="watching needs the lgrep daemon"):
            engine.call(request)


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (StatusRequest(""), "project_root is empty"),
        (GetFileRequest("/srv/project", "/etc/passwd"), "is not inside the project"),
        (GetFileRequest("/srv/project", "../secrets"), "must stay inside the project root"),
        (ReleaseWatchLeaseRequest("/srv/project", "no spaces"), "lease holder"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_read(engine: LocalEngine, request_: Any, words: str) -> None:
    with pytest.raises(InvalidRequestError, match=words):
        engine.call(request_)
    assert engine._searchers is None  # pyright: ignore[reportPrivateUsage]  (nothing was opened)
