"""Receipts' file counts (lgrep_mcp.receipts.FileTokens): whole files inside the project only, never
through a link that leaves it or into what the roots do not allow, never hanging on a FIFO, and
counted again when a file changes; and the middleware that records them never fails a call."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from lgrep_core.storage.receipts import ReceiptLedger
from lgrep_core.testing.fakes import DiskEngine
from lgrep_mcp.budget import TokenCounter
from lgrep_mcp.receipts import FileTokens
from lgrep_mcp.roots import AllowedRoots
from lgrep_mcp.server import build_server
from mcp.client.client import Client
from mcp.types import Implementation

COUNTER = TokenCounter()


def test_only_readable_files_inside_the_project_are_counted(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "private").mkdir()
    (project / "src" / "a.py").write_text("def a():\n    return 1\n")
    (project / "private" / "b.py").write_text("secret = 1\n")
    (tmp_path / "outside.py").write_text("x = 1\n" * 100)
    (project / "src" / "out.py").symlink_to(tmp_path / "outside.py")
    (project / "src" / "in.py").symlink_to(project / "private" / "b.py")
    os.mkfifo(project / "src" / "pipe")
    in_src = lambda rel: rel.startswith("src/")  # noqa: E731  # the allowed root is src/
    counting = FileTokens(COUNTER)
    paths = ["src/a.py", "src/out.py", "src/in.py", "src/pipe", "private/b.py", "../outside.py", "src/gone.py"]
    files, tokens = counting.count(project, paths, in_src)
    assert (files, tokens) == (1, COUNTER.count("def a():\n    return 1\n"))


def test_a_changed_file_is_counted_again(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\n")
    counting = FileTokens(COUNTER)
    first = counting.count(tmp_path, ["a.py"], lambda _rel: True)
    (tmp_path / "a.py").write_text("one two three four five six\n")
    assert counting.count(tmp_path, ["a.py", "a.py"], lambda _rel: True) == (
        1,
        COUNTER.count("one two three four five six\n"),
    )
    assert first == (1, COUNTER.count("one\n"))


def test_a_ledger_that_fails_in_any_way_never_fails_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Receipts are a by-product: whatever the ledger raises (int(inf) in a damaged file raised
    # OverflowError, which the recorder did not catch), the agent gets its answer.
    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(ReceiptLedger, "record", broken)
    (tmp_path / "a.py").write_text("def a():\n    return 1\n")
    server = build_server(AllowedRoots(tmp_path, []), DiskEngine(), cache_dir=tmp_path / "cache")  # type: ignore[arg-type]

    async def main() -> Any:
        async with Client(server, mode="legacy", client_info=Implementation(name="agent", version="1")) as client:
            return await client.call_tool("lgrep_get_file", {"path": "a.py"})

    answer = anyio.run(main)
    assert not answer.is_error, answer.content
    assert answer.structured_content["receipt"]["file_tokens"] == COUNTER.count("def a():\n    return 1\n")
