"""Fake lgrep services for tests: every RPC of the lgrep.v1 contract answered from fixed data, served
by a real gRPC server as `lgrep serve` runs them (ErrorInterceptor, TokenAuthInterceptor, health and
reflection, a private unix socket and a loopback TCP port that needs the token).

The fake records what it was asked and fails on purpose for a few marked inputs (`BUSY_ROOT`,
`MISSING_ROOT`, `BOOM_PATH`, ...), so clients (lgrep_core.rpc.client, the MCP server, the CLI) can test
conversions, error mapping, auth and streaming end to end without an index or a model.

    with serve_fakes(Path(tempfile.mkdtemp(dir="/tmp"))) as running:
        client = LgrepClient.connect(socket_path=running.socket_path)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from lgrep.v1 import index_pb2_grpc, search_pb2_grpc, server_pb2_grpc

from lgrep_core.domain import errors
from lgrep_core.domain.models import (
    CancelResult,
    ChunkKind,
    ComponentInfo,
    ContentType,
    FileChanges,
    FileHit,
    FileList,
    FileSlice,
    IndexedFile,
    IndexPhase,
    IndexProgress,
    IndexSummary,
    LineRange,
    Location,
    MatchType,
    ProjectInfo,
    ProjectState,
    ProjectStatus,
    RelatedResult,
    Release,
    RemoveResult,
    Resolution,
    SearchHit,
    SearchResponse,
    ServerInfo,
    ServerRole,
    Skeleton,
    SpendTotals,
    SymbolMatch,
    TraceDirection,
    TraceEdge,
    TraceResult,
    WatchLease,
    WatchResult,
)
from lgrep_core.rpc import grpc_interceptors, grpc_server_setup, grpc_support, grpc_tokens, wire

STARTED = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
BUSY_ROOT = "/srv/busy"  # IndexProject / Search on it fail with IndexBusyError
MISSING_ROOT = "/srv/missing"  # every call on it fails with NotFoundError
NO_SUMMARY_ROOT = "/srv/no-summary"  # IndexProject ends without a summary (a broken server)
SLOW_ROOT = "/srv/slow"  # IndexProject streams one event, then waits until the client cancels
BOOM_PATH = "boom.py"  # GetFile on it raises a plain RuntimeError (a server bug)
HANG_LINE = 999  # FindRelated on it blocks until the test releases it (deadline tests)


def hit(path: str = "src/auth.py", score: float = 0.9) -> SearchHit:
    return SearchHit(
        path=path,
        start_line=1,
        end_line=4,
        symbol="verify",
        kind=ChunkKind.FUNCTION,
        language="python",
        score=score,
        content="def verify(token): ...",
        match=(MatchType.BM25, MatchType.VECTOR),
    )


__all__ = [
    "BOOM_PATH",
    "BUSY_ROOT",
    "HANG_LINE",
    "MISSING_ROOT",
    "NO_SUMMARY_ROOT",
    "SERVICE_NAMES",
    "SLOW_ROOT",
    "FakeLgrep",
    "RunningServer",
    "add_fake_services",
    "serve_fakes",
]


@dataclass
class FakeLgrep:
    """The services of an lgrep server, from fixed data. Servicer methods raise LgrepErrors and let
    ErrorInterceptor map them, except UnwatchProject, which aborts itself (abort_with_error)."""

    contract_revision: int = wire.CONTRACT_REVISION
    requests: list[tuple[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    hanging: threading.Event = field(default_factory=threading.Event)
    watched: set[str] = field(default_factory=set)

    def _seen(self, name: str, request: Any) -> Any:
        self.requests.append((name, request))
        root = request if isinstance(request, str) else getattr(request, "project_root", "")
        if root == MISSING_ROOT:
            raise errors.NotFoundError(f"{root} has no index yet: run `lgrep index {root}`")
        return request

    # ServerService
    def GetServerInfo(self, request: Any, context: grpc.ServicerContext) -> Any:
        info = ServerInfo(
            version="0.1.0",
            contract_revision=self.contract_revision,
            pid=1234,
            started_at=STARTED,
            roles=(ServerRole.INDEX, ServerRole.SEARCH),
            cache_dir="/home/dev/.cache/lgrep",
            embedding_provider="local",
            embedding_model="all-MiniLM-L6-v2",
            embedding_dimension=384,
            resident_projects=1,
            unix_socket_path="/home/dev/.cache/lgrep/lgrep.sock",
            models_loaded=1,
            watched_projects=("/home/dev/project",),
        )
        return wire.server_info_to_proto(info)

    # SearchService
    def Search(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("Search", wire.search_request_from_proto(request))
        if req.project_root == BUSY_ROOT:
            raise errors.IndexBusyError(f"{req.project_root} is being indexed by pid 77; try again when it is done")
        if req.path_glob == "[":
            raise errors.InvalidRequestError("path_glob '[' is not a valid glob: unclosed '['")
        response = SearchResponse(
            results=[hit(), hit("src/session.py", 0.5)],
            timings_ms={"total_ms": 3.5},
            chunks_searched=40,
            vectors_pending=0,
            query_kind="natural",
            search_type=req.search_type,
        )
        # A server before revision 8 knows no `files` and answers with chunks, as this one then does.
        if req.files and self.contract_revision >= 8:
            ranges = (LineRange(1, 4, "verify"), LineRange(10, 20))
            files = [
                FileHit("src/auth.py", 0.05, "python", ranges, why=("defines verify",)),
                FileHit("src/session.py", 0.02, "python", ()),
            ]
            response = replace(response, results=[], files=files)
        return wire.search_response_to_proto(response)

    def GetFile(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("GetFile", wire.get_file_request_from_proto(request))
        if req.path == BOOM_PATH:
            raise RuntimeError("the fake failed on purpose")
        lines = [f"line {n}\n" for n in range(1, 11)]
        start = req.start_line or 1
        end = min(req.end_line or len(lines), len(lines))
        content = "".join(lines[start - 1 : end])
        return wire.file_slice_to_proto(FileSlice(req.path, "python", content, start, end, len(lines), stale=True))

    def FindSymbol(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("FindSymbol", wire.find_symbol_request_from_proto(request))
        location = Location(
            "src/auth.py", 1, 4, req.name, ChunkKind.FUNCTION, "python", (req.name,), f"def {req.name}():"
        )
        matches = [
            SymbolMatch(location, 1.0, True),
            SymbolMatch(Location("src/b.py", 9, 9, req.name + "s"), 0.4, False),
        ]
        return wire.find_symbol_response_to_proto(matches[: req.limit or None])

    def ListFiles(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("ListFiles", wire.list_files_request_from_proto(request))
        files = [
            IndexedFile("README.md", "markdown", ContentType.DOCS, 2, 30),
            IndexedFile("src/auth.py", "python", ContentType.CODE, 3, 40),
        ]
        return wire.list_files_response_to_proto(FileList(tuple(files[: req.limit or None]), len(files)))

    def ListComponents(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._seen("ListComponents", request.project_root)
        return wire.list_components_response_to_proto([ComponentInfo("agent", 2, "0.7.3")])

    def ListVersions(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = wire.list_versions_request_from_proto(request)
        component = req.component
        self._seen("ListVersions", req.project_root)
        releases = [Release(component, v, f"{component}-v{v}", files=3) for v in ("0.7.3", "0.7.2")]
        return wire.list_versions_response_to_proto(releases)

    def FindRelated(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("FindRelated", wire.find_related_request_from_proto(request))
        if req.line == HANG_LINE:
            self.hanging.set()
            self.release.wait(30)
        anchor = Location(req.path, req.line, req.line + 3, "verify", ChunkKind.FUNCTION, "python")
        return wire.related_result_to_proto(RelatedResult(anchor, (hit("src/jwt.py"),)))

    def GetSkeleton(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("GetSkeleton", wire.skeleton_request_from_proto(request))
        definition = Location(req.path, 3, 9, "verify", ChunkKind.FUNCTION, "python", ("verify",), "def verify(t)")
        return wire.skeleton_to_proto(
            Skeleton(req.path, "python", "def verify(t):\n    ⋯ 6 lines (L4-9)\n", (definition,), 9, 8, 40, 32, "fake")
        )

    def Trace(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("Trace", wire.trace_request_from_proto(request))
        verify = Location("src/jwt.py", 3, 9, "verify", ChunkKind.FUNCTION, "python", ("verify",))
        login = Location("src/app.py", 10, 20, "login", ChunkKind.FUNCTION, "python", ("login",))
        edge = TraceEdge(TraceDirection.CALLERS, 1, login, verify, "src/app.py", 12, Resolution.IMPORT)
        return wire.trace_result_to_proto(TraceResult(req.symbol, (verify,), False, (edge,), 1, 0))

    # IndexService
    def IndexProject(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        req = self._seen("IndexProject", wire.index_project_request_from_proto(request))
        if req.project_root == SLOW_ROOT and not context.add_callback(self.cancelled.set):
            self.cancelled.set()  # the call already ended
        yield wire.index_event_to_proto(IndexProgress(IndexPhase.WALK))
        if req.project_root == BUSY_ROOT:
            raise errors.IndexBusyError(f"another lgrep (pid 77) is indexing {req.project_root}")
        if req.project_root == SLOW_ROOT:
            self.release.wait(30)  # until the test ends; the client cancels long before
            return
        yield wire.index_event_to_proto(IndexProgress(IndexPhase.CHUNK, 1, 2, 5, 0, rate=10.0))
        yield wire.index_event_to_proto(IndexProgress(IndexPhase.EMBED, 2, 2, 5, 10, rate=2.5, eta_seconds=2.0))
        if req.project_root == NO_SUMMARY_ROOT:
            return
        yield wire.index_event_to_proto(
            IndexSummary(
                root=req.project_root,
                files_seen=2,
                files_indexed=2,
                skipped={"binary": 1},
                chunks_written=10,
                chunks_total=10,
                vectors_embedded=10 if req.wait_for_vectors else 0,
                vectors_pending=0 if req.wait_for_vectors else 10,
                seconds_bm25=0.5,
                seconds_vectors=1.5,
                created=req.force,
            )
        )

    def GetStatus(self, request: Any, context: grpc.ServicerContext) -> Any:
        root = self._seen("GetStatus", wire.get_status_request_from_proto(request).project_root)
        status = ProjectStatus(
            project_root=root,
            state=ProjectState.READY,
            index_dir="/home/dev/.cache/lgrep/0123456789ab",
            watched=root in self.watched,
            files=2,
            chunks=10,
            languages={"python": 2},
            provider="local",
            model="all-MiniLM-L6-v2",
            dimension=384,
            chunker_version="2",
            last_indexed=STARTED,
            changes=FileChanges(added=1),
            project_spend=SpendTotals(tokens=1200, requests=2, cost_usd=0.000216),
            total_spend=SpendTotals(tokens=30_000_000, requests=90, cost_usd=5.4),
            spend_warnings=("cloud embedding spend has passed $5.00: about $5.40 so far",),
        )
        return wire.project_status_to_proto(status)

    def WatchProject(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("WatchProject", wire.watch_project_request_from_proto(request))
        already = req.project_root in self.watched
        self.watched.add(req.project_root)
        return wire.watch_result_to_proto(WatchResult(watched=True, already_watched=already))

    def UnwatchProject(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            root = self._seen("UnwatchProject", wire.unwatch_project_request_from_proto(request).project_root)
        except errors.LgrepError as exc:
            grpc_interceptors.abort_with_error(context, exc)
        was = root in self.watched
        self.watched.discard(root)
        return wire.unwatch_result_to_proto(was)

    def ListProjects(self, request: Any, context: grpc.ServicerContext) -> Any:
        projects = [
            ProjectInfo("/a", ProjectState.READY, 2, 10, 0, watched=True, resident=True, last_indexed=STARTED),
            ProjectInfo("/b", ProjectState.INTERRUPTED, index_dir="/c/b"),
        ]
        return wire.list_projects_response_to_proto(projects)

    def RemoveProject(self, request: Any, context: grpc.ServicerContext) -> Any:
        root = self._seen("RemoveProject", wire.remove_project_request_from_proto(request).project_root)
        return wire.remove_result_to_proto(RemoveResult(removed=True, bytes_freed=4096 if root else 0))

    def RenewWatchLease(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = self._seen("RenewWatchLease", wire.watch_lease_request_from_proto(request))
        self.watched.add(req.project_root)
        return wire.watch_lease_to_proto(WatchLease(req.project_root, watched=True, ttl_s=req.ttl_s, leases=1))

    def ReleaseWatchLease(self, request: Any, context: grpc.ServicerContext) -> Any:
        req = wire.watch_lease_release_from_proto(request)
        root, _holder = self._seen("ReleaseWatchLease", (req.project_root, req.holder))
        was = root in self.watched
        self.watched.discard(root)
        return wire.watch_lease_released_to_proto(was)

    def CancelIndex(self, request: Any, context: grpc.ServicerContext) -> Any:
        root = self._seen("CancelIndex", wire.cancel_index_request_from_proto(request).project_root)
        return wire.cancel_result_to_proto(CancelResult(cancelled=1 if root == SLOW_ROOT else 0, stopped=True))


class _Server(server_pb2_grpc.ServerServiceServicer):
    def __init__(self, fake: FakeLgrep) -> None:
        self._fake = fake

    def GetServerInfo(self, request: Any, context: Any) -> Any:
        return self._fake.GetServerInfo(request, context)


class _Index(index_pb2_grpc.IndexServiceServicer):
    def __init__(self, fake: FakeLgrep) -> None:
        self._fake = fake

    def IndexProject(self, request: Any, context: Any) -> Any:
        return self._fake.IndexProject(request, context)

    def GetStatus(self, request: Any, context: Any) -> Any:
        return self._fake.GetStatus(request, context)

    def WatchProject(self, request: Any, context: Any) -> Any:
        return self._fake.WatchProject(request, context)

    def UnwatchProject(self, request: Any, context: Any) -> Any:
        return self._fake.UnwatchProject(request, context)

    def ListProjects(self, request: Any, context: Any) -> Any:
        return self._fake.ListProjects(request, context)

    def RemoveProject(self, request: Any, context: Any) -> Any:
        return self._fake.RemoveProject(request, context)

    def CancelIndex(self, request: Any, context: Any) -> Any:
        return self._fake.CancelIndex(request, context)

    def RenewWatchLease(self, request: Any, context: Any) -> Any:
        return self._fake.RenewWatchLease(request, context)

    def ReleaseWatchLease(self, request: Any, context: Any) -> Any:
        return self._fake.ReleaseWatchLease(request, context)


class _Search(search_pb2_grpc.SearchServiceServicer):
    def __init__(self, fake: FakeLgrep) -> None:
        self._fake = fake

    def Search(self, request: Any, context: Any) -> Any:
        return self._fake.Search(request, context)

    def GetFile(self, request: Any, context: Any) -> Any:
        return self._fake.GetFile(request, context)

    def FindSymbol(self, request: Any, context: Any) -> Any:
        return self._fake.FindSymbol(request, context)

    def FindRelated(self, request: Any, context: Any) -> Any:
        return self._fake.FindRelated(request, context)

    def ListFiles(self, request: Any, context: Any) -> Any:
        return self._fake.ListFiles(request, context)

    def ListComponents(self, request: Any, context: Any) -> Any:
        return self._fake.ListComponents(request, context)

    def ListVersions(self, request: Any, context: Any) -> Any:
        return self._fake.ListVersions(request, context)

    def GetSkeleton(self, request: Any, context: Any) -> Any:
        return self._fake.GetSkeleton(request, context)

    def Trace(self, request: Any, context: Any) -> Any:
        return self._fake.Trace(request, context)


def add_fake_services(server: Any, fake: FakeLgrep) -> None:
    server_pb2_grpc.add_ServerServiceServicer_to_server(_Server(fake), server)
    index_pb2_grpc.add_IndexServiceServicer_to_server(_Index(fake), server)
    search_pb2_grpc.add_SearchServiceServicer_to_server(_Search(fake), server)


SERVICE_NAMES = (
    grpc_support.SERVER_SERVICE_NAME,
    grpc_support.INDEX_SERVICE_NAME,
    grpc_support.SEARCH_SERVICE_NAME,
)


@dataclass
class RunningServer:
    """A started fake server: where it listens, its token, its health servicer and the fake itself."""

    fake: FakeLgrep
    server: grpc.Server
    health: Any
    socket_path: Path
    port: int
    token: str
    token_file: Path


@contextlib.contextmanager
def serve_fakes(
    directory: Path, fake: FakeLgrep | None = None, *, options: Sequence[tuple[str, int]] = ()
) -> Iterator[RunningServer]:
    """Serve `fake` (a new FakeLgrep by default) on `directory`/lgrep.sock and a free loopback TCP
    port, with its token in `directory`/lgrep.token; stopped (blocked handlers released) on exit.
    `options`: gRPC server options beside lgrep's. Keep `directory` short: unix socket paths are
    limited to about 107 bytes."""
    fake = fake or FakeLgrep()
    token = grpc_tokens.new_token()
    token_file = grpc_tokens.write_token_file(grpc_support.default_token_path(directory), token)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        interceptors=[
            grpc_interceptors.TokenAuthInterceptor(token, token_file=token_file),
            grpc_interceptors.ErrorInterceptor(),
        ],
        options=[*grpc_support.server_options(), *options],
    )
    add_fake_services(server, fake)
    health = grpc_server_setup.add_standard_services(server, SERVICE_NAMES)
    socket_path = grpc_support.default_socket_path(directory)
    grpc_server_setup.add_unix_port(server, socket_path)
    port = grpc_server_setup.add_tcp_port(server, 0)
    server.start()
    try:
        yield RunningServer(fake, server, health, socket_path, port, token, token_file)
    finally:
        fake.release.set()
        server.stop(grace=None).wait(10)
