"""Put the fake cloud provider behind the real `lgrep` CLI and daemon, for tests.

An entry point started with `LGREP_TESTING_PROVIDERS=1` registers the provider name `fake-remote`
(lgrep_core.embeddings.extra), a `FakeRemoteEmbedder` of the configured `embedding.model` and
`embedding.dimensions`; `LGREP_TESTING_RECORD=<file>` makes it append every text it receives to
that file as JSON lines. Tests then select it like any provider, from the environment or a user
config file (`LGREP_EMBEDDING_PROVIDER=fake-remote`), and read what "left the machine".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lgrep_core.embeddings.extra import register_provider
from lgrep_core.testing.fakes import FakeRemoteEmbedder

__all__ = ["FAKE_REMOTE", "RECORD_ENV", "TESTING_ENV", "install_from_env"]

TESTING_ENV = "LGREP_TESTING_PROVIDERS"
RECORD_ENV = "LGREP_TESTING_RECORD"
FAKE_REMOTE = "fake-remote"


def install_from_env(env: Mapping[str, str]) -> bool:
    """Register `fake-remote` when `env` asks for it; returns whether it did."""
    if env.get(TESTING_ENV) != "1":
        return False
    record = env.get(RECORD_ENV)

    def factory(settings: Any, cache_dir: Path) -> FakeRemoteEmbedder:
        return FakeRemoteEmbedder(
            settings.model, settings.dimensions, provider=FAKE_REMOTE, record=Path(record) if record else None
        )

    register_provider(FAKE_REMOTE, factory)
    return True
