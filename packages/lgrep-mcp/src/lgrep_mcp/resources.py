"""lgrep's MCP resources: this project's index status, its indexed files, a file as it is on disk,
the effective settings, and what lgrep saved the agents working on it (`lgrep stats`)."""

from __future__ import annotations

import json
from typing import Any

from lgrep_core.app.serialize import receipts_json
from lgrep_core.domain.errors import LgrepError, NotFoundError
from lgrep_core.domain.models import GetFileRequest, ListFilesRequest, StatusRequest
from lgrep_core.storage.receipts import ReceiptLedger
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from .app import App, Unit
from .budget import compact_json
from .shaping import inert
from .tools.index import status_answer

__all__ = ["FILES_LISTED", "Resources", "add_resources"]

# lgrep://files lists at most this many files (~15 tokens each): a resource an agent reads whole.
FILES_LISTED = 1_000


def add_resources(server: MCPServer, app: App) -> None:
    """lgrep's resources on `server`, in the order clients list them."""
    resources = Resources(app)
    server.resource("lgrep://status", mime_type="application/json", description="This project's index status")(
        resources.status_resource
    )
    server.resource(
        "lgrep://files",
        mime_type="application/json",
        description=f"This project's indexed files: path, language, chunks, last line (first {FILES_LISTED:,})",
    )(resources.files_resource)
    server.resource(
        "lgrep://file/{+path}",
        mime_type="text/plain",
        description="A file of this project as it is on disk now (search results link to it)",
    )(resources.file_resource)
    server.resource(
        "lgrep://config", mime_type="application/json", description="Effective settings, each with where it came from"
    )(resources.config_resource)
    server.resource(
        "lgrep://stats",
        mime_type="application/json",
        description="Tokens lgrep's answers saved on this project, per client (as `lgrep stats --json`)",
    )(resources.stats_resource)


class Resources(Unit):
    """The resources of the default project (`roots.default`); failures are resource errors, or
    say what is missing."""

    def status_resource(self) -> str:
        try:
            status = status_answer(self.app.engine.call(StatusRequest(str(self.app.default_project))))
        except NotFoundError as exc:  # no index yet: say so, and what to run
            status = {"project_root": str(self.app.default_project), "state": "absent", "detail": exc.message}
        except LgrepError as exc:  # the daemon is down, the index unreadable: not "absent"
            raise ResourceError(inert(exc.message)) from None
        return json.dumps(inert(status), indent=1)

    def files_resource(self) -> str:
        try:
            project, glob, _ = self.app.scope(None)
            listed = self.app.engine.call(ListFilesRequest(str(project), path_glob=glob, limit=FILES_LISTED))
        except LgrepError as exc:
            raise ResourceError(inert(exc.message)) from None
        data: dict[str, Any] = {
            "project_root": str(project),
            "total": listed.total,
            "files": [
                {"path": f.path, "language": f.language, "chunks": f.chunks, "last_line": f.last_line}
                for f in listed.files
            ],
        }
        if listed.total > len(listed.files):
            data["notes"] = [
                f"the first {len(listed.files):,} of {listed.total:,} files by path; `lgrep files --path GLOB` "
                "or lgrep_search with a path narrows it"
            ]
        return compact_json(inert(data))

    def file_resource(self, path: str) -> str:
        # `path` arrives percent-decoded once, by the SDK's template match: the exact inverse of
        # file_uris' quote. Decoding again would turn a folder named `%2e%2e` into `..`.
        try:
            project, rel = self.app.locate(path)
            return inert(self.app.engine.call(GetFileRequest(str(project), rel)).content)
        except LgrepError as exc:
            raise ResourceError(inert(exc.message)) from None

    def config_resource(self) -> str:
        from lgrep_core.settings.config import load_settings

        try:
            loaded = load_settings(self.app.roots.default)
        except LgrepError as exc:
            return json.dumps({"error": inert(exc.message)})
        return json.dumps(
            inert({key: {"value": value, "source": source} for key, value, source in loaded.effective()}), indent=1
        )

    def stats_resource(self) -> str:
        try:
            project = self.app.default_project
            found = ReceiptLedger(self.app.lgrep.cache_dir).read(project)
        except LgrepError as exc:
            raise ResourceError(inert(exc.message)) from None
        return json.dumps(inert(receipts_json(found.projects, found.notes)), indent=1)
