"""The team index through the `lgrep` command (ADR 0034): CI publishes a commit's vectors to a store,
a member with a fresh cache and a clone one commit ahead with local edits seeds from it, and gets the
answers a local build of the same tree gives. Each refusal is named and the member builds locally.

The store here is a local folder (team.store may be one); tests/integration/test_team_s3.py runs the
same flow against a real S3 server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lgrep_core.testing.repos import git

from tests.conftest import InProcessLgrep, Lgrep

pytestmark = pytest.mark.model

QUESTIONS = (
    "where do we verify JWT signatures",
    "evict the least recently used entry",
    "rate limit requests per client",
    "load the server configuration",
    "LoadConfig",
)


def _commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def _member(lgrep: Lgrep, tmp_path: Path, name: str, **env: str) -> InProcessLgrep:
    """Another machine: its own HOME and cache dir (sharing the test run's model graph)."""
    cache = tmp_path / f"{name}-cache"
    cache.mkdir()
    (cache / "models").symlink_to((lgrep.cache / "models").resolve(), target_is_directory=True)
    home = tmp_path / f"{name}-home"
    home.mkdir()
    return InProcessLgrep(cache, {**lgrep.env, "HOME": str(home), "LGREP_CACHE_DIR": str(cache), **env})


@pytest.fixture
def published(lgrep: Lgrep, mini_repo: Path, tmp_path: Path) -> dict[str, object]:
    """mini_repo as a git repository (origin github.com/acme/mini) published by "CI" to a folder store,
    then a member's clone one commit ahead, with an uncommitted edit, an untracked file and a deleted file."""
    git(mini_repo, "init", "-q", "-b", "main")
    git(mini_repo, "remote", "add", "origin", "git@github.com:acme/mini.git")
    first = _commit(mini_repo, "first")
    store = tmp_path / "team-store"
    ci = _member(lgrep, tmp_path, "ci", LGREP_TEAM_STORE=str(store))
    out = ci("publish", str(mini_repo), "--json").json()
    assert out["commit"] == first
    assert out["vectors_uploaded"] == out["vectors"] > 0

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(mini_repo), str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/mini")
    (clone / "auth" / "sessions.py").write_text(
        'def rotate_session_key(store, user):\n    """Issue a fresh session key and revoke the old one."""\n'
        "    old = store.pop(user, None)\n    store[user] = new_key()\n    return old\n"
    )
    _commit(clone, "sessions")  # one commit ahead of the publication
    rate = clone / "web" / "rateLimiter.ts"
    rate.write_text(rate.read_text() + "\nexport function drainBucketNow(limiter: RateLimiter): void {}\n")
    (clone / "notes_local.py").write_text("def only_on_my_machine():\n    return 'scratch'\n")
    deleted = next(p for p in sorted(clone.rglob("*.go")))
    deleted.unlink()
    return {"store": store, "first": first, "clone": clone, "deleted": deleted.relative_to(clone).as_posix()}


def _top10(run: InProcessLgrep, root: Path, question: str) -> list[tuple[str, int]]:
    out = run("search", question, str(root), "--json", "-n", "10").json()
    return [(h["path"], h["start_line"]) for h in out["results"]]


def test_a_member_seeds_from_the_publication_and_answers_as_a_local_build(
    lgrep: Lgrep, tmp_path: Path, published: dict[str, object]
) -> None:
    clone = published["clone"]
    assert isinstance(clone, Path)
    member = _member(lgrep, tmp_path, "member", LGREP_TEAM_STORE=str(published["store"]))
    summary = member("seed", str(clone), "--json").json()
    seed = summary["seed"]
    assert seed["reason"] == "", seed
    assert seed["commit"] == published["first"]
    assert seed["repository"] == "github.com/acme/mini"
    assert seed["vectors_copied"] > 0
    assert seed["bytes_copied"] > 0
    # changed (rateLimiter.ts), added (sessions.py, notes_local.py), deleted (the .go file)
    assert seed["files_overlaid"] == 4
    # only what differs from the publication was embedded here
    assert 0 < summary["vectors_embedded"] < seed["vectors_copied"]
    assert summary["vectors_pending"] == 0

    local = _member(lgrep, tmp_path, "local")  # no store: builds everything
    built = local("index", str(clone), "--json").json()
    assert built["seed"] is None
    assert built["chunks_total"] == summary["chunks_total"]
    assert built["vectors_embedded"] == summary["vectors_embedded"] + seed["vectors_copied"]
    # A text's vector depends on the text alone (one text per int8 run), so the vectors copied from
    # CI's build are the ones this machine would compute: the answers are the same, ties included.
    for question in QUESTIONS:
        assert _top10(member, clone, question) == _top10(local, clone, question), question

    hits = member("search", "rotate the session key and revoke the old one", str(clone), "--json").json()["results"]
    assert hits[0]["path"] == "auth/sessions.py"
    edited = member("search", "drainBucketNow", str(clone), "--json").json()["results"]
    assert edited[0]["path"] == "web/rateLimiter.ts"
    assert "drainBucketNow" in edited[0]["content"]
    for question in (*QUESTIONS, "server configuration in Go"):
        paths = {h["path"] for h in member("search", question, str(clone), "--json").json()["results"]}
        assert published["deleted"] not in paths

    again = member("seed", str(clone), "--json")  # asks again: nothing left to copy
    assert again.json()["seed"]["commit"] == published["first"]
    assert again.json()["seed"]["vectors_copied"] == 0 and again.json()["vectors_embedded"] == 0
    assert "warning" not in again.err
    status = member("status", str(clone), "--json").json()
    assert status["seed"]["commit"] == published["first"]
    assert status["seed"]["vectors_copied"] == seed["vectors_copied"]  # the record of the first seed
    assert status["seed"]["files_overlaid"] == 4
    assert status["seed"]["age_seconds"] >= 0
    text = member("status", str(clone)).out
    assert "seeded" in text and str(published["first"])[:12] in text


def test_the_first_search_seeds_on_its_own(lgrep: Lgrep, tmp_path: Path, published: dict[str, object]) -> None:
    clone = published["clone"]
    assert isinstance(clone, Path)
    member = _member(lgrep, tmp_path, "member", LGREP_TEAM_STORE=str(published["store"]))
    member("search", "verify JWT", str(clone), "--json")
    assert member("status", str(clone), "--json").json()["seed"]["commit"] == published["first"]


def test_a_publication_holds_head_only_and_no_path_of_the_publisher(
    lgrep: Lgrep, mini_repo: Path, tmp_path: Path
) -> None:
    git(mini_repo, "init", "-q", "-b", "main")
    head = _commit(mini_repo, "first")
    (mini_repo / "auth" / "tokens.py").write_text("def uncommitted_secret_plan():\n    return 'not yet'\n")
    (mini_repo / "untracked_draft.py").write_text("def draft_idea():\n    pass\n")
    store = tmp_path / "store"
    ci = _member(lgrep, tmp_path, "ci", LGREP_TEAM_STORE=str(store))

    planned = ci("publish", str(mini_repo), "--dry-run", "--json").json()
    assert planned["dry_run"] is True
    assert planned["vectors_uploaded"] == planned["vectors"] > 0
    assert planned["bytes_uploaded"] > 0
    listed = {p["path"] for p in planned["planned"]}
    assert "auth/tokens.py" in listed and "untracked_draft.py" not in listed
    assert not store.exists() or not any(store.rglob("*.lance")), "a dry run uploads nothing"

    out = ci("publish", str(mini_repo), "--json").json()
    assert out["commit"] == head
    assert out["local_changes_not_published"] == 1
    assert out["untracked_not_published"] == 1
    # The member with HEAD's content seeds every vector: the publication is HEAD's, not the edit's.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(mini_repo), str(clone)], check=True)
    member = _member(lgrep, tmp_path, "member", LGREP_TEAM_STORE=str(store))
    summary = member("seed", str(clone), "--json").json()
    assert summary["seed"]["files_overlaid"] == 0
    assert summary["vectors_embedded"] == 0

    blob = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    for private in (str(mini_repo), str(tmp_path), "uncommitted_secret_plan", "draft_idea"):
        assert private.encode() not in blob, private


def test_republishing_after_a_commit_uploads_only_new_vectors(lgrep: Lgrep, mini_repo: Path, tmp_path: Path) -> None:
    git(mini_repo, "init", "-q", "-b", "main")
    _commit(mini_repo, "first")
    store = tmp_path / "store"
    ci = _member(lgrep, tmp_path, "ci", LGREP_TEAM_STORE=str(store), LGREP_TEAM__KEEP="1")
    first = ci("publish", str(mini_repo), "--json").json()
    (mini_repo / "auth" / "sessions.py").write_text("def end_session(user):\n    return None\n")
    second_commit = _commit(mini_repo, "second")
    # a fresh runner (no cache of the last publish) still embeds only the new file
    runner = _member(lgrep, tmp_path, "runner", LGREP_TEAM_STORE=str(store), LGREP_TEAM__KEEP="1")
    second = runner("publish", str(mini_repo), "--json").json()
    assert second["commit"] == second_commit
    assert second["vectors_embedded"] == second["vectors_uploaded"] == 1
    assert second["vectors_from_store"] == first["vectors"]
    assert second["pruned"] == 1  # team.keep = 1


def _store_table(store: Path, name: str) -> Path:
    found = [p for p in store.rglob(f"{name}*.lance") if p.is_dir()]
    assert found, f"no {name} table under {store}"
    return found[0]


@pytest.mark.parametrize(
    "case", ["other_model", "other_repository", "not_in_history", "damaged", "empty", "unreachable"]
)
def test_each_refusal_is_named_and_the_member_builds_locally(
    lgrep: Lgrep, tmp_path: Path, published: dict[str, object], case: str
) -> None:
    clone = published["clone"]
    assert isinstance(clone, Path)
    store = published["store"]
    assert isinstance(store, Path)
    env = {"LGREP_TEAM_STORE": str(store)}
    if case == "other_model":
        env["LGREP_CHUNKING__MAX_TOKENS"] = "200"
    elif case == "other_repository":
        other = tmp_path / "other"
        other.mkdir()
        (other / "a.py").write_text("def a():\n    pass\n")
        git(other, "init", "-q", "-b", "main")
        git(other, "remote", "add", "origin", "git@github.com:acme/mini.git")
        _commit(other, "unrelated history")
        clone = other
    elif case == "damaged":
        import lancedb

        table_dir = _store_table(store, "vectors_")
        db = lancedb.connect(str(table_dir.parent))
        table = db.open_table(table_dir.name.removesuffix(".lance"))
        rows = table.to_arrow().to_pylist()
        rows[0]["vector"] = [v + 0.5 for v in rows[0]["vector"]]
        table.delete("true")
        table.add(rows)
    elif case == "not_in_history":
        # the store holds only a later commit of the same repository, which this clone never fetched
        upstream = tmp_path / "mini"
        (upstream / "later.py").write_text("def later():\n    return 2\n")
        _commit(upstream, "later")
        env["LGREP_TEAM_STORE"] = str(tmp_path / "later-store")
        _member(lgrep, tmp_path, "ci-later", **env)("publish", str(upstream), "--json")
    elif case == "empty":
        env["LGREP_TEAM_STORE"] = str(tmp_path / "empty-store")
    elif case == "unreachable":
        env["LGREP_TEAM_STORE"] = "s3://no-such-bucket/lgrep"
        env["LGREP_TEAM_STORAGE_OPTIONS"] = json.dumps(
            {
                "aws_endpoint": "http://127.0.0.1:9",
                "allow_http": "true",
                "aws_access_key_id": "x",
                "aws_secret_access_key": "y",
                "aws_region": "us-east-1",
            }
        )
    member = _member(lgrep, tmp_path, "member", **env)
    result = member("seed", str(clone), "--json")
    summary = result.json()
    assert summary["seed"]["reason"] == case, summary["seed"]
    assert summary["seed"]["refused"], summary["seed"]
    assert summary["vectors_pending"] == 0 and summary["chunks_total"] > 0  # built locally
    assert "not seeded" in result.err
    status = member("status", str(clone), "--json").json()
    assert status["state"] == "ready"
    assert status["seed"] is None


def test_seed_without_a_store_says_what_to_set(lgrep: Lgrep, tmp_path: Path, published: dict[str, object]) -> None:
    member = _member(lgrep, tmp_path, "member")
    result = member("seed", str(published["clone"]), check=False)
    assert result.code != 0
    assert "team.store" in result.err
    assert "Traceback" not in result.err


def test_publish_outside_a_repository_is_a_clear_error(lgrep: Lgrep, mini_repo: Path, tmp_path: Path) -> None:
    ci = _member(lgrep, tmp_path, "ci", LGREP_TEAM_STORE=str(tmp_path / "store"))
    result = ci("publish", str(mini_repo), check=False)
    assert result.code != 0
    assert "git repository" in result.err
    assert "Traceback" not in result.err
    assert not (tmp_path / "store").exists(), "nothing is written for a folder that is not a repository"


def test_after_a_pull_the_index_takes_the_newer_publication(
    lgrep: Lgrep, tmp_path: Path, published: dict[str, object]
) -> None:
    """A member seeded at one commit pulls a later one that CI published: the run that indexes the
    pull (64 or more chunks to embed) copies their vectors instead of embedding them."""
    from tests.conftest import write_python_repo

    store, clone = published["store"], published["clone"]
    assert isinstance(clone, Path)
    member = _member(lgrep, tmp_path, "member", LGREP_TEAM_STORE=str(store))
    member("seed", str(clone), "--json")
    upstream = tmp_path / "mini"  # the repository CI publishes (mini_repo); the clone pulls from it
    write_python_repo(upstream / "handlers", 20)
    later = _commit(upstream, "twenty handler modules")
    ci = _member(lgrep, tmp_path, "ci2", LGREP_TEAM_STORE=str(store))
    assert ci("publish", str(upstream), "--json").json()["commit"] == later
    git(clone, "pull", "-q", "--no-rebase", "--no-edit", str(upstream), "main")
    summary = member("index", str(clone), "--json").json()
    assert summary["seed"] is not None and summary["seed"]["commit"] == later, summary["seed"]
    assert summary["seed"]["vectors_copied"] >= 64
    assert summary["vectors_embedded"] == 0
