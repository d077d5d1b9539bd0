"""Each use case's unary RPC: the table both daemon clients read (`ROUTES`), from a request type to
its method path, the request message made from it and the answer read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lgrep.v1 import index_pb2, search_pb2

from lgrep_core.domain.models import (
    CancelIndexRequest,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    ListComponentsRequest,
    ListFilesRequest,
    ListProjectsRequest,
    ListVersionsRequest,
    ReleaseWatchLeaseRequest,
    RemoveProjectRequest,
    Request,
    SearchRequest,
    SkeletonRequest,
    StatusRequest,
    TraceRequest,
    UnwatchProjectRequest,
    WatchLeaseRequest,
    WatchProjectRequest,
)
from lgrep_core.rpc.wire.index import (
    cancel_index_request_to_proto,
    cancel_result_from_proto,
    get_status_request_to_proto,
    list_projects_request_to_proto,
    list_projects_response_from_proto,
    project_status_from_proto,
    remove_project_request_to_proto,
    remove_result_from_proto,
    unwatch_project_request_to_proto,
    unwatch_result_from_proto,
    watch_lease_from_proto,
    watch_lease_release_to_proto,
    watch_lease_released_from_proto,
    watch_lease_request_to_proto,
    watch_project_request_to_proto,
    watch_result_from_proto,
)
from lgrep_core.rpc.wire.search import (
    file_slice_from_proto,
    find_related_request_to_proto,
    find_symbol_request_to_proto,
    find_symbol_response_from_proto,
    get_file_request_to_proto,
    list_components_request_to_proto,
    list_components_response_from_proto,
    list_files_request_to_proto,
    list_files_response_from_proto,
    list_versions_request_to_proto,
    list_versions_response_from_proto,
    related_result_from_proto,
    search_request_to_proto,
    search_response_from_proto,
    skeleton_from_proto,
    skeleton_request_to_proto,
    trace_request_to_proto,
    trace_result_from_proto,
)


@dataclass(frozen=True, slots=True)
class Route:
    """How one use case (a `Request` type) travels: its unary RPC's path, the request message made
    from the domain request, and the answer read back from the response message's bytes."""

    path: str  # "/lgrep.v1.SearchService/GetFile"
    to_proto: Any  # Callable[[the Request], a request message]
    response: Any  # the response message class (its FromString parses the bytes)
    from_proto: Any  # Callable[[a response message], the answer]

    def answer(self, data: bytes) -> Any:
        """The domain answer in a response's bytes."""
        return self.from_proto(self.response.FromString(data))


def _route(service: str, method: str, to_proto: Any, response: Any, from_proto: Any) -> Route:
    return Route(f"/lgrep.v1.{service}/{method}", to_proto, response, from_proto)


ROUTES: dict[type[Request[Any]], Route] = {
    SearchRequest: _route(
        "SearchService", "Search", search_request_to_proto, search_pb2.SearchResponse, search_response_from_proto
    ),
    GetFileRequest: _route(
        "SearchService", "GetFile", get_file_request_to_proto, search_pb2.GetFileResponse, file_slice_from_proto
    ),
    FindSymbolRequest: _route(
        "SearchService",
        "FindSymbol",
        find_symbol_request_to_proto,
        search_pb2.FindSymbolResponse,
        find_symbol_response_from_proto,
    ),
    FindRelatedRequest: _route(
        "SearchService",
        "FindRelated",
        find_related_request_to_proto,
        search_pb2.FindRelatedResponse,
        related_result_from_proto,
    ),
    SkeletonRequest: _route(
        "SearchService", "GetSkeleton", skeleton_request_to_proto, search_pb2.GetSkeletonResponse, skeleton_from_proto
    ),
    TraceRequest: _route(
        "SearchService", "Trace", trace_request_to_proto, search_pb2.TraceResponse, trace_result_from_proto
    ),
    ListFilesRequest: _route(
        "SearchService",
        "ListFiles",
        list_files_request_to_proto,
        search_pb2.ListFilesResponse,
        list_files_response_from_proto,
    ),
    ListComponentsRequest: _route(
        "SearchService",
        "ListComponents",
        list_components_request_to_proto,
        search_pb2.ListComponentsResponse,
        list_components_response_from_proto,
    ),
    ListVersionsRequest: _route(
        "SearchService",
        "ListVersions",
        list_versions_request_to_proto,
        search_pb2.ListVersionsResponse,
        list_versions_response_from_proto,
    ),
    StatusRequest: _route(
        "IndexService", "GetStatus", get_status_request_to_proto, index_pb2.GetStatusResponse, project_status_from_proto
    ),
    WatchProjectRequest: _route(
        "IndexService",
        "WatchProject",
        watch_project_request_to_proto,
        index_pb2.WatchProjectResponse,
        watch_result_from_proto,
    ),
    UnwatchProjectRequest: _route(
        "IndexService",
        "UnwatchProject",
        unwatch_project_request_to_proto,
        index_pb2.UnwatchProjectResponse,
        unwatch_result_from_proto,
    ),
    WatchLeaseRequest: _route(
        "IndexService",
        "RenewWatchLease",
        watch_lease_request_to_proto,
        index_pb2.RenewWatchLeaseResponse,
        watch_lease_from_proto,
    ),
    ReleaseWatchLeaseRequest: _route(
        "IndexService",
        "ReleaseWatchLease",
        watch_lease_release_to_proto,
        index_pb2.ReleaseWatchLeaseResponse,
        watch_lease_released_from_proto,
    ),
    ListProjectsRequest: _route(
        "IndexService",
        "ListProjects",
        list_projects_request_to_proto,
        index_pb2.ListProjectsResponse,
        list_projects_response_from_proto,
    ),
    RemoveProjectRequest: _route(
        "IndexService",
        "RemoveProject",
        remove_project_request_to_proto,
        index_pb2.RemoveProjectResponse,
        remove_result_from_proto,
    ),
    CancelIndexRequest: _route(
        "IndexService",
        "CancelIndex",
        cancel_index_request_to_proto,
        index_pb2.CancelIndexResponse,
        cancel_result_from_proto,
    ),
}
"""Every use case's unary RPC (lgrep_core.domain.models.USE_CASES), read by both clients: the daemon's
gRPC client (lgrep_core.rpc.client) and the light one (lgrep_core.rpc.lite_client)."""
