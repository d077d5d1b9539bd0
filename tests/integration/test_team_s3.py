"""The team index on a real S3 server (ADR 0034): moto's server mode, its own process on 127.0.0.1.

"CI" publishes a commit's vectors to `s3://<bucket>/lgrep`; a member with a fresh cache seeds from
them in a real `lgrep seed` process and answers as a local build of the same tree does; what the
bucket holds is vectors and checksums, never a path of the publisher's machine or a line of code.
A seed killed with SIGKILL at several moments (while chunking, asking the store, copying, after
publishing) never leaves a published index that lacks vectors the publication held; the next seed
finishes it. An unreachable store or a missing bucket is named as such, quickly, and the member
builds locally. tests/e2e/test_team_index.py runs the same flow against a folder store."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import subprocess
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from lgrep_core.storage.layout import project_dir
from lgrep_core.testing.repos import git

from tests.conftest import InProcessLgrep, Lgrep, moto_server, write_python_repo

pytestmark = [pytest.mark.slow, pytest.mark.model]

BUCKET = "lgrep-team"
STORE = f"s3://{BUCKET}/lgrep"

QUESTIONS = (
    "where do we verify JWT signatures",
    "evict the least recently used entry",
    "rate limit requests per client",
    "load the server configuration",
    "LoadConfig",
)


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    log: Path  # moto's request log: one line per request, written as they arrive

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        return {
            "aws_endpoint": endpoint or self.endpoint,
            "allow_http": "true",
            "aws_access_key_id": "test",
            "aws_secret_access_key": "test",
            "aws_region": "us-east-1",
        }

    def client(self):  # boto3's client, untyped without its stubs
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )


@pytest.fixture
def s3_server(tmp_path: Path) -> Iterator[S3Server]:
    """`moto_server` on a free port of 127.0.0.1 with the bucket created, stopped afterwards."""
    log = tmp_path / "moto.log"
    with moto_server(log) as endpoint:
        server = S3Server(endpoint, log)
        server.client().create_bucket(Bucket=BUCKET)
        yield server


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts; any still running at its end is killed."""
    processes: list[subprocess.Popen[str]] = []
    try:
        yield processes
    finally:
        for proc in processes:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=60)  # reaps it and closes its pipes (again, if the test did)


def _team_env(options: dict[str, str], store: str = STORE) -> dict[str, str]:
    return {
        "LGREP_TEAM_STORE": store,
        "LGREP_TEAM_STORAGE_OPTIONS": json.dumps(options),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@dataclass
class Machine:
    """Another machine: its own HOME and cache dir (sharing the test run's model graph). `run` runs a
    command in this process (InProcessLgrep), `process` in a process of its own (Lgrep)."""

    cache: Path
    env: dict[str, str]

    @property
    def run(self) -> InProcessLgrep:
        return InProcessLgrep(self.cache, self.env)

    @property
    def process(self) -> Lgrep:
        return Lgrep(self.cache, self.env)


def _machine(lgrep: Lgrep, tmp_path: Path, name: str, **env: str) -> Machine:
    cache = tmp_path / f"{name}-cache"
    cache.mkdir()
    (cache / "models").symlink_to((lgrep.cache / "models").resolve(), target_is_directory=True)
    home = tmp_path / f"{name}-home"
    home.mkdir()
    # Nothing of the machine running the tests (credentials, profiles) reaches the store's client.
    base = {k: v for k, v in lgrep.env.items() if not k.startswith("AWS_")}
    return Machine(cache, {**base, "HOME": str(home), "LGREP_CACHE_DIR": str(cache), **env})


def _top10(run: InProcessLgrep, root: Path, question: str) -> list[tuple[str, int]]:
    out = run("search", question, str(root), "--json", "-n", "10").json()
    return [(h["path"], h["start_line"]) for h in out["results"]]


def _bucket_objects(s3: S3Server) -> dict[str, bytes]:
    client = s3.client()
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
    return {key: client.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in keys}


def _table_values(s3: S3Server, location: str) -> bytes:
    """Every value of every table of the LanceDB database at `location`, as bytes (binary columns
    also decompressed when they are zlib streams, as the publication's file list is): what a raw look
    at the objects could miss if Lance compressed a column."""
    import lancedb

    db = lancedb.connect(location, storage_options=s3.options())
    listed = db.list_tables()
    names = [str(n) for n in getattr(listed, "tables", listed)]
    assert names, f"no tables at {location}"
    parts: list[bytes] = []
    for name in names:
        for row in db.open_table(name).to_arrow().to_pylist():
            for value in row.values():
                if isinstance(value, bytes):
                    parts.append(value)
                    with contextlib.suppress(zlib.error):
                        parts.append(zlib.decompress(value))
                else:
                    parts.append(str(value).encode("utf-8", "surrogateescape"))
    return b"\n".join(parts)


# ------------------------------------------------------------------------- publish, then seed


def test_a_member_seeds_from_s3_and_answers_as_a_local_build(
    lgrep: Lgrep, mini_repo: Path, tmp_path: Path, s3_server: S3Server
) -> None:
    git(mini_repo, "init", "-q", "-b", "main")
    git(mini_repo, "remote", "add", "origin", "git@github.com:acme/mini.git")
    first = _commit(mini_repo, "first")
    # What CI's checkout holds beyond HEAD is never published.
    tokens = mini_repo / "auth" / "tokens.py"
    tokens.write_text(tokens.read_text() + "\n\ndef uncommitted_secret_plan():\n    return 'not yet'\n")
    (mini_repo / "untracked_draft.py").write_text("def draft_idea_of_ci():\n    pass\n")

    ci = _machine(lgrep, tmp_path, "ci", **_team_env(s3_server.options()))
    published = ci.run("publish", str(mini_repo), "--json").json()
    assert published["commit"] == first
    assert published["store"] == f"{STORE}/github.com/acme/mini"
    assert published["repository"] == "github.com/acme/mini"
    assert published["vectors_uploaded"] == published["vectors"] > 0
    assert published["local_changes_not_published"] == 1
    assert published["untracked_not_published"] == 1
    assert not list(ci.cache.rglob("publications.lance")), "the store's tables were written on the publisher's disk"

    # The member: a clone one commit ahead, with an uncommitted edit, an untracked file and a deleted file.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(mini_repo), str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/mini")
    (clone / "auth" / "sessions.py").write_text(
        'def rotate_session_key(store, user):\n    """Issue a fresh session key and revoke the old one."""\n'
        "    old = store.pop(user, None)\n    store[user] = new_key()\n    return old\n"
    )
    _commit(clone, "sessions")
    rate = clone / "web" / "rateLimiter.ts"
    rate.write_text(rate.read_text() + "\nexport function drainBucketNow(limiter: RateLimiter): void {}\n")
    (clone / "notes_local.py").write_text("def only_on_my_machine():\n    return 'scratch'\n")
    deleted = sorted(clone.rglob("*.go"))[0]
    deleted.unlink()
    deleted_path = deleted.relative_to(clone).as_posix()

    member = _machine(lgrep, tmp_path, "member", **_team_env(s3_server.options()))
    result = member.process("seed", "--no-daemon", str(clone), "--json")  # a real process
    assert "Traceback" not in result.err and "not seeded" not in result.err, result.err
    summary = result.json()
    seed = summary["seed"]
    assert seed["reason"] == "", seed
    assert seed["store"] == STORE
    assert seed["repository"] == "github.com/acme/mini"
    assert seed["commit"] == first
    assert seed["vectors_copied"] > 0 and seed["bytes_copied"] > 0
    # changed (rateLimiter.ts), added (sessions.py, notes_local.py), deleted (the .go file)
    assert seed["files_overlaid"] == 4
    assert summary["vectors_pending"] == 0
    assert 0 < summary["vectors_embedded"] < seed["vectors_copied"]

    # The same clone built on a machine without a store: everything embedded here.
    local = _machine(lgrep, tmp_path, "local")
    built = local.run("index", str(clone), "--json").json()
    assert built["seed"] is None
    assert built["chunks_total"] == summary["chunks_total"]
    # Only the chunks that differ from the publication were embedded by the member.
    assert built["vectors_embedded"] == summary["vectors_embedded"] + seed["vectors_copied"]
    for question in QUESTIONS:
        assert _top10(member.run, clone, question) == _top10(local.run, clone, question), question

    hits = member.run("search", "rotate the session key and revoke the old one", str(clone), "--json").json()
    assert hits["results"][0]["path"] == "auth/sessions.py"
    edited = member.run("search", "drainBucketNow", str(clone), "--json").json()["results"]
    assert edited[0]["path"] == "web/rateLimiter.ts" and "drainBucketNow" in edited[0]["content"]
    for question in (*QUESTIONS, "server configuration in Go", "http server main"):
        paths = {h["path"] for h in member.run("search", question, str(clone), "--json").json()["results"]}
        assert deleted_path not in paths, question

    status = member.process("status", "--no-daemon", str(clone), "--json").json()
    assert status["state"] == "ready" and status["vectors_pending"] == 0
    assert status["seed"]["commit"] == first and status["seed"]["files_overlaid"] == 4

    # What the bucket holds: the publication's vectors and checksums, under the repository's name.
    objects = _bucket_objects(s3_server)
    assert objects and all(k.startswith("lgrep/github.com/acme/mini/") for k in objects), sorted(objects)
    assert any("/publications.lance/" in k for k in objects)
    assert any(re.search(r"/vectors_[0-9a-f]+\.lance/", k) for k in objects)
    blob = b"\n".join(objects.values()) + _table_values(s3_server, f"{STORE}/github.com/acme/mini")
    private = (
        # paths of the publisher's machine (its checkout, HOME and cache, where the tree was written)
        str(tmp_path),
        str(tmp_path.resolve()),
        str(mini_repo),
        str(ci.cache),
        ci.env["HOME"],
        "/tmp/",
        "pytest-of-",
        # what was never committed, on either machine
        "uncommitted_secret_plan",
        "draft_idea_of_ci",
        "drainBucketNow",
        "only_on_my_machine",
        "rotate_session_key",
        # nor any committed code: a publication holds vectors, not text
        "Signs and verifies HS256 JSON Web Tokens",
        "class TokenSigner",
    )
    for text in private:
        assert text.encode() not in blob, text
    # The file list names files relative to the repository's top folder (and so does nothing else).
    assert b"auth/tokens.py" in blob


# ---------------------------------------------------------------------------- kill -9 mid-seed


def _new_bytes(path: Path, offset: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read()


@dataclass
class Moment:
    """A point of a seed's run, seen from outside: a file its process wrote, or a request it made."""

    name: str
    reached: Callable[[Path, bytes], bool]  # (the project's index folder, moto's log since the start)


# Two boundaries (CI time): while the copy reads the store (nothing published yet), and just after
# the index is published. (Earlier runs also killed it when its folder appeared, while chunks were
# written, when it first asked the store and when it wrote copied vectors: the outcomes were those of
# the first boundary here: no index, or an unfinished one that the next run resumes.)
MOMENTS = (
    Moment(
        "the publication's vectors are read",
        lambda _folder, log: re.search(rb"/vectors_[0-9a-f]+\.lance/data/", log) is not None,
    ),
    Moment("the index is published", lambda folder, _log: (folder / "CURRENT").is_file()),
)


def _kill_when(proc: subprocess.Popen[str], moment: Moment, folder: Path, log: Path, since: int) -> bool:
    """SIGKILL `proc` as soon as `moment` is reached (polled: files and moto's log that the process
    makes). False if the process finished first."""
    deadline = time.monotonic() + 300
    while proc.poll() is None:
        if moment.reached(folder, _new_bytes(log, since)):
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            return True
        if time.monotonic() > deadline:
            raise AssertionError(f"the seed never reached the moment: {moment.name}")
        time.sleep(0.002)
    return False


def test_a_seed_killed_at_any_moment_leaves_no_index_or_a_complete_one(
    lgrep: Lgrep, tmp_path: Path, s3_server: S3Server, started: list[subprocess.Popen[str]]
) -> None:
    repo = tmp_path / "big"
    write_python_repo(repo, 240, funcs=1)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", "git@github.com:acme/big.git")
    commit = _commit(repo, "first")
    env = _team_env(s3_server.options())
    ci = _machine(lgrep, tmp_path, "ci", **env)
    published = ci.run("publish", str(repo), "--json").json()
    assert published["vectors"] == published["vectors_uploaded"] >= 200

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/big")
    # One file of the member's own, so a seed has something to embed after its copy.
    (clone / "pkg0" / "local_experiment.py").write_text(
        "def summarize_local_experiment(results):\n"
        '    """Average the scores of a local experiment run."""\n'
        "    return sum(results) / max(len(results), 1)\n"
    )
    questions = ("handle request kind 0 for module 42", "average the scores of an experiment", "handler_133_0")

    reference = _machine(lgrep, tmp_path, "reference", **env)
    expected = reference.run("seed", str(clone), "--json").json()
    assert expected["seed"]["commit"] == commit and expected["seed"]["reason"] == ""
    assert expected["seed"]["vectors_copied"] == published["vectors"]
    local_chunks = expected["vectors_embedded"]  # what the publication does not hold
    assert 0 < local_chunks < 10
    answers = {q: _top10(reference.run, clone, q) for q in questions}

    outcomes: dict[str, str] = {}
    for n, moment in enumerate(MOMENTS):
        member = _machine(lgrep, tmp_path, f"member{n}", **env)
        folder = project_dir(member.cache, clone)
        since = s3_server.log.stat().st_size
        proc = member.process.popen("seed", "--no-daemon", str(clone), "--json")
        started.append(proc)
        killed = _kill_when(proc, moment, folder, s3_server.log, since)
        _out, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        if not killed:
            assert proc.returncode == 0, err

        # What a fresh process sees.
        status = member.process("status", "--no-daemon", str(clone), "--json", check=False)
        assert "Traceback" not in status.err, status.err
        if status.code != 0:
            outcome = "no index"
            assert "no index" in status.err, status.err
        else:
            state = status.json()
            outcome = state["state"]
            if outcome == "ready":
                # Published only after every vector the publication holds was copied: what is
                # missing can only be the member's own chunks, and the index says so.
                assert (folder / "CURRENT").is_file()
                assert state["chunks"] == expected["chunks_total"], (moment.name, state)
                assert state["vectors_pending"] <= local_chunks, (moment.name, state)
                assert state["seed"] is not None and state["seed"]["commit"] == commit, (moment.name, state)
                searched = member.run("search", questions[0], str(clone), "--json").json()
                assert searched["vectors_pending"] == state["vectors_pending"]
                outcome += f" ({state['vectors_pending']} pending)"
                finished = member.run("index", str(clone), "--json").json()
                assert finished["vectors_pending"] == 0
                assert finished["vectors_embedded"] == state["vectors_pending"]
                again = member.run("status", str(clone), "--json").json()
                assert again["state"] == "ready" and again["vectors_pending"] == 0
            else:
                # A first build that stopped: no searchable index, and status says what to run.
                assert outcome == "interrupted", (moment.name, state)
                assert not (folder / "CURRENT").exists(), "an interrupted first build was published"
                assert "did not finish" in state["detail"], state
        outcomes[moment.name] = ("killed: " if killed else "finished: ") + outcome

        # In every case the next seed completes the index, and it answers as the reference does.
        summary = member.run("seed", str(clone), "--json").json()
        assert summary["vectors_pending"] == 0, (moment.name, summary)
        assert summary["chunks_total"] == expected["chunks_total"], (moment.name, summary)
        # (None when the index already had every vector: `lgrep seed` then does not ask the store,
        # and says the daemon has no team store set, though no daemon was used.)
        if summary["seed"] is not None:
            assert summary["seed"]["reason"] == "" and summary["seed"]["commit"] == commit, (moment.name, summary)
        final = member.run("status", str(clone), "--json").json()
        assert final["state"] == "ready" and final["vectors_pending"] == 0, (moment.name, final)
        assert final["chunks"] == expected["chunks_total"]
        assert final["seed"]["commit"] == commit, (moment.name, final)
        for question in questions:
            assert _top10(member.run, clone, question) == answers[question], (moment.name, question)

    print("\n".join(f"{name}: {outcome}" for name, outcome in outcomes.items()))
    # The earliest moment always comes before the seed can finish: at least that kill hit a running seed.
    assert any(o.startswith("killed") for o in outcomes.values()), outcomes


# ---------------------------------------------------------------------------- unreachable store


def _closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("case", ["closed_port", "missing_bucket"])
def test_an_unreachable_store_is_named_quickly_and_the_member_builds_locally(
    lgrep: Lgrep,
    mini_repo: Path,
    tmp_path: Path,
    s3_server: S3Server,
    started: list[subprocess.Popen[str]],
    case: str,
) -> None:
    git(mini_repo, "init", "-q", "-b", "main")
    git(mini_repo, "remote", "add", "origin", "git@github.com:acme/mini.git")
    _commit(mini_repo, "first")
    if case == "closed_port":
        env = _team_env(s3_server.options(f"http://127.0.0.1:{_closed_port()}"))
    else:
        env = _team_env(s3_server.options(), store="s3://no-such-bucket/lgrep")
    member = _machine(lgrep, tmp_path, "member", **env)
    # The run's model graph is built before the clock starts (the first use in a run builds it).
    (tmp_path / "warm").mkdir()
    (tmp_path / "warm" / "a.py").write_text("def warm():\n    pass\n")
    InProcessLgrep(lgrep.cache, lgrep.env)("index", str(tmp_path / "warm"), "--json")

    began = time.monotonic()
    proc = member.process.popen("-v", "seed", "--no-daemon", str(mini_repo), "--json")
    started.append(proc)
    assert proc.stderr is not None
    refused_after = None
    lines = []
    for line in proc.stderr:  # the log, as the process writes it
        lines.append(line)
        if refused_after is None and "not seeding" in line:
            refused_after = time.monotonic() - began
    out, _ = proc.communicate(timeout=120)
    took = time.monotonic() - began
    err = "".join(lines)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    summary = json.loads(out)
    assert summary["seed"]["reason"] == "unreachable", summary["seed"]
    assert "cannot be" in summary["seed"]["refused"] and "team.store" in summary["seed"]["refused"]
    assert "not seeded" in err
    assert summary["vectors_pending"] == 0 and summary["chunks_total"] > 0  # built locally
    # The object-store client's defaults (5 s to connect, two retries) bound the refusal; without
    # them its own defaults retry for minutes.
    assert refused_after is not None and refused_after < 25, f"refused after {refused_after} s"
    assert took < 40, f"lgrep seed took {took:.1f} s against an unreachable store"
    status = member.process("status", "--no-daemon", str(mini_repo), "--json").json()
    assert status["state"] == "ready" and status["vectors_pending"] == 0
    assert status["seed"] is None
    hits = member.run("search", "where do we verify JWT signatures", str(mini_repo), "--json").json()["results"]
    assert hits and hits[0]["path"] == "auth/tokens.py"
