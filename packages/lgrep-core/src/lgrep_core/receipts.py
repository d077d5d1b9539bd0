"""What lgrep saved the agents that call it: per project and per MCP client, the calls whose answer
carried a receipt, the tokens those answers held and the tokens of the whole files their results
come from (what an agent would have read with grep and cat). ADR 0025.

Every agent runs its own `lgrep mcp` process, so the sums live in a file per project that every
process adds to: `<cache dir>/receipts/<sha256(project)[:12]>.json`, read, added to and replaced
atomically while holding an `flock` on the `.lock` file beside it, so concurrent writers lose no
count and a reader never sees half a file. It holds counts, a project path and client names
(`clientInfo.name` from the MCP handshake): never a query, a path inside the project or any text.
The `lgrep stats` command and the `lgrep://stats` resource read it; it survives `lgrep clean`, as
the spend ledger does.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lgrep_core.errors import StorageError
from lgrep_core.locks import check_owned_file, ensure_private_dir

__all__ = ["CLIENT_NAME_MAX", "ClientReceipts", "ProjectReceipts", "ReceiptLedger", "client_name"]

# A client's name as stats keep it: clientInfo.name is the client's own text, so it is cut to this
# and stripped of anything but printable characters (a hostile client cannot grow the file or
# write escapes into a terminal through it).
CLIENT_NAME_MAX = 64
_FOLDER = "receipts"
_VERSION = 1


def client_name(raw: object) -> str:
    """The name stats keep for an MCP client's `clientInfo.name` ("unknown" when it gave none)."""
    text = raw if isinstance(raw, str) else ""
    clean = "".join(c for c in text if c.isprintable()).strip()[:CLIENT_NAME_MAX]
    return clean or "unknown"


@dataclass
class ClientReceipts:
    """One client's sums on one project."""

    calls: int = 0
    tokens_returned: int = 0
    file_tokens: int = 0
    files: int = 0

    @property
    def saved(self) -> int:
        """Tokens the agent did not read: the files' tokens less the answers' (negative when answers
        were larger than the files, e.g. a short file read whole)."""
        return self.file_tokens - self.tokens_returned

    def add(self, other: ClientReceipts) -> None:
        self.calls += other.calls
        self.tokens_returned += other.tokens_returned
        self.file_tokens += other.file_tokens
        self.files += other.files


@dataclass
class ProjectReceipts:
    """A project's sums, per client."""

    project_root: str
    clients: dict[str, ClientReceipts] = field(default_factory=lambda: {})

    @property
    def total(self) -> ClientReceipts:
        out = ClientReceipts()
        for sums in self.clients.values():
            out.add(sums)
        return out


class ReceiptLedger:
    """The receipts of every project under one cache dir."""

    def __init__(self, cache_dir: Path) -> None:
        self.folder = Path(cache_dir) / _FOLDER
        self._checked = False

    def path_of(self, project: Path | str) -> Path:
        digest = hashlib.sha256(str(project).encode("utf-8", "surrogateescape")).hexdigest()
        return self.folder / f"{digest[:12]}.json"

    def record(
        self, project: Path | str, client: str, *, tokens_returned: int, file_tokens: int, files: int, calls: int = 1
    ) -> None:
        """Add one call's receipt (or `calls` calls') to the project's sums for `client`.

        Raises:
            StorageError: the file cannot be locked, read or written.
            ConfigError: the cache dir or the lock file is not the user's own.
        """
        if not self._checked or not self.folder.is_dir():
            ensure_private_dir(self.folder, what="lgrep's receipts folder")
            self._checked = True  # once per ledger: the check stats every folder above it
        target = self.path_of(project)
        with _locked(target.with_suffix(".lock")):
            current = _read(target) or ProjectReceipts(str(project))
            sums = current.clients.setdefault(client_name(client), ClientReceipts())
            sums.add(ClientReceipts(calls, tokens_returned, file_tokens, files))
            _write(target, current)

    def project(self, project: Path | str) -> ProjectReceipts:
        """A project's sums (none yet: an empty one). Reads without the lock: files are replaced whole."""
        return _read(self.path_of(project)) or ProjectReceipts(str(project))

    def projects(self) -> list[ProjectReceipts]:
        """Every project's sums, by project path."""
        try:
            names = sorted(p for p in self.folder.iterdir() if p.suffix == ".json")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {self.folder}: {exc.strerror}") from None
        found = [r for r in (_read(p) for p in names) if r is not None]
        return sorted(found, key=lambda r: r.project_root)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created 0600, never through a link), waiting for it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise StorageError(f"cannot open the lock file {path}: {exc.strerror}") from None
    try:
        check_owned_file(fd, path)
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _read(path: Path) -> ProjectReceipts | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(1 << 20)
    try:
        data: Any = json.loads(raw)
        clients = {
            client_name(name): ClientReceipts(
                int(s["calls"]), int(s["tokens_returned"]), int(s["file_tokens"]), int(s["files"])
            )
            for name, s in data["clients"].items()
        }
        return ProjectReceipts(str(data["project_root"]), clients)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise StorageError(f"{path} is damaged: remove it to start the project's receipts again") from None


def _write(path: Path, receipts: ProjectReceipts) -> None:
    data = {
        "version": _VERSION,
        "project_root": receipts.project_root,
        "clients": {
            name: {
                "calls": s.calls,
                "tokens_returned": s.tokens_returned,
                "file_tokens": s.file_tokens,
                "files": s.files,
            }
            for name, s in sorted(receipts.clients.items())
        },
    }
    fd, name = tempfile.mkstemp(prefix=".receipts-", dir=path.parent)  # 0600
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StorageError(f"cannot write {path}: {exc.strerror}") from None
