"""The shapes of the MCP tools' answers: each tool publishes one as its output schema and returns it
as structured content (the text content is the same object as compact JSON). Field names follow the
CLI's `--json` output (lgrep_core.app.serialize), so an agent that knows one knows the other."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = [
    "FileAnswer",
    "FileResult",
    "IndexAnswer",
    "IndexProgressOut",
    "IndexSummaryOut",
    "LocationOut",
    "ReceiptOut",
    "RelatedAnswer",
    "SearchAnswer",
    "SearchResult",
    "StatusAnswer",
    "SymbolAnswer",
    "SymbolOut",
    "UnwatchAnswer",
    "WatchAnswer",
]


class ReceiptOut(BaseModel):
    files: int = Field(description="Files the results come from")
    file_tokens: int = Field(description="Their tokens, read whole")
    saved: int = Field(description="file_tokens - tokens")


class Budgeted(BaseModel):
    tokens: int = Field(description="Tokens in this answer (cl100k_base), this count included")
    max_tokens: int = Field(description="The budget it was cut to fit (pass max_tokens for more)")
    note: str | None = Field(None, description="Anything the agent should know: what was left out and how to get it")
    receipt: ReceiptOut | None = Field(None, description="Tokens saved against reading the files whole")


class SearchResult(BaseModel):
    project_root: str | None = Field(None, description="With projects: its project")
    path: str = Field(description="File, relative to the project root")
    start_line: int = Field(description="First line of the chunk (1-based)")
    end_line: int = Field(description="Last line of the chunk (inclusive); the snippet may stop earlier")
    symbol: str = Field(description="The function, class or section it defines ('' if none)")
    kind: str = Field(description="function, method, class, module, anchor, section, config, block or window")
    language: str
    score: float = Field(description="Higher is better; comparable within one answer")
    match: str = Field(description="The channels that found it: bm25, vector, fuzzy, joined by '+'")
    stale: bool = Field(description="The file changed on disk since it was indexed: re-read it with lgrep_get_file")
    content: str = Field(description="The snippet: the chunk's first lines")
    truncated: bool = Field(description="The snippet is shorter than the chunk (lgrep_get_file reads the rest)")
    why: list[str] = Field(default_factory=list, description="The ranking signals that moved it, in words")
    uri: str | None = Field(None, description="The file as an MCP resource (lgrep://file/...)")


class LineRangeOut(BaseModel):
    start_line: int
    end_line: int = Field(description="Inclusive")
    symbol: str = Field(description="What the lines define ('' if nothing)")


class FileResult(BaseModel):
    project_root: str | None = Field(None, description="With projects: its project")
    path: str = Field(description="File, relative to the project root")
    score: float = Field(description="Higher is better; comparable within one answer")
    language: str
    ranges: list[LineRangeOut] = Field(description="The lines to read first, best first (lgrep_get_file reads them)")
    why: list[str] = Field(default_factory=list, description="The evidence that ranked it, in words")
    stale: bool = Field(description="The file changed on disk since it was indexed")
    uri: str | None = Field(None, description="The file as an MCP resource (lgrep://file/...)")


class ReleaseOut(BaseModel):
    component: str
    version: str = Field(description="As the tag spells it")
    tag: str
    commit: str
    files: int = Field(description="Files of this version in the index")
    prerelease: bool
    indexed_at: float = Field(description="Seconds since the epoch")


class ProjectPart(BaseModel):
    project_root: str
    scope: str = ""
    indexing: IndexProgressOut | None = Field(None, description="Its first index is still running: no results yet")


class SearchAnswer(Budgeted):
    project_root: str = Field(
        description="The project whose index answered (absolute); paths are relative to it ('' with projects: "
        "each result names its own)"
    )
    scope: str = Field("", description="The folder inside it the search kept to ('' for the whole project)")
    projects: list[ProjectPart] | None = Field(None, description="With projects: each project searched")
    release: ReleaseOut | None = Field(None, description="The released version searched (with component)")
    results: list[SearchResult] = Field(description="Best first (empty with files=true)")
    files: list[FileResult] | None = Field(None, description="With files=true: the files to open, best first")
    stale_files: list[str] = Field(description="Result files changed since they were indexed")
    vectors_pending: int = Field(0, description="Chunks still waiting for their vectors (found by words and names)")
    omitted: int = Field(0, description="Results (or files) left out to fit max_tokens")
    indexing: IndexProgressOut | None = Field(
        None, description="Set while the project's first index is still being built: how far it is"
    )


class IndexSummaryOut(BaseModel):
    files_seen: int
    files_indexed: int = Field(description="Files (re)chunked in this run")
    files_unchanged: int
    files_deleted: int
    files_skipped: dict[str, int] = Field(description="Files left out, by reason (binary, secret, too_large, ...)")
    chunks_written: int
    chunks_total: int
    vectors_embedded: int
    vectors_pending: int = Field(description="Chunks whose vectors the daemon is still computing")
    seconds_bm25: float = Field(description="Seconds until the project was searchable by words and names")
    seconds_vectors: float
    created: bool = Field(description="A new index was built (first index, force, or a repair)")
    tokens_billed: int = Field(0, description="Tokens a cloud embedding provider billed for this run")


class IndexProgressOut(BaseModel):
    phase: str = Field(description="walk, chunk, store or embed")
    files_done: int
    files_total: int
    chunks_done: int
    chunks_total: int
    eta_seconds: float | None = None


class IndexAnswer(BaseModel):
    project_root: str
    done: bool = Field(description="The run finished (the project is searchable by words and names)")
    summary: IndexSummaryOut | None = Field(None, description="What the run did, when done")
    progress: IndexProgressOut | None = Field(None, description="How far it is, when not done")
    note: str | None = None


class ChangesOut(BaseModel):
    added: int
    modified: int
    deleted: int
    total: int


class SpendOut(BaseModel):
    tokens: int = Field(description="Tokens the cloud embedding provider billed")
    requests: int
    cost_usd: float = Field(description="Estimated from the price table; covers only models with a price")
    unpriced_models: list[str] = Field(default_factory=list, description="Models whose cost is unknown")


class StatusAnswer(BaseModel):
    project_root: str
    state: str = Field(description="ready, building, interrupted or outdated")
    index_dir: str
    watched: bool = Field(description="The daemon keeps the index fresh as files change")
    watch_leases: int = Field(0, description="Clients (MCP servers like this one) keeping the project watched")
    files: int = 0
    chunks: int = 0
    vectors_pending: int = 0
    languages: dict[str, int] = Field(default_factory=dict, description="Files per language")
    provider: str = ""
    model: str = ""
    dimension: int = 0
    chunker_version: str = ""
    last_indexed: str | None = None
    changes: ChangesOut | None = Field(
        None, description="Files changed on disk since the last index (the index is stale when total > 0)"
    )
    stale: bool = Field(False, description="Some files changed since the last index (lgrep_index or a watch fixes it)")
    detail: str = ""
    project_spend: SpendOut | None = Field(None, description="Cloud embedding spend of this project (none: local)")
    total_spend: SpendOut | None = Field(None, description="Cloud embedding spend of every project")
    spend_warnings: list[str] = Field(
        default_factory=list, description="Money warnings (a spend threshold passed, a cost unknown): tell the user"
    )


class WatchAnswer(BaseModel):
    project_root: str
    watched: bool
    already_watched: bool


class UnwatchAnswer(BaseModel):
    project_root: str
    was_watched: bool


class FileAnswer(Budgeted):
    path: str
    language: str
    content: str = Field(description="The lines, as the file is on disk now (secrets redacted)")
    start_line: int
    end_line: int = Field(description="The last line in content")
    total_lines: int
    stale: bool = Field(description="The file changed since it was indexed")
    truncated: bool = Field(description="content stops before the lines asked for (see note for the next call)")
    release: ReleaseOut | None = Field(None, description="The released version read (with component)")
    # with skeleton=true
    skeleton: bool = Field(False, description="content is the file's skeleton, not its lines")
    definitions: list[LocationOut] | None = Field(None, description="Skeleton: every definition shown, in file order")
    skeleton_tokens: int | None = Field(None, description="Skeleton: its size in the embedding model's tokens")
    file_tokens: int | None = Field(None, description="Skeleton: the whole file's size in the same tokens")
    tokens_saved: int | None = None
    tokenizer: str | None = None
    omitted: int = 0


class ComponentOut(BaseModel):
    name: str
    versions: int
    latest: str = Field(description="The newest version (releases before prereleases)")


class ReleaseFileOut(BaseModel):
    path: str
    language: str
    content_type: str
    chunks: int
    last_line: int


class ReleasesAnswer(Budgeted):
    project_root: str
    components: list[ComponentOut] | None = Field(None, description="Without component: every component")
    versions: list[ReleaseOut] | None = Field(None, description="With component: its versions, newest first")
    release: ReleaseOut | None = Field(None, description="With component and version: the version listed")
    files: list[ReleaseFileOut] | None = Field(None, description="With component and version: its files, by path")
    total: int = Field(0, description="Components, versions or files in all (some may be left out to fit)")
    omitted: int = 0


class LocationOut(BaseModel):
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    language: str
    scope: list[str] = Field(default_factory=list, description="Enclosing definitions, outermost first")
    signature: str = ""


class SymbolOut(LocationOut):
    score: float
    exact: bool = Field(description="The name is exactly the one asked for (not a typo-tolerant or partial match)")
    uri: str | None = None


class SymbolAnswer(Budgeted):
    project_root: str
    matches: list[SymbolOut] = Field(description="Exact matches first")
    omitted: int = 0


class RelatedAnswer(Budgeted):
    project_root: str
    anchor: LocationOut = Field(description="The chunk that spans the line asked about")
    related: list[SearchResult] = Field(
        description="Best first; `match` says which relations found each: caller (calls the anchor), callee "
        "(the anchor calls it), vector (near in meaning), names (references the same names), bm25"
    )
    omitted: int = 0


class TraceEdgeOut(BaseModel):
    direction: str = Field(description="callers or callees")
    depth: int = Field(description="Hops from the traced symbol")
    caller: str = Field(description="The calling definition: 'path:line Class.method' ('path (top level)')")
    callee: str | None = Field(None, description="The called definition, 'path:line Class.method'; null if unknown")
    site: str = Field(description="The call: 'path:line'")
    resolution: str = Field(description="import, local, or name (matched by name only)")
    sites: int = Field(1, description="Call sites from caller to callee")
    candidates: list[str] = Field(
        default_factory=list, description="Callees: the definitions the called name could mean (not followed)"
    )
    others: int = Field(0, description="Other definitions of the called name (the call may mean one of them)")


class TraceAnswer(Budgeted):
    project_root: str
    symbol: str
    definitions: list[LocationOut] = Field(description="What was traced (several + ambiguous: pick one)")
    ambiguous: bool = Field(description="Several definitions: ask again with path or a qualified name")
    edges: list[TraceEdgeOut] = Field(description="Breadth first: resolved edges before name-matched ones")
    total: int = Field(description="Edges found to this depth")
    next_offset: int = Field(description="Call again with offset=next_offset for more; 0: no more")
    omitted: int = 0
