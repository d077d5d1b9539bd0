"""The process's memory helpers: they act on glibc and do nothing elsewhere."""

from __future__ import annotations

import subprocess
import sys

import pytest
from lgrep_core.runtime import memory

on_glibc = pytest.mark.skipif(memory._glibc() is None, reason="needs glibc")


def test_rss_is_a_plausible_size() -> None:
    assert 5 * 1024 * 1024 < memory.rss_bytes() < 64 * 1024**3


@on_glibc
def test_a_fresh_process_takes_the_arena_cap_and_trims() -> None:
    code = (
        "from lgrep_core.runtime import memory\n"
        "assert memory.limit_heap_arenas(2)\nmemory.release_free_heap()\nprint('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.stdout.strip() == "ok", proc.stderr
