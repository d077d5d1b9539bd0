"""The package ships a current copy of integrations/, and the files in it agree with each other."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from lgrep_skill import SERVER_NAME, asset_text

ROOT = Path(__file__).resolve().parents[3]


def test_the_shipped_copy_equals_integrations() -> None:
    spec = importlib.util.spec_from_file_location("sync_integrations", ROOT / "tools" / "sync_integrations.py")
    assert spec is not None and spec.loader is not None
    sync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sync)
    assert sync.files(ROOT / "integrations"), "integrations/ is empty"
    stale = sync.differences()
    assert not stale, f"run `uv run --frozen python tools/sync_integrations.py`: stale {stale}"


def test_the_skill_is_one_file_in_two_places_with_its_frontmatter() -> None:
    skill = asset_text("skill", "SKILL.md")
    assert asset_text("claude-code", "skills", "lgrep", "SKILL.md") == skill
    front = re.match(r"---\n(.*?)\n---\n", skill, re.DOTALL)
    assert front is not None
    fields = dict(line.split(": ", 1) for line in front.group(1).splitlines())
    assert fields["name"] == SERVER_NAME
    assert 50 < len(fields["description"]) <= 1024
    for tool in ("lgrep_search", "lgrep_find_symbol", "lgrep_get_file", "lgrep_find_related", "lgrep_status"):
        assert tool in skill


def test_the_plugin_names_the_server_and_the_hook_never_fails_the_session() -> None:
    mcp = json.loads(asset_text("claude-code", ".mcp.json"))
    assert mcp["mcpServers"][SERVER_NAME]["args"] == ["mcp"]
    hooks = json.loads(asset_text("claude-code", "hooks", "hooks.json"))
    command = hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert "--no-wait" in command and command.rstrip().endswith("exit 0") and "&" in command
    marketplace = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    (plugin,) = marketplace["plugins"]
    assert (ROOT / plugin["source"] / ".claude-plugin" / "plugin.json").is_file()
