"""lgrep_releases: the repository's indexed releases (components, versions, a version's files), and
the check every tool applies to a path inside a released version."""

from __future__ import annotations

from typing import Annotated, Any

from lgrep_core.app.serialize import component_json, file_list_json, release_json
from lgrep_core.domain.models import ListComponentsRequest, ListFilesRequest, ListVersionsRequest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from lgrep_mcp.answers import ReleasesAnswer
from lgrep_mcp.app import Unit
from lgrep_mcp.budget import DEFAULT_MAX_TOKENS
from lgrep_mcp.shaping import tool_errors
from lgrep_mcp.tools.params import MaxTokens, VersionSpec

__all__ = ["ReleaseTools", "release_path"]


class ReleaseTools(Unit):
    @tool_errors
    def lgrep_releases(
        self,
        component: Annotated[
            str | None, Field(description="A component: list its versions (with version: that version's files)")
        ] = None,
        version: VersionSpec = None,
        path: Annotated[
            str | None, Field(description="With component and version: only files matching this glob")
        ] = None,
        language: Annotated[str | None, Field(description="With component and version: only this language")] = None,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
    ) -> Annotated[CallToolResult, ReleasesAnswer]:
        """The repository's indexed releases (git tags as component@version, from `lgrep index
        --tags`): with no argument, its components and their version counts; with `component`, its
        versions newest first; with `component` and `version` (latest, 0.7.3, ^0.7), that version's
        files with language. lgrep_search and lgrep_get_file take the same component and version."""
        project = self.app.default_project
        data: dict[str, Any] = {"project_root": str(project)}
        if not component:
            if version:
                raise ToolError("version needs a component: call lgrep_releases() to list them")
            found = self.app.engine.call(ListComponentsRequest(str(project)))
            data["components"] = [component_json(x) for x in found]
            data["total"] = len(found)
            return self.app.budgeted(ReleasesAnswer, data, "components", max_tokens, snippet_field=None)
        if not version:
            releases = self.app.engine.call(ListVersionsRequest(str(project), component))
            data["versions"] = [release_json(r) for r in releases]
            data["total"] = len(releases)
            return self.app.budgeted(ReleasesAnswer, data, "versions", max_tokens, snippet_field=None)
        listed = self.app.engine.call(
            ListFilesRequest(
                str(project),
                path_glob=release_path(path) or None,
                languages=(language,) if language else (),
                component=component,
                version=version,
            )
        )
        full = file_list_json(listed, root=str(project))
        data["files"] = full["files"]
        data["release"] = full.get("release")
        data["total"] = listed.total
        return self.app.budgeted(ReleasesAnswer, data, "files", max_tokens, snippet_field=None)


def release_path(path: str | None) -> str:
    """A path inside a released version: relative, '/'-separated, never leaving the repository."""
    if not path or not path.strip():
        return ""
    rel = path.strip().removeprefix("./")
    if rel.startswith("/") or ".." in rel.split("/"):
        raise ToolError(f"{path}: with a component, name a path inside the repository (relative, no '..')")
    return rel
