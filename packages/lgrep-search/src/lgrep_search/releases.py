"""Searches and reads at a released version: component@version from a repository's versions index.

A version's snapshot is an ordinary `Corpus` built from the chunks of the blobs its tag lists, each
under the path the tag gives it, with their stored vectors; search, file lists and symbol lookups
then run the working tree's code unchanged. The last few versions asked for stay in memory
(`versions.cached_versions`), so repeated queries cost what a working-tree query costs. File
contents come from the index itself (no checkout is needed, and none is read), so a reader on
another machine serves them from object storage as well.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import replace

import numpy as np
from lgrep_core.domain.errors import InvalidRequestError, NotFoundError
from lgrep_core.domain.models import (
    ComponentInfo,
    FileList,
    FileSlice,
    GetFileRequest,
    ListFilesRequest,
    Release,
    SearchRequest,
    SearchResponse,
)
from lgrep_core.domain.versions.semver import Version, VersionRange, looks_like_range, newest
from lgrep_core.embeddings.base import EmbeddingProvider
from lgrep_core.storage.versions import EntryRow, TagRow, VersionStore

from . import reads
from .corpus import COLUMNS, Corpus
from .searcher import Searcher

__all__ = ["ReleaseIndex"]

log = logging.getLogger(__name__)

_LISTED = 30  # valid values an error lists


class ReleaseIndex:
    """One repository's versions index, for any number of concurrent readers."""

    def __init__(self, store: VersionStore, embedder: EmbeddingProvider | None, *, cached_versions: int = 4) -> None:
        self.store = store
        self.embedder = embedder
        self._cached = cached_versions
        self._lock = threading.Lock()
        self._corpora: OrderedDict[tuple[object, ...], Corpus] = OrderedDict()
        self._entries: tuple[int, dict[int, EntryRow]] | None = None
        self._tag_rows: tuple[int, list[tuple[TagRow, Version]]] | None = None
        self.last_used = time.monotonic()

    # --------------------------------------------------------------------------------- discovery

    def _tags(self) -> list[tuple[TagRow, Version]]:
        """Every tag with its parsed version, read again only when the tags table moved."""
        version = self.store.table_version("tags")
        cached = self._tag_rows
        if cached is None or cached[0] != version:
            rows = [(tag, parsed) for tag in self.store.tags() if (parsed := Version.parse(tag.version)) is not None]
            cached = self._tag_rows = (version, rows)
        return cached[1]

    def components(self) -> list[ComponentInfo]:
        by: dict[str, list[Version]] = {}
        for tag, version in self._tags():
            by.setdefault(tag.component, []).append(version)
        return [
            ComponentInfo(name, len(versions), str(newest(versions) or "")) for name, versions in sorted(by.items())
        ]

    def _of(self, component: str) -> list[tuple[TagRow, Version]]:
        """A component's tags, newest version first. Raises NotFoundError listing the components."""
        tags = sorted(
            ((t, v) for t, v in self._tags() if t.component == component), key=lambda tv: tv[1].sort_key, reverse=True
        )
        if not tags:
            raise self._unknown_component(component)
        return tags

    def releases(self, component: str) -> list[Release]:
        """The versions of a component, newest first (semver order)."""
        return [_release(t, v) for t, v in self._of(component)]

    def resolve(self, component: str, spec: str) -> tuple[Release, TagRow]:
        """The release `spec` names: "" or `latest` (the newest release; a prerelease only when
        there is nothing else), an exact version, or a semver range (its newest match). Raises
        NotFoundError listing the valid values."""
        tags = self._of(component)
        spec = spec.strip()
        chosen: tuple[TagRow, Version] | None = None
        if spec in ("", "latest"):
            chosen = next(((t, v) for t, v in tags if not v.is_prerelease), tags[0])
        elif exact := [(t, v) for t, v in tags if t.version in (spec, spec.removeprefix("v"))]:
            chosen = exact[0]
        elif looks_like_range(spec) or Version.parse(spec) is not None:
            try:
                wanted = VersionRange.parse(spec)
            except ValueError as exc:
                raise InvalidRequestError(f"version {spec!r}: {exc}") from None
            chosen = next(((t, v) for t, v in tags if wanted.matches(v)), None)
        if chosen is None:
            versions = [t.version for t, _ in tags]
            shown = ", ".join(versions[:_LISTED]) + (
                f" and {len(versions) - _LISTED} more" if len(versions) > _LISTED else ""
            )
            raise NotFoundError(
                f"{component} has no version {spec!r}; its versions, newest first: {shown} "
                "(or `latest`, or a range such as ^1.2)"
            )
        return _release(*chosen), chosen[0]

    def _unknown_component(self, component: str) -> NotFoundError:
        names = [c.name for c in self.components()]
        if not names:
            return NotFoundError(f"no release versions are indexed for {self.store.label}: run `lgrep index --tags`")
        shown = ", ".join(names[:_LISTED]) + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")
        return NotFoundError(f"no component {component!r} in {self.store.label}; its components: {shown}")

    # ------------------------------------------------------------------------------- snapshots

    def _all_entries(self) -> dict[int, EntryRow]:
        version = self.store.table_version("entries")
        cached = self._entries
        if cached is None or cached[0] != version:
            cached = self._entries = (version, self.store.entries())
        return cached[1]

    def corpus(self, tag: TagRow) -> Corpus:
        """The snapshot of one tag: built on first use, then kept among the last few used. A tag's
        files never change once it is published (a moved tag is a new commit); its vectors may
        arrive later, so a snapshot is rebuilt when the vectors table moves."""
        key = (tag.tag, tag.commit, self.store.table_version("vectors"))
        with self._lock:
            self.last_used = time.monotonic()
            found = self._corpora.get(key)
            if found is not None:
                self._corpora.move_to_end(key)
                return found
            for old in [k for k in self._corpora if k[0] == tag.tag]:
                del self._corpora[old]  # an older state of this tag
            corpus = self._build(tag)
            self._corpora[key] = corpus
            while len(self._corpora) > self._cached:
                self._corpora.popitem(last=False)
            return corpus

    def _build(self, tag: TagRow) -> Corpus:
        started = time.perf_counter()
        entries = self._all_entries()
        listed = [entries[i] for i in tag.entry_ids if i in entries]
        if len(listed) < len(tag.entry_ids):
            log.warning(
                "%s: %d files of tag %s are missing from the index",
                self.store.label,
                len(tag.entry_ids) - len(listed),
                tag.tag,
            )
        paths_of: dict[str, list[str]] = {}
        for entry in listed:
            paths_of.setdefault(entry.blob_key, []).append(entry.path)
        # the versions store keeps no code structure (`refs`): traces and skeletons are of the working tree
        wanted = [c for c in COLUMNS if c not in ("path", "refs")]
        rows = self.store.chunks_of(sorted(paths_of), ["blob_key", *wanted])
        cols: dict[str, list[object]] = {c: [] for c in COLUMNS if c != "refs"}
        for i, key in enumerate(rows["blob_key"]):
            for path in paths_of.get(key, ()):
                cols["path"].append(path)
                for c in wanted:
                    cols[c].append(rows[c][i])
        vec_keys = sorted({k for k in cols["vec_key"] if k})  # type: ignore[misc]
        if vec_keys:
            keys, matrix = self.store.vectors(vec_keys)
        else:
            keys, matrix = [], np.zeros((0, self.store.identity().dimension), np.float32)
        corpus = Corpus.build(cols, keys, matrix)  # type: ignore[arg-type]
        corpus.load_ms = (time.perf_counter() - started) * 1000
        log.info("loaded %s (%d files, %d chunks) in %.0f ms", tag.tag, len(listed), len(corpus), corpus.load_ms)
        return corpus

    def drop(self) -> None:
        with self._lock:
            self._corpora.clear()
            self._entries = None
            self._tag_rows = None

    # ---------------------------------------------------------------------------------- answers

    def search(self, request: SearchRequest) -> SearchResponse:
        release, tag = self.resolve(request.component, request.version)
        loaded = any(k[0] == tag.tag for k in self._corpora)
        corpus = self.corpus(tag)
        plain = replace(request, component="", version="")
        response = Searcher(None, self.embedder, corpus=corpus).search(plain)
        timings = dict(response.timings_ms)
        if not loaded:
            timings["load_ms"] = round(corpus.load_ms, 3)
        return replace(response, release=release, timings_ms=timings)

    def list_files(self, request: ListFilesRequest) -> FileList:
        release, tag = self.resolve(request.component, request.version)
        listed = reads.list_files(
            self.corpus(tag), path_glob=request.path_glob, languages=request.languages, limit=request.limit
        )
        return replace(listed, release=release)

    def get_file(self, request: GetFileRequest) -> FileSlice:
        release, tag = self.resolve(request.component, request.version)
        entries = self._all_entries()
        entry = next((entries[i] for i in tag.entry_ids if i in entries and entries[i].path == request.path), None)
        if entry is None:
            raise NotFoundError(
                f"{request.path} is not in {release.label} (not a file of tag {release.tag}, or one lgrep leaves "
                "out: ignored, binary, too large or a credential); list_files shows its files"
            )
        blob = self.store.blob(entry.blob_key)
        if blob is None or blob.skip:
            raise NotFoundError(f"{request.path} of {release.label} is not in the index")
        content, start, last, total, truncated = reads.slice_lines(
            request.path, blob.content, request.start_line, request.end_line
        )
        return FileSlice(
            path=request.path,
            language=entry.language,
            content=content,
            start_line=start,
            end_line=last,
            total_lines=total,
            truncated=truncated,
            release=release,
        )


def _release(tag: TagRow, version: Version) -> Release:
    return Release(
        component=tag.component,
        version=tag.version,
        tag=tag.tag,
        commit=tag.commit,
        files=len(tag.entry_ids),
        prerelease=version.is_prerelease,
        indexed_at=tag.indexed_at,
    )
