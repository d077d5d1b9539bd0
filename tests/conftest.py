"""Cross-package fixtures: run the real `lgrep` command against copies of tests/fixtures/repos."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "repos"


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Lgrep:
    """Runs `lgrep` in a subprocess, exactly as a user or an agent would, with its own cache dir."""

    cache: Path
    env: dict[str, str]
    command = (sys.executable, "-m", "lgrep_cli")

    def __call__(self, *args: str, cwd: Path | None = None, check: bool = True, timeout: float = 600) -> CliResult:
        proc = subprocess.run(
            [*self.command, *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
        result = CliResult(proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise AssertionError(f"lgrep {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )


@dataclass
class InProcessLgrep:
    """Runs `lgrep` in this process (`lgrep_cli.cli.main`), with the environment, working folder and
    captured output a subprocess would have: the same commands, arguments and answers, without a
    process start (about a second of CPU each: Python, lancedb and the model load again) per call.
    For tests of what a command answers (ranking, filters, output forms, redaction); tests of the
    process itself (start-up, imports, signals, locks held across processes, exit on damage) keep
    `Lgrep` (which alone can `popen` one). The model, once loaded, stays loaded for the rest of the
    worker's tests."""

    cache: Path
    env: dict[str, str]

    def __call__(self, *args: str, cwd: Path | None = None, check: bool = True, timeout: float = 600) -> CliResult:
        import contextlib
        import gc
        import io
        import logging

        from lgrep_cli.cli import main

        saved_env, saved_cwd = dict(os.environ), Path.cwd()
        root_logger = logging.getLogger()
        saved_handlers, saved_level = root_logger.handlers[:], root_logger.level
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
        err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
        os.environ.clear()
        os.environ.update(self.env)
        try:
            if cwd is not None:
                os.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args))
        finally:
            gc.unfreeze()  # main() freezes what it made, as a process about to exit may
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            root_logger.handlers[:] = saved_handlers  # main() points logging at its stderr
            root_logger.setLevel(saved_level)
        texts = []
        for stream in (out, err):
            stream.flush()
            texts.append(stream.buffer.getvalue().decode("utf-8", errors="replace"))  # type: ignore[attr-defined]
        result = CliResult(code, texts[0], texts[1])
        if check and code != 0:
            raise AssertionError(f"lgrep {' '.join(args)} exited {code}:\n{result.err}")
        return result


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first, each kind in its collected order: pytest-xdist hands tests out in this
    order, so the long ones are spread over the workers from the start and the many short ones fill
    the gaps, instead of a few long ones running last on one worker while the other idles."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_configure(config: pytest.Config) -> None:
    # A suite started as a background job (`nohup uv run pytest &`) has Ctrl-C (SIGINT) ignored, and
    # every command it starts would inherit that and be deaf to the interrupt a test sends, as no
    # user's terminal is. Python's own handler is reset to the default in a child, so commands get
    # SIGINT as in a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll a condition that another process makes true (not a fixed delay); fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def wait_for() -> Callable[[Callable[[], Any], float, str], Any]:
    """`wait_for(condition, timeout, what)`: poll until another process makes `condition()` true."""
    return _wait_for


def _run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of this whole run: pytest's own under pytest-xdist, shared by its workers
    (each worker's base temp is a `popen-gwN` folder inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def _bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every Python process a test starts (`lgrep`, the daemon, the MCP server) reads its compiled
    modules from one folder of this run, written by the first process that imports them. Without it,
    where PYTHONDONTWRITEBYTECODE is set (as on our machines), each of those processes compiled
    lancedb and its generated API client again: ~0.8 s of CPU each (measured: a `lgrep search` took
    2.1 s of CPU, 1.3 s with the cache). Nothing is written into the checkout or the venv."""
    saved = {k: os.environ.get(k) for k in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    os.environ["PYTHONPYCACHEPREFIX"] = str(_run_dir(tmp_path_factory) / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX graph build per test run, shared by every test's cache dir (and by pytest-xdist's
    workers: the build holds a file lock, so a second worker waits for the first one's graph)."""
    path = _run_dir(tmp_path_factory) / "models"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def lgrep(tmp_path: Path, model_dir: Path) -> Iterator[Lgrep]:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(model_dir, target_is_directory=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_") and k not in {"XDG_CONFIG_HOME"}}
    # These tests exercise the commands in-process; tests/e2e/test_daemon*.py run them through a daemon.
    env.update(
        {"HOME": str(home), "LGREP_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1", "LGREP_SERVER__AUTOSTART": "0"}
    )
    yield Lgrep(cache, env)


@pytest.fixture
def lgrep_here(lgrep: Lgrep) -> InProcessLgrep:
    """`lgrep`'s cache dir and environment (one dict: a test's change to either shows in both), its
    commands run in this process (InProcessLgrep)."""
    return InProcessLgrep(lgrep.cache, lgrep.env)


@dataclass
class Daemon:
    """An `lgrep serve` process of its own cache dir (short enough for a unix socket path)."""

    lgrep: Lgrep
    cache: Path
    process: subprocess.Popen[bytes] | None = None
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def socket(self) -> Path:
        return self.cache / "lgrep.sock"

    def start(self, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 120) -> int:
        """Start `lgrep serve` and wait until it says it listens; returns its pid."""
        read_fd, write_fd = os.pipe()
        env = {**self.lgrep.env, **(extra_env or {})}
        with (self.cache / "serve-test.log").open("ab") as log:
            self.process = subprocess.Popen(
                [*self.lgrep.command, "serve", "--ready-fd", str(write_fd), *args],
                pass_fds=(write_fd,),
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=self.cache,
            )
        self.started.append(self.process)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as ready:
            line = ready.readline().decode()  # EOF when it exits without listening
        if not line.startswith("ready"):
            self.process.wait(timeout=30)
            raise AssertionError(f"lgrep serve did not start: {(self.cache / 'serve-test.log').read_text()[-2000:]}")
        return self.process.pid

    def stop(self) -> None:
        """Stop every daemon of this cache dir: the one started here and any a command started."""
        self.lgrep("serve", "--stop", check=False, timeout=60)
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)


@pytest.fixture
def daemon(tmp_path: Path, model_dir: Path) -> Iterator[Daemon]:
    """A cache dir with a short path and commands that use (and autostart) the daemon; every daemon
    of it is stopped afterwards."""
    cache = Path(tempfile.mkdtemp(prefix="lgd-", dir="/tmp"))
    (cache / "models").symlink_to(model_dir, target_is_directory=True)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_") and k not in {"XDG_CONFIG_HOME"}}
    env.update({"HOME": str(home), "LGREP_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"})
    handle = Daemon(Lgrep(cache, env), cache)
    try:
        yield handle
    finally:
        handle.stop()
        shutil.rmtree(cache, ignore_errors=True)


def write_python_repo(root: Path, files: int, funcs: int = 4, *, distinct: bool = True) -> None:
    """`files` Python modules of `funcs` functions each, in 20 packages. With distinct=False the
    functions repeat across files, so they share embeddings (content-addressed) and the vector
    phase stays short."""
    for n in range(files):
        i = n if distinct else 0
        pkg = root / f"pkg{n % 20}"
        pkg.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(
            f"def handler_{i}_{j}(request, retries={j}):\n"
            f'    """Handle request kind {j} for module {i} and log the outcome."""\n'
            f"    value = request.get('field_{j}') or {i * j}\n"
            f"    for attempt in range(retries):\n"
            f"        value = transform_{j}(value, attempt)\n"
            f"    return value\n"
            for j in range(funcs)
        )
        (pkg / f"module_{n}.py").write_text(body + "\n")


@pytest.fixture
def make_repo() -> Callable[..., None]:
    """`make_repo(root, files, funcs=4, distinct=True)`: a synthetic Python repository of that size."""
    return write_python_repo


@pytest.fixture
def mini_repo(tmp_path: Path) -> Path:
    """A private copy of the small multi-language fixture repository."""
    dest = tmp_path / "mini"
    shutil.copytree(FIXTURES / "mini", dest)
    return dest


# Real agent clients, installed from npm once per machine (CI installs them on its first use) and
# reused by every later test and run: `npm_client("opencode-ai", "1.18.33", "opencode")`.
NPM_CLIENTS_DIR = Path(os.environ.get("LGREP_TEST_NPM_DIR", str(Path.home() / ".cache" / "lgrep-test-npm")))
# The clients the tests run. `.ci/run` installs them ahead (`python tests/conftest.py`), in parallel
# with its other checks; a test that names another version still installs that itself.
NPM_CLIENTS = (
    ("opencode-ai", "1.18.33", "opencode"),
    ("@anthropic-ai/claude-code", "2.1.328", "claude"),
    ("@openai/codex", "0.171.0", "codex"),
    ("@google/gemini-cli", "0.61.0", "gemini"),
    ("@modelcontextprotocol/inspector", "2.12.0", "mcp-inspector"),
)


def install_npm_client(package: str, version: str, binary: str) -> Path:
    """The path of `binary` from `package@version`, installed under NPM_CLIENTS_DIR if it is not
    there yet. An install that fails is a test failure with npm's message (these tests exist to run
    the real clients, so they are never silently skipped)."""
    import fcntl

    prefix = NPM_CLIENTS_DIR / f"{package.replace('/', '+')}@{version}"
    exe = prefix / "node_modules" / ".bin" / binary
    if exe.exists():
        return exe
    prefix.mkdir(parents=True, exist_ok=True)
    with (prefix / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes do not install into one folder at once
        if not exe.exists():
            npm = shutil.which("npm")
            if npm is None:
                pytest.fail(f"npm is needed to install {package}@{version} for this test")
            proc = subprocess.run(
                [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                 f"{package}@{version}"],
                capture_output=True, text=True, timeout=900, check=False,
            )  # fmt: skip
            if proc.returncode != 0 or not exe.exists():
                pytest.fail(f"npm install {package}@{version} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return exe


@pytest.fixture(scope="session")
def npm_client() -> Callable[[str, str, str], Path]:
    """`npm_client(package, version, binary)`: a real client's executable (see install_npm_client)."""
    return install_npm_client


if __name__ == "__main__":  # `.ci/run`: install every client ahead, all at once
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(NPM_CLIENTS)) as pool:
        for path in pool.map(lambda client: install_npm_client(*client), NPM_CLIENTS):
            print(path)


@contextlib.contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """moto's S3 server on a free port of 127.0.0.1 (its output in `log`), stopped afterwards; its
    endpoint URL. The S3 tests of the versions index and the team store share it."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            found = re.search(r"Running on (http://127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
            if found:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"moto_server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)  # polling the log another process writes, not waiting out a race
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
