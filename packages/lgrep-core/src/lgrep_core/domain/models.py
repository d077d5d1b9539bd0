"""Domain types shared by the indexer, the searcher and every front end (no wire or storage types here).

lgrep_core.rpc.wire converts each of them to and from its lgrep.v1 message; field names follow the proto
except where noted. Requests validate themselves (`validate()` raises InvalidRequestError), so the CLI,
the gRPC servers and the MCP server reject the same things with the same words.

Each use case is one request type, a `Request[Answer]`: `GetFileRequest` is a `Request[FileSlice]`.
An engine serves them all through one method (`lgrep_core.domain.engine.Engine.call(request) -> answer`),
so a client, the in-process engine and the MCP server's daemon engine forward a request as one value;
a new use case is a new request type here and a line in each engine's table, never a new method in
each of them.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import PurePath
from typing import Any, Generic, Self, TypeVar

from lgrep_core.domain.errors import InvalidRequestError
from lgrep_core.domain.text import identifier_parts

__all__ = [
    "DEFAULT_TRACE_EDGES",
    "EMBEDDING_TEXT_VERSION",
    "MAX_DEBOUNCE_MS",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_SYMBOL_CHARS",
    "MAX_TRACE_DEPTH",
    "MAX_WIRE_INT",
    "USE_CASES",
    "CancelIndexRequest",
    "CancelResult",
    "Chunk",
    "ChunkKind",
    "ComponentInfo",
    "ContentType",
    "FileChanges",
    "FileHit",
    "FileList",
    "FileSlice",
    "FindRelatedRequest",
    "FindSymbolRequest",
    "GetFileRequest",
    "IndexPhase",
    "IndexProgress",
    "IndexProjectRequest",
    "IndexSummary",
    "IndexedFile",
    "LineRange",
    "ListComponentsRequest",
    "ListFilesRequest",
    "ListProjectsRequest",
    "ListVersionsRequest",
    "Location",
    "MatchType",
    "ProjectInfo",
    "ProjectState",
    "ProjectStatus",
    "RelatedResult",
    "Release",
    "ReleaseWatchLeaseRequest",
    "RemoveProjectRequest",
    "RemoveResult",
    "Request",
    "Resolution",
    "SearchHit",
    "SearchRequest",
    "SearchResponse",
    "SearchType",
    "SeedReport",
    "ServerInfo",
    "ServerRole",
    "Skeleton",
    "SkeletonRequest",
    "SpendTotals",
    "StatusRequest",
    "SymbolMatch",
    "TagsSummary",
    "TraceDirection",
    "TraceEdge",
    "TraceRequest",
    "TraceResult",
    "UnwatchProjectRequest",
    "WatchLease",
    "WatchLeaseRequest",
    "WatchProjectRequest",
    "WatchResult",
    "check_project_path",
    "check_project_root",
    "check_release",
    "embedding_text",
]


class ContentType(StrEnum):
    """What a file holds; search filters and ranking penalties use it."""

    CODE = "code"
    DOCS = "docs"
    CONFIG = "config"
    TEXT = "text"


class SearchType(StrEnum):
    """Which retrieval channels a search runs: all of them fused (hybrid), or one alone."""

    HYBRID = "hybrid"
    VECTOR = "vector"
    BM25 = "bm25"
    FUZZY = "fuzzy"  # symbol names, typo-tolerant


class MatchType(StrEnum):
    """A retrieval channel that found a hit; DEFINITION when no channel did but the hit defines the
    queried name (found through the symbol table)."""

    BM25 = "bm25"
    FUZZY = "fuzzy"
    VECTOR = "vector"
    DEFINITION = "definition"
    # FindRelated's relations besides VECTOR (and BM25 while vectors are pending)
    CALLER = "caller"  # it calls the anchor
    CALLEE = "callee"  # the anchor calls it
    SHARED_NAMES = "names"  # it references names the anchor references (calls, types, imports)


class ChunkKind(StrEnum):
    """What a chunk spans. Values are stable: they are stored in the index and printed by `--json`."""

    FUNCTION = "function"
    METHOD = "method"
    CLASS = "class"  # also struct, interface, trait, enum, protocol, module-like type definitions
    MODULE = "module"  # a namespace/module/impl block too small to split further
    ANCHOR = "anchor"  # per-file summary: imports, exports, top comments
    SECTION = "section"  # a Markdown heading section
    CONFIG = "config"  # a top-level key of YAML/TOML/JSON
    BLOCK = "block"  # top-level code between definitions
    WINDOW = "window"  # line-window fallback


@dataclass(frozen=True, slots=True)
class Chunk:
    """One searchable piece of a file.

    Lines are 1-based and inclusive. `scope` is the chain of enclosing definitions, outermost
    first, ending with this chunk's own symbol when it has one (`("Auth", "verify")`).
    """

    path: str  # relative to the project root, '/'-separated
    language: str
    start_line: int
    end_line: int
    content: str
    kind: ChunkKind
    symbol: str = ""
    scope: tuple[str, ...] = ()
    signature: str = ""
    content_type: ContentType = ContentType.CODE
    refs: str = ""  # what the chunk defines and references (lgrep_core.domain.structure); not embedded

    def embedding_text(self) -> str:
        """The text given to the embedder: path and scope chain first, then the code."""
        return embedding_text(self.path, self.scope, self.content)


# Bump when embedding_text changes: it is part of an index's identity and of every vector's key.
EMBEDDING_TEXT_VERSION = "2"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def embedding_text(path: str, scope: Sequence[str], content: str) -> str:
    """`pkg/jwt_verifier.py › Auth › verifyToken`, then the same names as plain words
    (`pkg jwt verifier auth verify token`), then the chunk's text (DESIGN section 5).

    The word line is for the model: MiniLM reads `verifyToken` as word pieces but "verify token" as
    words it knows. Measured on the benchmark subset: vector channel alone 0.727 -> 0.744 NDCG@10.

    Callers pass the path through `lgrep_core.domain.secrets.redact_path` (this text is what a cloud
    provider receives); this module stays free of re2, which the light gRPC client must not import.
    """
    header = path
    if scope:
        header += " › " + " › ".join(scope)
    names = f"{path.rsplit('.', 1)[0]} {' '.join(scope)}"
    words = " ".join(p for ident in _WORD.findall(names) for p in identifier_parts(ident))
    return f"{header}\n{words}\n{content}"


Answer = TypeVar("Answer")


class Request(ABC, Generic[Answer]):
    """A use case's input; `Answer` is the type of its answer. Every request is a frozen dataclass
    that names its project (`project_root`, absolute once it is sent) and checks itself: a request
    type without `validate` cannot be made."""

    __slots__ = ()

    @abstractmethod
    def validate(self) -> Self:
        """The request itself, or InvalidRequestError naming what is wrong with it."""


# What a request may ask for. The CLI, gRPC and MCP all check through SearchRequest.validate().
MAX_LIMIT = 1000
# A task pasted whole (an issue with its tracebacks and logs) fits: 99% of SWE-bench Lite's issues are
# under 16,000 characters. Beyond this, a query is more likely a file pasted by mistake.
MAX_QUERY_CHARS = 32_768


@dataclass(frozen=True, slots=True)
class SearchRequest(Request["SearchResponse"]):
    """One query against one project, as every front end (CLI, gRPC, MCP) states it.

    Filters are lists, as on the wire: a hit must match one of `languages` (when any are given) and
    one of `content_types`; `path_glob` is a glob over project-relative paths (`src/**/*.py`,
    `*.go`, a folder such as `src/auth`) or an absolute path inside the root. `limit` and
    `bm25_weight` left as None take the project's search settings.
    """

    query: str
    project_root: str = ""
    limit: int | None = None
    search_type: SearchType = SearchType.HYBRID
    path_glob: str | None = None
    languages: tuple[str, ...] = ()
    content_types: tuple[ContentType, ...] = ()
    bm25_weight: float | None = None
    explain: bool = False
    # A released version instead of the working tree: component and version ("" or "latest", an
    # exact version, or a semver range). Needs `lgrep index --tags`.
    component: str = ""
    version: str = ""
    # Answer with files (`SearchResponse.files`, `limit` of them) ranked by all their evidence,
    # instead of chunks: "which files do I open for this task".
    files: bool = False

    def validate(self) -> SearchRequest:
        """The request itself, or InvalidRequestError naming what is wrong with it."""
        if not self.query.strip():
            raise InvalidRequestError("the query is empty")
        if len(self.query) > MAX_QUERY_CHARS:
            raise InvalidRequestError(
                f"the query is {len(self.query):,} characters long; the limit is {MAX_QUERY_CHARS:,}: keep the "
                "task's words, its traceback and error messages, and leave out long logs and whole files"
            )
        if self.limit is not None and not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidRequestError(f"limit must be 1 to {MAX_LIMIT}, got {self.limit}")
        if self.bm25_weight is not None and not (math.isfinite(self.bm25_weight) and self.bm25_weight >= 0):
            raise InvalidRequestError(f"bm25_weight must be a finite number, 0 or more, got {self.bm25_weight}")
        check_release(self.component, self.version)
        return self


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked result."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: ChunkKind | None  # None only for a kind a newer server sent that this version does not know
    language: str
    score: float
    content: str  # the chunk's text, cut to the snippet budget (see `truncated`)
    match: tuple[MatchType, ...]  # the channels that found it, sorted; (DEFINITION,) if only the ranking did
    scores: dict[str, float] = field(default_factory=dict)  # per-channel rank/score and per-signal effect
    stale: bool = False  # the file changed on disk since it was indexed
    why: tuple[str, ...] = ()  # the ranking signals that moved it, in words ("defines Router")
    truncated: bool = False  # the snippet is shorter than the chunk

    @property
    def match_label(self) -> str:
        """The channels as one word: `bm25+fuzzy+vector`, or `definition`."""
        return "+".join(self.match)


@dataclass(frozen=True, slots=True)
class FileHit:
    """One ranked file of a files answer (`SearchRequest.files`)."""

    path: str
    score: float
    language: str
    # Its best chunks, best first: the lines to read first (start, end, the symbol they define).
    ranges: tuple[LineRange, ...]
    why: tuple[str, ...] = ()  # the evidence, in words ("named in the traceback", "defines lambdify")
    stale: bool = False  # the file changed on disk since it was indexed


@dataclass(frozen=True, slots=True)
class LineRange:
    start_line: int
    end_line: int
    symbol: str = ""


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: list[SearchHit]
    timings_ms: dict[str, float]
    chunks_searched: int
    vectors_pending: int
    query_kind: str = ""  # "symbol" or "natural": how the query was read (it sets the channel weights)
    search_type: SearchType | None = None  # None only when a newer server named channels this version does not know
    files_changed: int = 0  # on the wire only: no server sets it (GetStatus counts changed files)
    notes: tuple[str, ...] = ()  # what made the answer less than asked for (the query could not be embedded)
    release: Release | None = None  # the version searched, when the request named a component
    project_root: str = ""  # the project whose index answered ("" from a server before revision 7)
    scope: str = ""  # the folder inside it the search kept to ("" for the whole project)
    # The ranked files: a files answer's (SearchRequest.files; `results` is then empty), or the files
    # a task question's chunk answer was ranked by (its `results` are their best chunks).
    files: list[FileHit] = field(default_factory=list)


# --- checks every request shares -------------------------------------------------------------------

MAX_SYMBOL_CHARS = 512
MAX_DEBOUNCE_MS = 3_600_000  # an hour: longer than that is a typo, not a debounce
_MAX_PATH_CHARS = 4096


def check_project_root(project_root: str) -> str:
    """The project root itself, or InvalidRequestError: a server resolves roots in its own working
    directory, so a request must name an absolute path."""
    if not project_root:
        raise InvalidRequestError("project_root is empty: name the project's root directory as an absolute path")
    if "\x00" in project_root or len(project_root) > _MAX_PATH_CHARS:
        raise InvalidRequestError("project_root is not a usable path (a NUL character, or too long)")
    if not PurePath(project_root).is_absolute():
        raise InvalidRequestError(f"project_root must be an absolute path, got {project_root!r}")
    return project_root


def check_project_path(path: str) -> str:
    """A path inside a project as requests name it (relative to the root, '/'-separated), or
    InvalidRequestError. Lexical only: the server still resolves symlinks before reading."""
    if not path:
        raise InvalidRequestError("path is empty: name a file relative to the project root")
    if "\x00" in path or len(path) > _MAX_PATH_CHARS:
        raise InvalidRequestError("path is not a usable path (a NUL character, or too long)")
    if path.startswith("/"):
        raise InvalidRequestError(f"path must be relative to the project root, got {path!r}")
    if ".." in path.split("/"):
        raise InvalidRequestError(f"path must stay inside the project root, got {path!r}")
    return path


def check_release(component: str, version: str) -> None:
    """A request's component and version, or InvalidRequestError."""
    if version and not component:
        raise InvalidRequestError(f"version {version!r} needs a component: name the component too (list_components)")
    for what, text in (("component", component), ("version", version)):
        if len(text) > MAX_SYMBOL_CHARS or "\x00" in text:
            raise InvalidRequestError(f"the {what} is not a usable name (too long, or a NUL character)")


@dataclass(frozen=True, slots=True)
class Release:
    """One released version of a component: a git tag as component@version."""

    component: str
    version: str
    tag: str
    commit: str = ""
    files: int = 0
    prerelease: bool = False
    indexed_at: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.component}@{self.version}"


@dataclass(frozen=True, slots=True)
class ComponentInfo:
    name: str
    versions: int
    latest: str  # the newest version (releases before prereleases)


@dataclass(frozen=True, slots=True)
class ListComponentsRequest(Request["list[ComponentInfo]"]):
    """The components of a repository's released versions (`lgrep index --tags`), by name."""

    project_root: str

    def validate(self) -> ListComponentsRequest:
        check_project_root(self.project_root)
        return self


@dataclass(frozen=True, slots=True)
class ListVersionsRequest(Request["list[Release]"]):
    """The indexed versions of one component, newest first."""

    project_root: str
    component: str

    def validate(self) -> ListVersionsRequest:
        check_project_root(self.project_root)
        if not self.component.strip():
            raise InvalidRequestError("the component is empty: name one (ListComponents lists them)")
        check_release(self.component, "")
        return self


@dataclass(frozen=True, slots=True)
class TagsSummary:
    """What `lgrep index --tags` did. Pairs and blobs show the content addressing at work: a file
    identical across tags is read, chunked and embedded once."""

    root: str
    tags_seen: int = 0  # tags in the repository (matching --tag-pattern)
    tags_indexed: int = 0  # new or moved tags indexed in this run
    tags_unchanged: int = 0
    tags_removed: int = 0  # gone from the repository: dropped from the index
    unparsed: tuple[str, ...] = ()  # tags no rule maps to component@version (skipped)
    tag_file_pairs: int = 0  # files listed by the tags indexed in this run
    blobs_read: int = 0  # distinct contents read and chunked in this run
    chunks_written: int = 0
    vectors_embedded: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)  # files left out, by reason
    tags_total: int = 0
    tag_file_pairs_total: int = 0
    blobs_total: int = 0
    chunks_total: int = 0
    vectors_total: int = 0
    seconds: float = 0.0
    store: str = ""  # where the index lives


def _check_symbol(name: str) -> None:
    if not name.strip():
        raise InvalidRequestError("the symbol name is empty")
    if len(name) > MAX_SYMBOL_CHARS:
        raise InvalidRequestError(f"the symbol name is {len(name)} characters long; the limit is {MAX_SYMBOL_CHARS}")


def _check_limit(limit: int | None) -> None:
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequestError(f"limit must be 1 to {MAX_LIMIT}, got {limit}")


# Line numbers, offsets and counts travel as int32 (lgrep.v1): a larger one is refused as a bad
# request here, not found unsendable by the wire code.
MAX_WIRE_INT = 2**31 - 1


def _check_wire_int(what: str, value: int) -> None:
    if value > MAX_WIRE_INT:
        raise InvalidRequestError(f"{what} must be at most {MAX_WIRE_INT:,}, got {value:,}")


# --- where chunks are -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Location:
    """Where a chunk sits in a project and what it is (`lgrep.v1.Location`). Lines are 1-based and
    inclusive; `scope` ends with `symbol` when there is one."""

    path: str  # relative to the project root, '/'-separated
    start_line: int
    end_line: int
    symbol: str = ""
    kind: ChunkKind | None = None  # None: unset, or a kind a newer server sent that this version does not know
    language: str = ""
    scope: tuple[str, ...] = ()
    signature: str = ""
    content_type: ContentType | None = ContentType.CODE  # None: a type a newer server sent


# --- indexing ---------------------------------------------------------------------------------------


class ProjectState(StrEnum):
    """Where a project's index stands, as a reader sees it (lgrep_core.storage.store.IndexState is
    this enum). Values are stable: `lgrep status --json` prints them."""

    READY = "ready"  # a published generation: searchable
    BUILDING = "building"  # no published generation yet; an indexer is building the first one
    INTERRUPTED = "interrupted"  # no published generation; a build was started and its process stopped
    OUTDATED = "outdated"  # an index in the layout of an older lgrep (no generations)
    ABSENT = "absent"  # never indexed


class IndexPhase(StrEnum):
    """A stage of an indexing run."""

    WALK = "walk"  # walking the tree, applying ignore rules
    CHUNK = "chunk"  # parsing changed files into chunks and writing them (BM25-searchable after)
    EMBED = "embed"  # computing and writing vectors
    DONE = "done"
    SEED = "seed"  # copying vectors from the team store (chunks_done/total count vectors)


@dataclass(frozen=True, slots=True)
class IndexProjectRequest:
    """Index one project: incrementally, or from scratch with `force`. With `wait_for_vectors` False
    the run ends once the project is BM25-searchable and embedding goes on in the background.

    Not a `Request`: its answer is a stream of events (`Engine.index`), not one value."""

    project_root: str
    force: bool = False
    wait_for_vectors: bool = True
    seed: bool = False  # ask the team store for vectors on this run (`lgrep seed`, ADR 0034)

    def validate(self) -> IndexProjectRequest:
        check_project_root(self.project_root)
        return self


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """One progress event of an indexing run. Each event is a new object: a consumer may keep it
    (queue it to another thread, send it later) while the run goes on."""

    phase: IndexPhase | None  # None only for a phase a newer server sent that this version does not know
    files_done: int = 0
    files_total: int = 0  # 0 while unknown
    chunks_done: int = 0
    chunks_total: int = 0  # 0 while unknown
    rate: float = 0.0  # items per second in this phase (files in WALK/CHUNK, chunks in EMBED); 0 while unknown
    eta_seconds: float | None = None  # time left for the whole run; None while unknown


@dataclass(frozen=True, slots=True)
class SeedReport:
    """Where a project's vectors came from when the team store seeded it (`lgrep.v1.SeedReport`), or
    why it did not (`reason` and `refused` set: the run built locally instead)."""

    store: str = ""  # the team store, as settings name it (no credentials)
    repository: str = ""  # the repository's name in the store
    commit: str = ""  # the publication's commit
    published_at: float = 0.0  # when it was published, seconds since the epoch
    vectors_copied: int = 0
    bytes_copied: int = 0  # read from the store (manifest and vectors)
    files_overlaid: int = 0  # files whose content differs from the publication (indexed locally)
    reason: str = (
        ""  # why it was refused: unreachable, empty, not_in_history, other_repository, other_model, damaged, not_git
    )
    refused: str = ""  # the refusal's message

    @property
    def seeded(self) -> bool:
        return bool(self.commit) and not self.reason


@dataclass(frozen=True, slots=True)
class IndexSummary:
    """What an indexing run did (`lgrep.v1.IndexSummary`; `root` is its project_root, `skipped` its
    files_skipped, the seconds its Durations)."""

    root: str
    files_seen: int = 0  # files in the project after ignore rules
    files_indexed: int = 0  # (re)chunked in this run
    files_unchanged: int = 0
    files_deleted: int = 0  # dropped because they disappeared or became ignored
    skipped: Mapping[str, int] = field(default_factory=dict)  # files left out, by reason ("binary", "secret")
    chunks_written: int = 0
    chunks_total: int = 0  # in the index after this run
    vectors_embedded: int = 0
    vectors_pending: int = 0
    seconds_bm25: float = 0.0  # until BM25-searchable
    seconds_vectors: float = 0.0  # embedding
    created: bool = False  # the run started a new index generation (first index, force, or a repair)
    tokens_billed: int = 0  # tokens a cloud embedding provider billed for this run (0 for the local model)
    seed: SeedReport | None = None  # the run asked the team store for vectors (ADR 0034)


@dataclass(frozen=True, slots=True)
class FileChanges:
    """Files changed on disk since the last indexing run."""

    added: int = 0
    modified: int = 0
    deleted: int = 0

    @property
    def total(self) -> int:
        return self.added + self.modified + self.deleted


@dataclass(frozen=True, slots=True)
class SpendTotals:
    """Money spent on cloud embedding providers, from the spend ledger (`lgrep.v1.SpendTotals`).

    `cost_usd` is estimated from the price table and covers only the models that have a price; the
    tokens of `unpriced_models` are counted but their cost is unknown."""

    tokens: int = 0
    requests: int = 0
    cost_usd: float = 0.0
    unpriced_models: tuple[str, ...] = ()

    @property
    def cost_known(self) -> bool:
        return not self.unpriced_models


@dataclass(frozen=True, slots=True)
class ProjectStatus:
    """Where one project's index stands, what it holds and how fresh it is (`GetStatusResponse`).

    When the state is not READY only `project_root`, `state`, `index_dir`, `watched` and `detail`
    (why, and what to run) are meaningful.
    """

    project_root: str
    state: ProjectState | None  # None only for a state a newer server sent that this version does not know
    index_dir: str = ""
    watched: bool = False
    files: int = 0
    chunks: int = 0
    vectors_pending: int = 0
    languages: Mapping[str, int] = field(default_factory=dict)  # files per language
    provider: str = ""
    model: str = ""
    dimension: int = 0
    chunker_version: str = ""
    last_indexed: datetime | None = None  # timezone-aware (UTC)
    changes: FileChanges | None = None  # None when the server did not count them
    detail: str = ""
    # Cloud embedding spend (None: the ledger has nothing, as with the local model), of this project
    # and of every project of the cache dir, and the warnings the thresholds call for.
    project_spend: SpendTotals | None = None
    total_spend: SpendTotals | None = None
    spend_warnings: tuple[str, ...] = ()
    watch_leases: int = 0  # live watch leases (clients that keep the project watched while they run)
    seed: SeedReport | None = None  # the index was seeded from the team store (ADR 0034)

    @property
    def indexed(self) -> bool:
        """The index is searchable."""
        return self.state is ProjectState.READY

    @property
    def files_changed_since(self) -> int:
        return self.changes.total if self.changes is not None else 0


@dataclass(frozen=True, slots=True)
class StatusRequest(Request["ProjectStatus"]):
    """Where one project's index stands (GetStatus). `brief`: only its state, its index's identity
    (provider, model, dimension) and whether it is watched, with no counts and no walk of the tree
    for changes: what a search asks before it runs."""

    project_root: str
    brief: bool = False

    def validate(self) -> StatusRequest:
        check_project_root(self.project_root)
        return self


@dataclass(frozen=True, slots=True)
class WatchProjectRequest(Request["WatchResult"]):
    """Keep one project's index fresh; `debounce_ms` None takes the server's setting."""

    project_root: str
    debounce_ms: int | None = None

    def validate(self) -> WatchProjectRequest:
        check_project_root(self.project_root)
        if self.debounce_ms is not None and not 0 <= self.debounce_ms <= MAX_DEBOUNCE_MS:
            raise InvalidRequestError(f"debounce_ms must be 0 to {MAX_DEBOUNCE_MS}, got {self.debounce_ms}")
        return self


@dataclass(frozen=True, slots=True)
class WatchResult:
    watched: bool  # the project is now watched
    already_watched: bool  # it was before the call


@dataclass(frozen=True, slots=True)
class UnwatchProjectRequest(Request["bool"]):
    """Stop watching a project; the answer says whether it was watched."""

    project_root: str

    def validate(self) -> UnwatchProjectRequest:
        check_project_root(self.project_root)
        return self


# A watch lease's holder: an id its client chooses once (a random one per MCP server process).
_HOLDER = re.compile(r"[A-Za-z0-9._-]{1,128}")


@dataclass(frozen=True, slots=True)
class WatchLeaseRequest(Request["WatchLease"]):
    """Take or renew a lease that keeps a project watched while its holder lives (RenewWatchLease)."""

    project_root: str
    holder: str
    ttl_s: float

    def validate(self) -> WatchLeaseRequest:
        check_project_root(self.project_root)
        if not _HOLDER.fullmatch(self.holder):
            raise InvalidRequestError(
                f"a lease holder is 1-128 characters of letters, digits, '-', '_' and '.'; got {self.holder[:40]!r}"
            )
        if not self.ttl_s > 0:
            raise InvalidRequestError(f"a lease's ttl must be positive, got {self.ttl_s}")
        return self


@dataclass(frozen=True, slots=True)
class WatchLease:
    """A lease as the server granted it: whether the project is watched now (and if not, why)."""

    project_root: str
    watched: bool
    ttl_s: float  # renew well before this passes
    leases: int  # live leases on the project, this one included
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ReleaseWatchLeaseRequest(Request["bool"]):
    """End `holder`'s lease on a project now; the answer says whether it had one."""

    project_root: str
    holder: str

    def validate(self) -> ReleaseWatchLeaseRequest:
        WatchLeaseRequest(self.project_root, self.holder, 1.0).validate()
        return self


@dataclass(frozen=True, slots=True)
class RemoveProjectRequest(Request["RemoveResult"]):
    """Delete a project's index (its index runs are cancelled first)."""

    project_root: str

    def validate(self) -> RemoveProjectRequest:
        check_project_root(self.project_root)
        return self


@dataclass(frozen=True, slots=True)
class RemoveResult:
    removed: bool  # an index existed and was removed
    bytes_freed: int


@dataclass(frozen=True, slots=True)
class CancelIndexRequest(Request["CancelResult"]):
    """Cancel a project's index runs (what they committed stays)."""

    project_root: str

    def validate(self) -> CancelIndexRequest:
        check_project_root(self.project_root)
        return self


@dataclass(frozen=True, slots=True)
class CancelResult:
    """What `CancelIndex` did: how many index runs of the project it cancelled, and whether they
    had all ended (their write lock released) when it answered."""

    cancelled: int
    stopped: bool


@dataclass(frozen=True, slots=True)
class ListProjectsRequest(Request["list[ProjectInfo]"]):
    """The projects a server has indexes for or watches, by root."""

    def validate(self) -> ListProjectsRequest:
        return self


@dataclass(frozen=True, slots=True)
class ProjectInfo:
    """One project a server knows about (`ListProjects`)."""

    project_root: str
    state: ProjectState | None  # None only for a state a newer server sent that this version does not know
    files: int = 0
    chunks: int = 0
    vectors_pending: int = 0
    watched: bool = False
    resident: bool = False  # its search snapshot is loaded in the server's memory
    last_indexed: datetime | None = None  # timezone-aware (UTC)
    index_dir: str = ""


# --- reading files, symbols, related code ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GetFileRequest(Request["FileSlice"]):
    """Read a file of a project, or lines of it. Lines are 1-based and inclusive; 0 means the first
    line (`start_line`) or the end of the file (`end_line`)."""

    project_root: str
    path: str  # relative to the project root, '/'-separated
    start_line: int = 0
    end_line: int = 0
    component: str = ""  # a released version instead of the working tree (SearchRequest)
    version: str = ""

    def validate(self) -> GetFileRequest:
        check_project_root(self.project_root)
        check_project_path(self.path)
        check_release(self.component, self.version)
        if self.start_line < 0 or self.end_line < 0:
            raise InvalidRequestError(
                f"lines are 1-based (0 for the whole file), got {self.start_line}-{self.end_line}"
            )
        _check_wire_int("start_line", self.start_line)
        _check_wire_int("end_line", self.end_line)
        if self.start_line and self.end_line and self.end_line < self.start_line:
            raise InvalidRequestError(f"end_line {self.end_line} is before start_line {self.start_line}")
        return self


@dataclass(frozen=True, slots=True)
class FileSlice:
    """Lines of a file as they are on disk now (`GetFileResponse`)."""

    path: str
    language: str  # "" when unknown
    content: str
    start_line: int
    end_line: int  # the last line in `content`
    total_lines: int  # lines in the whole file
    stale: bool = False  # the file changed on disk since it was indexed
    truncated: bool = False  # `content` was cut to the server's byte budget (at a line end)
    release: Release | None = None  # the version read, when the request named a component


@dataclass(frozen=True, slots=True)
class FindSymbolRequest(Request["list[SymbolMatch]"]):
    """Find definitions by name; filters as in SearchRequest (`kinds` empty means all)."""

    project_root: str
    name: str  # "verify" or qualified, "Auth.verify"
    limit: int | None = None
    kinds: tuple[ChunkKind, ...] = ()
    languages: tuple[str, ...] = ()
    path_glob: str | None = None

    def validate(self) -> FindSymbolRequest:
        check_project_root(self.project_root)
        _check_symbol(self.name)
        _check_limit(self.limit)
        return self


@dataclass(frozen=True, slots=True)
class SymbolMatch:
    """A definition found by name. Its signature is `location.signature`."""

    location: Location
    score: float  # higher is better; comparable within one answer
    exact: bool  # the name is the queried name exactly (not a typo-tolerant or partial match)


@dataclass(frozen=True, slots=True)
class ListFilesRequest(Request["FileList"]):
    """The files of a project's index; filters as in SearchRequest, `limit` None for all."""

    project_root: str
    path_glob: str | None = None
    languages: tuple[str, ...] = ()
    limit: int | None = None
    component: str = ""  # a released version instead of the working tree (SearchRequest)
    version: str = ""

    def validate(self) -> ListFilesRequest:
        check_project_root(self.project_root)
        check_release(self.component, self.version)
        if self.limit is not None and self.limit < 1:
            raise InvalidRequestError(f"limit must be 1 or more (None for all), got {self.limit}")
        if self.limit is not None:
            _check_wire_int("limit", self.limit)
        return self


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """One file of an index (`lgrep.v1.IndexedFile`)."""

    path: str  # relative to the project root, '/'-separated
    language: str
    content_type: ContentType | None  # None only for a type a newer server sent
    chunks: int
    last_line: int  # the last line its chunks cover


@dataclass(frozen=True, slots=True)
class FileList:
    files: tuple[IndexedFile, ...]  # by path, at most the request's limit
    total: int  # files that matched, including those the limit left out
    release: Release | None = None  # the version listed, when the request named a component


@dataclass(frozen=True, slots=True)
class FindRelatedRequest(Request["RelatedResult"]):
    """Find the chunks most related to the chunk that spans `line` of `path`."""

    project_root: str
    path: str  # relative to the project root, '/'-separated
    line: int  # 1-based
    limit: int | None = None

    def validate(self) -> FindRelatedRequest:
        check_project_root(self.project_root)
        check_project_path(self.path)
        if self.line < 1:
            raise InvalidRequestError(f"line must be 1 or more, got {self.line}")
        _check_wire_int("line", self.line)
        _check_limit(self.limit)
        return self


@dataclass(frozen=True, slots=True)
class RelatedResult:
    anchor: Location  # the chunk that spans the requested line
    related: tuple[SearchHit, ...]  # best first; never the anchor itself


# --- code structure -------------------------------------------------------------------------------

MAX_TRACE_DEPTH = 3
DEFAULT_TRACE_EDGES = 50


class TraceDirection(StrEnum):
    CALLERS = "callers"
    CALLEES = "callees"
    BOTH = "both"


class Resolution(StrEnum):
    """How a call edge was resolved. Values are stable (printed by `--json`)."""

    IMPORT = "import"  # through the caller file's imports to the file that defines the name
    LOCAL = "local"  # the same file, class or package defines the name
    NAME = "name"  # only the name matches (several candidates are listed, not guessed)


@dataclass(frozen=True, slots=True)
class SkeletonRequest(Request["Skeleton"]):
    project_root: str
    path: str  # relative to the project root, '/'-separated

    def validate(self) -> SkeletonRequest:
        check_project_root(self.project_root)
        check_project_path(self.path)
        return self


@dataclass(frozen=True, slots=True)
class Skeleton:
    """A file's structure: imports and signatures (with their docstrings' first lines), bodies
    elided with their line counts. Built from the file as it is on disk now.

    Tokens are counted with `tokenizer` (the embedding model's own); `tokens_saved` is what reading
    the skeleton instead of the whole file saves."""

    path: str
    language: str
    content: str
    definitions: tuple[Location, ...]  # every definition shown, in file order
    total_lines: int
    tokens: int
    file_tokens: int
    tokens_saved: int
    tokenizer: str


@dataclass(frozen=True, slots=True)
class TraceRequest(Request["TraceResult"]):
    """Callers and/or callees of the definitions named `symbol` ("verify", "Auth.verify"), `depth`
    hops out (1-3). `path` picks one file's definition when the name has several. `limit` edges
    from `offset` (ask again with the answer's `next_offset` for more). `resolve_imports=False`
    matches names only (how osgrep traces; for comparison)."""

    project_root: str
    symbol: str
    path: str = ""
    depth: int = 1
    direction: TraceDirection = TraceDirection.BOTH
    limit: int | None = None
    offset: int = 0
    resolve_imports: bool = True

    def validate(self) -> TraceRequest:
        check_project_root(self.project_root)
        _check_symbol(self.symbol)
        if self.path:
            check_project_path(self.path)
        if not 1 <= self.depth <= MAX_TRACE_DEPTH:
            raise InvalidRequestError(f"depth must be 1 to {MAX_TRACE_DEPTH}, got {self.depth}")
        if self.offset < 0:
            raise InvalidRequestError(f"offset must be 0 or more, got {self.offset}")
        _check_wire_int("offset", self.offset)
        _check_limit(self.limit)
        return self


@dataclass(frozen=True, slots=True)
class TraceEdge:
    """One call relation: `caller` calls `callee` at `path`:`line` (the first of `sites` call sites).
    When the called name has several definitions and nothing tells which, they are `candidates`
    and the trace does not go on through this edge: a callee is then None, and a caller's edge
    names the traced definition as its callee (the call may mean it, or one of the others). A
    call from a file's top level has a caller with an empty symbol."""

    direction: TraceDirection  # CALLERS or CALLEES: which way this edge was found
    depth: int  # 1 for the traced definitions' own callers/callees
    caller: Location
    callee: Location | None
    path: str
    line: int
    resolution: Resolution
    sites: int = 1
    candidates: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class TraceResult:
    symbol: str
    definitions: tuple[Location, ...]  # what was traced; several and `ambiguous`: listed, not traced
    ambiguous: bool
    edges: tuple[TraceEdge, ...]
    total: int  # edges found to this depth (from offset 0)
    next_offset: int  # 0: there are no more
    resolve_imports: bool = True


# --- servers ----------------------------------------------------------------------------------------


class ServerRole(StrEnum):
    """A service an lgrep server hosts besides ServerService."""

    INDEX = "index"
    SEARCH = "search"


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Who is answering (`GetServerInfoResponse`): the version handshake and diagnostics."""

    version: str
    contract_revision: int
    pid: int
    started_at: datetime | None  # timezone-aware (UTC)
    roles: tuple[ServerRole, ...]  # roles a newer server names that this version does not know are dropped
    cache_dir: str
    embedding_provider: str = ""
    embedding_model: str = ""
    embedding_dimension: int = 0
    resident_projects: int = 0
    unix_socket_path: str = ""  # "" when it listens on no unix socket
    tcp_host: str = ""  # "" when it listens on no TCP port
    tcp_port: int = 0
    models_loaded: int = 0  # embedding models (inference sessions) in its memory now
    watched_projects: tuple[str, ...] = ()  # absolute roots it watches, sorted; one watcher each


USE_CASES: tuple[type[Request[Any]], ...] = (
    SearchRequest,
    GetFileRequest,
    FindSymbolRequest,
    FindRelatedRequest,
    SkeletonRequest,
    TraceRequest,
    ListFilesRequest,
    ListComponentsRequest,
    ListVersionsRequest,
    StatusRequest,
    WatchProjectRequest,
    UnwatchProjectRequest,
    WatchLeaseRequest,
    ReleaseWatchLeaseRequest,
    ListProjectsRequest,
    RemoveProjectRequest,
    CancelIndexRequest,
)
"""Every use case an engine serves through `call` (indexing streams: `Engine.index`). An engine's
table that misses one fails its tests (tests/contract/test_engines.py)."""
