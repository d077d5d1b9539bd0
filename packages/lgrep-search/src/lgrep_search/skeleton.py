"""A file's skeleton: its imports and signatures, with docstrings' first lines and bodies elided.

Rendered from a `FileOutline` (the indexer's parser, run on the file as it is now) and the file's
text, in the file's own syntax and indentation:

    from .models import User
    class Auth:
        \"\"\"Checks credentials.\"\"\"
        def verify(self, token: str) -> User:
            \"\"\"Verify a JWT and return its user.\"\"\"
            ⋯ 14 lines (L12-25)

A container's members are shown inside it; every other body is one `⋯` line saying how many
lines it hides and where they are, so an agent can read exactly those with lgrep_get_file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lgrep_core.domain.models import ChunkKind, Location
from lgrep_core.domain.structure import FileOutline, OutlineItem

__all__ = ["ELISION", "TokenCounter", "render_skeleton"]

ELISION = "⋯"
_INDENT_STEP = "    "
_TRIVIAL = frozenset({"{", "}", "};", "},", "end", ")", "]", "});", "})", "];", "{}", "()"})
TokenCounter = Callable[[Sequence[str]], list[int]]


def render_skeleton(path: str, text: str, outline: FileOutline) -> tuple[str, tuple[Location, ...]]:
    """The skeleton text and the definitions it shows (file order)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    shown: list[Location] = []
    # imports and definitions in file order (Zig imports at the bottom, a C include far down)
    entries: list[tuple[int, tuple[int, int] | OutlineItem]] = [(start, (start, end)) for start, end in outline.imports]
    entries += [(item.start_line, item) for item in outline.items]
    entries.sort(key=lambda e: e[0])
    previous_import = False
    for _, entry in entries:
        if isinstance(entry, tuple):
            start, end = entry
            if out and not previous_import:
                out.append("")
            out.extend(_rstrip(lines[start - 1 : end]))
            previous_import = True
            continue
        if previous_import:
            out.append("")
        previous_import = False
        _render(entry, lines, out, shown, (path, outline.language), top=True)
    return "\n".join(out).strip("\n") + "\n" if out else "", tuple(shown)


def _rstrip(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines]


def _render(
    item: OutlineItem,
    lines: list[str],
    out: list[str],
    shown: list[Location],
    where: tuple[str, str],
    *,
    top: bool,
) -> None:
    path, language = where
    if top and out and out[-1] != "" and (item.children or item.end_line > item.signature_end):
        out.append("")
    sig = _rstrip(lines[item.signature_start - 1 : item.signature_end])
    out.extend(lines[row - 1].rstrip() for row in item.attributes)
    out.extend(sig)
    shown.append(
        Location(
            path=path,
            start_line=item.signature_start,
            end_line=item.end_line,
            symbol=item.name,
            kind=ChunkKind(item.kind) if item.kind in ChunkKind._value2member_map_ else None,
            language=language,
            scope=item.scope,
            signature=" ".join(" ".join(sig).split())[:200],
        )
    )
    indent = _body_indent(lines, item, sig[0] if sig else "")
    if item.doc:
        out.append(f"{indent}{_quoted(item.doc, language)}")
    body_start = item.signature_end + 1
    if item.children:
        cursor = body_start
        for child in item.children:
            if child.start_line > cursor:
                _elide(out, indent, cursor, child.start_line - 1, lines)
            _render(child, lines, out, shown, where, top=False)
            cursor = child.end_line + 1
        if cursor <= item.end_line:
            _elide(out, indent, cursor, item.end_line, lines, closing=True)
    elif body_start <= item.end_line:
        _elide(out, indent, body_start, item.end_line, lines, closing=True)


def _elide(out: list[str], indent: str, start: int, end: int, lines: list[str], *, closing: bool = False) -> None:
    """One line for lines start..end (1-based), unless they are blank or only closing brackets."""
    body = [line.strip() for line in lines[start - 1 : end]]
    meaningful = [b for b in body if b and b not in _TRIVIAL]
    if not meaningful:
        return
    if closing and len(meaningful) == 1 and len(meaningful[0]) <= 60:
        out.append(f"{indent}{meaningful[0]}")  # a one-line body says more than its elision would
        last = lines[end - 1].rstrip()
        if body[-1] in _TRIVIAL and body[-1] != meaningful[0]:
            out.append(last)  # and its closing brace
        return
    n = end - start + 1
    out.append(f"{indent}{ELISION} {n} line{'s' if n != 1 else ''} (L{start}-{end})")


def _body_indent(lines: list[str], item: OutlineItem, signature: str) -> str:
    """The indentation of the first non-blank body line, or the signature's plus one step."""
    for row in range(item.signature_end, min(item.end_line, item.signature_end + 5)):
        line = lines[row] if row < len(lines) else ""
        if line.strip() and line.strip() not in ("{", "}"):
            own = line[: len(line) - len(line.lstrip())]
            base = signature[: len(signature) - len(signature.lstrip())]
            if len(own) > len(base):
                return own
            break
    base = signature[: len(signature) - len(signature.lstrip())]
    return base + _INDENT_STEP


def _quoted(doc: str, language: str) -> str:
    if language in ("python", "starlark"):
        return f'"""{doc}"""'
    if language in ("ruby", "bash", "elixir"):
        return f"# {doc}"
    if language in {"haskell", "lua"}:
        return f"-- {doc}"
    return f"// {doc}"
