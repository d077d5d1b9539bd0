"""Every engine serves every use case through one method: the request types (lgrep_core.domain.models.
USE_CASES), the routes both daemon clients read (lgrep_core.rpc.wire.ROUTES), and the gRPC services that
answer them agree, so a new use case is a request type and a line in each table, never a method in
each engine (issue 37)."""

from __future__ import annotations

import inspect
import typing

from lgrep.v1 import index_pb2, search_pb2
from lgrep_core.domain.models import USE_CASES, IndexProjectRequest, Request
from lgrep_core.rpc import wire
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.rpc.lite_client import LiteClient
from lgrep_mcp.daemon_engine import DaemonEngine


def test_every_use_case_has_a_route_and_every_route_a_use_case() -> None:
    assert set(wire.ROUTES) == set(USE_CASES)
    assert IndexProjectRequest not in wire.ROUTES  # a stream: Engine.index


def test_each_route_names_an_rpc_of_the_contract_with_its_response_message() -> None:
    services = {
        "IndexService": index_pb2.DESCRIPTOR.services_by_name["IndexService"],
        "SearchService": search_pb2.DESCRIPTOR.services_by_name["SearchService"],
    }
    for kind, route in wire.ROUTES.items():
        _, package_service, method = route.path.split("/")
        package, service = package_service.rsplit(".", 1)
        rpc = services[service].methods_by_name[method]
        assert package == "lgrep.v1", kind
        assert rpc.output_type.full_name == route.response.DESCRIPTOR.full_name, kind
        assert not rpc.server_streaming, kind


def test_each_request_type_names_its_answer() -> None:
    for kind in USE_CASES:
        (base,) = [b for b in kind.__orig_bases__ if typing.get_origin(b) is Request]  # pyright: ignore[reportAttributeAccessIssue]
        assert typing.get_args(base), kind


def test_the_clients_forward_one_value_not_a_method_per_use_case() -> None:
    use_case_names = {
        "search", "get_file", "find_symbol", "find_related", "skeleton", "trace", "list_files",
        "list_components", "list_versions", "status", "watch", "unwatch", "remove", "cancel_index",
        "renew_watch_lease", "release_watch_lease", "list_projects",
    }  # fmt: skip
    for engine in (LgrepClient, LiteClient, DaemonEngine):
        methods = {name for name, _ in inspect.getmembers(engine, inspect.isfunction)}
        assert {"call", "index", "close"} <= methods, engine
        assert methods & use_case_names == set(), engine
