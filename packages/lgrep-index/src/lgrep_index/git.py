"""Reading a repository's tags, trees and blobs with git plumbing: no checkout, no working-tree change.

The repository may be hostile: git runs with the system and global configuration off, no hooks,
no fsmonitor, no pager and no prompts, and no command here runs filters or textconv (cat-file
--batch hands over stored bytes). Paths come back NUL-separated and are shown as the walk shows
file names (lgrep_core.domain.pathnames); nothing here touches the file system with them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lgrep_core.domain.errors import IndexingError, NotFoundError
from lgrep_core.domain.pathnames import display_path

__all__ = ["BlobReader", "GitRepo", "TagRef", "TreeEntry"]

log = logging.getLogger(__name__)

_MODE_FILE = frozenset({"100644", "100755"})
_MODE_SYMLINK = "120000"
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat")


@dataclass(frozen=True, slots=True)
class TagRef:
    name: str
    commit: str  # the commit it points at ("" when it points at something else)
    target_type: str  # what it points at after peeling: commit, tree, blob


@dataclass(frozen=True, slots=True)
class TreeEntry:
    path: str
    sha: str
    size: int
    is_symlink: bool
    raw: str = ""  # the path as git stores it (undecodable bytes as surrogates); `path` is how it is shown


def _git() -> str:
    found = shutil.which("git")
    if found is None:
        raise IndexingError("indexing tags needs git, and no `git` command was found on PATH")
    return found


class GitRepo:
    """A repository (working tree or bare) opened by path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
        if not path.is_dir():
            raise NotFoundError(f"{path} is not a folder")
        out = self._run("rev-parse", "--absolute-git-dir", cwd=path, what=f"{path} is not a git repository")
        self.git_dir = Path(out.decode("utf-8", "surrogateescape").strip())

    def _run(self, *args: str, cwd: Path | None = None, what: str = "", stdin: bytes | None = None) -> bytes:
        command = [_git(), *_SAFE_CONFIG, *args]
        try:
            proc = subprocess.run(
                command if cwd is not None else [command[0], f"--git-dir={self.git_dir}", *command[1:]],
                cwd=cwd,
                env=self._env,
                input=stdin,
                capture_output=True,
                check=False,
                timeout=600,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise IndexingError(f"git {args[0]} failed in {self.path}: {exc}") from None
        if proc.returncode != 0:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            message = what or f"git {args[0]} failed in {self.path}"
            raise (NotFoundError if what else IndexingError)(f"{message}: {detail[-1] if detail else 'no detail'}")
        return proc.stdout

    def tags(self) -> list[TagRef]:
        """Every tag, with the commit it points at (annotated tags peeled, a tag of a tag too)."""
        fmt = "%(refname)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)"
        out = self._run("for-each-ref", f"--format={fmt}", "refs/tags")
        found: list[tuple[str, str, str]] = []  # (name, type, object) after one peel
        for line in out.split(b"\n"):
            if not line:
                continue
            parts = line.decode("utf-8", "surrogateescape").split("\x00")
            if len(parts) != 5:
                continue
            refname, kind, sha, peeled_kind, peeled = parts
            found.append((refname.removeprefix("refs/tags/"), *((peeled_kind, peeled) if peeled_kind else (kind, sha))))
        # `*objecttype` peels one level: a tag of an annotated tag still names a tag there.
        nested = sorted({sha for _, kind, sha in found if kind == "tag"})
        peeled_fully = self._peel(nested) if nested else {}
        refs: list[TagRef] = []
        for name, kind, sha in found:
            target_type, target = peeled_fully.get(sha, ("tag", "")) if kind == "tag" else (kind, sha)
            refs.append(TagRef(name, target if target_type == "commit" else "", target_type))
        return refs

    def _peel(self, tags: list[str]) -> dict[str, tuple[str, str]]:
        """Tag objects -> (type, object) of what they point at through any number of tags."""
        out = self._run(
            "cat-file", "--batch-check=%(objecttype) %(objectname)", stdin="".join(f"{t}^{{}}\n" for t in tags).encode()
        )
        peeled: dict[str, tuple[str, str]] = {}
        for sha, line in zip(tags, out.decode("ascii", "replace").splitlines(), strict=False):
            kind, _, target = line.partition(" ")
            if target and not target.endswith("missing"):
                peeled[sha] = (kind, target)
        return peeled

    def tree(self, commit: str) -> list[TreeEntry]:
        """The regular files and symlinks of a commit's tree (submodules are left out)."""
        out = self._run("ls-tree", "-r", "-z", "-l", "--full-tree", commit)
        entries: list[TreeEntry] = []
        for record in out.split(b"\x00"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            fields = meta.split()
            if len(fields) != 4:
                continue
            mode, kind, sha, size = (f.decode("ascii", "replace") for f in fields)
            if kind != "blob" or (mode not in _MODE_FILE and mode != _MODE_SYMLINK):
                continue
            raw = raw_path.decode("utf-8", "surrogateescape")
            entries.append(
                TreeEntry(display_path(raw), sha, int(size) if size.isdigit() else -1, mode == _MODE_SYMLINK, raw)
            )
        return entries

    def commit_of(self, rev: str) -> str | None:
        """The commit `rev` names, or None (no such commit: an empty repository's HEAD)."""
        try:
            out = self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", what=f"no commit {rev}")
        except NotFoundError:
            return None
        return out.decode("ascii", "replace").strip() or None

    def is_ancestor(self, older: str, newer: str) -> bool:
        try:
            self._run("merge-base", "--is-ancestor", older, newer, what="not an ancestor")
        except NotFoundError:
            return False
        return True

    def prefix(self, folder: Path) -> str:
        """`folder`'s path inside the work tree ("" at its top, else ending with '/')."""
        return self._run("rev-parse", "--show-prefix", cwd=folder).decode("utf-8", "surrogateescape").strip()

    def toplevel(self, folder: Path) -> Path:
        """The top of the work tree holding `folder`."""
        out = self._run("rev-parse", "--show-toplevel", cwd=folder)
        return Path(out.decode("utf-8", "surrogateescape").strip())

    def is_shallow(self) -> bool:
        return self._run("rev-parse", "--is-shallow-repository").strip() == b"true"

    def log_files(self, rev: str, limit: int, since: str | None = None) -> list[tuple[str, int, str, list[str]]]:
        """Up to `limit` commits reachable from `rev` (and not from `since`), newest first, merges
        left out: (sha, committer time, message, the paths it changed, relative to the top)."""
        spec = f"{since}..{rev}" if since else rev
        out = self._run(
            "-c", "core.quotePath=false", "log", "--no-merges", "--no-renames", f"-n{limit}",
            "--format=%x1e%H%x00%ct%x00%B%x00", "--name-only", spec, "--",
        )  # fmt: skip
        commits: list[tuple[str, int, str, list[str]]] = []
        for record in out.decode("utf-8", "surrogateescape").split("\x1e")[1:]:
            fields = record.split("\x00", 3)
            if len(fields) != 4 or not fields[1].isdigit():
                continue
            sha, when, message, names = fields
            commits.append((sha, int(when), message.strip(), [n for n in names.splitlines() if n.strip()]))
        return commits

    def blobs(self) -> BlobReader:
        return BlobReader(self)


class BlobReader:
    """One `git cat-file --batch` process: blobs by id, in any order, without a process each."""

    def __init__(self, repo: GitRepo) -> None:
        self._repo = repo
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> BlobReader:
        self._proc = subprocess.Popen(
            [_git(), f"--git-dir={self._repo.git_dir}", *_SAFE_CONFIG, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self._repo._env,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()

    def read(self, sha: str, limit: int) -> bytes | None:
        """The blob's bytes; None when it is missing (a shallow or partial clone) or larger than
        `limit` (then it is not read into memory: at most 1 MiB of it is held at a time)."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise IndexingError("the blob reader is closed")
        try:
            proc.stdin.write(sha.encode("ascii") + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline()
        except OSError as exc:
            raise IndexingError(f"git cat-file stopped in {self._repo.path}: {exc}") from None
        if not header:
            raise IndexingError(f"git cat-file stopped in {self._repo.path}")
        fields = header.split()
        if len(fields) < 3 or fields[1] == b"missing":
            return None
        size = int(fields[2])
        if size > limit:
            # Callers check the tree's size first; should one not, the blob is passed over in
            # pieces, never held whole (a 1 GB blob read at once took 2 GB).
            _skip_exactly(proc.stdout, size + 1)  # its content and the newline after it
            return None
        data = _read_exactly(proc.stdout, size)
        proc.stdout.read(1)  # the newline after the content
        if len(data) != size:
            raise IndexingError(f"git cat-file stopped in {self._repo.path} while reading {sha}")
        return data


def _skip_exactly(stream: object, size: int) -> None:
    read = stream.read  # type: ignore[attr-defined]
    left = size
    while left > 0:
        part = read(min(left, 1 << 20))
        if not part:
            break
        left -= len(part)


def _read_exactly(stream: object, size: int) -> bytes:
    read = stream.read  # type: ignore[attr-defined]
    parts: list[bytes] = []
    left = size
    while left > 0:
        part = read(min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)
