"""Which folders the MCP server may touch: the project it was started for and the roots the user
configured. A path an agent passes is resolved (symlinks followed) and must land inside one of
them; `../`, absolute paths elsewhere and links leading out are refused before anything is read."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lgrep_core.domain.errors import InvalidRequestError

__all__ = ["AllowedRoots"]


class AllowedRoots:
    def __init__(self, default: Path, extra: Iterable[Path] = ()) -> None:
        self.default = default.expanduser().resolve()
        self.roots = [self.default, *(p.expanduser().resolve() for p in extra)]

    def project(self, path: str | None) -> Path:
        """The project root a tool call names: `path` (a folder, relative to the default project or
        absolute), or the default project when it is empty.

        Raises:
            InvalidRequestError: the path leaves the allowed roots, or is not a folder.
        """
        resolved = self.resolve(path)
        if not resolved.is_dir():
            raise InvalidRequestError(f"{path} is not a folder")
        return resolved

    def resolve(self, path: str | None, *, base: Path | None = None) -> Path:
        """`path` resolved against `base` (default: the default project), inside an allowed root.

        Raises:
            InvalidRequestError: it is outside every allowed root (after following links).
        """
        if path is None or not str(path).strip():
            return base or self.default
        if "\x00" in path:
            raise InvalidRequestError("the path contains a NUL byte")
        raw = Path(path).expanduser()
        joined = raw if raw.is_absolute() else (base or self.default) / raw
        resolved = joined.resolve()
        if not any(resolved == root or resolved.is_relative_to(root) for root in self.roots):
            raise InvalidRequestError(
                f"{path} is outside the folders this lgrep server may read ({', '.join(map(str, self.roots))}); "
                "add a root with `--root` to allow it"
            )
        return resolved

    def root_of(self, path: Path) -> Path:
        """The allowed root that holds `path` (the deepest one)."""
        holding = [r for r in self.roots if path == r or path.is_relative_to(r)]
        return max(holding, key=lambda r: len(r.parts))
