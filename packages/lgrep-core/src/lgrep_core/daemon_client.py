"""Reaching the daemon from a command or the MCP server: connect, start it when it is not running,
check it serves the model the caller's settings name. Light on purpose (grpc and the client only): a
search through a warm daemon is two short calls (the handshake, the search), and a command is mostly
its imports (docs/benchmarks.md).

The daemon is the `lgrep serve` program of the lgrep distribution (`DAEMON_MODULE`); lgrep-core only
names it. A command falls back to working in-process (`None` from `daemon`) when the daemon cannot be used:
autostart is off, the socket path is too long for the OS, or the daemon failed to start (its log is
`<cache>/serve.log`). It never falls back silently on a daemon that answers with an error, or one
that serves another model: those are errors the user has to see.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from lgrep_core.endpoints import ClientSettings
from lgrep_core.errors import ConfigError, LgrepError, ServerUnavailableError

__all__ = ["DAEMON_MODULE", "EXIT_ALREADY_SERVING", "START_TIMEOUT_S", "connect_daemon", "start_daemon", "stop_daemon"]

log = logging.getLogger("lgrep")

# Waiting for a daemon to say it listens. Its first start on a machine builds the ONNX graph (~20 s).
START_TIMEOUT_S = 120.0
# The handshake of a command with a running daemon.
HANDSHAKE_TIMEOUT_S = 10.0
# `python -m DAEMON_MODULE serve` runs the daemon (installed with the lgrep distribution).
DAEMON_MODULE = "lgrep_cli"


def connect_daemon(cs: ClientSettings, *, start: bool = True, notice=None):  # type: ignore[no-untyped-def]
    """A connected client of the daemon, or None when the command should run in-process.

    Raises:
        ConfigError: the daemon serves another embedding model than these settings name.
        LgrepError: the daemon answered the handshake with an error.
    """
    from lgrep_core.client import LgrepClient

    try:
        client = LgrepClient.connect(socket_path=cs.socket_path, timeout=HANDSHAKE_TIMEOUT_S)
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


def _handshake(client, cs: ClientSettings, *, wait: bool = False) -> bool:  # type: ignore[no-untyped-def]
    """True when a daemon answers and serves this command's model; False when none answers."""
    try:
        if wait:
            import grpc

            grpc.channel_ready_future(client._channel).result(timeout=START_TIMEOUT_S)
        info = client.server_info()
    except ServerUnavailableError:
        return False
    except Exception as exc:  # the channel never became ready
        if type(exc).__name__ == "FutureTimeoutError":
            return False
        raise
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
    cs.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
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


def stop_daemon(socket_path: Path, *, timeout_s: float = 30.0) -> int | None:
    """Ask the daemon on `socket_path` to stop (SIGTERM) and wait until it has released its socket.
    Returns its pid, or None when no daemon runs there.

    Raises LgrepError when it does not stop within `timeout_s`."""
    import fcntl
    import signal
    import threading

    from lgrep_core.server import server_pid

    pid = server_pid(socket_path)
    if pid is None:
        return None
    if pid > 0:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    # The daemon holds an exclusive lock while it serves: a shared lock is granted once it is gone.
    released = threading.Event()

    def wait_for_release() -> None:
        try:
            fd = os.open(socket_path.with_name(socket_path.name + ".lock"), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            released.set()
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        released.set()

    threading.Thread(target=wait_for_release, daemon=True).start()
    if not released.wait(timeout_s):
        raise LgrepError(f"the lgrep daemon (pid {pid}) did not stop within {timeout_s:.0f} s; `kill {pid}` stops it")
    return pid
