"""`lgrep doctor`: for each agent client, where it loads lgrep from, whether each of those entries
starts and answers, and the daemon's state.

A user whose agent shows no lgrep tools, or every tool twice, needs to see what the client sees: the
registrations (`lgrep_skill.registrations`), and for each one what happens when the client starts
it. So an enabled stdio entry is started in the folder the client runs in and asked an MCP
`initialize` and `tools/list` over stdio, within a timeout; then its process group is stopped.
Doctor is read-only: it writes no file, and it does not start the daemon (it asks one that runs;
`lgrep mcp` connects to the daemon only on a tool call, which doctor never makes, and holds no watch
lease under doctor: `LGREP_MCP_WATCH=0`). A client's unreadable settings file is reported for that
client; the others are still listed.

**Doctor never runs what a repository names** (ADR 0031). A project's own files (`.mcp.json`,
`opencode.json`, `.codex/config.toml`, `.vscode/mcp.json`, ...) come with the clone, and the README
tells users to run doctor when tools are missing. So an entry a project file defines is started only
when it is certainly this installation's lgrep: its program, looked up on the user's PATH (never the
entry's own, never a relative PATH folder) or named by an absolute path, is the very file of the
running lgrep or of the `lgrep` on the user's PATH, outside the project tree, run as `lgrep mcp` with
nothing but a folder, `--root` folders or `--no-watch`; and it gets the user's environment without
credentials and without the entry's own variables (a `PYTHONPATH` or `LD_PRELOAD` there would run the
repository's code inside lgrep). Every other project entry is listed with its command as "not
started (defined by a project file)". `--run-project-servers` starts those too, each shown first, but
only where the client itself trusts the folder by a record in the user's own files (Claude Code's
trust dialog and approvals, Codex's trusted projects, Gemini CLI's trusted folders); nothing a
client keeps no readable trust record for (OpenCode, Cursor, VS Code) is started. The user's own
entries (user scope, Claude Code's local scope, plugins) are started as their client starts them,
unless their program resolves inside the project tree. Everything doctor starts gets no credential
variables, runs in a process group of its own, and is killed with that group when the check ends or
when doctor itself is interrupted or terminated.

Every command imports this module (it registers `doctor`): what only a check needs (subprocess,
selectors, threads, the output helpers) is imported inside the functions that use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from lgrep_core.app.cli_support import EXIT_ERROR, EXIT_OK
from lgrep_core.domain.errors import LgrepError, NotFoundError
from lgrep_core.rpc.endpoints import ClientSettings

from .install import undo_hint

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator

    from lgrep_skill.registrations import Reading, Registration

__all__ = ["Check", "Children", "Installation", "Launch", "check_server", "clean_env", "doctor", "plan_launch"]

# What doctor announces itself as to a server; any protocol version the server knows is answered with.
_CLIENT_INFO = {"name": "lgrep-doctor", "version": "1"}
_PROTOCOL_VERSION = "2025-06-18"
DEFAULT_TIMEOUT_S = 20.0  # `lgrep mcp` answers in about 0.7 s; a loaded machine, several at once, more


@dataclass
class Check:
    """What happened to a registration's server: found its program, started, answered; or why doctor
    did not start it (`not_started`)."""

    program: str | None = None  # the executable found (absolute), None when there is none
    started: bool = False
    answered: bool = False
    server: str | None = None  # serverInfo: "lgrep 0.1.0"
    tools: int | None = None
    seconds: float = 0.0
    error: str | None = None
    not_started: str | None = None  # doctor would not start it: why (a project file defines it, ...)
    notes: list[str] = field(default_factory=list[str])

    @property
    def ok(self) -> bool:
        return self.error is None and self.not_started is None

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
            "not_started": self.not_started,
            "notes": self.notes,
        }


# --------------------------------------------------------------------- what doctor may start

# Environment variables a server started only to be checked never gets: credentials. `lgrep mcp`
# reads a provider's key on a tool call, which doctor never makes; another program has no claim on them.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|BEARER|SIGNATURE", re.I)
_SECRET_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCP_", "GITHUB_", "GH_", "OPENAI_", "VOYAGE_", "ANTHROPIC_", "HF_")
_LGREP_PROGRAMS = ("lgrep", "lgrep-mcp")
NOT_STARTED = "not started (defined by a project file)"


def clean_env(env: dict[str, str]) -> dict[str, str]:
    """`env` without the variables that hold credentials (by name: keys, tokens, secrets, passwords,
    cloud and provider variables)."""
    return {k: v for k, v in env.items() if not (_SECRET_NAME.search(k) or k.upper().startswith(_SECRET_PREFIXES))}


def _absolute_path(path: str | None) -> str:
    """A PATH with its relative folders left out: `.` or an empty entry would find a program in the
    folder doctor runs in, which is often the project."""
    return os.pathsep.join(
        d for d in (path if path is not None else os.defpath).split(os.pathsep) if Path(d).is_absolute()
    )


def _inside(path: Path, tree: Path) -> bool:
    return path == tree or tree in path.parents


def _real(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


@dataclass(frozen=True)
class Installation:
    """The lgrep programs this installation provides: the running `lgrep` and its `lgrep-mcp` beside
    it, and the `lgrep` (and `lgrep-mcp`) on the user's PATH; none inside the project tree. A project
    entry is certainly lgrep only when its program is one of these very files."""

    files: dict[tuple[int, int], str]
    tree: Path  # the project tree: the project and its parents up to the git repository's root

    @classmethod
    def find(cls, tree: Path) -> Installation:
        from .install import lgrep_executable

        candidates: list[Path] = []
        with contextlib.suppress(LgrepError):
            candidates.append(Path(lgrep_executable()))
        candidates += [Path(sys.executable).parent / name for name in _LGREP_PROGRAMS]
        path = _absolute_path(os.environ.get("PATH"))
        candidates += [Path(found) for name in _LGREP_PROGRAMS if (found := shutil.which(name, path=path))]
        files: dict[tuple[int, int], str] = {}
        for candidate in candidates:
            real = _real(candidate)
            if real is None or _inside(real, tree) or not os.access(real, os.X_OK):
                continue
            key = _file_id(real)
            if key is not None:
                files.setdefault(key, str(candidate))
        return cls(files, tree)

    def provides(self, program: Path) -> bool:
        real = _real(program)
        return real is not None and not _inside(real, self.tree) and _file_id(real) in self.files


def _lgrep_mcp_args(argv: tuple[str, ...]) -> str | None:
    """None when `argv` runs lgrep's MCP server with only what reads (`lgrep mcp [FOLDER] [--root DIR]
    [--no-watch]`, or `lgrep-mcp` so); else why not. `--http` would listen on a port and `--token-file`
    write a file: not for a check."""
    name = Path(argv[0]).name.removesuffix(".exe")
    args = list(argv[1:])
    if name == "lgrep":
        if args[:1] != ["mcp"]:
            return f"it does not run `lgrep mcp` ({shlex.join(argv[:2])})"
        args = args[1:]
    elif name != "lgrep-mcp":
        return f"its program {argv[0]} is not lgrep"
    folders, i = 0, 0
    while i < len(args):
        arg = args[i]
        if arg == "--no-watch" or arg.startswith("--root="):
            i += 1
        elif arg == "--root" and i + 1 < len(args):
            i += 2
        elif arg.startswith("-") or folders:
            return f"its argument {arg!r} is not one doctor passes on (`lgrep mcp [FOLDER] [--root DIR] [--no-watch]`)"
        else:
            folders, i = 1, i + 1
    return None


def _find_program(program: str, path: str, cwd: Path) -> str | None:
    """The executable `program` names, as a client started in `cwd` finds it: a path (relative to
    `cwd`) or a name looked up on `path`."""
    if os.sep in program or (os.altsep and os.altsep in program):
        found = Path(program) if Path(program).is_absolute() else cwd / program
        return str(found) if found.is_file() and os.access(found, os.X_OK) else None
    return shutil.which(program, path=path)


@dataclass
class Launch:
    """What doctor runs for a registration (argv[0] absolute, found already), or why it does not."""

    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict[str, str])
    error: str | None = None  # its program is missing: a problem, as it is for the client
    not_started: str | None = None
    notes: list[str] = field(default_factory=list[str])
    announce: str | None = None  # shown on stderr before it starts (a project file's server)


def plan_launch(reg: Registration, installation: Installation, *, run_project: bool) -> Launch:
    """Whether and how doctor starts `reg` (see the module docstring): never raises."""
    argv = tuple(reg.command or ())
    if not argv or not argv[0]:
        return Launch(error="the entry has no command")
    base = {**clean_env(dict(os.environ)), "LGREP_MCP_WATCH": "0"}
    user_path = _absolute_path(os.environ.get("PATH"))
    if reg.from_project:
        launch = _plan_lgrep(reg, argv, installation, base, user_path)
        if launch.not_started is None or not run_project:
            return launch
        return _plan_trusted(reg, argv, base)
    # The user's own entry: found as its client finds it (its own PATH, if it sets one), but never a
    # program inside the project, which a clone could have put on a relative or shared path.
    path = _absolute_path(reg.env.get("PATH", os.environ.get("PATH")))
    program = _find_program(argv[0], path, reg.cwd)
    if program is None:
        where = "" if os.sep in argv[0] else " on the PATH the client passes"
        return Launch(error=f"command not found: {argv[0]}{where}")
    real = _real(Path(program))
    if real is None or _inside(real, installation.tree):
        return Launch(
            not_started=f"not started: its program {real or program} is inside the project, where a repository "
            f"could have put it (your entry in {reg.file} runs it)"
        )
    return Launch((program, *argv[1:]), {**base, **reg.env})


def _plan_lgrep(
    reg: Registration, argv: tuple[str, ...], installation: Installation, base: dict[str, str], user_path: str
) -> Launch:
    """A project file's entry: started only when it is certainly this installation's lgrep."""
    why = _lgrep_mcp_args(argv)
    if why is not None:
        return Launch(not_started=f"{NOT_STARTED}: {why}")
    program = _find_program(argv[0], user_path, reg.cwd)
    if program is None:
        where = "" if os.sep in argv[0] else " on your PATH"
        return Launch(error=f"command not found: {argv[0]}{where}")
    real = _real(Path(program)) or Path(program)
    if _inside(real, installation.tree):
        return Launch(not_started=f"{NOT_STARTED}: its program {real} is inside the project")
    if not installation.provides(real):
        ours = ", ".join(sorted(set(installation.files.values()))) or "none found"
        return Launch(not_started=f"{NOT_STARTED}: {real} is not this installation's lgrep ({ours})")
    notes = []
    if reg.env:
        notes.append(f"its env ({', '.join(sorted(reg.env))}) is not passed on: a project file set it")
    return Launch((program, *argv[1:]), dict(base), notes=notes)


def _plan_trusted(reg: Registration, argv: tuple[str, ...], base: dict[str, str]) -> Launch:
    """A project file's other entry, under --run-project-servers: started as its client starts it,
    only where the client trusts the folder by the user's own record."""
    if reg.trusted is not True:
        return Launch(not_started=f"{NOT_STARTED}: {reg.trust or 'the client has not trusted this folder'}")
    env = {**base, **reg.env}
    program = _find_program(argv[0], _absolute_path(env.get("PATH")), reg.cwd)
    if program is None:
        return Launch(error=f"command not found: {argv[0]}")
    command = shlex.join(argv)
    announce = f"starting {command} (in {reg.cwd}), defined by {reg.file}: {reg.trust}"
    return Launch(
        (program, *argv[1:]), env, notes=[f"started with --run-project-servers: {reg.trust}"], announce=announce
    )


class Children:
    """The servers doctor has started and not yet stopped. Interrupted or terminated, doctor kills
    every one's process group before it goes (a server started in a session of its own would
    otherwise outlive it); once it is stopping, nothing new starts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, subprocess.Popen[bytes]] = {}
        self.stopping = False

    def add(self, proc: subprocess.Popen[bytes]) -> bool:
        """Record a started server; False (and it is killed) when doctor is stopping."""
        with self._lock:
            if not self.stopping:
                self._live[proc.pid] = proc
                return True
        _kill_group(proc.pid)
        return False

    def remove(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._live.pop(proc.pid, None)

    def kill_all(self) -> None:
        with self._lock:
            self.stopping = True
            live = list(self._live.values())
        for proc in live:
            _kill_group(proc.pid)

    @contextlib.contextmanager
    def on_signals(self) -> Iterator[None]:
        """While the checks run: SIGTERM and SIGHUP end doctor as Ctrl-C does, and whatever ends it
        kills the servers' groups first (signal handlers can be set only in the main thread)."""
        import signal

        def terminated(signum: int, _frame: Any) -> None:
            self.kill_all()
            raise SystemExit(128 + signum)

        saved: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                saved[sig] = signal.signal(sig, terminated)
        try:
            yield
        finally:
            self.kill_all()
            for sig, handler in saved.items():
                signal.signal(sig, handler)


def _kill_group(pid: int) -> None:
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def check_server(
    launch: Launch, *, cwd: Path, timeout: float, start: bool = True, children: Children | None = None
) -> Check:
    """Start `launch.argv` in `cwd` with `launch.env` as an MCP client would, send `initialize` then
    `tools/list` over stdio, and stop its process group (with `start` false, only say what was
    found). Never raises: what went wrong is the Check's error."""
    import subprocess
    import tempfile

    check = Check(error=launch.error, not_started=launch.not_started, notes=list(launch.notes))
    if launch.error is not None or launch.not_started is not None:
        return check
    check.program = launch.argv[0]
    if not cwd.is_dir():
        check.error = f"the folder the client would start it in is missing: {cwd}"
        return check
    if not start:
        return check
    children = children if children is not None else Children()
    if children.stopping:
        check.not_started = "not started: doctor is stopping"
        return check
    if launch.announce:
        from .output import printable

        print(f"doctor: {printable(launch.announce)}", file=sys.stderr, flush=True)
    began = time.monotonic()
    with tempfile.TemporaryFile() as stderr:
        try:
            proc = subprocess.Popen(
                list(launch.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=launch.env,
                start_new_session=True,  # its own process group: stopped with whatever it started
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the command or its environment
            check.error = f"cannot start {launch.argv[0]}: {getattr(exc, 'strerror', None) or exc}"
            return check
        check.started = True
        try:
            if children.add(proc):
                _converse(proc, check, deadline=began + timeout, timeout=timeout)
            else:
                check.error = "doctor stopped before it answered"
        finally:
            _stop(proc)
            children.remove(proc)
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


def _check_all(
    readings: list[Reading], timeout: float, *, start: bool, run_project: bool, tree: Path
) -> dict[int, Check]:
    """Each enabled stdio registration checked (started, when `start` and doctor may), a few at a time."""
    from concurrent.futures import ThreadPoolExecutor

    installation = Installation.find(tree)
    wanted = [r for reading in readings for r in reading.registrations if r.enabled and r.command is not None]
    launches = {id(r): plan_launch(r, installation, run_project=run_project) for r in wanted}
    children = Children()
    with ThreadPoolExecutor(max_workers=max(1, min(4, len(wanted)))) as pool, children.on_signals():
        futures = {
            id(r): pool.submit(
                check_server, launches[id(r)], cwd=r.cwd, timeout=timeout, start=start, children=children
            )
            for r in wanted
        }
        return {key: future.result() for key, future in futures.items()}


@click.command()
@click.argument("path", default=".", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--no-check", is_flag=True, help="only list the registrations: start none of them")
@click.option(
    "--run-project-servers",
    is_flag=True,
    help="also start the servers a project's own files define that are not this installation's lgrep, each "
    "shown first, where the client trusts the folder (by your own records)",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 600),
    metavar="S",
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="seconds each server has to start and answer",
)
@click.pass_obj
def doctor(
    cs: ClientSettings, path: Path, *, as_json: bool, no_check: bool, run_project_servers: bool, timeout: float
) -> int:
    """Show, for each agent client, where lgrep is registered (as seen from the project at PATH),
    whether each registration starts and answers, duplicates, and the daemon's state. Writes
    nothing; exits 1 when something needs fixing. A server a project's own file defines is started
    only when it is this installation's lgrep: the others are shown, not run."""
    from lgrep_skill import AGENT_CLIENTS
    from lgrep_skill.registrations import find_registrations, project_tree

    from .install import client_locations

    root = path.expanduser()
    if not root.is_dir():
        raise NotFoundError(f"{root} is not a directory")
    root = root.resolve()
    where = client_locations()
    readings = find_registrations(root, where)
    tree = project_tree(root)
    checks = _check_all(readings, timeout, start=not no_check, run_project=run_project_servers, tree=tree)
    problems: list[str] = []
    clients: list[dict[str, Any]] = []
    for agent, reading in zip(AGENT_CLIENTS, readings, strict=True):
        program = shutil.which(agent.program)
        folder = agent.folder(where)
        duplicate = _duplicate(reading)
        registrations: list[dict[str, Any]] = []
        for reg in reading.registrations:
            check = checks.get(id(reg))
            registrations.append({**reg.to_json(), "check": check.to_json() if check else None})
            if check is not None and check.not_started is not None:
                problems.append(
                    f"{agent.name}: {reg.describe()} runs {shlex.join(reg.command or ())}: {check.not_started}"
                )
            elif check is not None and not check.ok:
                problems.append(f"{agent.name}: {reg.describe()} does not answer: {check.error}")
        if duplicate:
            problems.append(f"{agent.name}: {duplicate}")
        problems += [f"{agent.name}: {error}" for _, error in reading.problems]
        clients.append({
            "client": agent.name,
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
        print(f"           runs  {printable(shlex.join(reg.command or ()))}  (in {printable(str(reg.cwd))})")
    for note in reg.notes:
        print(f"           {printable(note)}")
    if reg.from_project and reg.trust and reg.trust not in reg.notes:
        print(f"           trust: {printable(reg.trust)}")
    if not reg.enabled:
        print("           switched off: the client does not start it")
    elif check is not None:
        for note in check.notes:
            print(f"           {printable(note)}")
        if check.not_started is not None:
            print(f"         ! {printable(check.not_started)}")
        elif not check.ok:
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
