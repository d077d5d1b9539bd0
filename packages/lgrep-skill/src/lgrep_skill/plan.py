"""A plan of file changes: computed first (nothing written), shown as a diff, then applied.

Every installer builds a Plan from what is on disk; `--dry-run` prints it, otherwise `apply` writes
it. Writes are atomic (a temporary file in the same folder, renamed over the old one, its mode kept),
and a file that changed on disk between planning and writing is left alone with an error rather
than overwritten: Claude Code rewrites `~/.claude.json` while it runs. A change in a project is
confined to it (`files`: no symbolic link below the project root is followed, read or written).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lgrep_core.domain.errors import ConfigError

from . import files
from .files import read_text

__all__ = ["Change", "Plan", "containers_created_by_lgrep", "created_by_lgrep", "read_text"]

Action = Literal["create", "update", "delete", "unchanged"]


@dataclass
class Change:
    """One file: its text before (None: absent) and after (None: to delete), and what it is for."""

    path: Path
    before: str | None
    after: str | None
    what: str
    notes: list[str] = field(default_factory=list[str])
    remove_empty_dirs_up_to: Path | None = None  # after deleting the file, prune empty folders up to here
    confine: Path | None = None  # a project's root: no link below it is followed (see `files`)
    recorded: bool = False  # a settings file lgrep creates (or deletes): kept in the plan's ledger
    # Install: the objects (or lists) it adds to a file it does not create, each by its key path
    # (`mcpServers`), kept in the ledger so uninstall takes out those and no container of the user's.
    containers: list[tuple[str, ...]] = field(default_factory=list[tuple[str, ...]])
    # Uninstall: its file's recorded containers are settled (taken out, or kept for what else is in them).
    forgets_containers: bool = False

    @property
    def action(self) -> Action:
        if self.before == self.after:
            return "unchanged"
        if self.before is None:
            return "create"
        if self.after is None:
            return "delete"
        return "update"

    def diff(self) -> str:
        before = [] if self.before is None else self.before.splitlines(keepends=True)
        after = [] if self.after is None else self.after.splitlines(keepends=True)
        lines = difflib.unified_diff(
            before,
            after,
            fromfile="/dev/null" if self.before is None else str(self.path),
            tofile="/dev/null" if self.after is None else str(self.path),
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": self.action, "what": self.what, "notes": self.notes}


@dataclass
class Plan:
    operation: Literal["install", "uninstall"]
    client: str
    scope: str
    changes: list[Change] = field(default_factory=list[Change])
    notes: list[str] = field(default_factory=list[str])
    command: str | None = None  # the lgrep executable an install writes into the client's settings
    ledger: Path | None = None  # the record of what lgrep created (see `created_by_lgrep`)

    @property
    def changed(self) -> bool:
        return any(c.action != "unchanged" for c in self.changes)

    def apply(self) -> None:
        """Write every change. Raises ConfigError, before writing anything, when a file changed on
        disk since the plan was made (run the command again)."""
        for change in self.changes:
            if change.action != "unchanged" and read_text(change.path, confine=change.confine) != change.before:
                raise ConfigError(f"{change.path} changed while lgrep was planning its edit; run the command again")
        for change in self.changes:
            if change.action == "unchanged":
                continue
            if change.after is None:
                files.delete(change.path, confine=change.confine, prune_up_to=change.remove_empty_dirs_up_to)
            else:
                files.write_text(change.path, change.after, confine=change.confine)
        self._record()

    def _record(self) -> None:
        """Note in the ledger the settings files and the containers this plan created, and forget
        those it deleted or settled."""
        done = [c for c in self.changes if c.action != "unchanged"]
        created = {str(c.path) for c in done if c.recorded and c.action == "create"}
        deleted = {str(c.path) for c in done if c.recorded and c.action == "delete"}
        added = {(str(c.path), key) for c in done for key in c.containers}
        settled = {str(c.path) for c in done if c.forgets_containers or c.action == "delete"}
        if self.ledger is None or not (created or deleted or added or settled):
            return
        known = _Ledger.read(self.ledger)
        now = _Ledger(
            (known.created | created) - deleted,
            {(path, key) for path, key in known.containers if path not in settled} | added,
        )
        if now == known:
            return
        try:
            files.write_text(self.ledger, now.dumps())
        except (OSError, ConfigError) as exc:
            self.notes.append(
                f"could not record what lgrep created in {self.ledger} ({getattr(exc, 'strerror', None) or exc}): "
                "uninstall will leave it in place"
            )

    def to_json(self, *, dry_run: bool) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "client": self.client,
            "scope": self.scope,
            **({"command": self.command} if self.command else {}),
            "dry_run": dry_run,
            "changed": self.changed,
            "changes": [c.to_json() for c in self.changes],
            "notes": self.notes,
        }


@dataclass(frozen=True)
class _Ledger:
    """`installed-files.json`: `{"created": [file, ...], "containers": [{"file": f, "key": [k, ...]}]}`.
    A ledger of older lgreps has no "containers": none is then lgrep's, the safe way to be wrong."""

    created: set[str]
    containers: set[tuple[str, tuple[str, ...]]]

    @classmethod
    def read(cls, ledger: Path) -> _Ledger:
        try:
            doc: Any = json.loads(files.read_text(ledger) or "{}")
        except (OSError, ConfigError, ValueError, RecursionError):
            doc = {}  # none, or unreadable: nothing counts as lgrep's, so nothing is taken out
        if not isinstance(doc, dict):
            doc = {}
        paths: Any = doc.get("created")  # pyright: ignore[reportUnknownMemberType]
        records: Any = doc.get("containers")  # pyright: ignore[reportUnknownMemberType]
        created = {p for p in paths if isinstance(p, str)} if isinstance(paths, list) else set[str]()  # pyright: ignore[reportUnknownVariableType]
        containers: set[tuple[str, tuple[str, ...]]] = set()
        for record in records if isinstance(records, list) else []:  # pyright: ignore[reportUnknownVariableType]
            path: Any = record.get("file") if isinstance(record, dict) else None  # pyright: ignore[reportUnknownMemberType]
            key: Any = record.get("key") if isinstance(record, dict) else None  # pyright: ignore[reportUnknownMemberType]
            if isinstance(path, str) and isinstance(key, list) and key and all(isinstance(k, str) for k in key):  # pyright: ignore[reportUnknownVariableType]
                containers.add((path, tuple(key)))  # pyright: ignore[reportUnknownArgumentType]
        return cls(created, containers)

    def dumps(self) -> str:
        doc: dict[str, Any] = {"created": sorted(self.created)}
        if self.containers:
            doc["containers"] = [{"file": path, "key": list(key)} for path, key in sorted(self.containers)]
        return json.dumps(doc, indent=2) + "\n"


def created_by_lgrep(ledger: Path | None, path: Path) -> bool:
    """Whether lgrep created the settings file at `path` (and has not deleted it since), as its ledger
    records: uninstall deletes such a file once nothing but lgrep's skeleton is left in it, and never
    a file the user had before."""
    return ledger is not None and str(path) in _Ledger.read(ledger).created


def containers_created_by_lgrep(ledger: Path | None, path: Path) -> set[tuple[str, ...]]:
    """The key paths of the objects (or lists) lgrep's installs added to the settings file at `path`
    and its uninstalls have not settled yet: only those may uninstall take out, and only once nothing
    but whitespace is left in them. Whether `"servers": {}` was the user's or lgrep's cannot be read
    from the file, so install records it."""
    if ledger is None:
        return set()
    return {key for file, key in _Ledger.read(ledger).containers if file == str(path)}
