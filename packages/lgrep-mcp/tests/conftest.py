"""Fixtures of the in-memory MCP tests (test_*_in_memory.py): a temporary git project with a few
real files (receipts read them), HOME and LGREP_CACHE_DIR in temporary folders, the FakeEngine and
the server over it (mcp_harness.Mcp)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # mcp_harness, beside this file

from lgrep_core.testing.engines import FakeEngine
from mcp_harness import FILES, Mcp

# --- fixtures ------------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git project with a few files, and a user with no settings of their own."""
    for name in list(os.environ):
        if name.startswith("LGREP_") or name == "XDG_CONFIG_HOME":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LGREP_CACHE_DIR", str(tmp_path / "env-cache"))
    (tmp_path / "home").mkdir()
    root = (tmp_path / "project").resolve()
    (root / ".git").mkdir(parents=True)
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "outside.py").write_text("PASSWORD = 'hunter2'\n")
    return root


@pytest.fixture
def engine(repo: Path) -> FakeEngine:
    """The engine, with the project indexed (READY)."""
    fake = FakeEngine()
    fake.project(repo)
    return fake


@pytest.fixture
def mcp(engine: FakeEngine, repo: Path, tmp_path: Path) -> Mcp:
    """The server for the project `repo`, over `engine`."""
    return Mcp(engine, repo, tmp_path / "cache", repo)
