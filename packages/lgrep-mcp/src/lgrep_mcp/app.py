"""What every tool and resource works with: lgrep's application API over the daemon, the allowed
roots and the token counter (`App`), with the helpers that turn an agent's paths into projects and
results into answers.

A root is a folder the agent may read; the project that answers for it is the one
lgrep_core.app.scope.project_for finds (a root inside an indexed project is that project, kept to the
root), so an MCP server
started in a subfolder searches its project's index instead of building one of the subfolder. Paths
in answers, and relative paths an agent passes, are relative to that project's root."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lgrep_core.app.api import Lgrep
from lgrep_core.app.scope import Purpose, Scope, scoped_glob
from lgrep_core.app.serialize import file_hit_json, search_hit_json
from lgrep_core.domain.engine import Engine
from lgrep_core.domain.models import FileHit, SearchHit
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from .budget import TokenCounter, compact_json, fit_results, measured
from .receipts import RECEIPT_TOKENS, FileTokens, current_call
from .roots import AllowedRoots
from .shaping import inert

__all__ = ["App", "Unit"]


@dataclass(frozen=True)
class App:
    """The server's state, for the project `roots.default` (and the other roots)."""

    roots: AllowedRoots
    lgrep: Lgrep
    counter: TokenCounter
    file_tokens: FileTokens = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "file_tokens", FileTokens(self.counter))

    @property
    def engine(self) -> Engine:
        """The daemon (lgrep_mcp.daemon_engine.DaemonEngine), for calls with no policy of their own."""
        return self.lgrep.engine

    def root_scope(self, root: Path | None = None, purpose: Purpose = Purpose.SEARCH) -> Scope:
        """The project an allowed root (default: the default one) belongs to, and where in it the root
        is (lgrep_core.app.scope.project_for, for `purpose`)."""
        return self.lgrep.scope(root or self.roots.default, purpose)

    @property
    def default_project(self) -> Path:
        return self.root_scope().project

    def resolve(self, path: str | None) -> Path:
        """A path an agent names, inside an allowed root: relative paths are relative to the default
        root's project, as the paths in answers are; none names the default root."""
        if path is None or not path.strip():
            return self.roots.default
        return self.roots.resolve(path, base=self.default_project)

    def project(self, path: str | None, purpose: Purpose) -> Path:
        """The project a folder an agent names belongs to (the default root's when it names none),
        for `purpose`: the project of the allowed root the folder is in."""
        target = self.resolve(path)
        if not target.is_dir():
            raise ToolError(f"{path} is not a folder")
        return self.root_scope(self.roots.root_of(target), purpose).project

    def locate(self, path: str) -> tuple[Path, str]:
        """(project root, project-relative path) of a file an agent names, inside an allowed root."""
        target = self.resolve(path)
        project = self.root_scope(self.roots.root_of(target)).project
        return project, target.relative_to(project).as_posix()

    def scope(self, path: str | None) -> tuple[Path, str | None, str]:
        """(project root, path filter, folder) for a search's `path`: a folder or file in an allowed
        root, or a glob inside the default root; always kept inside the allowed root it names. The
        folder is where in the project the search keeps to ('' for the whole project)."""
        default = self.root_scope()
        if not path or not path.strip():
            return default.project, default.within, default.within or ""
        if _is_glob(path):
            if ".." in Path(path).parts or Path(path).is_absolute():
                raise ToolError(f"{path}: a glob must stay inside the project (no '..', not absolute)")
            return default.project, scoped_glob(default.within, path), default.within or ""
        target = self.resolve(path)
        project = self.root_scope(self.roots.root_of(target)).project
        rel = target.relative_to(project).as_posix()
        return project, (None if rel == "." else rel), ("" if rel == "." else rel)

    def readable(self, project: Path) -> Callable[[str], bool]:
        """Whether a path of `project` lies inside a root this server may read: a project that is
        larger than its root (a root inside an indexed project) is never served beyond the root."""
        if any(project == r or project.is_relative_to(r) for r in self.roots.roots):
            return lambda _rel: True
        inside = [r.relative_to(project).as_posix() for r in self.roots.roots if r.is_relative_to(project)]
        return lambda rel: any(rel == w or rel.startswith(w + "/") for w in inside)

    def file_uris(self, project: Path | None) -> Callable[[str], str | None]:
        """The lgrep://file resource of each result path of `project`: results of the default
        project have one (others and released versions none), `rel` percent-encoded once ('/'
        kept), which the SDK's `{+path}` match decodes once. The project is resolved once an answer."""
        if project is None or project != self.default_project:
            return lambda _rel: None
        return lambda rel: f"lgrep://file/{quote(rel, safe='/')}"

    def hit_items(self, hits: Sequence[SearchHit], project: Path | None) -> list[dict[str, Any]]:
        """Hits as answers carry them: the shared JSON shape, why they ranked, and the file as a
        resource (none for hits of a released version)."""
        uri = self.file_uris(project)
        return [{**search_hit_json(h), "why": list(h.why), "uri": uri(h.path)} for h in hits]

    def file_items(self, hits: Sequence[FileHit], project: Path | None) -> list[dict[str, Any]]:
        """A files answer's files as answers carry them: the shared JSON shape and the file as a
        resource (none for files of a released version)."""
        uri = self.file_uris(project)
        return [{**file_hit_json(h), "uri": uri(h.path)} for h in hits]

    def answer(self, model: type[BaseModel], data: dict[str, Any], text: str) -> CallToolResult:
        model.model_validate(data)  # the published output schema holds (the SDK checks it too)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    def budgeted(
        self,
        model: type[BaseModel],
        shape: Mapping[str, Any],
        key: str,
        max_tokens: int,
        *,
        snippet_field: str | None = "content",
        receipt: Path | None = None,
        sources: Callable[[dict[str, Any]], Iterable[str]] | None = None,
        projects: Sequence[Path] | None = None,
        then: str | None = None,
    ) -> CallToolResult:
        """`shape` fitted to `max_tokens` by `key`'s results; with `receipt` (the project the results'
        paths are of) it carries its receipt, of the files of the results kept (`sources` names
        them; default: each result's `path`). With `projects` instead (results of several projects,
        each result's project in that list at its index), one receipt sums them. With `then`, a
        second list (without snippets) is cut when cutting `key`'s was not enough."""
        data: dict[str, Any] = inert(shape)
        reserve = RECEIPT_TOKENS if receipt is not None or projects is not None else 0
        text, tokens = fit_results(
            data, key, self.counter, max_tokens - reserve, snippet_field=snippet_field, asked=max_tokens
        )
        if then is not None and tokens > max_tokens - reserve:
            text, _ = fit_results(data, then, self.counter, max_tokens - reserve, snippet_field=None, asked=max_tokens)
        if receipt is not None:
            paths = sources(data) if sources is not None else (item["path"] for item in data[key])
            text = self.with_receipt(data, receipt, paths, max_tokens)
        elif projects is not None:
            groups: dict[Path, list[str]] = {}
            for project, item in zip(projects, data[key], strict=False):  # the results kept
                groups.setdefault(project, []).append(item["path"])
            text = self.with_receipts(data, groups, max_tokens)
        return self.answer(model, data, text)

    def with_receipt(self, data: dict[str, Any], project: Path, paths: Iterable[str], max_tokens: int) -> str:
        """Add its receipt to an answer fitted to `max_tokens` less RECEIPT_TOKENS, `paths` being the
        project-relative files its results come from: their whole tokens against the answer's own
        (`tokens`, receipt included, ±2 like every count of an answer's own size). Also told to the
        tools/call, for `lgrep stats`. Returns the answer's text."""
        return self.with_receipts(data, {project: paths}, max_tokens)

    def with_receipts(self, data: dict[str, Any], groups: Mapping[Path, Iterable[str]], max_tokens: int) -> str:
        """`with_receipt` for results of several projects (each project's files): one receipt sums
        them; each project's sums in `lgrep stats` get its own files and the answer's tokens shared
        by its number of results."""
        counted: dict[Path, tuple[int, int, int]] = {}
        for project, paths in groups.items():
            listed = list(paths)
            counted[project] = (len(listed), *self.file_tokens.count(project, listed, self.readable(project)))
        files = sum(c[1] for c in counted.values())
        file_tokens = sum(c[2] for c in counted.values())
        data["max_tokens"] = max_tokens
        data["receipt"] = {"files": files, "file_tokens": file_tokens, "saved": 0}
        text, tokens = measured(data, self.counter)  # sets `saved` with `tokens`
        call = current_call()
        if call is not None:
            results = sum(c[0] for c in counted.values())
            for project, (n, f, t) in counted.items():
                call.add(project, tokens if len(counted) == 1 else round(tokens * n / max(results, 1)), t, f)
        return text

    def plain(self, model: type[BaseModel], shape: Mapping[str, Any]) -> CallToolResult:
        """`shape` (a shared shape, or one with the model's extensions) as an answer, whole."""
        data: dict[str, Any] = inert(shape)
        return self.answer(model, data, compact_json(data))


class Unit:
    """A group of tools or resources: methods the server registers, bound to the `App` they share
    (a bound method's signature, name and docstring are what the SDK publishes)."""

    def __init__(self, app: App) -> None:
        self.app = app


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")
