"""Go: the package folder an import path ends with."""

from __future__ import annotations

from ._files import ProjectFiles

__all__ = ["find_module"]


def find_module(files: ProjectFiles, f: int, module: str, member: str, qual: str) -> tuple[int, ...] | None:
    """The `.go` files of the one folder whose path ends with the import path's longest tail;
    () when several folders do, None (another module's package) when none does."""
    parts = [p for p in module.split("/") if p]
    for k in range(len(parts), 0, -1):
        suffix = "/".join(parts[-k:])
        dirs = [d for d in files.dirs if d == suffix or d.endswith("/" + suffix)]
        if len(dirs) == 1:
            return tuple(g for g in files.dirs[dirs[0]] if files.paths[g].endswith(".go"))
        if dirs:
            return ()
    return None
