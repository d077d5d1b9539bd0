"""`lgrep doctor`: for each agent client, where it loads lgrep from, whether each of those entries
starts and answers, and the daemon's state.

A user whose agent shows no lgrep tools, or every tool twice, needs to see what the client sees: the
registrations (`lgrep_skill.registrations`), and for each one what happens when the client starts
it. So each enabled stdio entry is started the way its client would (its command, the folder the
client runs in, the environment plus the entry's own) and asked an MCP `initialize` and
`tools/list` over stdio, within a timeout; then it is stopped. Doctor is read-only: it writes no
file, and it does not start the daemon (it asks one that runs; `lgrep mcp` connects to the daemon
only on a tool call, which doctor never makes, and holds no watch lease under doctor:
`LGREP_MCP_WATCH=0`). A client's unreadable settings file is reported for
that client; the others are still listed.

Every command imports this module (it registers `doctor`): what only a check needs (subprocess,
selectors, threads, the output helpers) is imported inside the functions that use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from lgrep_core.cli_support import EXIT_ERROR, EXIT_OK
from lgrep_core.endpoints import ClientSettings
from lgrep_core.errors import LgrepError, NotFoundError

from .install import undo_hint

if TYPE_CHECKING:
    import subprocess

    from lgrep_skill.registrations import Reading, Registration

__all__ = ["Check", "check_server", "doctor"]

# What doctor announces itself as to a server; any protocol version the server knows is answered with.
_CLIENT_INFO = {"name": "lgrep-doctor", "version": "1"}
_PROTOCOL_VERSION = "2025-06-18"
DEFAULT_TIMEOUT_S = 20.0  # `lgrep mcp` answers in about 0.7 s; a loaded machine, several at once, more


@dataclass
class Check:
    """What happened when a registration's server was started: found its program, started, answered."""

    program: str | None = None  # the executable found (absolute), None when there is none
    started: bool = False
    answered: bool = False
    server: str | None = None  # serverInfo: "lgrep 0.1.0"
    tools: int | None = None
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "command_found": self.program is not None,
            "started": self.started,
            "answered": self.answered,
            "server": self.server,
            "tools": self.tools,
            "seconds": round(self.seconds, 2),
            "error": self.error,
        }


def _find_program(program: str, env: dict[str, str], cwd: Path) -> str | None:
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program) if Path(program).is_absolute() else cwd / program
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(program, path=env.get("PATH", os.defpath))


def check_server(argv: tuple[str, ...], *, cwd: Path, env: dict[str, str], timeout: float, start: bool = True) -> Check:
    """Start `argv` in `cwd` with `env` as an MCP client would, send `initialize` then `tools/list`
    over stdio, and stop it (with `start` false, only look for its program). Never raises: what went
    wrong is the Check's error."""
    import subprocess
    import tempfile

    check = Check()
    if not argv:
        check.error = "the entry has no command"
        return check
    check.program = _find_program(argv[0], env, cwd)
    if check.program is None:
        where = "" if os.sep in argv[0] else " on the PATH the client passes"
        check.error = f"command not found: {argv[0]}{where}"
        return check
    if not cwd.is_dir():
        check.error = f"the folder the client would start it in is missing: {cwd}"
        return check
    if not start:
        return check
    began = time.monotonic()
    with tempfile.TemporaryFile() as stderr:
        try:
            proc = subprocess.Popen(
                [check.program, *argv[1:]],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=True,  # its own process group: stopped with whatever it started
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the command or its environment
            check.error = f"cannot start {argv[0]}: {getattr(exc, 'strerror', None) or exc}"
            return check
        check.started = True
        try:
            _converse(proc, check, deadline=began + timeout, timeout=timeout)
        finally:
            _stop(proc)
            check.seconds = time.monotonic() - began
        if check.error is not None:
            stderr.seek(0)
            tail = stderr.read()[-2000:].decode("utf-8", errors="replace").strip().splitlines()
            if tail:
                check.error += f" (its last words: {tail[-1][:300]})"
    return check


def _converse(proc: subprocess.Popen[bytes], check: Check, *, deadline: float, timeout: float) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    lines = _Lines(proc)
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": _PROTOCOL_VERSION, "capabilities": {}, "clientInfo": _CLIENT_INFO}})  # fmt: skip
        init = lines.response(1, deadline)
        if init is None:
            check.error = _silence(proc, timeout, "initialize", closed=lines.eof)
            return
        if "result" not in init:
            check.error = f"initialize failed: {json.dumps(init.get('error'))[:300]}"
            return
        info = init["result"].get("serverInfo") or {}
        check.server = f"{info.get('name', '?')} {info.get('version', '')}".strip()
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = lines.response(2, deadline)
        if listed is None:
            check.error = _silence(proc, timeout, "tools/list", closed=lines.eof)
            return
        tools = (listed.get("result") or {}).get("tools")
        if not isinstance(tools, list):
            check.error = f"tools/list failed: {json.dumps(listed.get('error'))[:300]}"
            return
        check.answered, check.tools = True, len(tools)  # pyright: ignore[reportUnknownArgumentType]
    except _NotMcp as exc:
        check.error = str(exc)
    except OSError:  # it closed its stdin: it is going away
        check.error = _silence(proc, timeout, "initialize")


def _silence(proc: subprocess.Popen[bytes], timeout: float, what: str, *, closed: bool = True) -> str:
    """Why no answer came: it exited (its output closed: give it a moment to), or the time ran out."""
    import subprocess

    if closed:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)
    code = proc.poll()
    if code is not None:
        return f"it exited ({code}) before answering {what}"
    if closed:
        return f"it closed its output before answering {what}"
    return f"no answer to {what} within {timeout:g} s"


class _NotMcp(Exception):
    """The server wrote something on stdout that is not an MCP message."""


class _Lines:
    """The server's stdout, one JSON-RPC message a line, read with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        import selectors

        assert proc.stdout is not None
        self._fd = proc.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._buffer = b""
        self.eof = False

    def response(self, request_id: int, deadline: float) -> dict[str, Any] | None:
        """The response to `request_id` (notifications and other messages skipped); None at EOF or
        when the deadline passes."""
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    raise _NotMcp(f"it wrote something that is not MCP on stdout: {line[:200]!r}") from None
                if isinstance(message, dict) and message.get("id") == request_id:  # pyright: ignore[reportUnknownMemberType]
                    return message  # pyright: ignore[reportUnknownVariableType]
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                return None
            chunk = os.read(self._fd, 65536)
            if not chunk:
                self.eof = True
                return None
            self._buffer += chunk


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Close its stdin (a stdio server ends at EOF), then terminate its process group, then kill it."""
    import signal
    import subprocess

    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    for sig, wait in ((None, 3.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):  # what it started in its group and left
        os.killpg(proc.pid, signal.SIGKILL)


# ----------------------------------------------------------------------------------- the command


def _daemon(cs: ClientSettings) -> dict[str, Any]:
    """The daemon's state, from one that runs (never started here)."""
    from .output import server_info_json
    from .shell import connect

    socket = str(cs.socket_path)
    try:
        client = connect(replace(cs, autostart=False), start=False)
        if client is None:
            return {"running": False, "socket": socket}
        with client:
            return {"running": True, **server_info_json(client.server_info())}
    except LgrepError as exc:
        return {"running": False, "socket": socket, "error": exc.message}


def _client_env(reg: Registration) -> dict[str, str]:
    # The client passes its own environment (this one: doctor runs where the user runs the client)
    # plus what the entry sets; and a server started only to be checked takes no watch lease, which
    # would have a running daemon watch (and catch up) the project for nothing (ADR 0024).
    return {**os.environ, **reg.env, "LGREP_MCP_WATCH": "0"}


def _duplicate(reading: Reading) -> str | None:
    """What is wrong when the client loads lgrep from more than one place, or None."""
    from lgrep_skill import SERVER_NAME

    active = reading.active
    if len(active) < 2:
        return None
    same = [r for r in active if r.name == SERVER_NAME]
    others = sorted({r.name for r in active if r.name != SERVER_NAME})
    parts: list[str] = []
    if len(same) > 1:
        scopes = ", ".join(r.scope for r in same)
        loads = "warns about conflicting scopes and loads one" if reading.client == "claude-code" else "loads one"
        parts.append(f"lgrep is registered in {len(same)} places ({scopes}): the client {loads}")
    if others:
        subject = "it is" if parts else "lgrep is"
        parts.append(f"{subject} also registered as {', '.join(others)}: the agent gets every tool twice")
    return "; ".join(parts)


def _check_all(readings: list[Reading], timeout: float, *, start: bool) -> dict[int, Check]:
    """Each enabled stdio registration checked (started, when `start`), a few at a time."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = [r for reading in readings for r in reading.registrations if r.enabled and r.command is not None]
    with ThreadPoolExecutor(max_workers=max(1, min(4, len(wanted)))) as pool:
        futures = {
            id(r): pool.submit(
                check_server, r.command or (), cwd=r.cwd, env=_client_env(r), timeout=timeout, start=start
            )
            for r in wanted
        }
        return {key: future.result() for key, future in futures.items()}


@click.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--no-check", is_flag=True, help="only list the registrations: start none of them")
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 600),
    metavar="S",
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="seconds each server has to start and answer",
)
@click.pass_obj
def doctor(cs: ClientSettings, path: Path, as_json: bool, no_check: bool, timeout: float) -> int:
    """Show, for each agent client, where lgrep is registered (as seen from the project at PATH),
    whether each registration starts and answers, duplicates, and the daemon's state. Writes
    nothing; exits 1 when something needs fixing."""
    from lgrep_skill.registrations import READERS, find_registrations

    from .install import client_locations

    root = path.expanduser()
    if not root.is_dir():
        raise NotFoundError(f"{root} is not a directory")
    root = root.resolve()
    where = client_locations()
    readings = find_registrations(root, where)
    checks = _check_all(readings, timeout, start=not no_check)
    problems: list[str] = []
    clients: list[dict[str, Any]] = []
    for reader, reading in zip(READERS, readings, strict=True):
        program = shutil.which(reader.program)
        folder = reader.folder(where)
        duplicate = _duplicate(reading)
        registrations: list[dict[str, Any]] = []
        for reg in reading.registrations:
            check = checks.get(id(reg))
            registrations.append({**reg.to_json(), "check": check.to_json() if check else None})
            if check is not None and not check.ok:
                problems.append(f"{reader.name}: {reg.describe()} does not answer: {check.error}")
        if duplicate:
            problems.append(f"{reader.name}: {duplicate}")
        problems += [f"{reader.name}: {error}" for _, error in reading.problems]
        clients.append({
            "client": reader.name,
            "installed": bool(program) or folder.exists(),
            "program": program,
            "settings_folder": str(folder),
            "registrations": registrations,
            "duplicate": duplicate,
            "problems": [{"file": str(p), "error": e} for p, e in reading.problems],
        })  # fmt: skip
    daemon = _daemon(cs)
    report = {"project": str(root), "ok": not problems, "problems": problems, "clients": clients, "daemon": daemon}
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        _print(report, readings, checks, checked=not no_check)
    return EXIT_OK if not problems else EXIT_ERROR


def _print(report: dict[str, Any], readings: list[Reading], checks: dict[int, Check], *, checked: bool) -> None:
    from .output import printable

    print(f"lgrep doctor, as seen from {printable(report['project'])}")
    for client, reading in zip(report["clients"], readings, strict=True):
        print()
        state = (
            f"installed ({client['program']})"
            if client["program"]
            else "installed"
            if client["installed"]
            else "not installed"
        )
        print(f"{client['client']}: {printable(state)}")
        if not reading.registrations:
            if reading.problems:
                print("  lgrep is not registered in the files that could be read")
            else:
                hint = f" (`lgrep install {client['client']}`)" if client["installed"] else ""
                print(f"  lgrep is not registered{hint}")
        for reg in reading.registrations:
            _print_registration(reg, checks.get(id(reg)), checked=checked)
        for problem in client["problems"]:
            print(f"  ! {printable(problem['error'])}")
        if client["duplicate"]:
            print(f"  ! {printable(client['duplicate'])}; keep one, take out the others:")
            for reg in reading.active:
                print(f"      {printable(undo_hint(reg))}")
    print()
    _print_daemon(report["daemon"])
    print()
    if report["ok"]:
        print("no problems found")
    else:
        print(f"{len(report['problems'])} problem{'s' if len(report['problems']) != 1 else ''} found (see ! above)")


def _print_registration(reg: Registration, check: Check | None, *, checked: bool) -> None:
    from .output import printable

    where = f"{reg.file}" if reg.scope != "plugin" else f"{reg.plugin} (enabled in {reg.file})"
    print(f"  {reg.scope:<8} {printable(where)}  {printable(reg.key)}")
    if reg.url is not None:
        print(f"           remote server {printable(reg.url)}: not checked")
    else:
        print(f"           runs  {printable(' '.join(reg.command or ()))}  (in {printable(str(reg.cwd))})")
    for note in reg.notes:
        print(f"           {printable(note)}")
    if not reg.enabled:
        print("           switched off: the client does not start it")
    elif check is not None:
        if not check.ok:
            print(f"         ! does not answer: {printable(check.error or '?')}")
        elif check.answered:
            print(f"           answers: {printable(check.server or '?')}, {check.tools} tools ({check.seconds:.1f} s)")
        elif not checked:
            print(f"           found {printable(check.program or '?')} (not started: --no-check)")


def _print_daemon(daemon: dict[str, Any]) -> None:
    from .output import printable

    if not daemon.get("running"):
        print(f"daemon: not running ({printable(daemon.get('error') or 'it starts on the first search or tool call')})")
        return
    watched = daemon.get("watched_projects") or []
    print(
        f"daemon: running, lgrep {daemon.get('version')}, pid {daemon.get('pid')}; "
        f"projects: {daemon.get('resident_projects')} in memory, {len(watched)} watched"
    )
    print(f"  socket    {printable(str(daemon.get('unix_socket_path')))}")
    for root in watched:
        print(f"  watching  {printable(root)}")
