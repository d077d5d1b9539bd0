"""What lgrep saved the agents that call it: per project and per MCP client, the calls whose answer
carried a receipt, the tokens those answers held and the tokens of the whole files their results
come from (what an agent would have read with grep and cat). ADR 0025.

Every agent runs its own `lgrep mcp` process, so the sums live in files per project that every
process adds to, under `<cache dir>/receipts/`, named by `sha256(project)[:12]`, all changed while
holding an `flock` on the `.lock` file beside them, so concurrent writers lose no count:

- `<name>.json`, the summary: the sums per client, and which bytes of which log they include;
- `<name>.log`, one short JSON line per call since, appended: a call costs an append, not a
  rewrite. Past LOG_MAX bytes the log is folded into the summary (written whole and renamed over
  it), then a fresh empty log is renamed over the old one. A process killed between the two
  leaves a summary naming the old log's inode and length, so those bytes are not counted twice;
  killed before, the old summary and the whole log still hold every count.

Readers (`lgrep stats`, the `lgrep://stats` resource) take the lock and add the log to the summary.
The files hold counts, a project path and client names (`clientInfo.name` from the MCP handshake,
any text a client likes): never a query, a path inside the project or any text. A project keeps
CLIENTS_MAX names; the calls of the others are summed under OTHER, so a client that sends a new
name every time cannot grow the files. Whatever the files hold is checked as it is read: only
whole numbers from 0 to COUNT_MAX count. A summary that fails the check is set aside (renamed
`<name>.json.damaged-<time>`) by the next record, which starts the project's receipts again;
readers name it in a note. A log line that fails it (one cut short by a crash) is skipped. The
files survive `lgrep clean`, as the spend ledger does.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import LgrepError, StorageError
from lgrep_core.runtime.locks import ensure_private_dir, open_lock_file

__all__ = [
    "CLIENTS_MAX",
    "CLIENT_NAME_MAX",
    "COUNT_MAX",
    "LOG_MAX",
    "OTHER",
    "ClientReceipts",
    "ProjectReceipts",
    "ReceiptLedger",
    "Receipts",
    "client_name",
]

log = logging.getLogger(__name__)

# A client's name as stats keep it: clientInfo.name is the client's own text, so it is cut to this
# and stripped of anything but printable characters (a hostile client cannot write escapes into a
# terminal through it).
CLIENT_NAME_MAX = 64
# Client names kept per project. Far more than the agents one person points at one project
# (Claude Code, Codex, Cursor, Gemini CLI, an inspector, a few scripts), so real clients keep their
# names; a client that sends a new name every session (or a hostile one) cannot grow the summary
# past ~33 entries (~5 KB, read by every fold and every `lgrep stats`). The names with the most
# calls keep theirs: a flood of one-call names cannot push out a client that works.
CLIENTS_MAX = 32
# Where the calls of every other name are summed. A client that calls itself "other" is summed
# there too: it takes no name's place, and every count is still in the total.
OTHER = "other"
# The largest count kept: the largest integer every JSON reader holds exactly (a double's 53 bits),
# and out of reach (a million calls a day of a million tokens each would take 24 years). Sums stop
# there rather than grow into what the check below would call damage.
COUNT_MAX = 2**53 - 1
# The log is folded into the summary past this size: ~700 calls of ~90 bytes, a few ms to fold, and
# what every reader reads at most beyond the summary.
LOG_MAX = 64 << 10
# A log line longer than this is not one lgrep wrote (the longest is a 64-character name, each
# character escaped as \uXXXX, and four counts: ~500 bytes); it is skipped unread.
_LINE_MAX = 4096
# A summary larger than this is damaged (the largest real one is ~33 × 500 bytes).
_SUMMARY_MAX = 1 << 20
# Distinct names of one log summed apart before the others go under OTHER: bounds a fold's memory
# when the log grew far past LOG_MAX because folds kept failing.
_LOG_NAMES_MAX = 4096
# Inode numbers are 64-bit on some file systems (btrfs, XFS, overlayfs): beyond COUNT_MAX.
_INODE_MAX = 2**64 - 1
_FOLDER = "receipts"
_VERSION = 2
_DAMAGED = ".damaged-"


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


_FIELDS = tuple(f.name for f in fields(ClientReceipts))


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


@dataclass
class Receipts:
    """What the ledger holds (`ReceiptLedger.read`): projects' sums, and notes on the files that
    could not be read (damaged, set aside) and what was or will be done about them."""

    projects: list[ProjectReceipts] = field(default_factory=lambda: [])
    notes: list[str] = field(default_factory=lambda: [])


@dataclass
class _Summary:
    """A project's `.json`: its sums, and the log bytes they include (`folded`: that log's inode and
    length; None: none of the log there is now)."""

    project_root: str
    clients: dict[str, ClientReceipts]
    folded: tuple[int, int] | None = None


class _Damaged(Exception):
    """A file of the ledger holds what lgrep never writes (the message says what)."""


class ReceiptLedger:
    """The receipts of every project under one cache dir."""

    def __init__(self, cache_dir: Path) -> None:
        self.folder = Path(cache_dir) / _FOLDER
        self._checked = False
        # each summary this ledger last found sound, by (inode, size, mtime): a record reads it again
        # only when another process (or a person) has replaced it since
        self._sound: dict[Path, tuple[int, int, int]] = {}

    def path_of(self, project: Path | str) -> Path:
        """The project's summary (its log and lock are beside it: `.log`, `.lock`)."""
        digest = hashlib.sha256(str(project).encode("utf-8", "surrogateescape")).hexdigest()
        return self.folder / f"{digest[:12]}.json"

    def record(
        self, project: Path | str, client: str, *, tokens_returned: int, file_tokens: int, files: int, calls: int = 1
    ) -> None:
        """Add one call's receipt (or `calls` calls') to the project's sums for `client`: a line
        appended to its log (folded into its summary now and then). A damaged summary is set aside
        first, and the project's receipts start again (logged).

        Raises:
            StorageError: the files cannot be locked, read or written.
            ConfigError: the cache dir or the lock file is not the user's own.
        """
        if not self._checked or not self.folder.is_dir():
            ensure_private_dir(self.folder, what="lgrep's receipts folder")
            self._checked = True  # once per ledger: the check stats every folder above it
        sums = ClientReceipts(*(_bounded(v) for v in (calls, tokens_returned, file_tokens, files)))
        line = json.dumps({"client": client_name(client), **vars(sums)}, separators=(",", ":")) + "\n"
        target = self.path_of(project)
        with _locked(target.with_suffix(".lock")):
            if not self._is_sound(target):
                self._fold(target, project)
            if _append(target.with_suffix(".log"), line.encode("ascii")) < LOG_MAX:
                return
            try:
                self._fold(target, project)
            except LgrepError as exc:  # the call is in the log: counted, folded another time
                log.warning("could not fold the receipts log into %s: %s", target, exc.message)

    def read(self, project: Path | str | None = None) -> Receipts:
        """Every project's sums (or `project`'s), each summary with its log added, and notes on what
        could not be read. Never fails on a damaged file: it is a note.

        Raises:
            StorageError: the receipts folder cannot be listed.
        """
        prefix = None if project is None else self.path_of(project).stem
        try:
            names = sorted(self.folder.iterdir())
        except FileNotFoundError:
            return Receipts()
        except OSError as exc:
            raise StorageError(f"cannot list {self.folder}: {exc.strerror}") from None
        out = Receipts()
        if project is not None:
            targets = [self.path_of(project)]
        else:
            targets = [p for p in names if p.suffix == ".json" and _DAMAGED not in p.name]
        for target in targets:
            try:
                found = self._read_one(target, project, out.notes)
            except LgrepError as exc:  # e.g. a lock file that is not the user's
                out.notes.append(exc.message)
                continue
            if found is not None and found.clients:
                out.projects.append(found)
        out.notes.extend(
            f"{p} is a damaged receipts file set aside when its project's receipts started again: "
            "remove it once you no longer need it"
            for p in names
            if _DAMAGED in p.name and (prefix is None or p.name.startswith(prefix + "."))
        )
        out.projects.sort(key=lambda r: r.project_root)
        return out

    def project(self, project: Path | str) -> ProjectReceipts:
        """A project's sums (none yet: an empty one); `read` also says what could not be read."""
        found = self.read(project).projects
        return found[0] if found else ProjectReceipts(str(project))

    def projects(self) -> list[ProjectReceipts]:
        """Every project's sums, by project path; `read` also says what could not be read."""
        return self.read().projects

    def _read_one(self, target: Path, project: Path | str | None, notes: list[str]) -> ProjectReceipts | None:
        logfile = target.with_suffix(".log")
        if not (target.is_symlink() or target.exists() or logfile.is_symlink() or logfile.exists()):
            return None
        with _locked(target.with_suffix(".lock")):
            try:
                summary = _load_summary(target)
            except _Damaged as exc:
                notes.append(
                    f"{target} is damaged ({exc}): the next call recorded on its project sets it aside "
                    "and starts the project's receipts again"
                )
                summary = None
            if summary is None:
                if project is None:  # which project it was is in the damaged file
                    return None
                summary = _Summary(str(project), {})
            try:
                _fold_log(logfile, summary)
            except _Damaged as exc:
                notes.append(f"{logfile} is damaged ({exc}): the next call recorded on its project sets it aside")
        return ProjectReceipts(summary.project_root, summary.clients)

    def _is_sound(self, target: Path) -> bool:
        """Whether the project's summary is there and holds what lgrep writes (lock held)."""
        try:
            stamp = _stamp(target)
        except OSError:
            return False
        if self._sound.get(target) == stamp:
            return True
        try:
            if _load_summary(target) is None:
                return False
        except _Damaged:
            return False
        self._sound[target] = stamp
        return True

    def _fold(self, target: Path, project: Path | str) -> None:
        """Fold the project's log into its summary and start a fresh log (lock held); a damaged
        summary or log is set aside first."""
        logfile = target.with_suffix(".log")
        try:
            summary = _load_summary(target)
        except _Damaged as exc:
            aside = _set_aside(target)
            log.warning("the receipts of %s were damaged (%s): set aside as %s; they start again", project, exc, aside)
            summary = None
        summary = summary or _Summary(str(project), {})
        try:
            _fold_log(logfile, summary)
        except _Damaged as exc:
            aside = _set_aside(logfile)
            log.warning("the receipts log of %s was damaged (%s): set aside as %s", project, exc, aside)
            summary.folded = None
        _write_summary(target, summary)
        with contextlib.suppress(OSError):
            self._sound[target] = _stamp(target)
        if summary.folded is not None and summary.folded[1] > 0:
            _replace_log(logfile)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created 0600, never through a link), waiting for it."""
    fd = open_lock_file(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _stamp(path: Path) -> tuple[int, int, int]:
    info = os.lstat(path)
    return info.st_ino, info.st_size, info.st_mtime_ns


def _bounded(value: object) -> int:
    """A count to add: lgrep's own, but kept to what the ledger holds whatever it is."""
    if type(value) is not int:
        return 0
    return min(max(value, 0), COUNT_MAX)


def _count(value: object, top: int = COUNT_MAX) -> int:
    """A count read from the ledger: a whole number from 0 to `top` (JSON's 1e400 is a float, inf;
    true is a bool), else the file is damaged."""
    if type(value) is not int or not 0 <= value <= top:
        raise _Damaged(f"a count is {json.dumps(value)[:40]}")
    return value


def _sums(raw: object) -> ClientReceipts:
    if not isinstance(raw, dict):
        raise _Damaged("a client's sums are not an object")
    try:
        return ClientReceipts(*(_count(raw[key]) for key in _FIELDS))
    except KeyError as exc:
        raise _Damaged(f"a client's sums lack {exc}") from None


def _add(into: dict[str, ClientReceipts], name: str, sums: ClientReceipts) -> None:
    """Add `sums` to `into[name]`, each count kept within COUNT_MAX."""
    have = into.setdefault(name, ClientReceipts())
    for key in _FIELDS:
        setattr(have, key, min(getattr(have, key) + getattr(sums, key), COUNT_MAX))


def _merge(summary: _Summary, fresh: dict[str, ClientReceipts]) -> None:
    """Add `fresh` sums to the summary's, keeping the CLIENTS_MAX names with the most calls (a name
    the summary has first at a tie) and summing the others under OTHER."""
    had = set(summary.clients)
    for name, sums in fresh.items():
        _add(summary.clients, name, sums)
    named = sorted(
        (n for n in summary.clients if n != OTHER),
        key=lambda n: (-summary.clients[n].calls, n not in had, n),
    )
    for name in named[CLIENTS_MAX:]:
        _add(summary.clients, OTHER, summary.clients.pop(name))


def _open_regular(path: Path, flags: int) -> int | None:
    """A descriptor of the regular file at `path` (None: there is none), never through a link and
    never waiting on a FIFO.

    Raises:
        _Damaged: a link, a folder or another kind of file, or a file that cannot be opened.
    """
    try:
        fd = os.open(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Damaged("a link" if exc.errno == errno.ELOOP else f"cannot be opened: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _Damaged("not a regular file")
    return fd


def _load_summary(path: Path) -> _Summary | None:
    """The summary at `path` (None: there is none yet).

    Raises:
        _Damaged: anything lgrep does not write there.
    """
    fd = _open_regular(path, os.O_RDONLY)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(_SUMMARY_MAX + 1)
    except OSError as exc:
        raise _Damaged(f"cannot be read: {exc.strerror}") from None
    if len(raw) > _SUMMARY_MAX:
        raise _Damaged(f"larger than {_SUMMARY_MAX >> 20} MiB")
    try:
        data: Any = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, a number of more than 4,300 digits, too deep
        raise _Damaged("not JSON lgrep wrote") from None
    if not isinstance(data, dict) or not isinstance(data.get("project_root"), str):
        raise _Damaged("no project path")
    version = data.get("version")
    folded = None
    if version == 1 and type(version) is int:  # before the log: every client apart
        clients = data.get("clients")
    elif version == _VERSION and type(version) is int:
        clients = data.get("by_client")
        where = data.get("log")
        if where is not None:
            if not isinstance(where, dict):
                raise _Damaged("the log it folded is not an object")
            folded = (_count(where.get("inode"), _INODE_MAX), _count(where.get("length")))
    else:
        raise _Damaged(f"version {json.dumps(version)[:20]}")
    if not isinstance(clients, dict):
        raise _Damaged("no sums per client")
    fresh: dict[str, ClientReceipts] = {}
    for name, sums in clients.items():
        _add(fresh, client_name(name), _sums(sums))
    summary = _Summary(data["project_root"], {}, folded)
    _merge(summary, fresh)
    return summary


def _fold_log(path: Path, summary: _Summary) -> None:
    """Add the lines of the log at `path` that `summary` does not hold yet to it, and note them as
    folded. A line that is not one lgrep writes (cut short by a crash, too long) is skipped.

    Raises:
        _Damaged: the log is a link or not a regular file.
    """
    fd = _open_regular(path, os.O_RDONLY)
    if fd is None:
        summary.folded = None
        return
    fresh: dict[str, ClientReceipts] = {}
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        start = 0
        # the bytes the summary holds, of this very log (a fresh log is made while the one the
        # summary names still exists: another inode; one shorter than them is another file)
        if summary.folded is not None and summary.folded[0] == info.st_ino and summary.folded[1] <= info.st_size:
            start = summary.folded[1]
        handle.seek(start)
        while line := handle.readline(_LINE_MAX):
            if not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # too long: skipped; or the last, cut short
                    line = handle.readline(_LINE_MAX)
                continue
            entry = _log_entry(line)
            if entry is not None:
                name = entry[0] if entry[0] in fresh or len(fresh) < _LOG_NAMES_MAX else OTHER
                _add(fresh, name, entry[1])
        summary.folded = (info.st_ino, handle.tell())
    _merge(summary, fresh)


def _log_entry(line: bytes) -> tuple[str, ClientReceipts] | None:
    try:
        data: Any = json.loads(line)
        if not isinstance(data, dict) or not isinstance(data.get("client"), str):
            return None
        return client_name(data["client"]), _sums(data)
    except (ValueError, RecursionError, _Damaged):
        return None


def _append(path: Path, line: bytes) -> int:
    """Append `line` to the log at `path` (created 0600; a link or anything but a regular file there
    is set aside) and return the log's size.

    Raises:
        StorageError: it cannot be opened or written.
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
    try:
        fd = _open_regular(path, flags)
    except _Damaged as exc:
        log.warning("the receipts log %s was damaged (%s): set aside as %s", path, exc, _set_aside(path))
        try:
            fd = _open_regular(path, flags)
        except _Damaged as again:
            raise StorageError(f"cannot append to {path}: {again}") from None
    if fd is None:  # O_CREAT: only when it went away between two calls
        raise StorageError(f"cannot append to {path}: it is not there")
    try:
        size = os.fstat(fd).st_size
        # a line cut short by a crash is ended first, so that this one is read on its own
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view) :]
        return size + len(line)
    except OSError as exc:
        raise StorageError(f"cannot append to {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _set_aside(path: Path) -> Path:
    """Rename a damaged file (or link: renaming never follows one) to `<name>.damaged-<UTC time>`.

    Raises:
        StorageError: it cannot be renamed.
    """
    seconds, nanos = divmod(time.time_ns(), 10**9)
    aside = path.with_name(f"{path.name}{_DAMAGED}{time.strftime('%Y%m%dT%H%M%S', time.gmtime(seconds))}.{nanos:09d}Z")
    try:
        path.rename(aside)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(f"cannot set the damaged {path} aside: {exc.strerror}") from None
    return aside


def _write_summary(path: Path, summary: _Summary) -> None:
    """Replace the summary at `path` whole (a temp file, 0600, renamed over it).

    Raises:
        StorageError: it cannot be written.
    """
    data = {
        "version": _VERSION,
        "project_root": summary.project_root,
        "log": None if summary.folded is None else {"inode": summary.folded[0], "length": summary.folded[1]},
        "by_client": {name: vars(sums) for name, sums in sorted(summary.clients.items())},
    }
    _replace(path, json.dumps(data, indent=1))


def _replace_log(path: Path) -> None:
    """Rename a fresh empty log over the one the summary now holds.

    Raises:
        StorageError: it cannot be made or renamed.
    """
    _replace(path, "")


def _replace(path: Path, text: str) -> None:
    fd, name = tempfile.mkstemp(prefix=".receipts-", dir=path.parent)  # 0600
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StorageError(f"cannot write {path}: {exc.strerror}") from None
