"""What an indexing run would embed, and what that would cost, worked out without sending anything.

`plan_index` walks the project with the indexer's rules and reads its index (read-only, no lock):
a file whose stat matches the manifest (`FileRecord.matches`) keeps its chunks, and only those of its chunks whose
vector is missing count; a new or changed file is read, redacted and chunked as the indexer would.
Vectors are content-addressed (pipeline.vector_key), so a chunk whose key already has a vector
costs nothing, and a key shared by several chunks is embedded (and billed) once. With a cloud
provider each text is prepared as it would be sent (egress.outgoing: redacted, or only its names)
and its tokens are the provider's own estimate (`estimate_tokens`), not a bill: for a
characters/4 rule, expect the bill within about ±25% for code; chunk counts are exact for the files
as they are now. The cost comes from the price table (unknown for a model without a price); the
time is a rough guide (`LOCAL_CHUNKS_PER_S`, `REMOTE_SECONDS_PER_REQUEST`).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import NotFoundError
from lgrep_core.domain.models import ProjectState, embedding_text
from lgrep_core.domain.secrets import redact_path, sanitize
from lgrep_core.embeddings.base import EmbeddingProvider, RemoteEmbeddingProvider, is_remote, model_label
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.layout import FileRecord
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.storage.schema import IndexIdentity, path_key
from lgrep_core.storage.spend import price_table

from .egress import outgoing
from .pipeline import chunk_text, identity_for, vector_key, walk_options
from .walker import read_text, walk

__all__ = ["LOCAL_CHUNKS_PER_S", "REMOTE_SECONDS_PER_REQUEST", "IndexPlan", "estimate_tokens", "plan_index"]

log = logging.getLogger(__name__)

# Rough speeds for the time estimate: the local model embeds ~20-50 chunks/s on 2 cores (DESIGN
# section 4); a cloud request of a batch of chunks takes about a second, plus the time to read them.
LOCAL_CHUNKS_PER_S = 30.0
REMOTE_SECONDS_PER_REQUEST = 1.0
# Texts per estimate_tokens call: bounded memory whatever the size of the project.
_ESTIMATE_BATCH = 512


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """What `lgrep index` would do now. `tokens` and `cost_usd` are None when there is nothing to
    say: the local model (no money), or a model without a price (cost unknown)."""

    root: str
    provider: str
    model: str
    remote: bool
    files: int  # files the walk finds (after ignore rules)
    files_to_read: int  # new or changed since the last index: read and chunked again
    chunks_to_embed: int  # chunks whose vector is missing (each distinct key once)
    chunks_withheld: int  # of those, chunks not sent at all (a secret even after redaction)
    tokens: int | None  # estimated tokens to be billed (cloud provider only)
    cost_usd: float | None  # estimated cost (None: local, or no price for the model)
    price_per_million: float | None
    seconds: float  # rough time to embed
    rebuild: bool  # everything is embedded again (first index, --force, or another model)
    note: str = ""  # why a rebuild, when it is not the user's choice


def plan_index(settings: LgrepSettings, root: Path, embedder: EmbeddingProvider, *, force: bool = False) -> IndexPlan:
    """Work out the plan of indexing `root` now. Sends nothing, writes nothing, takes no lock.

    Raises:
        NotFoundError: the root is not a directory.
        StorageError: the index cannot be read.
    """
    root = root.resolve()
    if not root.is_dir():
        raise NotFoundError(f"{root} is not a directory")
    identity = identity_for(settings, embedder)
    reader = ProjectReader(settings.cache_dir, root)
    stored: set[str] = set()
    records: dict[str, FileRecord] = {}
    note = ""
    usable = False
    if not force and reader.state() is ProjectState.READY:
        version = reader.version()
        note = _identity_note(reader.meta(version), identity, root)
        if not note:
            usable = True
            stored = reader.vector_keys(version)
            records = reader.manifest(version)
    else:
        version = None

    texts: dict[str, tuple[str, str]] = {}  # key -> (path, embedding text), each key once
    unchanged: list[str] = []
    files = 0
    to_read = 0
    for file in walk(root, walk_options(settings)):
        files += 1
        record = records.get(file.path)
        if record is not None and record.matches(file.size, file.mtime_ns, file.ctime_ns, file.inode):
            unchanged.append(file.path)
            continue
        text = read_text(file, settings.index.max_file_bytes)
        if text is None:
            continue
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
        if record is not None and record.sha256 == digest:
            unchanged.append(file.path)  # touched, not changed: its chunks stay
            continue
        to_read += 1
        clean = _sanitized(text, file.path)
        if clean is None:
            continue  # withheld from the index as a credential: never chunked, never sent
        for chunk in chunk_text(settings, file.path, clean, structure=False):  # counts tokens only
            key = vector_key(identity, chunk)
            if key not in stored:
                texts.setdefault(key, (file.path, embedding_text(redact_path(file.path), chunk.scope, chunk.content)))

    if usable and version is not None and unchanged:
        # Chunks an earlier run left without vectors (killed, or --no-wait) are embedded too.
        wanted = {path_key(p) for p in unchanged}
        keys = reader.read_chunks(version, ["vec_key", "path_key"])
        pending_files = sorted(
            {pk for k, pk in zip(keys["vec_key"], keys["path_key"], strict=True) if pk in wanted and k not in stored}
        )
        if pending_files:
            rows = reader.read_chunks(version, ["vec_key", "path", "scope", "content"], pending_files)
            for key, path, scope, content in zip(
                rows["vec_key"], rows["path"], rows["scope"], rows["content"], strict=True
            ):
                if key not in stored:
                    texts.setdefault(key, (path, embedding_text(redact_path(path), scope or (), content)))

    remote = is_remote(embedder)
    withheld = 0
    tokens: int | None = None
    cost: float | None = None
    price: float | None = None
    seconds = len(texts) / LOCAL_CHUNKS_PER_S
    if remote:
        tokens, withheld, price = estimate_tokens(settings, embedder, ((k, p, t) for k, (p, t) in texts.items()))
        cost = tokens * price / 1e6 if price is not None else None
        requests = math.ceil((len(texts) - withheld) / settings.index.embed_batch_chunks)
        seconds = requests * REMOTE_SECONDS_PER_REQUEST
    return IndexPlan(
        root=str(root),
        provider=identity.provider,
        model=identity.model,
        remote=remote,
        files=files,
        files_to_read=to_read,
        chunks_to_embed=len(texts),
        chunks_withheld=withheld,
        tokens=tokens,
        cost_usd=cost,
        price_per_million=price,
        seconds=seconds,
        rebuild=not usable,
        note=note,
    )


def _identity_note(meta: dict[str, Any], identity: IndexIdentity, root: Path) -> str:
    found = meta.get("identity")
    stored: dict[str, Any] = dict(found) if isinstance(found, dict) else {}  # pyright: ignore[reportUnknownArgumentType]
    stored.setdefault("embedding_text", "1")
    if stored == identity.as_dict():
        return ""
    return (
        f"the index of {root} was built differently ({stored.get('provider')}/{stored.get('model')}); "
        f"`lgrep index --force` rebuilds it with {identity.provider}/{identity.model}, embedding everything"
    )


def _sanitized(text: str, path: str) -> str | None:
    try:
        return sanitize(text).text
    except Exception:  # the indexer withholds such a file too (fails closed)
        log.debug("scanning %s failed", redact_path(path), exc_info=True)
        return None


def estimate_tokens(
    settings: LgrepSettings, embedder: EmbeddingProvider, texts: Iterable[tuple[str, str, str]]
) -> tuple[int, int, float | None]:
    """What a cloud provider would bill for these (key, path, embedding text) items, sending nothing:
    (tokens, items withheld by the egress scan, price per million tokens or None when unknown)."""
    assert isinstance(embedder, RemoteEmbeddingProvider)
    tokens = withheld = 0
    batch: list[str] = []
    for key, path, text in texts:
        sent = outgoing(key, path, text)
        if sent is None:
            withheld += 1
            continue
        batch.append(sent.text)
        if len(batch) >= _ESTIMATE_BATCH:
            tokens += int(embedder.estimate_tokens(batch))
            batch = []
    if batch:
        tokens += int(embedder.estimate_tokens(batch))
    return tokens, withheld, price_table(settings.spend).get(model_label(embedder))
