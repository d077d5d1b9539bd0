"""The arguments several tools share, with the descriptions agents read."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from lgrep_mcp.budget import MAX_MAX_TOKENS

__all__ = ["Component", "MaxTokens", "ProjectPath", "VersionSpec"]

# The `path` argument of the tools that act on a whole project.
ProjectPath = Annotated[str | None, Field(description="The project folder (default: this project)")]
# A released version (lgrep index --tags) instead of the working tree.
Component = Annotated[
    str | None, Field(description="Answer from a released version of this component (lgrep_releases lists them)")
]
VersionSpec = Annotated[
    str | None, Field(description="With component: a version (0.7.3), latest (default) or a semver range (^0.7)")
]
# Every answer that can grow says how large it may be (budget.py).
MaxTokens = Annotated[
    int,
    Field(
        ge=500,
        le=MAX_MAX_TOKENS,
        description="Largest answer in tokens; results are shortened, then left out, to fit (default 4000)",
    ),
]
