"""lgrep_get_file: lines of a file, of the working tree or a released version, or its skeleton, cut at
a line end to fit the answer's token budget."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

from lgrep_core.app.serialize import file_slice_json, skeleton_json
from lgrep_core.domain.models import GetFileRequest, SkeletonRequest, check_release
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from lgrep_mcp.answers import FileAnswer
from lgrep_mcp.app import Unit
from lgrep_mcp.budget import DEFAULT_MAX_TOKENS, TokenCounter, measured
from lgrep_mcp.receipts import RECEIPT_TOKENS
from lgrep_mcp.shaping import inert, tool_errors
from lgrep_mcp.tools.params import Component, MaxTokens, VersionSpec
from lgrep_mcp.tools.releases import release_path

__all__ = ["FileTools"]


class FileTools(Unit):
    @tool_errors
    def lgrep_get_file(
        self,
        path: Annotated[str, Field(description="A file of the project (relative to it, or absolute inside it)")],
        start_line: Annotated[int, Field(ge=0, description="First line, 1-based (0: from the start)")] = 0,
        end_line: Annotated[int, Field(ge=0, description="Last line, inclusive (0: to the end)")] = 0,
        skeleton: Annotated[
            bool,
            Field(
                description="The file's structure instead of its lines: imports and signatures with "
                "docstrings' first lines, bodies elided with the lines to read for each (start here)"
            ),
        ] = False,
        component: Component = None,
        version: VersionSpec = None,
        max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
    ) -> Annotated[CallToolResult, FileAnswer]:
        """Lines of an indexed file as it is on disk now (secrets redacted as in the index), or, with
        `component` (and `version`), as it is in that released version (`path` relative to the
        repository; `total_lines` is its line count). A long range is cut to max_tokens at a line
        end; `notes` name the next start_line. With `skeleton`, the file's structure, which costs a
        fraction of its tokens (`tokens_saved`); then read only the lines you need."""
        check_release(component or "", version or "")  # a version alone is refused, not dropped
        if component:
            if skeleton:
                raise ToolError("skeletons are of the working tree; read a released file without skeleton")
            project, rel = self.app.default_project, release_path(path)
            if not rel:
                raise ToolError("name the file to read (lgrep_releases lists a version's files)")
            piece = self.app.engine.call(
                GetFileRequest(str(project), rel, start_line, end_line, component=component, version=version or "")
            )
            return _fit_file(file_slice_json(piece), self.app.counter, max_tokens, self.app.answer)
        project, rel = self.app.locate(path)
        if skeleton:
            outline = skeleton_json(self.app.engine.call(SkeletonRequest(str(project), rel)), root=str(project))
            # its lines already say where every definition is (`⋯ N lines (La-b)`): listing them
            # again would cost more than it saves (`lgrep skeleton --json` has them)
            shape: dict[str, Any] = {k: v for k, v in outline.items() if k not in ("project_root", "definitions")}
            if not shape["content"].strip():
                shape["notes"] = ["no imports or definitions (a script): read its lines without skeleton"]
            shape.update(skeleton=True, start_line=1, end_line=shape["total_lines"], stale=False, truncated=False)
            fitted = _fit_skeleton(shape, self.app.counter, max_tokens - RECEIPT_TOKENS, _unanswered)
        else:
            data = file_slice_json(self.app.engine.call(GetFileRequest(str(project), rel, start_line, end_line)))
            fitted = _fit_file(data, self.app.counter, max_tokens - RECEIPT_TOKENS, _unanswered)
        answer = fitted.structured_content or {}
        return self.app.answer(FileAnswer, answer, self.app.with_receipt(answer, project, [rel], max_tokens))


def _unanswered(_model: type[BaseModel], data: dict[str, Any], text: str) -> CallToolResult:
    """A fitted answer not yet checked against its schema (its receipt is still to come)."""
    return CallToolResult(content=[], structured_content=data)


def _fit_skeleton(
    shape: Mapping[str, Any],
    counter: TokenCounter,
    max_tokens: int,
    answer: Callable[[type[BaseModel], dict[str, Any], str], CallToolResult],
) -> CallToolResult:
    """A skeleton cut to `max_tokens`: its tail lines go first."""
    data: dict[str, Any] = inert(shape)
    data["max_tokens"] = max_tokens
    lines = data["content"].split("\n")
    keep = len(lines)
    while True:
        text, tokens = measured(data, counter)
        if tokens <= max_tokens or keep <= 1:
            return answer(FileAnswer, data, text)
        keep = max(1, min(keep - 1, int(keep * max_tokens / tokens * 0.95)))
        data["content"] = "\n".join(lines[:keep])
        data["notes"] = [f"skeleton cut at its line {keep} of {len(lines)} to fit max_tokens; raise max_tokens for all"]


def _fit_file(
    shape: Mapping[str, Any],
    counter: TokenCounter,
    max_tokens: int,
    answer: Callable[[type[BaseModel], dict[str, Any], str], CallToolResult],
) -> CallToolResult:
    """A file slice cut at a line end to fit `max_tokens`, with a note naming the next call."""
    data: dict[str, Any] = inert(shape)
    lines = data["content"].split("\n")
    keep = len(lines)
    while True:
        data["content"] = "\n".join(lines[:keep])
        cut = keep < len(lines)
        if cut:
            data["end_line"] = data["start_line"] + keep - 1
            data["truncated"] = True
        if data["truncated"] and data["end_line"] < data["total_lines"]:
            data["notes"] = [
                f"lines {data['start_line']}-{data['end_line']} of {data['total_lines']}: call again with "
                f"start_line={data['end_line'] + 1} for more"
            ]
        data["max_tokens"] = max_tokens
        text, tokens = measured(data, counter)
        if tokens <= max_tokens or keep <= 1:
            return answer(FileAnswer, data, text)
        # Shrink in proportion to the excess, at least one line per step.
        keep = max(1, min(keep - 1, int(keep * max_tokens / tokens * 0.95)))
