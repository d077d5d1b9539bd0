"""The shapes of the MCP tools' answers, derived from the one definition of each answer
(lgrep_core.app.shapes, which the CLI's `--json` prints too): each tool publishes one as its output
schema and returns it as structured content (the text content is the same object as compact JSON).

A derived answer keeps the core shape's field names, types and meanings; it may leave fields out
(an agent does not need a search's `timings_ms`), let a field be absent, put an agent's wording on a
field's description, and add fields it declares as its extensions (`tokens`, `uri`, ...): a TypedDict
here, listed in docs/json.md. A field that is neither the core shape's nor a declared extension
cannot appear: every answer model forbids other fields, and `derive` refuses an extension that
redefines a shared field (packages/lgrep-mcp/tests/test_answers.py checks every tool).
"""

import types
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar, NotRequired, Required, TypedDict, Union, get_args, get_origin
from typing import get_type_hints as _hints

from lgrep_core.app import shapes as core
from lgrep_core.app.shapes import Doc
from pydantic import BaseModel, ConfigDict, Field, create_model
from typing_extensions import is_typeddict

__all__ = [
    "ANSWERS",
    "Answer",
    "FileAnswer",
    "IndexAnswer",
    "RelatedAnswer",
    "ReleasesAnswer",
    "SearchAnswer",
    "StatusAnswer",
    "SymbolAnswer",
    "TraceAnswer",
    "UnwatchAnswer",
    "WatchAnswer",
    "derive",
]


class Answer(BaseModel):
    """A model derived from core shapes (`shapes`) plus declared extensions (`extensions`)."""

    model_config = ConfigDict(extra="forbid")
    shapes: ClassVar[tuple[type, ...]] = ()
    extensions: ClassVar[tuple[str, ...]] = ()


def _unwrap(hint: Any) -> tuple[Any, str | None]:
    """A TypedDict field's type without NotRequired/Required and Annotated, and its Doc's text."""
    if get_origin(hint) in (NotRequired, Required):
        hint = get_args(hint)[0]
    text = None
    if get_origin(hint) is Annotated:
        text = next((m.text for m in hint.__metadata__ if isinstance(m, Doc)), None)
        hint = hint.__origin__
    return hint, text


def _typeddicts(tp: Any) -> list[type]:
    """The TypedDicts a type mentions (`list[LocationJSON] | None` mentions one)."""
    if is_typeddict(tp):
        return [tp]
    return [t for arg in get_args(tp) for t in _typeddicts(arg)]


def _covers(model: type[Answer], shape: type) -> bool:
    """Whether `model` is derived from `shape`, or from a shape holding all of `shape`'s fields."""
    if shape in model.shapes:
        return True
    wanted = _hints(shape, include_extras=True)
    have: dict[str, Any] = {}
    for s in model.shapes:
        have.update(_hints(s, include_extras=True))
    return all(k in have and _unwrap(have[k])[0] == _unwrap(v)[0] for k, v in wanted.items())


_DEFAULT: dict[type, type[Answer]] = {}


def _convert(tp: Any, item: type[Answer] | None) -> Any:
    """`tp` with each core shape in it replaced by its answer model: `item` where given (it must be
    derived from that shape), else the shape's plain derivation."""
    if is_typeddict(tp):
        if item is not None:
            if not _covers(item, tp):
                raise TypeError(f"{item.__name__} is not derived from {tp.__name__}")
            return item
        if tp not in _DEFAULT:
            _DEFAULT[tp] = derive(tp.__name__.removesuffix("JSON") + "Out", tp)
        return _DEFAULT[tp]
    origin = get_origin(tp)
    if origin is None:
        return tp
    args = tuple(_convert(a, item) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return Union[args]  # noqa: UP007  # a union built from a tuple of types
    return origin[args[0] if len(args) == 1 else args]


def derive(
    name: str,
    *shapes: type,
    omit: Iterable[str] = (),
    optional: Iterable[str] = (),
    items: Mapping[str, type[Answer]] | None = None,
    describe: Mapping[str, str] | None = None,
    extensions: type | None = None,
) -> type[Answer]:
    """An answer model named `name` from core `shapes` (their fields in order; a field two shapes
    share must have one type in both): without the `omit` fields, with the `optional` ones allowed
    to be absent, the nested shapes of the fields in `items` given as those answer models (each
    derived from the shape it replaces), descriptions reworded by `describe`, and the fields of the
    `extensions` TypedDict added. An extension may repeat a shared field only with its type."""
    omit, optional = set(omit), set(optional)
    items, describe = dict(items or {}), dict(describe or {})
    hints: dict[str, Any] = {}
    required: dict[str, bool] = {}
    for shape in shapes:
        for key, hint in _hints(shape, include_extras=True).items():
            if key in omit:
                continue
            if key in hints:
                if key not in items and _unwrap(hints[key])[0] != _unwrap(hint)[0]:
                    raise TypeError(f"{name}: {key} has two types in {', '.join(s.__name__ for s in shapes)}")
                continue
            hints[key] = hint
            required[key] = key in shape.__required_keys__ and key not in optional  # type: ignore[attr-defined]
    added: list[str] = []
    if extensions is not None:
        for key, hint in _hints(extensions, include_extras=True).items():
            if key in hints:
                if _unwrap(hints[key])[0] != _unwrap(hint)[0]:
                    raise TypeError(f"{name}: extension {key} redefines a field of {hints[key]}")
                continue
            hints[key] = hint
            required[key] = key in extensions.__required_keys__ and key not in optional  # type: ignore[attr-defined]
            added.append(key)
    named = omit | optional | set(items) | set(describe)
    every = {k for s in shapes for k in _hints(s)} | set(hints)
    if named - every:
        raise TypeError(f"{name}: no field {', '.join(sorted(named - every))}")
    fields: dict[str, Any] = {}
    for key, hint in hints.items():
        tp, text = _unwrap(hint)
        tp = _convert(tp, items.get(key))
        text = describe.get(key, text)
        fields[key] = (tp, Field(description=text)) if required[key] else (tp | None, Field(None, description=text))
    model: type[Answer] = create_model(name, __base__=Answer, __module__=__name__, **fields)
    model.shapes = shapes
    model.extensions = tuple(added)
    return model


# --- the extensions: what an MCP answer adds to the shared shapes -----------------------------------------


class Budget(TypedDict):
    """Every answer cut to a token budget (ADR 0011) says so, and may carry a receipt (ADR 0025)."""

    tokens: Annotated[int, Doc("Tokens in this answer (cl100k_base), this count included")]
    max_tokens: Annotated[int, Doc("The budget it was cut to fit (pass max_tokens for more)")]
    notes: NotRequired[Annotated[list[str], Doc("Anything the agent should know: what was left out and how to get it")]]
    omitted: NotRequired[Annotated[int, Doc("Results left out to fit max_tokens")]]
    receipt: NotRequired[Annotated[core.ReceiptSumsJSON, Doc("Tokens saved against reading the files whole")]]


class Resource(TypedDict):
    uri: NotRequired[
        Annotated[str | None, Doc("The file as an MCP resource (lgrep://file/...); null outside this project")]
    ]


class SearchExtensions(Budget):
    stale_files: Annotated[list[str], Doc("Result files changed since they were indexed")]
    indexing: NotRequired[
        Annotated[
            core.IndexProgressJSON, Doc("Set while the project's first index is still being built: how far it is")
        ]
    ]


class FileExtensions(Budget):
    skeleton: NotRequired[Annotated[bool, Doc("content is the file's skeleton, not its lines")]]


class EdgeExtensions(TypedDict):
    others: NotRequired[
        Annotated[int, Doc("Other definitions of the called name (the call may mean one of them; not listed)")]
    ]


class IndexExtensions(TypedDict):
    project_root: Annotated[str, Doc("The project indexed (absolute)")]
    done: Annotated[bool, Doc("The run finished (the project is searchable by words and names)")]
    summary: NotRequired[Annotated[core.IndexSummaryJSON, Doc("What the run did, when done")]]
    progress: NotRequired[Annotated[core.IndexProgressJSON, Doc("How far it is, when not done")]]
    notes: NotRequired[Annotated[list[str], Doc("Anything the agent should know")]]


class StatusExtensions(TypedDict):
    stale: Annotated[bool, Doc("Some files changed since the last index (lgrep_index or a watch fixes it)")]


# --- the answers -----------------------------------------------------------------------------------------

_READ_AGAIN = "The file changed on disk since it was indexed: re-read it with lgrep_get_file"

Receipt = derive("Receipt", core.ReceiptSumsJSON, omit=("calls", "tokens_returned"))
Location = derive("Location", core.LocationJSON)
# A trace edge's ends: where the definition starts and its qualified name (`scope`; the rest is one
# lgrep_find_symbol or lgrep_get_file away), so an answer holds many edges. The caller is in the
# file of the call site (the edge's `path`), so its place leaves the path out.
Place = derive("Place", core.LocationJSON, omit=("end_line", "symbol", "kind", "language", "signature"))
CallerPlace = derive(
    "CallerPlace", core.LocationJSON, omit=("path", "end_line", "symbol", "kind", "language", "signature")
)
SearchResult = derive(
    "SearchResult",
    core.ProjectSearchHitJSON,
    omit=("signals",),
    optional=("project_root",),
    describe={
        "stale": _READ_AGAIN,
        "truncated": "The snippet is shorter than the chunk (lgrep_get_file reads the rest)",
        "content": "The snippet: the chunk's first lines",
    },
    extensions=Resource,
)
FileResult = derive(
    "FileResult",
    core.ProjectFileHitJSON,
    optional=("project_root",),
    describe={"ranges": "The lines to read first, best first (lgrep_get_file reads them)"},
    extensions=Resource,
)
ProjectPart = derive(
    "ProjectPart",
    core.ProjectPartJSON,
    omit=("query_kind", "search_type", "timings_ms", "chunks_searched", "vectors_pending", "notes"),
)

SearchAnswer = derive(
    "SearchAnswer",
    core.SearchJSON,
    core.ProjectsSearchJSON,
    omit=("query", "query_kind", "search_type", "timings_ms", "chunks_searched"),
    optional=("files", "projects", "notes", "vectors_pending"),
    items={"results": SearchResult, "files": FileResult, "projects": ProjectPart, "receipt": Receipt},
    describe={
        "project_root": "The project whose index answered (absolute); paths are relative to it ('' with projects: "
        "each result names its own)",
        "results": "Best first (empty with files=true)",
        "files": "With files=true: the files to open, best first",
    },
    extensions=SearchExtensions,
)

IndexAnswer = derive(
    "IndexAnswer",
    items={"summary": derive("IndexSummary", core.IndexSummaryJSON, omit=("project_root",))},
    extensions=IndexExtensions,
)
StatusAnswer = derive("StatusAnswer", core.StatusJSON, extensions=StatusExtensions)
WatchAnswer = derive("WatchAnswer", core.WatchJSON)
UnwatchAnswer = derive("UnwatchAnswer", core.UnwatchJSON)

FileAnswer = derive(
    "FileAnswer",
    core.FileSliceJSON,
    core.SkeletonJSON,
    omit=("project_root", "definitions"),
    optional=("skeleton_tokens", "file_tokens", "tokens_saved", "tokenizer"),
    items={"receipt": Receipt},
    describe={
        "content": "The lines, as the file is on disk now (secrets redacted); with skeleton=true its skeleton",
        "truncated": "content stops before the lines asked for (notes name the next call)",
    },
    extensions=FileExtensions,
)

ReleasesAnswer = derive(
    "ReleasesAnswer",
    core.ComponentsJSON,
    core.VersionsJSON,
    core.FileListJSON,
    omit=("component",),
    optional=("components", "versions", "files", "total"),
    items={"receipt": Receipt},
    describe={
        "components": "Without component: every component",
        "versions": "With component: its versions, newest first",
        "files": "With component and version: its files, by path",
        "release": "With component and version: the version listed",
        "total": "Components, versions or files in all (some may be left out to fit)",
    },
    extensions=Budget,
)

SymbolAnswer = derive(
    "SymbolAnswer",
    core.SymbolsJSON,
    omit=("query",),
    items={"matches": derive("SymbolMatch", core.SymbolMatchJSON, extensions=Resource), "receipt": Receipt},
    extensions=Budget,
)

RelatedAnswer = derive(
    "RelatedAnswer",
    core.RelatedJSON,
    items={"anchor": Location, "related": SearchResult, "receipt": Receipt},
    extensions=Budget,
)

TraceEdge = derive(
    "TraceEdge",
    core.TraceEdgeJSON,
    items={"caller": CallerPlace, "callee": Place, "candidates": Place},
    describe={
        "caller": "The calling definition, in the call site's file: its first line and qualified name "
        "(scope; [] at the top level)",
        "callee": "The called definition: file, first line and qualified name (scope); null if unknown",
        "candidates": "The definitions the called name could mean, up to 5 (not followed)",
    },
    extensions=EdgeExtensions,
)
TraceAnswer = derive(
    "TraceAnswer",
    core.TraceJSON,
    items={"edges": TraceEdge, "definitions": Location, "receipt": Receipt},
    describe={"next_offset": "Call again with offset=next_offset for more; 0: no more"},
    extensions=Budget,
)

ANSWERS: dict[str, type[Answer]] = {
    "lgrep_search": SearchAnswer,
    "lgrep_index": IndexAnswer,
    "lgrep_status": StatusAnswer,
    "lgrep_watch_start": WatchAnswer,
    "lgrep_watch_stop": UnwatchAnswer,
    "lgrep_get_file": FileAnswer,
    "lgrep_trace": TraceAnswer,
    "lgrep_releases": ReleasesAnswer,
    "lgrep_find_symbol": SymbolAnswer,
    "lgrep_find_related": RelatedAnswer,
}
"""Each tool's answer model (its output schema)."""
