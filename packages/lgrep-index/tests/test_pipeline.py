from pathlib import Path

import pytest
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.store import ProjectStore
from lgrep_core.testing import FakeEmbedder
from lgrep_index import embedding_stage, pipeline
from lgrep_index.embedding_stage import MemoryGovernor
from lgrep_index.pipeline import Indexer


def _settings(tmp_path: Path, **env: str):
    return load_settings(
        None, env={"LGREP_CACHE_DIR": str(tmp_path / "cache"), **env}, user_config=tmp_path / "none"
    ).settings


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n")
    (root / "b.go").write_text("package b\n\nfunc Gamma() int {\n\treturn 3\n}\n")
    return root


def test_index_is_incremental_and_embeds_each_chunk_once(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    embedder = FakeEmbedder()
    settings = _settings(tmp_path)
    first = Indexer(settings, root, embedder).run()
    assert first.files_indexed == 2 and first.vectors_pending == 0
    embedded = len(embedder.embedded_texts)
    assert embedded == first.vectors_embedded
    assert len(set(embedder.embedded_texts)) == embedded

    again = Indexer(settings, root, embedder).run()
    assert (again.files_indexed, again.vectors_embedded) == (0, 0)
    (root / "c.py").write_text((root / "a.py").read_text())  # a copy: same content, new path
    copied = Indexer(settings, root, embedder).run()
    assert copied.files_indexed == 1
    assert copied.vectors_embedded == 0
    assert len(embedder.embedded_texts) == embedded


def test_bm25_phase_leaves_vectors_pending_then_resumes(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    settings = _settings(tmp_path)
    quick = Indexer(settings, root, FakeEmbedder()).run(wait_vectors=False)
    assert quick.vectors_embedded == 0
    assert quick.vectors_pending == quick.chunks_total > 0
    store = ProjectStore(settings.cache_dir, root)
    store.open()
    rows = [
        r
        for b in store.iter_chunk_rows(["path", "content"])
        for r in (dict(zip(b, row, strict=True)) for row in zip(*b.values(), strict=True))
    ]
    assert [r["path"] for r in rows if "Gamma" in r["content"]] == ["b.go"]
    store.close()
    rest = Indexer(settings, root, FakeEmbedder()).run()
    assert rest.vectors_embedded == quick.vectors_pending
    assert rest.vectors_pending == 0


def test_memory_governor_sheds_memory_then_shrinks_batches(monkeypatch) -> None:
    class Tunable(FakeEmbedder):
        batch_tokens = 4096
        releases = 0

        def release_memory(self) -> None:
            self.releases += 1

    mb = 1024 * 1024
    rss = {"now": 600 * mb}
    monkeypatch.setattr(embedding_stage, "rss_bytes", lambda: rss["now"])
    embedder = Tunable()
    governor = MemoryGovernor(budget_mb=500, batch_chunks=256)

    governor.check(embedder)  # over budget even after releasing: shed and shrink
    assert embedder.releases == 1
    assert (governor.batch_chunks, embedder.batch_tokens) == (128, 2048)

    governor.check(embedder)  # no growth since: no reload every batch
    assert embedder.releases == 1
    assert governor.batch_chunks == 128

    rss["now"] += 40 * mb  # grew again: act again
    governor.check(embedder)
    assert embedder.releases == 2
    assert (governor.batch_chunks, embedder.batch_tokens) == (64, 1024)

    for _ in range(10):
        rss["now"] += 40 * mb
        governor.check(embedder)
    assert governor.batch_chunks == MemoryGovernor.MIN_BATCH_CHUNKS
    assert embedder.batch_tokens == MemoryGovernor.MIN_BATCH_TOKENS


def test_memory_governor_release_that_suffices_keeps_batches(monkeypatch) -> None:
    readings = iter([480 * 1024 * 1024, 300 * 1024 * 1024])
    monkeypatch.setattr(embedding_stage, "rss_bytes", lambda: next(readings))
    governor = MemoryGovernor(budget_mb=500, batch_chunks=256)
    governor.check(FakeEmbedder())
    assert governor.batch_chunks == 256


def test_memory_governor_shrinks_batches_when_a_release_leaves_it_at_the_high_water_mark(monkeypatch) -> None:
    readings = iter([480 * 1024 * 1024, 460 * 1024 * 1024])  # under the budget, over 90% of it
    monkeypatch.setattr(embedding_stage, "rss_bytes", lambda: next(readings))
    governor = MemoryGovernor(budget_mb=500, batch_chunks=256)
    governor.check(FakeEmbedder())
    assert governor.batch_chunks == 128


def test_memory_governor_starts_with_batches_the_room_left_allows(monkeypatch) -> None:
    class Tunable(FakeEmbedder):
        batch_tokens = 1024

    mb = 1024 * 1024
    rss = {"now": 330 * mb}  # a big project's vector phase: 120 MB left under the high-water mark
    monkeypatch.setattr(embedding_stage, "rss_bytes", lambda: rss["now"])
    embedder = Tunable()
    MemoryGovernor(budget_mb=500, batch_chunks=256).start(embedder)
    assert embedder.batch_tokens == 256
    rss["now"] = 150 * mb  # a small one: the configured batches fit
    embedder.batch_tokens = 1024
    MemoryGovernor(budget_mb=500, batch_chunks=256).start(embedder)
    assert embedder.batch_tokens == 1024
    MemoryGovernor(budget_mb=500, batch_chunks=256).start(FakeEmbedder())  # no knob: nothing to do


def test_memory_governor_leaves_batches_alone_under_budget() -> None:
    embedder = FakeEmbedder()
    governor = MemoryGovernor(budget_mb=1_000_000, batch_chunks=256)
    governor.check(embedder)
    assert governor.batch_chunks == 256


def test_a_file_that_turns_binary_after_the_walk_loses_its_chunks(tmp_path: Path, monkeypatch) -> None:
    root = _repo(tmp_path)
    settings = _settings(tmp_path)
    Indexer(settings, root, FakeEmbedder()).run()
    (root / "a.py").write_text("def alpha():\n    return 10\n")  # changed: a candidate for re-reading

    real_read = pipeline.read_text

    def read_as_binary(file, max_bytes):  # what read_text says when the file became binary meanwhile
        return None if file.path == "a.py" else real_read(file, max_bytes)

    monkeypatch.setattr(pipeline, "read_text", read_as_binary)
    Indexer(settings, root, FakeEmbedder()).run()
    store = ProjectStore(settings.cache_dir, root)
    assert set(store.indexed_path_keys().values()) == {"b.go"}


def test_progress_events_are_snapshots_that_end_in_done(tmp_path: Path) -> None:
    from lgrep_core.domain.models import IndexPhase, IndexProgress, IndexSummary

    root = _repo(tmp_path)
    events: list[IndexProgress] = []
    summary = Indexer(_settings(tmp_path), root, FakeEmbedder(), progress=events.append).run()

    assert isinstance(summary, IndexSummary)
    assert events[0].phase is IndexPhase.WALK
    assert events[-1] == IndexProgress(IndexPhase.DONE, 2, 2)
    chunking = [e for e in events if e.phase is IndexPhase.CHUNK]
    assert chunking[0].files_done == 0 and chunking[-1].files_done == 2  # kept objects were not changed later
    embedding = [e for e in events if e.phase is IndexPhase.EMBED]
    assert embedding[-1].chunks_done == embedding[-1].chunks_total == summary.vectors_embedded > 0
    assert embedding[-1].rate > 0 and embedding[-1].eta_seconds == 0.0
    assert all(e.rate >= 0 for e in events)


def test_chunking_gives_a_time_left_once_the_process_knows_its_embedding_rate(tmp_path: Path, monkeypatch) -> None:
    from lgrep_core.domain.models import IndexPhase, IndexProgress

    monkeypatch.setattr(pipeline, "_EMBED_RATES", {})
    monkeypatch.setattr(pipeline, "_RATE_MIN_CHUNKS", 1)
    for n in range(30):
        (tmp_path / "repo").mkdir(exist_ok=True)
        (tmp_path / "repo" / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n\n\ndef g{n}():\n    return {n}\n")
    monkeypatch.setattr(pipeline, "FILES_PER_COMMIT", 10)
    settings = _settings(tmp_path)
    first: list[IndexProgress] = []
    Indexer(settings, tmp_path / "repo", FakeEmbedder(), progress=first.append).run()
    # A process's first run has no embedding rate to go by: no time left while it chunks.
    assert all(e.eta_seconds is None for e in first if e.phase is IndexPhase.CHUNK)
    assert pipeline._EMBED_RATES and all(rate > 0 for rate in pipeline._EMBED_RATES.values())

    second: list[IndexProgress] = []
    Indexer(settings, tmp_path / "repo", FakeEmbedder(), progress=second.append).run(force=True)
    chunking = [e for e in second if e.phase is IndexPhase.CHUNK and e.files_done > 0]
    assert chunking and all(e.eta_seconds is not None and e.eta_seconds > 0 for e in chunking[:-1])


def test_the_chunking_time_left_adds_the_expected_embedding() -> None:
    from lgrep_core.domain.models import IndexPhase

    progress = pipeline._PhaseProgress(IndexPhase.CHUNK, 100, 1100, embed_rate=50.0)
    progress.started -= 10.0  # 10 s in
    progress.files_done, progress.chunks_done = 300, 2000  # 200 files chunked (20 files/s), 10 chunks each
    event = progress.event()
    # 800 files left at 20 files/s, then 10,000 expected chunks at 50 chunks/s
    assert event.rate == pytest.approx(20.0, rel=0.01)
    assert event.eta_seconds == pytest.approx(40.0 + 200.0, rel=0.01)


def test_the_embedding_time_left_follows_the_recent_rate() -> None:
    from lgrep_core.domain.models import IndexPhase

    progress = pipeline._PhaseProgress(IndexPhase.EMBED, chunks_total=20_000, started=0.0)
    progress.event(now=0.0)
    for t in range(10, 130, 10):  # 100 chunks/s for two minutes
        progress.chunks_done = t * 100
        progress.event(now=float(t))
    assert progress.event(now=120.0).rate == pytest.approx(100.0)
    for t in range(130, 250, 10):  # then the machine gets busy: 20 chunks/s
        progress.chunks_done += 200
        event = progress.event(now=float(t))
    # A minute later the rate is the busy one (the phase's average would still say ~60/s).
    assert event.rate == pytest.approx(20.0)
    assert event.eta_seconds == pytest.approx((20_000 - progress.chunks_done) / 20.0)


def _age_index(settings, root: Path, **identity: object) -> None:
    """Make the published index look written by an older lgrep: another identity, and (for schema 1)
    a chunks table without the `refs` column."""
    import json

    from lgrep_core.storage.engine import lancedb

    store = ProjectStore(settings.cache_dir, root)
    meta_path = store.meta_path
    meta = json.loads(meta_path.read_text())
    meta["identity"].update(identity)
    if identity.get("schema_version") == 1:
        table = lancedb().connect(str(store.data_dir / "lance")).open_table("chunks")
        table.drop_columns(["refs"])
        meta["table_versions"] = [int(table.version), meta["table_versions"][1]]
    meta_path.write_text(json.dumps(meta))


def _refs_by_path(settings, root: Path) -> dict[str, list[str]]:
    store = ProjectStore(settings.cache_dir, root)
    out: dict[str, list[str]] = {}
    for batch in store.iter_chunk_rows(["path", "refs"]):
        for path, refs in zip(batch["path"], batch["refs"], strict=True):
            out.setdefault(path, []).append(refs or "")
    store.close()
    return out


def test_an_index_of_an_older_chunker_is_rechunked_keeping_its_vectors(tmp_path: Path) -> None:
    import pytest
    from lgrep_core.domain.errors import IndexMismatchError
    from lgrep_core.storage.reader import ProjectReader

    root = _repo(tmp_path)
    (root / "c.py").write_text("from a import alpha\n\n\ndef gamma():\n    return alpha() + 1\n")
    settings = _settings(tmp_path)
    embedder = FakeEmbedder()
    first = Indexer(settings, root, embedder).run()
    before = len(embedder.embedded_texts)
    assert any("c\talpha\t5" in r for r in _refs_by_path(settings, root)["c.py"])

    _age_index(settings, root, chunker_version="2", schema_version=1)
    # Readers of the old layout still load it: the missing column reads as empty.
    reader = ProjectReader(settings.cache_dir, root)
    cols = reader.read_chunks(reader.version(), ["path", "refs"])
    assert cols["refs"] and all(r is None for r in cols["refs"])

    again = Indexer(settings, root, embedder).run()
    assert again.created and again.files_indexed == first.files_indexed
    assert again.vectors_embedded == 0 and len(embedder.embedded_texts) == before
    assert again.vectors_pending == 0
    assert any("c\talpha\t5" in r for r in _refs_by_path(settings, root)["c.py"])

    # A different model is not a chunker change: that still needs the user's --force.
    _age_index(settings, root, chunker_version="2", model="another-model")
    with pytest.raises(IndexMismatchError):
        Indexer(settings, root, embedder).run()


def test_a_lowered_batch_size_is_restored_when_the_vector_phase_ends(tmp_path: Path, monkeypatch) -> None:
    class Tunable(FakeEmbedder):
        configured_batch_tokens = 1024
        batch_tokens = 1024

    mb = 1024 * 1024
    monkeypatch.setattr(embedding_stage, "rss_bytes", lambda: 440 * mb)  # little room: start small
    root = tmp_path / "repo"
    root.mkdir()
    for i in range(20):
        (root / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    settings = load_settings(
        None, env={"LGREP_CACHE_DIR": str(tmp_path / "cache")}, user_config=tmp_path / "no"
    ).settings
    embedder = Tunable()
    seen: list[int] = []
    real_embed = embedder.embed_documents
    monkeypatch.setattr(
        embedder, "embed_documents", lambda texts: (seen.append(embedder.batch_tokens), real_embed(texts))[1]
    )
    summary = Indexer(settings, root, embedder).run()
    assert summary.vectors_pending == 0
    assert seen and set(seen) == {MemoryGovernor.MIN_BATCH_TOKENS}  # lowered while it ran
    assert embedder.batch_tokens == 1024  # and back for the next job
