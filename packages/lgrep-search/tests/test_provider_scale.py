"""The ranking stack does not assume MiniLM's score scale: a provider whose vectors have another
dimension and whose cosine similarities all sit near 1 ranks exactly as one whose similarities spread
over [-1, 1], when the two order the chunks the same. Both run end to end (index, snapshot, search)
through the openai provider against stand-in servers (lgrep_core.testing.standins): one gives
FakeEmbedder's 255-dimensional vectors, the other the same vectors plus a large constant 256th
component, which maps every cosine s to (s + c²)/(1 + c²) — the same order, a squeezed range."""

from __future__ import annotations

import shutil
from pathlib import Path

from lgrep_core.domain.models import SearchRequest, SearchType
from lgrep_core.embeddings.registry import make_embedder
from lgrep_core.settings.config import load_settings
from lgrep_core.storage.reader import ProjectReader
from lgrep_core.testing.standins import EmbeddingStandIn
from lgrep_index.pipeline import Indexer
from lgrep_search.searcher import Searcher
from lgrep_search.snapshot import Snapshots

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "repos"
QUERIES = [
    "verify the signature of a token",
    "rate limit requests per client",
    "parse the configuration file",
    "where are users stored",
    "hash a password",
    "retry with backoff",
]


def _search(
    tmp_path: Path, name: str, dimension: int, offset: float
) -> tuple[list[list[tuple[str, int]]], list[float]]:
    # One tree for both runs: a chunk whose content is also elsewhere shares its vector, embedded with
    # the path seen first, and the walk's order is the directory's (two copies may differ).
    root = tmp_path / "ranking"
    if not root.exists():
        shutil.copytree(FIXTURES / "ranking", root)
    with EmbeddingStandIn("openai", key=None, dimension=dimension, offset=offset, noise=0.3) as server:
        env = {
            "LGREP_CACHE_DIR": str(tmp_path / f"cache-{name}"),
            "LGREP_EMBEDDING_PROVIDER": "openai",
            "LGREP_EMBEDDING_MODEL": "stand-in-embed",
            "LGREP_EMBEDDING_BASE_URL": server.base_url,
        }
        settings = load_settings(None, env=env, user_config=tmp_path / "none").settings
        embedder = make_embedder(settings.embedding, settings.cache_dir)
        try:
            assert embedder.dimension == dimension
            Indexer(settings, root, embedder).run()
            searcher = Searcher(Snapshots(ProjectReader(settings.cache_dir, root), background=False), embedder)
            rankings: list[list[tuple[str, int]]] = []
            vector_scores: list[float] = []
            for query in QUERIES:
                for kind in (SearchType.HYBRID, SearchType.VECTOR):
                    response = searcher.search(
                        SearchRequest(str(root), query, limit=10, search_type=kind, explain=True)
                    )
                    rankings.append([(h.path, h.start_line) for h in response.results])
                    vector_scores += [h.scores["vector_score"] for h in response.results if "vector_score" in h.scores]
        finally:
            embedder.close()  # type: ignore[attr-defined]
    return rankings, vector_scores


def test_another_dimension_and_score_range_rank_the_same(tmp_path: Path) -> None:
    spread, spread_scores = _search(tmp_path, "spread", 255, 0.0)
    squeezed, squeezed_scores = _search(tmp_path, "squeezed", 256, 3.0)
    assert all(spread) and squeezed == spread
    assert min(squeezed_scores) > 0.85  # the squeezed provider's cosines all sit near 1 ...
    assert min(spread_scores) < 0.5  # ... while the other's spread out
