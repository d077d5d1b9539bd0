"""A typed Python client of a running lgrep server (`lgrep serve`): domain types in, domain types out.

    from lgrep_core.client import LgrepClient
    from lgrep_core.models import SearchRequest

    with LgrepClient.connect(socket_path="~/.cache/lgrep/lgrep.sock") as client:
        client.server_info()  # the handshake: refuses a server of another contract revision
        response = client.search(SearchRequest(query="where are tokens verified?", project_root="."))

Every failed call raises an LgrepError whose message a CLI can print as it is: the error the server
raised (same class, same message), or ServerUnavailableError, DeadlineExceededError,
AuthenticationError, ContractMismatchError. Relative project roots and paths are resolved here, in
the client's working directory, before they are sent.

It imports grpc, protobuf and lgrep_core's wire code only, no numpy, LanceDB, pyarrow or model
runtime, so that a CLI call or an MCP server starts in a few tens of milliseconds (import-linter
and tests/contract/test_client.py keep it so).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import grpc
from lgrep.v1 import index_pb2, index_pb2_grpc, search_pb2, search_pb2_grpc, server_pb2, server_pb2_grpc

from lgrep_core import grpc_common, grpc_support, grpc_tokens, wire
from lgrep_core.errors import ConfigError, ContractMismatchError, InvalidRequestError, LgrepError
from lgrep_core.models import (
    CancelResult,
    ChunkKind,
    ComponentInfo,
    FileList,
    FileSlice,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    ListFilesRequest,
    ProjectInfo,
    ProjectStatus,
    RelatedResult,
    Release,
    RemoveResult,
    SearchRequest,
    SearchResponse,
    ServerInfo,
    Skeleton,
    SkeletonRequest,
    SymbolMatch,
    TraceDirection,
    TraceRequest,
    TraceResult,
    WatchLease,
    WatchLeaseRequest,
    WatchProjectRequest,
    WatchResult,
)

__all__ = ["DEFAULT_TIMEOUT_S", "IndexStream", "LgrepClient"]

DEFAULT_TIMEOUT_S = 30.0
"""Deadline of each call but IndexProject (whose stream lasts as long as the run)."""


class LgrepClient:
    """One channel to one lgrep server. Thread-safe (gRPC channels are); close it when done."""

    def __init__(
        self,
        channel: grpc.Channel,
        *,
        target: str,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        token: str | None = None,
    ) -> None:
        """Wrap a channel made elsewhere (custom options); most callers use `connect`. With a `token`,
        every call carries it. `target` names the server in error messages."""
        self.target = target
        self.timeout = timeout
        self._channel = channel
        self._closed = False
        # Every call names this process, so the server's stream allowance is this process's own
        # (lgrep_core.grpc_interceptors.StreamLimitInterceptor), and carries the token when there is one.
        metadata = [(grpc_support.CLIENT_ID_KEY, str(os.getpid()))]
        if token is not None:
            metadata += grpc_tokens.bearer_metadata(token)
        calls = grpc.intercept_channel(channel, grpc_support.CallMetadataInterceptor(metadata))
        self._server = server_pb2_grpc.ServerServiceStub(calls)
        self._index = index_pb2_grpc.IndexServiceStub(calls)
        self._search = search_pb2_grpc.SearchServiceStub(calls)

    @classmethod
    def connect(
        cls,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        token: str | None = None,
        token_file: str | os.PathLike[str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
    ) -> LgrepClient:
        """A client of the server on a unix socket (`socket_path`), or on loopback TCP (`port`, with
        the server's `token` or the `token_file` it wrote). No call is made yet: `server_info()`
        is the first, and says whether a server answers and whether it speaks this contract.

        Raises ConfigError for an unusable endpoint (both or neither given, a socket path too long
        for the OS, a host that is not loopback, TCP without a token, a token file that is not
        private).
        """
        if (socket_path is None) == (port is None):
            raise ConfigError("connect to an lgrep server through either socket_path or port (with a token)")
        if token is None and token_file is not None:
            token = grpc_tokens.read_token_file(token_file)
        if socket_path is not None:
            target = grpc_support.unix_target(socket_path)
        else:
            assert port is not None
            target = grpc_support.tcp_target(port, host)
            if token is None:
                raise ConfigError(
                    f"the lgrep server at {target} needs its token over TCP: pass token= or token_file= "
                    "(or connect through its unix socket)"
                )
        if token is not None:
            grpc_tokens.bearer_metadata(token)  # a malformed token is a ConfigError now, not at the first call
        channel = grpc.insecure_channel(target, options=grpc_support.channel_options())
        return cls(channel, target=target, timeout=timeout, token=token)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the channel; calls in flight are cancelled, later calls raise LgrepError."""
        self._closed = True
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LgrepClient({self.target!r})"

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the channel connects to a listening server (a daemon just started); False
        when none listens within `timeout` seconds. No call is made."""
        self._open()
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ plumbing

    def _open(self) -> None:
        if self._closed:
            raise LgrepError(f"this client of the lgrep server at {self.target} is closed")

    def _call(self, method: Any, request: Any, timeout: float | None = None) -> Any:
        self._open()
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as exc:
            raise grpc_support.error_from_rpc(exc, target=self.target) from exc

    @staticmethod
    def _root(project_root: str | os.PathLike[str]) -> str:
        return grpc_common.resolve_root(project_root)

    @staticmethod
    def _path(root: str, path: str | os.PathLike[str]) -> str:
        """A path relative to the root, '/'-separated; an absolute path must lie inside the root."""
        given = Path(path).expanduser()
        if not given.is_absolute():
            return given.as_posix()
        try:
            return given.resolve().relative_to(root).as_posix()
        except ValueError:
            raise InvalidRequestError(f"{given} is not inside the project {root}") from None

    # ------------------------------------------------------------------ ServerService

    def server_info(self, *, check_contract: bool = True) -> ServerInfo:
        """Who is answering. With `check_contract` (the default), raises ContractMismatchError when the
        server speaks another revision of the lgrep.v1 contract than this client, saying which side is
        older and what to do."""
        info = wire.server_info_from_proto(self._call(self._server.GetServerInfo, server_pb2.GetServerInfoRequest()))
        if check_contract and info.contract_revision != wire.CONTRACT_REVISION:
            raise ContractMismatchError(
                grpc_common.contract_mismatch_message(info, self.target, wire.CONTRACT_REVISION)
            )
        return info

    # ------------------------------------------------------------------ SearchService

    def search(self, request: SearchRequest) -> SearchResponse:
        """Run one query. A relative (or `~`) project root is resolved here first."""
        request = replace(request, project_root=self._root(request.project_root)).validate()
        message = self._call(self._search.Search, wire.search_request_to_proto(request))
        response = wire.search_response_from_proto(message)
        if request.files and not response.files and response.results:
            # Only a server that does not know `files` (before revision 8) answers it with chunks.
            raise ContractMismatchError(self._no_files_message())
        return response

    def get_file(
        self,
        project_root: str | os.PathLike[str],
        path: str | os.PathLike[str],
        start_line: int = 0,
        end_line: int = 0,
        *,
        component: str = "",
        version: str = "",
    ) -> FileSlice:
        """Lines `start_line`..`end_line` (1-based, inclusive; 0 = from the start / to the end) of a
        file, as it is on disk now, or at a released version (`component`, `version`). `path` is
        relative to the root, or absolute inside it."""
        root = self._root(project_root)
        request = GetFileRequest(
            root, self._path(root, path), start_line, end_line, component=component, version=version
        ).validate()
        return wire.file_slice_from_proto(self._call(self._search.GetFile, wire.get_file_request_to_proto(request)))

    def find_symbol(
        self,
        project_root: str | os.PathLike[str],
        name: str,
        *,
        limit: int | None = None,
        kinds: Sequence[ChunkKind] = (),
        languages: Sequence[str] = (),
        path_glob: str | None = None,
    ) -> list[SymbolMatch]:
        """Definitions named `name` (exact matches first, then typo-tolerant ones)."""
        request = FindSymbolRequest(
            self._root(project_root), name, limit, tuple(kinds), tuple(languages), path_glob
        ).validate()
        message = self._call(self._search.FindSymbol, wire.find_symbol_request_to_proto(request))
        return wire.find_symbol_response_from_proto(message)

    def find_related(
        self, project_root: str | os.PathLike[str], path: str | os.PathLike[str], line: int, *, limit: int | None = None
    ) -> RelatedResult:
        """The chunks most related to the one that spans `line` of `path`."""
        root = self._root(project_root)
        request = FindRelatedRequest(root, self._path(root, path), line, limit).validate()
        message = self._call(self._search.FindRelated, wire.find_related_request_to_proto(request))
        return wire.related_result_from_proto(message)

    def skeleton(self, project_root: str | os.PathLike[str], path: str | os.PathLike[str]) -> Skeleton:
        """A file's structure: imports and signatures, bodies elided with their line counts."""
        root = self._root(project_root)
        request = SkeletonRequest(root, self._path(root, path)).validate()
        return wire.skeleton_from_proto(self._call(self._search.GetSkeleton, wire.skeleton_request_to_proto(request)))

    def trace(
        self,
        project_root: str | os.PathLike[str],
        symbol: str,
        *,
        path: str | os.PathLike[str] = "",
        depth: int = 1,
        direction: TraceDirection = TraceDirection.BOTH,
        limit: int | None = None,
        offset: int = 0,
        resolve_imports: bool = True,
    ) -> TraceResult:
        """Callers and/or callees of `symbol`, `depth` hops out (see TraceRequest)."""
        root = self._root(project_root)
        request = TraceRequest(
            root,
            symbol,
            self._path(root, path) if path else "",
            depth,
            direction,
            limit,
            offset,
            resolve_imports,
        ).validate()
        return wire.trace_result_from_proto(self._call(self._search.Trace, wire.trace_request_to_proto(request)))

    def list_files(
        self,
        project_root: str | os.PathLike[str],
        *,
        path_glob: str | None = None,
        languages: Sequence[str] = (),
        limit: int | None = None,
        component: str = "",
        version: str = "",
    ) -> FileList:
        """The files of a project's index by path, with language, content type and size (of a
        released version with `component` and `version`)."""
        request = ListFilesRequest(
            self._root(project_root), path_glob, tuple(languages), limit, component=component, version=version
        ).validate()
        message = self._call(self._search.ListFiles, wire.list_files_request_to_proto(request))
        return wire.list_files_response_from_proto(message)

    def list_components(self, project_root: str | os.PathLike[str]) -> list[ComponentInfo]:
        """The components of a repository's released versions (`lgrep index --tags`), by name."""
        message = self._call(
            self._search.ListComponents, search_pb2.ListComponentsRequest(project_root=self._root(project_root))
        )
        return wire.list_components_response_from_proto(message)

    def list_versions(self, project_root: str | os.PathLike[str], component: str) -> list[Release]:
        """The indexed versions of a component, newest first."""
        request = search_pb2.ListVersionsRequest(project_root=self._root(project_root), component=component)
        wire.list_versions_request_from_proto(request)  # the same checks the server makes
        return wire.list_versions_response_from_proto(self._call(self._search.ListVersions, request))

    def _no_files_message(self) -> str:
        return grpc_common.no_files_message(self.server_info(check_contract=False), self.target)

    # ------------------------------------------------------------------ IndexService

    def index(
        self,
        project_root: str | os.PathLike[str],
        *,
        force: bool = False,
        wait_vectors: bool = True,
        timeout: float | None = None,
    ) -> IndexStream:
        """Index a project: yields progress events, then the summary, last. The run starts at once;
        stopping the iteration early, closing the iterator or calling its `cancel()` (from any
        thread) ends the call; the server's run goes on for anyone else who asked for it. `timeout`
        bounds the call (default: none, a first index of a large repository takes minutes): past
        it, iterating raises DeadlineExceededError and the run goes on in the server.

        Raises LgrepError (IndexBusyError, NotFoundError, ...) while iterating, and LgrepError if the
        stream ends without its summary."""
        request = IndexProjectRequest(self._root(project_root), force=force, wait_for_vectors=wait_vectors).validate()
        self._open()
        try:
            call = self._index.IndexProject(wire.index_project_request_to_proto(request), timeout=timeout)
        except grpc.RpcError as exc:
            raise grpc_support.error_from_rpc(exc, target=self.target) from exc
        return IndexStream(call, self._index_events(call, request.project_root))

    def _index_events(self, call: Any, root: str) -> Iterator[IndexProgress | IndexSummary]:
        summary = False
        try:
            for message in call:
                event = wire.index_event_from_proto(message)
                if event is None:
                    continue  # an event a newer server sends that this client does not know
                summary = isinstance(event, IndexSummary)
                yield event
        except grpc.RpcError as exc:
            raise grpc_support.error_from_rpc(exc, target=self.target) from exc
        finally:
            call.cancel()  # nothing to do after a finished stream; stops the run if the caller stopped early
        if not summary:
            raise LgrepError(f"the lgrep server at {self.target} ended indexing {root} without its summary")

    def status(self, project_root: str | os.PathLike[str]) -> ProjectStatus:
        """Where a project's index stands, what it holds, how fresh it is."""
        request = wire.get_status_request_to_proto(self._root(project_root))
        return wire.project_status_from_proto(self._call(self._index.GetStatus, request))

    def watch(self, project_root: str | os.PathLike[str], *, debounce_ms: int | None = None) -> WatchResult:
        """Have the server keep a project's index fresh as files change."""
        request = WatchProjectRequest(self._root(project_root), debounce_ms).validate()
        message = self._call(self._index.WatchProject, wire.watch_project_request_to_proto(request))
        return wire.watch_result_from_proto(message)

    def unwatch(self, project_root: str | os.PathLike[str]) -> bool:
        """Stop watching a project; True if it was watched."""
        request = wire.unwatch_project_request_to_proto(self._root(project_root))
        return wire.unwatch_result_from_proto(self._call(self._index.UnwatchProject, request))

    def renew_watch_lease(self, project_root: str | os.PathLike[str], holder: str, ttl_s: float) -> WatchLease:
        """Take or renew `holder`'s lease on a project: the server watches it while a lease is live
        (RenewWatchLease). Renew well before the granted ttl passes."""
        request = WatchLeaseRequest(self._root(project_root), holder, ttl_s).validate()
        message = self._call(self._index.RenewWatchLease, wire.watch_lease_request_to_proto(request))
        return wire.watch_lease_from_proto(message)

    def release_watch_lease(self, project_root: str | os.PathLike[str], holder: str) -> bool:
        """End `holder`'s lease on a project now; True if it had one."""
        request = wire.watch_lease_release_to_proto(self._root(project_root), holder)
        return wire.watch_lease_released_from_proto(self._call(self._index.ReleaseWatchLease, request))

    def list_projects(self) -> list[ProjectInfo]:
        """The projects the server has indexes for or watches, by root."""
        message = self._call(self._index.ListProjects, index_pb2.ListProjectsRequest())
        return wire.list_projects_response_from_proto(message)

    def remove(self, project_root: str | os.PathLike[str]) -> RemoveResult:
        """Delete a project's index from the server's cache directory (its index runs there are
        cancelled first)."""
        request = wire.remove_project_request_to_proto(self._root(project_root))
        return wire.remove_result_from_proto(self._call(self._index.RemoveProject, request))

    def cancel_index(self, project_root: str | os.PathLike[str]) -> CancelResult:
        """Cancel a project's index runs on the server (what they committed stays)."""
        request = wire.cancel_index_request_to_proto(self._root(project_root))
        return wire.cancel_result_from_proto(self._call(self._index.CancelIndex, request))


class IndexStream(Iterator[IndexProgress | IndexSummary]):
    """The events of one IndexProject call (LgrepClient.index). `cancel()` may be called from any
    thread, while another iterates: that iteration then ends with the call's cancellation."""

    def __init__(self, call: Any, events: Iterator[IndexProgress | IndexSummary]) -> None:
        self._call = call
        self._events = events

    def __next__(self) -> IndexProgress | IndexSummary:
        return next(self._events)

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if close is not None:
            close()

    def cancel(self) -> None:
        self._call.cancel()
