"""Where settings come from, read without validating them: the user file, a project file and the
environment, as layers of nested dicts. Light on purpose (no pydantic; YAML only when a file exists):
`config.load_settings` validates these layers into settings, and `endpoints.client_settings` reads the
few a client needs to find the daemon without paying for validation on every command.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from lgrep_core.domain.errors import ConfigError

__all__ = [
    "ENV_ALIASES",
    "ENV_PREFIX",
    "MAX_CONFIG_BYTES",
    "SECTIONS",
    "default_user_config_path",
    "env_layers",
    "flatten",
    "merge",
    "read_yaml",
]

ENV_PREFIX = "LGREP_"
ENV_ALIASES = {
    "LGREP_CACHE_DIR": ("index", "cache_dir"),
    "LGREP_LOG_LEVEL": ("log_level",),
}
# The settings sections (config.LgrepSettings checks that it has exactly these).
SECTIONS = frozenset({"embedding", "chunking", "index", "search", "server", "spend", "versions", "team"})
# The most lgrep reads of a settings file a repository holds (`.lgrep.yaml`, and the agent clients'
# project files lgrep_skill edits): real ones are a few kB; a planted one could be gigabytes.
MAX_CONFIG_BYTES = 1_000_000
# Settings that hold a list: their variable holds it comma-separated.
_LIST_KEYS = frozenset({"ignore_patterns", "cloud_projects", "local_projects"})


def default_user_config_path(env: Mapping[str, str]) -> Path:
    if env.get("LGREP_CONFIG"):
        return Path(env["LGREP_CONFIG"]).expanduser()
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path("~/.config").expanduser()
    return base / "lgrep" / "config.yaml"


def read_yaml(path: Path, *, untrusted: bool = False) -> dict[str, Any]:
    """Read a settings file. An `untrusted` one (a repository's) must be a regular file inside the
    repository: a symlink could make lgrep read, and echo in an error, a file elsewhere."""
    try:
        if untrusted:
            text = _read_regular_file(path)
        else:
            text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    import yaml  # only when there is a file: most commands have none to read

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {type(data).__name__}")
    return data  # pyright: ignore[reportUnknownVariableType]


def _read_regular_file(path: Path) -> str:
    """A file's text, refusing symlinks, anything that is not a regular file, and files over 1 MB."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"config file {path} is a symbolic link; lgrep does not follow it") from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"config file {path} is not a regular file")
        if st.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES} bytes")
        return f.read(MAX_CONFIG_BYTES).decode("utf-8")


def env_layers(env: Mapping[str, str], sections: Collection[str] = SECTIONS) -> list[tuple[str, dict[str, Any]]]:
    """One layer per `LGREP_*` variable that names a setting: `LGREP_<SECTION>_<KEY>` or
    `LGREP_<SECTION>__<KEY>`, plus the aliases. Other LGREP_ variables (test switches) are ignored."""
    layers: list[tuple[str, dict[str, Any]]] = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name == "LGREP_CONFIG":
            continue
        value: Any = env[name]
        if name in ENV_ALIASES:
            keys = ENV_ALIASES[name]
        else:
            rest = name[len(ENV_PREFIX) :].lower()
            section, sep, key = rest.replace("__", "_", 1).partition("_")
            if not sep or section not in sections:
                continue
            keys = (section, key)
        if keys[-1] in _LIST_KEYS:
            value = [p for p in value.split(",") if p.strip()] if value else []
        layer: dict[str, Any] = {}
        node = layer
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
        layers.append((f"env {name}", layer))
    return layers


def merge(target: dict[str, Any], sources: dict[str, str], layer: Mapping[str, Any], origin: str) -> None:
    """Lay `layer` over `target`, recording `origin` as the source of every key it sets."""
    for dotted, value in flatten(layer).items():
        node = target
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child  # pyright: ignore[reportUnknownVariableType]
        node[parts[-1]] = value
        sources[dotted] = origin


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, dotted + "."))  # pyright: ignore[reportUnknownArgumentType]
        else:
            out[dotted] = value
    return out
