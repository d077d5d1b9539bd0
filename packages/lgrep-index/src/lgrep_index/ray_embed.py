"""The local model on a Ray cluster: `lgrep publish --ray ADDRESS` (ADR 0034, optional extra `lgrep[ray]`).

A repository too big to embed on one CI runner in time fans its embedding out: one actor per CPU
of the cluster, each with the local model loaded once, and every batch the indexer asks for split
among them. Everything else (the walk, the chunks, the store, the upload) stays in the publishing
process, so the publication is the one a single process writes: the local model embeds one text
per int8 inference (lgrep_core.embeddings.local), so a text's vector does not depend on which
actor, or which batch, computed it.

Workers need lgrep installed in the same version (a local cluster started from the same
environment has it); each builds the model's graph once in its cache dir (the driver's, when it is
on the same machine and writable; else its own default).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from lgrep_core.domain.errors import ConfigError, EmbeddingError, ProviderUnavailableError
from lgrep_core.embeddings.base import Vectors
from lgrep_core.settings.config import LgrepSettings

__all__ = ["RayEmbedder"]

log = logging.getLogger(__name__)

# Texts per actor per round: enough that a call's overhead (a few ms) is small next to embedding.
TEXTS_PER_ACTOR = 32


class _Worker:
    """A Ray actor: the local model, loaded once."""

    def __init__(self, model_dir: str, quantized: bool) -> None:
        from lgrep_core.embeddings.local import LocalMiniLMProvider

        folder = Path(model_dir)
        if not (folder.is_dir() and os.access(folder, os.W_OK)):
            folder = Path(os.environ.get("LGREP_CACHE_DIR") or Path.home() / ".cache" / "lgrep") / "models"
        self._provider = LocalMiniLMProvider(folder, quantized=quantized, threads=1)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._provider.embed_documents(texts)


def _ray() -> Any:
    # Ray's `uv run` integration would upload the working directory (the repository being published)
    # to the cluster as the workers' code: never. (Read when ray is first imported.)
    os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--ray needs Ray, which the default install leaves out: install lgrep with the `ray` extra "
            "(`uv sync --extra ray` in a checkout, or `pip install 'lgrep[ray]'`)"
        ) from None
    return ray


def _reachable(address: str, timeout_s: float = 10.0) -> None:
    """A host:port address must answer a TCP connection: `ray.init` retries a dead one for minutes."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ProviderUnavailableError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}): start it (`ray start --head`) "
            "or give its head's address"
        ) from None


class RayEmbedder:
    """An EmbeddingProvider whose documents are embedded by actors of a Ray cluster; it names the
    same provider, model and variant as the local model it runs, so the index's identity is the same."""

    def __init__(self, settings: LgrepSettings, address: str, *, actors: int | None = None) -> None:
        if settings.embedding.provider != "local":
            raise ConfigError(
                f"--ray runs the local model on a cluster; the embedding provider is {settings.embedding.provider}, "
                "which embeds remotely already: publish without --ray"
            )
        from lgrep_core.embeddings.registry import make_embedder

        self._settings = settings
        self._local = make_embedder(settings.embedding, settings.cache_dir)  # names the model; embeds queries
        _reachable(address)
        ray = _ray()
        self._ray = ray
        try:
            if not ray.is_initialized():
                # A driver puts its working directory on the workers' import path: make it an empty
                # folder of lgrep's own, so no file of the repository can be imported by a worker.
                neutral = settings.cache_dir / "ray-driver"
                neutral.mkdir(parents=True, exist_ok=True)
                here = Path.cwd()
                os.chdir(neutral)
                try:
                    ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, runtime_env={})
                finally:
                    os.chdir(here)
            cpus = int(ray.cluster_resources().get("CPU", 0))
        except Exception as exc:
            raise ProviderUnavailableError(f"cannot join the Ray cluster at {address}: {exc}") from None
        count = actors if actors is not None else max(1, cpus)
        worker = ray.remote(num_cpus=1)(_Worker)
        self._actors = [
            worker.remote(str(settings.cache_dir / "models"), settings.embedding.quantized) for _ in range(count)
        ]
        self.address = address
        log.info("embedding on the Ray cluster at %s: %d actors (%d CPUs)", address, count, cpus)

    @property
    def actors(self) -> int:
        return len(self._actors)

    @property
    def provider(self) -> str:
        return self._local.provider

    @property
    def model(self) -> str:
        return self._local.model

    @property
    def variant(self) -> str:
        return str(getattr(self._local, "variant", ""))

    @property
    def dimension(self) -> int:
        return self._local.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """The texts' vectors, in order: longest first, dealt round-robin to the actors so each gets
        a like share of the work."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        shares: list[list[int]] = [order[a :: len(self._actors)] for a in range(len(self._actors))]
        calls = [
            (share, actor.embed.remote([texts[i] for i in share]))
            for actor, share in zip(self._actors, shares, strict=True)
            if share
        ]
        try:
            for share, vectors in zip((s for s, _ in calls), self._ray.get([c for _, c in calls]), strict=True):
                out[share] = vectors
        except Exception as exc:
            raise EmbeddingError(f"embedding on the Ray cluster at {self.address} failed: {exc}") from None
        return out

    def embed_query(self, text: str) -> Vectors:
        return self._local.embed_query(text)

    def close(self) -> None:
        for actor in self._actors:
            try:
                self._ray.kill(actor)
            except Exception:  # already gone with its node
                log.debug("a Ray actor was gone already", exc_info=True)
        self._actors = []
        self._ray.shutdown()
