"""An indexed repository is untrusted input: nothing in it may run, redirect lgrep's writes or break
its output. Each test here reproduces an attack or a broken state through the `lgrep` command."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.model

POLL_TIMEOUT_S = 120.0

# Module names a child process of lgrep imports (or Python imports at start-up): if any of these,
# placed in the indexed repository, is imported, it writes its marker.
PLANTED_MODULES = ("lgrep_cli", "lgrep_core", "numpy", "yaml", "json", "sitecustomize", "usercustomize")


def _plant_modules(repo: Path, markers: Path) -> None:
    markers.mkdir()
    for name in PLANTED_MODULES:
        marker = markers / name
        (repo / f"{name}.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    pkg = repo / "lgrep_index"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"import pathlib\npathlib.Path({str(markers / 'pkg')!r}).write_text('ran')\n")


def test_background_indexer_never_imports_from_the_project(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def serve_requests(port):\n    return port\n")
    markers = tmp_path / "markers"
    _plant_modules(repo, markers)
    # Even a PYTHONPATH naming the working directory must not reach the project.
    lgrep.env["PYTHONPATH"] = "."
    quick = lgrep("index", str(repo), "--no-wait", "--json", cwd=tmp_path).json()
    assert quick["vectors_pending"] > 0, "the background vector filler must have been started"
    deadline = time.monotonic() + POLL_TIMEOUT_S
    while lgrep("status", str(repo), "--json", cwd=tmp_path).json()["vectors_pending"]:
        assert time.monotonic() < deadline, "the background vector fill did not finish"
        time.sleep(0.05)
    assert sorted(p.name for p in markers.iterdir()) == []
