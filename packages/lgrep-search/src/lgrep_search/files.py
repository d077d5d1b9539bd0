"""Files as answers: which files to open for a question, each ranked by all of its evidence.

A chunk answer shows the best pieces; "which file do I open for this task" is better answered by
adding up what each file has going for it. Each kind of evidence ranks the files on its own, and the
rankings are fused by reciprocal rank (as the chunk channels are, fusion.py, with a smaller constant:
FILE_RRF_K):

- its chunks: the best three candidate chunks' scores after the ranking signals, decaying;
- the whole file's BM25 (its chunks' terms summed, lexical.LexicalIndex.grouped), which rewards a
  file that uses many of the question's words across its length;
- its chunks' best cosine similarity to the question;
- definitions: the files that define the names the question mentions, rarer names first;
- mentions: the project's files the question names (traceback frames first, innermost first);
- the title: for a task question whose title names code, the whole file's BM25 of the title's
  words alone (the title says what is wrong; the body adds output, code and guesses);
- the messages it quotes: for a task question, the files whose code raises, warns or logs a message
  the question quotes word for word (messages.py): where a printed error is decided.

Then tests, examples and docs are scaled down as in the chunk ranking (signals/penalty.py), unless the
question asks for them. Last, a leading file's counterpart (its header, its type declarations:
counterparts.py) follows it when some evidence found it.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from lgrep_core.domain.models import ChunkKind, ContentType

from .corpus import Corpus
from .counterparts import counterpart, counterpart_why
from .file_model import FileModel, feature_matrix
from .fusion import Candidate
from .history import HistoryIndex
from .lexical import query_terms
from .query import ParsedQuery
from .signals.path_match import PATH_PREFIX_MIN
from .signals.penalty import PATH_RULES, path_penalty

__all__ = ["FILE_CHANNEL_DEPTH", "Evidence", "RankedFile", "rank_files"]

# How many chunks each channel passes on in a files search: a file's evidence is spread over its chunks.
FILE_CHANNEL_DEPTH = 300
# Files each evidence list ranks before fusion.
FILE_LIST_DEPTH = 100
# A file's chunk evidence: its best chunk, and these shares of its next ones.
CHUNK_DECAY = (1.0, 0.5, 0.25)
# Reciprocal-rank fusion of the file lists: weight / (FILE_RRF_K + rank). Smaller than the chunk
# channels' RRF_K (60): a file list is short and its first places mean more, so how high a file
# ranks in a list counts, not only in how many lists it is. Chosen on issues-dev's train split
# (30 of 2, 5, 10, 20, 30, 60; docs/benchmarks.md, session 40).
FILE_RRF_K = 30
# The fusion weight of each evidence list.
# The title's list (a task question whose title names code) counts half, chosen on issues-dev's
# train split (0.25 / 0.5 / 1; docs/benchmarks.md, session 41). The quoted messages' list counts
# half too: train could not tell 0.5 from 1, dev and SWE-bench lost fewer answers with 0.5 (session 43).
EVIDENCE_WEIGHTS = {
    "chunks": 1.0,
    "file_bm25": 1.0,
    "vector": 1.0,
    "defines": 1.0,
    "named": 1.0,
    "path": 0.5,
    "title": 0.5,
    "message": 0.5,
}
# A leading file's counterpart (counterparts.py: its header, its type declarations, ...) follows it
# when some evidence found the counterpart too: one of the first COUNTERPART_DEPTH files follows
# each of the first COUNTERPART_LEADS. Issues-dev dev (225, 10-file answers): Acc@5 67.1 -> 68.4,
# JavaScript 68.3 -> 73.3; without the evidence rule Acc@3 fell (docs/benchmarks.md, session 41).
COUNTERPART_LEADS = 2
COUNTERPART_DEPTH = 30
# Chunks whose line ranges a file answer shows.
RANGES_SHOWN = 3
# How much a definition of a question's name counts, by where the question uses the name.
NAME_WEIGHTS = {"title": 2.0, "called": 1.5, "other": 1.0}
# Names of a task question whose definitions are looked up (the first ones: frames, calls, dotted
# names, code, then prose).
MAX_NAMES = 40
# A package file (`__init__.py`) with more definitions than this is a module, not a re-export barrel.
REEXPORT_MAX_DEFINITIONS = 3
_REEXPORT_FACTOR = next(rule.factor for rule in PATH_RULES if rule.name == "reexport")
# A task question's files answer lists the files to change: docs (changelogs, translation catalogs,
# manuals) count this much less again, unless the question asks for docs. Chosen on issues-dev's
# train split (0.5 / 0.2 alike: Acc@5 38.7 -> 39.2 on 217), then dev 68.0 -> 68.4, Sphinx 75.0 ->
# 81.2, SymPy unchanged (docs/benchmarks.md, session 41).
TASK_DOCS_FACTOR = 0.5
# Documentation folders: 4 of the ~2,400 files issues-dev's and swebench-dev's fixes changed live
# in one (docs/conf.py and the like); the rest is docs, generated manuals and their build scripts.
_DOCS_FOLDER = re.compile(r"(?:^|/)(?:docs?|documentation)/")
# A task question's files answer also counts as vendored what C and C++ projects keep at their
# root under these names (redis's deps/, simdjson's dependencies/jsoncppdist/) and the build tools'
# wrappers (Maven's .mvn/, Gradle's wrapper): other projects' code, rarely where a fix goes (1 of
# issues-dev's 2,961 gold files). Only here: chunk answers keep the rules the public set was
# measured with (signals/penalty.py).
_TASK_VENDORED = re.compile(r"^(?:deps|dependencies|extern)/|(?:^|/)(?:\.mvn|gradle/wrapper)/")
_VENDORED_FACTOR = next(rule.factor for rule in PATH_RULES if rule.name == "vendored")
_DEFINING_KINDS = frozenset(k.value for k in (ChunkKind.FUNCTION, ChunkKind.METHOD, ChunkKind.CLASS, ChunkKind.MODULE))


@dataclass(slots=True)
class Evidence:
    """One question's evidence, for tools that learn from it (tools/train_file_ranker.py): per list
    the files in rank order and their raw scores (file -> score), the kind of each named file
    (frame, mention, module, import), and per candidate file its chunk count, candidate chunks, penalty
    factor and fused score."""

    ranks: dict[str, list[int]]
    scores: dict[str, dict[int, float]]
    named_kind: dict[int, str]
    chunks: dict[int, int]
    candidates: dict[int, int]
    penalty: dict[int, float]
    fused: dict[int, float]
    # What else is known of a candidate (file_model.FACTS names them): how many of the question's
    # names it defines and whether the title's, a called one or an error's are among them, whether
    # it is the innermost frame, how well it matches the title alone, which path rules apply.
    facts: dict[int, dict[str, float]] = field(default_factory=dict)


@dataclass(slots=True)
class RankedFile:
    file: int  # index into corpus.files
    score: float
    chunks: list[int]  # its best candidate chunks, best first
    ranks: dict[str, int] = field(default_factory=dict)  # evidence list -> 0-based rank
    why: list[str] = field(default_factory=list)


def rank_files(
    corpus: Corpus,
    query: ParsedQuery,
    cands: dict[int, Candidate],
    *,
    sims: np.ndarray | None,
    mask: np.ndarray | None,
    limit: int,
    on_evidence: Callable[[list[int], Evidence], None] | None = None,
    model: FileModel | None = None,
    history: HistoryIndex | None = None,
) -> list[RankedFile]:
    """The `limit` best files for `query`, from the ranked candidate chunks `cands` (scores after the
    ranking signals), the per-chunk cosine similarities `sims` (None without vectors) and the
    corpus's file-level indexes. Files outside `mask` (by their chunks) are never ranked.

    `on_evidence(files, evidence)` sees every file some list found (sorted) and all of the evidence
    (tools/train_file_ranker.py learns from it). With `model` (file_model.py), a task question's
    files are ranked by the model's score of their evidence instead of the fused one; `history`
    (history.py) adds the repository's history to a task question's evidence."""
    n_files = len(corpus.files)
    if n_files == 0:
        return []
    file_ok = _file_mask(corpus, mask)
    lists: dict[str, list[int]] = {}
    reasons: dict[int, list[str]] = defaultdict(list)

    by_file: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for i, c in cands.items():
        by_file[int(corpus.file_of[i])].append((c.score, i))
    for chunks in by_file.values():
        chunks.sort(reverse=True)
    chunk_score = {
        f: sum(w * s for w, (s, _) in zip(CHUNK_DECAY, chunks, strict=False)) for f, chunks in by_file.items()
    }
    lists["chunks"] = sorted(chunk_score, key=lambda f: (-chunk_score[f], f))[:FILE_LIST_DEPTH]

    bm25 = corpus.file_lexical.scores(query.terms, None, query.weights)
    bm25[~file_ok] = 0.0
    lists["file_bm25"] = _top(bm25, positive=True)

    best: np.ndarray | None = None
    if sims is not None and np.isfinite(sims).any():
        best = np.full(n_files, -np.inf, dtype=np.float32)
        np.maximum.at(best, corpus.file_of, sims)
        best[~file_ok] = -np.inf
        lists["vector"] = _top(best, positive=False)

    defined: dict[int, dict[str, float]] = defaultdict(dict)
    defines = _defining_files(corpus, query, file_ok, reasons, defined)
    if defines:
        lists["defines"] = sorted(defines, key=lambda f: (-defines[f], f))[:FILE_LIST_DEPTH]
    named_kind: dict[int, str] = {}
    named = _named_files(corpus, query, file_ok, reasons, named_kind)
    if named:
        lists["named"] = named[:FILE_LIST_DEPTH]
    counts: np.ndarray | None = None
    if query.keywords:
        counts = corpus.path_match_counts(query.keywords, PATH_PREFIX_MIN).astype(np.float32)
        counts[~file_ok] = 0.0
        lists["path"] = _top(counts, positive=True)
    if query.parts is not None:
        quoted = _quoting_files(corpus, query, file_ok, reasons)
        if quoted:
            lists["message"] = quoted[:FILE_LIST_DEPTH]
    learned = model is not None and query.parts is not None
    # The title's words: a list when the title names code, a fact when the evidence is read.
    title: np.ndarray | None = None
    if (
        query.parts is not None
        and query.parts.title
        and (query.parts.title_names or on_evidence is not None or learned)
    ):
        title = corpus.file_lexical.scores(query_terms(query.parts.title))
        title[~file_ok] = 0.0
        if query.parts.title_names:
            lists["title"] = _top(title, positive=True)

    ranked: dict[int, RankedFile] = {}
    for name, files in lists.items():
        weight = EVIDENCE_WEIGHTS[name]
        for rank, f in enumerate(files):
            r = ranked.get(f)
            if r is None:
                r = ranked[f] = RankedFile(f, 0.0, [i for _, i in by_file.get(f, [])[:RANGES_SHOWN]])
            r.ranks[name] = rank
            r.score += weight / (FILE_RRF_K + rank + 1)
    factors: dict[int, float] = {}
    rules: dict[int, list[str]] = {}
    for f, r in ranked.items():
        r.why.extend(reasons.get(f, ()))
        factor, applied = _file_penalty(corpus, f, query)
        factors[f] = factor
        rules[f] = applied
        if applied:
            r.score *= factor
            r.why.append(f"{'+'.join(applied)} file")
    # Past commits like the question: a why line always, features only when evidence is read.
    liked = history.like_question(query.terms) if history is not None and query.parts is not None else None
    if liked is not None and history is not None:
        for f, text in _history_why(corpus, ranked, history, liked).items():
            ranked[f].why.append(text)
    if on_evidence is not None or learned:
        pool = sorted(ranked)
        evidence = Evidence(
            ranks=lists,
            scores={
                "chunks": chunk_score,
                "file_bm25": {f: float(bm25[f]) for f in pool},
                "vector": {f: float(best[f]) for f in pool if np.isfinite(best[f])} if best is not None else {},
                "defines": defines,
                "path": {f: float(counts[f]) for f in pool} if counts is not None else {},
            },
            named_kind=named_kind,
            chunks={f: len(corpus.chunks_of(f)) for f in pool},
            candidates={f: len(by_file.get(f, ())) for f in pool},
            penalty=factors,
            fused={f: ranked[f].score for f in pool},
            facts=_facts(
                corpus,
                query,
                pool,
                defined=defined,
                named=named,
                named_kind=named_kind,
                rules=rules,
                fused={f: ranked[f].score for f in pool},
                history=history,
                liked=liked,
                title=title,
            ),
        )
        if on_evidence is not None:
            on_evidence(pool, evidence)
        if learned and pool:
            assert model is not None
            for f, score in zip(pool, model.scores(feature_matrix(pool, evidence)).tolist(), strict=True):
                ranked[f].score = 1.0 / (1.0 + math.exp(-min(max(score, -50.0), 50.0)))
    order = _with_counterparts(corpus, sorted(ranked.values(), key=lambda r: (-r.score, r.file)))[:limit]
    chunk_bm25: np.ndarray | None = None
    for r in order:
        if not r.chunks:  # found by file-level evidence only: show its chunks BM25 likes best
            if chunk_bm25 is None:
                chunk_bm25 = corpus.lexical.scores(query.terms, None, query.weights)
            r.chunks = _best_chunks(corpus, r.file, chunk_bm25)
    return order


def _with_counterparts(corpus: Corpus, order: list[RankedFile]) -> list[RankedFile]:
    """`order` with each of its first COUNTERPART_LEADS files followed by its counterpart, when that
    is among the first COUNTERPART_DEPTH files; the counterpart takes its lead's score."""
    out = list(order)
    depth = {r.file for r in order[:COUNTERPART_DEPTH]}
    for i in range(min(COUNTERPART_LEADS, len(out))):
        lead = out[i]
        c = counterpart(corpus, lead.file)
        if c is None or c not in depth:
            continue
        j = next(k for k, r in enumerate(out) if r.file == c)
        if j <= i + 1:
            continue
        moved = out.pop(j)
        moved.score = lead.score
        moved.why.append(counterpart_why(corpus.files[c], corpus.files[lead.file]))
        out.insert(i + 1, moved)
    return out


# ------------------------------------------------------------------------------------ penalties


def _file_penalty(corpus: Corpus, f: int, query: ParsedQuery) -> tuple[float, list[str]]:
    """The chunk ranking's path penalties (signals/penalty.py), read for a whole file: prose and
    data around the code (docs, changelogs, translation catalogs, configuration) count as docs,
    and so does every file of a documentation folder (a generated manual, the docs' own build
    script), since the files to open for a task are its code unless the question asks for docs, and
    for a task question they count TASK_DOCS_FACTOR less again; a package's `__init__.py` is a
    re-export barrel only when it defines little."""
    chunks = corpus.chunks_of(f)
    content_type = corpus.content_types[chunks.start] if len(chunks) else ""
    path = corpus.files[f]
    is_docs = content_type != ContentType.CODE.value or _DOCS_FOLDER.search(path) is not None
    factor, applied = path_penalty(path, is_docs, query)
    if "docs" in applied and query.parts is not None:
        factor *= TASK_DOCS_FACTOR
    if (
        query.parts is not None
        and "vendored" not in applied
        and "vendored" not in query.asks_for
        and _TASK_VENDORED.search(path)
    ):
        factor *= _VENDORED_FACTOR
        applied.append("vendored")
    if "reexport" in applied and sum(corpus.kinds[i] in _DEFINING_KINDS for i in chunks) > REEXPORT_MAX_DEFINITIONS:
        factor /= _REEXPORT_FACTOR
        applied.remove("reexport")
    return factor, applied


# ------------------------------------------------------------------------------------- evidence


def _file_mask(corpus: Corpus, mask: np.ndarray | None) -> np.ndarray:
    if mask is None:
        return np.ones(len(corpus.files), dtype=bool)
    ok = np.zeros(len(corpus.files), dtype=bool)
    ok[corpus.file_of[mask]] = True
    return ok


def _top(scores: np.ndarray, *, positive: bool) -> list[int]:
    """The FILE_LIST_DEPTH best files by `scores`, ties by file order. Not retrieval.top: its
    partial sort leaves which of several tied files make the cut to chance, and a file list's cut
    often falls among ties (counts of path words, equal BM25 of copies)."""
    valid = scores > 0 if positive else np.isfinite(scores)
    idx = np.flatnonzero(valid)
    order = idx[np.lexsort((idx, -scores[idx]))]
    return order[:FILE_LIST_DEPTH].tolist()


def _question_names(query: ParsedQuery) -> dict[str, float]:
    """The names whose definitions count, each with its weight: a name the title uses or the
    question calls (or a traceback runs) is surely the program's; one that only appears in pasted
    code or output may be the reporter's own."""
    parts = query.parts
    if parts is None:
        return dict.fromkeys(query.definition_names, NAME_WEIGHTS["title"])
    weights: dict[str, float] = {}
    for name in parts.identifiers[:MAX_NAMES]:
        weights[name] = NAME_WEIGHTS["other"]
    for name in parts.called:
        weights[name] = max(weights.get(name, 0.0), NAME_WEIGHTS["called"])
    for name in parts.title_names:
        weights[name] = NAME_WEIGHTS["title"]
    return weights


def _defining_files(
    corpus: Corpus,
    query: ParsedQuery,
    file_ok: np.ndarray,
    reasons: dict[int, list[str]],
    defined: dict[int, dict[str, float]],
) -> dict[int, float]:
    """File -> the summed weight x rarity (idf over files) of the question's names it defines (as a
    function, method, class or module: a config key or a heading named like it defines nothing).
    `defined` gets per file how many it defines, and whether a title's, a called or an error's name
    is among them."""
    names = _question_names(query)
    if not names:
        return {}
    parts = query.parts
    kinds = {
        "defines.title": set(parts.title_names) if parts else set(names),
        "defines.called": set(parts.called) if parts else set(),
        "defines.error": set(parts.errors) if parts else set(),
    }
    n_files = len(corpus.files)
    out: dict[int, float] = defaultdict(float)
    for name, weight in names.items():
        last = name.replace("::", ".").replace("->", ".").split(".")[-1]
        chunks = corpus.symbol_index.chunks_defining(last)
        file_of = (int(corpus.file_of[i]) for i in chunks.tolist() if corpus.kinds[i] in _DEFINING_KINDS)
        files = {f for f in file_of if file_ok[f]}
        if not files:
            continue
        idf = math.log1p(n_files / len(files))
        for f in files:
            out[f] += weight * idf
            facts = defined[f]
            facts["defines.names"] = facts.get("defines.names", 0.0) + 1.0
            for kind, members in kinds.items():
                if name in members:
                    facts[kind] = 1.0
            if len(reasons[f]) < 4:
                reasons[f].append(f"defines {last}")
    return out


def _facts(
    corpus: Corpus,
    query: ParsedQuery,
    pool: list[int],
    *,
    defined: dict[int, dict[str, float]],
    named: list[int],
    named_kind: dict[int, str],
    rules: dict[int, list[str]],
    fused: dict[int, float],
    history: HistoryIndex | None,
    liked: tuple[dict[str, float], dict[str, int]] | None,
    title: np.ndarray | None,
) -> dict[int, dict[str, float]]:
    """Evidence.facts of the candidate files `pool` (`liked`: the history's like_question; `title`:
    each file's BM25 of the title's words)."""
    out = {f: dict(defined.get(f, {})) for f in pool}
    innermost = next((f for f in named if named_kind.get(f) == "frame"), None)
    if innermost is not None and innermost in out:
        out[innermost]["named.innermost"] = 1.0
    if title is not None:
        best = float(title[pool].max()) if pool else 0.0
        if best > 0:
            for f in pool:
                out[f]["title.rel"] = float(title[f]) / best
    for f in pool:
        for rule in rules.get(f, ()):
            out[f][f"path.{rule}"] = 1.0
    if history is not None and liked is not None and len(history) and pool:
        _history_facts(corpus, pool, out, fused=fused, history=history, liked=liked)
    return out


# Files whose co-changes count: the fused ranking's first ones.
HISTORY_SEEDS = 3
# The files the best-matching past commits changed say so in their `why`, up to this rank among them.
HISTORY_WHY_RANKS = 3


def _history_why(
    corpus: Corpus, ranked: dict[int, RankedFile], history: HistoryIndex, liked: tuple[dict[str, float], dict[str, int]]
) -> dict[int, str]:
    """The candidates the best-matching past commits changed (the first HISTORY_WHY_RANKS of their
    files), each with the commit that says so."""
    by_message, commit_of = liked
    out: dict[int, str] = {}
    for path in sorted(by_message, key=lambda p: (-by_message[p], p))[:HISTORY_WHY_RANKS]:
        f = corpus.file_numbers.get(path)
        if f is not None and f in ranked:
            out[f] = f"changed by a past commit like this question ({history.describe(commit_of[path])})"
    return out


def _history_facts(
    corpus: Corpus,
    pool: list[int],
    out: dict[int, dict[str, float]],
    *,
    fused: dict[int, float],
    history: HistoryIndex,
    liked: tuple[dict[str, float], dict[str, int]],
) -> None:
    """The history's evidence for the candidates: past commits like the question (their score over
    the best file's, and the file's rank among theirs), co-change with the fused ranking's first
    files, and each file's activity."""
    by_message, _ = liked
    message_rank = {p: r for r, p in enumerate(sorted(by_message, key=lambda p: (-by_message[p], p)))}
    best = max(by_message.values(), default=0.0)
    seeds = [corpus.files[f] for f in sorted(pool, key=lambda f: (-fused.get(f, 0.0), f))[:HISTORY_SEEDS]]
    together = history.cochange(seeds)
    most = max(together.values(), default=0.0)
    for f in pool:
        path = corpus.files[f]
        facts = out[f]
        if best > 0 and path in by_message:
            facts["history.msg.rel"] = by_message[path] / best
            facts["history.msg.top"] = 1.0 / (message_rank[path] + 1)
        if most > 0 and path in together:
            facts["history.co.rel"] = together[path] / most
        count, recent = history.activity(path)
        if count:
            facts["history.freq"] = math.log1p(count)
            facts["history.recent"] = recent


def _quoting_files(corpus: Corpus, query: ParsedQuery, file_ok: np.ndarray, reasons: dict[int, list[str]]) -> list[int]:
    """The files whose messages (messages.py) a task question quotes, the longest quote first."""
    quoted = corpus.message_index.quoted(query.text)
    numbers = corpus.file_numbers
    found = sorted(
        ((len(words), numbers[path], words) for path, words in quoted.items() if path in numbers),
        key=lambda q: (-q[0], q[1]),
    )
    out: list[int] = []
    for _n, f, words in found:
        if not file_ok[f]:
            continue
        out.append(f)
        if len(reasons[f]) < 4:
            reasons[f].append(f'emits "{" ".join(words)[:80]}", which the question quotes')
    return out


def _named_files(
    corpus: Corpus, query: ParsedQuery, file_ok: np.ndarray, reasons: dict[int, list[str]], kinds: dict[int, str]
) -> list[int]:
    """The project's files the question names: the traceback's frames innermost first, then the
    other paths in the order written, then modules of qualified names; `kinds` gets each one's
    kind (frame, mention, module). A path written from elsewhere (`/usr/lib/python3/site-packages/
    pkg/mod.py`, `./src/a.ts`) names the project file it ends with."""
    parts = query.parts
    if parts is None:
        return []
    framed = [f.path for f in reversed(parts.frames)]
    out: list[int] = []
    for written in (*framed, *parts.paths):
        f = _project_file(corpus, written)
        if f is not None and file_ok[f] and f not in out:
            out.append(f)
            kinds[f] = "frame" if written in framed else "mention"
            reasons[f].append("named in the traceback" if written in framed else "named in the question")
    # Modules the question's code imports come last: a report's setup, often not where it is decided.
    modules = [(d, "module", f"module of {d}") for d in parts.dotted]
    modules += [(d, "import", f"imported in the question ({d.replace('.', '/')})") for d in parts.imports]
    for dotted, kind, reason in modules:
        f = _module_file(corpus, dotted)
        if f is not None and file_ok[f] and f not in out:
            out.append(f)
            kinds[f] = kind
            reasons[f].append(reason)
    return out


def _module_file(corpus: Corpus, dotted: str) -> int | None:
    """The project file a qualified name refers to as a module (`sympy.physics.vector.printing.vlatex`
    -> sympy/physics/vector/printing.py; `com.acme.Foo` -> src/main/java/com/acme/Foo.java): the
    longest leading part of the name (two parts at least) that a file's path, without its extension
    and a package's `__init__`/`index`/`mod`, ends with."""
    parts = dotted.split(".")
    stems = corpus.module_paths
    for end in range(len(parts), 1, -1):
        key = "/".join(parts[:end])
        for f in stems.get(parts[end - 1], ()):
            module = corpus.module_path(f)
            if module == key or module.endswith("/" + key):
                return f
    return None


def _project_file(corpus: Corpus, written: str) -> int | None:
    """The project file a path written in a question names: the file whose path is the longest
    suffix of it (at least its name and one folder, or the name alone when only one file has it)."""
    parts = [p for p in posixpath.normpath(written.replace("\\", "/")).split("/") if p not in ("", ".", "..")]
    numbers = corpus.file_numbers
    for start in range(len(parts)):
        candidate = "/".join(parts[start:])
        f = numbers.get(candidate)
        if f is not None and (len(parts) - start >= 2 or start == 0):
            return f
    if parts:
        same = corpus.files_with_name(parts[-1])
        if len(same) == 1:
            return same[0]
    return None


def _best_chunks(corpus: Corpus, f: int, chunk_bm25: np.ndarray) -> list[int]:
    chunks = corpus.chunks_of(f)
    if len(chunks) == 0:
        return []
    scores = chunk_bm25[chunks.start : chunks.stop]
    order = np.argsort(-scores, kind="stable")[:RANGES_SHOWN]
    return [chunks.start + int(k) for k in order if scores[k] > 0] or [chunks.start]
