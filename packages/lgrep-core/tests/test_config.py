from pathlib import Path

import pytest
from lgrep_core.domain.errors import ConfigError
from lgrep_core.settings.config import load_settings


def _user(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "user.yaml"
    path.write_text(text)
    return path


def test_defaults_when_no_files(tmp_path: Path) -> None:
    loaded = load_settings(tmp_path, env={}, user_config=tmp_path / "missing.yaml")
    s = loaded.settings
    assert s.embedding.provider == "local"
    assert s.embedding.model == "all-MiniLM-L6-v2"
    assert s.embedding.dimensions == 384
    assert s.chunking.max_tokens == 512
    assert s.index.max_file_bytes == 1_000_000
    assert all(source == "default" for _, _, source in loaded.effective())


def test_layers_user_then_project_then_env(tmp_path: Path) -> None:
    user = _user(tmp_path, "chunking:\n  max_tokens: 300\n  overlap_tokens: 10\nindex:\n  ignore_patterns: ['*.gen']\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".lgrep.yaml").write_text("chunking:\n  max_tokens: 400\n")
    env = {
        "LGREP_CACHE_DIR": str(tmp_path / "cache"),
        "LGREP_CHUNKING__OVERLAP_TOKENS": "20",
        "LGREP_LOG_LEVEL": "INFO",
    }
    loaded = load_settings(project, env=env, user_config=user)
    s = loaded.settings
    assert s.chunking.max_tokens == 400
    assert s.chunking.overlap_tokens == 20
    assert s.index.ignore_patterns == ["*.gen"]
    assert s.cache_dir == (tmp_path / "cache").resolve()
    assert s.log_level == "INFO"
    sources = {k: src for k, _, src in loaded.effective()}
    assert sources["chunking.max_tokens"] == str(project / ".lgrep.yaml")
    assert sources["index.ignore_patterns"] == str(user)
    assert sources["chunking.overlap_tokens"] == "env LGREP_CHUNKING__OVERLAP_TOKENS"
    assert sources["index.cache_dir"] == "env LGREP_CACHE_DIR"


def test_single_underscore_env_names_work(tmp_path: Path) -> None:
    loaded = load_settings(
        None,
        env={"LGREP_EMBEDDING_PROVIDER": "local", "LGREP_INDEX_MAX_FILE_BYTES": "5"},
        user_config=tmp_path / "none.yaml",
    )
    assert loaded.settings.index.max_file_bytes == 5


def test_bad_value_names_key_and_file(tmp_path: Path) -> None:
    user = _user(tmp_path, "embedding:\n  dimensions: lots\n")
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={}, user_config=user)
    assert "embedding.dimensions" in err.value.message
    assert str(user) in err.value.message


def test_unknown_key_is_an_error(tmp_path: Path) -> None:
    user = _user(tmp_path, "chunking:\n  max_tokenz: 3\n")
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={}, user_config=user)
    assert "chunking.max_tokenz" in err.value.message
    assert "unknown setting" in err.value.message


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={"LGREP_CHUNKING_MAX_TOKENS": "-5"}, user_config=tmp_path / "none.yaml")
    assert "env LGREP_CHUNKING_MAX_TOKENS" in err.value.message


def test_unsupported_provider_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={"LGREP_EMBEDDING_PROVIDER": "magic"}, user_config=tmp_path / "none.yaml")
    assert "embedding.provider" in err.value.message


def test_invalid_yaml_is_an_error(tmp_path: Path) -> None:
    user = _user(tmp_path, "chunking: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(None, env={}, user_config=user)


def test_yaml_that_is_not_a_mapping(tmp_path: Path) -> None:
    user = _user(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(None, env={}, user_config=user)


def test_search_section_defaults_and_overrides(tmp_path: Path) -> None:
    s = load_settings(None, env={}, user_config=tmp_path / "none.yaml").settings
    assert (s.search.limit, s.search.bm25_weight) == (10, None)
    user = _user(tmp_path, "search:\n  limit: 5\n  bm25_weight: 0.5\n")
    s = load_settings(None, env={"LGREP_SEARCH__LIMIT": "7"}, user_config=user).settings
    assert (s.search.limit, s.search.bm25_weight) == (7, 0.5)
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={"LGREP_SEARCH_BM25_WEIGHT": "-1"}, user_config=tmp_path / "none.yaml")
    assert "search.bm25_weight" in err.value.message or "LGREP_SEARCH_BM25_WEIGHT" in err.value.message


@pytest.mark.parametrize(
    "text",
    [
        "index:\n  cache_dir: ~\n",
        "embedding:\n  provider: local\n",
        "embedding:\n  model: other\n",
        "log_level: DEBUG\n",
        "index:\n  memory_budget_mb: 100000\n",
    ],
)
def test_project_file_may_not_say_where_lgrep_writes_or_what_it_runs(tmp_path: Path, text: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".lgrep.yaml").write_text(text)
    with pytest.raises(ConfigError, match="a project file may not set"):
        load_settings(project, env={}, user_config=tmp_path / "missing.yaml")


def test_project_file_may_tune_its_own_indexing_and_search(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".lgrep.yaml").write_text(
        "index:\n  ignore_patterns: ['*.gen']\n  max_file_bytes: 5000\n"
        "chunking:\n  max_tokens: 256\nsearch:\n  limit: 5\n"
    )
    s = load_settings(project, env={}, user_config=tmp_path / "missing.yaml").settings
    assert (s.index.ignore_patterns, s.index.max_file_bytes, s.chunking.max_tokens, s.search.limit) == (
        ["*.gen"],
        5000,
        256,
        5,
    )


@pytest.mark.parametrize("value", ["", "  ", "relative/cache", "./cache"])
def test_cache_dir_must_be_absolute(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"index\.cache_dir \(from env LGREP_CACHE_DIR\)"):
        load_settings(None, env={"LGREP_CACHE_DIR": value}, user_config=tmp_path / "missing.yaml")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "Infinity"])
def test_numbers_must_be_finite(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"search\.bm25_weight"):
        load_settings(None, env={"LGREP_SEARCH_BM25_WEIGHT": value}, user_config=tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match=r"index\.lock_timeout_s"):
        load_settings(None, env={"LGREP_INDEX_LOCK_TIMEOUT_S": value}, user_config=tmp_path / "missing.yaml")


def test_lgrep_config_naming_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="LGREP_CONFIG names"):
        load_settings(None, env={"LGREP_CONFIG": str(tmp_path / "nope.yaml")})


def test_a_project_file_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "private.txt"
    outside.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".lgrep.yaml").symlink_to(outside)
    with pytest.raises(ConfigError, match="symbolic link") as err:
        load_settings(project, env={}, user_config=tmp_path / "missing.yaml")
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in err.value.message


def test_settings_have_a_process_or_a_project_scope(tmp_path: Path) -> None:
    from lgrep_core.settings.config import is_project_key

    assert is_project_key("search.limit") and is_project_key("chunking.max_tokens")
    assert is_project_key("index.ignore_patterns")
    for key in ("index.cache_dir", "embedding.model", "server.tcp_port", "log_level", "index.memory_budget_mb"):
        assert not is_project_key(key), key


def test_a_project_file_may_not_choose_the_daemon_or_the_model(tmp_path: Path) -> None:
    (tmp_path / ".lgrep.yaml").write_text("server:\n  tcp_port: 8080\nembedding:\n  model: other\n")
    with pytest.raises(ConfigError, match=r"embedding.model, server.tcp_port"):
        load_settings(tmp_path, env={}, user_config=tmp_path / "none")


def test_the_socket_and_token_default_to_the_cache_dir(tmp_path: Path) -> None:
    settings = load_settings(None, env={"LGREP_CACHE_DIR": str(tmp_path)}, user_config=tmp_path / "none").settings
    assert settings.socket_path == tmp_path.resolve() / "lgrep.sock"
    assert settings.token_path == tmp_path.resolve() / "lgrep.token"
    with pytest.raises(ConfigError, match="relative"):
        load_settings(None, env={"LGREP_SERVER__SOCKET": "rel/sock"}, user_config=tmp_path / "none")


def test_the_light_sources_know_every_settings_section() -> None:
    from lgrep_core.settings.config import LgrepSettings
    from lgrep_core.settings.config_sources import SECTIONS

    nested = {n for n, f in LgrepSettings.model_fields.items() if hasattr(f.annotation, "model_fields")}
    assert nested == SECTIONS


@pytest.mark.parametrize("quantized", [True, False])
def test_the_settings_name_the_model_as_the_provider_built_from_them_does(tmp_path: Path, quantized: bool) -> None:
    from lgrep_core.embeddings.base import model_label
    from lgrep_core.embeddings.registry import make_embedder

    env = {"LGREP_CACHE_DIR": str(tmp_path), "LGREP_EMBEDDING__QUANTIZED": str(quantized).lower()}
    settings = load_settings(None, env=env, user_config=tmp_path / "none").settings
    embedder = make_embedder(settings.embedding, settings.cache_dir)  # builds nothing until first used
    assert settings.embedding_fingerprint() == {
        "provider": embedder.provider,
        "model": model_label(embedder),
        "dimension": embedder.dimension,
    }


def test_a_project_file_may_lower_a_limit_but_never_raise_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    user = _user(tmp_path, "index:\n  max_file_bytes: 200000\n")
    project = tmp_path / "proj"
    project.mkdir()
    env = {"LGREP_CACHE_DIR": str(tmp_path / "cache")}
    (project / ".lgrep.yaml").write_text("index:\n  max_file_bytes: 5000000000\nsearch:\n  limit: 500\n")
    loaded = load_settings(project, env=env, user_config=user)
    assert loaded.settings.index.max_file_bytes == 200_000 and loaded.settings.search.limit == 10
    assert loaded.sources["index.max_file_bytes"] == str(user) and loaded.sources["search.limit"] == "default"
    assert "never raise it" in loaded.warnings["index.max_file_bytes"] and "never raise it" in caplog.text
    (project / ".lgrep.yaml").write_text("index:\n  max_file_bytes: 1000\nsearch:\n  limit: 3\n")
    lowered = load_settings(project, env=env, user_config=user)
    assert (lowered.settings.index.max_file_bytes, lowered.settings.search.limit) == (1000, 3)
    assert lowered.warnings == {}
    # the user's environment may raise it, over any project file
    raised = load_settings(project, env={**env, "LGREP_INDEX__MAX_FILE_BYTES": "3000000"}, user_config=user)
    assert raised.settings.index.max_file_bytes == 3_000_000 and raised.warnings == {}
