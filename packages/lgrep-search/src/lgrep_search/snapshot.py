"""The snapshot a project's searches read, as new as the index a caller could have seen.

A `Snapshots` object owns one project's in-memory `Corpus`. A query reads the index's version
first: two small files, the `CURRENT` pointer and the generation's `meta.json`, the same two a status
reads and a writer updates after each commit, before its run's summary. When the snapshot is at
that version (the common case: nothing changed since the last query) the query answers from it at
once. When the index moved on, the query answers only from a snapshot at least as new as the
version it read: it waits for a refresh that is running, or refreshes in line itself. The refresh
applies only the files the writer's change log names (or only the vectors a fill added), or reads
everything again when the log cannot say (another generation after a rebuild, a large change).

Why a query waits (ADR 0009, amendment of 2026-11-29): a query used to answer from the
snapshot it had while a background refresh caught up, so a search that followed `lgrep status`
(or an index run's summary, or GetStatus through MCP) saying "vectors complete", or an edit
indexed, could answer from the state before it for the length of a refresh: `vectors_pending` > 0,
the new file missing. Nothing a client holds says which version it was told about, so the only
version a query can promise is the one on disk when it starts; the snapshot's version is checked
against it on every query anyway. The price is paid only by queries that meet a change: a one-file
edit is ~55 ms at 10k chunks, a commit of a vector fill a read of its new vectors, a full reload
(a rebuild) as long as a first load. Writers still poke the snapshot after each commit
(`refresh_soon`, on a background thread at low priority), so most changes are applied before the
next query arrives, and a query that meets a poke's refresh waits for it instead of starting a
second one.

One-shot callers (a CLI process in-process) pass `background=False`: their pokes refresh in line too.
"""

from __future__ import annotations

import logging
import threading
import time

from lgrep_core.domain.errors import LgrepError, StorageError
from lgrep_core.domain.text import clear_term_caches
from lgrep_core.runtime.memory import release_free_heap
from lgrep_core.runtime.priority import lower_thread_priority
from lgrep_core.storage.layout import FileRecord
from lgrep_core.storage.reader import IndexVersion, ProjectReader

from .corpus import Corpus

__all__ = ["FULL_RELOAD_SHARE", "Snapshots"]

log = logging.getLogger(__name__)

# A change touching more than this share of the project's files is read in full: applying it file
# by file would cost more than one scan.
FULL_RELOAD_SHARE = 0.25


class Snapshots:
    """Owns the in-memory snapshot of one project's index (see the module docstring). Thread-safe."""

    def __init__(self, reader: ProjectReader, *, background: bool = True) -> None:
        self.reader = reader
        self.background = background
        self._corpus: Corpus | None = None
        self._load_lock = threading.Lock()  # one load or refresh at a time
        self._refresher: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        self.last_used = time.monotonic()
        self.refreshes = 0  # completed refreshes, incremental or full (for tests and stats)
        self.full_loads = 0
        self._stats: tuple[IndexVersion, dict[str, FileRecord]] | None = None

    @property
    def loaded(self) -> Corpus | None:
        """The snapshot held now, without checking the index (None before the first load)."""
        return self._corpus

    def current(self) -> Corpus:
        """The snapshot to answer a query from.

        Raises:
            NotFoundError: the project has no index (or it was removed).
            StorageError: the index cannot be read.
        """
        self.last_used = time.monotonic()
        corpus = self._corpus
        if corpus is None:
            return self._refresh()
        version = self.reader.version()
        if version == corpus.version:
            return corpus
        # The index moved on since this snapshot (a status may already have said so): answer from
        # a snapshot at least as new as `version`, never from this one (see the module docstring).
        return self._refresh(at_least=version)

    def indexed_stats(self, corpus: Corpus) -> dict[str, FileRecord]:
        """The manifest record of each file (its size, mtime, ctime and inode at index time), from the
        manifest of `corpus`'s version: read once per version, not per query (a query checks its
        result files against it).

        Raises:
            LgrepError: the manifest cannot be read (its generation was replaced, or it is damaged).
        """
        cached = self._stats
        if cached is not None and cached[0] == corpus.version:
            return cached[1]
        version = corpus.version if corpus.version is not None else self.reader.version()
        stats = self.reader.manifest(version)
        self._stats = (version, stats)
        return stats

    def refresh_soon(self) -> None:
        """Start a background refresh if the index moved on since the snapshot was taken (or a
        synchronous one without background refreshes). Errors are logged, not raised: the next
        query reports them."""
        corpus = self._corpus
        try:
            if corpus is None or self.reader.version() == corpus.version:
                return
        except LgrepError:
            return
        if self.background:
            self._refresh_in_background()
        else:
            self._background_refresh()

    def refresh(self) -> Corpus:
        """Bring the snapshot to the index's newest version now (waits for a running refresh)."""
        return self._refresh()

    def close(self) -> None:
        """Drop the snapshot; a refresh still running finishes and is discarded."""
        self._closed = True
        self._corpus = None
        release_free_heap()

    # ------------------------------------------------------------------------------ internals

    def _refresh_in_background(self) -> None:
        with self._start_lock:
            if self._refresher is not None and self._refresher.is_alive():
                return
            thread = threading.Thread(target=self._background_refresh, name="lgrep-snapshot-refresh", daemon=True)
            self._refresher = thread
            thread.start()

    def wait_for_refresh(self, timeout: float | None = None) -> None:
        """Wait for a background refresh that is running (tests, orderly shutdown)."""
        thread = self._refresher
        if thread is not None:
            thread.join(timeout)

    def _background_refresh(self) -> None:
        if self.background:
            lower_thread_priority()  # its own thread: the queries that go on meanwhile come first
        try:
            self._refresh()
        except LgrepError as exc:
            # The query that noticed the new version already has its answer; the next query
            # checks again and reports the error if it persists.
            log.warning("refreshing the snapshot of %s failed: %s", self.reader.root, exc.message)
        except Exception:
            log.exception("refreshing the snapshot of %s failed", self.reader.root)

    def _refresh(self, at_least: IndexVersion | None = None) -> Corpus:
        """The snapshot at the index's newest version, loaded or advanced under the lock. With
        `at_least`, a snapshot that reached that version while this call waited for the lock (a
        running refresh finished it) is enough: no second refresh for the same change."""
        with self._load_lock:
            corpus = self._corpus
            if at_least is not None and corpus is not None and _covers(corpus.version, at_least):
                return corpus
            for _attempt in range(5):
                version = self.reader.version()
                corpus = self._corpus
                if corpus is not None and corpus.version == version:
                    return corpus
                try:
                    fresh = self._advance(corpus, version)
                except StorageError:
                    # A rebuild published a new generation and deleted this one while it was read:
                    # follow the pointer. Otherwise the index itself is damaged.
                    if self.reader.version().generation == version.generation:
                        raise
                    continue
                if not self._closed:
                    self._corpus = fresh
                self.refreshes += 1
                # The load's temporary buffers (Arrow batches, term lists) are garbage now, and the
                # analyser's term caches are of no use until the next load: give both back.
                clear_term_caches()
                release_free_heap()
                return fresh
            raise StorageError(f"the index of {self.reader.root} kept changing while it was read; try again")

    def _advance(self, corpus: Corpus | None, version: IndexVersion) -> Corpus:
        changes = None if corpus is None or corpus.version is None else self.reader.changes(corpus.version, version)
        if corpus is None or changes is None or len(changes.path_keys) > max(50, FULL_RELOAD_SHARE * len(corpus.files)):
            self.full_loads += 1
            return Corpus.load(self.reader, version)
        return corpus.updated(self.reader, version, changes)


def _covers(have: IndexVersion | None, want: IndexVersion) -> bool:
    """A snapshot at `have` holds everything `want` holds: the same version, or a later commit of
    the same generation (commits only add to a generation; another generation is another index)."""
    if have is None:
        return False
    return have == want or (have.generation == want.generation and have.commit >= want.commit)
