"""Cloud embedding providers through the real `lgrep` command and its daemon, against stand-in Voyage
and OpenAI servers on 127.0.0.1 (lgrep_core.testing.standins) run by the test: selection from the
environment, indexing and searching end to end, the spend in `lgrep status`, errors a user can act on,
a provider change that needs --force, projects opted out by path, and a search that answers while
the daemon's indexer waits out a rate limit."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.testing.standins import EmbeddingStandIn

pytestmark = pytest.mark.slow

KEY_ENV = {"voyage": "VOYAGE_API_KEY", "openai": "OPENAI_API_KEY"}


@pytest.fixture(params=["voyage", "openai"])
def standin(request: pytest.FixtureRequest) -> Iterator[EmbeddingStandIn]:
    with EmbeddingStandIn(request.param, dimension=1024 if request.param == "voyage" else 1536) as server:
        yield server


def _use(env: dict[str, str], server: EmbeddingStandIn, **extra: str) -> None:
    flavor = server.state.flavor
    env.update(
        {
            "LGREP_EMBEDDING_PROVIDER": flavor,
            "LGREP_EMBEDDING_BASE_URL": server.base_url,
            "LGREP_EMBEDDING_DIMENSIONS": "256",
            KEY_ENV[flavor]: "test-key",
            **extra,
        }
    )


def test_index_and_search_through_the_daemon(daemon, mini_repo: Path, standin: EmbeddingStandIn) -> None:  # type: ignore[no-untyped-def]
    lgrep = daemon.lgrep
    _use(lgrep.env, standin)
    summary = lgrep("index", str(mini_repo), "--yes", "--json").json()  # starts the daemon
    sent = standin.texts("document")
    assert summary["vectors_embedded"] == len(sent) > 0 and summary["vectors_pending"] == 0
    assert summary["tokens_billed"] == sum(EmbeddingStandIn.billed_tokens(t) for t in sent)
    assert all(r.key == "test-key" and r.dimensions == 256 for r in standin.requests)

    found = lgrep("search", "verify the token signature", str(mini_repo), "--json").json()
    assert found["results"] and not found["notes"]
    asked = standin.requests[-1]
    assert asked.texts == ["verify the token signature"]  # only the query text leaves at search time
    if standin.state.flavor == "voyage":
        assert asked.input_type == "query" and {r.input_type for r in standin.requests[:-1]} == {"document"}

    status = lgrep("status", str(mini_repo), "--json").json()
    assert status["provider"] == standin.state.flavor and status["dimension"] == 256
    assert status["project_spend"]["tokens"] == summary["tokens_billed"]
    served = lgrep("serve", "--status", "--json").json()
    assert served["embedding_provider"] == standin.state.flavor


def test_a_missing_key_is_an_error_naming_the_variable(lgrep, mini_repo: Path, standin: EmbeddingStandIn) -> None:  # type: ignore[no-untyped-def]
    _use(lgrep.env, standin)
    del lgrep.env[KEY_ENV[standin.state.flavor]]
    if standin.state.flavor == "openai":  # a base URL alone means a server of one's own: no key needed
        del lgrep.env["LGREP_EMBEDDING_BASE_URL"]
    result = lgrep("index", str(mini_repo), "--yes", check=False)
    assert result.code != 0 and KEY_ENV[standin.state.flavor] in result.err
    assert "Traceback" not in result.err and not standin.requests


def test_a_refused_key_is_an_error_and_loses_nothing(lgrep, mini_repo: Path, standin: EmbeddingStandIn) -> None:  # type: ignore[no-untyped-def]
    _use(lgrep.env, standin)
    lgrep.env[KEY_ENV[standin.state.flavor]] = "wrong-key"
    result = lgrep("index", str(mini_repo), "--yes", check=False)
    assert result.code != 0 and KEY_ENV[standin.state.flavor] in result.err and "Traceback" not in result.err
    # The chunks were stored before the vectors: BM25 search works, and says vectors are pending.
    lgrep.env[KEY_ENV[standin.state.flavor]] = "test-key"
    summary = lgrep("index", str(mini_repo), "--yes", "--json").json()
    assert summary["vectors_pending"] == 0 and summary["vectors_embedded"] > 0


def test_changing_the_provider_needs_force(lgrep, mini_repo: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with EmbeddingStandIn("voyage", dimension=1024) as voyage, EmbeddingStandIn("openai", dimension=1536) as openai:
        _use(lgrep.env, openai)
        assert lgrep("index", str(mini_repo), "--yes").code == 0
        _use(lgrep.env, voyage)
        refused = lgrep("index", str(mini_repo), "--yes", check=False)
        assert refused.code != 0 and "--force" in refused.err and "Traceback" not in refused.err
        assert not voyage.requests  # nothing was sent to the new provider
        assert lgrep("index", str(mini_repo), "--yes", "--force").code == 0
        assert voyage.texts("document")
        assert lgrep("status", str(mini_repo), "--json").json()["provider"] == "voyage"


def test_a_project_opted_out_by_path_never_reaches_the_cloud(lgrep, mini_repo: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with EmbeddingStandIn("voyage", dimension=1024) as server:
        config = tmp_path / "config.yaml"
        config.write_text(json.dumps({"embedding": {"local_projects": [str(mini_repo.parent)]}}))
        _use(lgrep.env, server, LGREP_CONFIG=str(config))
        summary = lgrep("index", str(mini_repo), "--json").json()
        assert summary["vectors_embedded"] > 0 and summary["tokens_billed"] == 0
        assert lgrep("search", "verify the token", str(mini_repo), "--json").json()["results"]
        assert not server.requests  # neither chunks nor the query left the machine
        assert lgrep("status", str(mini_repo), "--json").json()["provider"] == "local"


def test_a_project_file_cannot_choose_the_provider(lgrep, mini_repo: Path) -> None:  # type: ignore[no-untyped-def]
    (mini_repo / ".lgrep.yaml").write_text("embedding:\n  provider: openai\n  base_url: http://127.0.0.1:9/v1\n")
    result = lgrep("index", str(mini_repo), check=False)
    assert result.code != 0 and "embedding.base_url" in result.err and "may not set" in result.err


def test_search_answers_while_the_daemon_waits_out_a_rate_limit(
    daemon, mini_repo: Path, make_repo, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The daemon's indexer backs off asynchronously: a search of another project, and of the one
    being indexed, answers at once instead of waiting for the retry."""
    lgrep = daemon.lgrep
    other = tmp_path / "other"
    make_repo(other, 30)
    with EmbeddingStandIn("voyage", dimension=1024) as server:
        _use(lgrep.env, server)
        assert lgrep("index", str(mini_repo), "--yes").code == 0
        server.fail_next("429", 1, applies_to="document", retry_after=20)
        indexing = subprocess.Popen(
            [*lgrep.command, "index", str(other), "--yes"],
            env=lgrep.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while not any(r.answered == "429" for r in server.requests) and time.monotonic() < deadline:
                assert indexing.poll() is None
                time.sleep(0.05)
            assert any(r.answered == "429" for r in server.requests)
            found = lgrep("search", "verify the token", str(mini_repo), "--json").json()
            assert found["results"] and not found["notes"]
            assert indexing.poll() is None  # the indexer is still waiting out the rate limit
            assert indexing.wait(timeout=120) == 0
        finally:
            if indexing.poll() is None:
                indexing.kill()
                indexing.wait(timeout=30)
    held = [r for r in server.requests if r.input_type == "document"]
    assert held[-1].time - next(r.time for r in held if r.answered == "429") >= 19


def test_a_search_whose_query_cannot_be_embedded_answers_lexically(lgrep, mini_repo: Path) -> None:  # type: ignore[no-untyped-def]
    with EmbeddingStandIn("openai", dimension=1536) as server:
        _use(lgrep.env, server, LGREP_EMBEDDING_MAX_TRIES="1")
        assert lgrep("index", str(mini_repo), "--yes").code == 0
        server.fail_next("503", 10, applies_to="any")
        result = lgrep("search", "verify the token", str(mini_repo), "--json")
        answer = result.json()
        assert answer["results"] and answer["notes"] and "lexical only" in answer["notes"][0]
        assert result.code == 0
