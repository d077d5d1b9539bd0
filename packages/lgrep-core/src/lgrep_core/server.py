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
- stops gracefully on SIGTERM or SIGINT: no new calls, running ones get `grace_s` to finish, then
  the socket and lock are removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import signal
import stat
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from lgrep_core.errors import ConfigError, IndexBusyError, StorageError

__all__ = ["MAX_SOCKET_PATH", "ServerRuntime", "server_pid"]

log = logging.getLogger(__name__)

# sockaddr_un.sun_path is 108 bytes on Linux (104 on macOS), including the terminating NUL.
MAX_SOCKET_PATH = 103
# Worker threads for calls: searches are short, index streams are long-lived but few.
MAX_WORKERS = 32
# Largest message either way: a GetFile of a big file, a search with long snippets.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def server_pid(socket_path: Path) -> int | None:
    """The pid of the server holding `socket_path`'s lock, or None if no server holds it."""
    try:
        fd = os.open(_lock_path(socket_path), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else -1
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _lock_path(socket_path: Path) -> Path:
    return socket_path.with_name(socket_path.name + ".lock")


class ServerRuntime:
    """One gRPC server process (see the module docstring)."""

    def __init__(
        self,
        socket_path: Path,
        *,
        tcp_port: int = 0,
        interceptors: Sequence[grpc.ServerInterceptor] = (),
        what: str = "lgrep server",
    ) -> None:
        if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
            raise ConfigError(
                f"the socket path {socket_path} is longer than a unix socket allows ({MAX_SOCKET_PATH} bytes): "
                "set server.socket (LGREP_SERVER__SOCKET) to a shorter path"
            )
        self.socket_path = socket_path
        self.tcp_port = tcp_port
        self.bound_tcp_port = 0
        self.what = what
        self._interceptors = list(interceptors)
        self._lock_fd: int | None = None
        self._server: grpc.Server | None = None
        self._stopped = threading.Event()
        self._on_stop: list[Callable[[], None]] = []

    # ------------------------------------------------------------------------------ lifecycle

    def claim(self) -> None:
        """Take the endpoint: the lock beside the socket, then any socket a dead server left.

        Raises:
            IndexBusyError: another server holds it (the message names its pid).
            StorageError: the folder cannot be created or the path holds something else.
        """
        folder = self.socket_path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StorageError(f"cannot create {folder} for the server socket: {exc.strerror}") from None
        lock_path = _lock_path(self.socket_path)
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot open the server lock {lock_path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise IndexBusyError(
                    f"another {self.what} (pid {holder}) is already serving {self.socket_path}; "
                    "stop it first (`lgrep serve --stop`), or give this one another socket (--socket)"
                ) from None
            raise StorageError(f"cannot lock {lock_path}: {exc.strerror}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
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

    def start(self, install: Callable[[grpc.Server], None]) -> None:
        """Build the server, let `install` add the servicers, and start listening."""
        if self._lock_fd is None:
            self.claim()
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="lgrep-rpc"),
            interceptors=self._interceptors,
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0),
            ],
        )
        install(server)
        old_umask = os.umask(0o177)  # the socket is created 0600: only this user may connect
        try:
            server.add_insecure_port(f"unix:{self.socket_path}")
        finally:
            os.umask(old_umask)
        if self.tcp_port:
            try:
                self.bound_tcp_port = server.add_insecure_port(f"127.0.0.1:{self.tcp_port}")
            except RuntimeError as exc:
                raise StorageError(f"cannot listen on 127.0.0.1:{self.tcp_port}: {exc}") from None
        server.start()
        self.socket_path.chmod(0o600)
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

    def wait(self) -> None:
        """Block until the server has stopped."""
        self._stopped.wait()

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop taking calls, give running ones `grace_s`, run the stop callbacks, release the endpoint."""
        if self._stopped.is_set():
            return
        server = self._server
        if server is not None:
            server.stop(grace_s).wait()
        for callback in self._on_stop:
            try:
                callback()
            except Exception:
                log.exception("stopping %s", self.what)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(self.socket_path).st_mode):
                self.socket_path.unlink()
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None
        self._stopped.set()
        log.info("%s stopped", self.what)
