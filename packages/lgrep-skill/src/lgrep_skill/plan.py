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

from lgrep_core.errors import ConfigError

from . import files
from .files import read_text

__all__ = ["Change", "Plan", "created_by_lgrep", "read_text"]

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
    ledger: Path | None = None  # the record of the settings files lgrep created (see `created_by_lgrep`)

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
        """Note in the ledger the settings files this plan created, and forget those it deleted."""
        created = {str(c.path) for c in self.changes if c.recorded and c.action == "create"}
        deleted = {str(c.path) for c in self.changes if c.recorded and c.action == "delete"}
        if self.ledger is None or not (created or deleted):
            return
        known = _ledger(self.ledger)
        paths = (known | created) - deleted
        if paths == known:
            return
        try:
            files.write_text(self.ledger, json.dumps({"created": sorted(paths)}, indent=2) + "\n")
        except OSError as exc:
            self.notes.append(
                f"could not record the files lgrep created in {self.ledger} ({exc.strerror}): "
                "uninstall will leave them in place"
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


def _ledger(ledger: Path) -> set[str]:
    try:
        doc = json.loads(ledger.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return set()  # none, or unreadable: no file counts as lgrep's, so none is deleted
    paths = doc.get("created") if isinstance(doc, dict) else None  # pyright: ignore[reportUnknownMemberType]
    return {p for p in paths if isinstance(p, str)} if isinstance(paths, list) else set()  # pyright: ignore[reportUnknownVariableType]


def created_by_lgrep(ledger: Path | None, path: Path) -> bool:
    """Whether lgrep created the settings file at `path` (and has not deleted it since), as its ledger
    records: uninstall deletes such a file once nothing but lgrep's skeleton is left in it, and never
    a file the user had before."""
    return ledger is not None and str(path) in _ledger(ledger)
