"""The git state a search compares with the last full index run's (lgrep_index.freshness): it moves
with a checkout, a commit or a reset, in a linked worktree too, and stays put for what rewrites no
ref (`git status`, an edit); outside git there is none."""

from __future__ import annotations

from pathlib import Path

import pytest
from lgrep_core.storage.layout import project_dir
from lgrep_core.testing.repos import git
from lgrep_index.freshness import git_state, record_git_state, recorded_git_state


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("A = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    git(root, "branch", "other")
    return root


def test_a_checkout_a_commit_and_a_reset_move_the_state(repo: Path) -> None:
    start = git_state(repo)
    assert start is not None and git_state(repo / ".") == start
    git(repo, "checkout", "-q", "other")
    on_other = git_state(repo)
    assert on_other != start
    git(repo, "checkout", "-q", "main")
    assert git_state(repo) == start
    (repo / "b.py").write_text("B = 2\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "two")
    committed = git_state(repo)
    assert committed != start
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert git_state(repo) == start


def test_what_moves_no_ref_leaves_the_state_alone(repo: Path) -> None:
    start = git_state(repo)
    (repo / "a.py").write_text("A = 2\n")
    index = repo / ".git" / "index"
    before = index.stat().st_mtime_ns
    git(repo, "status", "--porcelain")  # refreshes .git/index (its stat data)
    git(repo, "add", "a.py")  # the index file changes for sure: still no ref moved
    assert index.stat().st_mtime_ns != before
    assert git_state(repo) == start


def test_a_linked_worktree_has_its_own_state(repo: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", str(tree), "other")
    state = git_state(tree)
    assert state is not None and state != git_state(repo)
    (tree / "c.py").write_text("C = 3\n")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "on other")
    assert git_state(tree) != state


def test_no_state_outside_git_and_the_record_round_trips(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_state(plain) is None
    cache = tmp_path / "cache"
    project_dir(cache, plain).mkdir(parents=True)
    assert recorded_git_state(cache, plain) is None
    record_git_state(cache, plain, ["ref: refs/heads/main", "0" * 40])
    assert recorded_git_state(cache, plain) == ["ref: refs/heads/main", "0" * 40]
    record_git_state(cache, plain, None)
    assert recorded_git_state(cache, plain) is None
