"""The two halves of a server, in process: ProjectSearchers (many projects, one model) and IndexJobs
(one writer per project; equal requests share one run)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from lgrep_core.domain.errors import IndexMismatchError, InvalidRequestError, NotFoundError
from lgrep_core.domain.models import IndexProgress, IndexSummary, SearchRequest
from lgrep_core.settings.config import load_settings
from lgrep_core.testing import FakeEmbedder
from lgrep_index import pipeline
from lgrep_index.jobs import IndexJobs
from lgrep_index.pipeline import Indexer
from lgrep_search.projects import ProjectSearchers


def _project(tmp_path: Path, name: str, files: int = 5) -> Path:
    root = tmp_path / name
    root.mkdir()
    for i in range(files):
        (root / f"mod{i}.py").write_text(f"def handler_{i}(request):\n    return request.reply({i})\n")
    return root


def _settings(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("LGREP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LGREP_CONFIG", str(tmp_path / "user.yaml"))
    (tmp_path / "user.yaml").write_text("{}\n")
    return load_settings(None).settings


def test_each_project_is_searched_with_its_own_settings(tmp_path: Path, monkeypatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    embedder = FakeEmbedder()
    a, b = _project(tmp_path, "a"), _project(tmp_path, "b")
    (b / ".lgrep.yaml").write_text("search:\n  limit: 2\n")
    for root in (a, b):
        Indexer(load_settings(root).settings, root, embedder).run()
    searchers = ProjectSearchers(settings, embedder, background=False)
    assert len(searchers.search(SearchRequest("handler request", project_root=str(a))).results) == 5
    assert len(searchers.search(SearchRequest("handler request", project_root=str(b))).results) == 2
    assert len(searchers.search(SearchRequest("handler", project_root=str(b), limit=4)).results) == 4
    assert {p.root for p in searchers.resident()} == {a.resolve(), b.resolve()}


def test_a_project_built_with_another_model_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    root = _project(tmp_path, "a")
    Indexer(settings, root, FakeEmbedder(model="other-model")).run()
    searchers = ProjectSearchers(settings, FakeEmbedder(), background=False)
    with pytest.raises(IndexMismatchError, match="other-model"):
        searchers.search(SearchRequest("handler", project_root=str(root)))


@pytest.mark.parametrize(
    ("root", "error"),
    [("", InvalidRequestError), ("relative/dir", InvalidRequestError), ("/no/such/dir", NotFoundError)],
)
def test_a_bad_project_root_is_refused(tmp_path: Path, monkeypatch, root: str, error: type[Exception]) -> None:
    searchers = ProjectSearchers(_settings(tmp_path, monkeypatch), FakeEmbedder(), background=False)
    with pytest.raises(error):
        searchers.search(SearchRequest("handler", project_root=root))


def test_idle_and_over_budget_snapshots_are_dropped(tmp_path: Path, monkeypatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    embedder = FakeEmbedder()
    roots = [_project(tmp_path, n) for n in ("a", "b", "c")]
    for root in roots:
        Indexer(settings, root, embedder).run()
    searchers = ProjectSearchers(settings, embedder, background=False)
    for root in roots:
        searchers.search(SearchRequest("handler", project_root=str(root)))
    assert searchers.evict() == []
    searchers.snapshots(roots[0].resolve()).last_used -= settings.server.snapshot_idle_s + 1
    assert searchers.evict() == [roots[0].resolve()]
    settings.server.snapshot_budget_mb = 64
    monkeypatch.setattr("lgrep_search.corpus.Corpus.estimated_bytes", lambda self: 40 * 1024 * 1024)
    searchers.snapshots(roots[1].resolve()).last_used -= 5  # the least recently used goes first
    assert searchers.evict() == [roots[1].resolve()]
    assert [p.root for p in searchers.resident()] == [roots[2].resolve()]  # the last one stays
    # A dropped project opens again on its next query.
    assert searchers.search(SearchRequest("handler", project_root=str(roots[0]))).results


def test_equal_index_requests_share_one_run(tmp_path: Path, monkeypatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    root = _project(tmp_path, "a", files=20).resolve()
    runs: list[Path] = []
    gate = threading.Event()
    real_run = Indexer.run

    def counted_run(self: Indexer, **kwargs):
        runs.append(self.root)
        gate.wait(60)  # the second request arrives while the first is queued or running
        return real_run(self, **kwargs)

    monkeypatch.setattr(pipeline.Indexer, "run", counted_run)
    committed: list[Path] = []
    jobs = IndexJobs(settings, FakeEmbedder(), on_commit=committed.append)
    results: list[IndexSummary] = []
    first = threading.Thread(target=lambda: results.append(jobs.run(root)))
    first.start()
    events = jobs.index(root)  # joins the running job
    gate.set()
    items = list(events)
    first.join(60)
    assert isinstance(items[-1], IndexSummary) and all(isinstance(e, IndexProgress) for e in items[:-1])
    assert results and results[0] is items[-1]
    assert runs == [root] and committed == [root]
    jobs.close()


def test_a_failed_job_raises_to_every_caller(tmp_path: Path, monkeypatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    root = _project(tmp_path, "a").resolve()
    Indexer(settings, root, FakeEmbedder(model="other-model")).run()
    jobs = IndexJobs(settings, FakeEmbedder())
    with pytest.raises(IndexMismatchError, match="--force"):
        jobs.run(root)
    assert jobs.run(root, force=True).files_indexed == 5
    jobs.close()


def _indexed_searchers(tmp_path: Path, monkeypatch):
    settings = _settings(tmp_path, monkeypatch)
    root = tmp_path / "proj"
    (root / "auth").mkdir(parents=True)
    # Methods long enough that the chunker gives each its own chunk (a small class stays one chunk).
    body = "".join(f"        step_{i} = token.claims.get('field_{i}', None)\n" for i in range(40))
    (root / "auth" / "tokens.py").write_text(
        "import hmac\n\n\nclass Verifier:\n    def verify_token(self, token):\n"
        f"{body}        return hmac.compare_digest(token, 'x')\n\n"
        f"    def refresh_token(self, token):\n{body}        return token + 'r'\n"
    )
    (root / "auth" / "config.py").write_text(
        'DATABASE_URL = "postgres://admin:Sup3rS3cretPassw0rd@db.internal:5432/app"\n\n\ndef load_settings():\n'
        "    return {'debug': False}\n"
    )
    (root / "billing.py").write_text("def charge_card(card, amount):\n    return card.charge(amount)\n")
    (root / ".env").write_text("API_KEY=abc\n")
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    return ProjectSearchers(settings, embedder, background=False), root.resolve()


def test_get_file_serves_indexed_files_redacted_and_in_ranges(tmp_path: Path, monkeypatch) -> None:
    from lgrep_core.domain.models import GetFileRequest

    searchers, root = _indexed_searchers(tmp_path, monkeypatch)
    whole = searchers.get_file(GetFileRequest(str(root), "auth/tokens.py"))
    assert whole.total_lines == 89 and whole.start_line == 1 and whole.end_line == 89 and not whole.stale
    assert whole.language == "python" and "class Verifier" in whole.content
    part = searchers.get_file(GetFileRequest(str(root), "auth/tokens.py", start_line=4, end_line=5))
    assert part.content == "class Verifier:\n    def verify_token(self, token):\n"
    config = searchers.get_file(GetFileRequest(str(root), "auth/config.py")).content
    assert "Sup3rS3cretPassw0rd" not in config and "def load_settings" in config
    with pytest.raises(NotFoundError, match="not in the index"):
        searchers.get_file(GetFileRequest(str(root), ".env"))
    with pytest.raises(InvalidRequestError, match="inside the project"):
        searchers.get_file(GetFileRequest(str(root), "../outside.py"))
    (root / "billing.py").write_text("def charge_card(card, amount):\n    return card.charge(amount * 2)\n")
    assert searchers.get_file(GetFileRequest(str(root), "billing.py")).stale


def test_get_file_does_not_follow_a_symlink_planted_after_indexing(tmp_path: Path, monkeypatch) -> None:
    from lgrep_core.domain.models import GetFileRequest

    searchers, root = _indexed_searchers(tmp_path, monkeypatch)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the project\n")
    (root / "billing.py").unlink()
    (root / "billing.py").symlink_to(secret)
    with pytest.raises(InvalidRequestError, match="symbolic link"):
        searchers.get_file(GetFileRequest(str(root), "billing.py"))


def test_find_symbol_is_typo_tolerant_and_understands_qualified_names(tmp_path: Path, monkeypatch) -> None:
    from lgrep_core.domain.models import ChunkKind, FindSymbolRequest

    searchers, root = _indexed_searchers(tmp_path, monkeypatch)
    exact = searchers.find_symbol(FindSymbolRequest(str(root), "verify_token"))
    assert exact[0].exact and exact[0].location.path == "auth/tokens.py" and exact[0].location.kind is ChunkKind.METHOD
    assert exact[0].location.scope == ("Verifier", "verify_token")
    typo = searchers.find_symbol(FindSymbolRequest(str(root), "verfy_token"))
    assert typo[0].location.symbol == "verify_token" and not typo[0].exact
    assert searchers.find_symbol(FindSymbolRequest(str(root), "Verifier.refresh_token"))[0].location.symbol == (
        "refresh_token"
    )
    assert searchers.find_symbol(FindSymbolRequest(str(root), "Other.refresh_token")) == []
    assert searchers.find_symbol(FindSymbolRequest(str(root), "Verifier", kinds=(ChunkKind.FUNCTION,))) == []


def test_find_related_starts_from_the_chunk_at_a_line(tmp_path: Path, monkeypatch) -> None:
    from lgrep_core.domain.models import FindRelatedRequest

    searchers, root = _indexed_searchers(tmp_path, monkeypatch)
    related = searchers.find_related(FindRelatedRequest(str(root), "auth/tokens.py", 8))
    assert related.anchor.symbol == "verify_token"
    assert related.related and all(h.symbol != "verify_token" for h in related.related)
    with pytest.raises(NotFoundError):
        searchers.find_related(FindRelatedRequest(str(root), "missing.py", 1))


def test_a_cancelled_run_stops_at_a_commit_and_the_next_run_finishes(tmp_path: Path, monkeypatch, make_repo) -> None:
    from lgrep_core.domain.errors import IndexingError
    from lgrep_core.domain.models import IndexPhase

    settings = _settings(tmp_path, monkeypatch)
    root = tmp_path / "big"
    make_repo(root, 900)  # three commits of 400 files
    cancel = threading.Event()

    def stop_after_the_first_commit(event: IndexProgress) -> None:
        if event.phase is IndexPhase.CHUNK and event.files_done >= 400:
            cancel.set()  # what a server's SIGTERM does

    with pytest.raises(IndexingError, match="was cancelled; the next index goes on"):
        Indexer(settings, root, FakeEmbedder(), progress=stop_after_the_first_commit, cancel=cancel).run()
    summary = Indexer(settings, root, FakeEmbedder()).run()
    assert summary.files_seen == 900 and summary.vectors_pending == 0
    assert summary.files_unchanged >= 400  # the committed first batch was not done again


def test_skeletons_need_a_parser_and_traces_an_index_with_structure(tmp_path: Path, monkeypatch) -> None:
    import json

    from lgrep_core.domain.models import SkeletonRequest, TraceRequest
    from lgrep_core.storage.engine import lancedb
    from lgrep_core.storage.store import ProjectStore
    from lgrep_index.outline import outline_file

    settings = _settings(tmp_path, monkeypatch)
    root = _project(tmp_path, "a")
    (root / "app.py").write_text("from mod1 import handler_1\n\n\ndef main(r):\n    return handler_1(r)\n")
    embedder = FakeEmbedder()
    Indexer(settings, root, embedder).run()
    reader_only = ProjectSearchers(settings, embedder, background=False)
    with pytest.raises(InvalidRequestError, match="cannot parse files"):
        reader_only.skeleton(SkeletonRequest(str(root), "app.py"))
    full = ProjectSearchers(settings, embedder, background=False, outliner=outline_file)
    shape = full.skeleton(SkeletonRequest(str(root), "app.py"))
    assert "def main(r):" in shape.content and shape.tokens <= shape.file_tokens
    with pytest.raises(NotFoundError, match="not in the index"):
        full.skeleton(SkeletonRequest(str(root), "missing.py"))
    traced = full.trace(TraceRequest(str(root), "handler_1"))
    assert [(e.caller.symbol, e.resolution.value) for e in traced.edges] == [("main", "import")]

    # An index written before the structure existed (no `refs` column): search still works, a
    # trace says what to run.
    store = ProjectStore(settings.cache_dir, root)
    meta = json.loads(store.meta_path.read_text())
    table = lancedb().connect(str(store.data_dir / "lance")).open_table("chunks")
    table.drop_columns(["refs"])
    meta["table_versions"] = [int(table.version), meta["table_versions"][1]]
    store.meta_path.write_text(json.dumps(meta))
    old = ProjectSearchers(settings, embedder, background=False, outliner=outline_file)
    assert old.search(SearchRequest("handler", project_root=str(root))).results
    with pytest.raises(NotFoundError, match="older lgrep"):
        old.trace(TraceRequest(str(root), "handler_1"))
