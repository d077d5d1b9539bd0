"""Rust: the file a `use crate::`, `self::` or `super::` path names (`a.rs` or `a/mod.rs`); other
crates are libraries."""

from __future__ import annotations

import posixpath

from lgrep_core.domain.structure import IMPORT_ALL

from ._files import ProjectFiles

__all__ = ["find_module"]


def find_module(files: ProjectFiles, f: int, module: str, member: str, qual: str) -> tuple[int, ...] | None:
    path = files.paths[f]
    segments = [s for s in module.split("::") if s]
    if not segments:
        segments = []
    here = posixpath.dirname(path)
    stem = posixpath.basename(path).rsplit(".", 1)[0]
    own = here if stem in ("mod", "lib", "main") else f"{here}/{stem}"
    if segments and segments[0] == "crate":
        base = here
        while base and not any(f"{base}/{root}" in files.index for root in ("lib.rs", "main.rs")):
            base = posixpath.dirname(base)
        segments = segments[1:]
    elif segments and segments[0] in ("self", "super"):
        base = own
        while segments and segments[0] in ("self", "super"):
            if segments[0] == "super":
                base = posixpath.dirname(base)
            segments = segments[1:]
    else:
        return None  # another crate
    tries = [[*segments, member], segments] if member and member != IMPORT_ALL else [segments]
    for seg in tries:
        rel = "/".join(seg)
        cands = [f"{base}/{rel}.rs", f"{base}/{rel}/mod.rs"] if rel else [f"{base}/lib.rs", f"{base}/main.rs"]
        for cand in cands:
            g = files.get(cand.lstrip("/"))
            if g is not None:
                return (g,)
    return ()
