"""The shape of every JSON answer lgrep gives, defined once: the fields of each (their names, types and
meaning) as TypedDicts. `lgrep_core.app.serialize` builds them (the CLI's `--json`, the `lgrep://`
resources); the MCP server derives its tools' output schemas from them, adding only fields it declares
as its extensions (lgrep_mcp.answers). docs/json.md lists them.

A field's meaning is its `Doc`, kept in the annotation so a reader of this module and an agent reading
a tool's output schema see the same words. `NotRequired` marks a field some answers leave out (a
search's `release` when no released version was searched). Plain typing only: the CLI imports this on
its light path, where pydantic is never loaded.
"""

from enum import StrEnum
from typing import Annotated, NotRequired, TypedDict

from lgrep_core.domain.models import ChunkKind, ContentType, IndexPhase, ProjectState, Resolution

__all__ = [
    "SHAPES",
    "ChangesJSON",
    "ComponentJSON",
    "ComponentsJSON",
    "Doc",
    "FileEntryJSON",
    "FileHitJSON",
    "FileJSON",
    "FileListJSON",
    "FileSliceJSON",
    "IndexProgressJSON",
    "IndexSummaryJSON",
    "IndexedJSON",
    "LineRangeJSON",
    "LocationJSON",
    "ProjectFileHitJSON",
    "ProjectPartJSON",
    "ProjectReceiptsJSON",
    "ProjectSearchHitJSON",
    "ProjectsSearchJSON",
    "ReceiptSumsJSON",
    "ReceiptsJSON",
    "RelatedJSON",
    "ReleaseJSON",
    "SearchHitJSON",
    "SearchJSON",
    "SkeletonJSON",
    "SpendJSON",
    "StatusJSON",
    "SymbolMatchJSON",
    "SymbolsJSON",
    "TagsSummaryJSON",
    "TraceEdgeJSON",
    "TraceJSON",
    "UnwatchJSON",
    "VersionsJSON",
    "WatchJSON",
]


class Doc:
    """What a field means, in the words an agent or a script reads (an annotation's metadata)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Doc({self.text!r})"


def _one_of(values: type[StrEnum]) -> str:
    return ", ".join(v.value for v in values)


# --- fields several shapes share ----------------------------------------------------------------------

ProjectRoot = Annotated[str, Doc("The project (absolute); every path in the answer is relative to it")]
Path = Annotated[str, Doc("File, relative to the project root")]
Language = Annotated[str, Doc("The file's language (python, go, markdown, ...)")]
StartLine = Annotated[int, Doc("First line, 1-based")]
EndLine = Annotated[int, Doc("Last line, inclusive")]
Symbol = Annotated[str, Doc("The function, class or section it defines ('' if none)")]
Kind = Annotated[str, Doc(f"What the chunk is: {_one_of(ChunkKind)} ('' if unknown)")]
Score = Annotated[float, Doc("Higher is better; comparable within one answer")]
Stale = Annotated[bool, Doc("The file changed on disk since it was indexed: read it again for its lines now")]
Why = Annotated[list[str], Doc("The ranking signals that moved it, in words")]
Notes = Annotated[
    list[str], Doc("Anything the reader should know about this answer (what was left out, how to get it)")
]
VectorsPending = Annotated[int, Doc("Chunks still waiting for their vectors (found by words and names meanwhile)")]


# --- search ----------------------------------------------------------------------------------------------


class SearchHitJSON(TypedDict):
    """One result of a search: where it is, what it is, how well and why it matched, and its snippet."""

    path: Path
    start_line: Annotated[int, Doc("First line of the chunk (1-based)")]
    end_line: Annotated[int, Doc("Last line of the chunk (inclusive); the snippet may stop earlier")]
    symbol: Symbol
    kind: Kind
    language: Language
    score: Score
    match: Annotated[str, Doc("The channels that found it (bm25, vector, fuzzy, joined by '+'), or definition")]
    stale: Stale
    content: Annotated[str, Doc("The snippet: the chunk's text, or its first lines")]
    truncated: Annotated[bool, Doc("The snippet is shorter than the chunk (read the file for the rest)")]
    signals: NotRequired[Annotated[dict[str, float], Doc("With explain: each channel's and signal's number")]]
    why: NotRequired[Why]


class LineRangeJSON(TypedDict):
    start_line: StartLine
    end_line: EndLine
    symbol: Annotated[str, Doc("What the lines define ('' if nothing)")]


class FileHitJSON(TypedDict):
    """One file of a files answer: the file to open, its lines to read first and why it ranked."""

    path: Path
    score: Score
    language: Language
    ranges: Annotated[list[LineRangeJSON], Doc("The lines to read first, best first")]
    why: Annotated[list[str], Doc("The evidence that ranked it, in words")]
    stale: Stale


class ReleaseJSON(TypedDict):
    """A component@version: the tag it comes from and what it holds."""

    component: str
    version: Annotated[str, Doc("As the tag spells it")]
    tag: str
    commit: str
    files: Annotated[int, Doc("Files of this version in the index")]
    prerelease: bool
    indexed_at: Annotated[float, Doc("When it was indexed, in seconds since the epoch")]


class SearchJSON(TypedDict):
    """A whole search answer: the query, the project that answered, the results (chunks) or, for a
    files search, the files (a task question's chunk answer has both: its files, then their best
    chunks), and how the search went."""

    query: str
    project_root: Annotated[str, Doc("The project whose index answered (absolute); paths are relative to it")]
    scope: Annotated[str, Doc("The folder inside it the search kept to ('' for the whole project)")]
    results: Annotated[list[SearchHitJSON], Doc("Best first (empty in a files search)")]
    files: Annotated[
        list[FileHitJSON],
        Doc(
            "The files to open, best first: a files search's answer, or the files a task question's "
            "results (an issue or a bug report as the query) were ranked by; else empty"
        ),
    ]
    query_kind: Annotated[str, Doc("How the query was read (identifier, phrase, natural, issue, ...)")]
    search_type: Annotated[str, Doc("hybrid, vector, bm25 or fuzzy")]
    timings_ms: Annotated[dict[str, float], Doc("Milliseconds per stage")]
    chunks_searched: int
    vectors_pending: VectorsPending
    notes: Notes
    release: NotRequired[Annotated[ReleaseJSON, Doc("The released version searched (with a component)")]]


class IndexProgressJSON(TypedDict):
    """How far an index run is."""

    phase: Annotated[str, Doc(f"queued, working or one of {_one_of(IndexPhase)}")]
    files_done: int
    files_total: int
    chunks_done: int
    chunks_total: int
    eta_seconds: Annotated[float | None, Doc("Seconds left, estimated (null: not known yet)")]


class ProjectPartJSON(TypedDict):
    """One project's part of a search of several projects."""

    project_root: ProjectRoot
    scope: Annotated[str, Doc("The folder inside it the search kept to ('' for the whole project)")]
    indexing: NotRequired[Annotated[IndexProgressJSON, Doc("Its first index is still running: no results yet")]]
    query_kind: NotRequired[str]
    search_type: NotRequired[str]
    timings_ms: NotRequired[dict[str, float]]
    chunks_searched: NotRequired[int]
    vectors_pending: NotRequired[VectorsPending]
    notes: NotRequired[Notes]


class ProjectSearchHitJSON(SearchHitJSON):
    project_root: Annotated[str, Doc("With several projects: the project it is in")]


class ProjectFileHitJSON(FileHitJSON):
    project_root: Annotated[str, Doc("With several projects: the project it is in")]


class ProjectsSearchJSON(TypedDict):
    """One question asked of several projects (ADR 0026): each project's part, and one ranking."""

    query: str
    projects: Annotated[list[ProjectPartJSON], Doc("With several projects: each project searched")]
    results: list[ProjectSearchHitJSON]
    files: list[ProjectFileHitJSON]
    query_kind: str
    search_type: str
    chunks_searched: int
    vectors_pending: VectorsPending


# --- structure -------------------------------------------------------------------------------------------


class LocationJSON(TypedDict):
    """Where a chunk is and what it defines."""

    path: Path
    start_line: StartLine
    end_line: EndLine
    symbol: Symbol
    kind: Kind
    language: Language
    scope: Annotated[list[str], Doc("Enclosing definitions, outermost first")]
    signature: Annotated[str, Doc("The definition's signature ('' if none)")]


class SymbolMatchJSON(LocationJSON):
    """A definition found by name."""

    score: Score
    exact: Annotated[bool, Doc("The name is exactly the one asked for (not a typo-tolerant or partial match)")]


class SymbolsJSON(TypedDict):
    project_root: ProjectRoot
    query: Annotated[str, Doc("The name asked for")]
    matches: Annotated[list[SymbolMatchJSON], Doc("Exact matches first")]


class RelatedJSON(TypedDict):
    project_root: ProjectRoot
    anchor: Annotated[LocationJSON, Doc("The chunk that spans the line asked about")]
    related: Annotated[
        list[SearchHitJSON],
        Doc(
            "Best first, each with why; `match` says which relations found it: caller (calls the anchor), "
            "callee (the anchor calls it), vector (near in meaning), names (references the same names), bm25"
        ),
    ]


class TraceEdgeJSON(TypedDict):
    """One call relation: who calls what, where, and how that was resolved."""

    direction: Annotated[str, Doc("callers or callees")]
    depth: Annotated[int, Doc("Hops from the traced symbol")]
    caller: Annotated[LocationJSON, Doc("The calling definition")]
    callee: Annotated[LocationJSON | None, Doc("The called definition (null: not known)")]
    path: Annotated[str, Doc("The call site's file")]
    line: Annotated[int, Doc("The call site's line")]
    resolution: Annotated[str, Doc(f"How the callee was found: {_one_of(Resolution)}")]
    sites: Annotated[int, Doc("Call sites from caller to callee")]
    candidates: NotRequired[
        Annotated[list[LocationJSON], Doc("The definitions the called name could mean (not followed)")]
    ]


class TraceJSON(TypedDict):
    """Callers and callees of a symbol, breadth first, with how to ask for more."""

    project_root: ProjectRoot
    symbol: str
    definitions: Annotated[list[LocationJSON], Doc("What was traced (several and ambiguous: pick one)")]
    ambiguous: Annotated[bool, Doc("Several definitions: ask again with the path of the one you mean")]
    edges: Annotated[list[TraceEdgeJSON], Doc("Breadth first: resolved edges before name-matched ones")]
    total: Annotated[int, Doc("Edges found to this depth")]
    next_offset: Annotated[int, Doc("Ask again from this offset for more; 0: no more")]
    resolve_imports: Annotated[bool, Doc("Calls were followed through the files' imports")]


class SkeletonJSON(TypedDict):
    """A file's skeleton: its imports and signatures, bodies elided, and what it saves."""

    project_root: ProjectRoot
    path: Path
    language: Language
    content: Annotated[str, Doc("The skeleton: each elided body says which lines to read for it")]
    definitions: Annotated[list[LocationJSON], Doc("Every definition shown, in file order")]
    total_lines: int
    skeleton_tokens: Annotated[int, Doc("The skeleton's size in the tokenizer's tokens")]
    file_tokens: Annotated[int, Doc("The whole file's size in the same tokens")]
    tokens_saved: Annotated[int, Doc("file_tokens - skeleton_tokens")]
    tokenizer: str


# --- files and releases ----------------------------------------------------------------------------------


class FileSliceJSON(TypedDict):
    """Lines of a file as they are on disk now (or in a released version)."""

    path: Path
    language: Language
    content: Annotated[str, Doc("The lines (secrets redacted as in the index)")]
    start_line: StartLine
    end_line: Annotated[int, Doc("The last line in content")]
    total_lines: int
    stale: Annotated[bool, Doc("The file changed since it was indexed")]
    truncated: Annotated[bool, Doc("content stops before the lines asked for")]
    release: NotRequired[Annotated[ReleaseJSON, Doc("The released version read (with a component)")]]


class FileJSON(FileSliceJSON):
    project_root: ProjectRoot


class FileEntryJSON(TypedDict):
    path: Path
    language: Language
    content_type: Annotated[str, Doc(f"{_one_of(ContentType)}")]
    chunks: int
    last_line: int


class FileListJSON(TypedDict):
    """The files of an index (or of a released version), by path."""

    project_root: ProjectRoot
    total: Annotated[int, Doc("Files in all (some may be left out)")]
    files: Annotated[list[FileEntryJSON], Doc("By path")]
    release: NotRequired[Annotated[ReleaseJSON, Doc("The released version listed")]]


class ComponentJSON(TypedDict):
    name: str
    versions: Annotated[int, Doc("Versions of it indexed")]
    latest: Annotated[str, Doc("The newest version (releases before prereleases)")]


class ComponentsJSON(TypedDict):
    project_root: ProjectRoot
    components: Annotated[list[ComponentJSON], Doc("Every component of the indexed releases")]


class VersionsJSON(TypedDict):
    project_root: ProjectRoot
    component: str
    versions: Annotated[list[ReleaseJSON], Doc("Its versions, newest first")]


# --- index and status ------------------------------------------------------------------------------------


class SeedJSON(TypedDict):
    """Where a project's vectors came from when the team store seeded it, or why it did not (ADR 0034)."""

    store: Annotated[str, Doc("The team store (team.store)")]
    repository: Annotated[str, Doc("The repository's name in the store")]
    commit: Annotated[str, Doc("The publication's commit ('' when refused before one was found)")]
    published_at: Annotated[str | None, Doc("When it was published, in ISO 8601")]
    age_seconds: Annotated[float | None, Doc("How old the publication is")]
    vectors_copied: int
    bytes_copied: Annotated[int, Doc("Read from the store: the manifest and the vectors")]
    files_overlaid: Annotated[int, Doc("Files whose content differs from the publication's, indexed locally")]
    reason: Annotated[str, Doc("'' when seeded; else why not (unreachable, empty, not_in_history, ...)")]
    refused: Annotated[str, Doc("The refusal and what to do ('' when seeded); lgrep built locally instead")]


class PlannedFileJSON(TypedDict):
    path: str
    chunks: int
    new_vectors: Annotated[int, Doc("Vectors of its chunks the store does not hold yet")]


class PublishJSON(TypedDict):
    """`lgrep publish --json`: what was (with --dry-run: would be) published to the team store."""

    store: str
    repository: Annotated[str, Doc("The repository's name in the store")]
    commit: Annotated[str, Doc("HEAD's commit: the content published (never local edits)")]
    dry_run: bool
    files: int
    chunks: int
    vectors: Annotated[int, Doc("Distinct vectors of the publication")]
    vectors_uploaded: Annotated[int, Doc("Vectors new to the store (with --dry-run: would be)")]
    bytes_uploaded: int
    vectors_embedded: Annotated[int, Doc("Vectors computed by this run")]
    vectors_from_store: Annotated[int, Doc("Vectors taken from an earlier publication instead")]
    local_changes_not_published: Annotated[int, Doc("Files that differ from HEAD in the working tree")]
    untracked_not_published: int
    pruned: Annotated[int, Doc("Older publications removed (team.keep)")]
    seconds: float
    planned: NotRequired[Annotated[list[PlannedFileJSON], Doc("With --dry-run: each file, its chunks and new vectors")]]


class IndexSummaryJSON(TypedDict):
    """What an index run did (the fields of lgrep.v1.IndexSummary; seconds as numbers)."""

    project_root: ProjectRoot
    files_seen: int
    files_indexed: Annotated[int, Doc("Files (re)chunked in this run")]
    files_unchanged: int
    files_deleted: int
    files_skipped: Annotated[dict[str, int], Doc("Files left out, by reason (binary, secret, too_large, ...)")]
    chunks_written: int
    chunks_total: int
    vectors_embedded: int
    vectors_pending: Annotated[int, Doc("Chunks whose vectors the daemon is still computing")]
    seconds_bm25: Annotated[float, Doc("Seconds until the project was searchable by words and names")]
    seconds_vectors: float
    created: Annotated[bool, Doc("A new index was built (first index, force, or a repair)")]
    tokens_billed: Annotated[int, Doc("Tokens a cloud embedding provider billed for this run")]
    seed: Annotated[SeedJSON | None, Doc("What the team store gave this run (null: it was not asked)")]


class IndexedJSON(IndexSummaryJSON):
    """`lgrep index --json`: what the run did, where the index is, and any money warnings."""

    index_dir: Annotated[str, Doc("Where the index is kept")]
    spend_warnings: Annotated[list[str], Doc("Money warnings (a spend threshold passed, a cost unknown)")]


class SpendJSON(TypedDict):
    """Cloud embedding spend from the ledger."""

    tokens: Annotated[int, Doc("Tokens the cloud embedding provider billed")]
    requests: int
    cost_usd: Annotated[float, Doc("Estimated from the price table; covers only models with a price")]
    cost_known: Annotated[bool, Doc("Every model billed has a price (else cost_usd is a lower bound)")]
    unpriced_models: Annotated[list[str], Doc("Models whose cost is unknown")]


class ChangesJSON(TypedDict):
    added: int
    modified: int
    deleted: int
    total: int


class StatusJSON(TypedDict):
    """Where a project's index stands (the fields of lgrep.v1.GetStatusResponse). When the index is
    not ready, only where it is, its state and `detail`, and the spend."""

    project_root: ProjectRoot
    state: Annotated[str, Doc(f"One of {_one_of(ProjectState)}")]
    index_dir: Annotated[str, Doc("Where the index is kept")]
    watched: Annotated[bool, Doc("The daemon keeps the index fresh as files change")]
    watch_leases: Annotated[int, Doc("Clients (MCP servers) keeping the project watched")]
    detail: Annotated[str, Doc("Why it is not ready, and what to run ('' when ready)")]
    files: NotRequired[int]
    chunks: NotRequired[int]
    vectors_pending: NotRequired[VectorsPending]
    languages: NotRequired[Annotated[dict[str, int], Doc("Files per language")]]
    provider: NotRequired[str]
    model: NotRequired[str]
    dimension: NotRequired[int]
    chunker_version: NotRequired[str]
    last_indexed: NotRequired[Annotated[str | None, Doc("When, in ISO 8601")]]
    changes: NotRequired[
        Annotated[
            ChangesJSON | None, Doc("Files changed on disk since the last index (the index is stale when total > 0)")
        ]
    ]
    seed: NotRequired[Annotated[SeedJSON | None, Doc("Where the index was seeded from (null: built locally)")]]
    project_spend: Annotated[SpendJSON | None, Doc("Cloud embedding spend of this project (null: none, as locally)")]
    total_spend: Annotated[SpendJSON | None, Doc("Cloud embedding spend of every project")]
    spend_warnings: Annotated[
        list[str], Doc("Money warnings (a spend threshold passed, a cost unknown): tell the user")
    ]


class WatchJSON(TypedDict):
    project_root: ProjectRoot
    watched: bool
    already_watched: bool


class UnwatchJSON(TypedDict):
    project_root: ProjectRoot
    was_watched: bool


class TagsSummaryJSON(TypedDict):
    """What `lgrep index --tags` did."""

    project_root: ProjectRoot
    tags_seen: int
    tags_indexed: int
    tags_unchanged: int
    tags_removed: int
    unparsed: Annotated[list[str], Doc("Tags that name no component@version")]
    tag_file_pairs: int
    blobs_read: int
    chunks_written: int
    vectors_embedded: int
    files_skipped: dict[str, int]
    tags_total: int
    tag_file_pairs_total: int
    blobs_total: int
    chunks_total: int
    vectors_total: int
    seconds: float
    store: Annotated[str, Doc("Where the releases index is kept")]


# --- receipts --------------------------------------------------------------------------------------------


class ReceiptSumsJSON(TypedDict):
    """Receipts summed: answers that carried one, the tokens they held, the tokens of the whole files
    their results come from, and the difference."""

    calls: int
    tokens_returned: int
    file_tokens: Annotated[int, Doc("The tokens of the files the results come from, read whole")]
    saved: Annotated[int, Doc("file_tokens less the answer's tokens")]
    files: Annotated[int, Doc("Files the results come from")]


class ProjectReceiptsJSON(ReceiptSumsJSON):
    project_root: ProjectRoot
    clients: Annotated[dict[str, ReceiptSumsJSON], Doc("The sums per MCP client")]


class ReceiptsJSON(TypedDict):
    projects: list[ProjectReceiptsJSON]
    clients: Annotated[dict[str, ReceiptSumsJSON], Doc("The sums per client across projects")]
    total: ReceiptSumsJSON
    tokenizer: str
    notes: Annotated[list[str], Doc("Ledger files that could not be read (empty when all is well)")]


SHAPES: tuple[type, ...] = (
    SearchHitJSON,
    LineRangeJSON,
    FileHitJSON,
    ReleaseJSON,
    SearchJSON,
    IndexProgressJSON,
    ProjectPartJSON,
    ProjectSearchHitJSON,
    ProjectFileHitJSON,
    ProjectsSearchJSON,
    LocationJSON,
    SymbolMatchJSON,
    SymbolsJSON,
    RelatedJSON,
    TraceEdgeJSON,
    TraceJSON,
    SkeletonJSON,
    FileSliceJSON,
    FileJSON,
    FileEntryJSON,
    FileListJSON,
    ComponentJSON,
    ComponentsJSON,
    VersionsJSON,
    IndexSummaryJSON,
    IndexedJSON,
    SpendJSON,
    ChangesJSON,
    StatusJSON,
    WatchJSON,
    UnwatchJSON,
    TagsSummaryJSON,
    ReceiptSumsJSON,
    ProjectReceiptsJSON,
    ReceiptsJSON,
)
"""Every answer shape, for the tests and the docs that walk them."""
