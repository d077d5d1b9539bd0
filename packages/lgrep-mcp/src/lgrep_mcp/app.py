"""What every tool and resource works with: the daemon link, the allowed roots and the token counter
(`App`), with the helpers that turn an agent's paths into projects and results into answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lgrep_core.models import SearchHit
from lgrep_core.serialize import search_hit_json
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from .budget import TokenCounter, compact_json, fit_results
from .daemon_link import DaemonLink
from .roots import AllowedRoots
from .shaping import inert

__all__ = ["App", "Unit"]


@dataclass(frozen=True)
class App:
    """The server's state, for the project `roots.default` (and the other roots)."""

    roots: AllowedRoots
    link: DaemonLink
    counter: TokenCounter

    def locate(self, path: str) -> tuple[Path, str]:
        """(project root, project-relative path) of a file an agent names, inside an allowed root."""
        target = self.roots.resolve(path)
        project = self.roots.root_of(target)
        return project, target.relative_to(project).as_posix()

    def scope(self, path: str | None) -> tuple[Path, str | None]:
        """(project root, path filter) for a search's `path`: a folder or file in an allowed root,
        or a glob inside the default project."""
        if not path or not path.strip():
            return self.roots.default, None
        if _is_glob(path):
            if ".." in Path(path).parts or Path(path).is_absolute():
                raise ToolError(f"{path}: a glob must stay inside the project (no '..', not absolute)")
            return self.roots.default, path
        target = self.roots.resolve(path)
        project = self.roots.root_of(target)
        rel = target.relative_to(project).as_posix()
        return project, (None if rel == "." else rel)

    def file_uri(self, project: Path, rel: str) -> str | None:
        """The lgrep://file resource of a result, for the default project (others have none):
        `rel` percent-encoded once ('/' kept), which the SDK's `{+path}` match decodes once."""
        return f"lgrep://file/{quote(rel, safe='/')}" if project == self.roots.default else None

    def hit_items(self, hits: Sequence[SearchHit], project: Path | None) -> list[dict[str, Any]]:
        """Hits as answers carry them: the shared JSON shape, why they ranked, and the file as a
        resource (none for hits of a released version)."""
        return [
            {**search_hit_json(h), "why": list(h.why), "uri": self.file_uri(project, h.path) if project else None}
            for h in hits
        ]

    def answer(self, model: type[BaseModel], data: dict[str, Any], text: str) -> CallToolResult:
        model.model_validate(data)  # the published output schema holds (the SDK checks it too)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    def budgeted(
        self,
        model: type[BaseModel],
        data: dict[str, Any],
        key: str,
        max_tokens: int,
        *,
        snippet_field: str | None = "content",
    ) -> CallToolResult:
        data = inert(data)
        text, _ = fit_results(data, key, self.counter, max_tokens, snippet_field=snippet_field)
        return self.answer(model, data, text)

    def plain(self, model: type[BaseModel], data: dict[str, Any]) -> CallToolResult:
        data = inert(data)
        return self.answer(model, data, compact_json(data))


class Unit:
    """A group of tools or resources: methods the server registers, bound to the `App` they share
    (a bound method's signature, name and docstring are what the SDK publishes)."""

    def __init__(self, app: App) -> None:
        self.app = app


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")
