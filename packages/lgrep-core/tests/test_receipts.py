"""The receipts ledger (lgrep_core.receipts): sums per project and client, kept by several processes
at once without losing a count, holding counts and client names only."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from lgrep_core.errors import StorageError
from lgrep_core.receipts import CLIENT_NAME_MAX, ReceiptLedger, client_name
from lgrep_core.serialize import receipts_json

WRITERS = 4
CALLS_EACH = 150


WRITER = """
import sys
from pathlib import Path
from lgrep_core.receipts import ReceiptLedger
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
    assert set(out) == {"projects", "clients", "total", "tokenizer"}
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


def test_a_damaged_file_is_a_clear_error_and_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    ledger = ReceiptLedger(tmp_path)
    ledger.record("/p", "a", tokens_returned=1, file_tokens=2, files=1)
    target = ledger.path_of("/p")
    target.write_text("{not json")
    with pytest.raises(StorageError, match="damaged"):
        ledger.project("/p")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}")
    target.unlink()
    target.symlink_to(elsewhere)
    with pytest.raises(StorageError):
        ledger.project("/p")
    assert elsewhere.read_text() == "{}"
