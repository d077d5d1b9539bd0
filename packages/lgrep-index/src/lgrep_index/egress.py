"""What leaves the machine when the embedder is a cloud provider, and the record of it.

Chunks were already redacted when they were indexed (ADR 0005), but that scan ran on whole files
with the rules of its day, and the text a provider receives is not the chunk: it is the embedding
text (path, scope, words, content). So every text is scanned again, as it is about to be sent
(`outgoing`): findings are redacted; a text that is essentially a credential is not sent, only its
path and scope lines are (the chunk stays findable by name, and by BM25 on its redacted content); a
text that still shows a finding after that is not sent at all. The text handed to the provider
contains no finding of `lgrep_core.secrets.scan`.

What was sent is recorded in the project's cache folder, `egress.jsonl` (JSON lines, mode 0600):
one line per chunk, with the file, the embedding key, the tokens billed for it (its share of the
request's bill, by length), the time, provider and model, and how many secrets were redacted. Never
the content. See docs/adr/0013-spend-ledger-and-egress-log.md.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lgrep_core.errors import StorageError
from lgrep_core.secrets import sanitize, scan

__all__ = ["EGRESS_LOG_NAME", "EgressLog", "Outgoing", "apportion", "outgoing"]

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
        log.exception("scanning a chunk of %s before sending it failed; not sending it", path)
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
        when = datetime.now(UTC).isoformat(timespec="milliseconds")
        lines = "".join(
            json.dumps(
                {
                    "time": when,
                    "file": item.path,
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
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, lines.encode("utf-8", "surrogateescape"))
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError(f"cannot write the egress log {self.path}: {exc.strerror or exc}") from None
