"""The application API: lgrep's use cases as one typed interface, under every shell.

    engine = connect_daemon(client_settings())      # the daemon (lgrep_core.rpc.client.LgrepClient), or
    engine = LocalEngine(...)                       # this process (lgrep_cli.local)
    app = Lgrep(engine, cache_dir)
    outcome = app.search(SearchRequest("where are tokens verified?", project_root="/repo/src"))
    piece = app.engine.call(GetFileRequest(root, "src/auth.py"))   # a use case with no policy

An engine (lgrep_core.domain.engine.Engine) serves the use cases, one request type each: the daemon's
clients and the in-process engine give the same answers (both read through
lgrep_search.projects.ProjectSearchers, which fills a request's defaults from the project's settings
and makes the one identity check), and say where a project's index stands (`StatusRequest`), so
this layer reads no index file. `Lgrep` holds the policy every shell shares, written once:

- project resolution (lgrep_core.app.scope.project_for): a folder inside an indexed project is that
  project, kept to the folder; else its git root; else the folder;
- building the index first when a search finds none (or an interrupted or outdated one), queueing
  behind a build already running, with progress, for as long as the caller waits;
- asking before a cloud provider spends money (the shell says how: a terminal prompt, or no);
- reading an index stream off the caller's thread, so Ctrl-C is never raised inside gRPC's locks.

The CLI and the MCP server parse, call this, and render; they choose the engine, nothing else.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lgrep_core.app.scope import Purpose, Scope, project_for, scoped_glob
from lgrep_core.domain.engine import Engine, IndexRun
from lgrep_core.domain.errors import DeadlineExceededError, InvalidRequestError, LgrepError, NotFoundError
from lgrep_core.domain.merge import ProjectAnswer, merge_files, merge_hits
from lgrep_core.domain.models import (
    FileHit,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    ProjectState,
    ProjectStatus,
    SearchHit,
    SearchRequest,
    SearchResponse,
    StatusRequest,
)

__all__ = ["Lgrep", "ProjectsOutcome", "SearchOutcome", "SpendDeclinedError", "SpendGate"]


class SpendDeclinedError(LgrepError):
    """A cloud provider would have been paid for a run nobody approved (nothing was sent)."""


# Asked before a run that may send the project's code to a cloud provider: returns when it may go
# ahead, raises SpendDeclinedError (saying why and what to run) when not.
SpendGate = Callable[[Path, bool], None]


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """A search's answer, with the project that gave it and the index it built first, if any."""

    scope: Scope
    response: SearchResponse | None  # None: the first index was still running when the wait ran out
    built: IndexSummary | None = None  # the index this search built (or waited for) before searching
    progress: IndexProgress | None = None  # how far that index was when the wait ran out (None: queued)


@dataclass(frozen=True, slots=True)
class ProjectsOutcome:
    """One question asked of several projects: each project's own outcome, in the order named, and
    the merged ranking of their answers, each hit with its project (lgrep_core.domain.merge)."""

    outcomes: list[SearchOutcome]
    results: list[tuple[Path, SearchHit]]
    files: list[tuple[Path, FileHit]]


class Lgrep:
    """The use cases with the policy every shell shares, over one engine (see the module docstring).
    Use cases that need no policy are the engine's own: `app.engine.call(FindSymbolRequest(...))`."""

    def __init__(
        self,
        engine: Engine,
        cache_dir: Path,
        *,
        spend_gate: SpendGate | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """`spend_gate` is asked before a run that may spend money (None: never asked, the engine's
        own limits apply); `notice` hears what the user should know (a folder answered by the project
        around it, an index built first)."""
        self.engine = engine
        self.cache_dir = cache_dir
        self.spend_gate = spend_gate
        self.notice = notice or (lambda _text: None)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Lgrep:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ projects

    def scope(self, folder: Path, purpose: Purpose = Purpose.SEARCH) -> Scope:
        """The project a folder belongs to, for `purpose` (lgrep_core.app.scope.project_for)."""
        return project_for(self.cache_dir, folder, purpose)

    def state(self, project: Path) -> ProjectState:
        """Where a project's index stands, as its engine says (ABSENT: it has none)."""
        status = self._brief(project)
        return ProjectState.ABSENT if status is None or status.state is None else status.state

    def _brief(self, project: Path) -> ProjectStatus | None:
        try:
            return self.engine.call(StatusRequest(str(project), brief=True))
        except NotFoundError:
            return None

    # ------------------------------------------------------------------ use cases with policy

    def search(
        self,
        request: SearchRequest,
        *,
        progress: Callable[[IndexProgress], None] | None = None,
        wait_s: float | None = None,
        wait_vectors: bool = True,
    ) -> SearchOutcome:
        """Search the project the request's root is in, kept to that folder. A project without a
        searchable index is indexed first (up to BM25 search; vectors follow) after the spend gate
        agrees, with its vectors unless `wait_vectors` is False (then they are filled in behind);
        `wait_s` bounds that wait (None: as long as it takes), after which the outcome has no
        response and says how far the index is, which goes on. A released version (`component`) is
        searched as named, with no index built. A first index that another caller is building is
        waited for only with a `wait_s`; without one, the engine's error says it is being built."""
        request.validate()
        if request.component:
            return SearchOutcome(Scope(Path(request.project_root)), self.engine.call(request))
        folder = Path(request.project_root)
        scope = self.scope(folder)
        if scope.note:
            self.notice(scope.note)
        request = replace(
            request, project_root=str(scope.project), path_glob=scoped_glob(scope.within, request.path_glob)
        )
        try:
            response = self.engine.call(request)
            return SearchOutcome(scope, replace(response, scope=scope.within or response.scope))
        except NotFoundError:
            state = self.state(scope.project)
            # A first index another caller is building is joined only by a caller that bounds its
            # wait (an agent's tool call); a command without a bound says so at once and names the
            # builder (the engine's NotFoundError) rather than wait on it without progress.
            if state is ProjectState.READY or (state is ProjectState.BUILDING and wait_s is None):
                raise
        self._approve(scope.project, force=False)
        self.notice(f"{scope.project} {_BUILDING_FIRST.get(state, 'has no index yet; building it first')}")
        last: list[IndexProgress] = []

        def seen(event: IndexProgress) -> None:
            last[:] = [event]
            if progress is not None:
                progress(event)

        try:
            built = self.index(scope.project, wait_vectors=wait_vectors, progress=seen, timeout=wait_s, approved=True)
        except DeadlineExceededError:
            return SearchOutcome(scope, None, progress=last[0] if last else None)
        response = self.engine.call(request)
        return SearchOutcome(scope, replace(response, scope=scope.within or response.scope), built)

    def search_projects(
        self,
        request: SearchRequest,
        folders: Sequence[Path],
        *,
        progress: Callable[[IndexProgress], None] | None = None,
        wait_s: float | None = None,
        wait_vectors: bool = True,
    ) -> ProjectsOutcome:
        """Ask several projects (existing, resolved folders) one question and merge their answers
        into one ranking (ADR 0026). Each folder is searched as `search` does (its project, kept to
        the folder, indexed first when it has no index, after the spend gate agrees for that
        project) with its own embedding model; `wait_s` bounds each project's first index, and a
        project still being indexed when it runs out is left out of the ranking (its outcome says
        how far it is). Each project is asked for `request.limit` hits (default: the largest
        `search.limit` of the projects' settings), and the merged answer has as many.

        Raises InvalidRequestError when two folders are of one project or a released version is
        asked for, and what `search` raises for any project."""
        request.validate()
        if request.component:
            raise InvalidRequestError("a released version (component) is searched in one project at a time")
        if request.path_glob and Path(request.path_glob).is_absolute():
            raise InvalidRequestError(
                f"{request.path_glob}: with several projects the path filter applies in each, so it is relative "
                "(a glob or a folder); to search a folder, name the folder itself"
            )
        scopes = [self.scope(f) for f in folders]
        for i, scope in enumerate(scopes):
            for earlier, other in zip(folders[:i], scopes[:i], strict=True):
                nested = folders[i].is_relative_to(earlier) or earlier.is_relative_to(folders[i])
                if other.project == scope.project or nested:
                    _same_project(earlier, folders[i], scope.project if not nested else min(earlier, folders[i]))
        limit = request.limit or max(_search_limit(s.project) for s in scopes)
        outcomes = [
            self.search(
                replace(request, project_root=str(f), explain=True, limit=limit),
                progress=progress,
                wait_s=wait_s,
                wait_vectors=wait_vectors,
            )
            for f in folders
        ]
        for i, outcome in enumerate(outcomes):  # a folder's project can change once another is indexed
            for earlier, other in zip(folders[:i], outcomes[:i], strict=True):
                if other.scope.project == outcome.scope.project:
                    _same_project(earlier, folders[i], outcome.scope.project)
        answered = [(o, o.response) for o in outcomes if o.response is not None]
        answers = [ProjectAnswer(o.scope.project, r, self._model(o.scope.project)) for o, r in answered]
        if not request.files:
            return ProjectsOutcome(outcomes, merge_hits(answers, limit, bm25_weight=request.bm25_weight), [])
        # A files answer has no channel scores: the same question's best chunks calibrate each project.
        chunks = [
            replace(
                a,
                response=self.engine.call(
                    replace(
                        request,
                        project_root=str(o.scope.project),
                        path_glob=scoped_glob(o.scope.within, request.path_glob),
                        files=False,
                        limit=_CALIBRATION_HITS,
                        explain=True,
                    )
                ),
            )
            for (o, _), a in zip(answered, answers, strict=True)
        ]
        return ProjectsOutcome(outcomes, [], merge_files(answers, chunks, limit))

    def _model(self, project: Path) -> str:
        """The embedding model of a project's index (provider/model/dimension), "" if unknown."""
        try:
            status = self._brief(project)
        except LgrepError:
            return ""
        if status is None or not status.provider:
            return ""
        return f"{status.provider}/{status.model}/{status.dimension}"

    def index(
        self,
        project: Path,
        *,
        force: bool = False,
        wait_vectors: bool = True,
        progress: Callable[[IndexProgress], None] | None = None,
        timeout: float | None = None,
        approved: bool = False,
        seed: bool = False,
    ) -> IndexSummary:
        """Index a project to its summary, after the spend gate agrees (`approved`: the user already
        did); `seed` asks the team store for vectors whatever the run finds (`lgrep seed`). The run's
        events are read on a worker thread: the caller's thread only waits on a queue, so Ctrl-C
        (KeyboardInterrupt) is raised there and never inside gRPC's own locking, where it could leave
        the channel unable to close (grpc/grpc#19973). Leaving early (an exception, Ctrl-C) cancels
        the run for this caller.

        Raises DeadlineExceededError past `timeout` (the run goes on), SpendDeclinedError, and the
        run's own errors."""
        if not approved:
            self._approve(project, force=force)
        request = IndexProjectRequest(str(project), force=force, wait_for_vectors=wait_vectors, seed=seed)
        run = self.engine.index(request, timeout=timeout)
        summary: IndexSummary | None = None
        try:
            for event in _off_this_thread(run):
                if isinstance(event, IndexSummary):
                    summary = event
                elif progress is not None:
                    progress(event)
        finally:
            run.cancel()  # a no-op once it ended; else the engine sees this caller leave, now
        if summary is None:
            raise LgrepError(f"indexing {project} ended without its summary")
        return summary

    def _approve(self, project: Path, *, force: bool) -> None:
        if self.spend_gate is not None:
            self.spend_gate(project, force)


def _same_project(first: Path, second: Path, project: Path) -> None:
    raise InvalidRequestError(
        f"{first} and {second} are both in the project {project}: name it once (and keep to part of it with "
        "a path filter)"
    )


def _search_limit(project: Path) -> int:
    """A project's `search.limit` (its settings and the user's)."""
    from lgrep_core.settings.config import load_settings

    return load_settings(project).settings.search.limit


# Chunks asked of each project to calibrate a files answer across projects (lgrep_core.domain.merge).
_CALIBRATION_HITS = 5

_BUILDING_FIRST = {
    ProjectState.BUILDING: "is being indexed; waiting for that index first",
    ProjectState.INTERRUPTED: "its first index did not finish; finishing it first",
    ProjectState.OUTDATED: "its index was written by an older lgrep; rebuilding it first",
}


def _off_this_thread(run: IndexRun) -> Iterator[IndexProgress | IndexSummary]:
    """The events of `run`, read by a worker thread and handed over through a queue (see
    Lgrep.index). The caller cancels the run when it stops reading, which ends the worker's read."""
    events: queue.Queue[tuple[str, object]] = queue.Queue()

    def pump() -> None:
        try:
            for event in run:
                events.put(("event", event))
            events.put(("end", None))
        except BaseException as exc:  # handed to the caller's thread, which raises it
            events.put(("error", exc))

    threading.Thread(target=pump, name="lgrep-index-reader", daemon=True).start()
    while True:
        kind, value = events.get()
        if kind == "end":
            return
        if kind == "error":
            assert isinstance(value, BaseException)
            raise value
        assert isinstance(value, IndexProgress | IndexSummary)
        yield value
