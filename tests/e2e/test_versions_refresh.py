"""The documented daily refresh (docs/examples/versions/lgrep-refresh-tags) against a mirror of a
local "origin": new upstream tags are indexed, deleted ones disappear, nothing new embeds nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lgrep_core.testing.repos import git, write_tagged_repo

pytestmark = [pytest.mark.slow, pytest.mark.model]

SCRIPT = Path(__file__).parents[2] / "docs" / "examples" / "versions" / "lgrep-refresh-tags"


def _refresh(lgrep, mirror: Path, tmp_path: Path) -> dict:  # type: ignore[no-untyped-def]
    wrapper = tmp_path / "lgrep"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lgrep_cli "$@"\n')
    wrapper.chmod(0o755)
    proc = subprocess.run(
        ["sh", str(SCRIPT), str(mirror), str(wrapper)],
        capture_output=True,
        text=True,
        env=lgrep.env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    return json.loads(proc.stdout)


def test_the_refresh_script_indexes_only_what_is_new(lgrep, tmp_path: Path) -> None:
    origin = write_tagged_repo(tmp_path / "origin", agent_releases=2, server_releases=1)
    mirror = tmp_path / "mono.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(origin.root), str(mirror)], check=True)

    first = _refresh(lgrep, mirror, tmp_path)
    assert first["tags_indexed"] == len(origin.tags) and first["vectors_embedded"] > 0

    quiet = _refresh(lgrep, mirror, tmp_path)
    assert (quiet["tags_indexed"], quiet["blobs_read"], quiet["vectors_embedded"]) == (0, 0, 0)

    (origin.root / "agent" / "core.py").write_text("def run(task):\n    '''The 0.3 loop.'''\n    return task\n")
    git(origin.root, "commit", "-qam", "0.3")
    git(origin.root, "tag", "agent-v0.3.0")
    git(origin.root, "tag", "-d", "agent-v0.1.0")
    third = _refresh(lgrep, mirror, tmp_path)
    assert (third["tags_indexed"], third["tags_removed"], third["blobs_read"]) == (1, 1, 1)
    versions = lgrep("versions", "agent", str(mirror), "--json").json()["versions"]
    assert [v["version"] for v in versions] == ["0.3.0", "0.2.0"]
