"""How values leave the MCP server: repository text made inert, and lgrep's errors as tool errors
with their own message (answers take their JSON shape from lgrep_core.app.serialize)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from lgrep_core.app.cli_support import terminal_safe
from lgrep_core.domain.errors import LgrepError
from mcp.server.mcpserver.exceptions import ToolError

__all__ = ["inert", "tool_errors"]

T = TypeVar("T")


def inert(value: Any) -> Any:
    """Repository text as a client may show it: every C0/C1 control but newline and tab (and the CR
    of a CRLF), DEL and the Unicode bidirectional controls escaped visibly (`\\x1b`, `\\u202e`), as the
    CLI's human output does (`terminal_safe`), in strings at any depth. Applied to every answer,
    resource and error before it is measured: file names, snippets and file content are untrusted,
    and an agent's client may print them to a terminal or a page."""
    if isinstance(value, str):
        return "\n".join(
            terminal_safe(line[:-1], keep_tabs=True) + "\r"
            if line.endswith("\r")
            else terminal_safe(line, keep_tabs=True)
            for line in value.split("\n")
        )
    if isinstance(value, dict):
        return {key: inert(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [inert(item) for item in value]
    return value


def tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """lgrep's errors reach the agent as tool errors with their own message (never a traceback)."""

    if inspect.iscoroutinefunction(fn):

        async def awaiting(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except LgrepError as exc:
                raise ToolError(inert(exc.message)) from None

        wrapped: Callable[..., Any] = awaiting
    else:

        def calling(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except LgrepError as exc:
                raise ToolError(inert(exc.message)) from None

        wrapped = calling
    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    wrapped.__annotations__ = fn.__annotations__
    wrapped.__wrapped__ = fn  # type: ignore[attr-defined]  # keeps the signature for the input schema
    return wrapped
