"""What leaves the machine when the embedder is a cloud provider, and the record of it.

Chunks were already redacted when they were indexed (ADR 0005), but that scan ran on whole files
with the rules of its day, and the text a provider receives is not the chunk: it is the embedding
text (path, scope, words, content). So every text is scanned again, as it is about to be sent
(`outgoing`): findings are redacted; a text that is essentially a credential is not sent, only its
path and scope lines are (the chunk stays findable by name, and by BM25 on its redacted content); a
text that still shows a finding after that is not sent at all. The text handed to the provider
contains no finding of `lgrep_core.domain.secrets.scan`.

What was sent is recorded in the project's cache folder, `egress.jsonl` (JSON lines, mode 0600),
never the content, and paths only through `redact_path`:

- `{"event": "attempt", ...}` for every HTTP request, each retry too, written and fsynced *before*
  the request leaves: its id, the try, provider, model, and the file and embedding key of each chunk
  it carries. A crash, a kill or a daemon stopping mid-flight still leaves it: an attempt with no
  outcome line was possibly received (`attempts` reads it so, as "unknown").
- `{"event": "outcome", ...}` when the attempt's fate is known: "ok" (with the tokens billed),
  "http <status>", "timeout", "connection failed", "malformed reply", "cancelled".
- `{"event": "sent", ...}` for each chunk whose vector arrived: the file, the embedding key, the
  tokens billed for it (its share of the request's bill, by length), the time, provider and model,
  and how many secrets were redacted.

See docs/adr/0013-spend-ledger-and-egress-log.md.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from lgrep_core.domain.errors import StorageError
from lgrep_core.domain.secrets import redact_path, sanitize, scan
from lgrep_core.embeddings.base import Attempt, AttemptObserver

__all__ = ["EGRESS_LOG_NAME", "AttemptRecord", "EgressLog", "Outgoing", "apportion", "attempts", "outgoing"]

log = logging.getLogger(__name__)

EGRESS_LOG_NAME = "egress.jsonl"
# The embedding text's first two lines name the chunk (path › scope, then the same as words); the rest is code.
_HEADER_LINES = 2


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One chunk's text as it may be sent: `text` holds no finding; `redactions` secrets were taken
    out of it; `withheld` means only its path and scope lines are sent."""

    key: str
    path: str
    text: str
    redactions: int
    withheld: bool


def outgoing(key: str, path: str, text: str) -> Outgoing | None:
    """The text of one chunk that may leave the machine, or None when none of it may."""
    try:
        result = sanitize(text)
        withheld = result.withheld
        clean = result.text
        if clean is None:
            header = "\n".join(text.split("\n", _HEADER_LINES)[:_HEADER_LINES])
            clean = sanitize(header).text
        if clean is None or scan(clean):
            return None
    except Exception:  # a scanner bug fails closed: nothing of this chunk is sent
        log.exception("scanning a chunk of %s before sending it failed; not sending it", redact_path(path))
        return None
    return Outgoing(key, path, clean, len(result.findings), withheld)


def apportion(total: int, texts: Sequence[str]) -> list[int]:
    """Split a request's billed tokens over its texts by length; the shares add up to `total`."""
    if not texts:
        return []
    weights = [max(len(t), 1) for t in texts]
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    left = total - sum(shares)
    for i in sorted(range(len(texts)), key=lambda i: exact[i] - shares[i], reverse=True)[:left]:
        shares[i] += 1
    return shares


class EgressLog:
    """The egress log of one project (in its cache folder)."""

    def __init__(self, project_dir: Path) -> None:
        self.path = project_dir / EGRESS_LOG_NAME

    def record(self, sent: Sequence[Outgoing], tokens: Sequence[int], *, provider: str, model: str) -> None:
        """One line per chunk sent.

        Raises:
            StorageError: the log cannot be written.
        """
        if not sent:
            return
        when = _now()
        lines = "".join(
            json.dumps(
                {
                    "event": "sent",
                    "time": when,
                    "file": redact_path(item.path),
                    "key": item.key,
                    "tokens": share,
                    "provider": provider,
                    "model": model,
                    "redactions": item.redactions,
                    "withheld": item.withheld,
                },
                ensure_ascii=False,
                separators=(",", ":"),
            )
            + "\n"
            for item, share in zip(sent, tokens, strict=True)
        )
        self._append(lines, sync=False)

    def observer(self, sent: Sequence[Outgoing], *, provider: str, model: str) -> AttemptObserver:
        """Records every try of every request that carries `sent` (by index), before it leaves and
        with its outcome."""
        return _Observer(self, sent, provider, model)

    def _append(self, lines: str, *, sync: bool) -> None:
        """One `write` to the file opened with O_APPEND (lines of concurrent writers never mix);
        `sync`: on disk before returning, so it survives a crash right after.

        Raises:
            StorageError: the log cannot be written.
        """
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, lines.encode("utf-8", "surrogateescape"))
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError(f"cannot write the egress log {self.path}: {exc.strerror or exc}") from None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _line(record: dict[str, object]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


class _Observer:
    """`AttemptObserver` over one call's chunks. Called on the provider's event loop; each record is
    one small write (the attempt's is fsynced: milliseconds, against a request's hundreds)."""

    def __init__(self, log: EgressLog, sent: Sequence[Outgoing], provider: str, model: str) -> None:
        self._log = log
        self._sent = sent
        self._provider = provider
        self._model = model

    def sending(self, attempt: Attempt) -> None:
        chunks = [{"file": redact_path(self._sent[i].path), "key": self._sent[i].key} for i in attempt.texts]
        record: dict[str, object] = {
            "event": "attempt",
            "time": _now(),
            "request": attempt.request,
            "try": attempt.number,
            "provider": self._provider,
            "model": self._model,
            "chunks": chunks,
        }
        self._log._append(_line(record), sync=True)  # pyright: ignore[reportPrivateUsage]  # its own log

    def outcome(self, attempt: Attempt, outcome: str, tokens: int | None) -> None:
        record: dict[str, object] = {
            "event": "outcome",
            "time": _now(),
            "request": attempt.request,
            "try": attempt.number,
            "outcome": outcome,
        }
        if tokens is not None:
            record["tokens"] = tokens
        self._log._append(_line(record), sync=False)  # pyright: ignore[reportPrivateUsage]


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One try of one request as the log tells it; `outcome` is "unknown" when the log has the
    attempt but no outcome (the process ended while it was in flight: possibly received)."""

    time: str
    request: str
    number: int
    provider: str
    model: str
    files: tuple[str, ...]
    outcome: str


def attempts(path: Path) -> list[AttemptRecord]:
    """Every attempt recorded in an egress log, in order, with its outcome (damaged lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return []
    found: dict[tuple[str, int], AttemptRecord] = {}
    outcomes: dict[tuple[str, int], str] = {}
    for line in text.splitlines():
        try:
            record: object = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        fields = cast(dict[str, object], record)
        event, request, number = fields.get("event"), fields.get("request"), fields.get("try")
        if not isinstance(request, str) or not isinstance(number, int):
            continue
        if event == "outcome":
            outcomes[request, number] = str(fields.get("outcome"))
        elif event == "attempt":
            chunks = fields.get("chunks")
            files = (
                [cast(dict[str, object], c).get("file") for c in chunks if isinstance(c, dict)]
                if isinstance(chunks, list)
                else []
            )
            found[request, number] = AttemptRecord(
                str(fields.get("time")),
                request,
                number,
                str(fields.get("provider")),
                str(fields.get("model")),
                tuple(str(f) for f in files),
                "unknown",
            )
    return [replace(r, outcome=outcomes.get(key, "unknown")) for key, r in found.items()]
