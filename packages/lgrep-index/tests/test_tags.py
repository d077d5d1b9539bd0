"""Indexing git tags as component@version: the mapping rules, content addressing proved by counters
against git's own view of the tags, incremental runs, and hostile trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lgrep_core.domain.errors import ConfigError, NotFoundError
from lgrep_core.settings.config import LgrepSettings, VersionsSettings
from lgrep_core.storage.versions import VersionStore, blob_key, store_location
from lgrep_core.testing.fakes import FakeEmbedder
from lgrep_core.testing.repos import git, write_tagged_repo
from lgrep_index.tags import TagIndexer, TagMapping


def _settings(cache: Path, **versions: object) -> LgrepSettings:
    return LgrepSettings.model_validate(
        {
            "index": {"cache_dir": str(cache)},
            "versions": {"scopes": {"agent": ["agent"], "server": ["server"]}, **versions},
        }
    )


def _run(settings: LgrepSettings, root: Path, embedder: FakeEmbedder, **kwargs: object):  # type: ignore[no-untyped-def]
    store = VersionStore(store_location(settings.cache_dir, "", root), label=str(root))
    return TagIndexer(settings, root, embedder, store, **kwargs).run(), store  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("agent-v0.7.3", ("agent", "0.7.3")),
        ("mcp-server-v0.1.15", ("mcp-server", "0.1.15")),
        ("computer-server-v0.1.28", ("computer-server", "0.1.28")),
        ("v0.1.13", ("cua", "0.1.13")),
        ("0.2.0", ("cua", "0.2.0")),
        ("@scope/pkg@1.2.0", ("@scope/pkg", "1.2.0")),
        ("lume-v0.2.1-beta.1", ("lume", "0.2.1-beta.1")),
        ("nightly-lume-v0.5.4-nightly.20260812.31608353501", ("nightly-lume", "0.5.4-nightly.20260812.31608353501")),
        ("latest", None),
        ("release-candidate", None),
        ("", None),
    ],
)
def test_builtin_rules(tag: str, expected: tuple[str, str] | None) -> None:
    assert TagMapping(VersionsSettings(), "cua").parse(tag) == expected


def test_configured_rules_come_first_and_bad_ones_are_config_errors() -> None:
    mapping = TagMapping(VersionsSettings(tag_rules=[r"^rel/(?P<component>[a-z]+)/(?P<version>.+)$"]), "repo")
    assert mapping.parse("rel/web/2.0.1") == ("web", "2.0.1")
    assert mapping.parse("web-v2.0.1") == ("web", "2.0.1")  # the built-ins still apply
    assert TagMapping(VersionsSettings(root_component="core"), "repo").parse("v1.0.0") == ("core", "1.0.0")
    with pytest.raises(ConfigError, match="version"):
        TagMapping(VersionsSettings(tag_rules=[r"^(?P<component>.+)$"]), "repo")
    with pytest.raises(ConfigError, match="not a valid pattern"):
        TagMapping(VersionsSettings(tag_rules=[r"^(unclosed"]), "repo")


def _distinct_contents(root: Path, tags: dict[str, tuple[str, str]]) -> tuple[set[str], int]:
    """From git itself: the distinct (blob, file name) keys the tags hold within their scopes, and
    the number of tag x file pairs."""
    keys: set[str] = set()
    pairs = 0
    for tag, (component, _) in tags.items():
        listing = git(root, "ls-tree", "-r", "--full-tree", f"{tag}^{{commit}}")
        for line in listing.splitlines():
            meta, path = line.split("\t", 1)
            sha = meta.split()[2]
            if component in ("agent", "server") and not path.startswith(component + "/"):
                continue
            keys.add(blob_key(sha, path))
            pairs += 1
    return keys, pairs


def test_each_distinct_file_is_read_chunked_and_embedded_once(tmp_path: Path) -> None:
    repo = write_tagged_repo(tmp_path / "mono", agent_releases=12, server_releases=10)
    settings = _settings(tmp_path / "cache")
    embedder = FakeEmbedder()
    head, status = git(repo.root, "rev-parse", "HEAD"), git(repo.root, "status", "--porcelain")

    summary, store = _run(settings, repo.root, embedder)

    keys, pairs = _distinct_contents(repo.root, repo.tags)
    assert summary.tags_indexed == len(repo.tags) == summary.tags_total
    assert summary.tag_file_pairs == pairs == summary.tag_file_pairs_total
    assert summary.blobs_read == len(keys) == summary.blobs_total  # each content read once
    assert pairs >= 4 * len(keys)
    # Each embedding key embedded once: the embedder saw exactly one text per stored vector.
    assert len(embedder.embedded_texts) == summary.vectors_embedded == summary.vectors_total
    assert summary.vectors_total <= summary.chunks_total < pairs
    store.open()
    assert summary.vectors_total == len(store.vector_keys())
    # The working tree and HEAD are untouched: no checkout happened.
    assert git(repo.root, "rev-parse", "HEAD") == head
    assert git(repo.root, "status", "--porcelain") == status


def test_a_rerun_reads_only_new_tags_and_drops_deleted_ones(tmp_path: Path) -> None:
    repo = write_tagged_repo(tmp_path / "mono", agent_releases=4, server_releases=2)
    settings = _settings(tmp_path / "cache")
    embedder = FakeEmbedder()
    first, store = _run(settings, repo.root, embedder)

    again, _ = _run(settings, repo.root, embedder)
    assert (again.tags_indexed, again.blobs_read, again.vectors_embedded) == (0, 0, 0)
    assert again.tags_unchanged == first.tags_indexed

    # A new release changes one file: only that content is read and embedded.
    (repo.root / "agent" / "core.py").write_text("def run(task):\n    '''A rewrite.'''\n    return task\n")
    git(repo.root, "commit", "-qam", "rewrite")
    git(repo.root, "tag", "agent-v0.5.0")
    texts_before = len(embedder.embedded_texts)
    third, _ = _run(settings, repo.root, embedder)
    assert (third.tags_indexed, third.blobs_read) == (1, 1)
    assert len(embedder.embedded_texts) - texts_before == third.vectors_embedded >= 1

    # A deleted tag disappears; content only it held goes with it.
    git(repo.root, "tag", "-d", "agent-v0.5.0")
    fourth, _ = _run(settings, repo.root, embedder)
    assert fourth.tags_removed == 1
    assert "agent-v0.5.0" not in {t.tag for t in store.tags()}
    assert fourth.blobs_total == first.blobs_total

    # A moved tag is indexed again at its new commit.
    git(repo.root, "tag", "-f", "agent-v0.1.0", "HEAD")
    fifth, _ = _run(settings, repo.root, embedder)
    assert fifth.tags_indexed == 1
    moved = next(t for t in store.tags() if t.tag == "agent-v0.1.0")
    assert moved.commit == git(repo.root, "rev-parse", "HEAD").strip()


def test_tag_patterns_and_tags_that_do_not_parse(tmp_path: Path) -> None:
    repo = write_tagged_repo(tmp_path / "mono", agent_releases=3, server_releases=3)
    git(repo.root, "tag", "not-a-release")
    tree = git(repo.root, "rev-parse", "HEAD^{tree}").strip()
    git(repo.root, "tag", "v9.0.0-tree", tree)  # a tag of a tree, not a commit
    settings = _settings(tmp_path / "cache")
    summary, store = _run(settings, repo.root, FakeEmbedder(), tag_patterns=("agent-*", "not-*", "v9*"))
    assert summary.tags_indexed == 3
    assert set(summary.unparsed) == {"not-a-release", "v9.0.0-tree"}
    assert {t.component for t in store.tags()} == {"agent"}


def test_hostile_trees_lose_nothing_and_serve_nothing_they_should_not(tmp_path: Path) -> None:
    root = tmp_path / "hostile"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "ok.py").write_text("def fine():\n    return 'indexed'\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (root / ".env").write_text("API_KEY=sk-live-abcdefabcdefabcdefabcdef\n")
    (root / "big.py").write_text("x = 1\n" * 400_000)
    (root / "link.py").symlink_to("/etc/passwd")
    (root / "ignored").mkdir()
    (root / "ignored" / "skip.py").write_text("def hidden():\n    pass\n")
    (root / ".lgrepignore").write_text("ignored/\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("module.exports = 1\n")
    weird = Path(os.fsdecode(os.fsencode(str(root)) + b"/caf\xe9.py"))
    weird.write_bytes(b"def latin():\n    return 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "hostile")
    git(root, "tag", "v1.0.0")
    settings = LgrepSettings.model_validate(
        {"index": {"cache_dir": str(tmp_path / "cache"), "max_file_bytes": 100_000}}
    )
    summary, store = _run(settings, root, FakeEmbedder())
    assert summary.tags_indexed == 1
    assert summary.skipped.get("binary") == 1
    assert summary.skipped.get("secret") == 1
    assert summary.skipped.get("too-large") == 1
    assert summary.skipped.get("symlink") == 1
    paths = {e.path for e in store.entries().values()}
    assert "ok.py" in paths
    assert not paths & {"blob.bin", ".env", "big.py", "link.py", "ignored/skip.py", "node_modules/dep.js"}
    assert any(p.startswith("caf") and p.endswith(".py") for p in paths)  # an escaped non-UTF-8 name


def test_a_folder_that_is_not_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="not a git repository"):
        _run(_settings(tmp_path / "cache"), tmp_path, FakeEmbedder())


def test_a_killed_run_leaves_nothing_twice_and_a_damaged_index_says_what_to_run(tmp_path: Path) -> None:
    import shutil

    from lgrep_core.domain.errors import StorageError

    repo = write_tagged_repo(tmp_path / "mono", agent_releases=2, server_releases=1)
    settings = _settings(tmp_path / "cache")
    first, store = _run(settings, repo.root, FakeEmbedder())
    store.open()
    # A run killed between a blob's chunks and its blob row: chunks of a key no blob row names.
    some_blob = next(k for k, (skip, _, _) in store.blob_infos().items() if not skip)
    full = store.chunks_of([some_blob], list(store._table("chunks").schema.names))
    full["blob_key"] = ["0" * 32] * len(full["blob_key"])
    store._write("chunks", full)
    assert store.drop_unfinished() == 1
    assert store.counts()["chunks"] == first.chunks_total

    # Damage: a table's files gone. Reads and runs say to rebuild; --force does.
    shutil.rmtree(Path(store.location) / "entries.lance")
    broken = VersionStore(store.location, label=str(repo.root))
    with pytest.raises(StorageError, match="--tags --force"):
        broken.open()
        broken.entries()
    with pytest.raises(StorageError, match="--tags --force"):
        _run(settings, repo.root, FakeEmbedder())
    store = VersionStore(store.location, label=str(repo.root))
    rebuilt = TagIndexer(settings, repo.root, FakeEmbedder(), store).run(force=True)
    assert rebuilt.tags_total == len(repo.tags)


def test_a_blob_over_the_limit_is_never_held_in_memory(tmp_path: Path) -> None:
    import tracemalloc

    from lgrep_index.git import GitRepo

    root = tmp_path / "big"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    line = b"# " + b"x" * 60 + b"\n"
    with (root / ".lgrepignore").open("wb") as f:
        for _ in range(32 * 2**20 // len(line)):
            f.write(line)
    (root / "small.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "big")
    repo = GitRepo(root)
    sha = {e.path: e.sha for e in repo.tree("HEAD")}
    with repo.blobs() as reader:
        tracemalloc.start()
        try:
            assert reader.read(sha[".lgrepignore"], 1_000_000) is None
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert reader.read(sha["small.py"], 1_000_000) == b"x = 1\n"  # the stream is still in step
    assert peak < 4 * 2**20, f"{peak / 2**20:.0f} MB held to pass over a 32 MB blob"


def test_a_tag_of_a_tag_is_peeled_to_its_commit(tmp_path: Path) -> None:
    from lgrep_index.git import GitRepo

    root = tmp_path / "nested"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    head = git(root, "rev-parse", "HEAD").strip()
    git(root, "tag", "-a", "inner", "-m", "inner")
    git(root, "-c", "advice.nestedTag=false", "tag", "-a", "outer", "-m", "outer", "inner")
    git(root, "-c", "advice.nestedTag=false", "tag", "-a", "outermost", "-m", "again", "outer")
    git(root, "tag", "-a", "tree-tag", "-m", "a tree", "HEAD^{tree}")
    git(root, "-c", "advice.nestedTag=false", "tag", "-a", "tree-tag-tag", "-m", "of a tree", "tree-tag")
    refs = {r.name: (r.commit, r.target_type) for r in GitRepo(root).tags()}
    assert refs["inner"] == refs["outer"] == refs["outermost"] == (head, "commit")
    assert refs["tree-tag"] == refs["tree-tag-tag"] == ("", "tree")


def test_a_tag_with_more_new_files_than_a_commit_holds_is_written_in_bounded_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One release can bring a whole tree of new files (the bare `v...` tags of trycua/cua): its
    rows go in commits of a bounded size, and its tag row only after every file it names."""
    import lgrep_index.tags as tags_module

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for i in range(7):
        (root / f"mod{i}.py").write_text(f"def handler_{i}(event):\n    return event * {i}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "all at once")
    git(root, "tag", "v1.0.0")
    monkeypatch.setattr(tags_module, "BLOBS_PER_COMMIT", 3)
    settings = _settings(tmp_path / "cache")
    store = VersionStore(store_location(settings.cache_dir, "", root), label=str(root))
    writes: list[tuple[str, int]] = []
    add_blobs, put_tags = store.add_blobs, store.put_tags

    def record_blobs(blobs: list[object], chunks: dict[str, list[object]]) -> None:
        writes.extend([("blobs", len(blobs))] * bool(blobs))
        add_blobs(blobs, chunks)  # type: ignore[arg-type]

    def record_tags(rows: list[object]) -> None:
        writes.extend([("tags", len(rows))] * bool(rows))
        put_tags(rows)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "add_blobs", record_blobs)
    monkeypatch.setattr(store, "put_tags", record_tags)

    summary = TagIndexer(settings, root, FakeEmbedder(), store).run()

    assert writes == [("blobs", 3), ("blobs", 3), ("blobs", 1), ("tags", 1)]
    assert (summary.tags_total, summary.blobs_total, summary.tag_file_pairs_total) == (1, 7, 7)
    store.open()
    assert len(store.tags()[0].entry_ids) == 7
