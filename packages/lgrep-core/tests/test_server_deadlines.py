"""A server process whose stop hangs, or that does not end once stopped, writes every thread's stack
to its log and exits (status 1) instead of lingering: `lgrep serve --stop` never leaves one behind.
Each case runs in a process of its own (the deadline ends the process it is armed in)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_SCRIPT = """
import threading, time
from pathlib import Path
import lgrep_core.rpc.server as server

server.STOP_DEADLINE_S = {stop}
server.EXIT_DEADLINE_S = {exit}
server.THREAD_JOIN_S = 600.0
runtime = server.ServerRuntime(Path({socket!r}), what="test server")
release = threading.Event()

def stuck_in_stop():  # a started thread that ignores the stop, as a hung native call would
    release.wait()

def blocks_exit():  # a non-daemon thread the interpreter joins at exit
    release.wait()

runtime.start_thread(stuck_in_stop if {hang_stop} else (lambda: None), "stuck")
if not {hang_stop}:
    threading.Thread(target=blocks_exit, name="blocks-exit", daemon=False).start()
runtime.stop(grace_s=0.1)
print("stop returned", flush=True)
"""


@pytest.mark.parametrize(("hang_stop", "where"), [(True, "stuck_in_stop"), (False, "blocks_exit")])
def test_a_hung_stop_or_exit_dumps_the_stacks_and_ends_the_process(tmp_path: Path, hang_stop: bool, where: str) -> None:
    script = _SCRIPT.format(stop=1.0, exit=1.0, socket=str(tmp_path / "s.sock"), hang_stop=hang_stop)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Timeout (0:00:01)!" in proc.stderr and f"in {where}" in proc.stderr, proc.stderr
    assert ("stop returned" in proc.stdout) is (not hang_stop)


def test_a_stop_that_ends_in_time_exits_cleanly(tmp_path: Path) -> None:
    script = _SCRIPT.format(stop=30.0, exit=30.0, socket=str(tmp_path / "s.sock"), hang_stop=False)
    script = script.replace("release = threading.Event()", "release = threading.Event(); release.set()")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0 and "stop returned" in proc.stdout and "Timeout" not in proc.stderr, proc.stderr
