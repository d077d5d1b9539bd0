"""Round-trips of the IndexService, SearchService (files, symbols, related code) and ServerService
messages through lgrep_core.rpc.wire and their serialized bytes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TypeVar

import pytest
from google.protobuf.message import Message
from lgrep.v1 import common_pb2, index_pb2, search_pb2, server_pb2
from lgrep_core.domain import errors
from lgrep_core.domain.models import (
    CancelIndexRequest,
    CancelResult,
    ChunkKind,
    ContentType,
    FileChanges,
    FileSlice,
    FindRelatedRequest,
    FindSymbolRequest,
    GetFileRequest,
    IndexPhase,
    IndexProgress,
    IndexProjectRequest,
    IndexSummary,
    ListProjectsRequest,
    Location,
    MatchType,
    ProjectInfo,
    ProjectState,
    ProjectStatus,
    RelatedResult,
    ReleaseWatchLeaseRequest,
    RemoveProjectRequest,
    RemoveResult,
    SearchHit,
    ServerInfo,
    ServerRole,
    SpendTotals,
    StatusRequest,
    SymbolMatch,
    UnwatchProjectRequest,
    WatchLease,
    WatchLeaseRequest,
    WatchProjectRequest,
    WatchResult,
)
from lgrep_core.rpc import wire

M = TypeVar("M", bound=Message)

WHEN = datetime(2026, 11, 22, 14, 3, 7, 125000, tzinfo=UTC)


def _through_bytes(message: M) -> M:
    """Serialize and parse again, so the tests cover the wire encoding, not just the objects."""
    return type(message).FromString(message.SerializeToString())


def _location(**overrides: object) -> Location:
    fields: dict[str, object] = {
        "path": "src/auth/login.py",
        "start_line": 10,
        "end_line": 42,
        "symbol": "verify",
        "kind": ChunkKind.METHOD,
        "language": "python",
        "scope": ("Auth", "verify"),
        "signature": "def verify(self, token: str) -> bool:",
        "content_type": ContentType.CODE,
    }
    fields.update(overrides)
    return Location(**fields)  # type: ignore[arg-type]


def _hit(path: str = "src/auth/jwt.py", score: float = 0.5) -> SearchHit:
    return SearchHit(
        path=path,
        start_line=3,
        end_line=9,
        symbol="decode",
        kind=ChunkKind.FUNCTION,
        language="python",
        score=score,
        content="def decode(token): ...",
        match=(MatchType.VECTOR,),
    )


def _status(**overrides: object) -> ProjectStatus:
    fields: dict[str, object] = {
        "project_root": "/home/dev/project",
        "state": ProjectState.READY,
        "index_dir": "/home/dev/.cache/lgrep/0123456789ab",
        "watched": True,
        "files": 120,
        "chunks": 1450,
        "vectors_pending": 12,
        "languages": {"python": 100, "markdown": 20},
        "provider": "local",
        "model": "all-MiniLM-L6-v2 (int8)",
        "dimension": 384,
        "chunker_version": "2",
        "last_indexed": WHEN,
        "changes": FileChanges(added=2, modified=3, deleted=1),
        "detail": "",
        "watch_leases": 2,
    }
    fields.update(overrides)
    return ProjectStatus(**fields)  # type: ignore[arg-type]


def _server_info(**overrides: object) -> ServerInfo:
    fields: dict[str, object] = {
        "version": "0.1.0",
        "contract_revision": wire.CONTRACT_REVISION,
        "pid": 4242,
        "started_at": WHEN,
        "roles": (ServerRole.INDEX, ServerRole.SEARCH),
        "cache_dir": "/home/dev/.cache/lgrep",
        "embedding_provider": "local",
        "embedding_model": "all-MiniLM-L6-v2",
        "embedding_dimension": 384,
        "resident_projects": 3,
        "unix_socket_path": "/home/dev/.cache/lgrep/lgrep.sock",
        "tcp_host": "127.0.0.1",
        "tcp_port": 7781,
        "models_loaded": 1,
        "watched_projects": ("/home/dev/api", "/home/dev/web"),
    }
    fields.update(overrides)
    return ServerInfo(**fields)  # type: ignore[arg-type]


# --- enums stay in step with the domain ------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "wire_enum", "prefix"),
    [
        (ProjectState, index_pb2.ProjectState, "PROJECT_STATE_"),
        (IndexPhase, index_pb2.IndexPhase, "INDEX_PHASE_"),
        (ServerRole, server_pb2.ServerRole, "SERVER_ROLE_"),
    ],
)
def test_every_domain_enum_value_has_a_wire_value(domain: type, wire_enum: object, prefix: str) -> None:
    wire_names = {v.name for v in wire_enum.DESCRIPTOR.values if v.number != 0}  # type: ignore[attr-defined]
    assert wire_names == {f"{prefix}{member.name}" for member in domain}  # type: ignore[attr-defined]


@pytest.mark.parametrize("state", [None, *ProjectState])
def test_project_state_round_trip(state: ProjectState | None) -> None:
    assert wire.project_state_from_proto(wire.project_state_to_proto(state)) is state


@pytest.mark.parametrize("phase", [None, *IndexPhase])
def test_index_phase_round_trip(phase: IndexPhase | None) -> None:
    assert wire.index_phase_from_proto(wire.index_phase_to_proto(phase)) is phase


@pytest.mark.parametrize("role", list(ServerRole))
def test_server_role_round_trip(role: ServerRole) -> None:
    assert wire.server_role_from_proto(wire.server_role_to_proto(role)) is role


def test_storage_index_state_is_the_domain_project_state() -> None:
    from lgrep_core.storage.store import IndexState

    assert IndexState is ProjectState
    assert [s.value for s in IndexState] == ["ready", "building", "interrupted", "outdated", "absent"]


# --- locations ------------------------------------------------------------------------------------


def test_location_round_trip() -> None:
    location = _location()
    message = _through_bytes(wire.location_to_proto(location))
    assert message.kind == common_pb2.CHUNK_KIND_METHOD
    assert list(message.scope) == ["Auth", "verify"]
    assert wire.location_from_proto(message) == location


def test_location_from_a_newer_peer_keeps_what_it_knows() -> None:
    message = wire.location_to_proto(_location())
    message.kind = 999  # type: ignore[assignment]
    message.content_type = 999  # type: ignore[assignment]
    location = wire.location_from_proto(_through_bytes(message))
    assert (location.kind, location.content_type) == (None, None)
    assert location.path == "src/auth/login.py"
    # ... and writing it on again leaves the unknown values unset rather than guessing.
    again = wire.location_to_proto(location)
    assert (again.kind, again.content_type) == (common_pb2.CHUNK_KIND_UNSPECIFIED, common_pb2.CONTENT_TYPE_UNSPECIFIED)


# --- IndexProject ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("force", "wait"), [(False, True), (True, False)])
def test_index_project_request_round_trip(force: bool, wait: bool) -> None:
    request = IndexProjectRequest("/home/dev/project", force=force, wait_for_vectors=wait)
    assert wire.index_project_request_from_proto(_through_bytes(wire.index_project_request_to_proto(request))) == (
        request
    )


@pytest.mark.parametrize("root", ["", "relative/project", "./project", "/home/\x00dev"])
def test_index_project_request_needs_an_absolute_root(root: str) -> None:
    with pytest.raises(errors.InvalidRequestError, match="project_root"):
        wire.index_project_request_from_proto(index_pb2.IndexProjectRequest(project_root=root))


def test_index_progress_round_trip() -> None:
    progress = IndexProgress(IndexPhase.EMBED, 40, 50, 700, 1400, rate=21.5, eta_seconds=32.5)
    message = _through_bytes(wire.index_progress_to_proto(progress))
    assert message.eta.seconds == 32 and message.eta.nanos == 500_000_000
    assert wire.index_progress_from_proto(message) == progress


def test_index_progress_without_eta_leaves_it_unset() -> None:
    progress = IndexProgress(IndexPhase.WALK)
    message = _through_bytes(wire.index_progress_to_proto(progress))
    assert not message.HasField("eta")
    assert wire.index_progress_from_proto(message) == progress
    assert wire.index_progress_from_proto(index_pb2.IndexProgress(phase=77)).phase is None  # type: ignore[arg-type]


def test_index_summary_round_trip() -> None:
    summary = IndexSummary(
        root="/home/dev/project",
        files_seen=120,
        files_indexed=7,
        files_unchanged=112,
        files_deleted=1,
        skipped={"binary": 4, "secret": 1},
        chunks_written=70,
        chunks_total=1450,
        vectors_embedded=65,
        vectors_pending=5,
        seconds_bm25=1.25,
        seconds_vectors=12.0625,
        created=True,
        tokens_billed=48_213,
    )
    message = _through_bytes(wire.index_summary_to_proto(summary))
    assert message.tokens_billed == 48_213
    assert message.project_root == "/home/dev/project"
    assert dict(message.files_skipped) == {"binary": 4, "secret": 1}
    assert message.bm25_elapsed.seconds == 1 and message.bm25_elapsed.nanos == 250_000_000
    assert wire.index_summary_from_proto(message) == summary


def test_index_events_carry_progress_then_summary() -> None:
    events: list[IndexProgress | IndexSummary] = [
        IndexProgress(IndexPhase.WALK),
        IndexProgress(IndexPhase.CHUNK, 3, 10, 30, 0, rate=3.0),
        IndexSummary(root="/p", files_seen=10),
    ]
    messages = [_through_bytes(wire.index_event_to_proto(e)) for e in events]
    assert [m.WhichOneof("event") for m in messages] == ["progress", "progress", "summary"]
    assert [wire.index_event_from_proto(m) for m in messages] == events


def test_an_index_event_of_a_newer_peer_is_skipped() -> None:
    assert wire.index_event_from_proto(index_pb2.IndexProjectResponse()) is None


# --- GetStatus ------------------------------------------------------------------------------------


def test_get_status_request_round_trip_and_validation() -> None:
    message = _through_bytes(wire.get_status_request_to_proto(StatusRequest("/home/dev/project")))
    assert wire.get_status_request_from_proto(message) == StatusRequest("/home/dev/project")
    brief = _through_bytes(wire.get_status_request_to_proto(StatusRequest("/home/dev/project", brief=True)))
    assert brief.brief is True
    assert wire.get_status_request_from_proto(brief) == StatusRequest("/home/dev/project", brief=True)
    with pytest.raises(errors.InvalidRequestError, match="absolute"):
        wire.get_status_request_from_proto(index_pb2.GetStatusRequest(project_root="project"))


def test_project_status_round_trip_ready() -> None:
    status = _status()
    message = _through_bytes(wire.project_status_to_proto(status))
    assert message.indexed is True
    assert message.state == index_pb2.PROJECT_STATE_READY
    assert message.files_changed_since == 6
    assert message.last_indexed.seconds == int(WHEN.timestamp())
    decoded = wire.project_status_from_proto(message)
    assert decoded == status
    assert decoded.last_indexed is not None and decoded.last_indexed.tzinfo is not None


@pytest.mark.parametrize("state", [ProjectState.BUILDING, ProjectState.INTERRUPTED, ProjectState.ABSENT])
def test_project_status_round_trip_not_ready(state: ProjectState) -> None:
    status = ProjectStatus(
        project_root="/p",
        state=state,
        index_dir="/c/0123456789ab",
        detail="the first index of /p did not finish: run `lgrep index /p`",
    )
    message = _through_bytes(wire.project_status_to_proto(status))
    assert message.indexed is False
    assert not message.HasField("last_indexed") and not message.HasField("changes")
    assert wire.project_status_from_proto(message) == status


def test_project_status_round_trip_with_spend() -> None:
    status = _status(
        project_spend=SpendTotals(tokens=1200, requests=2, cost_usd=0.000216),
        total_spend=SpendTotals(tokens=9_000_000, requests=40, cost_usd=5.4, unpriced_models=("my-model",)),
        spend_warnings=("cloud embedding spend has passed $5.00", "the cost of my-model is unknown"),
    )
    message = _through_bytes(wire.project_status_to_proto(status))
    assert message.HasField("project_spend") and message.total_spend.unpriced_models == ["my-model"]
    assert message.total_spend.cost_usd == 5.4 and len(message.spend_warnings) == 2
    decoded = wire.project_status_from_proto(message)
    assert decoded == status
    assert decoded.total_spend is not None and not decoded.total_spend.cost_known


def test_project_status_without_spend_leaves_it_unset() -> None:
    message = _through_bytes(wire.project_status_to_proto(_status()))
    assert not message.HasField("project_spend") and not message.HasField("total_spend")
    decoded = wire.project_status_from_proto(message)
    assert decoded.project_spend is None and decoded.total_spend is None and decoded.spend_warnings == ()


def test_project_status_with_no_changes_counted_differs_from_zero_changes() -> None:
    counted = wire.project_status_from_proto(
        _through_bytes(wire.project_status_to_proto(_status(changes=FileChanges())))
    )
    uncounted = wire.project_status_from_proto(_through_bytes(wire.project_status_to_proto(_status(changes=None))))
    assert counted.changes == FileChanges() and uncounted.changes is None
    assert counted.files_changed_since == uncounted.files_changed_since == 0


def test_project_status_keeps_the_instant_of_an_offset_datetime() -> None:
    local = WHEN.astimezone(timezone(timedelta(hours=-5)))
    decoded = wire.project_status_from_proto(_through_bytes(wire.project_status_to_proto(_status(last_indexed=local))))
    assert decoded.last_indexed == WHEN


def test_a_naive_datetime_is_refused() -> None:
    with pytest.raises(ValueError, match="naive datetime"):
        wire.project_status_to_proto(_status(last_indexed=datetime(2026, 1, 1)))


def test_project_status_of_a_newer_peer_with_an_unknown_state() -> None:
    message = wire.project_status_to_proto(_status())
    message.state = 42  # type: ignore[assignment]
    decoded = wire.project_status_from_proto(_through_bytes(message))
    assert decoded.state is None and not decoded.indexed
    assert decoded.files == 120


# --- Watch / Unwatch / List / Remove --------------------------------------------------------------


@pytest.mark.parametrize("debounce", [None, 0, 250])
def test_watch_project_request_round_trip(debounce: int | None) -> None:
    request = WatchProjectRequest("/home/dev/project", debounce_ms=debounce)
    message = _through_bytes(wire.watch_project_request_to_proto(request))
    assert message.HasField("debounce_ms") is (debounce is not None)
    assert wire.watch_project_request_from_proto(message) == request


@pytest.mark.parametrize("debounce", [-1, 3_600_001])
def test_watch_project_request_with_a_bad_debounce_is_invalid(debounce: int) -> None:
    with pytest.raises(errors.InvalidRequestError, match="debounce_ms"):
        wire.watch_project_request_from_proto(index_pb2.WatchProjectRequest(project_root="/p", debounce_ms=debounce))


@pytest.mark.parametrize(("watched", "already"), [(True, False), (True, True), (False, False)])
def test_watch_result_round_trip(watched: bool, already: bool) -> None:
    result = WatchResult(watched=watched, already_watched=already)
    assert wire.watch_result_from_proto(_through_bytes(wire.watch_result_to_proto(result))) == result


def test_watch_lease_request_round_trip() -> None:
    request = WatchLeaseRequest("/home/dev/project", "lgrep-4242-0a1b2c3d4e5f", 30.0)
    message = _through_bytes(wire.watch_lease_request_to_proto(request))
    assert message.ttl.seconds == 30
    assert wire.watch_lease_request_from_proto(message) == request


@pytest.mark.parametrize(
    ("root", "holder", "ttl"),
    [("relative", "h", 5.0), ("/p", "", 5.0), ("/p", "has space", 5.0), ("/p", "x" * 129, 5.0), ("/p", "h", 0.0)],
)
def test_a_bad_watch_lease_request_is_invalid(root: str, holder: str, ttl: float) -> None:
    message = wire.watch_lease_request_to_proto(WatchLeaseRequest(root, holder, ttl))
    with pytest.raises(errors.InvalidRequestError):
        wire.watch_lease_request_from_proto(message)


@pytest.mark.parametrize(
    "lease",
    [
        WatchLease("/home/dev/project", watched=True, ttl_s=30.0, leases=2),
        WatchLease("/home/dev/project", watched=False, ttl_s=2.0, leases=1, detail="it has no index yet"),
    ],
)
def test_watch_lease_round_trip(lease: WatchLease) -> None:
    assert wire.watch_lease_from_proto(_through_bytes(wire.watch_lease_to_proto(lease))) == lease


@pytest.mark.parametrize("released", [True, False])
def test_watch_lease_release_round_trip(released: bool) -> None:
    message = _through_bytes(
        wire.watch_lease_release_to_proto(ReleaseWatchLeaseRequest("/home/dev/project", "holder-1"))
    )
    assert wire.watch_lease_release_from_proto(message) == ReleaseWatchLeaseRequest("/home/dev/project", "holder-1")
    back = wire.watch_lease_released_from_proto(_through_bytes(wire.watch_lease_released_to_proto(released)))
    assert back is released
    with pytest.raises(errors.InvalidRequestError):
        wire.watch_lease_release_from_proto(index_pb2.ReleaseWatchLeaseRequest(project_root="/p"))


@pytest.mark.parametrize("was", [True, False])
def test_unwatch_round_trip(was: bool) -> None:
    request = _through_bytes(wire.unwatch_project_request_to_proto(UnwatchProjectRequest("/home/dev/project")))
    assert wire.unwatch_project_request_from_proto(request) == UnwatchProjectRequest("/home/dev/project")
    assert wire.unwatch_result_from_proto(_through_bytes(wire.unwatch_result_to_proto(was))) is was
    with pytest.raises(errors.InvalidRequestError):
        wire.unwatch_project_request_from_proto(index_pb2.UnwatchProjectRequest())


def test_list_projects_round_trip_keeps_order_and_unknown_states() -> None:
    projects = [
        ProjectInfo(
            project_root="/a",
            state=ProjectState.READY,
            files=3,
            chunks=30,
            vectors_pending=1,
            watched=True,
            resident=True,
            last_indexed=WHEN,
            index_dir="/c/aaaaaaaaaaaa",
        ),
        ProjectInfo(project_root="/b", state=ProjectState.BUILDING, index_dir="/c/bbbbbbbbbbbb"),
        ProjectInfo(project_root="/c", state=None),
    ]
    assert _through_bytes(wire.list_projects_request_to_proto(ListProjectsRequest())) == index_pb2.ListProjectsRequest()
    message = _through_bytes(wire.list_projects_response_to_proto(projects))
    assert [p.project_root for p in message.projects] == ["/a", "/b", "/c"]
    assert not message.projects[1].HasField("last_indexed")
    assert wire.list_projects_response_from_proto(message) == projects
    assert wire.list_projects_response_from_proto(index_pb2.ListProjectsResponse()) == []


def test_remove_round_trip() -> None:
    request = _through_bytes(wire.remove_project_request_to_proto(RemoveProjectRequest("/home/dev/project")))
    assert wire.remove_project_request_from_proto(request) == RemoveProjectRequest("/home/dev/project")
    for result in (RemoveResult(removed=True, bytes_freed=123_456_789_012), RemoveResult(False, 0)):
        assert wire.remove_result_from_proto(_through_bytes(wire.remove_result_to_proto(result))) == result
    with pytest.raises(errors.InvalidRequestError, match="absolute"):
        wire.remove_project_request_from_proto(index_pb2.RemoveProjectRequest(project_root="~/project"))


def test_cancel_index_round_trip() -> None:
    request = _through_bytes(wire.cancel_index_request_to_proto(CancelIndexRequest("/home/dev/project")))
    assert wire.cancel_index_request_from_proto(request) == CancelIndexRequest("/home/dev/project")
    for result in (CancelResult(cancelled=2, stopped=True), CancelResult(1, False), CancelResult(0, True)):
        assert wire.cancel_result_from_proto(_through_bytes(wire.cancel_result_to_proto(result))) == result
    with pytest.raises(errors.InvalidRequestError, match="absolute"):
        wire.cancel_index_request_from_proto(index_pb2.CancelIndexRequest(project_root="relative/project"))


# --- GetFile --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("start", "end"), [(0, 0), (10, 0), (0, 20), (10, 20), (7, 7)])
def test_get_file_request_round_trip(start: int, end: int) -> None:
    request = GetFileRequest("/home/dev/project", "src/auth/login.py", start, end)
    assert wire.get_file_request_from_proto(_through_bytes(wire.get_file_request_to_proto(request))) == request


@pytest.mark.parametrize(
    ("path", "start", "end", "words"),
    [
        ("", 0, 0, "path is empty"),
        ("/etc/passwd", 0, 0, "relative to the project root"),
        ("../other/secret.txt", 0, 0, "inside the project root"),
        ("src/../../x", 0, 0, "inside the project root"),
        ("src/a\x00.py", 0, 0, "NUL"),
        ("a.py", -1, 0, "1-based"),
        ("a.py", 0, -3, "1-based"),
        ("a.py", 20, 10, "before start_line"),
    ],
)
def test_a_malformed_get_file_request_is_invalid(path: str, start: int, end: int, words: str) -> None:
    message = search_pb2.GetFileRequest(project_root="/p", path=path, start_line=start, end_line=end)
    with pytest.raises(errors.InvalidRequestError, match=words):
        wire.get_file_request_from_proto(message)


@pytest.mark.parametrize(("stale", "truncated"), [(False, False), (True, True)])
def test_file_slice_round_trip(stale: bool, truncated: bool) -> None:
    file = FileSlice(
        path="src/auth/login.py",
        language="python",
        content="def verify(token):\n    return check(token)  # ünïcode ✓\n",
        start_line=10,
        end_line=11,
        total_lines=240,
        stale=stale,
        truncated=truncated,
    )
    assert wire.file_slice_from_proto(_through_bytes(wire.file_slice_to_proto(file))) == file


# --- FindSymbol -----------------------------------------------------------------------------------


def test_find_symbol_request_round_trip_with_every_field() -> None:
    request = FindSymbolRequest(
        project_root="/home/dev/project",
        name="Auth.verify",
        limit=5,
        kinds=(ChunkKind.METHOD, ChunkKind.FUNCTION),
        languages=("python", "go"),
        path_glob="src/**",
    )
    message = _through_bytes(wire.find_symbol_request_to_proto(request))
    assert list(message.kinds) == [common_pb2.CHUNK_KIND_METHOD, common_pb2.CHUNK_KIND_FUNCTION]
    assert wire.find_symbol_request_from_proto(message) == request


def test_find_symbol_request_defaults_stay_unset() -> None:
    request = FindSymbolRequest(project_root="/p", name="verify")
    message = _through_bytes(wire.find_symbol_request_to_proto(request))
    assert (message.limit, message.path_glob, list(message.kinds)) == (0, "", [])
    assert wire.find_symbol_request_from_proto(message) == request


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"name": " "}, "name is empty"),
        ({"name": "x" * 513}, "limit is 512"),
        ({"limit": -1}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"kinds": [common_pb2.CHUNK_KIND_UNSPECIFIED]}, "chunk kind"),
        ({"kinds": [99]}, "chunk kind"),
        ({"project_root": "rel"}, "absolute"),
    ],
)
def test_a_malformed_find_symbol_request_is_invalid(change: dict[str, object], words: str) -> None:
    message = search_pb2.FindSymbolRequest(project_root="/p", name="verify")
    for name, value in change.items():
        if isinstance(value, list):
            getattr(message, name).extend(value)
        else:
            setattr(message, name, value)
    with pytest.raises(errors.InvalidRequestError, match=words):
        wire.find_symbol_request_from_proto(message)


def test_find_symbol_response_round_trip() -> None:
    matches = [
        SymbolMatch(location=_location(), score=1.0, exact=True),
        SymbolMatch(location=_location(path="src/verify.go", symbol="Verify", language="go"), score=0.6, exact=False),
    ]
    message = _through_bytes(wire.find_symbol_response_to_proto(matches))
    assert message.matches[0].location.signature == "def verify(self, token: str) -> bool:"
    assert wire.find_symbol_response_from_proto(message) == matches
    assert wire.find_symbol_response_from_proto(search_pb2.FindSymbolResponse()) == []


# --- FindRelated ----------------------------------------------------------------------------------


def test_find_related_request_round_trip() -> None:
    for request in (
        FindRelatedRequest("/home/dev/project", "src/auth/login.py", 12, limit=8),
        FindRelatedRequest("/home/dev/project", "README.md", 1),
    ):
        message = _through_bytes(wire.find_related_request_to_proto(request))
        assert wire.find_related_request_from_proto(message) == request


@pytest.mark.parametrize(
    ("path", "line", "limit", "words"),
    [
        ("a.py", 0, 0, "line must be 1 or more"),
        ("a.py", -4, 0, "line must be 1 or more"),
        ("/abs.py", 3, 0, "relative"),
        ("a.py", 3, -1, "limit"),
        ("a.py", 3, 1001, "limit"),
    ],
)
def test_a_malformed_find_related_request_is_invalid(path: str, line: int, limit: int, words: str) -> None:
    message = search_pb2.FindRelatedRequest(project_root="/p", path=path, line=line, limit=limit)
    with pytest.raises(errors.InvalidRequestError, match=words):
        wire.find_related_request_from_proto(message)


def test_related_result_round_trip() -> None:
    result = RelatedResult(anchor=_location(), related=(_hit(), _hit("src/auth/session.py", 0.25)))
    message = _through_bytes(wire.related_result_to_proto(result))
    assert [h.location.path for h in message.related] == ["src/auth/jwt.py", "src/auth/session.py"]
    assert wire.related_result_from_proto(message) == result


# --- GetServerInfo --------------------------------------------------------------------------------


def test_server_info_round_trip() -> None:
    info = _server_info()
    message = _through_bytes(wire.server_info_to_proto(info))
    assert list(message.roles) == [server_pb2.SERVER_ROLE_INDEX, server_pb2.SERVER_ROLE_SEARCH]
    assert message.contract_revision == wire.CONTRACT_REVISION
    assert wire.server_info_from_proto(message) == info


def test_server_info_without_tcp_or_start_time() -> None:
    info = _server_info(tcp_host="", tcp_port=0, started_at=None, roles=(ServerRole.SEARCH,))
    message = _through_bytes(wire.server_info_to_proto(info))
    assert not message.HasField("started_at")
    assert wire.server_info_from_proto(message) == info


def test_server_info_says_how_many_models_and_which_watchers() -> None:
    message = _through_bytes(wire.server_info_to_proto(_server_info()))
    assert message.models_loaded == 1
    assert list(message.watched_projects) == ["/home/dev/api", "/home/dev/web"]
    # A server that loaded nothing yet and watches nothing sends neither (proto3 defaults).
    idle = wire.server_info_to_proto(_server_info(models_loaded=0, watched_projects=()))
    assert idle.models_loaded == 0 and not idle.watched_projects
    back = wire.server_info_from_proto(_through_bytes(idle))
    assert back.models_loaded == 0 and back.watched_projects == ()


def test_server_info_of_a_newer_peer_drops_unknown_roles() -> None:
    message = wire.server_info_to_proto(_server_info())
    message.roles.append(7)  # type: ignore[arg-type]
    assert wire.server_info_from_proto(_through_bytes(message)).roles == (ServerRole.INDEX, ServerRole.SEARCH)


# --- search requests now name an absolute root ----------------------------------------------------


def test_a_search_request_needs_an_absolute_root() -> None:
    with pytest.raises(errors.InvalidRequestError, match="project_root"):
        wire.search_request_from_proto(search_pb2.SearchRequest(query="verify", project_root="relative"))


# --- ListFiles ------------------------------------------------------------------------------------


def test_list_files_round_trip() -> None:
    from lgrep_core.domain.models import ContentType, FileList, IndexedFile, ListFilesRequest

    request = ListFilesRequest(project_root="/p", path_glob="src/**", languages=("python",), limit=5)
    assert wire.list_files_request_from_proto(_through_bytes(wire.list_files_request_to_proto(request))) == request
    bare = ListFilesRequest(project_root="/p")
    message = _through_bytes(wire.list_files_request_to_proto(bare))
    assert (message.limit, message.path_glob, list(message.languages)) == (0, "", [])
    assert wire.list_files_request_from_proto(message) == bare
    files = FileList(
        (
            IndexedFile("README.md", "markdown", ContentType.DOCS, 2, 30),
            IndexedFile("src/a.py", "python", ContentType.CODE, 3, 41),
        ),
        total=7,
    )
    assert wire.list_files_response_from_proto(_through_bytes(wire.list_files_response_to_proto(files))) == files
    with pytest.raises(errors.InvalidRequestError, match="limit"):
        wire.list_files_request_from_proto(search_pb2.ListFilesRequest(project_root="/p", limit=-1))
    with pytest.raises(errors.InvalidRequestError, match="absolute"):
        wire.list_files_request_from_proto(search_pb2.ListFilesRequest(project_root="rel"))


# --- released versions (revision 4) ----------------------------------------------------------------


def test_release_fields_round_trip_on_every_request_and_answer() -> None:
    from lgrep_core.domain.models import (
        ComponentInfo,
        FileList,
        FileSlice,
        GetFileRequest,
        ListComponentsRequest,
        ListFilesRequest,
        ListVersionsRequest,
        Release,
        SearchRequest,
        SearchResponse,
    )

    release = Release("agent", "0.7.3-rc.1", "agent-v0.7.3-rc.1", "a" * 40, 12, True, 1795000000.5)
    assert wire.release_from_proto(_through_bytes(wire.release_to_proto(release))) == release
    search = SearchRequest("retry", "/repo", component="agent", version="^0.7")
    assert wire.search_request_from_proto(_through_bytes(wire.search_request_to_proto(search))) == search
    answer = SearchResponse([], {"total_ms": 1.0}, 0, 0, release=release)
    assert wire.search_response_from_proto(_through_bytes(wire.search_response_to_proto(answer))).release == release
    plain = SearchResponse([], {"total_ms": 1.0}, 0, 0)
    assert wire.search_response_from_proto(_through_bytes(wire.search_response_to_proto(plain))).release is None
    get = GetFileRequest("/repo", "agent/core.py", 1, 2, component="agent", version="latest")
    assert wire.get_file_request_from_proto(_through_bytes(wire.get_file_request_to_proto(get))) == get
    piece = FileSlice("agent/core.py", "python", "x\n", 1, 1, 1, release=release)
    assert wire.file_slice_from_proto(_through_bytes(wire.file_slice_to_proto(piece))) == piece
    listing = ListFilesRequest("/repo", component="agent", version="0.7.3")
    assert wire.list_files_request_from_proto(_through_bytes(wire.list_files_request_to_proto(listing))) == listing
    files = FileList((), 0, release=release)
    assert wire.list_files_response_from_proto(_through_bytes(wire.list_files_response_to_proto(files))) == files
    components = ListComponentsRequest("/repo")
    assert (
        wire.list_components_request_from_proto(_through_bytes(wire.list_components_request_to_proto(components)))
        == components
    )
    of = ListVersionsRequest("/repo", "agent")
    assert wire.list_versions_request_from_proto(_through_bytes(wire.list_versions_request_to_proto(of))) == of
    comps = [ComponentInfo("agent", 152, "0.7.3"), ComponentInfo("lume", 134, "0.2.9")]
    assert (
        wire.list_components_response_from_proto(_through_bytes(wire.list_components_response_to_proto(comps))) == comps
    )
    versions = [release, Release("agent", "0.7.2", "agent-v0.7.2")]
    assert (
        wire.list_versions_response_from_proto(_through_bytes(wire.list_versions_response_to_proto(versions)))
        == versions
    )


def test_release_requests_are_checked() -> None:
    with pytest.raises(errors.InvalidRequestError, match="needs a component"):
        wire.search_request_from_proto(search_pb2.SearchRequest(project_root="/r", query="q", version="1.0"))
    with pytest.raises(errors.InvalidRequestError, match="component is empty"):
        wire.list_versions_request_from_proto(search_pb2.ListVersionsRequest(project_root="/r"))
    with pytest.raises(errors.InvalidRequestError, match="absolute"):
        wire.list_versions_request_from_proto(search_pb2.ListVersionsRequest(project_root="r", component="a"))
    with pytest.raises(errors.InvalidRequestError, match="absolute"):
        wire.list_components_request_from_proto(search_pb2.ListComponentsRequest(project_root="r"))
