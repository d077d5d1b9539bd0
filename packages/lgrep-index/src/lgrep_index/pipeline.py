"""The indexing pipeline: walk -> chunk -> store (BM25-searchable) -> embed behind (resumable).

Phase 1 writes chunks and their full-text index in batches of files; the project is searchable by
BM25 as soon as it ends. Phase 2 embeds every chunk whose embedding key has no stored vector yet,
in batches that are committed one by one, so a killed run resumes where it stopped.

`Indexer.run` walks the whole project; `Indexer.update` applies a `ChangeBatch` from the file watcher:
phase 1 then looks only at the paths the batch names (and at what the index holds under the folders
it says were removed), with the walker's rules (`PathRules`), and phase 2 is the same.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lgrep_core.domain.errors import EmbeddingError, IndexingError, NotFoundError
from lgrep_core.domain.models import (
    Chunk,
    ChunkKind,
    IndexPhase,
    IndexProgress,
    IndexSummary,
    SeedReport,
    embedding_text,
)
from lgrep_core.domain.secrets import redact_path, sanitize
from lgrep_core.embeddings.base import EmbeddingProvider, model_label
from lgrep_core.embeddings.cloud import EmbeddingIncomplete
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.layout import DiskFullError
from lgrep_core.storage.schema import CHUNK_COLUMNS, IndexIdentity, path_key
from lgrep_core.storage.store import FileRecord, IndexState, KeySet, ProjectStore, release_free_memory

from lgrep_index.changes import ChangeBatch
from lgrep_index.chunker import CHUNKER_VERSION, MAX_LINE_CHARS, chunk_file, detect_language, overflow_text
from lgrep_index.embedding_stage import EmbeddingStage, TextBatch
from lgrep_index.history import refresh_history
from lgrep_index.team import MIN_PENDING, TeamSource
from lgrep_index.walker import (
    SKIP_SECRET,
    PathRules,
    SkippedFile,
    WalkedFile,
    WalkOptions,
    is_project_path,
    read_text,
    walk,
)

__all__ = [
    "VECTORS_UNFINISHED",
    "Cancelled",
    "Indexer",
    "chunk_text",
    "identity_for",
    "vector_key",
    "walk_options",
]

log = logging.getLogger(__name__)

# Files per phase-1 commit: each merge_insert costs ~0.3 s whatever its size (lancedb.md section 5),
# so batches are large; chunk text of 400 files stays well under the memory budget.
FILES_PER_COMMIT = 400
# The embedding rate of this process's last vector phase, by model: the chunking phase's time left
# includes the embedding it leads to. Only phases of this many chunks or more say what a rate is.
_EMBED_RATES: dict[str, float] = {}
_RATE_MIN_CHUNKS = 256
# The embedding phase's rate (and time left) is measured over this many recent seconds.
RATE_WINDOW_S = 60.0
# Chunks read back per page of phase 2's scan (a page of 1,024 held ~30 MB less than one of 4,096, and
# read faster).
SCAN_ROWS = 1024
# Files an embedding error names (the rest are counted).
_FILES_NAMED = 10
# An update keeps the embedding texts of the chunks it writes for phase 2 (no scan of the tables) up to
# this many chunks (~20 MB of text); past it, phase 2 scans as a full run does.
MAX_WRITTEN_TEXTS = 20_000

ProgressCallback = Callable[[IndexProgress], None]
# The key of a generation's meta.json that says chunks were written whose vectors a run has not
# finished (killed, --no-wait, a server stopped mid-fill): the next index server to start resumes it.
VECTORS_UNFINISHED = "vectors_unfinished"


class Cancelled(IndexingError):
    """The run was asked to stop (`Indexer(cancel=...)`) and stopped at a commit boundary."""


@dataclass(slots=True)
class _Tally:
    """The counts of one run as it goes; `summary()` is the frozen result (lgrep_core.domain.models.IndexSummary)."""

    root: str
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    skipped: Counter[str] = field(default_factory=Counter[str])
    chunks_written: int = 0
    chunks_total: int = 0
    vectors_embedded: int = 0
    vectors_pending: int = 0
    seconds_bm25: float = 0.0
    seconds_vectors: float = 0.0
    created: bool = False
    tokens_billed: int = 0
    seed: SeedReport | None = None

    def summary(self) -> IndexSummary:
        return IndexSummary(
            root=self.root,
            files_seen=self.files_seen,
            files_indexed=self.files_indexed,
            files_unchanged=self.files_unchanged,
            files_deleted=self.files_deleted,
            skipped=dict(self.skipped),
            chunks_written=self.chunks_written,
            chunks_total=self.chunks_total,
            vectors_embedded=self.vectors_embedded,
            vectors_pending=self.vectors_pending,
            seconds_bm25=self.seconds_bm25,
            seconds_vectors=self.seconds_vectors,
            seed=self.seed,
            created=self.created,
            tokens_billed=self.tokens_billed,
        )


@dataclass(slots=True)
class _PhaseProgress:
    """The running counts of one phase; `event()` is the frozen snapshot a progress callback gets.

    The rate counts this phase's own work (files chunked, chunks embedded), not files found unchanged.
    The embedding phase is the last long one, so its time left is the run's. While chunking, the time
    left is the chunking's plus the embedding of the chunks it is expected to write (its chunks per
    file so far) at `embed_rate`, the rate this process last embedded at with this model; without
    one (a process's first run), unknown. The embedding rate, and so its time left, is that of the
    last RATE_WINDOW_S seconds (the whole phase until then): a machine that gets busier or quieter
    during an hour-long fill moves the estimate within a minute, not at the end.
    """

    phase: IndexPhase
    files_done: int = 0
    files_total: int = 0
    chunks_done: int = 0
    chunks_total: int = 0
    started: float = field(default_factory=time.monotonic)
    files_at_start: int = -1  # files_done when the phase started (set by __post_init__)
    embed_rate: float | None = None  # chunks per second this process last embedded at (CHUNK only)
    _marks: deque[tuple[float, int]] = field(default_factory=deque)  # (time, chunks_done) of recent events

    def __post_init__(self) -> None:
        self.files_at_start = self.files_done

    def _recent_rate(self, now: float) -> float:
        """Chunks per second over the last RATE_WINDOW_S (since the phase started, before that)."""
        marks = self._marks
        marks.append((now, self.chunks_done))
        while len(marks) > 2 and now - marks[1][0] >= RATE_WINDOW_S:
            marks.popleft()
        since, done = marks[0] if now - marks[0][0] >= RATE_WINDOW_S else (self.started, 0)
        return (self.chunks_done - done) / (now - since) if now > since else 0.0

    def event(self, now: float | None = None) -> IndexProgress:
        now = time.monotonic() if now is None else now
        elapsed = now - self.started
        rate = 0.0
        eta: float | None = None
        if elapsed > 0 and self.phase is IndexPhase.CHUNK:
            chunked = self.files_done - self.files_at_start
            rate = chunked / elapsed
            if rate > 0 and self.embed_rate:
                expected = self.chunks_done * (self.files_total - self.files_at_start) / chunked
                eta = max(self.files_total - self.files_done, 0) / rate + expected / self.embed_rate
        elif elapsed > 0 and self.phase is IndexPhase.EMBED:
            rate = self._recent_rate(now)
            if rate > 0:
                eta = max(self.chunks_total - self.chunks_done, 0) / rate
        return IndexProgress(
            self.phase, self.files_done, self.files_total, self.chunks_done, self.chunks_total, rate, eta
        )


def identity_for(settings: LgrepSettings, embedder: EmbeddingProvider) -> IndexIdentity:
    chunking = settings.chunking
    return IndexIdentity(
        provider=embedder.provider,
        model=model_label(embedder),
        dimension=embedder.dimension,
        chunker_version=CHUNKER_VERSION,
        chunking=f"{chunking.max_tokens}/{chunking.overlap_tokens}/{'ast' if chunking.use_ast else 'lines'}",
    )


def walk_options(settings: LgrepSettings) -> WalkOptions:
    """What the indexer walks; `lgrep status` walks the same to count changes since."""
    return WalkOptions(
        max_file_bytes=settings.index.max_file_bytes,
        extra_ignore_patterns=tuple(settings.index.ignore_patterns),
        cache_dir=settings.cache_dir,
    )


def chunk_text(settings: LgrepSettings, path: str, text: str, *, structure: bool = True) -> list[Chunk]:
    """A file's chunks with the chunking settings; a chunker bug costs the file its structure (line
    windows), never the run. `structure=False` skips the chunks' `refs` (for stores without them)."""
    chunking = settings.chunking
    try:
        return chunk_file(
            path,
            text,
            language=detect_language(path),
            max_tokens=chunking.max_tokens,
            overlap_tokens=chunking.overlap_tokens,
            use_ast=chunking.use_ast,
            structure=structure,
        )
    except Exception:
        log.exception("chunking %s failed; indexing it as line windows", redact_path(path))
        return chunk_file(path, text, language=None, use_ast=False)


def vector_key(identity: IndexIdentity, chunk: Chunk) -> str:
    """The embedding cache key: model plus what the chunk says, not where it lives, so a renamed or
    copied file reuses its vectors (the path line of the embedded text keeps its first value).
    An anchor's scope is the file's own name, so it is left out of the key for the same reason."""
    scope: Sequence[str] = () if chunk.kind is ChunkKind.ANCHOR else chunk.scope
    content = chunk.content
    h = hashlib.sha256()
    parts = (identity.provider, identity.model, str(identity.dimension), identity.embedding_text, "\x1f".join(scope))
    for part in (*parts, content):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


class Indexer:
    """Indexes one project root. One instance per run; it holds the project's write lock while running."""

    def __init__(
        self,
        settings: LgrepSettings,
        root: Path,
        embedder: EmbeddingProvider,
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        resume_cancelled: Callable[[], bool] = lambda: False,
        seed: str = "auto",
        team: TeamSource | None = None,
    ) -> None:
        """`cancel`, when set, stops the run at its next commit boundary (`Cancelled`, an IndexingError):
        between batches of files in phase 1, before phase 2 and between its embedding batches (a batch
        being embedded finishes and is committed first). What was committed stays, the write lock is
        released, and the next run goes on from there. A cancelled run's vector fill is left for the
        user's next `lgrep index`, unless `resume_cancelled()` (a server shutting down): then the
        next server start resumes it (`VECTORS_UNFINISHED`).

        `seed` says when the team store (settings `team.store`, ADR 0034) is asked for vectors before the
        vector phase embeds: "auto" when a new generation is built (a first index) or many chunks wait
        (MIN_PENDING: a pull), "always" on every run (`lgrep seed`), "never". `team` overrides the
        source the settings name (the publisher's, which knows the repository its tree came from)."""
        self._resume_cancelled = resume_cancelled
        self.settings = settings
        self.root = root.resolve()
        self.embedder = embedder
        self.identity = identity_for(settings, embedder)
        self.store = ProjectStore(settings.cache_dir, self.root)
        self._seed_mode = seed
        self.team = team
        if team is None and seed != "never" and settings.team.store and (seed == "always" or settings.team.auto_seed):
            self.team = TeamSource(settings, self.root, self.identity)
        self._seeded = False  # this run asked the store already
        self._progress = progress or (lambda _p: None)
        self._cancel = cancel
        # Set by an update's phase 1: the path and embedding text of each chunk it wrote, by embedding
        # key, so that phase 2 embeds those without scanning the index for what is missing.
        self._written_texts: dict[str, tuple[str, str]] | None = None
        # Phase 2. With a cloud provider every text is scanned again before it leaves (egress.py), and
        # every request is recorded in the spend ledger and the project's egress log.
        self.embedding = EmbeddingStage(
            settings, self.root, self.store.dir, embedder, dimension=self.identity.dimension
        )

    def run(
        self, *, force: bool = False, wait_vectors: bool = True, lock_timeout_s: float | None = None
    ) -> IndexSummary:
        """Bring the index up to date with the files on disk.

        Raises:
            NotFoundError: the root is not a directory.
            IndexBusyError: another process is indexing this project.
            IndexMismatchError, SchemaVersionMismatchError: the index was built differently (use force).
            StorageError: the index is damaged (use force).
        """
        return self._write(self._phase_chunks, force=force, wait_vectors=wait_vectors, lock_timeout_s=lock_timeout_s)

    def update(
        self, batch: ChangeBatch, *, wait_vectors: bool = True, lock_timeout_s: float | None = None
    ) -> IndexSummary:
        """Apply a batch of changes without walking the whole project.

        Every path in `batch.changed`, and every path the index holds under `batch.removed_prefixes`,
        is judged as the walk would judge it now (`PathRules.check`: ignore rules, stat, size, binary,
        secrets by name) and compared with the manifest: a new or changed file is chunked again, one
        that is gone, ignored or no longer indexable loses its chunks and its manifest record. Then the
        vector phase embeds the new chunks, as in `run`. The result is what `run` would leave for those
        paths. Paths that are not project-relative ('..', absolute) are ignored.

        A batch with `rescan` (or `config_changed`: the caller reloads the settings first) is a full
        `run`; so is any batch when there is no usable index to update (a first build, a repair).
        Locking and index generations are those of `run`.

        Raises:
            NotFoundError: the root is not a directory (`batch.root_gone`: stop watching it).
            The rest as `run`.
        """
        if batch.root_gone:
            raise NotFoundError(f"{self.root} is gone: stop watching it")
        if batch.rescan or batch.config_changed:
            return self.run(wait_vectors=wait_vectors, lock_timeout_s=lock_timeout_s)

        def phase(summary: _Tally) -> None:
            self._phase_paths(summary, batch)

        return self._write(phase, force=False, wait_vectors=wait_vectors, lock_timeout_s=lock_timeout_s)

    def _write(
        self,
        phase_chunks: Callable[[_Tally], None],
        *,
        force: bool,
        wait_vectors: bool,
        lock_timeout_s: float | None,
    ) -> IndexSummary:
        if not self.root.is_dir():
            raise NotFoundError(f"{self.root} is not a directory")
        lock = self.store.lock()
        lock.acquire(self.settings.index.lock_timeout_s if lock_timeout_s is None else lock_timeout_s, self.root)
        self._written_texts = None
        self._seeded = False
        try:
            summary = _Tally(root=str(self.root))
            summary.created = self.store.begin_write(self.identity, force=force)
            replacing = summary.created and self.store.state() is IndexState.READY
            started = time.monotonic()
            # A new generation starts empty: only a walk of everything fills it.
            (self._phase_chunks if summary.created else phase_chunks)(summary)
            summary.seconds_bm25 = time.monotonic() - started
            if summary.created and self.team is not None:
                # A new index takes what the team store holds before it is published, so a seed
                # killed half-way leaves no index (the next run goes on), never half of one.
                self._check_cancel()
                self._seed(summary, self.store.pending_vector_keys())
            if not replacing or not wait_vectors:
                # Searchable by BM25 now. A rebuild that waits for its vectors stays beside the live
                # index until they are in, so searches never lose their vector channel meanwhile.
                self.store.publish()
            if summary.created or phase_chunks == self._phase_chunks:
                # A full run (a start, a checkout, a pull) also brings the kept git history up to
                # HEAD, once searchable: evidence for task questions (lgrep_search.history). A save
                # does not.
                refresh_history(self.store.dir, self.root)
            # Phase 1's Arrow buffers and LanceDB's session caches (the full-text index it just
            # built) are not needed by phase 2: let them go before the model loads.
            self.store.close()
            release_free_memory()
            self.store.open()
            if wait_vectors:
                self._check_cancel()
                started = time.monotonic()
                self._phase_vectors(summary, self._written_texts)
                summary.seconds_vectors = time.monotonic() - started
            summary.vectors_pending = self.store.count_pending_chunks()
            if wait_vectors and summary.vectors_pending and self._written_texts is not None:
                # An update embeds the chunks it wrote without scanning the index; chunks an earlier
                # run left without vectors (killed, or --no-wait) are embedded now, as `run` would.
                started = time.monotonic()
                self._phase_vectors(summary)
                summary.seconds_vectors += time.monotonic() - started
                summary.vectors_pending = self.store.count_pending_chunks()
            summary.chunks_total = self.store.count_chunks()
            self.store.write_meta(**{VECTORS_UNFINISHED: summary.vectors_pending > 0})
            self.store.publish()
            self._progress(IndexProgress(IndexPhase.DONE, summary.files_seen, summary.files_seen))
            return summary.summary()
        except Cancelled:
            if not self._resume_cancelled():
                # Asked to stop: the fill waits for the user's next `lgrep index`, not the next server start.
                self.store.write_meta(**{VECTORS_UNFINISHED: False})
            raise
        finally:
            self.store.end_write()
            lock.release()

    def _check_cancel(self) -> None:
        if self._cancel is not None and self._cancel.is_set():
            raise Cancelled(f"indexing {self.root} was cancelled; the next index goes on from here")

    # ------------------------------------------------------------------ phases

    def _phase_chunks(self, summary: _Tally) -> None:
        self._progress(IndexProgress(IndexPhase.WALK))
        options = walk_options(self.settings)

        def on_skip(skipped: SkippedFile) -> None:
            summary.skipped[skipped.reason] += 1

        files = list(walk(self.root, options, on_skip=on_skip))
        summary.files_seen = len(files)
        known = self.store.manifest_records()
        indexed = self.store.indexed_path_keys()
        candidates = [f for f in files if _changed(f, known.get(f.path))]
        summary.files_unchanged = len(files) - len(candidates)

        self._chunk_files(summary, candidates, len(files), known, indexed)

        # The table is the truth about what is searchable: drop whatever it holds for files that are
        # gone (or are now ignored, too large, binary...), including rows a killed run left behind.
        present = {path_key(f.path) for f in files}
        gone = [k for k in indexed if k not in present]
        self.store.delete_files(gone)
        gone_paths = {indexed[k] for k in gone} | (set(known) - {f.path for f in files})
        self.store.manifest_delete(sorted(gone_paths))
        summary.files_deleted = len(gone_paths)
        self.store.note_chunk_writes(summary.chunks_written + len(gone))
        self.store.write_meta(last_indexed_at=time.time(), **{VECTORS_UNFINISHED: True})

    def _phase_paths(self, summary: _Tally, batch: ChangeBatch) -> None:
        """Phase 1 for the paths of a batch: what `_phase_chunks` does, without the walk."""
        self._progress(IndexProgress(IndexPhase.WALK))
        self._written_texts = {}
        rules = PathRules(self.root, walk_options(self.settings))
        candidates = {p for p in batch.changed if is_project_path(p)}
        prefixes = sorted(p for p in batch.removed_prefixes if is_project_path(p))
        if prefixes:
            candidates.update(self.store.manifest_paths_under(prefixes))
        paths = sorted(candidates)
        known = self.store.manifest_get(paths)
        keys = {path_key(p): p for p in paths}
        indexed = {k: keys[k] for k in self.store.path_keys_with_chunks(sorted(keys))}

        files: list[WalkedFile] = []
        gone: list[str] = []
        for path in paths:
            outcome = rules.check(path)
            if isinstance(outcome, WalkedFile):
                files.append(outcome)
                continue
            if isinstance(outcome, SkippedFile):
                summary.skipped[outcome.reason] += 1
            gone.append(path)
        summary.files_seen = len(files)
        # The watcher saw these files written: read them all, whatever their size and mtime say (a
        # rewrite within the file system's timestamp granularity, or one that restores the mtime,
        # keeps both); `_index_batch` compares the content hash and skips what is identical.
        self._chunk_files(summary, files, len(files), known, indexed)

        # Gone, ignored, or no longer indexable (binary, too large, a symlink...): drop what the index
        # holds for it, as a full run would.
        gone_keys = [k for k in (path_key(p) for p in gone) if k in indexed]
        self.store.delete_files(gone_keys)
        gone_known = [p for p in gone if p in known]
        self.store.manifest_delete(gone_known)
        summary.files_deleted = len({*gone_known, *(indexed[k] for k in gone_keys)})
        self.store.note_chunk_writes(summary.chunks_written + len(gone_keys))
        self.store.write_meta(last_indexed_at=time.time(), **{VECTORS_UNFINISHED: True})

    def _chunk_files(
        self,
        summary: _Tally,
        candidates: Sequence[WalkedFile],
        files_total: int,
        known: dict[str, FileRecord],
        indexed: dict[str, str],
    ) -> None:
        """Chunk and store the files that may have changed, FILES_PER_COMMIT per commit, reporting
        progress (files found unchanged count as done from the start)."""
        progress = _PhaseProgress(
            IndexPhase.CHUNK, summary.files_unchanged, files_total, embed_rate=_EMBED_RATES.get(self.identity.model)
        )
        self._progress(progress.event())
        for start in range(0, len(candidates), FILES_PER_COMMIT):
            self._check_cancel()
            batch = candidates[start : start + FILES_PER_COMMIT]
            written, changed, withheld = self._index_batch(batch, known, indexed)
            summary.chunks_written += written
            summary.files_indexed += changed
            if withheld:
                summary.skipped[SKIP_SECRET] += withheld
            summary.files_unchanged += len(batch) - changed - withheld
            progress.files_done += len(batch)
            progress.chunks_done += written
            self._progress(progress.event())

    def _index_batch(
        self, batch: Sequence[WalkedFile], known: dict[str, FileRecord], indexed: dict[str, str]
    ) -> tuple[int, int, int]:
        """Chunk and store a batch of files: (chunks written, files indexed, files withheld as secrets)."""
        columns: dict[str, list[object]] = {name: [] for name in CHUNK_COLUMNS}
        records: list[FileRecord] = []
        keys: list[str] = []
        changed = withheld = 0
        for file in batch:
            text = read_text(file, self.settings.index.max_file_bytes)
            if text is None:
                # Binary, grown past the cap or unreadable since the walk: drop what the index held
                # for it (the replace below deletes a key's rows that this batch does not rewrite).
                keys.append(path_key(file.path))
                continue
            digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
            old = known.get(file.path)
            language = detect_language(file.path) or "text"
            if old is not None and old.sha256 == digest:
                # Touched but identical: remember the new stat so the next run skips it cheaply.
                records.append(_record(file, digest, old.language, old.chunks))
                continue
            # Secrets never reach the chunks, BM25 terms or vectors: redact them (lines stay where
            # they are), or withhold a file that is essentially a credential (ADR 0005).
            try:
                clean = sanitize(text).text
            except Exception:  # a scanner bug fails closed: the file is withheld, the run goes on
                log.exception("scanning %s for secrets failed; not indexing it", redact_path(file.path))
                clean = None
            if clean is None:
                log.info("%s is withheld from the index: its content is a credential", redact_path(file.path))
                keys.append(path_key(file.path))  # drops whatever an older index held for it
                records.append(_record(file, digest, language, 0))
                withheld += 1
                continue
            text = clean
            chunks = chunk_text(self.settings, file.path, text)
            if chunks:
                language = chunks[0].language  # the chunker also reads shebangs
            self._append_rows(columns, file, digest, chunks, text)
            keys.append(path_key(file.path))
            records.append(_record(file, digest, language, len(chunks)))
            changed += 1
        written = len(columns["id"])
        try:
            if any(k in indexed for k in keys):
                self.store.replace_files(columns, keys)
            elif written:
                # Only files the table has never held: a plain append, which (unlike merge_insert's
                # join against the whole table) costs the same memory at 100 files or 100,000.
                self.store.append_chunks(columns)
        except DiskFullError:
            raise  # it says what happened and what to run; "writing chunks failed" adds nothing
        except Exception as exc:
            raise IndexingError(f"writing chunks of {len(keys)} files failed: {exc}") from exc
        self.store.manifest_put(records)
        return written, changed, withheld

    def _append_rows(
        self, columns: dict[str, list[object]], file: WalkedFile, digest: str, chunks: list[Chunk], text: str
    ) -> None:
        pkey = path_key(file.path)
        # Chunk content cuts lines at MAX_LINE_CHARS; what it cuts goes to `search_text`, so BM25
        # still finds a word at the end of a long line (and search marks such a result truncated).
        lines: list[str] | None = text.split("\n")
        if not any(len(line) > MAX_LINE_CHARS for line in lines):
            lines = None
        texts = self._written_texts
        if texts is not None and len(texts) + len(chunks) > MAX_WRITTEN_TEXTS:
            texts = self._written_texts = None  # a large update: phase 2 scans for what is missing
        for chunk in chunks:
            vkey = vector_key(self.identity, chunk)
            if texts is not None:
                texts.setdefault(vkey, (file.path, embedding_text(redact_path(file.path), chunk.scope, chunk.content)))
            cid = hashlib.sha256(f"{pkey}\x00{chunk.start_line}\x00{chunk.end_line}\x00{vkey}".encode()).hexdigest()[
                :32
            ]
            columns["id"].append(cid)
            columns["path"].append(file.path)
            columns["path_key"].append(pkey)
            columns["language"].append(chunk.language)
            columns["content_type"].append(str(chunk.content_type))
            columns["kind"].append(str(chunk.kind))
            columns["symbol"].append(chunk.symbol)
            columns["scope"].append(list(chunk.scope))
            columns["signature"].append(chunk.signature)
            columns["start_line"].append(chunk.start_line)
            columns["end_line"].append(chunk.end_line)
            columns["content"].append(chunk.content)
            columns["search_text"].append(overflow_text(lines, chunk) if lines is not None else "")
            columns["vec_key"].append(vkey)
            columns["file_hash"].append(digest)
            columns["refs"].append(chunk.refs)

    def _phase_vectors(self, summary: _Tally, written: dict[str, tuple[str, str]] | None = None) -> None:
        """Embed every chunk whose key has no vector yet; with `written` (paths and embedding texts
        by key), only those chunks, found without scanning the tables."""
        items: Iterator[tuple[str, str, str]]
        if written is None:
            pending = self.store.pending_vector_keys()
            items = self._pending_texts(pending)
        else:
            missing = self.store.missing_vector_keys(sorted(written))
            pending = KeySet.of(missing)
            items = ((key, *written[key]) for key in sorted(missing))
        if self.team is not None and not self._seeded and (self._seed_mode == "always" or len(pending) >= MIN_PENDING):
            self._seed(summary, pending)
            return self._phase_vectors(summary, written)
        progress = _PhaseProgress(IndexPhase.EMBED, chunks_total=len(pending))
        self._progress(progress.event())
        if not pending:
            return
        embedded_before = summary.vectors_embedded
        try:
            for batch in self.embedding.batches(items):
                self._check_cancel()
                self._embed_commit(batch, summary, progress)
        except EmbeddingError as exc:
            self.store.note_vector_writes(summary.vectors_embedded - embedded_before)
            raise self._left_unembedded(exc) from None
        self.store.note_vector_writes(summary.vectors_embedded - embedded_before)
        elapsed = time.monotonic() - progress.started
        if progress.chunks_done >= _RATE_MIN_CHUNKS and elapsed > 0:
            _EMBED_RATES[self.identity.model] = progress.chunks_done / elapsed

    def _seed(self, summary: _Tally, pending: KeySet) -> None:
        """Copy what the team store holds for the `pending` keys (once per run); a refusal is reported
        in the summary and the run embeds locally."""
        self._seeded = True
        if self.team is None or (not pending and self._seed_mode != "always"):
            return

        def copied(done: int, total: int) -> None:
            self._progress(IndexProgress(IndexPhase.SEED, chunks_done=done, chunks_total=total))

        report = self.team.fill(self.store, pending, copied)
        summary.seed = report
        # What the index records is where its vectors came from: an ask that copied nothing (`lgrep
        # seed` on a complete index) leaves the record as it was.
        if report.seeded and report.vectors_copied:
            self.store.note_vector_writes(report.vectors_copied)
            self.store.write_meta(seed=_seed_meta(report))

    def _pending_texts(self, pending: KeySet) -> Iterator[tuple[str, str, str]]:
        """The embedding text of each pending key, once (the first chunk of the table that has it),
        read a page of the chunks table at a time. What is held for the whole table is the keys'
        array and one flag per key, ~33 bytes a pending chunk."""
        taken = np.zeros(len(pending), dtype=np.bool_)
        left = len(pending)
        for batch in self.store.iter_chunk_rows(["vec_key", "path", "scope", "content"], SCAN_ROWS):
            vkeys = batch["vec_key"]
            at = pending.positions(vkeys)
            wanted = np.flatnonzero(at >= 0)
            if wanted.size == 0:
                continue
            paths, scopes, contents = batch["path"], batch["scope"], batch["content"]
            for i in wanted.tolist():
                slot = int(at[i])
                if not taken[slot]:
                    taken[slot] = True
                    left -= 1
                    yield vkeys[i], paths[i], embedding_text(redact_path(paths[i]), scopes[i] or (), contents[i])
            if not left:
                return

    def _embed_commit(self, batch: TextBatch, summary: _Tally, progress: _PhaseProgress) -> None:
        done = self.embedding.embed(batch)
        summary.tokens_billed += done.tokens_billed
        if done.keys:
            # What arrived is kept, even when other requests of the batch failed: it was paid for.
            self.store.add_vectors(done.keys, done.vectors)
        summary.vectors_embedded += len(done.keys)
        progress.chunks_done += len(batch.keys)
        self._progress(progress.event())
        if done.failure is not None:
            raise done.failure

    def _left_unembedded(self, exc: EmbeddingError) -> EmbeddingError:
        """The provider's error, naming the files whose chunks are still without vectors (BM25 finds
        them meanwhile; the next run embeds only those)."""
        pending = self.store.pending_vector_keys()
        files: set[str] = set()
        for batch in self.store.iter_chunk_rows(["vec_key", "path"], SCAN_ROWS):
            at = pending.positions(batch["vec_key"])
            files.update(p for p, slot in zip(batch["path"], at.tolist(), strict=True) if slot >= 0)
        shown = sorted(files)[:_FILES_NAMED]
        more = f" and {len(files) - len(shown)} more" if len(files) > len(shown) else ""
        names = ", ".join(shown) + more if shown else "none"
        message = (
            f"{exc.message}. {len(files)} file{'' if len(files) == 1 else 's'} left without vectors ({names}); "
            "BM25 search finds them meanwhile, and `lgrep index` again embeds only what is missing"
        )
        return (EmbeddingError if isinstance(exc, EmbeddingIncomplete) else type(exc))(message)


def _seed_meta(report: SeedReport) -> dict[str, object]:
    return {
        "store": report.store,
        "repository": report.repository,
        "commit": report.commit,
        "published_at": report.published_at,
        "vectors_copied": report.vectors_copied,
        "bytes_copied": report.bytes_copied,
        "files_overlaid": report.files_overlaid,
        "seeded_at": time.time(),
    }


def _changed(file: WalkedFile, record: FileRecord | None) -> bool:
    """Whether a full run must read the file: it is new, or its stat differs from the record's (size,
    mtime, ctime or inode, as git decides: `FileRecord.matches`), so a rewrite that keeps the size
    and restores the mtime is read too. A stat only; `_index_batch` compares the content hash and
    re-chunks only what differs. A record from an older manifest (no ctime or inode) counts as
    changed: the file is read once, and its record then has them."""
    return record is None or not record.matches(file.size, file.mtime_ns, file.ctime_ns, file.inode)


def _record(file: WalkedFile, digest: str, language: str, chunks: int) -> FileRecord:
    """The manifest record of a file read at the walk's stat of it."""
    return FileRecord(file.path, file.size, file.mtime_ns, digest, language, chunks, file.ctime_ns, file.inode)
