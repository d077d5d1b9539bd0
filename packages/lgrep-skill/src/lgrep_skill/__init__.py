"""lgrep-skill: the agent skill and the installers that add lgrep to OpenCode, Claude Code, Codex,
Gemini CLI, Cursor, VS Code and AGENTS.md.

`plan_install` / `plan_uninstall` compute a Plan (nothing written); `Plan.apply` writes it. The
files agents read (SKILL.md, the Claude Code plugin, the AGENTS.md section) are a checked copy of
the repository's `integrations/`, read with `asset_text`. Each agent client is one row of
`AGENT_CLIENTS` (`clients`), which install, uninstall, the registrations' readers and the command's
detection all read.
"""

from .clients import AGENT_CLIENTS, Client
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
    "AGENT_CLIENTS",
    "CLIENTS",
    "PORTABLE_COMMAND",
    "SERVER_NAME",
    "Change",
    "Client",
    "Locations",
    "Plan",
    "Scope",
    "asset_text",
    "plan_install",
    "plan_uninstall",
]
