"""JavaScript and TypeScript: the file a relative specifier names, or the repository's own package a
package specifier names (a monorepo's `packages/server`)."""

from __future__ import annotations

import posixpath

from ._files import ProjectFiles

__all__ = ["find_module"]

_JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


def find_module(files: ProjectFiles, f: int, module: str, member: str, qual: str) -> tuple[int, ...] | None:
    if module.startswith((".", "/")):
        here = posixpath.dirname(files.paths[f])
        return _js_file(files, posixpath.normpath(posixpath.join(here, module))) or ()
    return _js_package(files, module)


def _js_file(files: ProjectFiles, base: str) -> tuple[int, ...]:
    """The file a relative specifier names: as written, with an extension, or its folder's index
    (`./x.js` also finds `./x.ts`, as TypeScript's node16 resolution does)."""
    stems = [base]
    for ext in (".js", ".jsx", ".mjs", ".cjs"):
        if base.endswith(ext):
            stems.append(base[: -len(ext)])
    for stem in stems:
        for cand in (stem, *(stem + e for e in _JS_EXTS), *(f"{stem}/index{e}" for e in _JS_EXTS)):
            g = files.get(cand.lstrip("/"))
            if g is not None:
                return (g,)
    return ()


def _js_package(files: ProjectFiles, specifier: str) -> tuple[int, ...] | None:
    """A package specifier (`zod/v4`, `@trpc/server/http`): one of this repository's own packages
    when a folder of the package's name holds it (a monorepo's `packages/server`), else a library."""
    parts = specifier.split("/")
    scoped = specifier.startswith("@") and len(parts) > 1
    name = parts[1] if scoped else parts[0]
    sub = "/".join(parts[2:] if scoped else parts[1:])
    found: set[int] = set()
    for folder in files.folders_named(name):
        for base in (f"{folder}/src", folder):
            hit = _js_file(files, f"{base}/{sub}" if sub else f"{base}/index")
            if hit:
                found.update(hit)
                break
    return tuple(sorted(found)) if len(found) == 1 else None
