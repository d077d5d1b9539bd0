"""File localization on the SWE-bench Lite development set: does lgrep's answer to a GitHub issue
name the file the fix edited?

Data: a folder like ../shared/bench/swebench-dev (instances.jsonl and its README.md): 66 sympy and 16
sphinx issues; the query is the issue's text (`problem_statement`), the answer the file the fix edited
(`gold_files`). Clones: one full-history clone per repository under --clones, named `sympy` and
`sphinx`. Never point this tool at the other SWE-bench repositories: they are the held-out test set.

    uv run --frozen python tools/bench_swebench.py --data DIR --clones /work/bench --out runs/swe.json
    uv run --frozen python tools/bench_swebench.py --data DIR --clones /work/bench --score-only \\
        --mode full --mode bm25 --mode vector --out runs/swe-modes.json

Build (without --score-only): per repository, the instances in order of `created_at`: `git checkout
-f <base_commit>` and `git clean -fdx` in the clone, then one incremental lgrep index per repository,
in-process with the embedded model as tools/bench_search.py does (unchanged files keep their chunks
and vectors: how a user's index follows a branch). Each index is checked against git: every indexed
file's content hash is that of the file on disk, and the files whose hash changed are the ones `git
diff` names among the indexed files. Then what a searcher needs is saved under
--cache/swebench/<repo>/<instance>/: the chunk columns, the vectors no earlier state saved, and the
in-memory snapshot (lgrep_search.corpus.Corpus) pickled without its vectors. Instances already saved
are skipped, so an interrupted build goes on where it stopped.

Scoring reads only those states (no checkout, no indexing; the model embeds the queries), so
`--score-only` re-runs every question in a minute or two. A pickled snapshot built by other code
than today's (CORPUS_MODULES changed) is rebuilt from the saved columns, and pickled again
beside the old one (worktrees with different search code can share one cache; KEEP_PICKLES).

Ranking files: each mode is a function `rank_files(searcher, query) -> [path, ...]`. The chunk modes
ask lgrep for CHUNK_LIMIT chunks and keep each file where its first chunk stands: the files in the
order an agent reading the answer meets them. `full` is what `lgrep search` does; `fusion`, `bm25`,
`vector`, `bm25+rank`, `full-SIGNAL`, ... are bench_search.py's modes. `files` is `lgrep search
--files` (10 files, ranked by their evidence); modes that answer files themselves are FILE_RANKERS.
By default `files` and `full` are both scored. The variant "code files only" keeps only the Python
files of the same ranking; it is reported beside each mode, never instead.

Long issues: SearchRequest.validate refuses queries over MAX_QUERY_CHARS; such a query is cut to the
limit and counted.

Metric (LocAgent's, arXiv 2503.09089): Acc@k is 1 when every gold file is among the first k files,
else 0, averaged over instances; MRR is the mean of 1/rank of the first gold file (0 when absent).
Floors, computed here without lgrep: BM25 over whole Python files (`bm25_scores`), with and without
test files.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import os
import pickle
import re
import subprocess
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import LgrepRunner, search_options, write_json

PROJECT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = PROJECT.parent / "shared" / "bench" / "swebench-dev"
DEFAULT_CACHE = Path(os.environ.get("LGREP_BENCH_CACHE", "/tmp/lgrep-bench-cache")).with_name("lgrep-swebench-cache")
# The repositories of the development set: SWE-bench name -> (clone folder under --clones, label).
REPOS = {"sympy/sympy": ("sympy", "SymPy"), "sphinx-doc/sphinx": ("sphinx", "Sphinx")}
KS = (1, 3, 5, 10)
# Chunks asked for per question: enough that at least 10 distinct files appear (the tool counts the
# questions where fewer did).
CHUNK_LIMIT = 100
# The modules whose code shapes a pickled snapshot's data; a change to any of them rebuilds it.
CORPUS_MODULES = (
    "lgrep_search.corpus",
    "lgrep_search.lexical",
    "lgrep_search.fuzzy",
    "lgrep_search.texts",
    "lgrep_search.signals.path_match",
    "lgrep_core.domain.text",
)
# Pickled snapshots kept per instance, one per version of that code (a few worktrees sharing a cache).
KEEP_PICKLES = 4

# BM25 floor: Okapi's textbook constants, Lucene's idf (never negative).
FLOOR_K1 = 1.2
FLOOR_B = 0.75
# Bump when the floor's definition changes: cached floor rankings of another version are recomputed.
FLOOR_VERSION = "1"
FLOOR_KINDS = ("no_tests", "with_tests")


# ------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Instance:
    instance_id: str
    repo: str  # SWE-bench's name: sympy/sympy
    base_commit: str
    created_at: str
    query: str
    gold: tuple[str, ...]


def load_instances(data: Path, repos: set[str], ids: set[str]) -> dict[str, list[Instance]]:
    """The instances per repository (in REPOS order), each repository's in order of created_at."""
    out: dict[str, list[Instance]] = {name: [] for name in REPOS}
    for line in (data / "instances.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        if raw["repo"] not in REPOS:
            raise SystemExit(f"{raw['instance_id']}: {raw['repo']} is not a development-set repository")
        folder = REPOS[raw["repo"]][0]
        if (repos and folder not in repos) or (ids and raw["instance_id"] not in ids):
            continue
        inst = Instance(
            raw["instance_id"],
            raw["repo"],
            raw["base_commit"],
            raw["created_at"],
            raw["problem_statement"],
            tuple(raw["gold_files"]),
        )
        out[raw["repo"]].append(inst)
    return {repo: sorted(insts, key=lambda i: i.created_at) for repo, insts in out.items() if insts}


def published_rows(readme: Path) -> list[dict[str, str]]:
    """The README's "Published numbers" table: method, Acc@1, Acc@3, Acc@5, source."""
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    _, found, section = text.partition("## Published numbers")
    rows: list[dict[str, str]] = []
    for line in section.splitlines() if found else []:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and all(re.fullmatch(r"\d+(\.\d+)?", c) for c in cells[1:4]):
            rows.append(dict(zip(("method", "acc1", "acc3", "acc5", "source"), cells, strict=True)))
    return rows


# ----------------------------------------------------------------------------------------- metric


def gold_ranks(files: Sequence[str], gold: Sequence[str]) -> tuple[int | None, int | None]:
    """(rank of the first gold file, rank by which every gold file has appeared), 1-based; None
    when absent. Acc@k counts the second, MRR the first."""
    ranks = {path: rank for rank, path in reversed(list(enumerate(files, 1)))}
    found = [ranks.get(g) for g in gold]
    present = [r for r in found if r is not None]
    first = min(present) if present else None
    every = max(present) if present and len(present) == len(found) else None
    return first, every


def summarize(ranks: Sequence[tuple[int | None, int | None]]) -> dict[str, float]:
    """Acc@k (percent: every gold file among the first k), hit@k (percent: any gold file among
    them) and MRR over instances, from each one's gold_ranks."""
    n = len(ranks)
    out: dict[str, float] = {"n": n}
    for k in KS:
        out[f"acc@{k}"] = 100.0 * sum(1 for _, every in ranks if every is not None and every <= k) / n if n else 0.0
        out[f"hit@{k}"] = 100.0 * sum(1 for first, _ in ranks if first is not None and first <= k) / n if n else 0.0
    out["mrr"] = sum(1.0 / first for first, _ in ranks if first is not None) / n if n else 0.0
    return out


# -------------------------------------------------------------------------------------- BM25 floor

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifier_tokens(text: str) -> list[str]:
    """Identifiers split on snake_case and camelCase, lowercased; parts of one character and
    numbers dropped: `parseHTTPResponse_v2` -> parse, http, response."""
    return [
        part.lower()
        for ident in _IDENTIFIER.findall(text)
        for part in _WORD_PART.findall(ident)
        if len(part) > 1 and not part.isdigit()
    ]


def is_test_path(path: str) -> bool:
    """A test file: under a `test` or `tests` folder, named test_*.py or *_test.py, or conftest.py."""
    *folders, name = path.split("/")
    return (
        any(f in ("test", "tests") for f in folders)
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


class Vocabulary:
    """Term -> id, growing; a document is the ids of its distinct terms and their counts."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def counts(self, tokens: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        tally = Counter(tokens)
        ids = np.fromiter((self.ids.setdefault(t, len(self.ids)) for t in tally), dtype=np.int64, count=len(tally))
        return ids, np.fromiter(tally.values(), dtype=np.float64, count=len(tally))


def bm25_scores(
    docs: Sequence[tuple[np.ndarray, np.ndarray]],
    query: tuple[np.ndarray, np.ndarray],
    k1: float = FLOOR_K1,
    b: float = FLOOR_B,
) -> np.ndarray:
    """Okapi BM25 of every document for the query (documents and query as Vocabulary.counts gives
    them). A query term counts once per occurrence (as rank_bm25 does); idf is Lucene's,
    log(1 + (N - df + 0.5) / (df + 0.5)), over these documents."""
    n = len(docs)
    scores = np.zeros(n)
    q_ids, q_counts = query
    if n == 0 or len(q_ids) == 0:
        return scores
    order = np.argsort(q_ids)
    q_ids, q_counts = q_ids[order], q_counts[order]
    lengths = np.asarray([float(tf.sum()) for _, tf in docs])
    avg_len = max(float(lengths.mean()), 1e-9)
    doc_of = np.repeat(np.arange(n), [len(ids) for ids, _ in docs])
    ids = np.concatenate([ids for ids, _ in docs])
    tfs = np.concatenate([tf for _, tf in docs])
    hit = np.isin(ids, q_ids)
    doc, tf = doc_of[hit], tfs[hit]
    q_pos = np.searchsorted(q_ids, ids[hit])
    df = np.bincount(q_pos, minlength=len(q_ids))
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    weight = tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * lengths[doc] / avg_len))
    np.add.at(scores, doc, q_counts[q_pos] * idf[q_pos] * weight)
    return scores


def rank_by_score(paths: Sequence[str], scores: np.ndarray) -> list[str]:
    """Paths by score, best first; ties by path."""
    return [paths[i] for i in sorted(range(len(paths)), key=lambda i: (-scores[i], paths[i]))]


def is_python(path: str) -> bool:
    return path.endswith(".py")


class Floor:
    """The BM25 floor of one clone: whole code files (`code`, default Python) at a commit, read
    from git's objects (no checkout), each distinct file tokenized once per run; "no tests" leaves
    out the files `is_test` names."""

    def __init__(
        self,
        clone: Path,
        code: Callable[[str], bool] = is_python,
        is_test: Callable[[str], bool] = is_test_path,
    ) -> None:
        self.clone = clone
        self.code = code
        self.is_test = is_test
        self.vocab = Vocabulary()
        self._blobs: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def rankings(self, commit: str, query: str) -> dict[str, list[str]]:
        files = _blobs(self.clone, commit, self.code)
        missing = sorted({sha for _, sha in files if sha not in self._blobs})
        for sha, data in _read_blobs(self.clone, missing):
            self._blobs[sha] = self.vocab.counts(identifier_tokens(data.decode("utf-8", "replace")))
        q = self.vocab.counts(identifier_tokens(query))
        out: dict[str, list[str]] = {}
        for kind in FLOOR_KINDS:
            kept = [(p, s) for p, s in files if kind == "with_tests" or not self.is_test(p)]
            paths = [p for p, _ in kept]
            out[kind] = rank_by_score(paths, bm25_scores([self._blobs[s] for _, s in kept], q))
        return out


# -------------------------------------------------------------------------------------------- git


def _git(clone: Path, *args: str, stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", "-C", str(clone), *args], input=stdin, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in {clone} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def checkout(clone: Path, commit: str) -> None:
    _git(clone, "-c", "advice.detachedHead=false", "checkout", "-q", "-f", commit)
    _git(clone, "clean", "-q", "-f", "-d", "-x")


def _blobs(clone: Path, commit: str, keep: Callable[[str], bool]) -> list[tuple[str, str]]:
    """(path, blob sha) of the files at a commit whose path `keep` accepts."""
    out = []
    for entry in _git(clone, "ls-tree", "-r", "-z", commit).split(b"\0"):
        if not entry:
            continue
        info, _, path = entry.partition(b"\t")
        _mode, kind, sha = info.split()
        name = path.decode("utf-8", "surrogateescape")
        if kind == b"blob" and keep(name):
            out.append((name, sha.decode()))
    return out


def _read_blobs(clone: Path, shas: Sequence[str]) -> Iterable[tuple[str, bytes]]:
    if not shas:
        return
    data = _git(clone, "cat-file", "--batch", stdin="\n".join(shas).encode() + b"\n")
    at = 0
    for _ in shas:
        end = data.index(b"\n", at)
        sha, _kind, size = data[at:end].split()
        start = end + 1
        yield sha.decode(), data[start : start + int(size)]
        at = start + int(size) + 1


def _changed_paths(clone: Path, old: str, new: str) -> set[str]:
    """The files whose content differs between two commits (a change of mode alone is none)."""
    fields = _git(clone, "diff", "--raw", "--no-renames", "--no-abbrev", "-z", old, new).split(b"\0")
    out: set[str] = set()
    for info, path in zip(fields[0::2], fields[1::2], strict=False):
        _old_mode, _new_mode, old_sha, new_sha, _status = info.split()
        if old_sha != new_sha:
            out.add(path.decode("utf-8", "surrogateescape"))
    return out


# ----------------------------------------------------------------------------------------- states


def corpus_fingerprint() -> str:
    """Of the code that shapes a snapshot's data, and of the snapshot's fields."""
    from lgrep_search.corpus import Corpus

    h = hashlib.sha256()
    for name in CORPUS_MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        h.update(Path(spec.origin).read_bytes())
    h.update(" ".join(f.name for f in dataclasses.fields(Corpus)).encode())
    return h.hexdigest()[:16]


class States:
    """The saved states of one repository's instances (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fingerprint = corpus_fingerprint()
        self._rows: dict[str, int] | None = None  # embedding key -> row of _matrix
        self._matrix = np.zeros((0, 1), np.float32)  # grown by doubling; rows from _used on are free
        self._used = 0

    def dir(self, instance_id: str) -> Path:
        return self.root / instance_id

    def done(self, instance_id: str) -> bool:
        return (self.dir(instance_id) / "meta.json").is_file()

    def meta(self, instance_id: str) -> dict[str, Any]:
        return json.loads((self.dir(instance_id) / "meta.json").read_text(encoding="utf-8"))

    # vectors: each state saves those no earlier state of this repository saved (the same key is
    # the same vector: keys are content hashes under one model)

    def _vector_rows(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {}
            for keys_file in sorted(self.root.glob("*/vector_keys.json")):
                if not (keys_file.parent / "meta.json").is_file():
                    # an unfinished state (a build stopped while saving it): its vectors are saved
                    # again, all of them, when it is built
                    continue
                self._add(
                    json.loads(keys_file.read_text(encoding="utf-8")), np.load(keys_file.with_name("vectors.npy"))
                )
        return self._rows

    def _add(self, keys: list[str], matrix: np.ndarray) -> None:
        rows = self._rows
        assert rows is not None
        if not keys:
            return
        n = self._used
        if n + len(keys) > len(self._matrix) or self._matrix.shape[1] != matrix.shape[1]:
            grown = np.zeros((max(2 * (n + len(keys)), 1024), matrix.shape[1]), np.float32)
            grown[:n] = self._matrix[:n]
            self._matrix = grown
        self._matrix[n : n + len(keys)] = matrix
        self._used = n + len(keys)
        for i, key in enumerate(keys):
            rows.setdefault(key, n + i)

    def vectors(self, keys: Sequence[str]) -> np.ndarray:
        rows = self._vector_rows()
        if any(k not in rows for k in keys):
            # a state another process finished since these were read (a build beside a scoring run)
            self._rows, self._matrix, self._used = None, np.zeros((0, 1), np.float32), 0
            rows = self._vector_rows()
        return self._matrix[[rows[k] for k in keys]]

    def missing_vectors(self, keys: Iterable[str]) -> list[str]:
        rows = self._vector_rows()
        return sorted({k for k in keys if k and k not in rows})

    # saving and loading

    def save(
        self, instance_id: str, meta: dict[str, Any], cols: dict[str, list[Any]], new_keys: list[str], new: np.ndarray
    ) -> Any:
        """Save a state; returns its snapshot (a Corpus)."""
        folder = self.dir(instance_id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "meta.json").unlink(missing_ok=True)  # written last: a state without it is unfinished
        np.save(folder / "vectors.npy", new.astype(np.float32))
        (folder / "vector_keys.json").write_text(json.dumps(new_keys), encoding="utf-8")
        self._vector_rows()
        self._add(new_keys, new.astype(np.float32))
        _write_atomic(folder / "chunks.pickle.z", zlib.compress(pickle.dumps(cols, protocol=5), 1))
        corpus = self._build(cols)
        self._pickle(folder, corpus)
        _write_atomic(folder / "meta.json", json.dumps(meta, indent=1).encode())
        return corpus

    def corpus(self, instance_id: str) -> Any:
        """The instance's snapshot: unpickled, or rebuilt from its columns when the code that
        shapes it changed since it was pickled (and pickled again)."""
        from lgrep_search.corpus import Corpus, _unit  # the normalisation Corpus.build applies

        folder = self.dir(instance_id)
        path = folder / f"corpus-{self.fingerprint}.pickle"
        try:
            fields = pickle.loads(path.read_bytes())
            os.utime(path)  # recently used: kept by _prune
        except FileNotFoundError:
            pass
        else:
            matrix = _unit(self.vectors(fields["matrix_keys"]))
            return Corpus(**fields, matrix=matrix, version=None, load_ms=0.0)
        cols = pickle.loads(zlib.decompress((folder / "chunks.pickle.z").read_bytes()))
        corpus = self._build(cols)
        self._pickle(folder, corpus)
        return corpus

    def history(self, instance_id: str, clone: Path, commit: str) -> Any:
        """The repository's history at the instance's commit as lgrep keeps it for its index
        (lgrep_index.history), mined once from the clone and saved beside the state; a HistoryIndex,
        or None outside git."""
        from lgrep_core.domain.history import History
        from lgrep_index.history import mine_history
        from lgrep_search.history import HistoryIndex

        path = self.dir(instance_id) / "history.z"
        try:
            history = History.decode(path.read_bytes())
        except (OSError, ValueError):
            history = mine_history(clone, rev=commit)
            if history is None:
                return None
            _write_atomic(path, history.encode())
        return HistoryIndex(history)

    def _build(self, cols: dict[str, list[Any]]) -> Any:
        from lgrep_search.corpus import Corpus

        rows = self._vector_rows()
        keys = list(dict.fromkeys(k for k in cols["vec_key"] if k and k in rows))
        return Corpus.build(cols, keys, self.vectors(keys))

    def _pickle(self, folder: Path, corpus: Any) -> None:
        skip = {"matrix", "version", "load_ms"}
        fields = {f.name: getattr(corpus, f.name) for f in dataclasses.fields(corpus) if f.name not in skip}
        _write_atomic(folder / f"corpus-{self.fingerprint}.pickle", pickle.dumps(fields, protocol=5))
        # Worktrees with different search code may share one cache: each keeps its own pickles,
        # up to KEEP_PICKLES per instance, the least recently used dropped first.
        pickles = sorted(folder.glob("corpus-*.pickle"), key=_mtime, reverse=True)
        for old in pickles[KEEP_PICKLES:]:
            old.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


# ------------------------------------------------------------------------------------------ build


def _content_hashes(reader: Any) -> dict[str, str] | None:
    """Path -> content hash of every file the published index holds (None before the first index)."""
    from lgrep_core.domain.errors import NotFoundError

    try:
        version = reader.version()
    except NotFoundError:
        return None
    return {path: rec.sha256 for path, rec in reader.manifest(version).items()}


def _disk_hash(path: Path) -> str | None:
    """The content hash the indexer records for a file (of its decoded text)."""
    from lgrep_core.domain.text import decode_text

    try:
        data = path.read_bytes()
    except OSError:
        return None
    return hashlib.sha256(decode_text(data).encode("utf-8", "surrogateescape")).hexdigest()


def check_index(
    clone: Path,
    before: tuple[str, dict[str, str]] | None,
    after: dict[str, str],
    summary: Any,
) -> dict[str, Any]:
    """Does the index reflect the checkout? Every indexed file's hash against the file on disk,
    and the files whose hash changed against those `git diff` names among the indexed ones."""
    wrong = sorted(p for p, sha in after.items() if _disk_hash(clone / p) != sha)
    out: dict[str, Any] = {"files": len(after), "content_mismatches": len(wrong), "mismatched": wrong[:10]}
    out["reported"] = summary.files_indexed + summary.files_deleted
    if before is None:
        return out
    old_commit, old = before
    head = _git(clone, "rev-parse", "HEAD").decode().strip()
    diff = _changed_paths(clone, old_commit, head)
    indexed = set(old) | set(after)
    expected = {p for p in diff if p in indexed}
    actual = {p for p in indexed if old.get(p) != after.get(p)}
    out.update(
        git_diff_files=len(diff),
        git_diff_indexed=len(expected),
        hash_changed=len(actual),
        only_in_git=sorted(expected - actual)[:10],
        only_in_index=sorted(actual - expected)[:10],
    )
    out["agrees"] = not wrong and expected == actual and out["reported"] == len(actual)
    return out


def build_repo(
    repo: str,
    clone: Path,
    insts: list[Instance],
    runner: LgrepRunner,
    states: States,
    label: str | None = None,
    vectors: bool = True,
) -> dict[str, Any]:
    """Index every instance's commit in turn and save its state (instances already saved are
    skipped). `label` names the repository in progress lines (default: its REPOS label). Without
    `vectors` the states hold chunks alone (lexical states: minutes instead of hours to build; their
    answers lack the dense channel, so they are a proxy, scored apart from full states)."""
    from lgrep_core.storage.reader import ProjectReader
    from lgrep_search.corpus import COLUMNS

    label = label or REPOS[repo][1]
    states.root.mkdir(parents=True, exist_ok=True)
    marker = states.root / "index_commit"  # the commit the lgrep index was last brought to
    head = _git(clone, "rev-parse", "--abbrev-ref", "HEAD").decode().strip()
    if head == "HEAD":
        head = _git(clone, "rev-parse", "HEAD").decode().strip()
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    unreadable: list[str] = []
    try:
        for n, inst in enumerate(insts, 1):
            if states.done(inst.instance_id):
                continue
            t0 = time.perf_counter()
            try:
                checkout(clone, inst.base_commit)
            except SystemExit as exc:
                # A snapshot from `fetch` lacks blobs of 4 MiB and more: a commit with one cannot
                # be checked out whole, so its instance is left unbuilt (and reported so).
                print(f"[{label}] {inst.instance_id}: not built: {exc}", file=sys.stderr, flush=True)
                unreadable.append(inst.instance_id)
                continue
            checkout_s = time.perf_counter() - t0
            reader = ProjectReader(runner.cache, clone.resolve())
            old = _content_hashes(reader)
            before = (marker.read_text().strip(), old) if old is not None and marker.is_file() else None
            summary, reader, index_s = runner.index_run(clone, vectors=vectors)
            marker.write_text(inst.base_commit)
            t1 = time.perf_counter()
            after = _content_hashes(reader) or {}
            check = check_index(clone, before, after, summary)
            version = reader.version()
            cols = reader.read_chunks(version, COLUMNS)
            new_keys = states.missing_vectors(cols["vec_key"]) if vectors else []
            got_keys, got = reader.read_vectors(version, new_keys) if new_keys else ([], np.zeros((0, 1)))
            lacking = set(new_keys) - set(got_keys)
            if lacking:
                raise SystemExit(f"{inst.instance_id}: {len(lacking)} chunks have no vector after indexing")
            corpus = states.save(
                inst.instance_id,
                {
                    "instance_id": inst.instance_id,
                    "commit": inst.base_commit,
                    "identity": reader.meta(version).get("identity"),
                    "index_s": round(index_s, 2),
                    "checkout_s": round(checkout_s, 2),
                    "files_indexed": summary.files_indexed,
                    "files_deleted": summary.files_deleted,
                    "files_unchanged": summary.files_unchanged,
                    "chunks_written": summary.chunks_written,
                    "vectors_embedded": summary.vectors_embedded,
                    "chunks": len(cols["path"]),
                    "check": check,
                    "vectors": vectors,
                },
                cols,
                got_keys,
                got,
            )
            save_s = time.perf_counter() - t1
            row = {
                "instance_id": inst.instance_id,
                "index_s": round(index_s, 2),
                "save_s": round(save_s, 2),
                "files_indexed": summary.files_indexed,
                "vectors_embedded": summary.vectors_embedded,
                "chunks": len(corpus),
                "check": check,
            }
            rows.append(row)
            verdict = "ok" if check.get("agrees", not check["content_mismatches"]) else "MISMATCH"
            print(
                f"[{label} {n}/{len(insts)}] {inst.instance_id} @ {inst.base_commit[:10]}: "
                f"{summary.files_indexed} files re-chunked, {summary.files_deleted} dropped "
                f"(git diff: {check.get('git_diff_indexed', '-')} indexed files), "
                f"{summary.vectors_embedded} vectors embedded, {len(corpus)} chunks; "
                f"index {index_s:.1f} s, save {save_s:.1f} s; check {verdict}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        try:
            checkout(clone, head)  # leave the clone as it was found
        except SystemExit as exc:
            print(f"[{label}] the clone stays at the last commit built: {exc}", file=sys.stderr, flush=True)
    return {
        "repo": repo,
        "seconds": round(time.perf_counter() - started, 1),
        "instances": rows,
        "unreadable": unreadable,
    }


# ---------------------------------------------------------------------------------------- ranking

RankFiles = Callable[[Any, str], list[str]]


def chunk_ranker(search_type: Any, limit: int = CHUNK_LIMIT) -> RankFiles:
    """Files as a chunk answer shows them: each at the rank of its first chunk."""
    from lgrep_core.domain.models import SearchRequest

    def rank_files(searcher: Any, query: str) -> list[str]:
        response = searcher.search(SearchRequest(query, limit=limit, search_type=search_type))
        return list(dict.fromkeys(hit.path for hit in response.results))

    return rank_files


def files_ranker(limit: int = 10) -> RankFiles:
    """Files as a files answer (`lgrep search --files`, `SearchRequest.files`) gives them."""
    from lgrep_core.domain.models import SearchRequest

    def rank_files(searcher: Any, query: str) -> list[str]:
        return [f.path for f in searcher.search(SearchRequest(query, limit=limit, files=True)).files]

    return rank_files


# Modes that rank files themselves, by name: (bench_search mode of the searcher, ranker).
FILE_RANKERS: dict[str, tuple[str, RankFiles]] = {"files": ("full", files_ranker())}


def ranker(mode: str, limit: int) -> tuple[str, RankFiles]:
    """(the searcher's bench_search mode, the file ranker) of a mode."""
    if mode in FILE_RANKERS:
        return FILE_RANKERS[mode]
    kind, _, _ = search_options(mode)
    return mode, chunk_ranker(kind, limit)


def prepare_query(text: str) -> tuple[str, bool]:
    """The query as lgrep accepts it: the issue's text, cut to MAX_QUERY_CHARS when the request
    validation refuses it as too long; and whether it was cut."""
    from lgrep_core.domain.errors import InvalidRequestError
    from lgrep_core.domain.models import MAX_QUERY_CHARS, SearchRequest

    try:
        SearchRequest(text).validate()
    except InvalidRequestError:
        if len(text) <= MAX_QUERY_CHARS:
            raise
        return text[:MAX_QUERY_CHARS], True
    return text, False


class _QueryMemo:
    """The embedder, with each query embedded once for all modes."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._memo: dict[str, Any] = {}

    def embed_query(self, text: str) -> Any:
        if text not in self._memo:
            self._memo[text] = self._embedder.embed_query(text)
        return self._memo[text]

    def embed_queries(self, texts: list[str]) -> Any:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            several = getattr(self._embedder, "embed_queries", None)
            if callable(several):
                vectors = list(np.asarray(several(missing)))
            else:
                vectors = [self._embedder.embed_query(t) for t in missing]
            for text, vector in zip(missing, vectors, strict=True):
                self._memo[text] = vector
        return [self._memo[t] for t in texts]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)


def _floor_cache(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["instances"] if data.get("version") == FLOOR_VERSION else {}


def score_repo(
    repo: str,
    clone: Path,
    insts: list[Instance],
    states: States,
    modes: list[str],
    embedder: Any,
    limit: int,
    floor: bool,
    code: Callable[[str], bool] = is_python,
    is_test: Callable[[str], bool] = is_test_path,
    with_history: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every instance's answers from its saved state: per-instance rows and the time spent. The
    `rank_code` variant keeps only the files `code` accepts; the floor ranks those files."""
    from lgrep_search.searcher import Searcher

    rankers = {mode: ranker(mode, limit) for mode in modes}
    floor_path = states.root / "floor.json"
    floors = _floor_cache(floor_path) if floor else {}
    floor_tool = Floor(clone, code, is_test) if floor else None
    timing = {"load_s": 0.0, "search_s": 0.0, "floor_s": 0.0}
    rows: list[dict[str, Any]] = []
    for inst in insts:
        t0 = time.perf_counter()
        corpus = states.corpus(inst.instance_id)
        history = states.history(inst.instance_id, clone, inst.base_commit) if with_history else None
        timing["load_s"] += time.perf_counter() - t0
        query, cut = prepare_query(inst.query)
        row: dict[str, Any] = {
            "instance_id": inst.instance_id,
            "repo": repo,
            "gold": list(inst.gold),
            "query_chars": len(inst.query),
            "truncated": cut,
            "chunks": len(corpus),
            "lgrep": {},
        }
        t0 = time.perf_counter()
        # then each mode's `ms` is search alone; lexical states have no dense channel to embed for
        row["embed_ms"] = round(_embed_windows(embedder, query), 2) if embedder is not None else None
        for mode, (searcher_mode, rank_files) in rankers.items():
            _kind, ranking, disable = search_options(searcher_mode)
            searcher = Searcher(None, embedder, ranking=ranking, disable=disable, corpus=corpus, history=history)
            asked = time.perf_counter()
            files = rank_files(searcher, query)
            took_ms = (time.perf_counter() - asked) * 1000
            kept = [f for f in files if code(f)]
            row["lgrep"][mode] = {
                "rank": gold_ranks(files, inst.gold),
                "rank_code": gold_ranks(kept, inst.gold),
                "files": len(files),
                "code_files": len(kept),
                "ms": round(took_ms, 2),
                "top": files[:10],
            }
        timing["search_s"] += time.perf_counter() - t0
        if floor_tool is not None:
            t0 = time.perf_counter()
            cached: dict[str, Any] = floors.get(inst.instance_id) or {}
            if cached.get("commit") != inst.base_commit:
                ranked = floor_tool.rankings(inst.base_commit, inst.query)
                cached = {"commit": inst.base_commit}
                for kind in FLOOR_KINDS:
                    cached[kind] = {"rank": gold_ranks(ranked[kind], inst.gold), "top": ranked[kind][:10]}
                floors[inst.instance_id] = cached
            row["floor"] = {kind: cached[kind] for kind in FLOOR_KINDS}
            timing["floor_s"] += time.perf_counter() - t0
        rows.append(row)
    if floor_tool is not None:
        floor_path.write_text(json.dumps({"version": FLOOR_VERSION, "instances": floors}), encoding="utf-8")
    return rows, timing


def _embed_windows(embedder: Any, query: str) -> float:
    """Embed what the dense channel embeds for `query` (each window of a task question, or the
    query), through the memo; the milliseconds it took."""
    from lgrep_search.query import parse_query
    from lgrep_search.retrieval import embed_question

    parsed = parse_query(query)
    started = time.perf_counter()
    embed_question(embedder, parsed)
    return (time.perf_counter() - started) * 1000


# ------------------------------------------------------------------------------------------ report


def _ranks(row: dict[str, Any], column: str) -> tuple[int | None, int | None]:
    """The gold ranks of one table column: `lgrep:<mode>`, `lgrep.code:<mode>` or `floor:<kind>`."""
    source, _, name = column.partition(":")
    if source == "floor":
        first, every = row["floor"][name]["rank"]
    else:
        first, every = row["lgrep"][name]["rank_code" if source == "lgrep.code" else "rank"]
    return first, every


def tables(
    rows: list[dict[str, Any]], columns: list[str], group: Callable[[dict[str, Any]], str] | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """column -> group (`group(row)`, default each repository's label; then "all") -> summarize()."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(group(row) if group else REPOS[row["repo"]][1], []).append(row)
    groups["all"] = rows
    return {c: {g: summarize([_ranks(r, c) for r in rs]) for g, rs in groups.items()} for c in columns}


def _column_label(column: str) -> str:
    source, _, name = column.partition(":")
    if source == "floor":
        return f"BM25 floor, {'no tests' if name == 'no_tests' else 'with tests'}"
    return f"lgrep {name}" + (", code files only" if source == "lgrep.code" else "")


def render(table: dict[str, dict[str, dict[str, float]]], published: list[dict[str, str]]) -> str:
    first = next(iter(table.values()))
    width = 30
    head1 = " " * width + "".join(f"{g + ' (' + str(int(s['n'])) + ')':^31}" for g, s in first.items())
    head2 = f"{'method':<{width}}" + "".join(f"{'@1':>6}{'@3':>5}{'@5':>5}{'@10':>5}{'MRR':>7}   " for _ in first)
    lines = ["File Acc@k (%) and MRR of the first gold file", head1, head2]
    for column, by_group in table.items():
        cells = "".join(
            f"{s['acc@1']:>6.1f}{s['acc@3']:>5.0f}{s['acc@5']:>5.0f}{s['acc@10']:>5.0f}{s['mrr']:>7.3f}   "
            for s in by_group.values()
        )
        lines.append(f"{_column_label(column):<{width}}{cells}")
    if published:
        lines += ["", "Published (LocAgent; all 274 SWE-bench Lite instances, not this subset): Acc@1 / @3 / @5"]
        lines += [f"  {p['method']:<55}{p['acc1']:>7}{p['acc3']:>7}{p['acc5']:>7}   {p['source']}" for p in published]
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------- main


def _lasting_term_caches(maxsize: int = 200_000) -> None:
    """This process builds a corpus per question, 82 states of two repositories: analyser caches that
    outlast a build pay here (scoring 265 s with lgrep's own 4,096-entry caches, ~35 s with these).
    lgrep's long-lived processes keep them small (ADR 0030); a tool may hold ~100 MB of them."""
    from functools import lru_cache

    import lgrep_core.domain.text as text
    import lgrep_search.corpus as corpus_module
    import lgrep_search.query as query_module
    from lgrep_search.signals import path_match

    text.stem = lru_cache(maxsize)(text.stem.__wrapped__)  # type: ignore[assignment]
    text.identifier_terms = lru_cache(maxsize)(text.identifier_terms.__wrapped__)  # type: ignore[assignment]
    corpus_module.identifier_terms = text.identifier_terms  # type: ignore[attr-defined]
    query_module.stem = path_match.stem = text.stem  # type: ignore[attr-defined]


def main() -> int:
    _lasting_term_caches()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the swebench-dev folder")
    ap.add_argument("--clones", type=Path, required=True, help="folder with the clones `sympy` and `sphinx`")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="indexes, saved states, model (kept)")
    ap.add_argument("--repo", action="append", default=[], choices=[f for f, _ in REPOS.values()])
    ap.add_argument("--instance", action="append", default=[], help="only these instance ids (repeatable)")
    ap.add_argument(
        "--mode", action="append", default=[], help="lgrep modes to score (repeatable; default files and full)"
    )
    ap.add_argument("--limit", type=int, default=CHUNK_LIMIT, help="chunks asked for per question")
    ap.add_argument("--score-only", action="store_true", help="no checkout or indexing: the saved states only")
    ap.add_argument("--no-floor", action="store_true", help="leave out the BM25 floors")
    ap.add_argument("--out", type=Path, help="write the tables and per-instance ranks as JSON here")
    args = ap.parse_args()

    insts = load_instances(args.data, set(args.repo), set(args.instance))
    if not insts:
        raise SystemExit("no instances matched")
    modes = args.mode or ["files", "full"]
    for mode in modes:
        try:
            ranker(mode, args.limit)
        except ValueError:
            raise SystemExit(f"unknown mode {mode!r}") from None
    clones = {repo: args.clones / REPOS[repo][0] for repo in insts}
    for repo, clone in clones.items():
        if not (clone / ".git").exists():
            raise SystemExit(f"{clone} is not a clone of {repo}")

    args.cache.mkdir(parents=True, exist_ok=True)
    runner = LgrepRunner(args.cache)
    states = {repo: States(args.cache / "swebench" / REPOS[repo][0]) for repo in insts}
    builds: list[dict[str, Any]] = []
    if not args.score_only:
        for repo, repo_insts in insts.items():
            builds.append(build_repo(repo, clones[repo], repo_insts, runner, states[repo]))
            print(f"built {repo}: {builds[-1]['seconds']:.0f} s", file=sys.stderr, flush=True)
    unsaved = [i.instance_id for repo, rs in insts.items() for i in rs if not states[repo].done(i.instance_id)]
    if unsaved:
        raise SystemExit(f"no saved state for {len(unsaved)} instances ({', '.join(unsaved[:5])}...): build first")

    embedder = _QueryMemo(runner.embedder_for(next(iter(clones.values()))))
    for repo, rs in insts.items():
        want = {"provider": embedder.provider, "dimension": embedder.dimension}
        have = states[repo].meta(rs[0].instance_id).get("identity") or {}
        if any(have.get(k) != v for k, v in want.items()):
            raise SystemExit(f"the states of {repo} were built with {have}, the embedder is {want}")

    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    timing: Counter[str] = Counter()
    for repo, repo_insts in insts.items():
        repo_rows, repo_timing = score_repo(
            repo, clones[repo], repo_insts, states[repo], modes, embedder, args.limit, not args.no_floor
        )
        rows += repo_rows
        timing.update(repo_timing)
    score_s = time.perf_counter() - started

    columns = [f"{source}:{mode}" for mode in modes for source in ("lgrep", "lgrep.code")]
    if not args.no_floor:
        columns += [f"floor:{kind}" for kind in FLOOR_KINDS]
    table = tables(rows, columns)
    published = published_rows(args.data / "README.md")
    print(render(table, published))
    truncated = [r["instance_id"] for r in rows if r["truncated"]]
    print(f"\nqueries cut to the request limit: {len(truncated)} ({', '.join(truncated)})")
    for mode in modes:
        few = [r["instance_id"] for r in rows if r["lgrep"][mode]["files"] < 10]
        print(f"{mode}: questions whose {args.limit} chunks named fewer than 10 files: {len(few)}")
    print(
        f"scoring {len(rows)} questions: {score_s:.1f} s (states {timing['load_s']:.1f} s, lgrep "
        f"{timing['search_s']:.1f} s, floors {timing['floor_s']:.1f} s)"
    )
    if args.out:
        payload = {
            "date": time.strftime("%Y-%m-%d"),
            "data": str(args.data),
            "modes": modes,
            "limit": args.limit,
            "tables": table,
            "published": published,
            "truncated": truncated,
            "score_s": round(score_s, 1),
            "timing": {k: round(v, 1) for k, v in timing.items()},
            "builds": builds,
            "instances": rows,
        }
        write_json(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
