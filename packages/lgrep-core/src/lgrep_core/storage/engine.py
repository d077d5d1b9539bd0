"""LanceDB and Arrow, imported on first use.

Importing them costs ~105 MB of resident memory and most of a second here. The storage modules are
imported by every server role at start, and a daemon that serves no project yet (or a light command)
should not pay for a table it has not opened, so they reach the libraries through these functions.

Half of `import lancedb` (~0.6 s of CPU of ~1.2 s, every `lgrep` process that opens an index) was
the REST client of Lance's namespace service, which lgrep never calls: its package `__init__` builds
nine pydantic-validated API classes that nothing imported at start uses (lancedb and lance_namespace
import only its `models`). `_defer_package_init` registers that package without running its
`__init__`; its submodules import as usual, and the first read of any of its own attributes runs the
`__init__` after all, so a use we did not foresee gets the whole package, only later.

Every connection goes through `connect`, which gives it the process's one `Session` with bounded
caches. LanceDB's default session (one per connection) caches the manifest and fragment metadata of
every table version it reads, up to gigabytes: a writer that commits batch after batch grew by
~0.5 MB a commit (1,000 appends of 64 vectors: 183 -> 685 MB; with a 16 MB metadata cache, flat at
~205 MB), and a daemon's readers and writers of many projects kept theirs as long as it ran.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from types import ModuleType
from typing import Any

__all__ = ["INDEX_CACHE_BYTES", "METADATA_CACHE_BYTES", "col", "connect", "lancedb", "pyarrow"]

_HINT = "lgrep storage needs LanceDB and Arrow: install lgrep-core[storage]"


# The caches of the process's LanceDB session (shared by every connection; least recently used out).
# Metadata: table manifests, fragment and deletion metadata, a few hundred KB per version of a table
# with thousands of fragments; lgrep reads a table whole or by key, so a few versions' worth is enough
# (800 appends: 8 MB held 181 MB of RSS at the end, 32 MB 206 MB, no slower).
METADATA_CACHE_BYTES = 8 * 1024 * 1024
# Index: scalar and vector indexes, which lgrep does not build (its BM25 and vectors are its own).
INDEX_CACHE_BYTES = 16 * 1024 * 1024

# Packages whose `__init__` imports much that lancedb's import does not use (see the docstring).
_DEFERRED_INITS = ("lance_namespace_urllib3_client",)


def lancedb() -> ModuleType:
    if "lancedb" not in sys.modules:
        for name in _DEFERRED_INITS:
            _defer_package_init(name)
    try:
        import lancedb as module
    except ImportError as exc:  # pragma: no cover - install hint
        raise ImportError(_HINT) from exc
    return module


def connect(uri: str, **kwargs: Any) -> Any:
    """`lancedb.connect` with the process's bounded session (see the module docstring)."""
    return lancedb().connect(uri, session=_session(), **kwargs)


@functools.cache
def _session() -> Any:
    return lancedb().Session(index_cache_size_bytes=INDEX_CACHE_BYTES, metadata_cache_size_bytes=METADATA_CACHE_BYTES)


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


def _defer_package_init(name: str) -> None:
    """Put package `name` in sys.modules with its `__path__` (so `name.sub` imports) but its
    `__init__` not run until an attribute of the package itself is read (PEP 562 `__getattr__`)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed, or not a package: nothing to defer
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def run_init(attr: str) -> Any:
        del module.__dict__["__getattr__"]
        loader.exec_module(module)
        return getattr(module, attr)

    module.__dict__["__getattr__"] = run_init
    sys.modules[name] = module
