"""lgrep_search: the project's code by meaning and by name, indexing a project that has no index
first, or a released version's code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
from lgrep_core.app.serialize import index_progress_json, projects_search_json, release_json
from lgrep_core.domain.models import ContentType, SearchRequest, SearchResponse, SearchType, check_release
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from lgrep_mcp.answers import SearchAnswer
from lgrep_mcp.app import Unit
from lgrep_mcp.budget import DEFAULT_MAX_TOKENS
from lgrep_mcp.indexing import progress_reporter, progress_words
from lgrep_mcp.shaping import tool_errors
from lgrep_mcp.tools.params import Component, MaxTokens, VersionSpec
from lgrep_mcp.tools.releases import release_path

__all__ = ["SearchTools"]

# How long a search of a project without an index waits for its first index to reach BM25.
FIRST_INDEX_WAIT_S = 20.0


class SearchTools(Unit):
    @tool_errors
    async def lgrep_search(
        self,
        query: Annotated[
            str,
            Field(
                description="What to find, in words or names: 'where are JWTs verified', 'parseConfig'; with "
                "files=true, the whole task or issue text, traceback included"
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="Results (files, with files=true) to return")] = 10,
        search_type: Annotated[
            Literal["hybrid", "vector", "bm25", "fuzzy"],
            Field(description="hybrid (default) combines meaning, words and names"),
        ] = "hybrid",
        path: Annotated[
            str | None, Field(description="Only under this folder or file, or matching this glob (src/auth, **/*.py)")
        ] = None,
        language: Annotated[str | None, Field(description="Only this language (python, go, typescript, ...)")] = None,
        content: Annotated[
            Literal["code", "docs", "config", "text"] | None, Field(description="Only this kind of file")
        ] = None,
        files: Annotated[
            bool,
            Field(
                description="Answer with the files to open, ranked, each with the line ranges to read first, "
                "instead of chunks: for a task, a bug report or an issue pasted whole as the query"
            ),
        ] = False,
        component: Component = None,
        version: VersionSpec = None,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
        projects: Annotated[
            list[str] | None,
            Field(
                description="Search several projects at once, one ranking: folders among this server's roots "
                "(absolute, or relative to this project), or ['*'] for all its roots. Each result then names "
                "its project_root. Default: this project alone"
            ),
        ] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, SearchAnswer]:
        """Search the project's code by meaning and by name: use it instead of grep or rg when you
        look for code by what it does, or by a name you are not sure of. Each result has the file,
        the line range, the symbol, a snippet (its first lines; lgrep_get_file reads the rest), a
        score and why it matched; `stale_files` lists result files that changed since they were indexed
        (re-read them with lgrep_get_file). Starting a task, a bug report or an issue ("which files
        do I open?"): pass its whole text as the query (traceback and errors included, up to 32,768
        characters) with files=true, and get `files` instead: the files to open, ranked, each with
        the line ranges to read first and why (without files=true such a query gets both: its files,
        then their best chunks). The answer stays within max_tokens (default 4000):
        lower results are shortened, then left out, and `notes` say so. With `component` (and
        `version`), it searches that released version instead (search_type bm25 for full-text only).
        With `projects`, it searches several of this server's roots and ranks their results together."""
        check_release(component or "", version or "")  # a version alone is refused, not dropped
        if projects:
            if component:
                raise ToolError("a released version (component) is searched in one project: leave out projects")
            return await self._projects_search(
                query, limit, search_type, path, language, content, files, projects, max_tokens, ctx
            )
        if component:
            return await self._release_search(
                query, limit, search_type, path, language, content, component, version, max_tokens, files
            )
        project, path_glob, folder = self.app.scope(path)
        request = _request(
            query, limit, search_type, path_glob, language, content, files=files, project_root=str(project)
        )
        # No index yet (or an interrupted or outdated one): lgrep builds it up to BM25 search, which
        # the daemon does once however many agents ask, and answers; vectors are filled in behind.
        # A large project's first index takes longer than an agent should wait: then the answer
        # says how far it is, and the index goes on.
        report = progress_reporter(ctx)
        outcome = await anyio.to_thread.run_sync(
            lambda: self.app.lgrep.search(request, progress=report, wait_s=FIRST_INDEX_WAIT_S, wait_vectors=False),
            abandon_on_cancel=True,
        )
        data: dict[str, Any] = {
            "project_root": str(outcome.scope.project),
            "scope": folder,
            "results": [],
            **({"files": []} if files else {}),
            "stale_files": [],
        }
        key = "files" if files else "results"
        response = outcome.response
        if response is None:
            data["indexing"] = index_progress_json(outcome.progress)
            data["notes"] = [
                f"{project} is being indexed for the first time ({progress_words(outcome.progress)}); it is "
                "searchable by words and names once its files are chunked: search again shortly, or follow "
                "it with lgrep_status"
            ]
            return self.app.budgeted(SearchAnswer, data, key, max_tokens)
        notes: list[str] = []
        if outcome.built is not None:
            built = outcome.built
            notes.append(f"indexed {project} first ({built.files_seen} files, {built.chunks_total} chunks)")
        self._fill(data, response, project)
        leads = not files and bool(response.files)
        if leads:
            # A task question (an issue, a bug report pasted whole): the files to open lead, their
            # best chunks follow; to fit max_tokens, chunks go before files do.
            data = _files_first(data, self.app.file_items(response.files, project))
        data["vectors_pending"] = response.vectors_pending
        notes.extend(response.notes)
        if response.vectors_pending:
            notes.append(
                f"{response.vectors_pending} chunks are still waiting for their vectors: results lean on words "
                "and names until they are in"
            )
        if data["stale_files"]:
            shown = ", ".join(data["stale_files"][:5])
            what = "line ranges may have moved" if files else "snippets may be out of date"
            notes.append(
                f"{len(data['stale_files'])} result file(s) changed since indexing ({shown}): their {what}, "
                "lgrep_get_file shows them as they are now"
            )
        if notes:
            data["notes"] = notes
        snippets = None if files else "content"
        return self.app.budgeted(
            SearchAnswer,
            data,
            key,
            max_tokens,
            snippet_field=snippets,
            receipt=project,
            sources=_result_and_file_paths if leads else None,
            then="files" if leads else None,
        )

    async def _projects_search(
        self,
        query: str,
        limit: int,
        search_type: str,
        path: str | None,
        language: str | None,
        content: str | None,
        files: bool,
        projects: list[str],
        max_tokens: int,
        ctx: Context | None,
    ) -> CallToolResult:
        """lgrep_search over several folders of this server's roots, merged into one ranking (ADR
        0026): `path` is then a glob applied in each."""
        if path and path.strip() and not any(c in path for c in "*?["):
            raise ToolError(f"{path}: with projects, path is a glob applied in each (name folders in projects)")
        if path and (".." in Path(path).parts or Path(path).is_absolute()):
            raise ToolError(f"{path}: a glob must stay inside the project (no '..', not absolute)")
        named = [self._folder(p) for p in projects if p != "*"]
        if "*" in projects:  # every root, but those inside another (its search covers them)
            roots = self.app.roots.roots
            named += [r for r in roots if not any(r != o and r.is_relative_to(o) for o in roots) and r not in named]
        folders = list(dict.fromkeys(named))
        request = _request(query, limit, search_type, path or None, language, content, files=files)
        report = progress_reporter(ctx)
        outcome = await anyio.to_thread.run_sync(
            lambda: self.app.lgrep.search_projects(
                request, folders, progress=report, wait_s=FIRST_INDEX_WAIT_S, wait_vectors=False
            ),
            abandon_on_cancel=True,
        )
        json = projects_search_json(outcome, query=query)
        data: dict[str, Any] = {
            "project_root": "",
            "scope": "",
            "projects": [
                {k: v for k, v in part.items() if k in ("project_root", "scope", "indexing")}
                for part in json["projects"]
            ],
            "results": [],
            **({"files": []} if files else {}),
            "stale_files": [],
            "vectors_pending": json["vectors_pending"],
        }
        if files:
            data["files"] = [{"project_root": str(p), **self.app.file_items([h], p)[0]} for p, h in outcome.files]
            stale = {f"{p}/{h.path}" for p, h in outcome.files if h.stale}
            order = [p for p, _ in outcome.files]
        else:
            data["results"] = [{"project_root": str(p), **self.app.hit_items([h], p)[0]} for p, h in outcome.results]
            stale = {f"{p}/{h.path}" for p, h in outcome.results if h.stale}
            order = [p for p, _ in outcome.results]
        data["stale_files"] = sorted(stale)
        notes = [
            f"{o.scope.project} is being indexed for the first time ({progress_words(o.progress)}): its results "
            "are not in this answer; search again shortly"
            for o in outcome.outcomes
            if o.response is None
        ]
        notes += [
            f"{o.scope.project}: {n}" for o in outcome.outcomes if o.response is not None for n in o.response.notes
        ]
        if notes:
            data["notes"] = notes
        key = "files" if files else "results"
        snippets = None if files else "content"
        return self.app.budgeted(SearchAnswer, data, key, max_tokens, snippet_field=snippets, projects=order)

    def _folder(self, path: str) -> Path:
        """A folder an agent names in `projects`, inside this server's roots."""
        folder = self.app.resolve(path)
        if not folder.is_dir():
            raise ToolError(f"{path} is not a folder")
        return folder

    def _fill(self, data: dict[str, Any], response: SearchResponse, project: Path | None) -> None:
        """The answer's chunks, or its files (a files search), with the files among them that changed
        since they were indexed. `project` None: a released version's (no file resources)."""
        if "files" in data:
            data["files"] = self.app.file_items(response.files, project)
            data["stale_files"] = sorted({f.path for f in response.files if f.stale})
        else:
            data["results"] = self.app.hit_items(response.results, project)
            data["stale_files"] = sorted({h.path for h in response.results if h.stale})

    async def _release_search(
        self,
        query: str,
        limit: int,
        search_type: str,
        path: str | None,
        language: str | None,
        content: str | None,
        component: str,
        version: str | None,
        max_tokens: int,
        files: bool,
    ) -> CallToolResult:
        """lgrep_search at a released version: no file on disk is involved, `path` is a glob or
        folder inside the repository."""
        project = self.app.default_project
        request = _request(
            query,
            limit,
            search_type,
            release_path(path) or None,
            language,
            content,
            files=files,
            project_root=str(project),
            component=component,
            version=version or "",
        )
        response = await anyio.to_thread.run_sync(lambda: self.app.engine.call(request), abandon_on_cancel=True)
        data: dict[str, Any] = {"project_root": str(project), "scope": "", "results": [], "stale_files": []}
        if files:
            data["files"] = []
        self._fill(data, response, None)  # no lgrep://file resource: not a file on disk
        if response.release is not None:
            data["release"] = release_json(response.release)
        data["vectors_pending"] = response.vectors_pending
        if response.notes:
            data["notes"] = list(response.notes)
        key = "files" if files else "results"
        return self.app.budgeted(SearchAnswer, data, key, max_tokens, snippet_field=None if files else "content")


def _request(
    query: str,
    limit: int,
    search_type: str,
    path_glob: str | None,
    language: str | None,
    content: str | None,
    **fields: Any,
) -> SearchRequest:
    """The SearchRequest of a tool call's common arguments (one language, one content type at most)."""
    return SearchRequest(
        query,
        limit=limit,
        search_type=SearchType(search_type),
        path_glob=path_glob,
        languages=(language,) if language else (),
        content_types=(ContentType(content),) if content else (),
        **fields,
    )


def _files_first(data: dict[str, Any], file_items: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer with `files` before `results`, and the changed files among both in `stale_files`."""
    stale = sorted(set(data["stale_files"]) | {f["path"] for f in file_items if f.get("stale")})
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "results":
            out["files"] = file_items
        out[key] = stale if key == "stale_files" else value
    return out


def _result_and_file_paths(data: dict[str, Any]) -> list[str]:
    """The files an answer that leads with files points to: its files', then its chunks' (once each)."""
    return list(dict.fromkeys([f["path"] for f in data["files"]] + [r["path"] for r in data["results"]]))
