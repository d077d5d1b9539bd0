"""Generations of a project's index (ADR 0006): which one a writer fills, creating a fresh one beside
the live index, publishing it by replacing the `CURRENT` pointer, and removing the others."""

from __future__ import annotations

import logging
import os
import shutil
import time
from typing import TYPE_CHECKING

from lgrep_core.domain.errors import (
    IndexMismatchError,
    LgrepError,
    NotFoundError,
    SchemaVersionMismatchError,
    StorageError,
)
from lgrep_core.storage._errors import StorePart, storage_errors
from lgrep_core.storage._lock import make_dir
from lgrep_core.storage.engine import connect
from lgrep_core.storage.layout import CURRENT_POINTER, META_FILE, disk_full_error, read_meta_file
from lgrep_core.storage.schema import CHUNKS_TABLE, VECTORS_TABLE, IndexIdentity, chunks_schema, vectors_schema

if TYPE_CHECKING:
    from pathlib import Path

    from lgrep_core.storage._manifest import Manifest
    from lgrep_core.storage._vectors import VectorRows
    from lgrep_core.storage.store import ProjectStore

__all__ = ["Generations"]

log = logging.getLogger(__name__)


class Generations(StorePart):
    """Every build that starts from nothing (the first index, `--force`, a repair) writes a new
    generation folder beside the live one and publishes it by replacing the `CURRENT` pointer, so a
    search never sees a half-built or emptied index. Incremental runs write the live generation in
    place. The generation chosen is the store's `pinned` one."""

    def __init__(self, store: ProjectStore, manifest: Manifest, vectors: VectorRows) -> None:
        super().__init__(store)
        self._manifest = manifest
        self._vectors = vectors

    def begin_write(self, identity: IndexIdentity, *, force: bool) -> bool:
        """Choose the generation this writer fills (the caller holds the write lock); True if new.

        Incremental runs continue the published generation, or an unfinished first build. A forced
        run, a first run, and a run over a damaged or outdated index start a fresh generation, which
        stays invisible to readers until `publish`.

        Raises:
            IndexMismatchError, SchemaVersionMismatchError: the published index was built
                differently (the caller asks for force).
        """
        self._store.close()
        self._store.pinned = None
        self._remove_outdated_layout()
        published: str | None
        try:
            published = self._store.published_generation()
        except StorageError as exc:
            log.warning("%s; building a new index", exc.message)
            published = None
        unfinished = [g for g in self._store.generations() if g != published]
        carry: str | None = None  # a generation whose vectors the new one starts with
        if not force:
            # Continue the live index (a different model needs the user's --force; damage is rebuilt
            # beside it), or else the first build a killed process left.
            if published is not None:
                try:
                    if self._continue(published, identity, mismatch_is_fatal=True):
                        return False
                except (IndexMismatchError, SchemaVersionMismatchError) as exc:
                    # Only the chunker or the table layout changed (a new lgrep): rebuild the chunks
                    # beside the live index and keep its vectors, so nothing is embedded again.
                    if not self._same_embeddings(published, identity):
                        raise
                    log.info("%s: re-chunking the index, its vectors are kept", exc.message)
                    carry = published
            elif unfinished and self._continue(unfinished[-1], identity, mismatch_is_fatal=False):
                return False
        self._remove_generations(keep={published} if published else set())
        self.create(identity, publish=False)
        if carry is not None:
            self._vectors.carry_vectors(carry)
        return True

    def _same_embeddings(self, gen: str, identity: IndexIdentity) -> bool:
        """Whether generation `gen` was embedded exactly as `identity` embeds (model, size, text)."""
        try:
            stored = dict(
                read_meta_file(self._store.dir / gen / META_FILE, self._store.root, self._store.dir).get("identity")
                or {}
            )
        except LgrepError:
            return False
        stored.setdefault("embedding_text", "1")
        wanted = identity.as_dict()
        return all(stored.get(k) == wanted[k] for k in ("provider", "model", "dimension", "embedding_text"))

    def _continue(self, gen: str, identity: IndexIdentity, *, mismatch_is_fatal: bool) -> bool:
        """Pin an existing generation for writing if it is usable; otherwise leave nothing pinned."""
        self._store.pinned = gen
        try:
            self._store.check_identity(identity)
            self._store.open()
            self._manifest.check()
            recorded = [int(v) for v in self._store.read_meta().get("table_versions") or [-1, -1]]
            # A writer killed between a commit and recording it: readers cannot know what changed.
            self._store.changes.all = recorded != [int(self._store.chunks.version), int(self._store.vectors.version)]
        except (IndexMismatchError, SchemaVersionMismatchError):
            self._store.pinned = None
            if mismatch_is_fatal:
                raise
            return False
        except (StorageError, NotFoundError) as exc:
            # Damaged, or a build killed before it wrote its metadata: start a fresh generation.
            log.warning("%s; building a new index beside it", exc.message)
            self._store.close()
            self._store.pinned = None
            return False
        self._remove_generations(keep={gen})
        return True

    @property
    def is_published(self) -> bool:
        try:
            return self._store.pinned is not None and self._store.pinned == self._store.published_generation()
        except StorageError:
            return False

    @storage_errors
    def publish(self) -> None:
        """Make the writer's generation the live one and delete the others. A reader that was
        loading an old one notices the pointer changed and reloads (see `open`)."""
        if self._store.pinned is None or self.is_published:
            return
        tmp = self._store.dir / f"{CURRENT_POINTER}.{os.getpid()}.tmp"
        with tmp.open("w", encoding="ascii") as f:
            f.write(self._store.pinned + "\n")
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self._store.pointer_path)
        _fsync_dir(self._store.dir)
        self._remove_generations(keep={self._store.pinned})

    def end_write(self) -> None:
        self._store.close()
        self._store.pinned = None

    def _remove_generations(self, keep: set[str]) -> None:
        for gen in self._store.generations():
            if gen not in keep:
                shutil.rmtree(self._store.dir / gen, ignore_errors=True)

    def _remove_outdated_layout(self) -> None:
        """Drop an index in the single-folder layout of lgrep before generations (writer only)."""
        for name in ("lance", "manifest.sqlite", "manifest.sqlite-wal", "manifest.sqlite-shm", "meta.json"):
            target = self._store.dir / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            elif target.exists() or target.is_symlink():
                target.unlink(missing_ok=True)

    def create(self, identity: IndexIdentity, *, publish: bool = True) -> None:
        """Start a fresh, empty generation for this writer (and publish it at once unless told not to).

        Raises:
            StorageError: the cache folder cannot be written.
        """
        self._store.close()
        gen = f"gen-{time.time_ns():x}-{os.getpid()}"
        make_dir(self._store.dir)
        tag = self._store.dir.parent / "CACHEDIR.TAG"
        try:
            if not tag.exists():
                # The standard marker: backup tools and our own walker skip the cache dir.
                tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# lgrep index cache\n")
            (self._store.dir / gen).mkdir(mode=0o700)
            self._store.pinned = gen
            db = connect(str(self._store.dir / gen / "lance"))
            db.create_table(CHUNKS_TABLE, schema=chunks_schema())
            db.create_table(VECTORS_TABLE, schema=vectors_schema(identity.dimension))
        except OSError as exc:
            raise disk_full_error(exc, self._store.dir, f"lgrep index {self._store.root}") or StorageError(
                f"cannot write the index of {self._store.root} under {self._store.dir}: {exc.strerror}"
            ) from None
        self._store.write_meta(
            identity=identity.as_dict(),
            project_root=str(self._store.root),
            created_at=time.time(),
            last_indexed_at=None,
        )
        if publish:
            self.publish()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
