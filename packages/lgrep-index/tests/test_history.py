"""The git history an index keeps for task questions (lgrep_index.history): mined at index time,
brought up to date incrementally, project-relative, bounded, and nothing the repository plants runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from lgrep_core.domain.history import MAX_FILES_PER_COMMIT, History
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.layout import HISTORY_FILE, project_dir, read_history
from lgrep_core.testing import FakeEmbedder
from lgrep_core.testing.repos import git
from lgrep_index.history import mine_history, refresh_history
from lgrep_index.pipeline import Indexer


def _commit(root: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    _commit(root, "Add the parser", {"src/parser.py": "def parse(): ...\n", "README.md": "hi\n"})
    _commit(
        root, "Fix parse of empty input\n\nAn empty string raised IndexError.", {"src/parser.py": "def parse(): 1\n"}
    )
    _commit(root, "Add the printer", {"src/printer.py": "def show(): ...\n", "src/parser.py": "def parse(): 2\n"})
    return root


def test_the_history_lists_commits_newest_first_with_their_files(repo: Path) -> None:
    history = mine_history(repo)
    assert history is not None and history.head == git(repo, "rev-parse", "HEAD").strip()
    assert [c.message.splitlines()[0] for c in history.commits] == [
        "Add the printer",
        "Fix parse of empty input",
        "Add the parser",
    ]
    assert history.commits[0].files == ("src/parser.py", "src/printer.py")
    assert "An empty string raised IndexError." in history.commits[1].message
    assert not history.shallow
    assert History.decode(history.encode()) == history


def test_a_project_in_a_subfolder_keeps_its_own_files_relative_to_itself(repo: Path) -> None:
    history = mine_history(repo / "src")
    assert history is not None
    assert {f for c in history.commits for f in c.files} == {"parser.py", "printer.py"}


def test_a_new_commit_is_added_in_front_and_a_rewrite_is_read_again(repo: Path) -> None:
    first = mine_history(repo)
    assert first is not None
    assert mine_history(repo, first) is first  # HEAD did not move: nothing is read
    _commit(repo, "Print in colour", {"src/printer.py": "def show(): 'red'\n"})
    second = mine_history(repo, first)
    assert second is not None and second.commits[1:] == first.commits
    assert second.commits[0].message == "Print in colour"
    git(repo, "commit", "-q", "--amend", "-m", "Print in color")  # the old head is no ancestor now
    third = mine_history(repo, second)
    assert third is not None and [c.message for c in third.commits][:1] == ["Print in color"]
    assert len(third.commits) == len(second.commits)


def test_no_history_outside_git_or_before_the_first_commit(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert mine_history(plain) is None
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert mine_history(empty) is None
    assert refresh_history(tmp_path / "index", plain) is None


def test_a_git_file_naming_another_repository_gives_no_history(repo: Path, tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "a.py").write_text("x = 1\n")
    (planted / ".git").write_text(f"gitdir: {repo / '.git'}\n")  # an archive can carry this
    assert mine_history(planted) is None


def test_a_linked_worktree_has_its_history(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    history = mine_history(linked)
    assert history is not None and history.head == git(repo, "rev-parse", "HEAD").strip()


def test_a_shallow_clone_gives_what_it_has(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    history = mine_history(clone)
    assert history is not None and history.shallow and len(history.commits) == 1


def test_a_sweep_keeps_its_message_but_not_its_files(repo: Path) -> None:
    many = {f"gen/f{i}.py": f"x = {i}\n" for i in range(MAX_FILES_PER_COMMIT + 1)}
    _commit(repo, "Regenerate everything", many)
    history = mine_history(repo)
    assert history is not None and history.commits[0].files == () and history.commits[0].message


def test_the_repositorys_own_configuration_runs_nothing(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hook = tmp_path / "planted.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "config", "core.pager", str(hook))
    git(repo, "config", "diff.external", str(hook))
    assert mine_history(repo) is not None
    assert not marker.exists()


def test_a_full_index_run_keeps_the_history_beside_the_index_and_follows_head(repo: Path, tmp_path: Path) -> None:
    settings = load_settings(
        None, env={"LGREP_CACHE_DIR": str(tmp_path / "cache")}, user_config=tmp_path / "none"
    ).settings
    Indexer(settings, repo, FakeEmbedder()).run()
    index_dir = project_dir(settings.cache_dir, repo)
    kept = read_history(index_dir)
    assert kept is not None and kept.head == git(repo, "rev-parse", "HEAD").strip()
    _commit(repo, "Print in colour", {"src/printer.py": "def show(): 'red'\n"})
    Indexer(settings, repo, FakeEmbedder()).run()
    again = read_history(index_dir)
    assert again is not None and again.commits[0].message == "Print in colour"
    (index_dir / HISTORY_FILE).write_bytes(b"not a history")  # damaged: read as none, then rewritten
    assert read_history(index_dir) is None
    Indexer(settings, repo, FakeEmbedder()).run()
    assert read_history(index_dir) == again
    assert [p.name for p in index_dir.iterdir()].count(HISTORY_FILE) == 1
