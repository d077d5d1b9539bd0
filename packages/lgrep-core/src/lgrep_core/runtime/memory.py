"""The process's own memory: what it holds, and handing the C heap's free pages back.

glibc keeps freed memory for reuse, per arena, and by default makes up to 8 arenas per core: the
native threads of LanceDB and Arrow each write to their own and leave them fragmented. A snapshot
load of 10k chunks left ~75 MB resident after every buffer of it was freed; with two arenas ~35 MB.
Elsewhere (macOS, musl) these are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

__all__ = ["MMAP_THRESHOLD_BYTES", "SERVER_HEAP_ARENAS", "limit_heap_arenas", "release_free_heap", "rss_bytes"]

# Arenas a server process uses. One cost 9 MB less than two at 10k chunks, but serialises every
# native allocation of the gRPC, ONNX and LanceDB threads; the default (8 per core) cost 35 MB more.
SERVER_HEAP_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameters
_M_MMAP_THRESHOLD = -3
# Allocations of at least this size get their own mapping, handed back to the system when freed.
# glibc's default threshold starts at 128 KB and rises (up to 32 MB) each time such a block is freed,
# after which LanceDB's read buffers land in the heap among long-lived strings and stay resident: the
# same 40k-chunk snapshot load left 361 MB one run and 422 the next. Fixed, it left 362 every time.
MMAP_THRESHOLD_BYTES = 1024 * 1024


def rss_bytes() -> int:
    """Current resident set size (Linux /proc; elsewhere the peak, which errs on the safe side)."""
    try:
        with open("/proc/self/statm", "rb") as f:  # noqa: PTH123 - hot path, no Path object needed
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def release_free_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc keeps them after a load's temporary
    buffers are freed: ~55 MB after loading 10k chunks)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def limit_heap_arenas(arenas: int = SERVER_HEAP_ARENAS) -> bool:
    """Cap the C heap's arenas for the rest of the process, and fix the size from which allocations
    are mapped on their own (`MMAP_THRESHOLD_BYTES`). Call it first thing in a long-lived process:
    threads that already have an arena keep it. True when both were set."""
    libc = _glibc()
    if libc is None:
        return False
    arenas_set = libc.mallopt(_M_ARENA_MAX, arenas) == 1
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1 and arenas_set)


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if not name or not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim  # noqa: B018 - glibc only (musl has neither)
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc
