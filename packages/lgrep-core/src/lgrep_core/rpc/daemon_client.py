"""Reaching the daemon from a command or the MCP server: connect, start it when it is not running,
check it serves the model the caller's settings name. Light on purpose (the client only, imported
when a command first connects): a search through a warm daemon is two short calls (the handshake,
the search), and a command is mostly its imports (docs/benchmarks.md); `connect_daemon_lite` gives
`lgrep search` the client that makes those two calls without grpcio (ADR 0027).

The daemon is the `lgrep serve` program of the lgrep distribution (`DAEMON_MODULE`); lgrep-core only
names it. A command falls back to working in-process (`None` from `daemon`) when the daemon cannot be used:
autostart is off, the socket path is too long for the OS, or the daemon failed to start (its log is
`<cache>/serve.log`). It never falls back silently on a daemon that answers with an error, or one
that serves another model: those are errors the user has to see.
"""

from __future__ import annotations

import logging
import os
import select
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from lgrep_core.domain.errors import ConfigError, LgrepError, ServerUnavailableError
from lgrep_core.rpc.endpoints import ClientSettings

if TYPE_CHECKING:  # the client (grpc and the wire code) is imported when a command first connects
    from lgrep_core.domain.models import ServerInfo
    from lgrep_core.rpc.client import LgrepClient
    from lgrep_core.rpc.lite_client import LiteClient

__all__ = [
    "DAEMON_MODULE",
    "EXIT_ALREADY_SERVING",
    "START_TIMEOUT_S",
    "Notice",
    "connect_daemon",
    "connect_daemon_lite",
    "start_daemon",
    "stop_daemon",
]

log = logging.getLogger("lgrep")

# Waiting for a daemon to say it listens. Its first start on a machine builds the ONNX graph (~20 s).
START_TIMEOUT_S = 120.0
# The handshake of a command with a running daemon.
HANDSHAKE_TIMEOUT_S = 10.0
# `python -m DAEMON_MODULE serve` runs the daemon (installed with the lgrep distribution).
DAEMON_MODULE = "lgrep_cli"


Notice = Callable[[str], None]
"""Where a waiting command says what it waits for (the CLI prints it to stderr)."""


class _Client(Protocol):
    """What connecting needs of a client: lgrep_core.rpc.client.LgrepClient or lgrep_core.rpc.lite_client.LiteClient."""

    @property
    def timeout(self) -> float | None: ...
    @timeout.setter
    def timeout(self, value: float | None) -> None: ...

    def server_info(self) -> ServerInfo: ...
    def wait_ready(self, timeout: float) -> bool: ...
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Client)


def connect_daemon(cs: ClientSettings, *, start: bool = True, notice: Notice | None = None) -> LgrepClient | None:
    """A connected client of the daemon, or None when the command should run in-process.

    Raises:
        ConfigError: the daemon serves another embedding model than these settings name, or the
            cache dir or socket is not private to the user.
        LgrepError: the daemon answered the handshake with an error.
    """
    from lgrep_core.rpc.client import LgrepClient

    return _connect(
        cs, lambda: LgrepClient.connect(socket_path=cs.socket_path, timeout=HANDSHAKE_TIMEOUT_S), start, notice
    )


def connect_daemon_lite(cs: ClientSettings, *, start: bool = True, notice: Notice | None = None) -> LiteClient | None:
    """As `connect_daemon`, with the light client whose handshake and search import no grpcio (a
    command's search: lgrep_core.rpc.lite_client, ADR 0027); its other calls go through gRPC."""
    from lgrep_core.rpc.lite_client import LiteClient

    return _connect(cs, lambda: LiteClient.connect(cs.socket_path, timeout=HANDSHAKE_TIMEOUT_S), start, notice)


def _connect(cs: ClientSettings, make: Callable[[], _C], start: bool, notice: Notice | None) -> _C | None:
    _check_endpoint(cs.socket_path)
    try:
        client = make()
    except ConfigError as exc:  # a socket path the OS cannot use
        log.info("not using the daemon: %s", exc.message)
        return None
    if cs.socket_path.exists() and _handshake(client, cs):
        return client
    if not (start and cs.autostart):
        client.close()
        return None
    if notice is not None:
        notice("starting the lgrep daemon (it keeps the model and indexes warm; `lgrep serve --stop` stops it)")
    if not start_daemon(cs) or not _handshake(client, cs, wait=True):
        client.close()
        log.warning("the lgrep daemon did not start (see %s); working in this process", cs.cache_dir / "serve.log")
        return None
    return client


def _check_endpoint(socket_path: Path) -> None:
    """Refuse to talk to a socket another user could have planted: its folder must be the user's and
    private (see locks.check_private_dir), and the socket the user's own.

    Raises:
        ConfigError: saying which and how to fix it.
    """
    import stat

    from lgrep_core.runtime.locks import check_private_dir

    if not socket_path.parent.is_dir():
        return  # nothing to talk to yet; start_daemon creates the folder
    check_private_dir(socket_path.parent, what="the daemon's socket folder")
    try:
        info = os.lstat(socket_path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"cannot inspect the daemon's socket {socket_path}: {exc.strerror}") from None
    if not stat.S_ISSOCK(info.st_mode):
        raise ConfigError(f"{socket_path} is not a socket: move it away (the daemon creates its own)")
    if info.st_uid != os.geteuid():
        raise ConfigError(
            f"the daemon's socket {socket_path} belongs to user id {info.st_uid}, not to you ({os.geteuid()}): "
            "lgrep does not talk to another user's server; remove it"
        )


def _handshake(client: _Client, cs: ClientSettings, *, wait: bool = False) -> bool:
    """True when a daemon answers and serves this command's model; False when none answers."""
    try:
        if wait and not client.wait_ready(START_TIMEOUT_S):
            return False
        info = client.server_info()
    except ServerUnavailableError:
        return False
    client.timeout = None  # calls after the handshake may take as long as the work does
    served = {"provider": info.embedding_provider, "model": info.embedding_model, "dimension": info.embedding_dimension}
    if served != cs.embedding:
        raise ConfigError(
            f"the lgrep daemon (pid {info.pid}) serves {served['provider']}/{served['model']} "
            f"({served['dimension']} d), but this command's settings name {cs.embedding['provider']}/"
            f"{cs.embedding['model']} ({cs.embedding['dimension']} d): stop it with `lgrep serve --stop` (the next "
            "command starts one with your settings), or run the command with --no-daemon"
        )
    return True


def start_daemon(cs: ClientSettings) -> bool:
    """Start `lgrep serve` in the background and wait until it listens. False if it could not start;
    True also when another daemon won the race to start (the caller then connects to that one).

    The daemon never imports from a project: `-P` keeps the working directory off `sys.path`, and its
    working directory is the cache dir, which only lgrep writes (ADR 0005)."""
    import subprocess

    from lgrep_core.runtime.locks import ensure_private_dir

    ensure_private_dir(cs.cache_dir)
    ensure_private_dir(cs.socket_path.parent, what="the daemon's socket folder")
    read_fd, write_fd = os.pipe()
    log_path = cs.cache_dir / "serve.log"
    try:
        with log_path.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", DAEMON_MODULE, "serve", "--ready-fd", str(write_fd)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                pass_fds=(write_fd,),
                start_new_session=True,
                cwd=str(cs.cache_dir),
                env=os.environ.copy(),
            )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        log.warning("cannot start the lgrep daemon: %s", exc.strerror)
        return False
    os.close(write_fd)
    try:
        line = _read_line(read_fd, START_TIMEOUT_S)
    finally:
        os.close(read_fd)
    if line.startswith("ready"):
        return True
    try:
        code = proc.wait(timeout=5.0)  # it closed the pipe without saying it was ready: it is exiting
    except subprocess.TimeoutExpired:
        log.warning("the lgrep daemon (pid %d) did not say it was ready within %.0f s", proc.pid, START_TIMEOUT_S)
        return False
    # Another command started one at the same moment: use that one.
    return code == EXIT_ALREADY_SERVING


# `lgrep serve` exits with this code when another daemon already serves its socket.
EXIT_ALREADY_SERVING = 3


def _read_line(fd: int, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 256)
        if not chunk:
            break  # the daemon exited (or closed the pipe) without saying it was ready
        data += chunk
    return data.decode("ascii", "replace").strip()


# `lgrep serve --stop` waits this long for the daemon to end: running index jobs get up to 120 s to
# reach their next commit (lgrep_index.server.STOP_JOBS_S), calls 5 s, a model still loading up to
# 120 s; the daemon's own stop deadline (160 s) ends it before this.
STOP_TIMEOUT_S = 180.0
# After this long, `lgrep serve --stop` says what it is waiting for.
STOP_NOTICE_S = 3.0


def stop_daemon(socket_path: Path, *, timeout_s: float = STOP_TIMEOUT_S, notice: Notice | None = None) -> int | None:
    """Ask the daemon on `socket_path` to stop (SIGTERM) and wait until its process has ended.
    Returns its pid, or None when no daemon runs there.

    The pid comes from the lock file beside the socket, which anyone able to write that file could
    point at any process: it is signalled only once the socket's folder and the lock are the user's,
    and the kernel says that very process holds the lock (/proc/locks), or, where the kernel does not
    say, the daemon answering on the socket reports that pid. On Linux the signal goes through a pidfd
    opened before the check, so a pid reused meanwhile is never hit.

    Raises:
        ConfigError: the socket's folder or the lock file is not private to the user.
        LgrepError: the lock names a process that is not the daemon, or it did not end within `timeout_s`.
    """
    import fcntl
    import signal

    from lgrep_core.runtime.locks import check_owned_file, check_private_dir, lock_holder_pids

    if not socket_path.parent.is_dir():
        return None
    check_private_dir(socket_path.parent, what="the daemon's socket folder")
    lock = socket_path.with_name(socket_path.name + ".lock")
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LgrepError(f"cannot read the daemon's lock file {lock}: {exc.strerror}") from None
    try:
        check_owned_file(fd, lock, what="the daemon's lock file")
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        else:
            return None  # nobody holds it: no daemon runs
    finally:
        os.close(fd)
    if not text.isdigit() or int(text) <= 1:
        raise LgrepError(f"the daemon's lock file {lock} names no process ({text!r}): nothing was signalled")
    pid = int(text)
    pidfd = _pidfd(pid)
    try:
        holders = lock_holder_pids(lock)
        if holders == set():
            return None  # the daemon ended by itself since the lock was read
        if holders is not None:
            verified = pid in holders
            why = f"the kernel says {sorted(holders) or 'no process'} holds it"
        else:
            answered = _served_pid(socket_path)
            verified = answered == pid
            why = f"the daemon on {socket_path} says its pid is {answered}" if answered else "no daemon answers"
        if not verified:
            raise LgrepError(
                f"the daemon's lock file {lock} names pid {pid}, but {why}: lgrep will not signal a process "
                "it cannot tell is its daemon; stop the daemon yourself if one runs"
            )
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, signal.SIGTERM)
            else:
                os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return pid  # it ended between the check and the signal
        if not _wait_for_exit(pid, pidfd, timeout_s, notice):
            raise LgrepError(
                f"the lgrep daemon (pid {pid}) did not stop within {timeout_s:.0f} s; `kill {pid}` stops it "
                f"(its log: {socket_path.parent / 'serve.log'})"
            )
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return pid


def _pidfd(pid: int) -> int | None:
    """A pidfd for `pid` (Linux 5.3+), or None where there is none (then signals go by pid)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _served_pid(socket_path: Path) -> int | None:
    """The pid the daemon answering on `socket_path` reports, or None when none answers."""
    from lgrep_core.rpc.client import LgrepClient

    try:
        with LgrepClient.connect(socket_path=socket_path, timeout=HANDSHAKE_TIMEOUT_S) as client:
            return client.server_info().pid
    except LgrepError:
        return None


def _wait_for_exit(pid: int, pidfd: int | None, timeout_s: float, notice: Notice | None) -> bool:
    """Wait until process `pid` has ended (not only released its lock). False after `timeout_s`."""
    started = time.monotonic()
    noticed = notice is None
    while True:
        elapsed = time.monotonic() - started
        if elapsed >= timeout_s:
            return False
        if notice is not None and not noticed and elapsed >= STOP_NOTICE_S:
            noticed = True
            notice(f"waiting for the lgrep daemon (pid {pid}) to finish its running work and end")
        step = min(timeout_s - elapsed, 0.05 if noticed else max(0.0, STOP_NOTICE_S - elapsed))
        if pidfd is not None:
            if select.select([pidfd], [], [], step)[0]:  # a pidfd is readable once its process has ended
                return True
        elif not _alive(pid):
            return True
        else:
            time.sleep(min(step, 0.05))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
