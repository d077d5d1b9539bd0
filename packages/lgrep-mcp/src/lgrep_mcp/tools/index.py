"""lgrep_index, lgrep_status, lgrep_watch_start and lgrep_watch_stop: a project's index, built,
described and kept fresh (the server keeps its projects fresh by itself while it runs, through a
watch lease: lgrep_mcp.leases; the watch tools are for outliving it, or stopping)."""

from __future__ import annotations

from typing import Annotated, Any

from lgrep_core.app.scope import Purpose
from lgrep_core.app.serialize import (
    index_progress_json,
    index_summary_json,
    project_status_json,
    unwatch_json,
    watch_json,
)
from lgrep_core.domain.models import (
    IndexSummary,
    ProjectStatus,
    StatusRequest,
    UnwatchProjectRequest,
    WatchProjectRequest,
)
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from lgrep_mcp.answers import IndexAnswer, StatusAnswer, UnwatchAnswer, WatchAnswer
from lgrep_mcp.app import Unit
from lgrep_mcp.indexing import index_for, progress_words
from lgrep_mcp.shaping import tool_errors
from lgrep_mcp.tools.params import ProjectPath

__all__ = ["IndexTools", "status_answer"]

# How long lgrep_index waits for a run by default before answering with its progress: an agent's
# tool call should not hang on a first index of a large repository (minutes); 30 s covers a first
# index of a few thousand files here and every incremental update.
INDEX_WAIT_S = 30.0


class IndexTools(Unit):
    @tool_errors
    async def lgrep_index(
        self,
        path: ProjectPath = None,
        force: Annotated[bool, Field(description="Rebuild the index from scratch")] = False,
        wait: Annotated[
            float,
            Field(ge=0, le=600, description="Seconds to wait for the run before returning with its progress"),
        ] = INDEX_WAIT_S,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, IndexAnswer]:
        """Index a project, or bring its index up to date (only changed files are redone). Waits
        until the project is searchable by words and names, at most `wait` seconds (progress is
        reported meanwhile); a longer first index goes on in the lgrep daemon and the answer says
        how far it is (lgrep_status follows it). Vectors are filled in behind either way."""
        project = self.app.project(path, Purpose.INDEX)
        outcome = await index_for(self.app, project, ctx, force=force, wait_s=wait)
        data: dict[str, Any] = {"project_root": str(project), "done": isinstance(outcome, IndexSummary)}
        if isinstance(outcome, IndexSummary):
            data["summary"] = {k: v for k, v in index_summary_json(outcome).items() if k != "project_root"}
        else:
            data["progress"] = index_progress_json(outcome)
            data["notes"] = [f"still indexing after {wait:g} s ({progress_words(outcome)}); it goes on in the daemon"]
        return self.app.plain(IndexAnswer, data)

    @tool_errors
    def lgrep_status(self, path: ProjectPath = None) -> Annotated[CallToolResult, StatusAnswer]:
        """Where the project's index stands: files, chunks, vectors still pending, model, when it
        was last indexed, whether it is watched, and how many files changed since (stale); with a
        cloud embedding provider, what it has cost and any spend warnings (tell the user)."""
        project = self.app.project(path, Purpose.STATUS)
        return self.app.plain(StatusAnswer, status_answer(self.app.engine.call(StatusRequest(str(project)))))

    @tool_errors
    def lgrep_watch_start(self, path: ProjectPath = None) -> Annotated[CallToolResult, WatchAnswer]:
        """Keep the project watched after this session ends too (as `lgrep watch` does). Rarely
        needed: while this server runs, the daemon already keeps an indexed project fresh (a saved
        file is searchable within ~2 s; lgrep_status says `watched`). One watcher per project
        however many agents ask."""
        project = self.app.project(path, Purpose.WATCH)
        result = self.app.engine.call(WatchProjectRequest(str(project)))
        return self.app.plain(WatchAnswer, watch_json(result, root=str(project)))

    @tool_errors
    def lgrep_watch_stop(self, path: ProjectPath = None) -> Annotated[CallToolResult, UnwatchAnswer]:
        """Stop keeping the project's index fresh, for every agent and session, until it is
        watched again (lgrep_watch_start, `lgrep watch`): as `lgrep unwatch` does. Searches still
        catch a branch switch; files saved meanwhile show as `stale` in results."""
        project = self.app.project(path, Purpose.UNWATCH)
        return self.app.plain(
            UnwatchAnswer,
            unwatch_json(self.app.engine.call(UnwatchProjectRequest(str(project))), root=str(project)),
        )


def status_answer(status: ProjectStatus) -> dict[str, Any]:
    """A project's status as lgrep_status and lgrep://status give it: the shared JSON shape, and
    whether any file changed since the last index (`stale`)."""
    data = project_status_json(status)
    changes = data.get("changes")
    return {**data, "stale": bool(changes and changes["total"])}
