"""The snapshot a project's searches read, kept current without making a query wait.

A `Snapshots` object owns one project's in-memory `Corpus`. A query takes whatever snapshot is current
(one attribute read: the swap is atomic) after a cheap check of the index version (two small files).
When the version moved, a refresh starts on a background thread and the query goes on with the
snapshot it has; the refresh applies only the files the writer's change log names, or reads
everything again when the log cannot say (another generation after a rebuild, a large change). Only
the very first query of a project waits, for the first load.

One-shot callers (a CLI process in-process) pass `background=False`: they refresh in line, so they
always answer from the newest version.
"""

from __future__ import annotations

import logging
import threading
import time

from lgrep_core.domain.errors import LgrepError, StorageError
from lgrep_core.domain.text import clear_term_caches
from lgrep_core.runtime.memory import release_free_heap
from lgrep_core.runtime.priority import lower_thread_priority
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
        self._stats: tuple[IndexVersion, dict[str, tuple[int, int]]] | None = None

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
        if not self.background:
            return self._refresh()
        self._refresh_in_background()
        return corpus

    def indexed_stats(self, corpus: Corpus) -> dict[str, tuple[int, int]]:
        """(size, mtime_ns) of each file as the index recorded it, from the manifest of `corpus`'s
        version: read once per version, not per query (a query checks its result files against it).

        Raises:
            LgrepError: the manifest cannot be read (its generation was replaced, or it is damaged).
        """
        cached = self._stats
        if cached is not None and cached[0] == corpus.version:
            return cached[1]
        version = corpus.version if corpus.version is not None else self.reader.version()
        stats = {path: (rec.size, rec.mtime_ns) for path, rec in self.reader.manifest(version).items()}
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

    def _refresh(self) -> Corpus:
        with self._load_lock:
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
