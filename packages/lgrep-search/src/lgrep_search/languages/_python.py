"""Python and Starlark: the files `import a.b`, `from .a import b` and `a.b.c.f()` name."""

from __future__ import annotations

import posixpath

from lgrep_core.domain.structure import IMPORT_ALL

from ._files import ProjectFiles

__all__ = ["find_module"]


def find_module(files: ProjectFiles, f: int, module: str, member: str, qual: str) -> tuple[int, ...] | None:
    here = posixpath.dirname(files.paths[f])
    dots = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    if qual and not member:  # `import a.b` then `a.b.c.f()`: the longest module of the receiver
        chain = [p for p in qual.split(".") if p]
        bound = module.split(".")
        if chain and chain[0] != bound[0]:  # `import a.b as x`: x.c -> a.b.c
            chain = [*bound, *chain[1:]]
        candidates = [chain[:k] for k in range(len(chain), 0, -1)]
    elif member and member != IMPORT_ALL:
        candidates = [[*parts, member], parts]  # `from a import b`: b may be a module
    else:
        candidates = [parts]
    for cand in candidates:
        hit = _python_module(files, here, dots, cand)
        if hit:
            return hit
    return () if dots else None


def _python_module(files: ProjectFiles, here: str, dots: int, parts: list[str]) -> tuple[int, ...]:
    if dots:
        base = here
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        rel = "/".join(parts)
        for cand in (
            f"{base}/{rel}.py" if rel else "",
            f"{base}/{rel}/__init__.py" if rel else f"{base}/__init__.py",
        ):
            g = files.get(cand.lstrip("/")) if cand else None
            if g is not None:
                return (g,)
        return ()
    if not parts:
        return ()
    rel = "/".join(parts)
    hits = [
        g
        for suffix in (f"{rel}.py", f"{rel}/__init__.py", f"{rel}.pyi")
        for p, g in files.suffix_matches(suffix)
        if _source_root(files, p[: len(p) - len(suffix)].rstrip("/"))
    ]
    return tuple(sorted(set(hits)))


def _source_root(files: ProjectFiles, folder: str) -> bool:
    """Whether absolute imports can start in `folder` (`src/`, the root): it is no package itself
    (no Python file of its own; an empty `__init__.py` is not indexed), so `json` is not
    `src/flask/json`."""
    return not folder or not any(files.paths[g].endswith((".py", ".pyi")) for g in files.dirs.get(folder, ()))
