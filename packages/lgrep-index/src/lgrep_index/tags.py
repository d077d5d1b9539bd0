"""Index every release of a repository: git tags as component@version, each distinct file once.

`TagMapping` turns a tag name into (component, version) by rules (configurable, RE2 so a
repository's own rules cannot hang the indexer). `TagIndexer.run` reads tags, trees and blobs with
git plumbing (lgrep_index.git: no checkout), and writes the versions index (ADR 0015):

  for each new or moved tag, in component and version order:
    list its tree -> keep the files the walk's rules would index (TreeRules), inside the component's scope
    -> each file content (blob + file name) not stored yet is read once, redacted, chunked, stored
    -> the tag row names its (path, blob) entries; published in groups, after what they name
  then embed every chunk whose embedding key has no vector (each key once)
  then drop tags deleted from the repository and the content only they held

A re-run reads only the tags it has not indexed (or that now point elsewhere).
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import re2
from lgrep_core.domain.errors import ConfigError, IndexingError
from lgrep_core.domain.models import Chunk, IndexPhase, IndexProgress, TagsSummary, embedding_text
from lgrep_core.domain.secrets import redact_path, sanitize
from lgrep_core.domain.text import decode_text
from lgrep_core.domain.versions.semver import Version
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.settings.config import LgrepSettings, VersionsSettings
from lgrep_core.storage.layout import project_dir
from lgrep_core.storage.store import release_free_memory, versions_lock
from lgrep_core.storage.versions import BlobRow, EntryRow, TagRow, VersionStore, blob_key, repository_name

from lgrep_index.chunker import MAX_LINE_CHARS, detect_language, overflow_text
from lgrep_index.embedding_stage import EmbeddingStage, TextBatch
from lgrep_index.git import BlobReader, GitRepo, TagRef, TreeEntry
from lgrep_index.pipeline import chunk_text, identity_for, vector_key, walk_options
from lgrep_index.plan import estimate_tokens
from lgrep_index.walker import SKIP_SECRET, SKIP_TOO_LARGE, SKIP_UNREADABLE, TreeRules

__all__ = ["BUILTIN_TAG_RULES", "SpendEstimate", "SpendRefused", "TagIndexer", "TagMapping"]

log = logging.getLogger(__name__)

# `agent-v0.7.3` -> (agent, 0.7.3); `mcp-server-v0.1.15` -> (mcp-server, 0.1.15); `@scope/pkg@1.2.0`;
# `v0.1.13` and `0.1.13` -> (the root component, 0.1.13). Tried after the configured rules.
BUILTIN_TAG_RULES = (
    r"^(?P<component>.+?)[-_/@]v?(?P<version>[0-9]+(?:\.[0-9]+){0,3}(?:[-+.]?[0-9A-Za-z][0-9A-Za-z.+-]*)?)$",
    r"^[vV]?(?P<version>[0-9]+(?:\.[0-9]+){0,3}(?:[-+.]?[0-9A-Za-z][0-9A-Za-z.+-]*)?)$",
)
# New blobs per commit of the blobs and chunks tables, and tags per published group.
BLOBS_PER_COMMIT = 400
TAGS_PER_COMMIT = 64
# ... or this much new text, whichever comes first: a commit holds its rows twice (Python, Arrow).
BYTES_PER_COMMIT = 16 * 1024 * 1024
_LISTED_UNPARSED = 20


class TagMapping:
    """Tag name -> (component, version). Rules are RE2 patterns with a `version` group and an
    optional `component` group; the first that matches and yields a parseable version wins."""

    def __init__(self, settings: VersionsSettings, root_component: str) -> None:
        self.root_component = settings.root_component or root_component
        self._rules: list[re2._Regexp] = []
        options = re2.Options()
        options.log_errors = False
        for source, text in [
            *(("versions.tag_rules", r) for r in settings.tag_rules),
            *(("", r) for r in BUILTIN_TAG_RULES),
        ]:
            try:
                rule = re2.compile(text, options)
            except re2.error as exc:
                raise ConfigError(f"{source}: {text!r} is not a valid pattern: {exc}") from None
            if "version" not in rule.groupindex:
                raise ConfigError(f"{source}: {text!r} has no (?P<version>...) group")
            self._rules.append(rule)
        self._scopes = {c: tuple(p.strip("/") for p in paths if p.strip("/")) for c, paths in settings.scopes.items()}

    def parse(self, tag: str) -> tuple[str, str] | None:
        for rule in self._rules:
            match = rule.match(tag)
            if match is None:
                continue
            version = str(match.group("version") or "")
            named = match.group("component") if "component" in rule.groupindex else None
            component = str(named) if named else self.root_component
            if version and Version.parse(version) is not None:
                return component, version
        return None

    def in_scope(self, component: str) -> Callable[[str], bool]:
        """Whether a path belongs to the component: under one of its scope folders (or matching one
        of its globs); every path when it has no scope."""
        scope = self._scopes.get(component)
        if not scope:
            return lambda _path: True
        folders = tuple(s + "/" for s in scope if not any(ch in s for ch in "*?["))
        globs = tuple(s for s in scope if any(ch in s for ch in "*?["))

        def inside(path: str) -> bool:
            return path.startswith(folders) or any(fnmatch.fnmatchcase(path, g) for g in globs)

        return inside


@dataclass(frozen=True, slots=True)
class SpendEstimate:
    """What embedding a run's new chunks with a cloud provider would send and cost."""

    provider: str
    model: str
    chunks: int
    tokens: int
    cost_usd: float | None  # None: no price for the model


class SpendRefused(IndexingError):
    """The run's spend was not approved: nothing was sent."""


@dataclass
class _Pending:
    """What a group of tags adds, committed together (blobs and chunks, entries, then the tags)."""

    blobs: list[BlobRow] = field(default_factory=list[BlobRow])
    chunks: dict[str, list[object]] = field(default_factory=dict[str, list[object]])
    entries: list[EntryRow] = field(default_factory=list[EntryRow])
    tags: list[TagRow] = field(default_factory=list[TagRow])
    text_bytes: int = 0  # of the blobs' texts: each is held again by its chunks

    def full(self) -> bool:
        return len(self.blobs) >= BLOBS_PER_COMMIT or self.text_bytes >= BYTES_PER_COMMIT


class TagIndexer:
    """Indexes the tags of one repository into its versions index. Holds the repository's versions
    write lock while it runs (one writer per index; on object storage, one writer job)."""

    def __init__(
        self,
        settings: LgrepSettings,
        root: Path,
        embedder: EmbeddingProvider,
        store: VersionStore,
        *,
        tag_patterns: Sequence[str] = (),
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: threading.Event | None = None,
        approve: Callable[[SpendEstimate], bool] | None = None,
    ) -> None:
        """`approve`, with a cloud provider: asked before anything is sent, with what embedding
        the run's new chunks would cost; False stops the run there (the tags stay searchable by
        BM25 and names, and the next run asks again)."""
        self.settings = settings
        self._approve = approve
        self.root = root
        self.embedder = embedder
        self.store = store
        self.identity = identity_for(settings, embedder)
        self.mapping = TagMapping(settings.versions, repository_name(root))
        self.tag_patterns = tuple(tag_patterns)
        self._progress = progress or (lambda _p: None)
        self._cancel = cancel
        self.embedding = EmbeddingStage(
            settings, root, project_dir(settings.cache_dir, root), embedder, dimension=self.identity.dimension
        )
        self._tally: Counter[str] = Counter()
        self._skipped: Counter[str] = Counter()

    def run(self, *, force: bool = False, lock_timeout_s: float | None = None) -> TagsSummary:
        """Raises:
        NotFoundError: the root is not a git repository.
        IndexBusyError: another process is indexing this repository's tags.
        IndexMismatchError: the versions index was built with another model or chunker (force).
        IndexingError, EmbeddingError, StorageError: as `lgrep index`.
        """
        started = time.monotonic()
        repo = GitRepo(self.root)
        lock = versions_lock(self.settings.cache_dir, self.root)
        timeout = self.settings.index.lock_timeout_s if lock_timeout_s is None else lock_timeout_s
        lock.acquire(timeout, self.root, doing="indexing the tags of")
        try:
            self.store.create_or_check(self.identity, force=force)
            summary = self._run(repo)
        finally:
            lock.release()
        counts = self.store.counts()
        tags = self.store.tags()
        return replace(
            summary,
            skipped=dict(self._skipped),
            tags_total=len(tags),
            tag_file_pairs_total=sum(len(t.entry_ids) for t in tags),
            blobs_total=counts["blobs"],
            chunks_total=counts["chunks"],
            vectors_total=counts["vectors"],
            seconds=time.monotonic() - started,
            store=self.store.location,
        )

    def _check_cancel(self) -> None:
        if self._cancel is not None and self._cancel.is_set():
            raise IndexingError(f"indexing the tags of {self.root} stopped; the next run goes on from here")

    def _run(self, repo: GitRepo) -> TagsSummary:
        self._progress(IndexProgress(IndexPhase.WALK))
        every = repo.tags()
        refs = [r for r in every if self._selected(r.name)]
        stored = {t.tag: t for t in self.store.tags()}
        todo: list[tuple[TagRef, str, str]] = []
        unparsed: list[str] = []
        for ref in refs:
            if not ref.commit:
                log.warning("tag %s points at a %s, not a commit: skipped", ref.name, ref.target_type)
                unparsed.append(ref.name)
                continue
            parsed = self.mapping.parse(ref.name)
            if parsed is None:
                unparsed.append(ref.name)
                continue
            old = stored.get(ref.name)
            if old is None or old.commit != ref.commit or (old.component, old.version) != parsed:
                todo.append((ref, *parsed))
        if unparsed:
            shown = ", ".join(unparsed[:_LISTED_UNPARSED]) + (" ..." if len(unparsed) > _LISTED_UNPARSED else "")
            log.warning(
                "%d tags do not map to component@version and were skipped: %s (versions.tag_rules adds rules)",
                len(unparsed),
                shown,
            )
        # Neighbouring versions of a component share most files: index them in order.
        todo.sort(key=lambda t: (t[1], *_order(t[2])))
        in_repo = {r.name for r in every}
        removed = sorted(t for t in stored if t not in in_repo)

        # Deleted tags leave results at once; what only they held goes once the new tags are in (a
        # new tag may hold it too), before embedding, so nothing is embedded for content no tag holds.
        if removed:
            self.store.delete_tags(removed)
        self._index_tags(repo, todo)
        self._check_cancel()
        if removed or any(t[0].name in stored for t in todo):
            dropped = self.store.collect_garbage()
            log.info("dropped %d entries and %d blobs no tag holds any more", dropped["entries"], dropped["blobs"])
        # Phase 1's Arrow buffers and LanceDB's caches are not needed to embed: let them go before
        # the model's batches are sized against the memory budget.
        self.store.close()
        release_free_memory()
        # Compacting rewrites a table (~100 MB over the run's working set for the chunks of every tag
        # of trycua/cua): the tables the vectors do not touch are compacted now, before the model's
        # session and its batches are in memory, the vectors' own table after them (peak 691 MB when
        # all were compacted at the end, docs/benchmarks.md).
        self.store.optimize([name for name in self.store.tables if name != "vectors"])
        release_free_memory()
        embedded = self._embed()
        self.store.optimize(["vectors"])
        self._progress(IndexProgress(IndexPhase.DONE, len(todo), len(todo)))
        return TagsSummary(
            root=str(self.root),
            tags_seen=len(refs),
            tags_indexed=len(todo),
            tags_unchanged=len(refs) - len(todo) - len(unparsed),
            tags_removed=len(removed),
            unparsed=tuple(unparsed),
            tag_file_pairs=self._tally["pairs"],
            blobs_read=self._tally["blobs"],
            chunks_written=self._tally["chunks"],
            vectors_embedded=embedded,
        )

    def _selected(self, tag: str) -> bool:
        return not self.tag_patterns or any(fnmatch.fnmatchcase(tag, p) for p in self.tag_patterns)

    # ------------------------------------------------------------------------------- phase 1

    def _index_tags(self, repo: GitRepo, todo: list[tuple[TagRef, str, str]]) -> None:
        # blob key -> (skip reason, language, lines) of every stored blob, and (path, blob key) -> entry id
        dropped = self.store.drop_unfinished()
        if dropped:
            log.info("dropped the chunks of %d contents an interrupted run left unfinished", dropped)
        known: dict[str, tuple[str, str, int]] = self.store.blob_infos()
        entry_of = {(e.path, e.blob_key): i for i, e in self.store.entries().items()}
        next_id = max(entry_of.values(), default=-1) + 1
        options = walk_options(self.settings)
        pending = _Pending()
        files_done = 0
        with repo.blobs() as reader:
            for n, (ref, component, version) in enumerate(todo):
                self._check_cancel()
                tree = repo.tree(ref.commit)
                inside = self.mapping.in_scope(component)
                tree = [e for e in tree if inside(e.path)]
                sha_of = {e.path: e.sha for e in tree}
                size_of = {e.path: e.size for e in tree}

                def read_ignore(
                    path: str,
                    limit: int,
                    tag: str = ref.name,
                    sha_of: dict[str, str] = sha_of,
                    size_of: dict[str, int] = size_of,
                ) -> bytes | None:
                    if size_of[path] > limit:
                        log.warning(
                            "%s in tag %s is %d bytes, over the %d an ignore file may have: not read",
                            path,
                            tag,
                            size_of[path],
                            limit,
                        )
                        return None
                    return reader.read(sha_of[path], limit)

                rules = TreeRules(sha_of, options, read_ignore)
                ids: list[int] = []
                for entry in tree:
                    verdict = rules.judge(entry.path, size=entry.size, is_symlink=entry.is_symlink)
                    if verdict is None:
                        continue
                    if verdict:
                        self._skipped[verdict] += 1
                        continue
                    key = blob_key(entry.sha, entry.path)
                    if key not in known:
                        known[key] = self._read_blob(reader, rules, entry, key, pending)
                        if pending.full():
                            # One tag can bring a whole tree of new files (33 MB of text in one group of
                            # trycua/cua): its rows go in bounded commits too, before the tag is named.
                            self._commit(pending)
                            pending = _Pending()
                    skip, language, lines = known[key]
                    if skip:
                        self._skipped[skip] += 1
                        continue
                    entry_id = entry_of.get((entry.path, key))
                    if entry_id is None:
                        entry_id = entry_of[(entry.path, key)] = next_id
                        next_id += 1
                        pending.entries.append(EntryRow(entry_id, entry.path, key, language, lines, entry.size))
                    ids.append(entry_id)
                self._tally["pairs"] += len(ids)
                pending.tags.append(TagRow(ref.name, ref.commit, component, version, tuple(ids), time.time()))
                files_done += len(ids)
                if len(pending.tags) >= TAGS_PER_COMMIT:
                    self._commit(pending)
                    pending = _Pending()
                self._progress(IndexProgress(IndexPhase.CHUNK, n + 1, len(todo), self._tally["chunks"], 0))
        self._commit(pending)

    def _read_blob(
        self, reader: BlobReader, rules: TreeRules, entry: TreeEntry, key: str, pending: _Pending
    ) -> tuple[str, str, int]:
        """Read, judge, redact and chunk one new content; queue its rows. Returns (skip, language, lines)."""
        language = detect_language(entry.path) or "text"
        data = reader.read(entry.sha, self.settings.index.max_file_bytes)
        skip = ""
        text = ""
        if data is None:
            skip = SKIP_TOO_LARGE if entry.size > self.settings.index.max_file_bytes else SKIP_UNREADABLE
        else:
            skip = rules.judge_content(entry.path, data)
        if not skip:
            try:
                clean = sanitize(decode_text(data or b"")).text
            except Exception:  # a scanner bug fails closed: the file is withheld
                log.exception("scanning %s for secrets failed; not indexing it", entry.path)
                clean = None
            if clean is None:
                skip = SKIP_SECRET
            else:
                text = clean
        self._tally["blobs"] += 1
        chunks: list[Chunk] = []
        if not skip:
            chunks = chunk_text(self.settings, entry.path, text, structure=False)  # the versions store keeps none
            if chunks:
                language = chunks[0].language
            self._append_chunks(pending.chunks, key, entry.path, chunks, text)
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        content_type = str(chunks[0].content_type) if chunks else ""
        pending.blobs.append(BlobRow(key, entry.path, language, content_type, lines, text, skip))
        pending.text_bytes += len(text)
        return skip, language, lines

    def _append_chunks(
        self, columns: dict[str, list[object]], key: str, path: str, chunks: list[Chunk], text: str
    ) -> None:
        lines: list[str] | None = text.split("\n")
        if not any(len(line) > MAX_LINE_CHARS for line in lines):
            lines = None
        for chunk in chunks:
            row = {
                "blob_key": key,
                "path": path,
                "language": chunk.language,
                "content_type": str(chunk.content_type),
                "kind": str(chunk.kind),
                "symbol": chunk.symbol,
                "scope": list(chunk.scope),
                "signature": chunk.signature,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "content": chunk.content,
                "search_text": overflow_text(lines, chunk) if lines is not None else "",
                "vec_key": vector_key(self.identity, chunk),
            }
            for name, value in row.items():
                columns.setdefault(name, []).append(value)
        self._tally["chunks"] += len(chunks)

    def _commit(self, pending: _Pending) -> None:
        """Blobs and chunks, entries, then the tags that name them: a reader never sees a tag
        before what it holds."""
        self.store.add_blobs(pending.blobs, pending.chunks)
        self.store.add_entries(pending.entries)
        self.store.put_tags(pending.tags)
        # Each commit's Arrow buffers, the tables' caches of fragments written so far, and the heap
        # its rows used: the pool, LanceDB and malloc would keep them all for the rest of the run.
        self.store.close()
        release_free_memory()

    # ------------------------------------------------------------------------------- phase 2

    def _estimate(self, pending: list[str]) -> SpendEstimate:
        """What sending `pending` would cost (the texts are read, nothing is sent)."""
        texts = (
            (k, p, embedding_text(redact_path(p), scope, content))
            for k, p, scope, content in self.store.chunk_texts(pending)
        )
        tokens, withheld, price = estimate_tokens(self.settings, self.embedder, texts)
        return SpendEstimate(
            provider=self.identity.provider,
            model=self.identity.model,
            chunks=len(pending) - withheld,
            tokens=tokens,
            cost_usd=tokens * price / 1e6 if price is not None else None,
        )

    def _embed(self) -> int:
        """Embed each chunk whose key has no vector, each key once. Returns how many were embedded."""
        pending = self.store.pending_vector_keys()
        if (
            self.embedding.remote is not None
            and self._approve is not None
            and pending
            and not self._approve(self._estimate(pending))
        ):
            raise SpendRefused(
                f"nothing was sent to {self.identity.provider}: {len(pending):,} chunks of {self.root}'s tags wait "
                "for vectors (BM25 and names find them meanwhile); `lgrep index --tags --yes` sends them"
            )
        items = self.store.chunk_texts(pending)
        texts = ((key, path, embedding_text(redact_path(path), scope, content)) for key, path, scope, content in items)
        embedded = 0
        self._progress(IndexProgress(IndexPhase.EMBED, chunks_total=len(pending)))
        for batch in self.embedding.batches(texts):
            if batch.full:  # a cancel is honoured before a full batch; the last, smaller one ends the run anyway
                self._check_cancel()
            embedded += self._embed_batch(batch)
            if batch.full:
                self._progress(IndexProgress(IndexPhase.EMBED, chunks_done=embedded, chunks_total=len(pending)))
        return embedded

    def _embed_batch(self, batch: TextBatch) -> int:
        done = self.embedding.embed(batch)
        self.store.add_vectors(done.keys, done.vectors)
        if done.failure is not None:
            raise done.failure
        return len(done.keys)


def _order(version: str) -> tuple[object, ...]:
    parsed = Version.parse(version)
    return (parsed.sort_key,) if parsed is not None else ((),)
