"""Python call-edge oracle: resolve every call site under a folder with jedi.

An independent reference for lgrep's call graph (callers/callees of a symbol). For every ``.py``
file under ``--under`` (relative to ``--root``), every ``ast.Call`` whose callee is a plain name
(``foo(...)``, ``Foo(...)``) or an attribute (``obj.foo(...)``) is resolved with jedi at the position
of the callee's NAME token, and one JSON line is written per call site:

    {"path":"src/flask/app.py","line":616,"column":40,"name":"ensure_sync",
     "targets":[{"path":"src/flask/app.py","line":1065,"name":"ensure_sync"}],"external":false}

Resolution, per call site (positions: 1-based line, 0-based column in Unicode code points):

1. ``Script.goto(line, column, follow_imports=True)``; keep the results that are definitions
   (``def``, ``class``, ``@property``).
2. If none is a definition (goto stopped at an assignment, a parameter, an attribute set elsewhere,
   or found nothing), ``Script.infer(line, column)`` and keep its definitions.
3. Definitions inside ``--root`` become ``targets`` (a class for a constructor call). If every
   definition (or, with none, every name goto/infer found) lies outside the root (stdlib, builtins,
   typeshed stubs, site-packages), the call is ``"external": true``. Otherwise it is
   ``"unresolved": true`` (nothing found, or only local variables/parameters inside the root).

Calls whose callee is neither a name nor an attribute (``f()()``, ``x[0]()``, ``(lambda: 0)()``)
are not examined; the summary on stderr counts them as skipped.

Run from the lgrep workspace (jedi is in the opt-in ``oracles`` dependency group):

    uv run --frozen --group oracles python tools/oracles/jedi_calls.py \
        --root /work/scratch/oracles/repos/flask --under src/flask --out flask.jsonl
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jedi
from jedi.api.classes import Name
from jedi.inference.gradual import typeshed

# jedi Name.type values that are definitions a call can land on.
DEFINITION_TYPES = frozenset({"function", "class", "property"})


@dataclass(frozen=True, order=True)
class Target:
    path: str
    line: int
    name: str


@dataclass
class CallSite:
    path: str
    line: int
    column: int
    name: str
    targets: list[Target] = field(default_factory=list)
    external: bool = False
    unresolved: bool = False
    via_infer: bool = False

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "name": self.name,
            "targets": [{"path": t.path, "line": t.line, "name": t.name} for t in self.targets],
            "external": self.external,
        }
        if self.unresolved:
            record["unresolved"] = True
        return record


@dataclass
class FileResult:
    sites: list[CallSite]
    skipped: int
    error: str | None = None


@dataclass(frozen=True)
class Callee:
    """The name token of a call's callee: 1-based line, 0-based code-point column."""

    line: int
    column: int
    name: str


def byte_to_char_column(line_bytes: bytes, byte_column: int) -> int:
    """ast columns are UTF-8 byte offsets; jedi (and our output) count code points."""
    return len(line_bytes[:byte_column].decode("utf-8", errors="replace"))


def find_callees(tree: ast.AST, lines: Sequence[bytes]) -> tuple[list[Callee], int]:
    """The callee name token of every call; also how many calls have no such token."""
    callees: list[Callee] = []
    skipped = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            line, byte_col, name = func.lineno, func.col_offset, func.id
        elif isinstance(func, ast.Attribute) and func.end_lineno is not None and func.end_col_offset is not None:
            # The attribute name is the last token of an Attribute node.
            line, byte_col, name = func.end_lineno, func.end_col_offset - len(func.attr.encode()), func.attr
        else:
            skipped += 1
            continue
        callees.append(Callee(line, byte_to_char_column(lines[line - 1], byte_col), name))
    callees.sort(key=lambda c: (c.line, c.column))
    return callees, skipped


def relative_in_root(name: Name, root: Path) -> str | None:
    """The definition's path relative to the root, or None when it lies outside (or has no file)."""
    if name.module_path is None or name.in_builtin_module():
        return None
    try:
        return Path(name.module_path).resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def resolve(script: jedi.Script, callee: Callee, rel_path: str, root: Path) -> CallSite:
    site = CallSite(rel_path, callee.line, callee.column, callee.name)
    found: list[Name] = list(script.goto(callee.line, callee.column, follow_imports=True))
    definitions = [n for n in found if n.type in DEFINITION_TYPES]
    if not definitions:
        inferred = list(script.infer(callee.line, callee.column))
        found += inferred
        definitions = [n for n in inferred if n.type in DEFINITION_TYPES]
        site.via_infer = bool(definitions)

    targets: set[Target] = set()
    outside = False
    for name in definitions:
        rel = relative_in_root(name, root)
        if rel is None:
            outside = True
        elif name.line is not None:
            targets.add(Target(rel, name.line, name.name))
    if targets:
        site.targets = sorted(targets)
    elif outside or (found and all(relative_in_root(n, root) is None for n in found)):
        site.external = True
    else:
        site.unresolved = True
    return site


def project_for(root: Path, under: Path) -> jedi.Project:
    """A jedi project whose import roots inside the checkout come before site-packages.

    The import root is the parent of the outermost package (folder with ``__init__.py``) holding
    ``under`` (``src`` for ``src/flask``). Putting it first makes ``import flask`` inside the
    checkout resolve to the checkout rather than to an installed copy of the same package.
    """
    import_root = under
    while (import_root / "__init__.py").is_file() and import_root != root:
        import_root = import_root.parent
    environment = jedi.get_default_environment()
    base = [p for p in environment.get_sys_path() if p]
    return jedi.Project(root, sys_path=[str(import_root), str(root), *base])


def drop_bundled_third_party_stubs() -> None:
    """Make jedi ignore the third-party stubs of its bundled (2020) typeshed; keep the stdlib ones.

    jedi ships old stubs for flask, werkzeug, click, jinja2, itsdangerous and others, and prefers
    them to the sources: a call through an object typed ``Flask`` then lands in jedi's own
    ``flask/app.pyi`` (counted external) instead of in the checkout, and werkzeug calls land in
    stubs of an old werkzeug. Without them jedi reads the installed packages and the checkout.
    This patches a private jedi function (pinned jedi version, see the ``oracles`` group).
    """
    original = typeshed._get_typeshed_directories

    def stdlib_only(version_info: Any) -> Iterator[Any]:
        return (info for info in original(version_info) if not info.is_third_party)

    typeshed._get_typeshed_directories = stdlib_only
    typeshed._version_cache.clear()


@dataclass
class Analyser:
    """Resolves the call sites of one file after another with one jedi project (its caches persist)."""

    root: Path
    project: jedi.Project

    def analyse_file(self, path: Path) -> FileResult:
        rel_path = path.relative_to(self.root).as_posix()
        data = path.read_bytes()
        try:
            tree = ast.parse(data, filename=str(path))
        except SyntaxError as exc:
            return FileResult([], 0, f"{rel_path}: {exc}")
        callees, skipped = find_callees(tree, data.splitlines())
        script = jedi.Script(data.decode("utf-8"), path=path, project=self.project)
        return FileResult([resolve(script, c, rel_path, self.root) for c in callees], skipped)


def python_files(under: Path) -> list[Path]:
    return sorted(p for p in under.rglob("*.py") if p.is_file())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", required=True, type=Path, help="repository checkout; output paths are relative to it")
    parser.add_argument("--under", required=True, help="folder inside --root whose .py files are examined")
    parser.add_argument("--out", required=True, type=Path, help="JSON Lines output file")
    args = parser.parse_args(argv)

    root: Path = args.root.resolve()
    under = (root / args.under).resolve()
    if not under.is_dir():
        parser.error(f"{under} is not a folder")

    start = time.monotonic()
    n_files = n_sites = n_skipped = n_in_repo = n_external = n_unresolved = n_infer = 0
    errors: list[str] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        drop_bundled_third_party_stubs()
        analyser = Analyser(root, project_for(root, under))
        for result in map(analyser.analyse_file, python_files(under)):
            n_files += 1
            n_skipped += result.skipped
            if result.error:
                errors.append(result.error)
            for site in result.sites:
                n_sites += 1
                n_in_repo += bool(site.targets)
                n_external += site.external
                n_unresolved += site.unresolved
                n_infer += site.via_infer and bool(site.targets)
                out.write(json.dumps(site.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n")

    elapsed = time.monotonic() - start
    for error in errors:
        print(f"syntax error, file skipped: {error}", file=sys.stderr)
    print(
        f"jedi {jedi.__version__}: files={n_files} call_sites={n_sites} in_repo={n_in_repo} "
        f"external={n_external} unresolved={n_unresolved} (in_repo via infer fallback={n_infer}; "
        f"calls without a name callee, not examined={n_skipped}) time={elapsed:.1f}s -> {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
