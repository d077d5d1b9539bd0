"""Project use cases the CLI and the index server share: status, the list of indexed projects, removal.

They read through the read-only `ProjectReader` (status never creates, repairs or locks anything);
removal takes the project's write lock, so it never pulls an index from under a running writer.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from lgrep_core.domain.errors import LgrepError
from lgrep_core.domain.models import FileChanges, ProjectInfo, ProjectState, ProjectStatus, RemoveResult, SeedReport
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.layout import (
    FileRecord,
    index_state,
    not_ready_error,
    project_dir,
    read_meta_file,
    read_pointer,
)
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.storage.spend import SpendLedger
from lgrep_core.storage.store import ProjectStore, versions_lock

from .pipeline import VECTORS_UNFINISHED, walk_options
from .walker import walk

__all__ = ["changes_since", "list_projects", "project_status", "remove_project", "unfinished_vector_fills"]

log = logging.getLogger(__name__)

_PROJECT_DIR = re.compile(r"[0-9a-f]{12}")


def project_status(
    settings: LgrepSettings, root: Path, *, count_changes: bool = True, brief: bool = False
) -> ProjectStatus:
    """Where a project's index stands and what it holds. A project that is not searchable gets its
    state and, in `detail`, why and what to run; one without any index is a NotFoundError. `brief`:
    the state and the index's identity only (no counts, no spend, no walk of the tree)."""
    reader = ProjectReader(settings.cache_dir, root)
    state = reader.state()
    if state is ProjectState.ABSENT:
        raise not_ready_error(reader.dir, reader.root)
    if brief:
        return _brief_status(reader, state)
    spend = SpendLedger(settings.cache_dir).report(settings.spend, str(reader.root))
    if state is not ProjectState.READY:
        return ProjectStatus(
            project_root=str(reader.root),
            state=state,
            index_dir=str(reader.dir),
            detail=not_ready_error(reader.dir, reader.root).message,
            project_spend=spend.project,
            total_spend=spend.total,
            spend_warnings=spend.warnings,
        )
    version = reader.version()
    meta = reader.meta(version)
    records = reader.manifest(version)
    languages: dict[str, int] = {}
    for rec in records.values():
        languages[rec.language] = languages.get(rec.language, 0) + 1
    identity = meta.get("identity", {})
    last = meta.get("last_indexed_at")
    return ProjectStatus(
        project_root=str(reader.root),
        state=state,
        index_dir=str(reader.dir),
        files=len(records),
        chunks=reader.count_chunks(version),
        vectors_pending=reader.count_pending(version),
        languages=dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))),
        provider=str(identity.get("provider", "")),
        model=str(identity.get("model", "")),
        dimension=int(identity.get("dimension") or 0),
        chunker_version=str(identity.get("chunker_version", "")),
        last_indexed=datetime.fromtimestamp(last, UTC) if last else None,
        changes=changes_since(settings, reader.root, records) if count_changes else None,
        seed=seed_from_meta(meta.get("seed")),
        project_spend=spend.project,
        total_spend=spend.total,
        spend_warnings=spend.warnings,
    )


def seed_from_meta(value: object) -> SeedReport | None:
    """The team store's seed a generation's meta.json records (None: built locally)."""
    if not isinstance(value, dict):
        return None
    try:
        return SeedReport(
            store=str(value.get("store", "")),
            repository=str(value.get("repository", "")),
            commit=str(value.get("commit", "")),
            published_at=float(value.get("published_at") or 0.0),
            vectors_copied=int(value.get("vectors_copied") or 0),
            bytes_copied=int(value.get("bytes_copied") or 0),
            files_overlaid=int(value.get("files_overlaid") or 0),
        )
    except (TypeError, ValueError):
        return None


def _brief_status(reader: ProjectReader, state: ProjectState) -> ProjectStatus:
    if state is not ProjectState.READY:
        detail = not_ready_error(reader.dir, reader.root).message
        return ProjectStatus(project_root=str(reader.root), state=state, index_dir=str(reader.dir), detail=detail)
    identity = reader.meta(reader.version()).get("identity", {})
    return ProjectStatus(
        project_root=str(reader.root),
        state=state,
        index_dir=str(reader.dir),
        provider=str(identity.get("provider", "")),
        model=str(identity.get("model", "")),
        dimension=int(identity.get("dimension") or 0),
        chunker_version=str(identity.get("chunker_version", "")),
    )


def changes_since(settings: LgrepSettings, root: Path, records: dict[str, FileRecord]) -> FileChanges:
    """Files added, modified or deleted on disk since they were indexed. Modified is what a full index
    run would re-read (`FileRecord.matches`: size, mtime, ctime or inode differ, or the record is from
    an older manifest that lacks the last two), whether or not its content turns out to differ."""
    added = modified = 0
    seen: set[str] = set()
    for f in walk(root, walk_options(settings)):
        seen.add(f.path)
        rec = records.get(f.path)
        if rec is None:
            added += 1
        elif not rec.matches(f.size, f.mtime_ns, f.ctime_ns, f.inode):
            modified += 1
    return FileChanges(added=added, modified=modified, deleted=len(set(records) - seen))


def list_projects(cache_dir: Path) -> list[ProjectInfo]:
    """Every project with an index (or the start of one) in a cache dir, by root."""
    out: list[ProjectInfo] = []
    try:
        entries = sorted(e.name for e in os.scandir(cache_dir) if e.is_dir(follow_symlinks=False))
    except OSError:
        return out
    for name in entries:
        if not _PROJECT_DIR.fullmatch(name):
            continue
        info = _project_info(cache_dir / name)
        if info is not None:
            out.append(info)
    return sorted(out, key=lambda p: p.project_root)


def unfinished_vector_fills(cache_dir: Path) -> list[Path]:
    """The roots (existing folders) of the projects whose published index says a vector fill was
    left unfinished (`VECTORS_UNFINISHED`: a run killed or stopped with its server, a `--no-wait`
    run whose fill never ended). Reads only small metadata files: no table is opened."""
    roots: list[Path] = []
    try:
        entries = sorted(e.name for e in os.scandir(cache_dir) if e.is_dir(follow_symlinks=False))
    except OSError:
        return roots
    for name in entries:
        if not _PROJECT_DIR.fullmatch(name):
            continue
        index_dir = cache_dir / name
        try:
            gen = read_pointer(index_dir, index_dir)
            if gen is None:
                continue
            meta = read_meta_file(index_dir / gen / "meta.json", index_dir, index_dir)
        except LgrepError:
            continue
        root = Path(str(meta.get("project_root", "")))
        unfinished = meta.get(VECTORS_UNFINISHED) is True and root.is_absolute() and root.is_dir()
        if unfinished and project_dir(cache_dir, root) == index_dir:
            roots.append(root)
    return roots


def _project_info(index_dir: Path) -> ProjectInfo | None:
    state = index_state(index_dir)
    if state is ProjectState.ABSENT:
        return None
    try:
        gen = read_pointer(index_dir, index_dir)
        if gen is None:
            return ProjectInfo(project_root=_root_of_unpublished(index_dir), state=state, index_dir=str(index_dir))
        meta = read_meta_file(index_dir / gen / "meta.json", index_dir, index_dir)
        root = Path(str(meta.get("project_root", "")))
        reader = ProjectReader(index_dir.parent, root)
        if reader.dir != index_dir:  # a folder that is not where this root's index belongs
            return None
        version = reader.version()
        last = meta.get("last_indexed_at")
        return ProjectInfo(
            project_root=str(root),
            state=state,
            files=len(reader.manifest(version)),
            chunks=reader.count_chunks(version),
            vectors_pending=reader.count_pending(version),
            last_indexed=datetime.fromtimestamp(last, UTC) if last else None,
            index_dir=str(index_dir),
        )
    except LgrepError as exc:
        log.info("listing %s: %s", index_dir, exc.message)
        return ProjectInfo(project_root=_root_of_unpublished(index_dir), state=state, index_dir=str(index_dir))


def _root_of_unpublished(index_dir: Path) -> str:
    """The project root a generation's metadata names, for an index that is not (yet) readable."""
    for gen in sorted(index_dir.glob("gen-*"), reverse=True):
        try:
            return str(read_meta_file(gen / "meta.json", index_dir, index_dir).get("project_root", ""))
        except LgrepError:
            continue
    return ""


def remove_project(settings: LgrepSettings, root: Path, *, lock_timeout_s: float = 0.0) -> RemoveResult:
    """Delete a project's index. Waits up to `lock_timeout_s` for a writer of it to finish.

    Raises:
        IndexBusyError: a writer holds the project's lock for longer.
    """
    store = ProjectStore(settings.cache_dir, root)
    if not store.dir.exists():
        return RemoveResult(removed=False, bytes_freed=0)
    lock = store.lock()
    lock.acquire(
        lock_timeout_s,
        store.root,
        doing="removing",
        advice=f"wait for it to finish, then run `lgrep clean {store.root}` again",
    )
    # The folder also holds the repository's release index (`lgrep index --tags`): not while its
    # writer runs either.
    tags_lock = versions_lock(settings.cache_dir, root)
    try:
        tags_lock.acquire(
            lock_timeout_s,
            store.root,
            doing="removing",
            advice=f"its tags are being indexed; wait for that to finish, then run `lgrep clean {store.root}` again",
        )
        try:
            freed = _tree_bytes(store.dir)
            shutil.rmtree(store.dir)
        finally:
            tags_lock.release()
    finally:
        lock.release()
    return RemoveResult(removed=True, bytes_freed=freed)


def _tree_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size  # noqa: PTH118
            except OSError:
                continue
    return total
