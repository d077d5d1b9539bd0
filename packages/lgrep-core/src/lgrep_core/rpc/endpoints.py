"""The few process settings a client needs to reach the daemon, read without validating the rest.

A command that only forwards a call to the daemon should not pay for loading and validating every
setting (pydantic's schema building costs more than the call). `client_settings` reads the same
layers as `config.load_settings` (user file, then environment; a project file may not set these
keys) and interprets only what it needs. Anything it is not sure about sends it to the full loader,
so the answer is always the one `load_settings` would give, or its error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import ConfigError
from lgrep_core.runtime.locks import check_private_dir
from lgrep_core.settings import defaults
from lgrep_core.settings.config_sources import default_user_config_path, env_layers, merge, read_yaml

__all__ = ["ClientSettings", "client_settings"]

_TRUE = {"1", "true", "yes", "on", "t", "y"}
_FALSE = {"0", "false", "no", "off", "f", "n"}


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """What a client of the daemon needs: where it listens, whether to start it, which model it must serve."""

    cache_dir: Path
    socket_path: Path
    autostart: bool
    embedding: dict[str, object]  # the fingerprint LgrepSettings.embedding_fingerprint() gives
    log_level: str


def client_settings(env: Mapping[str, str] | None = None, user_config: Path | None = None) -> ClientSettings:
    """Raises ConfigError as `load_settings` would for a broken user file or value, and for a cache
    dir that is not the user's or that others may write (locks.check_private_dir)."""
    env = dict(os.environ) if env is None else dict(env)
    path = user_config if user_config is not None else default_user_config_path(env)
    if user_config is None and env.get("LGREP_CONFIG") and not path.is_file():
        raise ConfigError(f"LGREP_CONFIG names {path}, which is not a file")
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    merge(merged, sources, read_yaml(path), str(path))
    for origin, layer in env_layers(env):
        merge(merged, sources, layer, origin)
    try:
        found = _interpret(merged)
    except (ValueError, TypeError, KeyError):
        found = _full(env, user_config)
    if found.cache_dir.exists():  # a missing one is created private (0700) by whoever writes first
        check_private_dir(found.cache_dir)
    return found


def _interpret(merged: dict[str, Any]) -> ClientSettings:
    index = merged.get("index", {})
    server = merged.get("server", {})
    embedding = merged.get("embedding", {})
    if not all(isinstance(x, dict) for x in (index, server, embedding)):
        raise ValueError("a section is not a mapping")
    cache_text = index.get("cache_dir", defaults.CACHE_DIR)
    if not isinstance(cache_text, str) or not cache_text.strip() or not Path(cache_text).expanduser().is_absolute():
        raise ValueError("cache_dir needs the full loader's message")
    cache_dir = Path(cache_text).expanduser().resolve()
    socket_text = server.get("socket")
    if socket_text is None:
        socket_path = cache_dir / "lgrep.sock"
    elif isinstance(socket_text, str) and socket_text.strip() and Path(socket_text).expanduser().is_absolute():
        socket_path = Path(socket_text).expanduser()
    else:
        raise ValueError("socket needs the full loader's message")
    provider = _text(embedding.get("provider", defaults.PROVIDER), {"local"})
    model = _text(embedding.get("model", defaults.LOCAL_MODEL))
    quantized = _bool(embedding.get("quantized", defaults.QUANTIZED))
    fingerprint = {
        # as config.EmbeddingSettings.label names it
        "provider": provider,
        "model": f"{model} ({'int8' if quantized else 'fp32'})" if provider == "local" else model,
        "dimension": _int(embedding.get("dimensions", defaults.LOCAL_DIMENSION), 1, 8192),
    }
    log_level = _text(merged.get("log_level", defaults.LOG_LEVEL), set(defaults.LOG_LEVELS))
    for section, known in (("server", _SERVER_KEYS), ("index", _INDEX_KEYS), ("embedding", _EMBEDDING_KEYS)):
        if set(merged.get(section, {})) - known:
            raise ValueError(f"unknown key in {section}")
    if set(merged) - {"log_level", "embedding", "chunking", "index", "search", "server"}:
        raise ValueError("unknown section")
    return ClientSettings(
        cache_dir=cache_dir,
        socket_path=socket_path,
        autostart=_bool(server.get("autostart", defaults.AUTOSTART)),
        embedding=fingerprint,
        log_level=log_level,
    )


# Keys the full loader knows; an unknown one sends the client there for the error message.
_SERVER_KEYS = {"socket", "tcp_port", "token_file", "autostart", "snapshot_idle_s", "snapshot_budget_mb"}
_SERVER_KEYS |= {"watch_debounce_ms", "idle_exit_s", "max_watched_projects"}
_INDEX_KEYS = {"cache_dir", "ignore_patterns", "max_file_bytes", "embed_batch_chunks", "memory_budget_mb"}
_INDEX_KEYS |= {"lock_timeout_s"}
_EMBEDDING_KEYS = {"provider", "model", "dimensions", "quantized", "threads", "batch_tokens"}


def _text(value: object, allowed: set[str] | None = None) -> str:
    if not isinstance(value, str) or (allowed is not None and value not in allowed):
        raise ValueError(value)
    return value


def _int(value: object, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise ValueError(value)
    number = int(value) if isinstance(value, int | str) else None
    if number is None or not low <= number <= high:
        raise ValueError(value)
    return number


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(value)


def _full(env: Mapping[str, str], user_config: Path | None) -> ClientSettings:
    from lgrep_core.settings.config import load_settings

    settings = load_settings(None, env=env, user_config=user_config).settings
    return ClientSettings(
        cache_dir=settings.cache_dir,
        socket_path=settings.socket_path,
        autostart=settings.server.autostart,
        embedding=settings.embedding_fingerprint(),
        log_level=settings.log_level,
    )
