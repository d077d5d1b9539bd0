"""A file's counterpart: the other half of one unit of code split over two files by its language's
convention, which a fix to one half often changes too.

- C, C++ and Objective-C: a source file and its header (`fileio.c` and `fileio.h`);
- JavaScript and TypeScript: a module and its type declarations (`src/plugin/utc/index.js` and
  `types/plugin/utc.d.ts`: a package's `index` file stands for its folder's name);
- Python: a module and its stub (`x.py` and `x.pyi`).

The counterpart in the same folder wins; otherwise the only file in the project with the other
half's name, unless that file has its own counterpart beside it; when several files elsewhere have
the name, there is none (which one would be a guess).
"""

from __future__ import annotations

import posixpath

from .corpus import Corpus

__all__ = ["counterpart", "counterpart_role", "counterpart_why"]

_SOURCE = (".c", ".cc", ".cpp", ".cxx", ".m", ".mm")
_HEADER = (".h", ".hh", ".hpp", ".hxx")
_MODULE = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx")
_DECLARATION = (".d.ts",)
# Each side's extensions, and the extensions of the side it pairs with.
_SIDES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("declaration", _DECLARATION, _MODULE),  # before "module": `.d.ts` also ends with `.ts`
    ("source", _SOURCE, _HEADER),
    ("header", _HEADER, _SOURCE),
    ("module", _MODULE, _DECLARATION),
    ("stub", (".pyi",), (".py",)),
    ("python", (".py",), (".pyi",)),
)
# How a `why` line names each side.
_SAYS = {
    "declaration": "the type declarations",
    "source": "the source",
    "header": "the header",
    "module": "the module",
    "stub": "the stub",
    "python": "the module",
}
# A package's own file, named for its folder (JavaScript's and TypeScript's `index`).
_INDEX = "index"


def _split(path: str) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...]] | None:
    """(side, folder, stem, its side's extensions, the other side's) of a path that has a side."""
    folder, name = posixpath.split(path)
    for side, own, other in _SIDES:
        for ext in own:
            if name.endswith(ext) and len(name) > len(ext):
                return side, folder, name[: -len(ext)], own, other
    return None


def counterpart_role(path: str) -> str | None:
    """What a file is to its counterpart: "header", "source", "declaration", "module", "stub" or
    "python"; None for a file of no such pair."""
    split = _split(path)
    return split[0] if split else None


def counterpart_why(path: str, lead: str) -> str:
    """The `why` line of `path` shown behind its counterpart `lead` ("the header of x.c")."""
    role = counterpart_role(path)
    assert role is not None, f"{path} is no file's counterpart"
    return f"{_SAYS[role]} of {lead}"


def counterpart(corpus: Corpus, file_no: int) -> int | None:
    """The file's counterpart in `corpus` (module docstring), or None."""
    split = _split(corpus.files[file_no])
    if split is None:
        return None
    _side, folder, stem, own, other = split
    numbers = corpus.file_numbers
    beside = _beside(numbers, folder, stem, other)
    if beside is not None:
        return beside
    # Elsewhere, a package's index file goes by its folder's name (`utc/index.js` ~ `utc.d.ts`).
    key = posixpath.basename(folder) if stem == _INDEX else stem
    if not key:
        return None
    found: set[int] = set()
    for ext in other:
        found.update(corpus.files_with_name(key + ext))
        found.update(f for f in corpus.files_with_name(_INDEX + ext) if _folder_name(corpus.files[f]) == key)
    found.discard(file_no)
    # A file elsewhere that has its own counterpart beside it is not this one's.
    alone = [f for f in found if _beside(numbers, *_folder_and_stem(corpus.files[f]), own) is None]
    return alone[0] if len(alone) == 1 and len(found) == 1 else None


def _beside(numbers: dict[str, int], folder: str, stem: str, exts: tuple[str, ...]) -> int | None:
    for ext in exts:
        f = numbers.get(posixpath.join(folder, stem + ext))
        if f is not None:
            return f
    return None


def _folder_and_stem(path: str) -> tuple[str, str]:
    """Of a path that has a side (every file `counterpart` finds has one)."""
    split = _split(path)
    assert split is not None
    return split[1], split[2]


def _folder_name(path: str) -> str:
    return posixpath.basename(posixpath.dirname(path))
