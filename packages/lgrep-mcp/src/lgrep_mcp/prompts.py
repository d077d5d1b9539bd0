"""lgrep's MCP prompts: a code review, a tour of the codebase and a search for similar code, each
told which lgrep tools to use."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

__all__ = ["add_prompts", "code_review", "explain_codebase", "find_similar"]


def add_prompts(server: MCPServer) -> None:
    """lgrep's prompts on `server`, in the order clients list them."""
    server.prompt(description="Review a file with lgrep's tools: read it, then what it calls and what resembles it")(
        code_review
    )
    server.prompt(description="Explain how this codebase is organised, found with lgrep's tools")(explain_codebase)
    server.prompt(description="Find code similar to a place in the project")(find_similar)


def code_review(path: str) -> str:
    return (
        f"Review {path} of this project. Read it with lgrep_get_file. For each function it defines, "
        "use lgrep_find_symbol on the names it calls that you do not know, and lgrep_find_related on "
        "its definition lines to find code that does the same thing elsewhere (duplication, a helper "
        "it should use, a convention it breaks). Report concrete problems with file and line."
    )


def explain_codebase() -> str:
    return (
        "Explain how this project is organised. Start with lgrep_status (size, languages). Then use "
        "lgrep_search for its entry points ('main entry point', 'command line parsing'), how it is "
        "configured ('load configuration'), its storage and its external interfaces; read the best "
        "results with lgrep_get_file. Describe the main parts, how data flows between them, and "
        "where to start reading, citing files and line ranges."
    )


def find_similar(path: str, line: int) -> str:
    return (
        f"Find code similar to {path} line {line}. Call lgrep_find_related with that path and line, "
        "then read the closest results with lgrep_get_file and say how each one differs (a copy to "
        "merge, a variant with a reason, or unrelated despite the score)."
    )
