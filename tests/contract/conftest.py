"""Fixtures of the contract tests: the fake lgrep services (lgrep_core.testing.grpc_fakes) on a real
gRPC server, on a unix socket in a short temporary folder and on a loopback TCP port."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.testing.grpc_fakes import RunningServer, serve_fakes


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A private folder with a short path: unix socket paths are limited to ~107 bytes, and pytest's
    tmp_path can be longer than that."""
    path = Path(tempfile.mkdtemp(prefix="lgrep-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def lgrep_server(short_dir: Path) -> Iterator[RunningServer]:
    """The fake services, served as `lgrep serve` will serve the real ones; stopped afterwards."""
    with serve_fakes(short_dir) as running:
        yield running
