"""The voyage and openai providers, through their vendors' SDKs, against stand-in servers on
127.0.0.1 that speak each API's REST contract (lgrep_core.testing.standins)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from lgrep_core.domain.errors import ConfigError, EmbeddingError, ProviderUnavailableError
from lgrep_core.embeddings.cloud import CloudEmbedder, EmbeddingIncomplete
from lgrep_core.embeddings.registry import make_embedder
from lgrep_core.settings.config import load_settings
from lgrep_core.testing.standins import EmbeddingStandIn

FLAVORS = ("voyage", "openai")
NATIVE = {"voyage": 1024, "openai": 1536}


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def standin(flavor: str) -> Iterator[EmbeddingStandIn]:
    with EmbeddingStandIn(flavor, dimension=NATIVE[flavor]) as server:  # type: ignore[arg-type]
        yield server


def _embedder(server: EmbeddingStandIn, tmp_path: Path, **settings: str) -> CloudEmbedder:
    flavor = server.state.flavor
    env = {
        "LGREP_EMBEDDING_PROVIDER": flavor,
        "LGREP_EMBEDDING_BASE_URL": server.base_url,
        "VOYAGE_API_KEY" if flavor == "voyage" else "OPENAI_API_KEY": "test-key",
        "LGREP_CACHE_DIR": str(tmp_path / "cache"),
        **{f"LGREP_EMBEDDING_{k.upper()}": v for k, v in settings.items()},
    }
    s = load_settings(env=env, user_config=tmp_path / "none.yaml").settings
    embedder = make_embedder(s.embedding, s.cache_dir)
    assert isinstance(embedder, CloudEmbedder)
    embedder.backoff_base_s = 0.05  # keep the tests quick; the policy is the same
    return embedder


CODE = [
    "def verify_token(token, key):\n    return jwt.decode(token, key)",
    "class RateLimiter:\n    def allow(self, client): ...",
    "fn parse_config(path: &Path) -> Config { todo!() }",
]


def test_documents_and_queries_go_out_as_the_api_expects(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    embedder = _embedder(standin, tmp_path)
    try:
        vectors, billed = embedder.embed_documents_billed(CODE)
        query = embedder.embed_query("verify token")
    finally:
        embedder.close()
    assert vectors.shape == (3, NATIVE[standin.state.flavor]) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert query.shape == (NATIVE[standin.state.flavor],)
    assert billed == sum(EmbeddingStandIn.billed_tokens(t) for t in CODE)  # the API's usage, not our estimate
    documents, asked = standin.requests
    assert documents.texts == CODE and asked.texts == ["verify token"]
    assert documents.key == "test-key" and documents.dimensions is None  # the model's own dimension
    if standin.state.flavor == "voyage":
        assert (documents.input_type, asked.input_type) == ("document", "query")
        assert documents.model == "voyage-code-3"
    else:
        assert documents.model == "text-embedding-3-small"
    # Texts that share words are closer than texts that do not (the stand-in's vectors mean something).
    assert float(vectors[0] @ query) > float(vectors[2] @ query)


def test_a_smaller_dimension_is_asked_for(flavor: str, tmp_path: Path) -> None:
    with EmbeddingStandIn(flavor, dimension=NATIVE[flavor]) as server:  # type: ignore[arg-type]
        embedder = _embedder(server, tmp_path, dimensions="256")
        try:
            vectors = embedder.embed_documents(CODE)
        finally:
            embedder.close()
        assert vectors.shape == (3, 256) and server.requests[0].dimensions == 256


def test_requests_stay_within_the_apis_limits_on_texts_and_tokens(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    flavor = standin.state.flavor
    embedder = _embedder(standin, tmp_path)
    max_texts = 1000 if flavor == "voyage" else 2048
    texts = [f"def handler_{i}(request):\n    return respond(request, {i})" for i in range(max_texts + 5)]
    try:
        vectors, billed = embedder.embed_documents_billed(texts)
        assert vectors.shape[0] == len(texts)
        assert sorted(len(r.texts) for r in standin.requests) == [5, max_texts]  # the stand-in refuses more with 400
        # Long texts: a request's tokens stay under the limit too (the stand-in refuses more with 400).
        long = [("token " * 4000) + str(i) for i in range(100)]
        standin.state.requests.clear()
        embedder.embed_documents(long)
        sent = standin.requests
        assert len(sent) > 1 and all(r.answered == "ok" for r in sent)
        assert sorted(t for r in sent for t in r.texts) == sorted(long)  # each once
    finally:
        embedder.close()
    assert billed > 0


def test_request_texts_setting_bounds_each_request(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    embedder = _embedder(standin, tmp_path, request_texts="7")
    try:
        vectors = embedder.embed_documents([f"text {i}" for i in range(30)])
    finally:
        embedder.close()
    assert vectors.shape[0] == 30 and sorted(len(r.texts) for r in standin.requests) == [2, 7, 7, 7, 7]


def test_a_text_longer_than_the_model_takes_is_cut(tmp_path: Path) -> None:
    with EmbeddingStandIn("openai", dimension=1536) as server:
        embedder = _embedder(server, tmp_path)
        try:
            embedder.embed_documents(["word " * 20_000])
        finally:
            embedder.close()
        sent = server.requests[0].texts[0]
        assert len(sent) < len("word " * 20_000) and sent.startswith("word word")


def test_429_with_retry_after_is_honoured_and_retried(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    embedder = _embedder(standin, tmp_path)
    standin.fail_next("429", 2, retry_after=0.4)
    try:
        started = time.monotonic()
        vectors = embedder.embed_documents(CODE)
        took = time.monotonic() - started
    finally:
        embedder.close()
    assert vectors.shape[0] == 3
    assert [r.answered for r in standin.requests] == ["429", "429", "ok"]
    assert took >= 0.8  # waited what the server asked, twice (not the 0.05 s backoff)
    gaps = [b.time - a.time for a, b in zip(standin.requests, standin.requests[1:], strict=False)]
    assert all(g >= 0.38 for g in gaps)


@pytest.mark.parametrize("fault", ["500", "503", "malformed", "disconnect"])
def test_server_errors_and_malformed_answers_are_retried(standin: EmbeddingStandIn, tmp_path: Path, fault: str) -> None:
    embedder = _embedder(standin, tmp_path)
    standin.fail_next(fault, 2)  # type: ignore[arg-type]
    try:
        vectors = embedder.embed_documents(CODE)
    finally:
        embedder.close()
    assert vectors.shape[0] == 3 and embedder.retries == 2
    assert [r.answered for r in standin.requests] == [fault, fault, "ok"]


def test_a_timeout_is_retried(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    embedder = _embedder(standin, tmp_path, timeout_s="0.5")
    standin.fail_next("hang", 1, seconds=10)
    try:
        vectors = embedder.embed_documents(CODE)
    finally:
        embedder.close()
    assert vectors.shape[0] == 3 and [r.answered for r in standin.requests] == ["hang", "ok"]


def test_after_max_tries_the_error_says_what_happened(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    embedder = _embedder(standin, tmp_path, max_tries="3")
    standin.fail_next("500", 10)
    try:
        with pytest.raises(EmbeddingIncomplete) as caught:
            embedder.embed_documents_billed(CODE)
    finally:
        embedder.close()
    assert len(standin.requests) == 3
    assert "failed after 3 tries" in caught.value.message and "500" in caught.value.message
    assert caught.value.vectors == {} and caught.value.tokens == 0
    assert isinstance(caught.value.__cause__, ProviderUnavailableError)


def test_what_arrived_is_kept_when_other_requests_fail(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    embedder = _embedder(standin, tmp_path, request_texts="1", max_tries="2")
    standin.fail_next("503", 10, match="RateLimiter")
    try:
        with pytest.raises(EmbeddingIncomplete) as caught:
            embedder.embed_documents_billed(CODE)
    finally:
        embedder.close()
    assert sorted(caught.value.vectors) == [0, 2]  # the first and third text were embedded
    assert caught.value.tokens == EmbeddingStandIn.billed_tokens(CODE[0]) + EmbeddingStandIn.billed_tokens(CODE[2])
    assert "1 of 3 texts not embedded" in caught.value.message


def test_a_wrong_dimension_is_an_error_not_retried(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    embedder = _embedder(standin, tmp_path)
    standin.fail_next("dimension", 1)
    try:
        with pytest.raises(EmbeddingError, match=r"embedding\.dimensions is \d+: set it to"):
            embedder.embed_documents(CODE)
    finally:
        embedder.close()
    assert len(standin.requests) == 1


def test_a_refused_key_names_the_variable_and_is_not_retried(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    standin.state.key = "another-key"
    embedder = _embedder(standin, tmp_path)
    variable = "VOYAGE_API_KEY" if standin.state.flavor == "voyage" else "OPENAI_API_KEY"
    try:
        with pytest.raises(ConfigError, match=variable):
            embedder.embed_documents(CODE)
        with pytest.raises(ConfigError, match=variable):
            embedder.embed_query("x")
    finally:
        embedder.close()
    assert [r.answered for r in standin.requests] == ["401", "401"]


@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_missing_key_names_the_variable(flavor: str, tmp_path: Path) -> None:
    env = {"LGREP_EMBEDDING_PROVIDER": flavor}
    s = load_settings(env=env, user_config=tmp_path / "none.yaml").settings
    variable = "VOYAGE_API_KEY" if flavor == "voyage" else "OPENAI_API_KEY"
    with pytest.raises(ConfigError, match=variable):
        make_embedder(s.embedding, tmp_path)


def test_an_openai_compatible_server_needs_no_key_and_its_dimension_is_detected(tmp_path: Path) -> None:
    with EmbeddingStandIn("openai", key=None, dimension=768) as server:
        env = {
            "LGREP_EMBEDDING_PROVIDER": "openai",
            "LGREP_EMBEDDING_MODEL": "nomic-embed-text",
            "LGREP_EMBEDDING_BASE_URL": server.base_url,
        }
        s = load_settings(env=env, user_config=tmp_path / "none.yaml").settings
        assert s.embedding.dimensions is None and s.embedding_fingerprint()["dimension"] == 0
        embedder = make_embedder(s.embedding, tmp_path)
        try:
            assert embedder.dimension == 768  # one short request found it
            assert embedder.embed_documents(CODE).shape == (3, 768)
        finally:
            embedder.close()  # type: ignore[attr-defined]
        assert server.requests[0].key == "unused" and server.requests[1].dimensions is None


def test_concurrency_is_bounded(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    standin.state.latency = 0.2
    embedder = _embedder(standin, tmp_path, request_texts="1", concurrency="2")
    try:
        embedder.embed_documents([f"text {i}" for i in range(8)])
    finally:
        embedder.close()
    assert standin.max_in_flight == 2


def test_a_query_answers_while_documents_wait_out_a_rate_limit(standin: EmbeddingStandIn, tmp_path: Path) -> None:
    """The provider's waiting is asynchronous: documents held back by a Retry-After do not hold up a
    query from another thread (an agent's search while the indexer backs off)."""
    embedder = _embedder(standin, tmp_path)
    standin.fail_next("429", 1, applies_to="document", retry_after=3)
    finished: list[float] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: (embedder.embed_documents(CODE), finished.append(time.monotonic())))
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while not standin.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert standin.requests and standin.requests[0].answered == "429"
        query = embedder.embed_query("verify the token")
        answered = time.monotonic()
        worker.join(timeout=30)
    finally:
        embedder.close()
    assert query.shape[0] == NATIVE[standin.state.flavor]
    assert finished and answered < finished[0]  # the query did not wait for the documents' retry
    assert finished[0] - started >= 3  # which waited what the server asked
