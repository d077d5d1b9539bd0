"""What the call graph knows of each language; `lgrep_search.structure` is the graph itself and
knows none.

- `_facts`: which languages share definitions (a family), the receivers that mean the caller's own
  object, where a bare `f()` is never a method, each language's own functions, folder packages;
- `find_module`: the project files an import names, one module per language (`_python`,
  `_javascript`, `_go`, `_rust`, `_jvm`) over `ProjectFiles`, the snapshot's paths looked up by
  path, folder and tail.

The indexer's half of the same languages (how each grammar spells definitions, calls and imports)
is lgrep_index.languages and lgrep_index.chunking; the two halves share only the refs format of
lgrep_core.domain.structure.
"""

from __future__ import annotations

from collections.abc import Callable

from lgrep_core.domain.structure import SAME_FILE

from . import _go, _javascript, _jvm, _python, _rust
from ._facts import EXPLICIT_SELF, PACKAGE_FOLDERS, SELF_RECEIVERS, builtin_names, family
from ._files import ProjectFiles

__all__ = [
    "EXPLICIT_SELF",
    "PACKAGE_FOLDERS",
    "SELF_RECEIVERS",
    "ModuleFinder",
    "ProjectFiles",
    "builtin_names",
    "family",
    "find_module",
]

ModuleFinder = Callable[[ProjectFiles, int, str, str, str], "tuple[int, ...] | None"]
"""`(files, f, module, member, qual)`: the files an import of file `f` names (`module` as written,
`member` what it takes, "" the module, "*" all; `qual` the receiver of the call being resolved);
None when it names a library, () when nothing can be told."""

_FINDERS: dict[str, ModuleFinder] = {
    "python": _python.find_module,
    "starlark": _python.find_module,
    "javascript": _javascript.find_module,
    "typescript": _javascript.find_module,
    "tsx": _javascript.find_module,
    "go": _go.find_module,
    "rust": _rust.find_module,
    "java": _jvm.find_module,
    "kotlin": _jvm.find_module,
    "scala": _jvm.find_module,
}


def find_module(
    files: ProjectFiles, f: int, language: str, module: str, member: str, *, qual: str
) -> tuple[int, ...] | None:
    """The project files an import of file `f` (in `language`) names; None when it names none (a
    library), () if unknown (a language without a finder among them)."""
    if module == SAME_FILE:  # `export { a as b }`: the file's own name under another one
        return (f,)
    finder = _FINDERS.get(language)
    return finder(files, f, module, member, qual) if finder is not None else ()
