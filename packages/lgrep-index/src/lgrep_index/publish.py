"""Publishing a repository's index to the team store: its HEAD commit's vectors (ADR 0034).

`publish` writes HEAD's tree, read with git plumbing (never a checkout: no filters, no hooks), into a
folder of the cache (`<cache>/publish/<id>/tree`, updated file by file, so the next publish re-reads
only what changed), indexes that folder with the usual walker and chunker (the same ignore rules,
secret scanner and redaction as any index), takes from the store what it already holds, embeds the
rest, and uploads the vectors the store lacks, then the publication: the commit, the repository's
identity, what the index was built with, the walker's rules and the checksum manifest. Uncommitted
and untracked files never reach it. Then older publications beyond `team.keep` are pruned.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from lgrep_core.domain.errors import ConfigError, IndexingError, StorageError
from lgrep_core.domain.models import IndexPhase, IndexProgress, IndexSummary
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.store import ProjectStore
from lgrep_core.storage.team import PublicationInfo, PublishedFile, identity_fingerprint

from lgrep_index.git import BlobReader, GitRepo, TreeEntry
from lgrep_index.pipeline import Indexer, identity_for
from lgrep_index.team import RepoFacts, TeamSource, team_store_for

__all__ = ["PublishSummary", "materialize", "publish"]

log = logging.getLogger(__name__)

# Vectors per upload (one commit of the store each).
UPLOAD_BATCH = 8192
_STATE = "written.json"


@dataclass(frozen=True, slots=True)
class PlannedFile:
    path: str
    chunks: int
    new_vectors: int  # vectors of its chunks the store does not hold


@dataclass(frozen=True, slots=True)
class PublishSummary:
    store: str
    repository: str
    commit: str
    dry_run: bool
    files: int
    chunks: int
    vectors: int  # distinct embedding keys of the publication
    vectors_uploaded: int  # new to the store (with --dry-run: would be)
    bytes_uploaded: int
    vectors_embedded: int  # computed here
    vectors_from_store: int  # taken from an earlier publication instead of embedding
    local_changes: int  # files that differ from HEAD in the working tree: not published
    untracked: int  # untracked files: not published
    pruned: int  # older publications removed
    seconds: float
    skipped_paths: int = 0  # tree entries whose names lgrep will not write (see materialize)
    planned: tuple[PlannedFile, ...] = field(default_factory=tuple)  # --dry-run: per file
    index: IndexSummary | None = None


def _lgrep_version() -> str:
    try:
        return version("lgrep")
    except PackageNotFoundError:
        return "unknown"


def _safe_parts(raw: str) -> list[str] | None:
    parts = raw.split("/")
    if any(p in ("", ".", "..") or "\x00" in p or p.lower() == ".git" for p in parts):
        return None
    return parts


def materialize(repo: GitRepo, commit: str, tree_dir: Path, max_file_bytes: int) -> tuple[list[TreeEntry], int]:
    """Make `tree_dir` hold exactly the regular files of `commit` no larger than `max_file_bytes`
    (symlinks and submodules are left out, as the walker leaves them). Only files whose blob changed
    since the last call are written. Returns the entries written and how many were left out for a
    name lgrep will not write ('..', '.git', empty parts)."""
    tree_dir.mkdir(parents=True, exist_ok=True)
    state_path = tree_dir.parent / _STATE
    try:
        written: dict[str, str] = json.loads(state_path.read_text(encoding="utf-8", errors="surrogateescape"))
        if not isinstance(written, dict):
            raise ValueError
    except (OSError, ValueError):
        written = {}
        shutil.rmtree(tree_dir)
        tree_dir.mkdir(parents=True)
    wanted: dict[str, TreeEntry] = {}
    refused = 0
    for entry in repo.tree(commit):
        if entry.is_symlink or entry.size < 0 or entry.size > max_file_bytes:
            continue
        raw = entry.raw or entry.path
        if _safe_parts(raw) is None:
            refused += 1
            continue
        wanted[raw] = entry
    # What the folder holds that the commit does not: files of older commits (and anything else).
    for folder, dirs, files in os.walk(tree_dir, topdown=False):
        base = Path(folder)
        for name in files:
            rel = (base / name).relative_to(tree_dir).as_posix()
            if rel not in wanted:
                (base / name).unlink()
                written.pop(rel, None)
        for name in dirs:
            sub = base / name
            if sub.is_symlink():
                sub.unlink()
            elif not any(sub.iterdir()):
                sub.rmdir()
    todo = [e for raw, e in wanted.items() if written.get(raw) != e.sha or not (tree_dir / raw).is_file()]
    with BlobReader(repo) as blobs:
        for entry in todo:
            raw = entry.raw or entry.path
            data = blobs.read(entry.sha, max_file_bytes)
            target = tree_dir / raw
            if data is None:  # missing in a partial clone
                target.unlink(missing_ok=True)
                written.pop(raw, None)
                continue
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            for parent in reversed(target.relative_to(tree_dir).parents):
                at = tree_dir / parent
                if at.is_file():
                    at.unlink()  # a file that became a folder
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            written[raw] = entry.sha
    tmp = state_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(written), encoding="utf-8", errors="surrogateescape")
    tmp.replace(state_path)
    return list(wanted.values()), refused


def _local_changes(repo: GitRepo, top: Path) -> tuple[int, int]:
    """Files of the working tree that differ from HEAD (by git's stat info: nothing is read or
    filtered) and untracked files that are not ignored."""
    changed = repo._run("diff-index", "--name-only", "-z", "HEAD", "--", cwd=top)
    untracked = repo._run("ls-files", "--others", "--exclude-standard", "-z", cwd=top)
    return sum(1 for p in changed.split(b"\x00") if p), sum(1 for p in untracked.split(b"\x00") if p)


def publish(
    settings: LgrepSettings,
    root: Path,
    embedder: EmbeddingProvider,
    *,
    dry_run: bool = False,
    progress: Callable[[IndexProgress], None] | None = None,
) -> PublishSummary:
    """Publish the repository at `root` at its HEAD commit to `team.store` (see the module docstring).

    Raises:
        ConfigError: no team store is set.
        NotFoundError: `root` is not in a git repository.
        IndexingError: the repository has no commit, or some chunks could not be embedded.
        StorageError: the store cannot be written (TeamRefusal `unreachable` when it cannot be reached).
    """
    started = time.monotonic()
    if not settings.team.store:
        raise ConfigError("no team store is set: set team.store (or LGREP_TEAM_STORE) to an s3:// prefix or a folder")
    facts = RepoFacts.read(root, settings.team.repository)
    if not facts.head:
        raise IndexingError(f"{facts.top} has no commit to publish")
    repo = GitRepo(facts.top)
    local_changes, untracked = _local_changes(repo, facts.top)
    work = settings.cache_dir / "publish" / hashlib.sha256(str(facts.top).encode()).hexdigest()[:12]
    tree_dir = work / "tree"
    _entries, refused = materialize(repo, facts.head, tree_dir, settings.index.max_file_bytes)

    identity = identity_for(settings, embedder)
    fingerprint = identity_fingerprint(identity)
    store = team_store_for(settings, facts.slug)
    team = TeamSource(settings, facts.top, identity)
    indexer = Indexer(settings, tree_dir, embedder, progress=progress, seed="always", team=team)
    summary = indexer.run(wait_vectors=not dry_run)
    project = ProjectStore(settings.cache_dir, tree_dir)
    project.open()
    try:
        files = [
            PublishedFile(path, record.sha256, record.chunks)
            for path, record in sorted(project.manifest_records().items())
            if record.chunks
        ]
        keys = sorted(project.chunk_vector_keys())
        stored = store.stored_checks(fingerprint, keys) if store.exists() else {}
        new = [k for k in keys if k not in stored]
        per_vector = identity.dimension * 4 + 32 + 16
        if dry_run:
            return _planned(
                settings,
                facts,
                project,
                keys=keys,
                new=new,
                files=files,
                summary=summary,
                started=started,
                per_vector=per_vector,
                local_changes=local_changes,
                untracked=untracked,
                refused=refused,
            )
        pending = project.count_pending_chunks()
        if pending:
            raise IndexingError(
                f"{pending} chunks of {facts.slug} at {facts.head[:12]} have no vector (see the errors above): "
                "nothing was published; run `lgrep publish` again"
            )
        checks = dict(stored)
        for start in range(0, len(new), UPLOAD_BATCH):
            part = new[start : start + UPLOAD_BATCH]
            got_keys, matrix = project.load_vectors(set(part))
            if len(got_keys) != len(part):
                raise StorageError(f"the index of {facts.slug}'s tree lost vectors while publishing: run it again")
            checks.update(zip(got_keys, store.add_vectors(fingerprint, got_keys, matrix), strict=True))
            if progress is not None:
                progress(IndexProgress(IndexPhase.SEED, chunks_done=start + len(part), chunks_total=len(new)))
        info = PublicationInfo(
            commit=facts.head,
            repository=facts.slug,
            root_commit=facts.root_commit,
            created=time.time(),
            identity=identity.as_dict(),
            fingerprint=fingerprint,
            rules={
                "max_file_bytes": settings.index.max_file_bytes,
                "ignore_patterns": list(settings.index.ignore_patterns),
            },
            files=len(files),
            chunks=project.count_chunks(),
            vectors=len(keys),
            vector_bytes=len(keys) * identity.dimension * 4,
            lgrep_version=_lgrep_version(),
        )
        store.add_publication(info, keys, [checks[k] for k in keys], files)
        pruned, _ = store.prune(settings.team.keep, timedelta(minutes=settings.team.grace_minutes))
    finally:
        project.close()
    seeded = summary.seed.vectors_copied if summary.seed is not None else 0
    return PublishSummary(
        store=store.shown,
        repository=facts.slug,
        commit=facts.head,
        dry_run=False,
        files=len(files),
        chunks=summary.chunks_total,
        vectors=len(keys),
        vectors_uploaded=len(new),
        bytes_uploaded=len(new) * per_vector,
        vectors_embedded=summary.vectors_embedded,
        vectors_from_store=seeded,
        local_changes=local_changes,
        untracked=untracked,
        pruned=pruned,
        seconds=time.monotonic() - started,
        skipped_paths=refused,
        index=summary,
    )


def _planned(
    settings: LgrepSettings,
    facts: RepoFacts,
    project: ProjectStore,
    *,
    keys: list[str],
    new: list[str],
    files: list[PublishedFile],
    summary: IndexSummary,
    started: float,
    per_vector: int,
    local_changes: int,
    untracked: int,
    refused: int,
) -> PublishSummary:
    """What a publish would upload: per file, its chunks and the vectors the store lacks."""
    fresh = set(new)
    counts: dict[str, list[int]] = {}
    seen: dict[str, set[str]] = {}
    for batch in project.iter_chunk_rows(["path", "vec_key"]):
        for path, key in zip(batch["path"], batch["vec_key"], strict=True):
            entry = counts.setdefault(path, [0, 0])
            entry[0] += 1
            mine = seen.setdefault(path, set())
            if key in fresh and key not in mine:
                mine.add(key)
                entry[1] += 1
    planned = tuple(PlannedFile(path, c[0], c[1]) for path, c in sorted(counts.items()))
    return PublishSummary(
        store=team_store_for(settings, facts.slug).shown,
        repository=facts.slug,
        commit=facts.head,
        dry_run=True,
        files=len(files),
        chunks=summary.chunks_total or project.count_chunks(),
        vectors=len(keys),
        vectors_uploaded=len(new),
        bytes_uploaded=len(new) * per_vector,
        vectors_embedded=0,
        vectors_from_store=0,
        local_changes=local_changes,
        untracked=untracked,
        pruned=0,
        seconds=time.monotonic() - started,
        skipped_paths=refused,
        planned=planned,
        index=summary,
    )
