"""Files as answers (files.py): each file ranked by all of its evidence, through `Searcher.search`."""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from lgrep_core.domain.history import Commit, History
from lgrep_core.domain.models import Chunk, ChunkKind, ContentType, SearchRequest
from lgrep_core.storage.layout import HISTORY_FILE, write_history
from lgrep_search import files as files_module
from lgrep_search.corpus import Corpus
from lgrep_search.file_model import FEATURES, FileModel, shipped_model
from lgrep_search.files import Evidence
from lgrep_search.history import HistoryIndex
from lgrep_search.searcher import Searcher


def _chunk(path: str, symbol: str, content: str, kind: ChunkKind = ChunkKind.FUNCTION, line: int = 1) -> Chunk:
    content_type = ContentType.DOCS if path.endswith(".md") else ContentType.CODE
    language = "markdown" if path.endswith(".md") else "python"
    lines = content.count("\n") + 1
    return Chunk(path, language, line, line + lines - 1, content, kind, symbol, (symbol,), "", content_type)


def _code(language: str, path: str, symbol: str, body: str) -> Chunk:
    return Chunk(path, language, 1, 3, body, ChunkKind.FUNCTION, symbol, (symbol,), "", ContentType.CODE)


def _searcher() -> Searcher:
    chunks = [
        _chunk(
            "pkg/matrices/dense.py", "extract", "def extract(self, rows, cols):\n    return [a2idx(k) for k in cols]"
        ),
        _chunk(
            "pkg/matrices/dense.py", "a2idx", "def a2idx(j, n):\n    raise IndexError('Index out of range')", line=9
        ),
        _chunk("pkg/matrices/shape.py", "is_upper", "def is_upper(self):\n    return all(self[i, j].is_zero)"),
        _chunk("pkg/printing/latex.py", "latex", "def latex(expr):\n    '''Print an expression as LaTeX.'''"),
        _chunk("tests/test_matrices.py", "test_is_upper", "def test_is_upper():\n    assert zeros(4, 2).is_upper"),
        _chunk(
            "docs/matrices.md",
            "Matrices",
            "# Matrices\nis_upper tells whether a matrix is upper triangular.",
            ChunkKind.SECTION,
        ),
    ]
    return Searcher(None, None, corpus=Corpus.of_chunks(chunks))


ISSUE = """is_upper() raises IndexError for tall matrices
Calling is_upper on a 4x2 matrix of zeros fails:
```
Traceback (most recent call last):
  File "/home/me/venv/lib/python3.11/site-packages/pkg/matrices/dense.py", line 10, in a2idx
    raise IndexError("Index out of range")
IndexError: Index out of range: a[2]
```
"""


def test_a_files_answer_ranks_files_with_their_best_lines() -> None:
    answer = _searcher().search(SearchRequest(ISSUE, limit=3, files=True))
    assert answer.results == [] and len(answer.files) == 3
    paths = [f.path for f in answer.files]
    assert set(paths[:2]) == {
        "pkg/matrices/shape.py",
        "pkg/matrices/dense.py",
    }  # defines the title's name; the traceback's
    dense = next(f for f in answer.files if f.path == "pkg/matrices/dense.py")
    assert "named in the traceback" in dense.why
    assert (dense.ranges[0].start_line, dense.ranges[0].symbol) in {(9, "a2idx"), (1, "extract")}
    shape = next(f for f in answer.files if f.path == "pkg/matrices/shape.py")
    assert "defines is_upper" in shape.why and shape.language == "python"


def test_a_task_questions_chunk_answer_carries_the_files_it_was_ranked_by() -> None:
    searcher = _searcher()
    files_answer = searcher.search(SearchRequest(ISSUE, limit=3, files=True)).files
    answer = searcher.search(SearchRequest(ISSUE, limit=3))
    assert answer.files == files_answer  # the same files, in the same order
    assert answer.results and {h.path for h in answer.results} <= {f.path for f in answer.files}
    assert answer.results[0].path == answer.files[0].path
    short = searcher.search(SearchRequest("is_upper", limit=3))  # not a task question: chunks only
    assert short.results and short.files == []


def test_tests_and_docs_rank_below_the_source_unless_asked_for() -> None:
    searcher = _searcher()
    source_first = [f.path for f in searcher.search(SearchRequest("is_upper zeros matrix", files=True)).files]
    assert source_first[0] == "pkg/matrices/shape.py"
    assert source_first.index("tests/test_matrices.py") > 0 and source_first.index("docs/matrices.md") > 0
    asked = [f.path for f in searcher.search(SearchRequest("tests of is_upper for zeros", files=True)).files]
    assert asked.index("tests/test_matrices.py") < source_first.index("tests/test_matrices.py")


def test_the_limit_counts_files_and_filters_apply() -> None:
    searcher = _searcher()
    assert len(searcher.search(SearchRequest(ISSUE, limit=1, files=True)).files) == 1
    kept = searcher.search(SearchRequest(ISSUE, files=True, path_glob="pkg/printing/**")).files
    assert [f.path for f in kept] in ([], ["pkg/printing/latex.py"])


# --------------------------------------------------------------------------- evidence for tools


def test_the_evidence_hook_sees_every_found_file_and_what_found_it() -> None:
    """tools/train_file_ranker.py learns from this: every file a list found, the lists' ranks and
    scores, each named file's kind and each file's penalty."""
    searcher = _searcher()
    seen: list[tuple[list[int], Evidence]] = []
    searcher.on_file_evidence = lambda files, ev: seen.append((files, ev))
    answer = searcher.search(SearchRequest(ISSUE, limit=2, files=True))
    assert len(answer.files) == 2 and len(seen) == 1
    files, ev = seen[0]
    corpus = searcher.corpus()
    paths = {corpus.files[f]: f for f in files}
    assert files == sorted(files) and len(files) > len(answer.files)
    dense, shape = paths["pkg/matrices/dense.py"], paths["pkg/matrices/shape.py"]
    assert ev.named_kind[dense] == "frame" and ev.ranks["named"][0] == dense
    assert shape in ev.ranks["defines"] and ev.scores["defines"][shape] > 0
    assert ev.penalty[paths["tests/test_matrices.py"]] < 1.0 == ev.penalty[dense]
    assert set(ev.fused) == set(files) and ev.chunks[dense] == 2
    # what else is known: the title's name defined where, the innermost frame, the path rules
    assert ev.facts[shape]["defines.title"] == 1.0 and ev.facts[shape]["defines.names"] >= 1
    assert ev.facts[dense]["named.innermost"] == 1.0 and "named.innermost" not in ev.facts[shape]
    assert ev.facts[paths["tests/test_matrices.py"]]["path.test"] == 1.0
    assert ev.facts[paths["docs/matrices.md"]]["path.docs"] == 1.0
    assert max(ev.facts[f].get("title.rel", 0.0) for f in files) == 1.0


# --------------------------------------------------------------------------- a learned ranking


def _model(**weights: float) -> FileModel:
    n = len(FEATURES)
    w = np.zeros(n)
    for name, value in weights.items():
        w[FEATURES.index(name)] = value
    return FileModel(FEATURES, np.zeros(n), np.ones(n), w)


def test_a_model_re_ranks_a_task_questions_files_and_leaves_short_questions_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import lgrep_search.searcher as searcher_module

    searcher = _searcher()
    fused = [f.path for f in searcher.search(SearchRequest(ISSUE, limit=6, files=True)).files]
    # a model that prefers what the path penalties push down puts a test or a doc first
    monkeypatch.setattr(searcher_module, "shipped_model", lambda: _model(**{"penalty.log": -1.0}))
    learned = searcher.search(SearchRequest(ISSUE, limit=6, files=True)).files
    penalised = {"tests/test_matrices.py", "docs/matrices.md"}
    assert fused[0] not in penalised and learned[0].path in penalised and 0.0 < learned[0].score < 1.0
    short = "is_upper zeros matrix"
    off = Searcher(None, None, corpus=searcher.corpus(), disable=frozenset({"file_model"}))
    assert [f.path for f in searcher.search(SearchRequest(short, files=True)).files] == [
        f.path for f in off.search(SearchRequest(short, files=True)).files
    ]
    # turned off, the task question is ranked by fused evidence again
    assert [f.path for f in off.search(SearchRequest(ISSUE, limit=6, files=True)).files] == fused


def test_a_model_file_for_other_features_or_with_broken_numbers_is_refused() -> None:
    good = {"features": list(FEATURES), "mean": [0.0] * len(FEATURES), "scale": [1.0] * len(FEATURES)}
    assert FileModel.from_json({**good, "weights": [0.5] * len(FEATURES)}).features == FEATURES
    for weights in ([0.5] * (len(FEATURES) - 1), [float("nan")] * len(FEATURES)):
        with pytest.raises(ValueError):
            FileModel.from_json({**good, "weights": weights})
    shipped = shipped_model()
    assert shipped is None or shipped.features == FEATURES


# --------------------------------------------------------------------------- the history as evidence


def test_the_history_adds_past_commits_like_the_question_co_change_and_activity() -> None:
    day = 86400
    history = History(
        head="c3",
        commits=(
            Commit("c3", 400 * day, "Add a LaTeX printer", ("pkg/printing/latex.py", "pkg/matrices/shape.py")),
            Commit("c2", 300 * day, "Fix IndexError in a2idx for tall matrices", ("pkg/matrices/dense.py",)),
            Commit("c1", 10 * day, "Start", ("pkg/matrices/dense.py", "docs/matrices.md")),
        ),
    )
    index = HistoryIndex(history)
    assert set(index.by_messages(["indexerror", "tall", "matric"])) <= {"pkg/matrices/dense.py"}
    searcher = Searcher(None, None, corpus=_searcher().corpus(), history=index)
    seen: list[tuple[list[int], Evidence]] = []
    searcher.on_file_evidence = lambda files, ev: seen.append((files, ev))
    searcher.search(SearchRequest(ISSUE, limit=3, files=True))
    files, ev = seen[0]
    corpus = searcher.corpus()
    facts = {corpus.files[f]: ev.facts[f] for f in files}
    dense, shape = facts["pkg/matrices/dense.py"], facts["pkg/matrices/shape.py"]
    assert dense["history.msg.rel"] == 1.0 and dense["history.msg.top"] == 1.0  # c2 reads like the issue
    assert dense["history.freq"] == pytest.approx(math.log1p(2)) and shape["history.freq"] == pytest.approx(
        math.log1p(1)
    )
    assert shape["history.recent"] == 1.0 and dense["history.recent"] < 1.0  # shape.py changed in the newest
    assert facts["docs/matrices.md"]["history.co.rel"] == 1.0  # changed with dense.py, a first file
    assert "history.msg.rel" not in facts["tests/test_matrices.py"]
    answer = {f.path: f for f in searcher.search(SearchRequest(ISSUE, limit=6, files=True)).files}
    said = "changed by a past commit like this question (c2 Fix IndexError in a2idx for tall matrices)"
    assert said in answer["pkg/matrices/dense.py"].why  # the agent sees which commit
    # a short question reads no history
    seen.clear()
    searcher.search(SearchRequest("is_upper", files=True))
    assert not any(k.startswith("history.") for f in seen[0][1].facts.values() for k in f)


def test_a_searcher_reads_the_history_kept_beside_the_index_again_when_it_changes(tmp_path: Path) -> None:
    snapshots = SimpleNamespace(reader=SimpleNamespace(dir=tmp_path))
    searcher = Searcher(snapshots, None)  # type: ignore[arg-type]
    assert searcher.history() is None  # none kept yet
    write_history(tmp_path, History("c1", (Commit("c1", 1, "Start", ("a.py",)),)))
    first = searcher.history()
    assert first is not None and first.head == "c1" and searcher.history() is first  # read once
    write_history(tmp_path, History("c2", (Commit("c2", 2, "Fix a", ("a.py",)), Commit("c1", 1, "Start", ()))))
    second = searcher.history()
    assert second is not None and second.head == "c2" and len(second) == 2
    (tmp_path / HISTORY_FILE).write_bytes(b"damaged")
    assert searcher.history() is None


def test_a_module_the_questions_code_imports_is_named_last_as_an_import() -> None:
    corpus = Corpus.of_chunks(
        [
            _code("javascript", "src/index.js", "format", "function format(str) { return parse(str) }"),
            _code("javascript", "src/plugin/utc/index.js", "utc", "function utc(config) { return config.utc }"),
            _code("javascript", "src/plugin/weekday/index.js", "weekday", "function weekday(input) { return input }"),
        ]
    )
    issue = (
        "format() drops the offset in UTC mode\n"
        "```js\nimport utc from 'dayjs/plugin/utc'\ndayjs.extend(utc)\ndayjs.utc().format()\n```\n"
        "The offset is lost after formatting; it should be kept when the plugin is used.\n"
    )
    seen: list[Evidence] = []
    searcher = Searcher(None, None, corpus=corpus)
    searcher.on_file_evidence = lambda _files, ev: seen.append(ev)
    answer = searcher.search(SearchRequest(issue, files=True))
    utc = corpus.files.index("src/plugin/utc/index.js")
    assert seen[0].named_kind[utc] == "import"
    why = next(f.why for f in answer.files if f.path == "src/plugin/utc/index.js")
    assert "imported in the question (plugin/utc)" in why  # the package name is not a folder here


def test_a_link_to_the_projects_file_names_it() -> None:
    corpus = Corpus.of_chunks(
        [
            _code("javascript", "src/index.js", "locale", "function locale(preset) { return this.$L = preset }"),
            _code(
                "javascript",
                "src/plugin/timezone/index.js",
                "tz",
                "function tz(timezone) { return this.utcOffset(offset) }",
            ),
            _code("javascript", "src/locale/es.js", "es", "const locale = { name: 'es', months: 'enero' }"),
        ]
    )
    issue = (
        "Calling tz() overrides locale\n"
        "`dayjs().locale('es').tz('America/New_York').format('LLL')` gives the English locale.\n"
        "I believe this line overrides the current locale:\n"
        "https://github.com/iamkun/dayjs/blob/a9d7d0398d22ebd4bfc3812ca0134a97606d54d9/src/plugin/timezone/index.js#L98\n"
    )
    answer = Searcher(None, None, corpus=corpus).search(SearchRequest(issue, files=True))
    named = next(f for f in answer.files if f.path == "src/plugin/timezone/index.js")
    assert "named in the question" in named.why


def test_a_go_import_path_names_its_packages_own_file() -> None:
    corpus = Corpus.of_chunks(
        [
            _code("go", "clientconn.go", "Dial", "func Dial(target string) (*ClientConn, error) { return nil, nil }"),
            _code(
                "go", "balancer/grpclb/grpclb.go", "newLBBuilder", "func newLBBuilder() balancer.Builder { return nil }"
            ),
            _code(
                "go",
                "balancer/grpclb/grpclb_picker.go",
                "Pick",
                "func (p *rrPicker) Pick() (balancer.PickResult, error)",
            ),
        ]
    )
    issue = (
        "Remote balancer never reconnects after the stream breaks\n"
        '```go\nimport (\n\t"google.golang.org/grpc"\n\t_ "google.golang.org/grpc/balancer/grpclb"\n)\n```\n'
        "The client keeps the dead stream and every pick fails until the process restarts.\n"
    )
    answer = Searcher(None, None, corpus=corpus).search(SearchRequest(issue, files=True))
    own = next(f for f in answer.files if f.path == "balancer/grpclb/grpclb.go")
    assert any(w.startswith("imported in the question") for w in own.why)


def test_a_documentation_folders_code_counts_as_docs_in_a_files_answer() -> None:
    corpus = Corpus.of_chunks(
        [
            _code(
                "c",
                "doc/manual.html",
                "ZSTD_compressStream",
                "ZSTD_compressStream flushes the frame; see ZSTD_endStream",
            ),
            _code(
                "c", "lib/compress.c", "ZSTD_compressStream", "size_t ZSTD_compressStream(ZSTD_CStream* zcs) { flush }"
            ),
        ]
    )
    why = {
        f.path: f.why
        for f in Searcher(None, None, corpus=corpus)
        .search(SearchRequest("ZSTD_compressStream flush", files=True))
        .files
    }
    assert "docs file" in why["doc/manual.html"] and not any("docs" in w for w in why["lib/compress.c"])


def _fileio_corpus(header_words: str) -> Corpus:
    return Corpus.of_chunks(
        [
            _code(
                "c",
                "programs/fileio.c",
                "FIO_compressFilename",
                "int FIO_compressFilename(sparse output file) { sparse sparse sparse }",
            ),
            _code("c", "programs/bench.c", "BMK_sparse", "int BMK_sparse(sparse output) { sparse }"),
            _code("c", "programs/dibio.c", "DiB_sparse", "int DiB_sparse(sparse output) { sparse }"),
            _code("c", "programs/util.c", "UTIL_sparse", "int UTIL_sparse(sparse output) { sparse }"),
            _code("c", "programs/fileio.h", "ZSTD_setLevel", f"void ZSTD_setLevel(int {header_words});"),
        ]
    )


def test_a_leading_files_header_follows_it_when_evidence_found_the_header() -> None:
    files = (
        Searcher(None, None, corpus=_fileio_corpus("output"))
        .search(SearchRequest("sparse output is corrupted by FIO_compressFilename", files=True))
        .files
    )
    paths = [f.path for f in files]
    assert paths[:2] == ["programs/fileio.c", "programs/fileio.h"], paths
    assert "the header of programs/fileio.c" in files[1].why
    assert files[1].score == files[0].score  # scores stay in the answer's order


def test_a_counterpart_no_evidence_found_is_not_added() -> None:
    files = (
        Searcher(None, None, corpus=_fileio_corpus("level"))
        .search(SearchRequest("sparse output is corrupted by FIO_compressFilename", files=True))
        .files
    )
    assert "programs/fileio.h" not in [f.path for f in files]


def _printing_corpus() -> Corpus:
    return Corpus.of_chunks(
        [
            _chunk(
                "pkg/printing/pretty.py",
                "_print_Product",
                "def _print_Product(self, expr):\n    # draws the sign\n    return self.wide_sign(expr)",
            ),
            _chunk(
                "pkg/concrete/products.py",
                "Product",
                "class Product(ExprWithLimits):\n    def doit(self):\n"
                "        # evaluate each term between the limits of the product\n"
                "        return self.term.evaluate(self.limits)",
            ),
            _chunk("pkg/core/expr.py", "Expr", "class Expr:\n    def evaluate(self, limits):\n        return self"),
        ]
    )


_BODY = """When I evaluate the product of a term between limits the result looks odd:
```
>>> pretty_print(p)
```
the term between the limits evaluates, and the limits of the product are right.
"""


def _title_evidence(question: str) -> tuple[Evidence, dict[str, float]]:
    seen: list[Evidence] = []
    searcher = Searcher(None, None, corpus=_printing_corpus())
    searcher.on_file_evidence = lambda _files, evidence: seen.append(evidence)
    files = searcher.search(SearchRequest(question, files=True)).files
    return seen[0], {f.path: f.score for f in files}


def test_a_title_that_names_code_ranks_files_by_its_words(monkeypatch: pytest.MonkeyPatch) -> None:
    question = "pretty_print() draws products too wide\n" + _BODY
    evidence, scores = _title_evidence(question)
    pretty = _printing_corpus().file_numbers["pkg/printing/pretty.py"]
    assert evidence.ranks["title"][0] == pretty  # "draws", "wide" are the title's words
    monkeypatch.setitem(files_module.EVIDENCE_WEIGHTS, "title", 0.0)
    _evidence, without = _title_evidence(question)
    gained = scores["pkg/printing/pretty.py"] - without["pkg/printing/pretty.py"]
    assert gained == pytest.approx(0.5 / (files_module.FILE_RRF_K + 1), abs=1e-5)  # scores shown rounded


def test_a_title_in_plain_words_has_no_list_of_its_own() -> None:
    evidence, _scores = _title_evidence("The printed products are drawn too wide\n" + _BODY)
    assert "title" not in evidence.ranks


def test_a_task_questions_files_answer_puts_docs_further_down(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = Corpus.of_chunks(
        [
            _chunk(
                "CHANGES.md", "Release 2.1", "# Release 2.1\nis_upper no longer raises IndexError", ChunkKind.SECTION
            ),
            _chunk("pkg/matrices/shape.py", "is_upper", "def is_upper(self):\n    return all(self[i, j].is_zero)"),
        ]
    )

    def scores(question: str) -> dict[str, float]:
        files = Searcher(None, None, corpus=corpus).search(SearchRequest(question, files=True)).files
        return {f.path: f.score for f in files}

    task, short = scores(ISSUE), scores("is_upper IndexError")
    monkeypatch.setattr(files_module, "TASK_DOCS_FACTOR", 1.0)
    assert scores(ISSUE)["CHANGES.md"] == pytest.approx(2 * task["CHANGES.md"], rel=1e-3)
    assert scores(ISSUE)["pkg/matrices/shape.py"] == task["pkg/matrices/shape.py"]
    assert scores("is_upper IndexError") == short  # a short question's docs keep the chunk ranking's factor


def test_a_task_questions_files_answer_puts_a_copied_in_dependency_below_the_projects_code() -> None:
    """A C++ project's root `dependencies/` (or `deps/`, `extern/`) holds other projects' code, and
    `.mvn/` a build tool's: below the project's own code for an issue, not for a short question."""
    corpus = Corpus.of_chunks(
        [
            _code(
                "cpp",
                "dependencies/jsoncppdist/json/json.h",
                "Value",
                "class Value { parse number parse string exceptions disabled value type number }",
            ),
            _code("cpp", "include/simdjson/dom/element.h", "element", "class element { number value type }"),
            _code("java", ".mvn/wrapper/MavenWrapperDownloader.java", "main", "parse the number of the value type"),
        ]
    )
    searcher = Searcher(None, None, corpus=corpus)
    issue = (
        "Parsing a number value gives the wrong type when exceptions are disabled\n"
        "With exceptions disabled the number value comes back with the wrong type:\n"
        "```cpp\nauto v = doc.get_number();\n```\n"
    )
    files = searcher.search(SearchRequest(issue, files=True)).files
    assert files[0].path == "include/simdjson/dom/element.h", [f.path for f in files]
    assert [w for f in files[1:] for w in f.why if w == "vendored file"] == ["vendored file"] * 2
    short = searcher.search(SearchRequest("parse number value type exceptions", files=True)).files
    assert short[0].path == "dependencies/jsoncppdist/json/json.h"


def test_a_task_questions_files_answer_finds_the_code_that_raises_the_message_it_quotes() -> None:
    """The file whose code raises the error the issue pasted is where the fix goes, though the
    question's names and words lead to where the symptom shows (Sphinx's option directive)."""
    corpus = Corpus.of_chunks(
        [
            _chunk(
                "sphinx/directives/code.py",
                "OptionDirective",
                "class OptionDirective:\n    '''The option directive: parse an option description.'''\n"
                "    def run(self):\n        return parse_option(self.option, self.description)",
                ChunkKind.CLASS,
            ),
            _chunk(
                "sphinx/domains/std.py",
                "handle_signature",
                "def handle_signature(self, sig, signode):\n    m = option_desc_re.match(sig)\n    if not m:\n"
                '        logger.warning(__(\'Malformed option description %r, should look like "opt", '
                '"-opt args"\'), sig, location=signode)',
            ),
        ]
    )
    searcher = Searcher(None, None, corpus=corpus)
    issue = (
        "Sphinx 3.2 complains about option:: syntax that earlier versions accepted\n"
        "Our docs build with older versions:\n"
        "```\n.. option:: [enable=]PATTERN\n```\n"
        "Warning, treated as error:\n"
        "qemu-option-trace.rst.inc:4:Malformed option description '[enable=]PATTERN', should look like "
        '"opt", "-opt args"\n'
    )
    files = searcher.search(SearchRequest(issue, files=True)).files
    assert files[0].path == "sphinx/domains/std.py", [f.path for f in files]
    assert 'emits "should look like opt opt args", which the question quotes' in files[0].why
    without = dict(files_module.EVIDENCE_WEIGHTS, message=0.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(files_module, "EVIDENCE_WEIGHTS", without)
        assert searcher.search(SearchRequest(issue, files=True)).files[0].path == "sphinx/directives/code.py"
    short = searcher.search(SearchRequest("Malformed option description", files=True)).files
    assert all("which the question quotes" not in w for f in short for w in f.why)
