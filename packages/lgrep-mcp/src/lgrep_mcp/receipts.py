"""Receipts: what each answer saved the agent, measured (ADR 0025).

An answer that points into files (search results, symbols, related code, call edges, a file's lines)
carries `receipt`: the files its results come from, their whole tokens as an agent would have read
them with grep and cat (`file_tokens`, cl100k_base like the answer's own `tokens`), and `saved`, the
difference. The files are read from disk inside the project root (never through a path that leaves
it, never beyond the allowed roots), and each file's count is kept per (inode, size, mtime), so a
file is tokenized once until it changes.

Each call's receipt is also added to the project's sums for the calling client (`clientInfo.name`
from the initialize handshake) in lgrep_core.storage.receipts' ledger, which every `lgrep mcp` process of
the user shares. A middleware gives each tools/call a `Call` (through a context variable, which the
SDK's worker threads inherit) that answers add their receipt to, and records it after the answer.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread
from lgrep_core.domain.errors import LgrepError
from lgrep_core.storage.receipts import ReceiptLedger, client_name
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from .budget import TokenCounter

__all__ = ["RECEIPT_TOKENS", "Call", "FileTokens", "ReceiptRecorder", "current_call"]

log = logging.getLogger("lgrep.mcp")

# Tokens an answer keeps free for its receipt: `"receipt":{"files":50,"file_tokens":1234567,
# "saved":1234567}` is ~25 cl100k tokens; the rest of the answer is fitted to the budget less this.
RECEIPT_TOKENS = 32
# Files larger than this are not tokenized for a receipt (an indexed file is far smaller: the
# indexer's own limit is 1 MB); they count as 0 tokens.
MAX_FILE_BYTES = 8 << 20
# File counts kept in memory; past it the cache starts again (a count costs ~1 ms per 10 KB).
CACHE_ENTRIES = 20_000


class FileTokens:
    """Whole files' token counts, read from disk inside a project, cached per file version."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._cache: dict[str, tuple[int, int, int, int]] = {}
        self._lock = threading.Lock()

    def count(self, project: Path, paths: Iterable[str], readable: Callable[[str], bool]) -> tuple[int, int]:
        """(files counted, their tokens) of the project-relative `paths` that are files inside
        `project` and `readable`; others (gone, outside, unreadable) are left out."""
        root = project.resolve()
        files = tokens = 0
        for rel in sorted(set(paths)):
            if not rel or not readable(rel):
                continue
            found = self._one(root, rel, readable)
            if found is not None:
                files += 1
                tokens += found
        return files, tokens

    def _one(self, root: Path, rel: str, readable: Callable[[str], bool]) -> int | None:
        try:
            real = (root / rel).resolve()
            # a link inside the root is followed only to a readable place inside it
            if not real.is_relative_to(root) or not readable(real.relative_to(root).as_posix()):
                return None
            info = real.stat()
        except (OSError, RuntimeError, ValueError):
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        key = str(real)
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[:3] == stamp:
            return cached[3]
        if info.st_size > MAX_FILE_BYTES:
            return 0
        try:
            # non-blocking and checked again once open: a file swapped for a FIFO never hangs a call
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            text = handle.read(MAX_FILE_BYTES).decode("utf-8", errors="replace")
        tokens = self.counter.count(text)
        with self._lock:
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.clear()
            self._cache[key] = (*stamp, tokens)
        return tokens


@dataclass
class Call:
    """One tools/call: the client that made it and the receipts its answer carried."""

    client: str
    receipts: list[tuple[Path, int, int, int]] = field(default_factory=lambda: [])

    def add(self, project: Path, tokens_returned: int, file_tokens: int, files: int) -> None:
        self.receipts.append((project, tokens_returned, file_tokens, files))


_CALL: ContextVar[Call | None] = ContextVar("lgrep_mcp_call", default=None)


def current_call() -> Call | None:
    """The tools/call being answered (None outside one, e.g. a test calling a tool directly)."""
    return _CALL.get()


class ReceiptRecorder:
    """Server middleware: gives every tools/call a `Call` and adds its receipts to the ledger after
    the answer is made. Receipts are a by-product: whatever goes wrong recording them (a ledger
    that cannot be written, a bug, a file holding what lgrep never wrote) is logged, never the
    call's failure."""

    def __init__(self, ledger: ReceiptLedger | None) -> None:
        self.ledger = ledger

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        call = Call(_client_of(ctx))
        token = _CALL.set(call)
        try:
            result = await call_next(ctx)
        finally:
            _CALL.reset(token)
        if call.receipts and self.ledger is not None:
            try:
                await anyio.to_thread.run_sync(self._record, call)
            except Exception as exc:  # a failure of the thread itself; cancellation is not caught
                _not_recorded(exc)
        return result

    def _record(self, call: Call) -> None:
        assert self.ledger is not None
        for project, returned, source, files in call.receipts:
            try:
                self.ledger.record(project, call.client, tokens_returned=returned, file_tokens=source, files=files)
            except Exception as exc:
                _not_recorded(exc)


def _not_recorded(exc: Exception) -> None:
    if isinstance(exc, LgrepError):
        log.warning("could not record the receipt: %s", exc.message)
    else:  # a bug: its traceback at debug level (-v), the answer is given anyway
        log.warning("could not record the receipt: %s: %s", type(exc).__name__, exc)
        log.debug("the receipt's failure", exc_info=exc)


def _client_of(ctx: ServerRequestContext[Any, Any]) -> str:
    try:
        params = getattr(ctx.session, "client_params", None)
        info = getattr(params, "client_info", None)
        return client_name(getattr(info, "name", None))
    except Exception:  # a session without them (or one that fails to say): still an answer
        return client_name(None)
