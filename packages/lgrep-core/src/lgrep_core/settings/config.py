"""One settings object, layered from files and the environment, with the source of every value.

Layers, lowest first: built-in defaults; the user file (`~/.config/lgrep/config.yaml`, or
`$XDG_CONFIG_HOME/lgrep/config.yaml`, or the file named by `LGREP_CONFIG`); the project file
(`<project>/.lgrep.yaml`); environment variables (`LGREP_CACHE_DIR`, `LGREP_LOG_LEVEL`,
`LGREP_EMBEDDING_PROVIDER`, and generally `LGREP_<SECTION>_<KEY>` or `LGREP_<SECTION>__<KEY>`).

Settings are loaded once, by the command-line entry points, and passed down; library code never
reads the environment.

A project file comes with the repository, which lgrep treats as untrusted: it may only set what
concerns that project's indexing and search (`PROJECT_KEYS`). Where lgrep writes or runs, which model
or provider it uses and which keys it reads come from the user's own file or environment only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from lgrep_core.domain.errors import ConfigError
from lgrep_core.settings import defaults
from lgrep_core.settings.config_sources import (
    default_user_config_path,
    env_layers,
    flatten,
    merge,
    read_yaml,
)

log = logging.getLogger(__name__)
__all__ = [
    "API_KEY_ENV",
    "CLOUD_PROVIDERS",
    "DEFAULT_MODELS",
    "DEFAULT_SOURCE",
    "MODEL_DIMENSIONS",
    "PROJECT_CONFIG_NAME",
    "PROJECT_LIMITS",
    "ChunkingSettings",
    "EmbeddingSettings",
    "IndexSettings",
    "LgrepSettings",
    "LoadedSettings",
    "SearchSettings",
    "ServerSettings",
    "SpendSettings",
    "TeamSettings",
    "VersionsSettings",
    "default_user_config_path",
    "is_project_key",
    "load_settings",
]

PROJECT_CONFIG_NAME = ".lgrep.yaml"
# Settings have two scopes. Project settings may differ per project (a repository's .lgrep.yaml may set
# them, and one daemon serves each project with its own). Every other key is a process setting: one
# value for the whole process (the daemon, or a one-shot command), from the user's config and the
# environment only (cache dir, embedding provider and model, logging, server, budgets).
# Dotted keys; a trailing ".*" takes a whole section.
PROJECT_KEYS = (
    "index.ignore_patterns",
    "index.max_file_bytes",
    "chunking.*",
    "search.*",
    "versions.tag_rules",
    "versions.root_component",
    "versions.scopes.*",
)
# Project settings that bound what lgrep reads or returns: a project file may lower them, never raise
# them past the user's own value (their file, the environment, or the default). Chunk sizes have hard
# ceilings of their own (ChunkingSettings) and are a project's to choose.
PROJECT_LIMITS = ("index.max_file_bytes", "search.limit")
DEFAULT_SOURCE = "default"
# Short names the original design documents, mapped onto the nested keys.


class _Section(BaseModel):
    # inf and nan are not numbers a user means: `"score": Infinity` breaks every JSON consumer.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


# The cloud providers' defaults: the model a provider runs when the user names none, and each known
# model's native dimension (an OpenAI-compatible server's other models: detected at first use).
CLOUD_PROVIDERS = ("voyage", "openai")
DEFAULT_MODELS = {"local": "all-MiniLM-L6-v2", "voyage": "voyage-code-3", "openai": "text-embedding-3-small"}
MODEL_DIMENSIONS = {
    "all-MiniLM-L6-v2": 384,
    "voyage-code-3": 1024,
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-3-large": 1024,
    "voyage-3": 1024,
    "voyage-code-2": 1536,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# The variable each cloud provider's API key is read from (never from a file of the project's).
API_KEY_ENV = {"voyage": "VOYAGE_API_KEY", "openai": "OPENAI_API_KEY"}


class EmbeddingSettings(_Section):
    provider: Literal["local", "voyage", "openai"] = Field(
        default=defaults.PROVIDER,
        description=(
            "Embedding provider: 'local' runs all-MiniLM-L6-v2 on this machine; 'voyage' (Voyage AI) and "
            "'openai' (OpenAI or any OpenAI-compatible endpoint, see base_url) send chunks to that service."
        ),
    )
    model: str = Field(
        default=defaults.LOCAL_MODEL,
        min_length=1,
        description="Model name for the provider (default: all-MiniLM-L6-v2, voyage-code-3, text-embedding-3-small).",
    )
    dimensions: int | None = Field(
        default=defaults.LOCAL_DIMENSION,
        gt=0,
        le=8192,
        description=(
            "Vector dimension: the model's own unless set (voyage-code-3: 256, 512, 1024 or 2048; "
            "text-embedding-3-*: any up to its size); unset for an unknown model: detected and checked."
        ),
    )
    base_url: str | None = Field(
        default=None,
        description=(
            "The provider's API base URL (env LGREP_EMBEDDING_BASE_URL): an OpenAI-compatible server such as "
            "http://127.0.0.1:11434/v1 (Ollama), vLLM, TEI, LiteLLM, Gemini's; default: the provider's own."
        ),
    )
    api_key: SecretStr | None = Field(
        default=None,
        description="Cloud providers: the API key; by default read from VOYAGE_API_KEY or OPENAI_API_KEY.",
    )
    timeout_s: float = Field(default=60.0, gt=0, le=3600, description="Cloud providers: seconds per request.")
    max_tries: int = Field(
        default=6,
        ge=1,
        le=50,
        description="Cloud providers: tries per request on 429, 5xx, timeouts (exponential backoff with jitter).",
    )
    concurrency: int = Field(default=4, ge=1, le=64, description="Cloud providers: requests in flight at once.")
    request_texts: int | None = Field(
        default=None, ge=1, description="Cloud providers: texts per request (default: the API's limit)."
    )
    request_tokens: int | None = Field(
        default=None, ge=256, description="Cloud providers: tokens per request (default: the API's limit)."
    )
    cloud_projects: list[str] = Field(
        default_factory=list[str],
        description=(
            "With a cloud provider: only projects under these folders use it (empty: every project); "
            "the others use the local model."
        ),
    )
    local_projects: list[str] = Field(
        default_factory=list[str],
        description="With a cloud provider: projects under these folders never use it (they use the local model).",
    )
    quantized: bool = Field(
        default=defaults.QUANTIZED, description="Local model: int8 weights (faster) instead of float32."
    )
    threads: int | None = Field(
        default=None, gt=0, description="Local model: batches embedded at once, one core each (default: all cores)."
    )
    batch_tokens: int = Field(
        default=512,
        ge=256,
        le=65536,
        # With two batches side by side (ADR 0029), 512 tokens measured 151-158 chunks/s against 142-148
        # for 1,024 (jackson-databind's texts, quiet machine), and lighter; 256 was no faster than 512.
        description="Local model: tokens per inference batch (bounds memory).",
    )

    @model_validator(mode="before")
    @classmethod
    def _provider_defaults(cls, data: Any) -> Any:
        # A provider named without a model runs its default model, at that model's own dimension.
        if not isinstance(data, dict):
            return data
        values = cast(dict[str, Any], data)
        provider = values.get("provider", "local")
        if provider in DEFAULT_MODELS and "model" not in values:
            values = {**values, "model": DEFAULT_MODELS[provider]}
        if "dimensions" not in values:
            values = {**values, "dimensions": MODEL_DIMENSIONS.get(str(values.get("model", "all-MiniLM-L6-v2")))}
        elif values["dimensions"] in ("", None):
            values = {**values, "dimensions": None}
        return values

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value.rstrip("/")

    @property
    def remote(self) -> bool:
        """The provider sends text off this machine."""
        return self.provider in CLOUD_PROVIDERS

    @property
    def api_key_env(self) -> str:
        return API_KEY_ENV.get(self.provider, "")

    def for_project(self, root: Path) -> EmbeddingSettings:
        """The settings a project's index is built with: these, or the local model's when the user opted
        the project out of the cloud provider (`local_projects`, or not under `cloud_projects`)."""
        if not self.remote:
            return self
        inside = [_under(root, folder) for folder in self.local_projects]
        chosen = [_under(root, folder) for folder in self.cloud_projects]
        if any(inside) or (self.cloud_projects and not any(chosen)):
            return EmbeddingSettings(quantized=self.quantized, threads=self.threads, batch_tokens=self.batch_tokens)
        return self

    @property
    def label(self) -> str:
        """The model as indexes and servers name it (embeddings.base.model_label of the provider built
        from these settings): the local model's name carries its variant, `all-MiniLM-L6-v2 (int8)`."""
        if self.provider == "local":
            return f"{self.model} ({'int8' if self.quantized else 'fp32'})"
        return self.model


class ChunkingSettings(_Section):
    max_tokens: int = Field(default=512, ge=32, le=8192, description="Largest chunk, in approximate tokens.")
    overlap_tokens: int = Field(default=64, ge=0, le=2048, description="Overlap between pieces of a split definition.")
    use_ast: bool = Field(default=True, description="Chunk by syntax tree (tree-sitter); false uses line windows.")


class IndexSettings(_Section):
    cache_dir: Path = Field(
        default=Path(defaults.CACHE_DIR), description="Where indexes live; one folder per project under it."
    )
    ignore_patterns: list[str] = Field(
        default_factory=list[str], description="Extra gitignore-style patterns to leave out of the index."
    )
    max_file_bytes: int = Field(default=1_000_000, gt=0, description="Files larger than this are not indexed.")

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _absolute_cache_dir(cls, value: object) -> object:
        text = str(value) if isinstance(value, str | Path) else None
        if text is not None and not text.strip():
            raise ValueError("is empty; name a folder (an absolute path or one starting with ~)")
        if text is not None and not Path(text).expanduser().is_absolute():
            # Resolving it against the current directory would scatter indexes wherever lgrep runs.
            raise ValueError(f"{text!r} is relative; give an absolute path or one starting with ~")
        return value

    embed_batch_chunks: int = Field(
        default=256, ge=1, le=10_000, description="Chunks embedded and committed per step of the vector phase."
    )
    memory_budget_mb: int = Field(
        default=500,
        ge=200,
        description="Indexing keeps its resident memory under this: embedding batches shrink when it is near.",
    )
    lock_timeout_s: float = Field(
        default=0.0,
        ge=0,
        description="How long a second writer waits for the project's write lock (0: fail at once).",
    )


class SearchSettings(_Section):
    limit: int = Field(default=10, ge=1, le=1000, description="Results per query when the caller does not say.")
    bm25_weight: float | None = Field(
        default=None,
        ge=0,
        description="Fixed weight of the BM25 channel in fusion (vector is 1); unset: chosen per query.",
    )


class ServerSettings(_Section):
    """The daemon (`lgrep serve`) and the processes that share it."""

    socket: Path | None = Field(
        default=None, description="Unix socket of the daemon (default: lgrep.sock in the cache dir; mode 0600)."
    )
    tcp_port: int = Field(
        default=0, ge=0, le=65535, description="Also listen on 127.0.0.1 at this port, with a token (0: no TCP)."
    )
    token_file: Path | None = Field(
        default=None, description="File holding the TCP token (default: lgrep.token in the cache dir, mode 0600)."
    )
    autostart: bool = Field(
        default=defaults.AUTOSTART,
        description="Commands start the daemon when it is not running (false: they work in-process).",
    )
    snapshot_idle_s: float = Field(
        default=1800.0, gt=0, description="A project's in-memory snapshot is dropped after this long without a query."
    )
    snapshot_budget_mb: int = Field(
        default=512, ge=64, description="Snapshots beyond this estimated size are dropped, least recently used first."
    )
    idle_exit_s: float = Field(
        default=3 * 3600.0,
        ge=0,
        description="A daemon with no call for this long and nothing to watch or index stops itself (0: never).",
    )
    watch_debounce_ms: int = Field(
        default=250, ge=10, le=60_000, description="A watched project is re-indexed this long after its last change."
    )
    max_watched_projects: int = Field(
        default=16,
        ge=1,
        le=1024,
        description="At most this many projects are watched at once (each costs a watcher, inotify watches and "
        "re-indexing); a folder inside a watched or indexed project is that project.",
    )

    @field_validator("socket", "token_file", mode="before")
    @classmethod
    def _absolute(cls, value: object) -> object:
        if isinstance(value, str | Path) and str(value).strip() and not Path(str(value)).expanduser().is_absolute():
            raise ValueError(f"{str(value)!r} is relative; give an absolute path or one starting with ~")
        return value


class SpendSettings(_Section):
    """Money: what a cloud embedding provider's tokens cost, and when lgrep warns or asks first.
    Process settings (a repository's own file may not lower them)."""

    prices: dict[str, float] = Field(
        default_factory=dict[str, float],
        description=(
            "US dollars per million tokens, by model, over the built-in table (voyage-code-3 0.18, "
            "text-embedding-3-small 0.02, text-embedding-3-large 0.13); other models: cost unknown."
        ),
    )
    warn_usd: list[float] = Field(
        default_factory=lambda: [5.0, 10.0],
        description="Warn (logs, `lgrep index`, `lgrep status`, lgrep_status) once the total spend passes each.",
    )
    confirm_above_usd: float = Field(
        default=1.0,
        ge=0,
        description="`lgrep index` with a cloud provider asks before a run estimated to cost more (--yes skips it).",
    )

    @field_validator("prices")
    @classmethod
    def _non_negative_prices(cls, value: dict[str, float]) -> dict[str, float]:
        bad = sorted(k for k, v in value.items() if v < 0)
        if bad:
            raise ValueError(f"negative price for {', '.join(bad)}")
        return value

    @field_validator("warn_usd")
    @classmethod
    def _sorted_thresholds(cls, value: list[float]) -> list[float]:
        if any(v <= 0 for v in value):
            raise ValueError("warning thresholds are amounts above 0")
        return sorted(set(value))


def _mapping_from_text(value: object) -> object:
    """A mapping setting as an environment variable gives it: JSON text (empty: no entries)."""
    if isinstance(value, str):
        import json

        try:
            return json.loads(value) if value.strip() else {}
        except ValueError:
            raise ValueError("give a mapping (as JSON text in an environment variable)") from None
    return value


def _store_location(value: str) -> str:
    """A store setting (versions.store, team.store): empty, an absolute folder or an object-store prefix."""
    value = value.strip().rstrip("/")
    if value and not value.startswith(("s3://", "gs://", "az://", "file://", "/")):
        raise ValueError(f"{value!r}: give an absolute folder or an s3://, gs:// or az:// prefix")
    return value


class VersionsSettings(_Section):
    """Release versions: how git tags map to component@version, and where their index lives (ADR 0015)."""

    tag_rules: list[str] = Field(
        default_factory=list[str],
        description=(
            "Regular expressions (RE2) with a `version` group and an optional `component` group, tried in "
            "order before the built-in rules (`<component>-v<version>`, `v<version>`)."
        ),
    )
    root_component: str = Field(
        default="", description="The component of bare version tags (v1.2.3); default: the repository's folder name."
    )
    scopes: dict[str, list[str]] = Field(
        default_factory=dict[str, list[str]],
        description="Per component, the folders (or globs) that belong to it; default: the whole tree.",
    )
    store: str = Field(
        default="",
        description=(
            "Where versions are stored: empty for the cache dir, or an object-store prefix (s3://bucket/path) "
            "under which each repository has a folder of its name."
        ),
    )
    storage_options: dict[str, str] = Field(
        default_factory=dict[str, str],
        description="Options of the object store (endpoint, region, allow_http, ...); credentials: AWS_* variables.",
    )
    cached_versions: int = Field(
        default=4, ge=1, le=64, description="Versions a server keeps searchable in memory, least recently used dropped."
    )

    @field_validator("scopes", "storage_options", mode="before")
    @classmethod
    def _json_text(cls, value: object) -> object:
        """An environment variable gives a mapping as JSON text."""
        return _mapping_from_text(value)

    @field_validator("store")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        return _store_location(value)


class TeamSettings(_Section):
    """The team index: vectors published from CI per commit, seeded on every machine (ADR 0034).
    Process settings only: a repository's `.lgrep.yaml` cannot say where lgrep reads or writes."""

    store: str = Field(
        default="",
        description=(
            "Where the team's publications live: empty for none, an object-store prefix (s3://bucket/path, "
            "gs://, az://) or an absolute folder; each repository has a folder under it."
        ),
    )
    storage_options: dict[str, str] = Field(
        default_factory=dict[str, str],
        description="Options of the object store (endpoint, region, allow_http, ...); credentials: AWS_* variables.",
    )
    repository: str = Field(
        default="",
        description=(
            "The repository's name in the store (host/owner/name); default: from the `origin` remote, else the "
            "folder's name."
        ),
    )
    auto_seed: bool = Field(
        default=True,
        description="Seed a project with no usable index from the store on its first index or search.",
    )
    keep: int = Field(default=20, ge=1, le=10_000, description="Publications kept per model; older ones are pruned.")
    grace_minutes: float = Field(
        default=60.0,
        ge=0,
        le=7 * 24 * 60,
        description="How long pruned data stays readable for a member reading it at that moment.",
    )

    @field_validator("storage_options", mode="before")
    @classmethod
    def _json_text(cls, value: object) -> object:
        """An environment variable gives a mapping as JSON text."""
        return _mapping_from_text(value)

    @field_validator("store")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        return _store_location(value)

    @field_validator("repository")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        value = value.strip().strip("/")
        parts = value.split("/") if value else []
        if any(p in ("", ".", "..") or not all(c.isalnum() or c in "._-" for c in p) for p in parts):
            raise ValueError(f"{value!r}: give a name like host/owner/name (letters, digits, '.', '_', '-')")
        return value


class LgrepSettings(BaseModel):
    """The effective configuration. Build it with `load_settings`, which records where each value came from."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False, validate_default=True)

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default=defaults.LOG_LEVEL, description="Log level (stderr)."
    )
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    spend: SpendSettings = Field(default_factory=SpendSettings)
    versions: VersionsSettings = Field(default_factory=VersionsSettings)
    team: TeamSettings = Field(default_factory=TeamSettings)

    @property
    def cache_dir(self) -> Path:
        return self.index.cache_dir.expanduser().resolve()

    @property
    def socket_path(self) -> Path:
        """Where the daemon listens."""
        return self.server.socket.expanduser() if self.server.socket else self.cache_dir / "lgrep.sock"

    @property
    def token_path(self) -> Path:
        return self.server.token_file.expanduser() if self.server.token_file else self.cache_dir / "lgrep.token"

    def embedding_fingerprint(self) -> dict[str, object]:
        """The process settings that decide what vectors mean, as a server's handshake names them: a
        client and the daemon serving it must agree on them, or its results come from another model."""
        e = self.embedding
        return {"provider": e.provider, "model": e.label, "dimension": e.dimensions or 0}


class LoadedSettings(BaseModel):
    """Settings plus, for each dotted key, the file or variable that set it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: LgrepSettings
    sources: dict[str, str]
    # dotted key -> why its value is not the one a file asked for (a project raising a limit)
    warnings: dict[str, str] = Field(default_factory=dict[str, str])

    def effective(self) -> list[tuple[str, Any, str]]:
        """Every leaf setting as (dotted key, value, source)."""
        rows: list[tuple[str, Any, str]] = []
        for key, value in flatten(self.settings.model_dump(mode="json")).items():
            rows.append((key, value, self.sources.get(key, DEFAULT_SOURCE)))
        return rows


def load_settings(
    project_root: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    user_config: Path | None = None,
) -> LoadedSettings:
    """Build the effective settings.

    Raises:
        ConfigError: a file cannot be parsed, a key is unknown or a value is invalid; the message
            names the key and where it came from.
    """
    env = dict(os.environ) if env is None else dict(env)
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}

    user_path = user_config if user_config is not None else default_user_config_path(env)
    if user_config is None and env.get("LGREP_CONFIG") and not user_path.is_file():
        raise ConfigError(f"LGREP_CONFIG names {user_path}, which is not a file")
    user_layer = read_yaml(user_path)
    merge(merged, sources, user_layer, str(user_path))
    project_path: Path | None = None
    if project_root is not None:
        project_path = project_root / PROJECT_CONFIG_NAME
        project_layer = read_yaml(project_path, untrusted=True)
        _check_project_keys(project_layer, project_path)
        merge(merged, sources, project_layer, str(project_path))
    for origin, layer in env_layers(env):
        merge(merged, sources, layer, origin)

    try:
        settings = LgrepSettings(**merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, sources)) from None
    warnings: dict[str, str] = {}
    if project_path is not None and any(sources.get(key) == str(project_path) for key in PROJECT_LIMITS):
        _cap_project_limits(
            settings, sources, warnings, user_layer, user_origin=str(user_path), project_origin=str(project_path)
        )
    embedding = settings.embedding
    key_env = embedding.api_key_env
    if key_env and embedding.api_key is None and env.get(key_env, "").strip():
        # The provider's own variable (VOYAGE_API_KEY, OPENAI_API_KEY), as its SDK would read it.
        embedding.api_key = SecretStr(env[key_env].strip())
        sources["embedding.api_key"] = f"env {key_env}"
    return LoadedSettings(settings=settings, sources=sources, warnings=warnings)


def _cap_project_limits(
    settings: LgrepSettings,
    sources: dict[str, str],
    warnings: dict[str, str],
    user_layer: Mapping[str, Any],
    *,
    user_origin: str,
    project_origin: str,
) -> None:
    """Lower each limit (PROJECT_LIMITS) that the project file set above the user's own value to that
    value, saying so in `warnings` and the log."""
    user_flat = flatten(user_layer)
    try:
        mine = LgrepSettings(**{k: v for k, v in user_layer.items() if k in LgrepSettings.model_fields})
    except ValidationError as exc:
        raise ConfigError(_describe(exc, dict.fromkeys(user_flat, user_origin))) from None
    for key in PROJECT_LIMITS:
        if sources.get(key) != project_origin:
            continue  # the environment (the user's) set it after the project file
        section, name = key.split(".")
        asked = getattr(getattr(settings, section), name)
        own = getattr(getattr(mine, section), name)
        if asked <= own:
            continue
        setattr(getattr(settings, section), name, own)
        sources[key] = user_origin if key in user_flat else DEFAULT_SOURCE
        warnings[key] = (
            f"{project_origin} asks for {key} {asked}, above your own {own}: a project file may lower a "
            f"limit, never raise it, so {own} is used (raise it in {user_origin} or the environment)"
        )
        log.warning("%s", warnings[key])


def _under(root: Path, folder: str) -> bool:
    """`root` is `folder` or inside it (both resolved; `~` expanded)."""
    try:
        base = Path(folder).expanduser().resolve()
        return root.resolve().is_relative_to(base)
    except (OSError, RuntimeError, ValueError):
        return False


def is_project_key(key: str) -> bool:
    """Whether a dotted key is a project setting (see PROJECT_KEYS); every other key is a process setting."""
    return any(key == k or (k.endswith(".*") and (key.startswith(k[:-1]) or key == k[:-2])) for k in PROJECT_KEYS)


def _check_project_keys(layer: Mapping[str, Any], path: Path) -> None:
    """Raises ConfigError for a key that a repository's own file may not set."""
    refused = [
        key
        for key in flatten(layer)
        if key.split(".", 1)[0] in LgrepSettings.model_fields  # unknown keys: "unknown setting" later
        and not is_project_key(key)
    ]
    if refused:
        raise ConfigError(
            f"{path} sets {', '.join(sorted(refused))}, which a project file may not set: a repository "
            f"may only choose {', '.join(PROJECT_KEYS)}. Where lgrep writes, which model or provider it "
            "uses and which keys it reads belong in your own config file "
            f"({default_user_config_path({})}) or the environment"
        )


def _describe(exc: ValidationError, sources: Mapping[str, str]) -> str:
    lines: list[str] = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        origin = sources.get(key)
        if origin is None:  # an unknown section: attribute it to whatever set something under it
            origin = next((v for k, v in sources.items() if k.startswith(key + ".")), DEFAULT_SOURCE)
        message = "unknown setting" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"invalid setting {key} (from {origin}): {message}")
    return "; ".join(lines)
