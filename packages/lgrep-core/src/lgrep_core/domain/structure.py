"""The code structure stored with each chunk: what it defines and what it references.

The indexer writes it (lgrep_index.chunking) into the chunks table's `refs` column as text, one
entry per line, fields separated by tabs, lines 1-based:

    d  name  line  end_line  scope  kind        a definition whose signature starts in this chunk
    c  name  line  qualifier                    a call (`qualifier` is the receiver: `self`, `os.path`)
    t  name  line                               a type used (annotation, base class, generic argument)
    i  local  line  module  member              an import: `local` is the name it binds in the file,
                                                `module` is spelled as in the source, `member` is
                                                what is taken from it ("" the module, "*" all)

`scope` is the definition's scope chain joined by ".". Text rather than nested columns: it costs
one string per chunk in a snapshot (compressed with the chunk texts), and adding an entry kind
later changes no table schema. Readers skip entries they do not know.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

__all__ = [
    "IMPORT_ALL",
    "SAME_FILE",
    "STRUCTURE_VERSION",
    "Definition",
    "FileOutline",
    "OutlineItem",
    "Outliner",
    "RefKind",
    "Reference",
    "encode_entries",
    "parse_entries",
]

STRUCTURE_VERSION = "1"
"""The format above. Part of the chunker version: a change rebuilds chunks (vectors are kept)."""

IMPORT_ALL = "*"
SAME_FILE = "#"
"""The module of an import that names the file itself: `export { a as b }` binds b to a."""


class RefKind(StrEnum):
    DEFINE = "d"
    CALL = "c"
    TYPE = "t"
    IMPORT = "i"


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    line: int
    end_line: int
    scope: tuple[str, ...]
    kind: str


@dataclass(frozen=True, slots=True)
class Reference:
    """A call, type use or import. For imports `name` is the local binding, `qualifier` the module
    and `member` the imported name."""

    kind: RefKind
    name: str
    line: int
    qualifier: str = ""
    member: str = ""


def _clean(field: str) -> str:
    return field.replace("\t", " ").replace("\n", " ")


def encode_entries(definitions: Iterable[Definition], references: Iterable[Reference]) -> str:
    lines: list[str] = []
    for d in definitions:
        lines.append(f"d\t{_clean(d.name)}\t{d.line}\t{d.end_line}\t{_clean('.'.join(d.scope))}\t{d.kind}")
    for r in references:
        if r.kind is RefKind.CALL:
            lines.append(f"c\t{_clean(r.name)}\t{r.line}\t{_clean(r.qualifier)}")
        elif r.kind is RefKind.TYPE:
            lines.append(f"t\t{_clean(r.name)}\t{r.line}")
        elif r.kind is RefKind.IMPORT:
            lines.append(f"i\t{_clean(r.name)}\t{r.line}\t{_clean(r.qualifier)}\t{_clean(r.member)}")
    return "\n".join(lines)


def parse_entries(text: str) -> Iterator[Definition | Reference]:
    """The entries of one chunk's `refs` text; malformed or unknown lines are skipped."""
    if not text:
        return
    for line in text.split("\n"):
        f = line.split("\t")
        try:
            tag = f[0]
            if tag == "d" and len(f) >= 6:
                scope = tuple(s for s in f[4].split(".") if s) if f[4] else ()
                yield Definition(f[1], int(f[2]), int(f[3]), scope, f[5])
            elif tag == "c" and len(f) >= 4:
                yield Reference(RefKind.CALL, f[1], int(f[2]), f[3])
            elif tag == "t" and len(f) >= 3:
                yield Reference(RefKind.TYPE, f[1], int(f[2]))
            elif tag == "i" and len(f) >= 5:
                yield Reference(RefKind.IMPORT, f[1], int(f[2]), f[3], f[4])
        except ValueError:
            continue


# ------------------------------------------------------------------------------------ outlines
# A file's shape as the indexer's parser sees it now, for skeletons. The indexer makes it
# (lgrep_index.outline.outline_file); search renders it; neither needs the other's code.


@dataclass(frozen=True, slots=True)
class OutlineItem:
    """A definition (or a document section). Lines are 1-based and inclusive: `start_line` includes
    attached comments and decorators, `signature` spans the lines up to the body, `end_line` ends it."""

    kind: str
    name: str
    scope: tuple[str, ...]
    start_line: int
    signature_start: int
    signature_end: int
    end_line: int
    doc: str  # the first line of its docstring or leading comment, "" when it has none
    children: tuple[OutlineItem, ...] = ()
    attributes: tuple[int, ...] = ()  # lines of its decorators / attributes with their arguments


@dataclass(frozen=True, slots=True)
class FileOutline:
    language: str
    imports: tuple[tuple[int, int], ...]  # line ranges of import / package / use statements
    items: tuple[OutlineItem, ...]


class Outliner(Protocol):
    """`(path, text) -> FileOutline`, or None for a file without a structure lgrep knows."""

    def __call__(self, path: str, text: str) -> FileOutline | None: ...
