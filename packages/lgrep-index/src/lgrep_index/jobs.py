"""The index side of a server: the single writer of every project it serves.

Index requests for a project run one at a time on a worker thread (the project's write lock also
keeps other processes out). A request that arrives while an equal job for the same project is
queued or running joins it instead of repeating the work: three agents asking to index the same
project cost one run. Each caller gets the job's progress events and its summary (or its error).

A job can be cancelled: `cancel(root)` (`lgrep index --cancel`, RemoveProject), or by its callers
leaving: a job whose every waiting caller went away (a client's stream cancelled, its process gone)
is cancelled, unless someone asked for it to go on in the background: a watcher's batches and
catch-up runs, the vector fill behind a `--no-wait` run, and any request with `wait_vectors=False`
(`lgrep index --no-wait`, the MCP index tool) or whose caller's deadline ran out (it said in advance
that it would stop waiting). A cancelled run stops at its next commit boundary (between batches of
files or of embeddings; a batch being embedded finishes first), keeps what it committed, releases
the project's write lock and ends with an IndexingError that says so; the next run goes on from there.

Index work runs below the answers' CPU priority (`lgrep_core.runtime.priority`): on a machine whose cores are busy,
a search waits for a core behind an embedding batch otherwise. A nice value costs nothing when cores
are idle, so a lone index runs at full speed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lgrep_core.domain.errors import IndexingError, LgrepError
from lgrep_core.domain.models import IndexProgress, IndexSummary
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.embeddings.registry import Embedders, as_embedders
from lgrep_core.runtime.priority import lower_thread_priority
from lgrep_core.settings.config import LgrepSettings, load_settings
from lgrep_core.storage.store import release_free_memory

from .changes import ChangeBatch
from .freshness import git_state, record_git_state
from .pipeline import Cancelled, Indexer

__all__ = ["IndexJobs", "JobStream"]

log = logging.getLogger(__name__)

# How long a job waits for another process's write lock on the project before failing.
LOCK_WAIT_S = 600.0

_DONE = object()
# The reason of the jobs a stopping server cancels: their vector fill is resumed at its next start.
SHUTTING_DOWN = "the server is shutting down"


@dataclass(slots=True)
class _Job:
    root: Path
    force: bool
    wait_vectors: bool
    batch: ChangeBatch | None = None  # a watcher's batch: only these paths (Indexer.update)
    seed: bool = False  # ask the team store on this run whatever it finds (`lgrep seed`)
    listeners: list[queue.SimpleQueue[object]] = field(default_factory=list)
    last_progress: IndexProgress | None = None
    started: bool = False
    finished: threading.Event = field(default_factory=threading.Event)
    outcome: IndexSummary | LgrepError | None = None
    # Someone asked for this job who does not wait for it (a watcher, a --no-wait run, a caller whose
    # deadline passed): it is not cancelled when its waiting callers leave.
    keep: bool = False
    cancel: threading.Event = field(default_factory=threading.Event)
    cancel_reason: str = ""

    def stop(self, reason: str) -> bool:
        """Ask the job to stop at its next commit boundary; False if it had already ended or been asked."""
        if self.finished.is_set() or self.cancel.is_set():
            return False
        self.cancel_reason = reason
        self.cancel.set()
        return True


class JobStream:
    """The events of one caller of a job (IndexJobs.index): progress, then the summary; the job's
    error is raised. `leave()` (from any thread: a gRPC call's end callback) stops following: the
    iteration ends at once, and the job is cancelled if nobody else waits for it."""

    def __init__(self, jobs: IndexJobs, job: _Job, events: queue.SimpleQueue[object]) -> None:
        self._jobs = jobs
        self._job = job
        self._events = events
        self._left = False

    def __iter__(self) -> JobStream:
        return self

    def __next__(self) -> IndexProgress | IndexSummary:
        job = self._job
        if self._left:
            raise StopIteration
        item = self._events.get()
        if item is _DONE:
            self._left = True
            if job.finished.is_set() and isinstance(job.outcome, LgrepError):
                raise job.outcome
            if job.finished.is_set() and isinstance(job.outcome, IndexSummary):
                return job.outcome
            raise StopIteration  # left before the job ended
        assert isinstance(item, IndexProgress)
        return item

    def leave(self, *, cancel: bool = True) -> None:
        """Stop following the job. With `cancel`, a job nobody else waits for (and nobody asked to go
        on in the background) is cancelled; without, it is kept going (the caller's deadline passed)."""
        self._jobs._leave(self._job, self._events, cancel=cancel)


class IndexJobs:
    """Runs index jobs for any number of projects, one writer per project. Thread-safe."""

    def __init__(
        self,
        settings: LgrepSettings,
        embedder: EmbeddingProvider | Embedders,
        *,
        on_commit: Callable[[Path], None] | None = None,
    ) -> None:
        """`on_commit(root)` is called after each job that changed a project's index (readers in
        the same process refresh their snapshot at once instead of on their next check)."""
        self.settings = settings
        # One provider, or one per project (a project opted out of a cloud provider uses the local model).
        self.embedders = as_embedders(embedder)
        self.embedder = self.embedders.primary
        self.on_commit = on_commit
        self._lock = threading.Lock()
        self._queues: dict[Path, list[_Job]] = {}
        self._workers: dict[Path, threading.Thread] = {}
        self._closed = False
        self._idle = threading.Condition(self._lock)  # notified when a job ends

    def index(
        self,
        root: Path,
        *,
        force: bool = False,
        wait_vectors: bool = True,
        join_running: bool = True,
        seed: bool = False,
    ) -> JobStream:
        """Index a project: progress events, then its summary as the last item. `leave()` on the
        stream cancels the job if no other caller waits for it (see the module's docstring).
        Without `join_running`, a run that already started (and may have walked the tree before
        what the caller saw changed) is not joined: a queued one is, or a new one is queued.

        Raises (from the iterator) the job's LgrepError: IndexBusyError, IndexMismatchError, ..."""
        events: queue.SimpleQueue[object] = queue.SimpleQueue()
        job = self._submit(
            root, force=force, wait_vectors=wait_vectors, listener=events, join_running=join_running, seed=seed
        )
        return JobStream(self, job, events)

    def submit(self, root: Path, *, batch: ChangeBatch | None = None, wait_vectors: bool = True) -> None:
        """Queue a job nobody waits for (a watcher's batch, vectors left to fill in): it runs in
        turn with the project's other jobs; its errors are logged."""
        self._submit(root, force=False, wait_vectors=wait_vectors, listener=None, batch=batch)

    def run(self, root: Path, *, force: bool = False, wait_vectors: bool = True) -> IndexSummary:
        """Index a project and return its summary (progress is not reported)."""
        summary: IndexSummary | None = None
        for event in self.index(root, force=force, wait_vectors=wait_vectors):
            if isinstance(event, IndexSummary):
                summary = event
        assert summary is not None
        return summary

    def busy(self, root: Path) -> bool:
        with self._lock:
            return bool(self._queues.get(root))

    def cancel(self, root: Path, reason: str, *, wait_s: float = 0.0) -> tuple[int, bool]:
        """Cancel every job of a project, queued or running: a running one stops at its next commit
        boundary. Waits up to `wait_s` for them to end. Returns (jobs cancelled, all of them ended)."""
        with self._lock:
            cancelled = sum(job.stop(reason) for job in self._queues.get(root, ()))
            if cancelled:
                log.info("cancelling %d index job(s) of %s: %s", cancelled, root, reason)
            ended = self._idle.wait_for(lambda: not self._queues.get(root), timeout=wait_s)
        return cancelled, ended

    def cancel_fills(self, root: Path, reason: str) -> int:
        """Cancel a project's whole-project runs that nobody waits for (a vector fill going on
        behind): a caller in a hurry goes first, and its own run fills the vectors in after it.
        A running one stops at its next commit boundary. Returns how many were cancelled."""
        with self._lock:
            fills = [
                job
                for job in self._queues.get(root, ())
                if job.batch is None and job.keep and not job.listeners and not job.force
            ]
            cancelled = sum(job.stop(reason) for job in fills)
        if cancelled:
            log.info("cancelling %d background run(s) of %s: %s", cancelled, root, reason)
        return cancelled

    def any_busy(self) -> bool:
        with self._lock:
            return any(self._queues.values())

    def close(self, timeout: float | None = None) -> None:
        """Stop taking jobs, stop the running ones at their next commit, and wait for them."""
        with self._lock:
            self._closed = True
            workers = list(self._workers.values())
            for pending in self._queues.values():
                for job in pending:
                    job.stop(SHUTTING_DOWN)
        deadline = None if timeout is None else time.monotonic() + timeout
        for worker in workers:
            worker.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))
            if worker.is_alive():
                log.warning("%s did not stop within %s s: its commit is still running", worker.name, timeout)

    # ------------------------------------------------------------------------------ internals

    def _submit(
        self,
        root: Path,
        *,
        force: bool,
        wait_vectors: bool,
        listener: queue.SimpleQueue[object] | None,
        batch: ChangeBatch | None = None,
        join_running: bool = True,
        seed: bool = False,
    ) -> _Job:
        with self._lock:
            if self._closed:
                raise IndexingError("the server is shutting down; index the project again once it is back")
            pending = self._queues.setdefault(root, [])
            # A whole-project request joins an equal one that has not started yet, or a running one
            # that does at least as much; a watcher's batch is its own job.
            for job in pending:
                if batch is not None or job.batch is not None or job.finished.is_set() or seed != job.seed:
                    continue
                joins = (not job.started and job.force == force and job.wait_vectors == wait_vectors) or (
                    join_running
                    and job.started
                    and not force
                    and (job.wait_vectors or not wait_vectors)
                    and not job.force
                )
                if joins and not job.cancel.is_set():
                    if listener is not None:
                        job.listeners.append(listener)
                        if job.last_progress is not None:
                            listener.put(job.last_progress)
                    job.keep = job.keep or listener is None or not wait_vectors
                    return job
            job = _Job(root, force, wait_vectors, batch, seed, [listener] if listener is not None else [])
            job.keep = listener is None or not wait_vectors
            pending.append(job)
            worker = self._workers.get(root)
            if worker is None or not worker.is_alive():
                worker = threading.Thread(target=self._work, args=(root,), name=f"lgrep-index {root.name}", daemon=True)
                self._workers[root] = worker
                worker.start()
            return job

    def _leave(self, job: _Job, events: queue.SimpleQueue[object], *, cancel: bool) -> None:
        with self._lock:
            if events not in job.listeners:
                return  # the job ended (its listeners were told) or this caller left already
            job.listeners.remove(events)
            if not cancel:
                job.keep = True
            abandoned = not job.listeners and not job.keep and job.stop("the command that asked for it stopped waiting")
        events.put(_DONE)  # ends the caller's iteration now, not at the job's next event
        if abandoned:
            log.info("nobody waits for the index of %s any more: cancelling it", job.root)

    def _work(self, root: Path) -> None:
        lower_thread_priority()  # and the threads this one starts (the embedding batches' pool)
        while True:
            with self._lock:
                pending = self._queues.get(root)
                if not pending:
                    self._queues.pop(root, None)
                    self._workers.pop(root, None)
                    return
                job = pending[0]
                job.started = True
            if job.cancel.is_set():  # cancelled while it waited its turn
                job.outcome = self._cancelled(job)
            else:
                self._run(job)
            with self._lock:
                pending.pop(0)
                listeners = list(job.listeners)
                job.listeners.clear()
                job.finished.set()
                self._idle.notify_all()
            for listener in listeners:
                listener.put(_DONE)

    def _run(self, job: _Job) -> None:
        def progress(event: IndexProgress) -> None:
            with self._lock:
                job.last_progress = event
                listeners = list(job.listeners)
            for listener in listeners:
                listener.put(event)

        try:
            # The project's own settings (its .lgrep.yaml) decide what is indexed and how it is chunked.
            settings = load_settings(job.root).settings
            embedder = self.embedders.for_project(job.root)
            indexer = Indexer(
                settings,
                job.root,
                embedder,
                progress=progress,
                cancel=job.cancel,
                resume_cancelled=lambda: job.cancel_reason == SHUTTING_DOWN,
                seed="always" if job.seed else "auto",
            )
            if job.batch is not None:
                job.outcome = indexer.update(job.batch, wait_vectors=job.wait_vectors, lock_timeout_s=LOCK_WAIT_S)
            else:
                # The checkout this run starts from: a search compares it with the one it finds (freshness.py).
                state = git_state(job.root)
                job.outcome = indexer.run(force=job.force, wait_vectors=job.wait_vectors, lock_timeout_s=LOCK_WAIT_S)
                record_git_state(self.settings.cache_dir, job.root, state)
        except Cancelled:
            job.outcome = self._cancelled(job)
            log.info("%s", job.outcome.message)
        except LgrepError as exc:
            job.outcome = exc
            if not job.listeners:
                log.warning("indexing %s failed: %s", job.root, exc.message)
        except Exception as exc:  # a bug must fail this job, not the server
            log.exception("indexing %s failed", job.root)
            job.outcome = IndexingError(f"indexing {job.root} failed: {type(exc).__name__}: {exc}")
        if self.on_commit is not None:
            try:
                self.on_commit(job.root)
            except Exception:
                log.exception("notifying readers of %s failed", job.root)
        # Give back the free pages the job left in Arrow's pool and the C heap. The model's session is
        # kept: dropping it after a big job and loading it again left the daemon ~40 MB higher after the
        # next small jobs (tools/bench_service.py soak, docs/benchmarks.md "Memory ceilings").
        release_free_memory()
        outcome = job.outcome
        if (
            isinstance(outcome, IndexSummary)
            and outcome.vectors_pending
            and not job.wait_vectors
            and not job.cancel.is_set()
        ):
            # The caller did not wait for vectors: this server fills them in behind, as the single writer.
            with self._lock:
                closed = self._closed
            if not closed:
                self.submit(job.root)

    @staticmethod
    def _cancelled(job: _Job) -> IndexingError:
        return IndexingError(
            f"indexing {job.root} was cancelled ({job.cancel_reason}); what it had committed is kept, "
            f"and `lgrep index {job.root}` goes on from there"
        )
