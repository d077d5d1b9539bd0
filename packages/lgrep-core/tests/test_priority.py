"""Background threads run below the answering ones (ADR 0029)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from lgrep_core.runtime.priority import BACKGROUND_NICE, lower_thread_priority

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="per-thread nice values: Linux")


def _nice(tid: int) -> int:
    stat = Path(f"/proc/self/task/{tid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def test_only_the_calling_thread_and_the_threads_it_starts_are_lowered() -> None:
    base = _nice(threading.get_native_id())
    seen: dict[str, int] = {}

    def child() -> None:
        seen["child"] = _nice(threading.get_native_id())

    def background() -> None:
        lower_thread_priority()
        seen["background"] = _nice(threading.get_native_id())
        started = threading.Thread(target=child)
        started.start()
        started.join()

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    expected = min(19, base + BACKGROUND_NICE)
    assert seen == {"background": expected, "child": expected}
    assert _nice(threading.get_native_id()) == base == os.getpriority(os.PRIO_PROCESS, 0)
