"""The team store's parts without the model (ADR 0034): repository names, writing HEAD's tree from
git (hostile names left out), publications and their manifests, damage, pruning under a reader."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from lgrep_core.domain.errors import ConfigError
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.team import PublicationInfo, PublishedFile, TeamRefusal, TeamStore, vector_checks
from lgrep_core.testing.repos import git
from lgrep_index.git import GitRepo
from lgrep_index.publish import materialize
from lgrep_index.team import repository_slug


@pytest.mark.parametrize(
    ("url", "slug"),
    [
        ("git@github.com:Acme/Widget.git", "github.com/Acme/Widget"),
        ("https://user:t0ken@github.com/Acme/Widget", "github.com/Acme/Widget"),
        ("ssh://git@gitlab.example.com:2222/group/sub/proj.git", "gitlab.example.com/group/sub/proj"),
        ("/srv/git/widget.git", "widget"),
        ("file:///srv/git/widget.git", "widget"),
        ("https://host/a/../../etc/passwd", "host/a/etc/passwd"),
    ],
)
def test_repository_names_come_from_the_remote_without_credentials(url: str, slug: str) -> None:
    assert repository_slug(url) == slug
    assert "t0ken" not in repository_slug(url)


def test_a_repository_file_cannot_choose_the_team_store(tmp_path: Path) -> None:
    (tmp_path / ".lgrep.yaml").write_text("team:\n  store: s3://attacker/bucket\n")
    with pytest.raises(ConfigError):
        load_settings(tmp_path, env={})


def _commit_tree(root: Path, entries: list[tuple[str, str, str]]) -> str:
    """A commit whose tree has exactly `entries` (mode, name, content), names as given (git mktree
    takes names a checkout would refuse)."""
    lines = []
    for mode, name, content in entries:
        blob = (
            subprocess.run(
                ["git", "-C", str(root), "hash-object", "-w", "--stdin"],
                input=content.encode(),
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        lines.append(f"{mode} blob {blob}\t{name}")
    tree = (
        subprocess.run(
            ["git", "-C", str(root), "mktree"],
            input=("\n".join(lines) + "\n").encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    return git(root, "commit-tree", tree, "-m", "crafted").strip()


def test_heads_tree_is_written_without_hostile_names_or_symlinks(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    commit = _commit_tree(
        repo_dir,
        [
            ("100644", "ok.py", "def ok():\n    pass\n"),
            ("100644", "..", "escape\n"),
            ("100644", ".git", "planted\n"),
            ("120000", "link", "/etc/passwd"),
            ("100644", "big.txt", "x" * 5000),
        ],
    )
    tree = tmp_path / "work" / "tree"
    written, refused = materialize(GitRepo(repo_dir), commit, tree, max_file_bytes=1000)
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == ["ok.py"]
    assert [e.path for e in written] == ["ok.py"]
    assert refused == 2
    assert not (tmp_path / "work" / "escape").exists()


def test_the_tree_follows_the_next_commit_rewriting_only_what_changed(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q", "-b", "main")
    (repo_dir / "a.py").write_text("a = 1\n")
    (repo_dir / "b").write_text("a file that becomes a folder\n")
    git(repo_dir, "add", "-A")
    git(repo_dir, "commit", "-qm", "one")
    tree = tmp_path / "work" / "tree"
    materialize(GitRepo(repo_dir), git(repo_dir, "rev-parse", "HEAD").strip(), tree, 10_000)
    before = (tree / "a.py").stat().st_mtime_ns
    (repo_dir / "b").unlink()
    (repo_dir / "b").mkdir()
    (repo_dir / "b" / "c.py").write_text("c = 3\n")
    (repo_dir / "d.py").write_text("d = 4\n")
    git(repo_dir, "add", "-A")
    git(repo_dir, "commit", "-qm", "two")
    materialize(GitRepo(repo_dir), git(repo_dir, "rev-parse", "HEAD").strip(), tree, 10_000)
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == ["a.py", "b/c.py", "d.py"]
    assert (tree / "a.py").stat().st_mtime_ns == before  # unchanged: not rewritten


def _info(commit: str, created: float, n: int) -> PublicationInfo:
    identity = {"provider": "local", "model": "m", "dimension": 4}
    return PublicationInfo(commit, "host/o/r", "root", created, identity, "fp", {}, 1, n, n, n * 16, "test")


def _publish(store: TeamStore, commit: str, created: float, keys: list[str]) -> PublicationInfo:
    rng = np.random.default_rng(len(keys) + int(created))
    vectors = rng.standard_normal((len(keys), 4)).astype(np.float32)
    held = store.stored_checks("fp", keys) if store.exists() else {}
    new = [k for k in keys if k not in held]
    checks = dict(held)
    if new:
        at = [keys.index(k) for k in new]
        checks.update(zip(new, store.add_vectors("fp", new, vectors[at]), strict=True))
    return store.add_publication(
        _info(commit, created, len(keys)), keys, [checks[k] for k in keys], [PublishedFile("a.py", "0" * 64, len(keys))]
    )


def _key(i: int) -> str:
    return f"{i:032x}"


def test_a_manifest_is_checked_and_vectors_against_it(tmp_path: Path) -> None:
    store = TeamStore(str(tmp_path / "store"))
    pub = _publish(store, "c1", 1.0, [_key(i) for i in range(10)])
    [listed] = store.publications()
    manifest = store.manifest(listed)
    assert manifest.contains([_key(3), _key(99)]) == [_key(3)]
    got = dict(zip(*next(iter(store.read_vectors(pub, manifest, [_key(1), _key(2)]))), strict=False))
    assert set(got) == {_key(1), _key(2)}
    # a vector changed behind the manifest's back
    table = store._table("vectors_fp")
    rows = table.to_arrow().to_pylist()
    rows[1]["vector"] = [v + 1.0 for v in rows[1]["vector"]]
    table.delete("true")
    table.add(rows)
    with pytest.raises(TeamRefusal) as refused:
        list(store.read_vectors(pub, manifest, [_key(i) for i in range(10)]))
    assert refused.value.reason == "damaged"


def test_pruning_keeps_the_newest_and_a_pinned_reader_finishes(tmp_path: Path) -> None:
    writer = TeamStore(str(tmp_path / "store"))
    old = _publish(writer, "c1", 1.0, [_key(i) for i in range(8)])
    reader = TeamStore(str(tmp_path / "store"))
    manifest = reader.manifest(reader.publications()[0])
    reader.pin("fp")
    _publish(writer, "c2", 2.0, [_key(i) for i in range(4, 12)])
    dropped, vectors_dropped = writer.prune(1, timedelta(minutes=60))
    assert (dropped, vectors_dropped) == (1, 4)
    assert [p.commit for p in writer.publications()] == ["c2"]
    # the reader that started on c1 still reads all of it, from the version it pinned
    got = [k for keys, _ in reader.read_vectors(old, manifest, [_key(i) for i in range(8)]) for k in keys]
    assert sorted(got) == [_key(i) for i in range(8)]


def test_checks_name_key_and_bytes() -> None:
    v = np.ones((2, 4), np.float32)
    a, b = vector_checks(["k1", "k2"], v)
    assert a != b and len(a) == 16
