"""lgrep_core.app.scope.project_for: the one way from a path a command names to the project it works on,
for every purpose, over the kinds of path a user gives: a folder inside an indexed project, a folder
inside a git repository with no index, a plain folder, a file, and a path that does not exist."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from lgrep_core.app.scope import Purpose, Scope, project_for
from lgrep_core.domain.errors import InvalidRequestError, NotFoundError
from lgrep_core.storage.layout import project_dir


@dataclass(frozen=True)
class Tree:
    cache: Path
    indexed: Path  # a project with an index, and its folder `sub` holding `sub/a.py`
    repo: Path  # a git repository with no index, and its folder `sub`
    plain: Path  # a folder in no repository, and its folder `sub`


def _index(cache: Path, project: Path) -> None:
    """What makes a folder count as indexed (an index folder holding data, as an older lgrep left)."""
    (project_dir(cache, project) / "lance").mkdir(parents=True)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    root = tmp_path.resolve()
    t = Tree(root / "cache", root / "indexed", root / "repo", root / "plain")
    for project in (t.indexed, t.repo, t.plain):
        (project / "sub").mkdir(parents=True)
    (t.indexed / "sub" / "a.py").write_text("x = 1\n")
    (t.repo / ".git").mkdir()
    (t.repo / "sub" / "b.py").write_text("y = 2\n")
    _index(t.cache, t.indexed)
    return t


# How each purpose takes each kind of path: ("project", within) as paths of the tree, "exact" (the
# path as named, no project around it), or the error raised.
AROUND = {
    "indexed": ("indexed", "sub"),
    "git": ("repo", "sub"),
    "plain": ("plain/sub", None),
    "file": NotFoundError,
    "missing": NotFoundError,
}
TABLE: dict[Purpose, dict[str, object]] = {
    Purpose.SEARCH: AROUND,
    Purpose.SYMBOL: AROUND,
    Purpose.TRACE: AROUND,
    Purpose.FILES: AROUND,
    Purpose.INDEX: AROUND,
    Purpose.WATCH: AROUND,
    Purpose.STATUS: AROUND,
    Purpose.STATS: AROUND,
    Purpose.CONFIG: AROUND,
    Purpose.CANCEL: {**AROUND, "missing": "exact"},
    Purpose.UNWATCH: {**AROUND, "missing": "exact"},
    Purpose.FILE: {**AROUND, "file": ("indexed", None), "missing": ("indexed", None)},
    Purpose.CLEAN: {**AROUND, "indexed": InvalidRequestError, "git": "exact", "missing": "exact"},
    Purpose.RELEASES: {**AROUND, "indexed": "exact", "git": "exact", "plain": "exact"},
    Purpose.TAGS: {**AROUND, "indexed": "exact", "git": "exact", "plain": "exact"},
}
CASES = ("indexed", "git", "plain", "file", "missing")


def _path(tree: Tree, case: str) -> Path:
    return {
        "indexed": tree.indexed / "sub",
        "git": tree.repo / "sub",
        "plain": tree.plain / "sub",
        "file": tree.indexed / "sub" / "a.py",
        "missing": tree.indexed / "sub" / "gone",
    }[case]


def test_the_table_covers_every_purpose() -> None:
    assert set(TABLE) == set(Purpose)
    assert all(set(row) == set(CASES) for row in TABLE.values())


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("purpose", list(Purpose))
def test_each_purpose_takes_each_kind_of_path_by_its_rule(tree: Tree, purpose: Purpose, case: str) -> None:
    path = _path(tree, case)
    expected = TABLE[purpose][case]
    if isinstance(expected, type):
        with pytest.raises(expected):
            project_for(tree.cache, path, purpose)
        return
    scope = project_for(tree.cache, path, purpose)
    if expected == "exact":
        assert scope == Scope(path) and not scope.note
        return
    assert isinstance(expected, tuple)
    project, within = expected
    assert scope == Scope(tree.cache.parent / project, within)
    if within:  # said to the user, in the words of what is done
        assert scope.note.startswith(f"{path} is inside the project {tree.cache.parent / project}: ")
    else:
        assert not scope.note


def test_a_relative_path_and_a_home_path_are_taken_from_where_the_command_runs(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree.indexed)
    assert project_for(tree.cache, Path("sub"), Purpose.WATCH) == Scope(tree.indexed, "sub")
    assert project_for(tree.cache, Path(), Purpose.WATCH) == Scope(tree.indexed)
    monkeypatch.setenv("HOME", str(tree.cache.parent))
    assert project_for(tree.cache, Path("~/repo/sub"), Purpose.STATUS) == Scope(tree.repo, "sub")


def test_watch_and_unwatch_of_a_subfolder_name_the_same_project(tree: Tree) -> None:
    for case in ("indexed", "git"):
        path = _path(tree, case)
        watched = project_for(tree.cache, path, Purpose.WATCH)
        assert project_for(tree.cache, path, Purpose.UNWATCH).project == watched.project
        assert watched.note.endswith("watching that one")
        assert project_for(tree.cache, path, Purpose.UNWATCH).note.endswith("unwatching that one")


def test_a_watched_folder_is_a_project_like_an_indexed_one(tree: Tree) -> None:
    sub = tree.plain / "sub"
    (sub / "deeper").mkdir()
    for purpose in (Purpose.WATCH, Purpose.UNWATCH, Purpose.STATUS, Purpose.SEARCH):
        assert project_for(tree.cache, sub / "deeper", purpose, watched={sub}) == Scope(sub, "deeper")


def test_a_file_of_a_repository_with_no_index_names_the_repository(tree: Tree) -> None:
    assert project_for(tree.cache, tree.repo / "sub" / "b.py", Purpose.FILE) == Scope(tree.repo)
    assert project_for(tree.cache, tree.plain / "sub" / "c.py", Purpose.FILE) == Scope(tree.plain / "sub")


def test_clean_removes_a_folders_own_index_and_names_the_project_around_one_without(tree: Tree) -> None:
    assert project_for(tree.cache, tree.indexed, Purpose.CLEAN) == Scope(tree.indexed)
    with pytest.raises(InvalidRequestError, match=f"inside the project {tree.indexed}") as refused:
        project_for(tree.cache, tree.indexed / "sub", Purpose.CLEAN)
    assert f"lgrep clean {tree.indexed}" in refused.value.message
    _index(tree.cache, tree.indexed / "sub")  # a second index, of the subfolder (an older lgrep made them)
    assert project_for(tree.cache, tree.indexed / "sub", Purpose.CLEAN) == Scope(tree.indexed / "sub")


def test_a_release_read_needs_no_checkout_with_versions_on_object_storage(tree: Tree) -> None:
    gone = tree.plain / "mirrors" / "cua"
    assert project_for(tree.cache, gone, Purpose.RELEASES, versions_store="s3://bucket/versions") == Scope(gone)
    for store in ("", "/srv/versions", "file:///srv/versions"):
        with pytest.raises(NotFoundError, match="is not a directory"):
            project_for(tree.cache, gone, Purpose.RELEASES, versions_store=store)
    with pytest.raises(NotFoundError):  # indexing releases reads the tags of a checkout
        project_for(tree.cache, gone, Purpose.TAGS, versions_store="s3://bucket/versions")


def test_a_missing_folder_is_a_clear_not_found(tree: Tree) -> None:
    with pytest.raises(NotFoundError, match=r"nowhere is not a directory \(nothing is there\)"):
        project_for(tree.cache, tree.plain / "nowhere", Purpose.SEARCH)
    with pytest.raises(NotFoundError, match=r"a\.py is not a directory$"):
        project_for(tree.cache, tree.indexed / "sub" / "a.py", Purpose.STATUS)
