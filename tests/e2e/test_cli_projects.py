"""Every command finds its project one way (lgrep_core.app.scope.project_for): a folder inside a project
names that project, whichever command is given it, and the command says so on stderr. In this
process and without a model: watching needs the daemon, so a stand-in for the daemon's watch list
answers `watch` and `unwatch` here (tests/e2e/test_daemon.py watches through a real one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lgrep_cli.local import LocalEngine
from lgrep_core.domain.models import UnwatchProjectRequest, WatchProjectRequest, WatchResult
from lgrep_core.storage.layout import project_dir

from tests.conftest import InProcessLgrep


def _repository(folder: Path) -> Path:
    (folder / ".git").mkdir()
    return folder.resolve()


class _DaemonWatches:
    """What the daemon's watch list does with the root it is sent."""

    def __init__(self) -> None:
        self.watched: set[Path] = set()
        self.calls: list[tuple[str, Path]] = []

    def watch(self, request: WatchProjectRequest) -> WatchResult:
        root = Path(request.project_root)
        self.calls.append(("watch", root))
        already = root in self.watched
        self.watched.add(root)
        return WatchResult(watched=True, already_watched=already)

    def unwatch(self, request: UnwatchProjectRequest) -> bool:
        root = Path(request.project_root)
        self.calls.append(("unwatch", root))
        was = root in self.watched
        self.watched.discard(root)
        return was


@pytest.fixture
def watches(monkeypatch: pytest.MonkeyPatch) -> _DaemonWatches:
    fake = _DaemonWatches()
    # The engine's handlers of WatchProjectRequest and UnwatchProjectRequest, bound to the stand-in:
    # the engine's `self` is not passed on.
    monkeypatch.setattr(LocalEngine, "_watch", fake.watch)
    monkeypatch.setattr(LocalEngine, "_unwatch", fake.unwatch)
    return fake


def test_watch_then_unwatch_of_a_subfolder_act_on_the_repository(
    lgrep_here: InProcessLgrep, mini_repo: Path, watches: _DaemonWatches
) -> None:
    repo = _repository(mini_repo)
    src = repo / "auth"
    on = lgrep_here("watch", str(src))
    assert f"{src} is inside the project {repo}: watching that one" in on.err, on.err
    assert f"{repo} is now watched" in on.err
    off = lgrep_here("unwatch", "auth", cwd=repo)  # relative, as a user types it
    assert f"{src} is inside the project {repo}: unwatching that one" in off.err, off.err
    assert f"{repo} is no longer watched" in off.err
    assert watches.calls == [("watch", repo), ("unwatch", repo)] and not watches.watched
    again = lgrep_here("unwatch", str(src), "--json")
    assert again.json() == {"project_root": str(repo), "was_watched": False}


def test_a_deleted_project_can_still_be_unwatched_and_a_missing_folder_is_not_watched(
    lgrep_here: InProcessLgrep, tmp_path: Path, watches: _DaemonWatches
) -> None:
    gone = tmp_path.resolve() / "gone"
    watches.watched.add(gone)
    assert f"{gone} is no longer watched" in lgrep_here("unwatch", str(gone)).err
    missing = lgrep_here("watch", str(gone), check=False)
    assert missing.code != 0 and "gone is not a directory (nothing is there)" in missing.err
    assert "Traceback" not in missing.err and watches.calls == [("unwatch", gone)]


def test_status_stats_clean_and_config_of_a_subfolder_name_its_project(
    lgrep_here: InProcessLgrep, mini_repo: Path
) -> None:
    repo = mini_repo.resolve()
    sub = repo / "auth"
    index = project_dir(lgrep_here.cache, repo)
    (index / "lance").mkdir(parents=True)  # an index (one an older lgrep wrote: no model needed)

    status = lgrep_here("status", str(sub), "--json", "--no-daemon")
    assert status.json()["project_root"] == str(repo)
    assert f"{sub} is inside the project {repo}: showing that one" in status.err, status.err
    stats = lgrep_here("stats", str(sub), "--json")
    assert f"{sub} is inside the project {repo}: showing that one" in stats.err, stats.err
    shown = lgrep_here("config", "show", str(sub), "--json")
    assert f"inside the project {repo}: showing the settings of that one" in shown.err, shown.err

    # Clean never removes the project's index because a folder inside it was named: it says which.
    refused = lgrep_here("clean", str(sub), "--no-daemon", check=False)
    assert refused.code != 0 and f"`lgrep clean {repo}` removes" in refused.err, refused.err
    assert (index / "lance").is_dir()
    assert "removed the index of" in lgrep_here("clean", str(repo), "--no-daemon").err
    assert not index.exists()
