"""A plan of file changes: computed first (nothing written), shown as a diff, then applied.

Every installer builds a Plan from what is on disk; `--dry-run` prints it, otherwise `apply` writes
it. Writes are atomic (a temporary file in the same folder, renamed over the old one, its mode kept),
and a file that changed on disk between planning and writing is left alone with an error rather
than overwritten: Claude Code rewrites `~/.claude.json` while it runs.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lgrep_core.errors import ConfigError

__all__ = ["Change", "Plan", "read_text"]

Action = Literal["create", "update", "delete", "unchanged"]


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist. Raises ConfigError when it is not UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; lgrep leaves it alone") from None


@dataclass
class Change:
    """One file: its text before (None: absent) and after (None: to delete), and what it is for."""

    path: Path
    before: str | None
    after: str | None
    what: str
    notes: list[str] = field(default_factory=list[str])
    remove_empty_dirs_up_to: Path | None = None  # after deleting the file, prune empty folders up to here

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

    @property
    def changed(self) -> bool:
        return any(c.action != "unchanged" for c in self.changes)

    def apply(self) -> None:
        """Write every change. Raises ConfigError, before writing anything, when a file changed on
        disk since the plan was made (run the command again)."""
        for change in self.changes:
            if change.action != "unchanged" and read_text(change.path) != change.before:
                raise ConfigError(f"{change.path} changed while lgrep was planning its edit; run the command again")
        for change in self.changes:
            if change.action == "unchanged":
                continue
            if change.after is None:
                change.path.unlink(missing_ok=True)
                _prune(change.path.parent, change.remove_empty_dirs_up_to)
            else:
                _write_atomic(change.path, change.after)

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


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".lgrep-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _prune(folder: Path, stop: Path | None) -> None:
    """Remove `folder` and its parents while they are empty, never going above `stop`."""
    if stop is None:
        return
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
