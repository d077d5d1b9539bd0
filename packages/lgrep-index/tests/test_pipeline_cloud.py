"""Indexing through the real cloud providers (voyage, openai) against stand-in servers on 127.0.0.1:
what the provider bills lands in the ledger, a provider that keeps failing leaves a clear error naming
the files without vectors, and the next run sends only what is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lgrep_core.domain.errors import EmbeddingError
from lgrep_core.embeddings.registry import make_embedder
from lgrep_core.settings.config import LgrepSettings, load_settings
from lgrep_core.storage.spend import SpendLedger, price_table
from lgrep_core.testing.standins import EmbeddingStandIn
from lgrep_index.pipeline import Indexer

FIXTURE = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "repos" / "mini"


def _settings(tmp_path: Path, server: EmbeddingStandIn, **extra: str) -> LgrepSettings:
    flavor = server.state.flavor
    env = {
        "LGREP_CACHE_DIR": str(tmp_path / "cache"),
        "LGREP_EMBEDDING_PROVIDER": flavor,
        "LGREP_EMBEDDING_BASE_URL": server.base_url,
        "LGREP_EMBEDDING_DIMENSIONS": "256",
        "VOYAGE_API_KEY" if flavor == "voyage" else "OPENAI_API_KEY": "test-key",
        **extra,
    }
    return load_settings(None, env=env, user_config=tmp_path / "none").settings


@pytest.mark.parametrize("flavor", ["voyage", "openai"])
def test_a_provider_that_keeps_failing_names_the_files_left_and_a_rerun_resumes(tmp_path: Path, flavor: str) -> None:
    root = tmp_path / "mini"
    shutil.copytree(FIXTURE, root)
    with EmbeddingStandIn(flavor, dimension=1024) as server:  # type: ignore[arg-type]
        settings = _settings(tmp_path, server, LGREP_EMBEDDING_MAX_TRIES="2", LGREP_EMBEDDING_REQUEST_TEXTS="1")
        embedder = make_embedder(settings.embedding, settings.cache_dir)
        embedder.backoff_base_s = 0.01  # type: ignore[attr-defined]
        # Every request holding a chunk of auth/ fails: the rest of the project is embedded.
        server.fail_next("503", 1000, applies_to="document", match="auth/")
        try:
            with pytest.raises(EmbeddingError) as caught:
                Indexer(settings, root, embedder).run()
            message = caught.value.message
            assert "failed after 2 tries" in message and "left without vectors" in message
            assert "auth/" in message and "lgrep index" in message
            first_billed = SpendLedger(settings.cache_dir).totals(price_table(settings.spend))
            assert first_billed is not None and first_billed.tokens > 0  # what arrived was paid and kept
            embedded_before = {t for t in server.texts("document")}

            server.clear_faults()
            server.state.requests.clear()
            summary = Indexer(settings, root, embedder).run()
        finally:
            embedder.close()  # type: ignore[attr-defined]
        resent = server.texts("document")
    assert summary.vectors_pending == 0 and summary.vectors_embedded == len(resent) > 0
    assert all("auth/" in t for t in resent)  # only what was missing
    assert not set(resent) & embedded_before
