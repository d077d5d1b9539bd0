"""What every lgrep server process shares: where it listens, that only one runs per endpoint, how it
starts, says it is ready, and stops.

`lgrep serve` (both roles), `lgrep-index watch` (the writer) and `lgrep-search serve` (a reader) are
each a `ServerRuntime` with their servicers installed. The runtime:

- takes an exclusive lock beside its unix socket (`<socket>.lock`, holding the pid), so a second
  server on the same socket refuses with a clear message; the kernel drops the lock when a server
  dies, and the next one removes the socket file it left behind;
- creates the socket with mode 0600 (the umask is narrowed while it binds) in a folder only the user
  can enter, and never follows or replaces anything at that path but a stale socket;
- can also listen on TCP, on 127.0.0.1 only, where the caller's interceptors demand a token;
- reports readiness on an inherited pipe (`ready_fd`) once it accepts calls, so whoever started it
  waits for exactly that, not for a guessed delay;
- stops gracefully on SIGTERM or SIGINT, once however many ask: no new calls, running ones get
  `grace_s` to finish, the threads it started (a model warm-up) end, then the socket and lock are
  removed; a stop that hangs anyway (STOP_DEADLINE_S), or a process that does not end after it
  (EXIT_DEADLINE_S), writes every thread's stack to the log and exits with status 1, so a stopped
  server never lingers (`kill -USR1 PID` writes the same stacks at any time);
- refuses a cache dir, socket folder or lock that another user owns or may write (locks.py), and
  bounds the streaming calls it runs so that short calls always find a worker (MAX_STREAMS).
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib.metadata
import logging
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent import futures
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
from lgrep.v1 import server_pb2, server_pb2_grpc

from lgrep_core.domain.errors import IndexBusyError, StorageError
from lgrep_core.domain.models import ServerInfo, ServerRole
from lgrep_core.embeddings.base import EmbeddingProvider, declared_dimension, model_label
from lgrep_core.rpc import grpc_interceptors, grpc_server_setup, grpc_support, grpc_tokens, wire
from lgrep_core.runtime.locks import acquire_pid_lock, ensure_private_dir, lock_holder, release_pid_lock
from lgrep_core.runtime.memory import limit_heap_arenas
from lgrep_core.settings.config import LgrepSettings

__all__ = [
    "ActivityInterceptor",
    "ServerInfoServicer",
    "ServerRuntime",
    "add_server_service",
    "make_server_info",
    "run_server",
    "server_interceptors",
    "server_pid",
    "server_version",
    "tcp_token",
]

log = logging.getLogger(__name__)

# Streaming calls (IndexProject, health Watch, reflection) each hold a worker thread while they last:
# at most MAX_STREAMS run at once, MAX_STREAMS_PER_CLIENT of one client, and UNARY_WORKERS more
# workers are there for short calls only, so a search is answered however many streams are open.
MAX_STREAMS = 16
MAX_STREAMS_PER_CLIENT = 4
UNARY_WORKERS = 16
MAX_WORKERS = MAX_STREAMS + UNARY_WORKERS


def server_pid(socket_path: Path) -> int | None:
    """The pid of the server holding `socket_path`'s lock, or None if no server holds it."""
    holder = lock_holder(_lock_path(socket_path))
    if holder is None:
        return None
    return int(holder) if holder.isdigit() else -1


def _lock_path(socket_path: Path) -> Path:
    return socket_path.with_name(socket_path.name + ".lock")


GIL_SWITCH_INTERVAL_S = 0.0005
# Stopping waits this long for the threads a server started (a model warm-up: loading a built graph
# takes ~1 s, building it on a fresh cache ~20 s) before it lets the process end.
THREAD_JOIN_S = 120.0
# How often the main thread wakes to run the handler of a signal another thread received.
SIGNAL_POLL_S = 0.2
# A stop that has not ended the process this long after it began writes every thread's stack to the
# log and ends the process (exit status 1), as the `kill PID` the client would otherwise tell the
# user to run: index writes survive a killed process (generations, ADR 0006). Below the client's
# wait (daemon_client.STOP_TIMEOUT_S, 180 s), so `lgrep serve --stop` never leaves a daemon behind.
STOP_DEADLINE_S = THREAD_JOIN_S + 40.0
# Once stopped, the process has this long to end (the interpreter joins what threads remain and runs
# its exit handlers) before the same stacks-and-exit: a server process ends after its stop.
EXIT_DEADLINE_S = 30.0


class ServerRuntime:
    """One gRPC server process (see the module docstring)."""

    def __init__(
        self,
        socket_path: Path,
        *,
        tcp_port: int = 0,
        interceptors: Sequence[grpc.ServerInterceptor] = (),
        what: str = "lgrep server",
        cache_dir: Path | None = None,
    ) -> None:
        grpc_support.unix_target(socket_path)  # a path the OS cannot bind is a ConfigError now
        # A server lives long and loads snapshots on native threads: fewer heap arenas keep what
        # those loads free reusable (lgrep_core.runtime.memory). Before the server's own threads start.
        limit_heap_arenas()
        # Query threads share the GIL with snapshot refreshes and indexing, whose Python loops hold
        # it for a whole switch interval each time: a tenth of Python's default (5 ms) hands it back
        # to a query sooner (8 paced clients beside an edit a second: search p95 ~200 -> ~130 ms).
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        self.socket_path = socket_path
        self.tcp_port = tcp_port
        self.bound_tcp_port = 0
        self.cache_dir = cache_dir
        self.what = what
        self._interceptors = list(interceptors)
        self._lock_fd: int | None = None
        self._server: grpc.Server | None = None
        self._health: Any = None
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._on_stop: list[Callable[[], None]] = []
        self._started_threads: list[threading.Thread] = []

    # ------------------------------------------------------------------------------ lifecycle

    def claim(self) -> None:
        """Take the endpoint: the lock beside the socket, then any socket a dead server left.

        Raises:
            IndexBusyError: another server holds it (the message names its pid).
            ConfigError: the cache dir, the socket's folder or the lock is not private to this user
                (another user could plant a socket or a lock there), or cannot be created.
            StorageError: the path holds something else than a socket.
        """
        if self._lock_fd is not None:
            return
        if self.cache_dir is not None:
            ensure_private_dir(self.cache_dir)
        ensure_private_dir(self.socket_path.parent, what=f"the {self.what}'s socket folder")
        fd, holder = acquire_pid_lock(_lock_path(self.socket_path))
        if fd is None:
            raise IndexBusyError(
                f"another {self.what} (pid {holder}) is already serving {self.socket_path}; "
                "stop it first (`lgrep serve --stop`), or give this one another socket (--socket)"
            )
        self._lock_fd = fd
        self._remove_stale_socket()

    def _remove_stale_socket(self) -> None:
        try:
            st = os.lstat(self.socket_path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot inspect {self.socket_path}: {exc.strerror}") from None
        if not stat.S_ISSOCK(st.st_mode):
            raise StorageError(
                f"{self.socket_path} exists and is not a socket; lgrep will not replace it: move it away"
            )
        log.info("removing the socket a stopped server left: %s", self.socket_path)
        self.socket_path.unlink()

    def start(self, install: Callable[[grpc.Server], Sequence[str]]) -> None:
        """Build the server, let `install` add the servicers (it returns their full names, for health
        and reflection), and start listening.

        Raises:
            ConfigError: the socket or the TCP port cannot be used.
        """
        if self._lock_fd is None:
            self.claim()
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="lgrep-rpc"),
            interceptors=self._interceptors,
            options=grpc_support.server_options(),
        )
        names = list(install(server))
        self._health = grpc_server_setup.add_standard_services(server, names)
        grpc_server_setup.add_unix_port(server, self.socket_path)
        if self.tcp_port:
            self.bound_tcp_port = grpc_server_setup.add_tcp_port(server, self.tcp_port)
        server.start()
        self._server = server
        log.info("%s listening on %s (pid %d)", self.what, self.socket_path, os.getpid())

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Run `callback` while stopping, after the server stopped taking calls."""
        self._on_stop.append(callback)

    def notify_ready(self, ready_fd: int | None) -> None:
        """Tell whoever started this process that it accepts calls (one line on an inherited pipe)."""
        if ready_fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(ready_fd, f"ready {os.getpid()}\n".encode())
            os.close(ready_fd)

    def install_signal_handlers(self) -> None:
        def handle(signum: int, frame: Any) -> None:
            log.info("%s received %s: stopping", self.what, signal.Signals(signum).name)
            threading.Thread(target=self.stop, name="lgrep-stop", daemon=True).start()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)
        # `kill -USR1 PID` writes every thread's stack to the log (stderr): what a server that will
        # not stop is waiting for, without a debugger.
        with contextlib.suppress(AttributeError, ValueError, OSError):
            faulthandler.register(signal.SIGUSR1, all_threads=True)

    @property
    def stopped(self) -> threading.Event:
        return self._stopped

    @property
    def stopping(self) -> threading.Event:
        """Set once a stop began: work that starts late (a warm-up's next step) should not begin."""
        return self._stopping

    def wait(self) -> None:
        """Block until the server has stopped, in short waits. The kernel may hand SIGTERM to any
        thread of the process (grpc's, onnxruntime's); Python's C handler then only sets a flag,
        and the main thread runs the Python handler the next time it runs bytecode, which a wait
        without a timeout never does: the stop went unheard and `lgrep serve --stop` timed out."""
        while not self._stopped.wait(SIGNAL_POLL_S):
            pass

    def start_thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        """Run `target` on a thread that stopping waits for (up to THREAD_JOIN_S) before the process
        may end: a thread still inside native code (onnxruntime building a session) when the
        interpreter finalizes aborts the process (SIGABRT)."""
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._started_threads.append(thread)
        thread.start()
        return thread

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop taking calls, give running ones `grace_s`, wait for the threads `start_thread` began,
        run the stop callbacks, release the endpoint. Any number of callers (a signal, the idle check,
        a deleted socket) may call it at once: one of them stops, the others wait for it."""
        with self._stop_lock:
            first = not self._stopping.is_set()
            self._stopping.set()
        if not first:
            self._stopped.wait()
            return
        _deadline(STOP_DEADLINE_S)
        try:
            self._stop_once(grace_s)
        finally:
            self._stopped.set()
        log.info("%s stopped", self.what)
        _deadline(EXIT_DEADLINE_S)

    def _stop_once(self, grace_s: float) -> None:
        server = self._server
        if self._health is not None:
            self._health.enter_graceful_shutdown()  # health checks answer NOT_SERVING from now on
        if server is not None:
            server.stop(grace_s).wait()
        deadline = time.monotonic() + THREAD_JOIN_S
        for thread in self._started_threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    log.warning("%s: %s is still running; stopping without it", self.what, thread.name)
        for callback in self._on_stop:
            try:
                callback()
            except Exception:
                log.exception("stopping %s", self.what)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(self.socket_path).st_mode):
                self.socket_path.unlink()
        if self._lock_fd is not None:
            release_pid_lock(self._lock_fd)
            self._lock_fd = None


def _deadline(seconds: float) -> None:
    """In `seconds`, unless the process has ended: every thread's stack to stderr (the log), then
    exit status 1. A later call replaces an earlier deadline."""
    with contextlib.suppress(ValueError, OSError, RuntimeError):  # no usable stderr: no deadline
        faulthandler.dump_traceback_later(seconds, exit=True)


class ServerInfoServicer(server_pb2_grpc.ServerServiceServicer):
    """ServerService: who is answering (the version handshake clients make first)."""

    def __init__(self, info: Callable[[], ServerInfo]) -> None:
        self._info = info

    def GetServerInfo(self, request: server_pb2.GetServerInfoRequest, context: Any) -> server_pb2.GetServerInfoResponse:
        return wire.server_info_to_proto(self._info())


def add_server_service(server: grpc.Server, info: Callable[[], ServerInfo]) -> str:
    """Register ServerService; returns its full name (for health and reflection)."""
    server_pb2_grpc.add_ServerServiceServicer_to_server(ServerInfoServicer(info), server)
    return grpc_support.SERVER_SERVICE_NAME


# Calls that are not activity: a client renewing its watch lease is alive, not using the server,
# so an MCP server left open for a day lets the daemon idle out (ADR 0024).
NOT_ACTIVITY = frozenset({"/lgrep.v1.IndexService/RenewWatchLease", "/lgrep.v1.IndexService/ReleaseWatchLease"})


class ActivityInterceptor(grpc.ServerInterceptor):
    """Notes when the last call arrived (lease renewals aside), so an idle server can stop itself."""

    def __init__(self) -> None:
        self.last_call = time.monotonic()

    def idle_s(self) -> float:
        return time.monotonic() - self.last_call

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        if getattr(handler_call_details, "method", "") not in NOT_ACTIVITY:
            self.last_call = time.monotonic()
        return continuation(handler_call_details)


def server_interceptors(settings: LgrepSettings, activity: ActivityInterceptor) -> list[grpc.ServerInterceptor]:
    """Token check first (TCP only), then the stream allowance, the activity note, the error mapping."""
    interceptors: list[grpc.ServerInterceptor] = []
    if settings.server.tcp_port:
        interceptors.append(grpc_interceptors.TokenAuthInterceptor(tcp_token(settings), token_file=settings.token_path))
    streams = grpc_interceptors.StreamLimitInterceptor(total=MAX_STREAMS, per_client=MAX_STREAMS_PER_CLIENT)
    return [*interceptors, streams, activity, grpc_interceptors.ErrorInterceptor()]


def tcp_token(settings: LgrepSettings) -> str:
    """The token TCP clients must send: the one in the token file, or a new one written there (0600)."""
    path = settings.token_path
    if path.exists() or path.is_symlink():
        return grpc_tokens.read_token_file(path)
    token = grpc_tokens.new_token()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    grpc_tokens.write_token_file(path, token)
    return token


def server_version() -> str:
    try:
        return importlib.metadata.version("lgrep-core")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def run_server(
    runtime: ServerRuntime,
    install: Callable[[grpc.Server], Sequence[str]],
    *,
    ready_fd: int | None = None,
    maintenance: Callable[[], bool] | None = None,
    maintenance_interval_s: float = 0.5,
    on_stop: Sequence[Callable[[], None]] = (),
    after_start: Sequence[Callable[[], None]] = (),
) -> None:
    """Serve until SIGTERM/SIGINT (or `maintenance` returns False: the server is idle and may go).

    `maintenance` runs every `maintenance_interval_s` on its own thread (never on a call's thread):
    snapshot refreshes, eviction, the idle check. A server whose socket file disappears stops too.
    `after_start` callbacks each get a thread once the server listens (binding the socket narrows the
    process umask for a moment: no other thread may be creating files then)."""
    runtime.claim()
    runtime.start(install)
    for callback in on_stop:
        runtime.on_stop(callback)
    runtime.install_signal_handlers()
    for callback in after_start:
        runtime.start_thread(callback, "lgrep-after-start")

    def loop() -> None:
        while not runtime.stopping.wait(maintenance_interval_s):
            if not runtime.socket_path.exists():
                # Its socket (or the whole cache dir) was deleted: no client can reach this server.
                log.warning("%s: %s is gone; stopping", runtime.what, runtime.socket_path)
                runtime.stop()
                return
            try:
                keep = maintenance() if maintenance is not None else True
            except Exception:
                log.exception("server maintenance failed")
                keep = True
            if not keep:
                log.info("%s has been idle: stopping", runtime.what)
                runtime.stop()
                return

    threading.Thread(target=loop, name="lgrep-maintenance", daemon=True).start()
    runtime.notify_ready(ready_fd)
    runtime.wait()


def make_server_info(
    settings: LgrepSettings,
    embedder: EmbeddingProvider,
    runtime: ServerRuntime,
    roles: Sequence[ServerRole],
    *,
    resident: int,
    started: datetime,
    watched: Iterable[Path] = (),
) -> ServerInfo:
    """What GetServerInfo answers for a server process (`watched`: the projects its index role watches)."""
    from lgrep_core.embeddings.registry import models_loaded

    return ServerInfo(
        version=server_version(),
        contract_revision=wire.CONTRACT_REVISION,
        pid=os.getpid(),
        started_at=started,
        roles=tuple(roles),
        cache_dir=str(settings.cache_dir),
        embedding_provider=embedder.provider,
        embedding_model=model_label(embedder),
        embedding_dimension=declared_dimension(embedder),
        resident_projects=resident,
        unix_socket_path=str(runtime.socket_path),
        tcp_host="127.0.0.1" if runtime.bound_tcp_port else "",
        tcp_port=runtime.bound_tcp_port,
        models_loaded=models_loaded(),
        watched_projects=tuple(sorted(str(root) for root in watched)),
    )
