"""CPU priority of a server's background threads: index jobs and snapshot refreshes run below the
threads that answer calls, so that on a busy machine a search gets a core before background work
does (ADR 0029). On Linux the nice value is a per-thread attribute, and the threads a thread starts
inherit it; elsewhere this is a no-op.
"""

from __future__ import annotations

import logging
import os
import threading

__all__ = ["BACKGROUND_NICE", "lower_thread_priority"]

log = logging.getLogger(__name__)

# Added to the nice value of background work's threads. Costs nothing when cores are idle.
BACKGROUND_NICE = 10


def lower_thread_priority(step: int = BACKGROUND_NICE) -> None:
    """Raise the calling thread's nice value by `step` (capped at 19). Failing to is not an error:
    the work runs at the priority it has."""
    if not hasattr(os, "setpriority") or not hasattr(threading, "get_native_id"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + step))
    except OSError as exc:
        log.debug("cannot lower a background thread's priority: %s", exc)
