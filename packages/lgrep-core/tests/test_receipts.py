"""The receipts ledger (lgrep_core.storage.receipts): sums per project and client, kept by several processes
at once without losing a count, holding counts and client names only."""

from __future__ import annotations

import contextlib
import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lgrep_core.app.serialize import receipts_json
from lgrep_core.storage import receipts
from lgrep_core.storage.receipts import CLIENT_NAME_MAX, CLIENTS_MAX, LOG_MAX, OTHER, ReceiptLedger, client_name

WRITERS = 4
CALLS_EACH = 150


WRITER = """
import sys
from pathlib import Path
from lgrep_core.storage.receipts import ReceiptLedger
ledger = ReceiptLedger(Path(sys.argv[1]))
for _ in range(int(sys.argv[3])):
    ledger.record("/p", sys.argv[2], tokens_returned=3, file_tokens=10, files=1)
"""


def test_concurrent_writers_lose_no_count(tmp_path: Path) -> None:
    # Processes, not threads: each agent runs its own `lgrep mcp`. Without the lock, read-add-replace
    # by four writers loses most of their counts.
    workers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"agent-{n % 2}", str(CALLS_EACH)])
        for n in range(WRITERS)
    ]
    for worker in workers:
        assert worker.wait(timeout=120) == 0
    sums = ReceiptLedger(tmp_path).project("/p")
    assert {name: s.calls for name, s in sums.clients.items()} == {
        "agent-0": 2 * CALLS_EACH,
        "agent-1": 2 * CALLS_EACH,
    }
    total = sums.total
    assert (total.calls, total.tokens_returned, total.file_tokens, total.saved) == (
        WRITERS * CALLS_EACH,
        3 * WRITERS * CALLS_EACH,
        10 * WRITERS * CALLS_EACH,
        7 * WRITERS * CALLS_EACH,
    )


def test_sums_per_project_and_client_and_the_files_are_private(tmp_path: Path) -> None:
    ledger = ReceiptLedger(tmp_path / "cache")
    ledger.record("/b", "codex", tokens_returned=100, file_tokens=1000, files=2)
    ledger.record("/a", "claude-code", tokens_returned=50, file_tokens=40, files=1)
    ledger.record("/a", "codex", tokens_returned=10, file_tokens=500, files=3)
    out = receipts_json(ledger.projects())
    # the field names docs/json.md lists
    assert set(out) == {"projects", "clients", "total", "tokenizer", "notes"}
    assert set(out["projects"][0]) == {
        "project_root",
        "calls",
        "tokens_returned",
        "file_tokens",
        "saved",
        "files",
        "clients",
    }
    assert [p["project_root"] for p in out["projects"]] == ["/a", "/b"]
    assert out["projects"][0]["clients"]["claude-code"]["saved"] == -10  # honest when an answer costs more
    assert out["projects"][0]["saved"] == 480
    assert out["clients"]["codex"] == {
        "calls": 2,
        "tokens_returned": 110,
        "file_tokens": 1500,
        "saved": 1390,
        "files": 5,
    }
    assert out["total"]["calls"] == 3
    for path in (tmp_path / "cache" / "receipts").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE((tmp_path / "cache" / "receipts").stat().st_mode) == 0o700


def test_a_client_name_is_kept_short_and_printable() -> None:
    assert client_name("claude-code") == "claude-code"
    assert client_name("evil\x1b[31m\u202ename") == "evil[31mname"
    assert len(client_name("x" * 500)) == CLIENT_NAME_MAX
    assert client_name(None) == client_name("  ") == "unknown"


def _summary_rewrites(ledger: ReceiptLedger, project: str, record: Any, times: int) -> int:
    """How many times `record()` (called `times` times) replaced the project's summary: a file
    renamed over it, made while it still existed, has another inode."""
    rewrites, inode = 0, None
    for n in range(times):
        record(n)
        with contextlib.suppress(FileNotFoundError):
            now = ledger.path_of(project).stat().st_ino
            rewrites += now != inode
            inode = now
    return rewrites


def test_thousands_of_client_names_fold_into_other_and_the_ledger_stays_small(tmp_path: Path) -> None:
    # A buggy or hostile MCP client can send any clientInfo.name, a new one every session. One entry
    # per name grew the file past the 1 MiB the reader reads (then every record failed) and every
    # record rewrote the whole file (6,898 names took 215 s).
    ledger = ReceiptLedger(tmp_path)
    names = 3000
    expected = {"calls": 0, "tokens_returned": 0, "file_tokens": 0, "files": 0}

    def record(n: int) -> None:
        client = "claude-code" if n % 10 == 0 else "other" if n % 97 == 0 else f"client-{n:05d}-" + "x" * 40
        ledger.record("/p", client, tokens_returned=n, file_tokens=2 * n + 1, files=n % 3)
        for key, value in (("calls", 1), ("tokens_returned", n), ("file_tokens", 2 * n + 1), ("files", n % 3)):
            expected[key] += value

    rewrites = _summary_rewrites(ledger, "/p", record, names)
    assert rewrites <= names // 200, rewrites  # not one per record: appended to a log, folded in now and then
    assert ledger.path_of("/p").stat().st_size < 8 << 10
    assert ledger.path_of("/p").with_suffix(".log").stat().st_size <= LOG_MAX + 512
    sums = ReceiptLedger(tmp_path).project("/p")  # as `lgrep stats` reads it, from another process
    assert len(sums.clients) == CLIENTS_MAX + 1 and OTHER in sums.clients
    assert sums.clients["claude-code"].calls == names // 10  # a busy client keeps its name
    total = sums.total
    assert {k: getattr(total, k) for k in expected} == expected  # every count is kept, named or not
    out = receipts_json(ledger.projects())
    assert out["total"]["calls"] == names and len(out["projects"][0]["clients"]) == CLIENTS_MAX + 1


def test_a_client_named_other_is_summed_with_the_others(tmp_path: Path) -> None:
    ledger = ReceiptLedger(tmp_path)
    ledger.record("/p", "other", tokens_returned=1, file_tokens=5, files=1)
    ledger.record("/p", "codex", tokens_returned=1, file_tokens=5, files=1)
    for n in range(CLIENTS_MAX + 3):
        ledger.record("/p", f"c{n}", tokens_returned=1, file_tokens=1, files=0)
    sums = ledger.project("/p")
    assert sums.total.calls == CLIENTS_MAX + 5
    assert len(sums.clients) == CLIENTS_MAX + 1 and sums.clients[OTHER].calls >= 1


class Crash(Exception):
    """A process killed at this point."""


@pytest.mark.parametrize("at", ["_write_summary", "_replace_log"])
def test_a_crash_while_folding_the_log_neither_loses_nor_doubles_a_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    # The log is folded into the summary (written whole, then a fresh log renamed over the old one).
    # Killed between the two, the summary says which bytes of which log it holds, and they are not
    # counted again; killed before the summary is replaced, the log still holds every record.
    monkeypatch.setattr(receipts, "LOG_MAX", 1024)
    ledger = ReceiptLedger(tmp_path)
    calls = 0

    def record() -> None:
        nonlocal calls
        ledger.record("/p", f"agent-{calls % 3}", tokens_returned=2, file_tokens=7, files=1)
        calls += 1

    def total() -> tuple[int, int, int]:
        sums = ReceiptLedger(tmp_path).project("/p").total
        return sums.calls, sums.tokens_returned, sums.file_tokens

    for _ in range(40):  # past a fold or two
        record()
    real = getattr(receipts, at)

    def crash(*args: Any) -> None:
        raise Crash

    monkeypatch.setattr(receipts, at, crash)
    with pytest.raises(Crash):
        for _ in range(100):
            record()
    calls += 1  # the record the crash cut short was appended before the fold began
    assert ledger.path_of("/p").with_suffix(".log").stat().st_size > 1024  # the log was not replaced
    assert total() == (calls, 2 * calls, 7 * calls)
    monkeypatch.setattr(receipts, at, real)
    for _ in range(60):  # another fold, now whole
        record()
    assert total() == (calls, 2 * calls, 7 * calls)
    # A record cut short by a crash mid-append is skipped, and the next one is not lost with it.
    with ledger.path_of("/p").with_suffix(".log").open("ab") as log:
        log.write(b'{"client":"agent-0","calls":1,"tok')
    for _ in range(3):
        record()
    assert total() == (calls, 2 * calls, 7 * calls)


JUNK = [
    pytest.param(
        '{"version":1,"project_root":"/p","clients":{"a":{"calls":1e400,"tokens_returned":1,'
        '"file_tokens":1,"files":1}}}',
        id="inf",
    ),
    pytest.param(
        '{"version":1,"project_root":"/p","clients":{"a":{"calls":-5,"tokens_returned":1,"file_tokens":1,"files":1}}}',
        id="negative",
    ),
    pytest.param(
        '{"version":1,"project_root":"/p","clients":{"a":{"calls":true,"tokens_returned":"9",'
        '"file_tokens":1.5,"files":1}}}',
        id="bool-string-float",
    ),
    pytest.param(
        '{"version":1,"project_root":"/p","clients":{"a":{"calls":' + "9" * 5000 + ',"tokens_returned":1,'
        '"file_tokens":1,"files":1}}}',
        id="huge",
    ),
    pytest.param('{"version":1,"project_root":"/p","clients":[]}', id="shape"),
    pytest.param("[" * 100_000, id="deep"),
    pytest.param("{not json", id="not-json"),
]


@pytest.mark.parametrize("junk", JUNK)
def test_a_damaged_summary_is_set_aside_and_receipts_start_again(tmp_path: Path, junk: str) -> None:
    ledger = ReceiptLedger(tmp_path)
    ledger.record("/p", "a", tokens_returned=1, file_tokens=2, files=1)  # in the log, not the summary
    target = ledger.path_of("/p")
    target.write_text(junk)
    # Read: a note, never an error, and nothing is changed by reading. The log's calls are not in
    # the damaged summary: they are kept.
    seen = ledger.read("/p")
    assert [p.total.calls for p in seen.projects] == [1] and "damaged" in seen.notes[0]
    assert ledger.read().projects == [] and "damaged" in ledger.read().notes[0]  # whose it was is unknown
    assert target.read_text() == junk
    # Recorded: set aside, and the project's receipts start again.
    ledger.record("/p", "b", tokens_returned=3, file_tokens=4, files=1)
    sums = ReceiptLedger(tmp_path).project("/p")
    assert {n: s.calls for n, s in sums.clients.items()} == {"a": 1, "b": 1}
    [aside] = [p for p in tmp_path.joinpath("receipts").iterdir() if ".damaged-" in p.name]
    assert aside.read_text() == junk and stat.S_IMODE(aside.stat().st_mode) == 0o600
    notes = ledger.read().notes
    assert len(notes) == 1 and str(aside) in notes[0]


def test_a_planted_link_is_set_aside_never_followed(tmp_path: Path) -> None:
    ledger = ReceiptLedger(tmp_path)
    ledger.record("/p", "a", tokens_returned=1, file_tokens=2, files=1)
    target = ledger.path_of("/p")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}")
    for planted in (target, target.with_suffix(".log")):
        planted.unlink()
        planted.symlink_to(elsewhere)
        ledger.read("/p")
        ledger.record("/p", "a", tokens_returned=1, file_tokens=2, files=1)
        assert elsewhere.read_text() == "{}" and not planted.is_symlink()
    # the first record (folded from the log when the summary was set aside) and the last; the one
    # between was in the log the link replaced
    assert ledger.project("/p").clients["a"].calls == 2


def test_summaries_lgrep_wrote_are_read_whole(tmp_path: Path) -> None:
    # One from before the log (version 1, every client apart): the busiest keep their names. One
    # naming a log by a 64-bit inode (btrfs, XFS) is sound, not damaged.
    ledger = ReceiptLedger(tmp_path)
    ledger.record("/old", "a", tokens_returned=1, file_tokens=1, files=1)
    many = {f"c{n:02d}": {"calls": n + 1, "tokens_returned": 1, "file_tokens": 2, "files": 1} for n in range(40)}
    ledger.path_of("/old").write_text(json.dumps({"version": 1, "project_root": "/old", "clients": many}))
    ledger.path_of("/old").with_suffix(".log").unlink()
    seen = ledger.read("/old")
    assert seen.notes == [] and set(seen.projects[0].clients) == {f"c{n:02d}" for n in range(8, 40)} | {OTHER}
    assert seen.projects[0].clients[OTHER].calls == sum(range(1, 9))
    wide = {"version": 2, "project_root": "/new", "log": {"inode": 2**63 + 5, "length": 0}, "by_client": {}}
    ledger.path_of("/new").write_text(json.dumps(wide))
    ledger.record("/new", "b", tokens_returned=1, file_tokens=1, files=1)
    assert ledger.read("/new").notes == [] and ledger.project("/new").total.calls == 1
    assert not [p for p in (tmp_path / "receipts").iterdir() if ".damaged-" in p.name]
