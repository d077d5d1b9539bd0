"""lgrep-skill: the agent skill and the installers that add lgrep to OpenCode, Claude Code, Codex,
Gemini CLI, Cursor, VS Code and AGENTS.md.

`plan_install` / `plan_uninstall` compute a Plan (nothing written); `Plan.apply` writes it. The
files agents read (SKILL.md, the Claude Code plugin, the AGENTS.md section) are a checked copy of
the repository's `integrations/`, read with `asset_text`.
"""

from .installers import (
    CLIENTS,
    PORTABLE_COMMAND,
    SERVER_NAME,
    Locations,
    Scope,
    asset_text,
    plan_install,
    plan_uninstall,
)
from .plan import Change, Plan

__all__ = [
    "CLIENTS",
    "PORTABLE_COMMAND",
    "SERVER_NAME",
    "Change",
    "Locations",
    "Plan",
    "Scope",
    "asset_text",
    "plan_install",
    "plan_uninstall",
]
