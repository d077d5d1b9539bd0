"""Files as answers ("which files do I open for this task?") through every shell users use: the
`lgrep search --files` command (text and JSON), a real daemon over gRPC, and a real MCP server's
`lgrep_search` with `files: true`. The question that matters most is a whole issue pasted as the
query: tests/fixtures/questions/token-padding-issue.md (~6,600 characters, with a Python traceback
through auth/tokens.py of the mini fixture repository, and words about the project's other files)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from lgrep_core.app.cli_support import EXIT_ERROR
from lgrep_core.domain.models import MAX_QUERY_CHARS, SearchRequest
from lgrep_core.rpc.client import LgrepClient
from mcp import ClientSession

from tests.e2e.test_mcp import _run

if TYPE_CHECKING:
    from tests.conftest import InProcessLgrep, Lgrep

pytestmark = pytest.mark.model

ISSUE = (Path(__file__).parents[1] / "fixtures" / "questions" / "token-padding-issue.md").read_text()
NAMED = "auth/tokens.py"  # the file the issue's traceback runs through
TOO_LONG = "token " * (MAX_QUERY_CHARS // 6 + 1)


def test_the_issue_is_a_task_length_question() -> None:
    assert 5_000 < len(ISSUE) < MAX_QUERY_CHARS
    assert f'File "/srv/api/{NAMED}", line 36, in verify_jwt' in ISSUE
    assert len(TOO_LONG) > MAX_QUERY_CHARS


def test_files_answer_json(lgrep_here, mini_repo: Path) -> None:
    root = str(mini_repo)
    lgrep_here("index", "-q", root)
    out = lgrep_here("search", "verify the token signature", root, "--files", "--json", "-n", "3").json()
    assert out["results"] == []
    files = out["files"]
    assert 1 <= len(files) <= 3 and files[0]["path"] == NAMED
    assert list(files[0]) == ["path", "score", "language", "ranges", "why", "stale"]
    assert files[0]["language"] == "python" and files[0]["stale"] is False
    scores = [f["score"] for f in files]
    assert scores == sorted(scores, reverse=True)
    assert len({f["path"] for f in files}) == len(files)
    lines = len((mini_repo / NAMED).read_text().splitlines())
    for r in files[0]["ranges"]:
        assert set(r) == {"start_line", "end_line", "symbol"}
        assert 1 <= r["start_line"] <= r["end_line"] <= lines
    # The best ranges span the verification code.
    assert any(r["start_line"] <= 27 and r["end_line"] >= 39 for r in files[0]["ranges"])


def test_files_answer_text_is_a_few_lines_a_file(lgrep_here, mini_repo: Path) -> None:
    root = str(mini_repo)
    lgrep_here("index", "-q", root)
    text = lgrep_here("search", "verify the token signature", root, "--files", "-n", "2").out
    lines = text.splitlines()
    assert lines[0].startswith(f"{NAMED}  score=")
    assert lines[1].startswith(f"    {NAMED}:") and "-" in lines[1].split(":")[1]
    heads = [line for line in lines if not line.startswith(" ")]
    assert len(heads) == 2  # -n counts files
    assert len(lines) <= 2 * 4  # a file's line and at most three ranges
    assert "why:" not in text
    explained = lgrep_here("search", ISSUE, root, "--files", "-n", "1", "--explain").out
    assert "    why: " in explained and "named in the traceback" in explained


def test_the_limit_counts_files_and_defaults_to_the_search_limit(lgrep_here, mini_repo: Path) -> None:
    root = str(mini_repo)
    lgrep_here("index", "-q", root)
    assert len(lgrep_here("search", "configuration", root, "--files", "--json").json()["files"]) > 2
    lgrep_here.env["LGREP_SEARCH__LIMIT"] = "2"
    assert len(lgrep_here("search", "configuration", root, "--files", "--json").json()["files"]) == 2
    assert len(lgrep_here("search", "configuration", root, "--files", "--json", "-n", "1").json()["files"]) == 1


def test_filters_and_folders_keep_a_files_answer_to_them(lgrep_here, mini_repo: Path) -> None:
    root = str(mini_repo)
    lgrep_here("index", "-q", root)

    def paths(*args: str) -> list[str]:
        return [f["path"] for f in lgrep_here("search", ISSUE, *args, "--files", "--json").json()["files"]]

    assert paths(root, "--path", "web") == ["web/rateLimiter.ts"]
    assert paths(root, "--lang", "go") == ["cmd/server.go"]
    assert set(paths(root, "--content", "docs")) == {"docs/deploy.md"}
    inside = lgrep_here("search", ISSUE, str(mini_repo / "cmd"), "--files", "--json").json()
    assert inside["scope"] == "cmd" and {f["path"] for f in inside["files"]} == {"cmd/server.go", "cmd/cache.rs"}
    assert paths(root, "--type", "bm25")[0] == NAMED


def test_a_whole_issue_ranks_the_file_its_traceback_names_first(
    lgrep_here, mini_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(mini_repo)
    lgrep_here("index", "-q", root)
    out = lgrep_here("search", ISSUE, root, "--files", "--json").json()
    assert out["files"][0]["path"] == NAMED and "named in the traceback" in out["files"][0]["why"]
    assert out["query"] == ISSUE
    # `-` reads the query from standard input: an issue needs no shell quoting.
    monkeypatch.setattr("sys.stdin", io.StringIO(ISSUE))
    piped = lgrep_here("search", "-", root, "--files", "--json").json()
    assert [f["path"] for f in piped["files"]] == [f["path"] for f in out["files"]]


def test_a_query_over_the_limit_is_refused_in_words(lgrep_here, mini_repo: Path) -> None:
    root = str(mini_repo)
    for args in (("--files",), ("--files", "--json"), ()):
        refused = lgrep_here("search", TOO_LONG, root, *args, check=False)
        assert refused.code != 0 and refused.out == ""
        assert refused.err.startswith(f"lgrep: error: the query is {len(TOO_LONG):,} characters long; the limit is")
        assert "Traceback" not in refused.err and len(refused.err.splitlines()) == 1


STDIN_REFUSAL = f"lgrep: error: the query on standard input is more than {MAX_QUERY_CHARS:,} characters long"


def test_an_endless_standard_input_is_refused_without_reading_it(lgrep: Lgrep, tmp_path: Path) -> None:
    """`lgrep search -` reads at most one character past the limit: a stream that never ends (here:
    4 MiB, then the pipe stays open with no end of input) is refused promptly, in words, and the
    rest is never read. It used to read to the end first (300 MB of input took 590 MB of memory,
    and a stream that never ends never got an answer)."""
    proc = subprocess.Popen(
        [*lgrep.command, "search", "-", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=lgrep.env,
    )
    assert proc.stdin is not None
    written = [0]

    def feed() -> None:
        chunk = b"token " * 1024
        with contextlib.suppress(BrokenPipeError, ValueError):  # it stopped reading and exited
            while written[0] < 4 << 20:
                proc.stdin.write(chunk)  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
                written[0] += len(chunk)

    feeder = threading.Thread(target=feed, daemon=True)
    with proc:  # its pipes closed and the process reaped, whatever happens
        feeder.start()
        try:
            code = proc.wait(timeout=60)
            assert proc.stdout is not None and proc.stderr is not None
            out, err = proc.stdout.read(), proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
            feeder.join(timeout=30)  # its next write fails once the process is gone
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
    text = err.decode()
    assert code == EXIT_ERROR and out == b""
    assert text.startswith(STDIN_REFUSAL) and "Traceback" not in text and len(text.splitlines()) == 1
    assert written[0] < 1 << 20  # the pipe's buffer and one read's worth, not the stream


def test_standard_input_up_to_the_limit_is_a_query(
    lgrep_here: InProcessLgrep, mini_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit counts characters, not bytes: a query of exactly the limit in UTF-8 with accented
    letters (more bytes than characters) is searched; one character more is refused."""
    root = str(mini_repo)
    lgrep_here("index", "-q", root)
    words = "tökén verify signature "
    exact = (words * (MAX_QUERY_CHARS // len(words) + 1))[:MAX_QUERY_CHARS]
    assert len(exact) == MAX_QUERY_CHARS and len(exact.encode()) > MAX_QUERY_CHARS

    def stdin(text: str) -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8")

    monkeypatch.setattr("sys.stdin", stdin(exact))
    answer = lgrep_here("search", "-", root, "--files", "--json").json()
    assert answer["query"] == exact and answer["files"]
    monkeypatch.setattr("sys.stdin", stdin(exact + "s"))
    refused = lgrep_here("search", "-", root, "--files", check=False)
    assert refused.code == EXIT_ERROR and refused.err.startswith(STDIN_REFUSAL) and "Traceback" not in refused.err


@pytest.mark.slow
def test_a_whole_issue_through_grpc_and_mcp(daemon, mini_repo: Path) -> None:
    """A real daemon answers the issue over gRPC, and a real MCP server (a client session over stdio)
    answers it with `files: true`, compactly; both refuse a query over the limit in words."""
    root = mini_repo.resolve()
    daemon.lgrep("index", "-q", str(root))
    with LgrepClient.connect(socket_path=daemon.socket) as client:
        client.server_info()
        response = client.call(SearchRequest(ISSUE, project_root=str(root), files=True, limit=3))
        assert response.results == [] and 1 <= len(response.files) <= 3
        assert response.files[0].path == NAMED and response.files[0].ranges
        assert "named in the traceback" in response.files[0].why

    async def steps(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, args in (
            ("files", {"query": ISSUE, "files": True, "limit": 5}),
            ("chunks", {"query": "verify the token signature", "limit": 3}),
            ("issue", {"query": ISSUE, "limit": 3}),
            ("too_long", {"query": TOO_LONG, "files": True}),
        ):
            result = await session.call_tool("lgrep_search", args)
            out[name] = (result.is_error, result.structured_content, result.content[0].text)  # type: ignore[union-attr]
        return out

    out = _run(daemon, root, steps)
    is_error, answer, text = out["files"]
    assert not is_error, text
    assert answer["results"] == [] and answer["files"][0]["path"] == NAMED
    first = answer["files"][0]
    assert set(first) == {"path", "score", "language", "ranges", "why", "stale", "uri"}
    assert first["uri"] == f"lgrep://file/{NAMED}" and first["ranges"][0]["start_line"] >= 1
    assert json.loads(text) == answer  # the text is the structured answer, as compact JSON
    # Compact: a files answer costs a few lines a file, far less than chunks with snippets.
    assert answer["tokens"] < 120 * len(answer["files"]) + 150
    assert out["chunks"][1]["results"] and "files" not in out["chunks"][1]
    # The issue without files=true: its files lead, their best chunks (with snippets) follow.
    is_error, issue, _ = out["issue"]
    assert not is_error and list(issue)[2:4] == ["files", "results"]
    assert issue["files"][0]["path"] == NAMED and issue["results"][0]["path"] == NAMED
    assert issue["results"][0]["content"] and len(issue["files"]) <= 3
    is_error, _, message = out["too_long"]
    assert is_error and f"the query is {len(TOO_LONG):,} characters long" in message
    assert "Traceback" not in message
