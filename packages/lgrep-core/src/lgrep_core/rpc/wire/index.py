"""Conversions of index.proto: indexing requests, progress and summaries, a project's status and
spend, watching and its leases, the project list, removing and cancelling.
"""

from __future__ import annotations

from collections.abc import Iterable

from lgrep.v1 import index_pb2

from lgrep_core.domain.models import (
    CancelIndexRequest,
    CancelResult,
    FileChanges,
    IndexPhase,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    ListProjectsRequest,
    ProjectInfo,
    ProjectState,
    ProjectStatus,
    ReleaseWatchLeaseRequest,
    RemoveProjectRequest,
    RemoveResult,
    SeedReport,
    SpendTotals,
    StatusRequest,
    UnwatchProjectRequest,
    WatchLease,
    WatchLeaseRequest,
    WatchProjectRequest,
    WatchResult,
)
from lgrep_core.rpc.wire.common import datetime_from_proto, duration_to_proto, seconds_from_proto, timestamp_to_proto

# Enum tables, built from the domain enums (a domain value without a wire name fails at import).
_STATE_TO_PB: dict[ProjectState, index_pb2.ProjectState.ValueType] = {
    state: index_pb2.ProjectState.Value(f"PROJECT_STATE_{state.name}") for state in ProjectState
}
_STATE_FROM_PB: dict[int, ProjectState] = {number: state for state, number in _STATE_TO_PB.items()}
_PHASE_TO_PB: dict[IndexPhase, index_pb2.IndexPhase.ValueType] = {
    phase: index_pb2.IndexPhase.Value(f"INDEX_PHASE_{phase.name}") for phase in IndexPhase
}
_PHASE_FROM_PB: dict[int, IndexPhase] = {number: phase for phase, number in _PHASE_TO_PB.items()}


# --- enums ---------------------------------------------------------------------------------------


def project_state_to_proto(state: ProjectState | None) -> index_pb2.ProjectState.ValueType:
    """A domain project state as the wire enum (None: unspecified)."""
    return index_pb2.PROJECT_STATE_UNSPECIFIED if state is None else _STATE_TO_PB[ProjectState(state)]


def project_state_from_proto(number: int) -> ProjectState | None:
    """The domain project state of a wire enum number; None when unset or unknown to this reader."""
    return _STATE_FROM_PB.get(number)


def index_phase_to_proto(phase: IndexPhase | None) -> index_pb2.IndexPhase.ValueType:
    """A domain index phase as the wire enum (None: unspecified)."""
    return index_pb2.INDEX_PHASE_UNSPECIFIED if phase is None else _PHASE_TO_PB[IndexPhase(phase)]


def index_phase_from_proto(number: int) -> IndexPhase | None:
    """The domain index phase of a wire enum number; None when unset or unknown to this reader."""
    return _PHASE_FROM_PB.get(number)


# --- indexing ------------------------------------------------------------------------------------


def index_project_request_to_proto(request: IndexProjectRequest) -> index_pb2.IndexProjectRequest:
    """A domain index request as `lgrep.v1.IndexProjectRequest`."""
    return index_pb2.IndexProjectRequest(
        project_root=request.project_root,
        force=request.force,
        wait_for_vectors=request.wait_for_vectors,
        seed=request.seed,
    )


def index_project_request_from_proto(message: index_pb2.IndexProjectRequest) -> IndexProjectRequest:
    """An `lgrep.v1.IndexProjectRequest` as a validated domain request (InvalidRequestError if not)."""
    return IndexProjectRequest(
        project_root=message.project_root,
        force=message.force,
        wait_for_vectors=message.wait_for_vectors,
        seed=message.seed,
    ).validate()


def index_progress_to_proto(progress: IndexProgress) -> index_pb2.IndexProgress:
    """A domain progress event as `lgrep.v1.IndexProgress` (an unknown ETA stays unset)."""
    message = index_pb2.IndexProgress(
        phase=index_phase_to_proto(progress.phase),
        files_done=progress.files_done,
        files_total=progress.files_total,
        chunks_done=progress.chunks_done,
        chunks_total=progress.chunks_total,
        rate=progress.rate,
    )
    if progress.eta_seconds is not None:
        message.eta.CopyFrom(duration_to_proto(progress.eta_seconds))
    return message


def index_progress_from_proto(message: index_pb2.IndexProgress) -> IndexProgress:
    """An `lgrep.v1.IndexProgress` as a domain progress event (an unknown phase becomes None)."""
    return IndexProgress(
        phase=index_phase_from_proto(message.phase),
        files_done=message.files_done,
        files_total=message.files_total,
        chunks_done=message.chunks_done,
        chunks_total=message.chunks_total,
        rate=message.rate,
        eta_seconds=seconds_from_proto(message.eta) if message.HasField("eta") else None,
    )


def index_summary_to_proto(summary: IndexSummary) -> index_pb2.IndexSummary:
    """A domain run summary as `lgrep.v1.IndexSummary`."""
    return index_pb2.IndexSummary(
        project_root=summary.root,
        files_seen=summary.files_seen,
        files_indexed=summary.files_indexed,
        files_unchanged=summary.files_unchanged,
        files_deleted=summary.files_deleted,
        files_skipped=dict(summary.skipped),
        chunks_written=summary.chunks_written,
        chunks_total=summary.chunks_total,
        vectors_embedded=summary.vectors_embedded,
        vectors_pending=summary.vectors_pending,
        bm25_elapsed=duration_to_proto(summary.seconds_bm25),
        vectors_elapsed=duration_to_proto(summary.seconds_vectors),
        created=summary.created,
        tokens_billed=summary.tokens_billed,
        seed=seed_report_to_proto(summary.seed) if summary.seed is not None else None,
    )


def seed_report_to_proto(report: SeedReport) -> index_pb2.SeedReport:
    """Where a seed came from (or why it did not happen) as `lgrep.v1.SeedReport`."""
    message = index_pb2.SeedReport(
        store=report.store,
        repository=report.repository,
        commit=report.commit,
        vectors_copied=report.vectors_copied,
        bytes_copied=report.bytes_copied,
        files_overlaid=report.files_overlaid,
        reason=report.reason,
        refused=report.refused,
    )
    if report.published_at:
        message.published_at.FromNanoseconds(round(report.published_at * 1e9))
    return message


def seed_report_from_proto(message: index_pb2.SeedReport) -> SeedReport:
    """An `lgrep.v1.SeedReport` as the domain's."""
    return SeedReport(
        store=message.store,
        repository=message.repository,
        commit=message.commit,
        published_at=message.published_at.ToNanoseconds() / 1e9 if message.HasField("published_at") else 0.0,
        vectors_copied=message.vectors_copied,
        bytes_copied=message.bytes_copied,
        files_overlaid=message.files_overlaid,
        reason=message.reason,
        refused=message.refused,
    )


def index_summary_from_proto(message: index_pb2.IndexSummary) -> IndexSummary:
    """An `lgrep.v1.IndexSummary` as a domain run summary."""
    return IndexSummary(
        root=message.project_root,
        files_seen=message.files_seen,
        files_indexed=message.files_indexed,
        files_unchanged=message.files_unchanged,
        files_deleted=message.files_deleted,
        skipped=dict(message.files_skipped),
        chunks_written=message.chunks_written,
        chunks_total=message.chunks_total,
        vectors_embedded=message.vectors_embedded,
        vectors_pending=message.vectors_pending,
        seconds_bm25=seconds_from_proto(message.bm25_elapsed),
        seconds_vectors=seconds_from_proto(message.vectors_elapsed),
        created=message.created,
        tokens_billed=message.tokens_billed,
        seed=seed_report_from_proto(message.seed) if message.HasField("seed") else None,
    )


def index_event_to_proto(event: IndexProgress | IndexSummary) -> index_pb2.IndexProjectResponse:
    """A progress event or the final summary as one message of the IndexProject stream."""
    if isinstance(event, IndexSummary):
        return index_pb2.IndexProjectResponse(summary=index_summary_to_proto(event))
    return index_pb2.IndexProjectResponse(progress=index_progress_to_proto(event))


def index_event_from_proto(message: index_pb2.IndexProjectResponse) -> IndexProgress | IndexSummary | None:
    """One message of the IndexProject stream; None for an event this reader does not know (skip it)."""
    which = message.WhichOneof("event")
    if which == "summary":
        return index_summary_from_proto(message.summary)
    if which == "progress":
        return index_progress_from_proto(message.progress)
    return None


# --- status and spend ----------------------------------------------------------------------------


def get_status_request_to_proto(request: StatusRequest) -> index_pb2.GetStatusRequest:
    """A StatusRequest as its GetStatus request."""
    return index_pb2.GetStatusRequest(project_root=request.project_root, brief=request.brief)


def get_status_request_from_proto(message: index_pb2.GetStatusRequest) -> StatusRequest:
    """A GetStatus request, validated (InvalidRequestError if its root is not absolute)."""
    return StatusRequest(message.project_root, message.brief).validate()


def project_status_to_proto(status: ProjectStatus) -> index_pb2.GetStatusResponse:
    """A domain project status as `lgrep.v1.GetStatusResponse`."""
    message = index_pb2.GetStatusResponse(
        project_root=status.project_root,
        indexed=status.indexed,
        files=status.files,
        chunks=status.chunks,
        vectors_pending=status.vectors_pending,
        languages=dict(status.languages),
        provider=status.provider,
        model=status.model,
        dimension=status.dimension,
        files_changed_since=status.files_changed_since,
        state=project_state_to_proto(status.state),
        index_dir=status.index_dir,
        watched=status.watched,
        chunker_version=status.chunker_version,
        detail=status.detail,
        spend_warnings=list(status.spend_warnings),
        watch_leases=status.watch_leases,
    )
    if status.project_spend is not None:
        message.project_spend.CopyFrom(spend_totals_to_proto(status.project_spend))
    if status.total_spend is not None:
        message.total_spend.CopyFrom(spend_totals_to_proto(status.total_spend))
    if status.last_indexed is not None:
        message.last_indexed.CopyFrom(timestamp_to_proto(status.last_indexed))
    if status.seed is not None:
        message.seed.CopyFrom(seed_report_to_proto(status.seed))
    if status.changes is not None:
        message.changes.CopyFrom(
            index_pb2.FileChanges(
                added=status.changes.added, modified=status.changes.modified, deleted=status.changes.deleted
            )
        )
    return message


def project_status_from_proto(message: index_pb2.GetStatusResponse) -> ProjectStatus:
    """An `lgrep.v1.GetStatusResponse` as a domain project status (an unknown state becomes None)."""
    changes = message.changes
    return ProjectStatus(
        project_root=message.project_root,
        state=project_state_from_proto(message.state),
        index_dir=message.index_dir,
        watched=message.watched,
        files=message.files,
        chunks=message.chunks,
        vectors_pending=message.vectors_pending,
        languages=dict(message.languages),
        provider=message.provider,
        model=message.model,
        dimension=message.dimension,
        chunker_version=message.chunker_version,
        last_indexed=datetime_from_proto(message.last_indexed) if message.HasField("last_indexed") else None,
        changes=FileChanges(changes.added, changes.modified, changes.deleted) if message.HasField("changes") else None,
        detail=message.detail,
        project_spend=spend_totals_from_proto(message.project_spend) if message.HasField("project_spend") else None,
        total_spend=spend_totals_from_proto(message.total_spend) if message.HasField("total_spend") else None,
        spend_warnings=tuple(message.spend_warnings),
        watch_leases=message.watch_leases,
        seed=seed_report_from_proto(message.seed) if message.HasField("seed") else None,
    )


def spend_totals_to_proto(totals: SpendTotals) -> index_pb2.SpendTotals:
    """Domain spend totals as `lgrep.v1.SpendTotals`."""
    return index_pb2.SpendTotals(
        tokens=totals.tokens,
        requests=totals.requests,
        cost_usd=totals.cost_usd,
        unpriced_models=list(totals.unpriced_models),
    )


def spend_totals_from_proto(message: index_pb2.SpendTotals) -> SpendTotals:
    """An `lgrep.v1.SpendTotals` as domain spend totals."""
    return SpendTotals(
        tokens=message.tokens,
        requests=message.requests,
        cost_usd=message.cost_usd,
        unpriced_models=tuple(message.unpriced_models),
    )


# --- watching ------------------------------------------------------------------------------------


def watch_project_request_to_proto(request: WatchProjectRequest) -> index_pb2.WatchProjectRequest:
    """A domain watch request as `lgrep.v1.WatchProjectRequest` (an unset debounce stays unset)."""
    message = index_pb2.WatchProjectRequest(project_root=request.project_root)
    if request.debounce_ms is not None:
        message.debounce_ms = request.debounce_ms
    return message


def watch_project_request_from_proto(message: index_pb2.WatchProjectRequest) -> WatchProjectRequest:
    """An `lgrep.v1.WatchProjectRequest` as a validated domain request (InvalidRequestError if not)."""
    return WatchProjectRequest(
        project_root=message.project_root,
        debounce_ms=message.debounce_ms if message.HasField("debounce_ms") else None,
    ).validate()


def watch_result_to_proto(result: WatchResult) -> index_pb2.WatchProjectResponse:
    """The outcome of WatchProject as its response."""
    return index_pb2.WatchProjectResponse(watched=result.watched, already_watched=result.already_watched)


def watch_result_from_proto(message: index_pb2.WatchProjectResponse) -> WatchResult:
    """A WatchProject response as a domain result."""
    return WatchResult(watched=message.watched, already_watched=message.already_watched)


def watch_lease_request_to_proto(request: WatchLeaseRequest) -> index_pb2.RenewWatchLeaseRequest:
    """A domain lease request as `lgrep.v1.RenewWatchLeaseRequest`."""
    return index_pb2.RenewWatchLeaseRequest(
        project_root=request.project_root, holder=request.holder, ttl=duration_to_proto(request.ttl_s)
    )


def watch_lease_request_from_proto(message: index_pb2.RenewWatchLeaseRequest) -> WatchLeaseRequest:
    """An `lgrep.v1.RenewWatchLeaseRequest` as a validated domain request (InvalidRequestError if not)."""
    return WatchLeaseRequest(
        project_root=message.project_root, holder=message.holder, ttl_s=seconds_from_proto(message.ttl)
    ).validate()


def watch_lease_to_proto(lease: WatchLease) -> index_pb2.RenewWatchLeaseResponse:
    """A granted lease as the RenewWatchLease response."""
    return index_pb2.RenewWatchLeaseResponse(
        project_root=lease.project_root,
        watched=lease.watched,
        detail=lease.detail,
        ttl=duration_to_proto(lease.ttl_s),
        leases=lease.leases,
    )


def watch_lease_from_proto(message: index_pb2.RenewWatchLeaseResponse) -> WatchLease:
    """A RenewWatchLease response as a domain lease."""
    return WatchLease(
        project_root=message.project_root,
        watched=message.watched,
        ttl_s=seconds_from_proto(message.ttl),
        leases=message.leases,
        detail=message.detail,
    )


def watch_lease_release_to_proto(request: ReleaseWatchLeaseRequest) -> index_pb2.ReleaseWatchLeaseRequest:
    """The ReleaseWatchLease request of one holder on one project."""
    return index_pb2.ReleaseWatchLeaseRequest(project_root=request.project_root, holder=request.holder)


def watch_lease_release_from_proto(message: index_pb2.ReleaseWatchLeaseRequest) -> ReleaseWatchLeaseRequest:
    """A ReleaseWatchLease request, validated (InvalidRequestError if not usable)."""
    return ReleaseWatchLeaseRequest(message.project_root, message.holder).validate()


def watch_lease_released_to_proto(released: bool) -> index_pb2.ReleaseWatchLeaseResponse:
    """The outcome of ReleaseWatchLease (whether the holder had a lease) as its response."""
    return index_pb2.ReleaseWatchLeaseResponse(released=released)


def watch_lease_released_from_proto(message: index_pb2.ReleaseWatchLeaseResponse) -> bool:
    """Whether the holder had a lease before the ReleaseWatchLease call."""
    return message.released


def unwatch_project_request_to_proto(request: UnwatchProjectRequest) -> index_pb2.UnwatchProjectRequest:
    """The UnwatchProject request for one project root."""
    return index_pb2.UnwatchProjectRequest(project_root=request.project_root)


def unwatch_project_request_from_proto(message: index_pb2.UnwatchProjectRequest) -> UnwatchProjectRequest:
    """A UnwatchProject request, validated (InvalidRequestError if its root is not absolute)."""
    return UnwatchProjectRequest(message.project_root).validate()


def unwatch_result_to_proto(was_watched: bool) -> index_pb2.UnwatchProjectResponse:
    """The outcome of UnwatchProject (whether the project was watched) as its response."""
    return index_pb2.UnwatchProjectResponse(was_watched=was_watched)


def unwatch_result_from_proto(message: index_pb2.UnwatchProjectResponse) -> bool:
    """Whether the project was watched before the UnwatchProject call."""
    return message.was_watched


# --- projects ------------------------------------------------------------------------------------


def project_info_to_proto(info: ProjectInfo) -> index_pb2.ProjectInfo:
    """A domain project summary as `lgrep.v1.ProjectInfo`."""
    message = index_pb2.ProjectInfo(
        project_root=info.project_root,
        state=project_state_to_proto(info.state),
        files=info.files,
        chunks=info.chunks,
        vectors_pending=info.vectors_pending,
        watched=info.watched,
        resident=info.resident,
        index_dir=info.index_dir,
    )
    if info.last_indexed is not None:
        message.last_indexed.CopyFrom(timestamp_to_proto(info.last_indexed))
    return message


def project_info_from_proto(message: index_pb2.ProjectInfo) -> ProjectInfo:
    """An `lgrep.v1.ProjectInfo` as a domain project summary (an unknown state becomes None)."""
    return ProjectInfo(
        project_root=message.project_root,
        state=project_state_from_proto(message.state),
        files=message.files,
        chunks=message.chunks,
        vectors_pending=message.vectors_pending,
        watched=message.watched,
        resident=message.resident,
        last_indexed=datetime_from_proto(message.last_indexed) if message.HasField("last_indexed") else None,
        index_dir=message.index_dir,
    )


def list_projects_request_to_proto(_request: ListProjectsRequest) -> index_pb2.ListProjectsRequest:
    """The ListProjects request (it has no fields)."""
    return index_pb2.ListProjectsRequest()


def list_projects_response_to_proto(projects: Iterable[ProjectInfo]) -> index_pb2.ListProjectsResponse:
    """Projects as the ListProjects response, in the order given (servers sort by project_root)."""
    return index_pb2.ListProjectsResponse(projects=[project_info_to_proto(p) for p in projects])


def list_projects_response_from_proto(message: index_pb2.ListProjectsResponse) -> list[ProjectInfo]:
    """The projects of a ListProjects response, in the server's order."""
    return [project_info_from_proto(p) for p in message.projects]


def remove_project_request_to_proto(request: RemoveProjectRequest) -> index_pb2.RemoveProjectRequest:
    """The RemoveProject request for one project root."""
    return index_pb2.RemoveProjectRequest(project_root=request.project_root)


def remove_project_request_from_proto(message: index_pb2.RemoveProjectRequest) -> RemoveProjectRequest:
    """A RemoveProject request, validated (InvalidRequestError if its root is not absolute)."""
    return RemoveProjectRequest(message.project_root).validate()


def remove_result_to_proto(result: RemoveResult) -> index_pb2.RemoveProjectResponse:
    """The outcome of RemoveProject as its response."""
    return index_pb2.RemoveProjectResponse(removed=result.removed, bytes_freed=result.bytes_freed)


def remove_result_from_proto(message: index_pb2.RemoveProjectResponse) -> RemoveResult:
    """A RemoveProject response as a domain result."""
    return RemoveResult(removed=message.removed, bytes_freed=message.bytes_freed)


def cancel_index_request_to_proto(request: CancelIndexRequest) -> index_pb2.CancelIndexRequest:
    """The CancelIndex request for one project root."""
    return index_pb2.CancelIndexRequest(project_root=request.project_root)


def cancel_index_request_from_proto(message: index_pb2.CancelIndexRequest) -> CancelIndexRequest:
    """A CancelIndex request, validated (InvalidRequestError if its root is not absolute)."""
    return CancelIndexRequest(message.project_root).validate()


def cancel_result_to_proto(result: CancelResult) -> index_pb2.CancelIndexResponse:
    """The outcome of CancelIndex as its response."""
    return index_pb2.CancelIndexResponse(cancelled=result.cancelled, stopped=result.stopped)


def cancel_result_from_proto(message: index_pb2.CancelIndexResponse) -> CancelResult:
    """A CancelIndex response as a domain result."""
    return CancelResult(cancelled=message.cancelled, stopped=message.stopped)
