"""lgrep_core.app.api.Lgrep over an engine in memory (lgrep_core.testing.engines.FakeEngine): the policy
every shell shares — which project a folder is, building a first index before a search (states,
waits, progress), the spend gate, several projects in one question — with no daemon, index or model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lgrep_core.app.api import Lgrep, SpendDeclinedError
from lgrep_core.domain.errors import DeadlineExceededError, IndexMismatchError, InvalidRequestError, NotFoundError
from lgrep_core.domain.models import (
    ChunkKind,
    FileHit,
    GetFileRequest,
    IndexProgress,
    IndexProjectRequest,
    LineRange,
    MatchType,
    ProjectState,
    SearchHit,
    SearchRequest,
    SearchResponse,
    SearchType,
    StatusRequest,
)
from lgrep_core.testing.engines import FakeEngine


class Gate:
    """A spend gate that records what it was asked, and says no when told to."""

    def __init__(self, *, decline: bool = False) -> None:
        self.asked: list[tuple[Path, bool]] = []
        self.decline = decline

    def __call__(self, project: Path, force: bool) -> None:
        self.asked.append((project, force))
        if self.decline:
            raise SpendDeclinedError(f"{project}: not approved")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository with a folder `src` (no index in the cache: the repository is the project)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = (tmp_path / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def app_over(engine: FakeEngine, tmp_path: Path, gate: Gate | None = None) -> tuple[Lgrep, list[str]]:
    notices: list[str] = []
    return Lgrep(engine, tmp_path / "cache", spend_gate=gate, notice=notices.append), notices


# --- search: a ready project --------------------------------------------------------------------


def test_a_ready_project_is_searched_with_one_call(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.project(repo)
    gate = Gate()
    app, notices = app_over(engine, tmp_path, gate)
    outcome = app.search(SearchRequest("where are tokens verified", project_root=str(repo)))
    assert outcome.response is not None
    assert outcome.built is None
    assert outcome.scope.project == repo
    assert [type(c) for c in engine.calls] == [SearchRequest]  # no state asked, nothing indexed
    assert gate.asked == []
    assert notices == []


def test_a_folder_is_answered_by_its_project_kept_to_the_folder(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.project(repo)
    app, notices = app_over(engine, tmp_path)
    outcome = app.search(SearchRequest("parse", project_root=str(repo / "src"), path_glob="*.py"))
    (sent,) = engine.requests(SearchRequest)
    assert sent.project_root == str(repo)
    assert sent.path_glob == "src/*.py"
    assert outcome.scope.within == "src"
    assert outcome.response is not None and outcome.response.scope == "src"
    assert notices == [f"{repo / 'src'} is inside the project {repo}: searching that one"]


def test_a_released_version_is_searched_as_named_without_an_index(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.answer(SearchRequest, lambda r: SearchResponse([], {}, 0, 0, search_type=SearchType.HYBRID))
    app, _ = app_over(engine, tmp_path, Gate(decline=True))
    outcome = app.search(SearchRequest("parse", project_root=str(repo / "src"), component="agent"))
    assert outcome.response is not None
    assert [c.project_root for c in engine.requests(SearchRequest)] == [str(repo / "src")]
    assert engine.runs == []


def test_an_invalid_request_reaches_no_engine(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    app, _ = app_over(engine, tmp_path)
    with pytest.raises(InvalidRequestError, match="empty"):
        app.search(SearchRequest("  ", project_root=str(repo)))
    assert engine.calls == []


def test_a_missing_folder_is_a_not_found_error(tmp_path: Path, repo: Path) -> None:
    app, _ = app_over(FakeEngine(), tmp_path)
    with pytest.raises(NotFoundError, match="not a directory"):
        app.search(SearchRequest("parse", project_root=str(repo / "gone")))


def test_the_engines_own_errors_reach_the_caller(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.project(repo)

    def mismatch(request: SearchRequest) -> SearchResponse:
        raise IndexMismatchError("built with another model: run `lgrep index --force`")

    engine.answer(SearchRequest, mismatch)
    app, _ = app_over(engine, tmp_path, Gate())
    with pytest.raises(IndexMismatchError, match="another model"):
        app.search(SearchRequest("parse", project_root=str(repo)))
    assert engine.runs == []


# --- search: building the index first ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "words"),
    [
        (None, "has no index yet; building it first"),
        (ProjectState.INTERRUPTED, "its first index did not finish; finishing it first"),
        (ProjectState.OUTDATED, "its index was written by an older lgrep; rebuilding it first"),
    ],
)
def test_a_project_without_a_searchable_index_is_indexed_first(
    tmp_path: Path, repo: Path, state: ProjectState | None, words: str
) -> None:
    engine = FakeEngine()
    if state is not None:
        engine.project(repo, state)
    gate = Gate()
    app, notices = app_over(engine, tmp_path, gate)
    seen: list[IndexProgress] = []
    outcome = app.search(SearchRequest("parse", project_root=str(repo)), progress=seen.append, wait_vectors=False)
    assert outcome.response is not None
    assert outcome.built is not None and outcome.built.files_indexed == 2
    assert [type(c) for c in engine.calls] == [SearchRequest, StatusRequest, IndexProjectRequest, SearchRequest]
    (index,) = engine.requests(IndexProjectRequest)  # pyright: ignore[reportArgumentType]
    assert (index.project_root, index.force, index.wait_for_vectors) == (str(repo), False, False)
    assert engine.calls[1] == StatusRequest(str(repo), brief=True)
    assert gate.asked == [(repo, False)]
    assert notices == [f"{repo} {words}"]
    assert len(seen) == 2


def test_a_first_index_another_caller_builds_is_joined_only_with_a_bounded_wait(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.project(repo, ProjectState.BUILDING)
    app, notices = app_over(engine, tmp_path, Gate())
    with pytest.raises(NotFoundError, match="is not searchable"):  # the engine's own words: it is being built
        app.search(SearchRequest("parse", project_root=str(repo)))
    assert engine.runs == [] and notices == []
    outcome = app.search(SearchRequest("parse", project_root=str(repo)), wait_s=30)
    assert outcome.response is not None
    assert notices == [f"{repo} is being indexed; waiting for that index first"]


def test_a_wait_that_runs_out_answers_with_how_far_the_index_is(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.stall_index = True
    app, _ = app_over(engine, tmp_path, Gate())
    outcome = app.search(SearchRequest("parse", project_root=str(repo)), wait_s=0.5)
    assert outcome.response is None
    assert outcome.progress is not None and outcome.progress.files_done == 2
    assert engine.runs[0].cancelled.is_set()  # this caller left; the engine decides whether the run goes on
    assert len(engine.requests(SearchRequest)) == 1


def test_a_declined_spend_builds_nothing(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    app, _ = app_over(engine, tmp_path, Gate(decline=True))
    with pytest.raises(SpendDeclinedError, match="not approved"):
        app.search(SearchRequest("parse", project_root=str(repo)))
    assert engine.runs == []
    assert not engine.requests(IndexProjectRequest)  # pyright: ignore[reportArgumentType]


def test_an_index_run_that_fails_fails_the_search(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.index_error = IndexMismatchError("the index was built with another chunker")
    app, _ = app_over(engine, tmp_path, Gate())
    with pytest.raises(IndexMismatchError, match="another chunker"):
        app.search(SearchRequest("parse", project_root=str(repo)))


# --- index and state ---------------------------------------------------------------------------------


def test_index_asks_the_gate_with_force_and_cancels_a_run_left_early(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    gate = Gate()
    app, _ = app_over(engine, tmp_path, gate)

    def stop(event: IndexProgress) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        app.index(repo, force=True, progress=stop)
    assert gate.asked == [(repo, True)]
    assert engine.runs[0].cancelled.is_set()
    summary = app.index(repo, approved=True)
    assert summary.root == str(repo)
    assert gate.asked == [(repo, True)]  # approved: not asked again


def test_a_run_that_ends_without_its_summary_is_an_error(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.stall_index = True
    app, _ = app_over(engine, tmp_path)
    with pytest.raises(DeadlineExceededError):
        app.index(repo, timeout=0.1)


def test_state_is_the_engines_word_with_absent_for_no_index(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    app, _ = app_over(engine, tmp_path)
    assert app.state(repo) is ProjectState.ABSENT
    engine.project(repo, ProjectState.INTERRUPTED)
    assert app.state(repo) is ProjectState.INTERRUPTED
    assert not (tmp_path / "cache").exists()  # nothing read from, or written to, a cache


def test_use_cases_without_policy_are_the_engines_own(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    app, _ = app_over(engine, tmp_path)
    with pytest.raises(InvalidRequestError, match="GetFileRequest is not a use case"):
        app.engine.call(GetFileRequest(str(repo), "src/a.py"))
    app.close()
    assert engine.closed


# --- several projects --------------------------------------------------------------------------------


def _hit(path: str, score: float) -> SearchHit:
    return SearchHit(path, 1, 3, "f", ChunkKind.FUNCTION, "python", score, "def f(): ...", (MatchType.BM25,))


def _repos(tmp_path: Path, *names: str) -> list[Path]:
    roots = [(tmp_path / name).resolve() for name in names]
    for root in roots:
        (root / ".git").mkdir(parents=True)
    return roots


def test_several_projects_merge_into_one_ranking_each_with_its_model(tmp_path: Path) -> None:
    roots = _repos(tmp_path, "a", "b")
    engine = FakeEngine()
    engine.project(roots[0])
    engine.project(roots[1], provider="voyage", model="voyage-code-3", dimension=1024)
    scores = {str(roots[0]): 0.9, str(roots[1]): 0.5}
    engine.answer(
        SearchRequest,
        lambda r: SearchResponse(
            [_hit(f"{Path(r.project_root).name}.py", scores[r.project_root])],
            {},
            1,
            0,
            search_type=SearchType.HYBRID,
            project_root=r.project_root,
        ),
    )
    app, _ = app_over(engine, tmp_path)
    outcome = app.search_projects(SearchRequest("parse", limit=5), roots)
    assert [(p, h.path) for p, h in outcome.results] == [(roots[0], "a.py"), (roots[1], "b.py")]
    assert all(r.explain for r in engine.requests(SearchRequest))
    assert [c for c in engine.calls if isinstance(c, StatusRequest)] == [
        StatusRequest(str(roots[0]), brief=True),
        StatusRequest(str(roots[1]), brief=True),
    ]


def test_two_folders_of_one_project_are_refused(tmp_path: Path, repo: Path) -> None:
    engine = FakeEngine()
    engine.project(repo)
    app, _ = app_over(engine, tmp_path)
    with pytest.raises(InvalidRequestError, match="both in the project"):
        app.search_projects(SearchRequest("parse"), [repo, repo / "src"])
    assert engine.calls == []


def test_files_answers_of_several_projects_are_calibrated_by_their_chunks(tmp_path: Path) -> None:
    roots = _repos(tmp_path, "a", "b")
    engine = FakeEngine()
    for root in roots:
        engine.project(root)

    def answer(r: SearchRequest) -> SearchResponse:
        name = Path(r.project_root).name
        if r.files:
            files = [FileHit(f"{name}.py", 0.8, "python", (LineRange(1, 3, "f"),))]
            return SearchResponse([], {}, 1, 0, search_type=SearchType.HYBRID, project_root=r.project_root, files=files)
        return SearchResponse([_hit(f"{name}.py", 0.7)], {}, 1, 0, search_type=SearchType.HYBRID)

    engine.answer(SearchRequest, answer)
    app, _ = app_over(engine, tmp_path)
    outcome = app.search_projects(SearchRequest("parse", files=True, limit=5), roots)
    assert sorted(f.path for _, f in outcome.files) == ["a.py", "b.py"]
    asked = engine.requests(SearchRequest)
    assert [r.files for r in asked] == [True, True, False, False]  # the answers, then their calibration
