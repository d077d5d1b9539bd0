"""The defaults both settings readers share: `config` (the full loader, pydantic) and `endpoints` (the
light path a command takes to reach the daemon, which must not import pydantic). One place, so the
two cannot drift; tests/…/test_endpoints.py also checks the light path knows every key the loader does."""

from __future__ import annotations

__all__ = [
    "AUTOSTART",
    "CACHE_DIR",
    "LOCAL_DIMENSION",
    "LOCAL_MODEL",
    "LOG_LEVEL",
    "LOG_LEVELS",
    "PROVIDER",
    "QUANTIZED",
]

CACHE_DIR = "~/.cache/lgrep"
PROVIDER = "local"
LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_DIMENSION = 384
QUANTIZED = True
AUTOSTART = True
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_LEVEL = "WARNING"
