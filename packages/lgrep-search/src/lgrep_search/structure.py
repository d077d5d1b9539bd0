"""Callers, callees and related code, from the definitions and references stored with each chunk.

`CodeGraph` is built from a snapshot (once per snapshot, on first use): every definition, every call
site with the definition it sits in, and every file's imports. A call is resolved when it is asked
about, against the files the snapshot holds, in this order (ADR 0016):

1. `self.f()` / `this.f()`: a method of the caller's own class (LOCAL);
2. the name, or the first part of the receiver, is bound by an import of the calling file: the
   imported file's definition (IMPORT), following re-exports a few hops; an import of a module the
   project does not hold (a library, the standard library) makes the call external: no edge;
3. the calling file (or Go package / Java package folder) defines the name (LOCAL);
4. otherwise every definition of that name in the same language family (NAME); more than one is
   ambiguous: listed as candidates, never followed.

With `resolve_imports=False` only step 4 runs: names alone, as osgrep traces.
"""

from __future__ import annotations

import bisect
import math
import posixpath
import re
import threading
import weakref
from collections import defaultdict
from dataclasses import dataclass, field, replace

from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.models import (
    DEFAULT_TRACE_EDGES,
    ChunkKind,
    Location,
    MatchType,
    Resolution,
    TraceDirection,
    TraceEdge,
    TraceRequest,
    TraceResult,
)
from lgrep_core.domain.structure import IMPORT_ALL, Definition, Reference, RefKind, parse_entries

from .corpus import Corpus
from .fuzzy import symbol_parts
from .languages import (
    EXPLICIT_SELF,
    PACKAGE_FOLDERS,
    SELF_RECEIVERS,
    ProjectFiles,
    builtin_names,
    family,
    find_module,
)

__all__ = ["CodeGraph", "graph_of", "related_by_structure", "trace"]

MAX_EDGES = 5000  # edges a trace collects before paging (the rest is not counted)
MAX_CANDIDATES = 8  # of an ambiguous call, at most this many definitions are listed
_REEXPORT_HOPS = 3
_NAME_CHAIN = re.compile(r"[\w$]+(?:(?:\.|::|->)[\w$]+)*\Z")
_CALLABLE = frozenset({"function", "method", "class", "module"})


@dataclass(slots=True)
class _Def:
    name: str
    file: int
    line: int
    end_line: int
    scope: tuple[str, ...]
    kind: str
    chunk: int


@dataclass(slots=True)
class _Call:
    name: str
    qualifier: str
    file: int
    line: int
    caller: int  # the innermost definition around the call, -1 at a file's top level
    chunk: int


@dataclass(slots=True)
class _Import:
    module: str
    member: str
    line: int


@dataclass(slots=True)
class _File:
    path: str
    language: str
    defs: list[int] = field(default_factory=list[int])  # sorted by line
    def_lines: list[int] = field(default_factory=list[int])  # their lines, for bisecting
    imports: dict[str, list[_Import]] = field(default_factory=dict[str, list[_Import]])
    star: list[_Import] = field(default_factory=list[_Import])


class CodeGraph:
    """Definitions, call sites and imports of one snapshot, with resolution on demand."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.defs: list[_Def] = []
        self.calls: list[_Call] = []
        self.files: list[_File] = [_File(p, "") for p in corpus.files]
        self.defs_by_name: dict[str, list[int]] = defaultdict(list)
        self.calls_by_name: dict[str, list[int]] = defaultdict(list)
        self.calls_by_caller: dict[int, list[int]] = defaultdict(list)
        self.calls_by_chunk: dict[int, list[int]] = defaultdict(list)
        self.defs_by_chunk: dict[int, list[int]] = defaultdict(list)
        self.names_by_chunk: dict[int, frozenset[str]] = {}
        self.chunks_by_name: dict[str, list[int]] = defaultdict(list)
        self.project = ProjectFiles(corpus.files)
        self._resolved: dict[tuple[int, bool], tuple[tuple[int, ...], Resolution | None]] = {}
        self._modules: dict[tuple[int, str], tuple[int, ...] | None] = {}
        pending: list[tuple[int, int, Reference]] = []
        for i in range(len(corpus)):
            text = corpus.refs[i]
            if not text:
                continue
            f = int(corpus.file_of[i])
            file = self.files[f]
            file.language = corpus.languages[i]
            names: set[str] = set()
            for entry in parse_entries(text):
                if isinstance(entry, Definition):
                    self.defs.append(_Def(entry.name, f, entry.line, entry.end_line, entry.scope, entry.kind, i))
                    continue
                if entry.kind is RefKind.IMPORT:
                    imp = _Import(entry.qualifier, entry.member, entry.line)
                    if entry.name == IMPORT_ALL:
                        file.star.append(imp)
                    else:
                        file.imports.setdefault(entry.name, []).append(imp)
                    names.add(entry.member or entry.name)
                else:
                    names.add(entry.name)
                    if entry.kind is RefKind.CALL:
                        pending.append((f, i, entry))
            if names:
                self.names_by_chunk[i] = frozenset(names)
                for n in names:
                    self.chunks_by_name[n].append(i)
        # names imports bind to something of another name (`import { a as b }`, `export { a as b }`)
        self._renamed = {
            local
            for file in self.files
            for local, imps in file.imports.items()
            if any(i.member not in ("", IMPORT_ALL, local) for i in imps)
        }
        for d, node in enumerate(self.defs):
            self.defs_by_name[node.name].append(d)
            self.defs_by_chunk[node.chunk].append(d)
            self.files[node.file].defs.append(d)
        for file in self.files:
            file.defs.sort(key=lambda d: (self.defs[d].line, -self.defs[d].end_line))
            file.def_lines = [self.defs[d].line for d in file.defs]
        for f, i, ref in pending:
            c = len(self.calls)
            caller = self._innermost(f, ref.line)
            self.calls.append(_Call(ref.name, ref.qualifier, f, ref.line, caller, i))
            self.calls_by_name[ref.name].append(c)
            self.calls_by_caller[caller if caller >= 0 else -1 - f].append(c)
            self.calls_by_chunk[i].append(c)

    # ------------------------------------------------------------------------- lookups

    def _innermost(self, f: int, line: int) -> int:
        defs = self.files[f].defs
        k = bisect.bisect_right(self.files[f].def_lines, line)
        for j in range(k - 1, -1, -1):
            d = self.defs[defs[j]]
            if d.line <= line <= d.end_line:
                return defs[j]
        return -1

    def definitions(self, symbol: str, path: str = "") -> list[int]:
        """Definitions named `symbol` (`Auth.verify` also checks the enclosing scope), in `path` if given."""
        parts = symbol_parts(symbol)
        if not parts:
            return []
        name, quals = parts[-1], parts[:-1]
        out: list[int] = []
        for d in self.defs_by_name.get(name, ()):
            node = self.defs[d]
            if quals and list(node.scope[:-1][-len(quals) :]) != quals:
                continue
            if path and self.files[node.file].path != path:
                continue
            out.append(d)
        return sorted(out, key=lambda d: (self.files[self.defs[d].file].path, self.defs[d].line))

    def calls_in(self, d: int) -> list[int]:
        """Call sites inside definition `d`, nested definitions' own calls excluded."""
        return self.calls_by_caller.get(d, [])

    def location(self, d: int) -> Location:
        node = self.defs[d]
        file = self.files[node.file]
        return Location(
            path=file.path,
            start_line=node.line,
            end_line=node.end_line,
            symbol=node.name,
            kind=ChunkKind(node.kind) if node.kind in ChunkKind._value2member_map_ else None,
            language=file.language,
            scope=node.scope,
        )

    def caller_location(self, c: int) -> Location:
        call = self.calls[c]
        if call.caller >= 0:
            return self.location(call.caller)
        file = self.files[call.file]
        return Location(path=file.path, start_line=call.line, end_line=call.line, language=file.language)

    # ----------------------------------------------------------------------- resolution

    def resolve(self, c: int, *, imports: bool = True) -> tuple[tuple[int, ...], Resolution | None]:
        """The definitions call `c` may reach and how that was decided; ((), None) for none (a
        library call, a builtin, a name nothing defines)."""
        key = (c, imports)
        hit = self._resolved.get(key)
        if hit is None:
            targets, how = self._resolve(self.calls[c], imports)
            hit = (self.implementations(targets), how)
            self._resolved[key] = hit
        return hit

    def implementations(self, targets: tuple[int, ...]) -> tuple[int, ...]:
        """Overloads (one name, file and scope: `@overload` stubs, TypeScript overload signatures)
        are one target: the last, which is the implementation."""
        if len(targets) < 2:
            return targets
        last: dict[tuple[int, tuple[str, ...]], int] = {}
        for d in targets:
            node = self.defs[d]
            key = (node.file, node.scope)
            if key not in last or self.defs[last[key]].line < node.line:
                last[key] = d
        return tuple(sorted(last.values()))

    def _resolve(self, call: _Call, imports: bool) -> tuple[tuple[int, ...], Resolution | None]:
        name = call.name
        if name not in self.defs_by_name and (not imports or name not in self._renamed):
            return (), None
        if not imports:
            return self._by_name(call, shaped=False), Resolution.NAME
        file = self.files[call.file]
        qual = call.qualifier
        root = _first_segment(qual)
        if qual in SELF_RECEIVERS:
            cls = self.defs[call.caller].scope[:-1] if call.caller >= 0 else ()
            found = [
                d for d in self.defs_by_name[name] if self.defs[d].file == call.file and self.defs[d].scope[:-1] == cls
            ]
            if cls and found:
                return tuple(found), Resolution.LOCAL
            return self._by_name(call), Resolution.NAME
        if qual and not _NAME_CHAIN.match(qual):
            # `z.string().optional()`, `items[0].run()`: a value computed from a module or class,
            # not the module itself; its type is unknown
            return self._by_name(call), Resolution.NAME
        binding = file.imports.get(root if qual else name)
        if binding:
            # the import of that name nearest above the call (one inside the function wins)
            before = [i for i in binding if i.line <= call.line]
            imp = max(before, key=lambda i: i.line) if before else binding[-1]
            files = self._module_files(call.file, imp, qual)
            if files is None:
                return (), None  # a module outside the project: a library call
            member = imp.member if not qual else ""
            scope = imp.member if qual and imp.member and imp.member != IMPORT_ALL else ""
            found = self._defined_in(files, member or name, scope, hops=_REEXPORT_HOPS)
            if found:
                return tuple(found), Resolution.IMPORT
            return self._by_name(call), Resolution.NAME
        if not qual or self._defined_class(call.file, root):
            local = [d for d in self.defs_by_name.get(name, ()) if self.defs[d].file == call.file]
            if qual:  # `Foo.create()`: a member of this file's class Foo, or nothing local
                local = [d for d in local if root in self.defs[d].scope[:-1]]
            elif file.language in EXPLICIT_SELF:  # a bare `open()` is no method of this file's classes
                local = [d for d in local if self.defs[d].kind != "method"]
            if local:
                return tuple(local), Resolution.LOCAL
            package = self._package_files(call.file)
            if package:
                found = [d for d in self.defs_by_name[name] if self.defs[d].file in package]
                if found:
                    return tuple(found), Resolution.LOCAL
            for imp in file.star:
                files = self._module_files(call.file, imp, "")
                if files:
                    found = self._defined_in(files, name, "", hops=_REEXPORT_HOPS)
                    if found:
                        return tuple(found), Resolution.IMPORT
        return self._by_name(call), Resolution.NAME

    def _by_name(self, call: _Call, *, shaped: bool = True) -> tuple[int, ...]:
        """Definitions of the call's name in its language family. `shaped`: only those a call of
        that shape can reach — a bare `f()` no other class's method (in languages without an
        implicit `this`), `x.f()` no top-level function, and a bare call of a builtin nothing."""
        language = self.files[call.file].language
        own = family(language)
        qualified = bool(call.qualifier)
        if shaped and not qualified and call.name in builtin_names(own):
            return ()
        out: list[int] = []
        for d in self.defs_by_name.get(call.name, ()):
            node = self.defs[d]
            if family(self.files[node.file].language) != own or node.kind not in _CALLABLE:
                continue
            if shaped and qualified and len(node.scope) < 2 and node.kind != "class":
                continue  # `x.f()`: a member, not a top-level function (modules were resolved above)
            if shaped and not qualified and node.kind == "method" and language in EXPLICIT_SELF:
                continue
            out.append(d)
        return tuple(out)

    def _defined_class(self, f: int, name: str) -> bool:
        return any(
            self.defs[d].file == f and self.defs[d].kind in ("class", "module") for d in self.defs_by_name.get(name, ())
        )

    def _package_files(self, f: int) -> set[int]:
        """The other files of the same folder, in languages whose folder is a package (Go: one
        package; Java/Kotlin/Scala/C#/Swift: the same folder too)."""
        file = self.files[f]
        if file.language not in PACKAGE_FOLDERS:
            return set()
        return {g for g in self.project.dirs[posixpath.dirname(file.path)] if g != f}

    def _defined_in(self, files: tuple[int, ...], name: str, scope: str, *, hops: int) -> list[int]:
        """Definitions named `name` in `files`: members of class `scope` when given, else top-level
        ones (a member is never imported by its name). Follows the files' own imports of that name
        (re-exports, barrels, `export { a as b }`) up to `hops` times."""
        candidates = [d for d in self.defs_by_name.get(name, ()) if self.defs[d].file in files]
        if scope:
            found = [d for d in candidates if scope in self.defs[d].scope[:-1]]
            if not found:  # `from . import cli` then `cli.f()`: the "class" was a module
                found = [d for d in candidates if len(self.defs[d].scope) <= 1]
        else:
            found = [d for d in candidates if len(self.defs[d].scope) <= 1]
        if found or hops <= 0:
            return found
        target = scope or name
        for f in files:
            for imp in [*self.files[f].imports.get(target, ()), *self.files[f].star]:
                sub = self._module_files(f, imp, "")
                if not sub:
                    continue
                renamed = imp.member if imp.member not in ("", IMPORT_ALL, "default") else target
                if scope:
                    more = self._defined_in(sub, name, renamed, hops=hops - 1)
                else:
                    more = self._defined_in(sub, renamed, "", hops=hops - 1)
                if more:
                    return more
        return []

    def _module_files(self, f: int, imp: _Import, qual: str) -> tuple[int, ...] | None:
        """The project files an import names; None when it names none (a library), () if unknown."""
        key = (f, f"{imp.module}\x00{imp.member}\x00{qual}")
        if key in self._modules:
            return self._modules[key]
        found = find_module(self.project, f, self.files[f].language, imp.module, imp.member, qual=qual)
        self._modules[key] = found
        return found


def _first_segment(qual: str) -> str:
    for sep in ("::", ".", "->", ":"):
        qual = qual.split(sep, 1)[0]
    return qual


# ---------------------------------------------------------------------------------------- trace


def trace(corpus: Corpus, graph: CodeGraph, request: TraceRequest) -> TraceResult:
    """Callers and/or callees of `request.symbol` to `request.depth` hops, breadth first.

    Raises NotFoundError when nothing of that name is defined (with near names to try)."""
    roots = graph.definitions(request.symbol, request.path)
    if not roots:
        near = [m.name for m in corpus.symbol_index.match(request.symbol.split(".")[-1])][:5]
        where = f" in {request.path}" if request.path else ""
        hint = f"; near names: {', '.join(near)}" if near else ""
        raise NotFoundError(f"no definition of {request.symbol!r}{where} in the index{hint}")
    definitions = tuple(graph.location(d) for d in roots)
    if len(graph.implementations(tuple(roots))) > 1:  # overloads are one definition
        return TraceResult(request.symbol, definitions, True, (), 0, 0, request.resolve_imports)
    edges: list[TraceEdge] = []
    directions = (
        (TraceDirection.CALLERS, TraceDirection.CALLEES)
        if request.direction is TraceDirection.BOTH
        else (request.direction,)
    )
    for direction in directions:
        _walk(graph, roots, direction, request, edges)
    # What the code says first (either way, nearest first), then what only a name suggests: a
    # method name shared with a library's (`x.resolve()`) must not push a definite edge off the page.
    edges.sort(key=lambda e: (bool(e.candidates), e.depth))
    limit = request.limit or DEFAULT_TRACE_EDGES
    page = edges[request.offset : request.offset + limit]
    more = request.offset + limit < len(edges)
    return TraceResult(
        request.symbol,
        definitions,
        False,
        tuple(page),
        len(edges),
        request.offset + limit if more else 0,
        request.resolve_imports,
    )


def _walk(
    graph: CodeGraph, roots: list[int], direction: TraceDirection, request: TraceRequest, out: list[TraceEdge]
) -> None:
    imports = request.resolve_imports
    seen_nodes = set(roots)
    frontier = list(roots)
    seen_edges: dict[tuple[int, int], int] = {}  # (caller key, callee key) -> index in out
    for depth in range(1, request.depth + 1):
        following: list[int] = []
        for node in frontier:
            if direction is TraceDirection.CALLERS:
                found = _callers(graph, node, imports)
            else:
                found = _callees(graph, node, imports)
            for c, targets, how in found:
                call = graph.calls[c]
                ambiguous = len(targets) > 1
                first: int = targets[0]
                if direction is TraceDirection.CALLERS:
                    key = (call.caller if call.caller >= 0 else -1 - call.file, node)
                    nxt = call.caller
                else:
                    key = (node, -(10**9) - c if ambiguous else first)
                    nxt = -1 if ambiguous else first
                at = seen_edges.get(key)
                if at is not None:
                    out[at] = replace(out[at], sites=out[at].sites + 1)
                    continue
                if len(out) >= MAX_EDGES:
                    return
                seen_edges[key] = len(out)
                # Callers: the callee is the definition traced, even when the call's name could mean
                # others too (they are the candidates). Callees: unknown when ambiguous.
                if direction is TraceDirection.CALLERS:
                    callee: Location | None = graph.location(node)
                else:
                    callee = None if ambiguous else graph.location(first)
                out.append(
                    TraceEdge(
                        direction=direction,
                        depth=depth,
                        caller=graph.caller_location(c),
                        callee=callee,
                        path=graph.files[call.file].path,
                        line=call.line,
                        resolution=how,
                        candidates=tuple(graph.location(t) for t in targets[:MAX_CANDIDATES]) if ambiguous else (),
                    )
                )
                if not ambiguous and nxt >= 0 and nxt not in seen_nodes:
                    seen_nodes.add(nxt)
                    following.append(nxt)
        frontier = following
        if not frontier:
            break


def _callers(graph: CodeGraph, d: int, imports: bool) -> list[tuple[int, tuple[int, ...], Resolution]]:
    """Call sites that may reach definition `d`, resolved ones first."""
    node = graph.defs[d]
    out: list[tuple[int, tuple[int, ...], Resolution]] = []
    for c in graph.calls_by_name.get(node.name, ()):
        targets, how = graph.resolve(c, imports=imports)
        if how is not None and d in targets:
            out.append((c, targets if len(targets) > 1 else (d,), how))
    out.sort(
        key=lambda t: (
            len(t[1]) > 1,
            t[2] is Resolution.NAME,
            graph.files[graph.calls[t[0]].file].path,
            graph.calls[t[0]].line,
        )
    )
    return out


def _callees(graph: CodeGraph, d: int, imports: bool) -> list[tuple[int, tuple[int, ...], Resolution]]:
    out: list[tuple[int, tuple[int, ...], Resolution]] = []
    for c in graph.calls_in(d):
        targets, how = graph.resolve(c, imports=imports)
        if how is not None and targets:
            out.append((c, targets, how))
    out.sort(key=lambda t: (len(t[1]) > 1, graph.calls[t[0]].line))
    return out


# ------------------------------------------------------------------------------------ snapshots

_graphs: weakref.WeakKeyDictionary[Corpus, CodeGraph] = weakref.WeakKeyDictionary()
_graphs_lock = threading.Lock()


def graph_of(corpus: Corpus) -> CodeGraph:
    """The graph of a snapshot, built on first use and kept with it.

    Raises NotFoundError when the index holds no structure (built by an lgrep before it stored it)."""
    with _graphs_lock:
        graph = _graphs.get(corpus)
    if graph is None:
        # built outside the lock: one project's first trace does not hold up another's
        built = CodeGraph(corpus)
        with _graphs_lock:
            graph = _graphs.setdefault(corpus, built)
    if not graph.defs and not graph.calls and len(corpus):
        raise NotFoundError(
            "this index has no code structure yet (it was built by an older lgrep): run `lgrep index` to add it"
        )
    return graph


# -------------------------------------------------------------------------------------- related

NAMES_MAX_SHARERS = 60  # a name referenced by more chunks than this relates nothing (`get`, `len`)


def related_by_structure(graph: CodeGraph, anchor: int) -> dict[int, tuple[float, set[MatchType]]]:
    """Chunks related to chunk `anchor` by the call graph and by the names they reference, each with
    a score in 0..1 and the relations that found it. Calls count when they resolve to one definition."""
    found: dict[int, tuple[float, set[MatchType]]] = {}

    def add(chunk: int, score: float, how: MatchType) -> None:
        if chunk == anchor:
            return
        old, hows = found.get(chunk, (0.0, set()))
        found[chunk] = (max(old, score), hows | {how})

    for d in graph.defs_by_chunk.get(anchor, ()):
        for c, targets, how in _callers(graph, d, True):
            if len(targets) == 1:
                add(graph.calls[c].chunk, 1.0 if how is not Resolution.NAME else 0.8, MatchType.CALLER)
    for c in graph.calls_by_chunk.get(anchor, ()):
        targets, how = graph.resolve(c)
        if how is not None and len(targets) == 1:
            add(graph.defs[targets[0]].chunk, 1.0 if how is not Resolution.NAME else 0.8, MatchType.CALLEE)
    names = graph.names_by_chunk.get(anchor, frozenset())
    weights: dict[str, float] = {}
    for n in names:
        sharers = len(graph.chunks_by_name.get(n, ()))
        if 1 < sharers <= NAMES_MAX_SHARERS:
            weights[n] = math.log(1 + NAMES_MAX_SHARERS / sharers)
    total = sum(weights.values())
    if total > 0:
        overlap: dict[int, float] = defaultdict(float)
        for n, w in weights.items():
            for chunk in graph.chunks_by_name[n]:
                overlap[chunk] += w
        for chunk, w in overlap.items():
            share = w / total
            if share >= 0.2:
                add(chunk, 0.9 * share, MatchType.SHARED_NAMES)
    return found
