"""How an lgrep server listens and what it always serves: a private unix socket, a loopback TCP port,
gRPC health checking and server reflection.

The targets these ports answer on, and the server options, are in `lgrep_core.rpc.grpc_support`; calls over
TCP need the token check of `lgrep_core.rpc.grpc_interceptors.TokenAuthInterceptor`.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from lgrep_core.domain import errors
from lgrep_core.rpc.grpc_support import check_port, loopback_host, unix_target

if TYPE_CHECKING:
    from grpc_health.v1.health import HealthServicer

__all__ = ["add_standard_services", "add_tcp_port", "add_unix_port"]


def _socket_in_use(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def add_unix_port(server: grpc.Server, path: str | os.PathLike[str]) -> str:
    """Listen on a unix socket that only this user can connect to (mode 0600 from its creation on);
    returns its target. Raises ConfigError, naming the path, when it is too long, when its folder is
    missing, when something other than a socket is there, or when a server already answers on it (a
    stale socket left by a server that died is replaced).

    The socket is created under a umask of 0177, which is process-wide for that moment: call this
    before starting threads that create files.
    """
    target = unix_target(path)
    socket_path = Path(target.removeprefix("unix:"))
    if not socket_path.parent.is_dir():
        raise errors.ConfigError(f"cannot listen on {socket_path}: its folder does not exist")
    try:
        info = socket_path.lstat()
    except FileNotFoundError:
        info = None
    if info is not None:
        if not stat.S_ISSOCK(info.st_mode):
            raise errors.ConfigError(f"cannot listen on {socket_path}: something other than a socket is there")
        if _socket_in_use(socket_path):
            raise errors.ConfigError(f"cannot listen on {socket_path}: another server is listening on it")
    old_umask = os.umask(0o177)
    try:
        bound = server.add_insecure_port(target)
    except RuntimeError as exc:
        raise errors.ConfigError(f"cannot listen on {socket_path}: {exc}") from None
    finally:
        os.umask(old_umask)
    if not bound:
        raise errors.ConfigError(f"cannot listen on {socket_path}")
    socket_path.chmod(0o600)
    return target


def add_tcp_port(server: grpc.Server, port: int = 0, host: str = "127.0.0.1") -> int:
    """Listen on a loopback TCP port (0: any free port); returns the port. Raises ConfigError for a
    host that is not loopback or a port that is taken. Calls over TCP need the token: give the server
    a TokenAuthInterceptor."""
    address = f"{loopback_host(host)}:{check_port(port, allow_zero=True)}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if not bound:
        raise errors.ConfigError(f"cannot listen on {address}: the port is in use, or not allowed")
    return bound


# --- standard services ---------------------------------------------------------------------------


def add_standard_services(server: grpc.Server, service_names: Iterable[str]) -> HealthServicer:
    """Register gRPC health checking (every name in `service_names`, and "" for the whole server,
    SERVING) and server reflection (those services, health and reflection itself) on `server`.

    Returns the health servicer, so that the server can report NOT_SERVING when it shuts down:
    `servicer.enter_graceful_shutdown()`.
    """
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection

    names: Sequence[str] = list(dict.fromkeys(service_names))
    serving = health_pb2.HealthCheckResponse.SERVING
    servicer = health.HealthServicer()
    for name in names:
        servicer.set(name, serving)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    return servicer
