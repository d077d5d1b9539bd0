"""client_settings (the light path a client takes to find the daemon) agrees with load_settings."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from lgrep_core.domain.errors import ConfigError
from lgrep_core.rpc.endpoints import client_settings
from lgrep_core.settings.config import load_settings

USER_FILES = [
    None,
    "",
    "index:\n  cache_dir: /srv/lgrep-cache\n",
    "server:\n  socket: /run/user/lgrep.sock\n  autostart: false\n",
    "embedding:\n  model: other-model\n  dimensions: 256\n  quantized: false\nlog_level: INFO\n",
    "search:\n  limit: 5\nchunking:\n  max_tokens: 256\n",
]
ENVS = [
    {},
    {"LGREP_CACHE_DIR": "/tmp/c1"},
    {"LGREP_INDEX__CACHE_DIR": "~/elsewhere"},
    {"LGREP_SERVER__AUTOSTART": "0", "LGREP_SERVER__SOCKET": "/tmp/s.sock"},
    {"LGREP_EMBEDDING_QUANTIZED": "no", "LGREP_EMBEDDING__DIMENSIONS": "128", "LGREP_LOG_LEVEL": "DEBUG"},
    {"LGREP_SOMETHING_ELSE": "x"},
]


@pytest.mark.parametrize(("user", "env"), list(itertools.product(range(len(USER_FILES)), range(len(ENVS)))))
def test_the_light_path_gives_what_the_full_loader_gives(tmp_path: Path, user: int, env: int) -> None:
    text = USER_FILES[user]
    path = tmp_path / "config.yaml"
    if text is not None:
        path.write_text(text)
    light = client_settings(ENVS[env], user_config=path)
    full = load_settings(None, env=ENVS[env], user_config=path).settings
    assert light.cache_dir == full.cache_dir
    assert light.socket_path == full.socket_path
    assert light.autostart == full.server.autostart
    assert light.embedding == full.embedding_fingerprint()
    assert light.log_level == full.log_level


@pytest.mark.parametrize(
    ("text", "env", "words"),
    [
        ("index:\n  cache_dir: relative/dir\n", {}, "relative"),
        ("server:\n  nonsense: 1\n", {}, "nonsense"),
        ("embedding:\n  dimensions: lots\n", {}, "dimensions"),
        ("", {"LGREP_SERVER__AUTOSTART": "perhaps"}, "autostart"),
        ("[1, 2]\n", {}, "mapping"),
    ],
)
def test_what_the_light_path_cannot_read_gets_the_full_loaders_error(
    tmp_path: Path, text: str, env: dict[str, str], words: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words):
        client_settings(env, user_config=path)


def test_the_light_path_imports_no_validation_library() -> None:
    code = (
        "import sys\nfrom lgrep_core.rpc.endpoints import client_settings\nclient_settings({}, user_config=None)\n"
        "heavy = sorted(m for m in ('pydantic', 'numpy', 'yaml', 'lancedb', 'grpc') if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"HOME": "/nonexistent"}
    )
    assert out.stdout.strip() == ""


def test_the_light_path_knows_every_key_and_default_of_the_full_loader() -> None:
    """endpoints reads the few keys a client needs without pydantic; it must know every key the
    loader accepts (an unknown one sends it to the loader for the error) and take its defaults."""
    from lgrep_core.rpc import endpoints
    from lgrep_core.settings.config import EmbeddingSettings, IndexSettings, LgrepSettings, ServerSettings

    assert set(ServerSettings.model_fields) == endpoints._SERVER_KEYS
    assert set(IndexSettings.model_fields) == endpoints._INDEX_KEYS
    assert set(EmbeddingSettings.model_fields) >= endpoints._EMBEDDING_KEYS
    light = endpoints._interpret({})
    full = LgrepSettings()
    assert light.cache_dir == full.cache_dir and light.autostart == full.server.autostart
    assert light.embedding == full.embedding_fingerprint() and light.log_level == full.log_level
