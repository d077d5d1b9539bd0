"""Java, Kotlin and Scala: `import a.b.C` names the file `a/b/C.*`, `import a.b.*` the folder `a/b`."""

from __future__ import annotations

from lgrep_core.domain.structure import IMPORT_ALL

from ._files import ProjectFiles

__all__ = ["find_module"]


def find_module(files: ProjectFiles, f: int, module: str, member: str, qual: str) -> tuple[int, ...] | None:
    dotted = [p for p in module.split(".") if p]
    member = member if member != IMPORT_ALL else ""
    want = "/".join([*dotted, member]) if member else "/".join(dotted)
    if member:
        hits = [g for p, g in files.index.items() if p.rsplit(".", 1)[0].endswith(want) and _boundary(p, want)]
        return tuple(hits) if hits else None
    dirs = [d for d in files.dirs if d == want or d.endswith("/" + want)]
    return tuple(g for d in dirs for g in files.dirs[d]) or None


def _boundary(path: str, want: str) -> bool:
    stem = path.rsplit(".", 1)[0]
    return stem == want or stem.endswith("/" + want)
