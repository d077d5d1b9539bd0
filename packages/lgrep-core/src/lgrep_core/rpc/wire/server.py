"""Conversions of server.proto: what a server says about itself (GetServerInfo) and its roles."""

from __future__ import annotations

from lgrep.v1 import server_pb2

from lgrep_core.domain.models import ServerInfo, ServerRole
from lgrep_core.rpc.wire.common import datetime_from_proto, timestamp_to_proto

_ROLE_TO_PB: dict[ServerRole, server_pb2.ServerRole.ValueType] = {
    role: server_pb2.ServerRole.Value(f"SERVER_ROLE_{role.name}") for role in ServerRole
}
_ROLE_FROM_PB: dict[int, ServerRole] = {number: role for role, number in _ROLE_TO_PB.items()}


def server_role_to_proto(role: ServerRole) -> server_pb2.ServerRole.ValueType:
    """A domain server role as the wire enum."""
    return _ROLE_TO_PB[ServerRole(role)]


def server_role_from_proto(number: int) -> ServerRole | None:
    """The domain server role of a wire enum number; None when unset or unknown to this reader."""
    return _ROLE_FROM_PB.get(number)


def server_info_to_proto(info: ServerInfo) -> server_pb2.GetServerInfoResponse:
    """A domain server description as `lgrep.v1.GetServerInfoResponse`."""
    message = server_pb2.GetServerInfoResponse(
        version=info.version,
        contract_revision=info.contract_revision,
        pid=info.pid,
        roles=[server_role_to_proto(role) for role in info.roles],
        cache_dir=info.cache_dir,
        embedding_provider=info.embedding_provider,
        embedding_model=info.embedding_model,
        embedding_dimension=info.embedding_dimension,
        resident_projects=info.resident_projects,
        unix_socket_path=info.unix_socket_path,
        tcp_host=info.tcp_host,
        tcp_port=info.tcp_port,
        models_loaded=info.models_loaded,
        watched_projects=list(info.watched_projects),
    )
    if info.started_at is not None:
        message.started_at.CopyFrom(timestamp_to_proto(info.started_at))
    return message


def server_info_from_proto(message: server_pb2.GetServerInfoResponse) -> ServerInfo:
    """An `lgrep.v1.GetServerInfoResponse` as a domain server description (unknown roles are dropped)."""
    return ServerInfo(
        version=message.version,
        contract_revision=message.contract_revision,
        pid=message.pid,
        started_at=datetime_from_proto(message.started_at) if message.HasField("started_at") else None,
        roles=tuple(role for n in message.roles if (role := server_role_from_proto(n)) is not None),
        cache_dir=message.cache_dir,
        embedding_provider=message.embedding_provider,
        embedding_model=message.embedding_model,
        embedding_dimension=message.embedding_dimension,
        resident_projects=message.resident_projects,
        unix_socket_path=message.unix_socket_path,
        tcp_host=message.tcp_host,
        tcp_port=message.tcp_port,
        models_loaded=message.models_loaded,
        watched_projects=tuple(message.watched_projects),
    )
