"""An engine in memory (lgrep_core.domain.engine.Engine), for testing what sits above one: `Lgrep`, the CLI's
commands and the MCP server's tools, with no daemon, index or model.

    engine = FakeEngine()
    engine.project("/repo", ProjectState.READY)                # a project and where its index stands
    engine.answer(GetFileRequest, lambda r: FileSlice(...))    # what a use case answers
    app = Lgrep(engine, cache_dir)

Every request it is given is kept in `calls`, anchored as a real engine anchors it. A search of a
project whose index is not READY raises the NotFoundError a real engine raises; `index` runs the
events `index_events` gives, after which the project is READY. Use cases with no answer set raise
InvalidRequestError, naming the request type.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from lgrep_core.domain.engine import anchored
from lgrep_core.domain.errors import DeadlineExceededError, InvalidRequestError, LgrepError, NotFoundError
from lgrep_core.domain.models import (
    IndexPhase,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    ProjectState,
    ProjectStatus,
    Request,
    SearchRequest,
    SearchResponse,
    SearchType,
    StatusRequest,
)

__all__ = ["FakeEngine", "FakeIndexRun", "FakeProject"]

A = TypeVar("A")


@dataclass
class FakeProject:
    """A project as the fake engine knows it: where its index stands and what it was built with."""

    root: str
    state: ProjectState
    provider: str = "local"
    model: str = "all-MiniLM-L6-v2 (int8)"
    dimension: int = 384


@dataclass
class FakeIndexRun:
    """The events of one index run (lgrep_core.domain.engine.IndexRun). `stall`: the run stops after its
    progress events, as a run still going when the caller's wait runs out (DeadlineExceededError)."""

    events: list[IndexProgress | IndexSummary]
    stall: bool = False
    cancelled: threading.Event = field(default_factory=threading.Event)
    _position: int = 0

    def __iter__(self) -> Iterator[IndexProgress | IndexSummary]:
        return self

    def __next__(self) -> IndexProgress | IndexSummary:
        if self._position >= len(self.events):
            if self.stall:
                raise DeadlineExceededError("indexing goes on; stopped waiting for it")
            raise StopIteration
        event = self.events[self._position]
        self._position += 1
        return event

    def cancel(self) -> None:
        self.cancelled.set()


class FakeEngine:
    """See the module docstring."""

    def __init__(self) -> None:
        self.projects: dict[str, FakeProject] = {}
        self.calls: list[Request[Any] | IndexProjectRequest] = []
        self.runs: list[FakeIndexRun] = []
        self.closed = False
        self.stall_index = False  # index runs stop before their summary (DeadlineExceededError)
        self.index_error: LgrepError | None = None  # raised by the next index run
        self._answers: dict[type[Request[Any]], Callable[[Any], Any]] = {
            SearchRequest: self._search,
            StatusRequest: self._status,
        }

    # ------------------------------------------------------------------ set up

    def project(self, root: str | Path, state: ProjectState = ProjectState.READY, **identity: Any) -> FakeProject:
        """Add (or replace) a project; `identity`: provider, model, dimension."""
        project = FakeProject(str(root), state, **identity)
        self.projects[project.root] = project
        return project

    def answer(self, kind: type[Request[A]], handler: Callable[[Any], A]) -> None:
        """What requests of `kind` are answered with (the anchored request in, the answer out)."""
        self._answers[kind] = handler

    def requests(self, kind: type[Request[A]]) -> list[Request[A]]:
        """The requests of `kind` this engine was given, in order."""
        return [c for c in self.calls if isinstance(c, kind)]

    # ------------------------------------------------------------------ lgrep_core.domain.engine.Engine

    def call(self, request: Request[A]) -> A:
        request = anchored(request).validate()
        self.calls.append(request)
        handler = self._answers.get(type(request))
        if handler is None:
            raise InvalidRequestError(f"{type(request).__name__} is not a use case this fake engine was given")
        return handler(request)

    def index(self, request: IndexProjectRequest, *, timeout: float | None = None) -> FakeIndexRun:
        request = anchored(request).validate()
        self.calls.append(request)
        if self.index_error is not None:
            error, self.index_error = self.index_error, None
            raise error
        root = request.project_root
        events: list[IndexProgress | IndexSummary] = [
            IndexProgress(IndexPhase.WALK, files_done=1, files_total=2),
            IndexProgress(IndexPhase.CHUNK, files_done=2, files_total=2),
        ]
        if not self.stall_index:
            events.append(IndexSummary(root=root, files_seen=2, files_indexed=2))
            self.project(root, ProjectState.READY)
        run = FakeIndexRun(events, stall=self.stall_index)
        self.runs.append(run)
        return run

    def close(self) -> None:
        self.closed = True

    # ------------------------------------------------------------------ default answers

    def _search(self, request: SearchRequest) -> SearchResponse:
        project = self._ready(request.project_root)
        return SearchResponse([], {}, 0, 0, search_type=SearchType.HYBRID, project_root=project.root)

    def _ready(self, root: str) -> FakeProject:
        project = self.projects.get(root)
        if project is None:
            raise NotFoundError(f"{root} has no index yet: run `lgrep index {root}`")
        if project.state is not ProjectState.READY:
            raise NotFoundError(f"{root} is not searchable: its index is {project.state.value}")
        return project

    def _status(self, request: StatusRequest) -> ProjectStatus:
        project = self.projects.get(request.project_root)
        if project is None or project.state is ProjectState.ABSENT:
            raise NotFoundError(f"{request.project_root} has no index yet: run `lgrep index {request.project_root}`")
        status = ProjectStatus(project_root=project.root, state=project.state)
        if project.state is ProjectState.READY:
            status = replace(status, provider=project.provider, model=project.model, dimension=project.dimension)
        return status
