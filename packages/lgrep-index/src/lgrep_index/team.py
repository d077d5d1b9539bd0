"""Seeding from the team store: the vectors a publication holds for this project's chunks (ADR 0034).

A member's index is always built from the member's own files: the walk, the chunks and BM25 are
local. What the team store saves is the expensive part, the vectors. Before the vector phase embeds
the chunks that have none, `TeamSource.fill` finds the publication whose commit is the working
tree's HEAD or its nearest ancestor, and copies the vectors of those chunks whose content key the
publication lists, each checked against the publication's checksum manifest. What is left (the
commits since the publication, uncommitted and untracked files) is embedded by the local model as
any change is. So a hit can never come from text the member's tree does not hold, and a member's
local changes never leave the machine.

Everything that can go wrong here (no store, an unreachable one, another model, no publication in
this clone's history, damaged checksums) is a `TeamRefusal` with one message; the indexer logs it
and builds locally.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from lgrep_core.domain.errors import LgrepError, NotFoundError
from lgrep_core.domain.models import SeedReport
from lgrep_core.settings.config import LgrepSettings
from lgrep_core.storage.schema import IndexIdentity
from lgrep_core.storage.store import ProjectStore
from lgrep_core.storage.team import (
    Manifest,
    PublicationInfo,
    TeamRefusal,
    TeamStore,
    display_location,
    identity_fingerprint,
)

from lgrep_index.git import GitRepo

__all__ = ["MIN_PENDING", "RepoFacts", "TeamSource", "choose_publication", "repository_slug", "team_store_for"]

log = logging.getLogger(__name__)

# How far back in HEAD's history a publication is looked for.
HISTORY_DEPTH = 100_000
# An incremental run asks the store only when it has at least this many chunks to embed (a pull, a
# branch switch): a save in an editor should not wait for a round trip to object storage.
MIN_PENDING = 64

_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(.+)$")  # git@github.com:owner/name.git


def repository_slug(url: str) -> str:
    """A repository's name in the store from a remote URL: `git@github.com:Owner/Name.git` and
    `https://user:token@github.com/Owner/Name` are both `github.com/Owner/Name`; a local path's is its
    last folder. Never a credential: the user part of a URL is dropped."""
    url = url.strip()
    host = ""
    path = url
    if "://" in url:
        rest = url.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        authority = authority.rpartition("@")[2]
        name, colon, port = authority.rpartition(":")
        host = name if colon and port.isdigit() else authority
        if url.startswith("file://"):
            host = ""
    else:
        found = _SCP_LIKE.match(url)
        if found and not url.startswith(("/", ".")):
            host, path = found.group(1), found.group(2)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if parts:
        parts[-1] = parts[-1].removesuffix(".git")
    if not host:
        parts = parts[-1:]
    cleaned = [re.sub(r"[^A-Za-z0-9._-]", "_", p) for p in ([host.lower()] if host else []) + parts]
    return "/".join(p for p in cleaned if p.strip("._")) or "repository"


@dataclass(frozen=True, slots=True)
class RepoFacts:
    top: Path  # the repository's top folder
    head: str  # HEAD's commit ("" for a repository without commits)
    slug: str  # its name in the store
    root_commit: str  # its first commit ("" in a shallow clone)
    shallow: bool
    prefix: str  # the project root's path inside the repository ("" at the top), with a trailing "/"

    @classmethod
    def read(cls, root: Path, repository: str = "") -> RepoFacts:
        """Raises NotFoundError when `root` is not in a git repository."""
        repo = GitRepo(root)
        top = Path(repo._run("rev-parse", "--show-toplevel", cwd=root).decode("utf-8", "surrogateescape").strip())
        try:
            head = repo._run("rev-parse", "--verify", "HEAD^{commit}", cwd=root, what="no commit").decode().strip()
        except NotFoundError:
            head = ""
        shallow = repo._run("rev-parse", "--is-shallow-repository", cwd=root).decode().strip() == "true"
        roots = ""
        if head and not shallow:
            roots = repo._run("rev-list", "--max-parents=0", "HEAD", cwd=root).decode().split()
            roots = sorted(roots)[0] if roots else ""
        slug = repository
        if not slug:
            try:
                url = repo._run("config", "--get", "remote.origin.url", cwd=root, what="no origin").decode(
                    "utf-8", "replace"
                )
                slug = repository_slug(url)
            except NotFoundError:
                slug = repository_slug(top.name)
        try:
            inside = root.resolve().relative_to(top.resolve()).as_posix()
        except ValueError:
            inside = "."
        prefix = "" if inside in ("", ".") else inside + "/"
        return cls(top, head, slug, roots if isinstance(roots, str) else "", shallow, prefix)

    def history(self, depth: int = HISTORY_DEPTH) -> dict[str, int]:
        """HEAD and its ancestors, each with its distance (in `rev-list` order) from HEAD."""
        if not self.head:
            return {}
        out = GitRepo(self.top)._run("rev-list", f"--max-count={depth}", "HEAD", cwd=self.top)
        return {sha: i for i, sha in enumerate(out.decode("ascii", "replace").split())}


def team_store_for(settings: LgrepSettings, slug: str) -> TeamStore:
    base = settings.team.store.removeprefix("file://")
    return TeamStore(f"{base.rstrip('/')}/{slug}", storage_options=settings.team.storage_options)


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{int(seconds)} s"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def choose_publication(store: TeamStore, facts: RepoFacts, identity: IndexIdentity) -> tuple[PublicationInfo, Manifest]:
    """The publication to seed from: built with this model and chunker, its commit HEAD or the
    nearest ancestor of it. Raises TeamRefusal naming why there is none."""
    publications = store.publications()
    name = f"{facts.slug} in {store.shown}"
    if not publications:
        if store.other_schemas():
            raise TeamRefusal(
                "other_model", f"the publications of {name} were written by another version of lgrep: update lgrep"
            )
        raise TeamRefusal("empty", f"nothing is published for {name} yet: run `lgrep publish` (in CI) first")
    history = facts.history()
    in_history = [p for p in publications if p.commit in history]
    if not in_history:
        theirs = {p.root_commit for p in publications if p.root_commit}
        if facts.root_commit and theirs and facts.root_commit not in theirs:
            raise TeamRefusal(
                "other_repository",
                f"the publications of {name} are of another repository (its first commit is not this one's): "
                "set team.repository to this repository's name",
            )
        newest = publications[0]
        hint = (
            "this clone is shallow: fetch more history (`git fetch --unshallow`)"
            if facts.shallow
            else ("fetch (`git fetch`) or wait for CI to publish a commit of this branch")
        )
        raise TeamRefusal(
            "not_in_history",
            f"none of the {len(publications)} publications of {name} is HEAD or an ancestor of it "
            f"(the newest is {newest.short}, {_age(time.time() - newest.created)} old): {hint}",
        )
    fingerprint = identity_fingerprint(identity)
    fitting = [p for p in in_history if p.fingerprint == fingerprint]
    if not fitting:
        other = in_history[0]
        try:
            was = IndexIdentity(**other.identity).describe()
        except TypeError:
            was = "another model"
        raise TeamRefusal(
            "other_model",
            f"publication {other.short} of {name} was built with {was}; this machine uses "
            f"{identity.describe()}: use the same embedding and chunking settings as the publisher",
        )
    best = min(fitting, key=lambda p: (history[p.commit], -p.created))
    return best, store.manifest(best)


class TeamSource:
    """The team store as a source of vectors for one project's index (see the module docstring)."""

    def __init__(self, settings: LgrepSettings, root: Path, identity: IndexIdentity) -> None:
        self.settings = settings
        self.root = root
        self.identity = identity
        self.last: SeedReport | None = None
        self._facts: RepoFacts | None = None
        self._chosen: tuple[TeamStore, PublicationInfo, Manifest] | None = None

    @classmethod
    def configured(cls, settings: LgrepSettings, root: Path, identity: IndexIdentity) -> TeamSource | None:
        return cls(settings, root, identity) if settings.team.store and settings.team.auto_seed else None

    def _choose(self) -> tuple[TeamStore, PublicationInfo, Manifest]:
        if self._chosen is None:
            try:
                self._facts = RepoFacts.read(self.root, self.settings.team.repository)
            except NotFoundError as exc:
                raise TeamRefusal("not_git", f"{self.root} is not in a git repository ({exc.message})") from None
            store = team_store_for(self.settings, self._facts.slug)
            publication, manifest = choose_publication(store, self._facts, self.identity)
            store.pin(publication.fingerprint)
            self._chosen = (store, publication, manifest)
        return self._chosen

    def fill(
        self,
        project: ProjectStore,
        pending: Iterable[str],
        on_copied: Callable[[int, int], None] = lambda _done, _total: None,
    ) -> SeedReport:
        """Copy the vectors the publication holds for `pending` keys into `project` (its writer).
        Never raises for the store's sake: a refusal is logged and returned (the caller embeds)."""
        shown = display_location(self.settings.team.store)
        copied = 0
        store: TeamStore | None = None
        publication: PublicationInfo | None = None
        try:
            store, publication, manifest = self._choose()
            wanted = manifest.contains(sorted(pending))
            on_copied(0, len(wanted))
            for keys, vectors in store.read_vectors(publication, manifest, wanted):
                project.add_vectors(keys, vectors)
                copied += len(keys)
                on_copied(copied, len(wanted))
            outcome = SeedReport(
                store=shown,
                repository=publication.repository,
                commit=publication.commit,
                published_at=publication.created,
                vectors_copied=copied,
                bytes_copied=store.bytes_read,
                files_overlaid=self.overlaid(project, manifest),
            )
            log.info(
                "seeded %s from %s at %s: %d vectors (%d bytes read)",
                self.root,
                shown,
                publication.short,
                copied,
                store.bytes_read,
            )
        except TeamRefusal as exc:
            log.warning("not seeding %s from the team store: %s; building locally", self.root, exc.message)
            outcome = SeedReport(
                store=shown,
                repository=publication.repository if publication else "",
                commit=publication.commit if publication else "",
                published_at=publication.created if publication else 0.0,
                vectors_copied=copied,
                bytes_copied=store.bytes_read if store else 0,
                reason=exc.reason,
                refused=exc.message,
            )
        except LgrepError:
            raise  # the project's own store failed (disk full, damage): the run reports it
        self.last = outcome
        return outcome

    def overlaid(self, project: ProjectStore, manifest: Manifest) -> int:
        """Files of the project whose content differs from the publication's (changed, added, deleted)."""
        prefix = self._facts.prefix if self._facts else ""
        published = {f.path[len(prefix) :]: f.sha256 for f in manifest.files if f.path.startswith(prefix)}
        local = {path: record.sha256 for path, record in project.manifest_records().items() if record.chunks}
        differ = sum(1 for path, digest in local.items() if published.get(path) != digest)
        return differ + sum(1 for path in published if path not in local)
