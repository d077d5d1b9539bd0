"""LanceDB and Arrow, imported on first use.

Importing them costs ~105 MB of resident memory and most of a second here. The storage modules are
imported by every server role at start, and a daemon that serves no project yet (or a light command)
should not pay for a table it has not opened, so they reach the libraries through these functions.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["col", "lancedb", "pyarrow"]

_HINT = "lgrep storage needs LanceDB and Arrow: install lgrep-core[storage]"


def lancedb() -> ModuleType:
    try:
        import lancedb as module
    except ImportError as exc:  # pragma: no cover - install hint
        raise ImportError(_HINT) from exc
    return module


def pyarrow() -> ModuleType:
    try:
        import pyarrow as module
    except ImportError as exc:  # pragma: no cover - install hint
        raise ImportError(_HINT) from exc
    return module


def col(name: str) -> Any:
    """A LanceDB column expression (for `isin` filters that never see user text)."""
    from lancedb.expr import col as make

    return make(name)
