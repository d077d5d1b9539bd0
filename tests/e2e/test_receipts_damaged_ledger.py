"""A damaged receipts ledger (ADR 0025) as an agent and a user meet it: a tool call through an MCP
session still answers, the `lgrep://stats` resource and `lgrep stats` (human and --json) name the
damaged file in a note instead of failing, and the project's receipts start again beside it. The
ledger is the user's own file, but a value such as `1e400` (float inf to json) made every tool call
on the project fail, and any junk made `lgrep stats` fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from lgrep_core.storage.receipts import ReceiptLedger
from lgrep_core.testing.fakes import DiskEngine
from lgrep_mcp.roots import AllowedRoots
from lgrep_mcp.server import build_server
from mcp.client.client import Client
from mcp.types import Implementation

SUMS = '"tokens_returned":1,"file_tokens":1,"files":1'
JUNK = [
    pytest.param('{"version":1,"project_root":ROOT,"clients":{"a":{"calls":1e400,' + SUMS + "}}}", id="inf"),
    pytest.param(
        '{"version":1,"project_root":ROOT,"clients":{"a":{"calls":true,"tokens_returned":"9",'
        '"file_tokens":-1.5,"files":1}}}',
        id="bool-string-negative-float",
    ),
    pytest.param(
        '{"version":1,"project_root":ROOT,"clients":{"a":{"calls":' + "9" * 5000 + "," + SUMS + "}}}", id="huge"
    ),
    pytest.param("{not json", id="not-json"),
]


@pytest.mark.parametrize("junk", JUNK)
def test_a_damaged_ledger_never_fails_a_call_and_stats_note_it(lgrep_here: Any, tmp_path: Path, junk: str) -> None:
    root = (tmp_path / "project").resolve()
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    target = ReceiptLedger(lgrep_here.cache).path_of(root)
    target.parent.mkdir(mode=0o700)
    target.write_text(junk.replace("ROOT", json.dumps(str(root))))
    server = build_server(AllowedRoots(root, []), DiskEngine(), cache_dir=lgrep_here.cache)  # type: ignore[arg-type]

    async def steps() -> tuple[Any, Any, Any]:
        info = Implementation(name="junk-test", version="1")
        async with Client(server, mode="legacy", client_info=info) as client:
            before = await client.read_resource("lgrep://stats")
            answer = await client.call_tool("lgrep_get_file", {"path": "a.py"})
            after = await client.read_resource("lgrep://stats")
            return before, answer, after

    before, answer, after = anyio.run(steps)
    assert not answer.is_error, answer.content
    receipt = answer.structured_content["receipt"]
    assert "damaged" in json.loads(before.contents[0].text)["notes"][0]
    # The damaged file was set aside and the call counted in a new one.
    stats = lgrep_here("stats", "--json").json()
    [project] = stats["projects"]
    assert project["project_root"] == str(root)
    assert project["clients"] == {
        "junk-test": {
            "calls": 1,
            "tokens_returned": answer.structured_content["tokens"],
            "file_tokens": receipt["file_tokens"],
            "saved": receipt["saved"],
            "files": 1,
        }
    }
    [note] = stats["notes"]
    assert "set aside" in note and ".damaged-" in note
    assert json.loads(after.contents[0].text) == stats
    assert lgrep_here("stats", str(root), "--json").json() == stats
    human = lgrep_here("stats")
    assert "junk-test" in human.out and "set aside" in human.err
    assert "Traceback" not in human.out + human.err


def test_stats_on_a_damaged_ledger_is_a_note_not_an_error(lgrep_here: Any, tmp_path: Path) -> None:
    # Before anything records again (no agent has called lgrep since), stats says what is wrong.
    target = ReceiptLedger(lgrep_here.cache).path_of(tmp_path.resolve())
    target.parent.mkdir(mode=0o700)
    target.write_text('{"version":1,"project_root":"/x","clients":{"a":{"calls":1e400,' + SUMS + "}}}")
    shown = lgrep_here("stats", "--json")
    assert shown.json()["projects"] == [] and "damaged" in shown.json()["notes"][0]
    human = lgrep_here("stats")
    assert human.code == 0 and "damaged" in human.err and "Traceback" not in human.out + human.err
    assert lgrep_here("stats", str(tmp_path), "--json").json()["notes"] == shown.json()["notes"]
