"""IndexService over gRPC: the wire edge of IndexJobs, the project use cases and the watcher.

Each method converts the request (lgrep_core.rpc.wire validates it), calls the backend and converts the
answer. Errors are LgrepErrors raised as they are: the server's error interceptor maps each to its
status code and detail, once, for every method (lgrep_core.rpc.grpc_support).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from lgrep.v1 import index_pb2, index_pb2_grpc
from lgrep_core.app.scope import Purpose, project_for
from lgrep_core.domain.errors import IndexBusyError, NotFoundError
from lgrep_core.domain.models import CancelResult, ProjectInfo, ProjectState, ProjectStatus, WatchLease, WatchResult
from lgrep_core.domain.pathnames import request_root
from lgrep_core.rpc import wire
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.layout import project_dir

from .jobs import IndexJobs
from .projects import list_projects, project_status, remove_project

__all__ = ["IndexServicer", "WatchRegistry", "add_index_service"]

log = logging.getLogger(__name__)

# RemoveProject waits this long for a running job of the project to finish before failing.
REMOVE_LOCK_WAIT_S = 30.0
# CancelIndex waits this long for the cancelled jobs to reach a commit boundary and end.
CANCEL_WAIT_S = 30.0


class WatchRegistry(Protocol):
    """What the index server needs of the watcher side."""

    def watch(self, root: Path, debounce_ms: int | None) -> WatchResult: ...
    def unwatch(self, root: Path) -> bool: ...
    def forget(self, root: Path) -> bool: ...
    def watched(self) -> set[Path]: ...
    def hold(self, root: Path, holder: str, ttl_s: float) -> WatchLease: ...
    def release(self, root: Path, holder: str) -> bool: ...
    def leases(self, root: Path) -> int: ...


class IndexServicer(index_pb2_grpc.IndexServiceServicer):
    def __init__(
        self,
        settings: LgrepSettings,
        jobs: IndexJobs,
        watches: WatchRegistry,
        *,
        resident: Callable[[], set[Path]] = set,
        forget: Callable[[Path], object] = lambda root: None,
        not_writer: Callable[[], str | None] = lambda: None,
    ) -> None:
        """`resident()` names the projects whose snapshot this process holds; `forget(root)` drops
        one (RemoveProject), when the search role runs in the same process. `not_writer()` says why
        this server may not write now (another process is the writer of the cache dir), or None."""
        self.not_writer = not_writer
        self.settings = settings
        self.jobs = jobs
        self.watches = watches
        self.resident = resident
        self.forget = forget

    def IndexProject(
        self, request: index_pb2.IndexProjectRequest, context: Any
    ) -> Iterator[index_pb2.IndexProjectResponse]:
        req = wire.index_project_request_from_proto(request)
        root = self._project(req.project_root, Purpose.INDEX)  # the summary's root says which project was indexed
        self._check_writer()
        stream = self.jobs.index(root, force=req.force, wait_vectors=req.wait_for_vectors, seed=req.seed)
        if context is not None:

            def ended() -> None:
                # The call ended: done, or the client went away (its stream cancelled, its process
                # gone), which cancels a job nobody else waits for; a client whose own deadline ran
                # out said in advance that it would stop waiting, so the job goes on.
                stream.leave(cancel=context.time_remaining() > 0)

            if not context.add_callback(ended):
                ended()
        for event in stream:
            yield wire.index_event_to_proto(event)

    def GetStatus(self, request: index_pb2.GetStatusRequest, context: Any) -> index_pb2.GetStatusResponse:
        req = wire.get_status_request_from_proto(request)
        root = self._project(req.project_root, Purpose.STATUS)
        try:
            status = project_status(self.settings, root, brief=req.brief)
        except NotFoundError:
            if not self.jobs.busy(root):
                raise
            # Its first index is queued here and has not created anything on disk yet.
            status = ProjectStatus(
                project_root=str(root),
                state=ProjectState.BUILDING,
                index_dir=str(project_dir(self.settings.cache_dir, root)),
                detail=f"{root} is queued for its first index on this server",
            )
        status = replace(status, watched=root in self.watches.watched(), watch_leases=self.watches.leases(root))
        return wire.project_status_to_proto(status)

    def WatchProject(self, request: index_pb2.WatchProjectRequest, context: Any) -> index_pb2.WatchProjectResponse:
        req = wire.watch_project_request_from_proto(request)
        self._check_writer()
        # A folder inside a watched or indexed project is watched as part of it: one watcher and one
        # index, however many of its folders clients name.
        root = self._project(req.project_root, Purpose.WATCH)
        return wire.watch_result_to_proto(self.watches.watch(root, req.debounce_ms))

    def UnwatchProject(
        self, request: index_pb2.UnwatchProjectRequest, context: Any
    ) -> index_pb2.UnwatchProjectResponse:
        req = wire.unwatch_project_request_from_proto(request)
        self._check_writer()
        # As WatchProject resolves it: a folder inside a watched project stops that project's watch.
        was = self.watches.unwatch(self._project(req.project_root, Purpose.UNWATCH))
        return wire.unwatch_result_to_proto(was)

    def RenewWatchLease(
        self, request: index_pb2.RenewWatchLeaseRequest, context: Any
    ) -> index_pb2.RenewWatchLeaseResponse:
        req = wire.watch_lease_request_from_proto(request)
        root = self._project(req.project_root, Purpose.WATCH)  # resolved like WatchProject: one lease per project
        reason = self.not_writer()
        if reason is not None:
            # Read-only beside another writer: the holder renews again, and is leased once this
            # server becomes the writer.
            return wire.watch_lease_to_proto(
                WatchLease(str(root), watched=False, ttl_s=req.ttl_s, leases=0, detail=reason)
            )
        return wire.watch_lease_to_proto(self.watches.hold(root, req.holder, req.ttl_s))

    def ReleaseWatchLease(
        self, request: index_pb2.ReleaseWatchLeaseRequest, context: Any
    ) -> index_pb2.ReleaseWatchLeaseResponse:
        req = wire.watch_lease_release_from_proto(request)
        released = self.watches.release(self._project(req.project_root, Purpose.WATCH), req.holder)
        return wire.watch_lease_released_to_proto(released)

    def ListProjects(self, request: index_pb2.ListProjectsRequest, context: Any) -> index_pb2.ListProjectsResponse:
        watched = {str(p) for p in self.watches.watched()}
        resident = {str(p) for p in self.resident()}
        projects: list[ProjectInfo] = [
            replace(p, watched=p.project_root in watched, resident=p.project_root in resident)
            for p in list_projects(self.settings.cache_dir)
        ]
        return wire.list_projects_response_to_proto(projects)

    def RemoveProject(self, request: index_pb2.RemoveProjectRequest, context: Any) -> index_pb2.RemoveProjectResponse:
        root = self._project(wire.remove_project_request_from_proto(request).project_root, Purpose.CLEAN)
        self._check_writer()
        self.watches.forget(root)
        # This server's own runs of the project would hold its lock: they stop at their next commit.
        self.jobs.cancel(root, "its index is being removed", wait_s=REMOVE_LOCK_WAIT_S)
        self.forget(root)
        return wire.remove_result_to_proto(remove_project(self.settings, root, lock_timeout_s=REMOVE_LOCK_WAIT_S))

    def CancelIndex(self, request: index_pb2.CancelIndexRequest, context: Any) -> index_pb2.CancelIndexResponse:
        root = self._project(wire.cancel_index_request_from_proto(request).project_root, Purpose.CANCEL)
        cancelled, stopped = self.jobs.cancel(root, "asked to stop by `lgrep index --cancel`", wait_s=CANCEL_WAIT_S)
        return wire.cancel_result_to_proto(CancelResult(cancelled=cancelled, stopped=stopped))

    def _project(self, text: str, purpose: Purpose) -> Path:
        """The project a request's root names for `purpose` (lgrep_core.app.scope.project_for, with the
        projects watched here): a folder inside a watched or indexed project is that project, so one
        index and one watcher serve it however many of its folders clients name."""
        return project_for(self.settings.cache_dir, request_root(text), purpose, watched=self.watches.watched()).project

    def _check_writer(self) -> None:
        reason = self.not_writer()
        if reason is not None:
            raise IndexBusyError(reason)


def add_index_service(server: Any, servicer: IndexServicer) -> str:
    """Register IndexService on a grpc server; returns its full name (for health and reflection)."""
    index_pb2_grpc.add_IndexServiceServicer_to_server(servicer, server)
    return index_pb2.DESCRIPTOR.services_by_name["IndexService"].full_name
