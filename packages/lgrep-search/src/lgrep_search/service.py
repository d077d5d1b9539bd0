"""SearchService over gRPC: the wire edge of ProjectSearchers.

Each method converts the request (lgrep_core.rpc.wire validates it), calls the backend and converts the
answer. Errors are LgrepErrors raised as they are: the server's error interceptor maps each to its
status code and detail, once, for every method (lgrep_core.rpc.grpc_support).
"""

from __future__ import annotations

from typing import Any

from lgrep.v1 import search_pb2, search_pb2_grpc
from lgrep_core.rpc import wire

from .projects import ProjectSearchers

__all__ = ["SearchServicer", "add_search_service"]


class SearchServicer(search_pb2_grpc.SearchServiceServicer):
    def __init__(self, searchers: ProjectSearchers) -> None:
        self.searchers = searchers

    def Search(self, request: search_pb2.SearchRequest, context: Any) -> search_pb2.SearchResponse:
        response = self.searchers.search(wire.search_request_from_proto(request))
        return wire.search_response_to_proto(response)

    def GetFile(self, request: search_pb2.GetFileRequest, context: Any) -> search_pb2.GetFileResponse:
        return wire.file_slice_to_proto(self.searchers.get_file(wire.get_file_request_from_proto(request)))

    def FindSymbol(self, request: search_pb2.FindSymbolRequest, context: Any) -> search_pb2.FindSymbolResponse:
        matches = self.searchers.find_symbol(wire.find_symbol_request_from_proto(request))
        return wire.find_symbol_response_to_proto(matches)

    def FindRelated(self, request: search_pb2.FindRelatedRequest, context: Any) -> search_pb2.FindRelatedResponse:
        result = self.searchers.find_related(wire.find_related_request_from_proto(request))
        return wire.related_result_to_proto(result)

    def ListFiles(self, request: search_pb2.ListFilesRequest, context: Any) -> search_pb2.ListFilesResponse:
        files = self.searchers.list_files(wire.list_files_request_from_proto(request))
        return wire.list_files_response_to_proto(files)

    def ListComponents(
        self, request: search_pb2.ListComponentsRequest, context: Any
    ) -> search_pb2.ListComponentsResponse:
        components = self.searchers.list_components(wire.list_components_request_from_proto(request))
        return wire.list_components_response_to_proto(components)

    def ListVersions(self, request: search_pb2.ListVersionsRequest, context: Any) -> search_pb2.ListVersionsResponse:
        releases = self.searchers.list_versions(wire.list_versions_request_from_proto(request))
        return wire.list_versions_response_to_proto(releases)

    def GetSkeleton(self, request: search_pb2.GetSkeletonRequest, context: Any) -> search_pb2.GetSkeletonResponse:
        return wire.skeleton_to_proto(self.searchers.skeleton(wire.skeleton_request_from_proto(request)))

    def Trace(self, request: search_pb2.TraceRequest, context: Any) -> search_pb2.TraceResponse:
        return wire.trace_result_to_proto(self.searchers.trace(wire.trace_request_from_proto(request)))


def add_search_service(server: Any, searchers: ProjectSearchers) -> str:
    """Register SearchService on a grpc server; returns its full name (for health and reflection)."""
    search_pb2_grpc.add_SearchServiceServicer_to_server(SearchServicer(searchers), server)
    return search_pb2.DESCRIPTOR.services_by_name["SearchService"].full_name
