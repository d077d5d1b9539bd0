"""An indexed repository is untrusted input: nothing in it may run, redirect lgrep's writes or break
its output. Each test here reproduces an attack or a broken state through the `lgrep` command: in a
process of its own where the process matters (what it imports, what it leaves behind), in pytest's
process (`lgrep_here`) where only the answer does (a refused setting or flag)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.model

POLL_TIMEOUT_S = 120.0

# Module names a child process of lgrep imports (or Python imports at start-up): if any of these,
# placed in the indexed repository, is imported, it writes its marker.
PLANTED_MODULES = ("lgrep_cli", "lgrep_core", "numpy", "yaml", "json", "sitecustomize", "usercustomize")


def _plant_modules(repo: Path, markers: Path) -> None:
    markers.mkdir()
    for name in PLANTED_MODULES:
        marker = markers / name
        (repo / f"{name}.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    pkg = repo / "lgrep_index"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"import pathlib\npathlib.Path({str(markers / 'pkg')!r}).write_text('ran')\n")


def test_background_indexer_never_imports_from_the_project(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def serve_requests(port):\n    return port\n")
    markers = tmp_path / "markers"
    _plant_modules(repo, markers)
    # Even a PYTHONPATH naming the working directory must not reach the project.
    lgrep.env["PYTHONPATH"] = "."
    quick = lgrep("index", str(repo), "--no-wait", "--json", cwd=tmp_path).json()
    assert quick["vectors_pending"] > 0, "the background vector filler must have been started"
    deadline = time.monotonic() + POLL_TIMEOUT_S
    while lgrep("status", str(repo), "--json", cwd=tmp_path).json()["vectors_pending"]:
        assert time.monotonic() < deadline, "the background vector fill did not finish"
        time.sleep(0.05)
    assert sorted(p.name for p in markers.iterdir()) == []


# ------------------------------------------------------------------ a repository's own settings


@pytest.mark.parametrize(
    "setting",
    [
        "index:\n  cache_dir: {target}\n",
        "embedding:\n  model: other-model\n",
        "log_level: DEBUG\n",
    ],
)
def test_a_project_file_cannot_say_where_lgrep_writes_or_what_it_runs(
    lgrep_here, mini_repo: Path, tmp_path: Path, setting: str
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (mini_repo / ".lgrep.yaml").write_text(setting.format(target=target))
    for args in (("index", str(mini_repo)), ("search", "token", str(mini_repo)), ("status", str(mini_repo))):
        refused = lgrep_here(*args, check=False)
        assert refused.code == 1, refused.err
        assert "a project file may not set" in refused.err and "Traceback" not in refused.err
    assert list(target.iterdir()) == []
    assert list(lgrep_here.cache.iterdir()) == [lgrep_here.cache / "models"]


def test_a_project_file_may_tune_its_own_indexing(lgrep_here, mini_repo: Path) -> None:
    (mini_repo / ".lgrep.yaml").write_text("index:\n  ignore_patterns: ['auth/']\nsearch:\n  limit: 2\n")
    answer = lgrep_here("search", "token", str(mini_repo), "--json", "--type", "bm25").json()
    assert 0 < len(answer["results"]) <= 2
    assert not any(h["path"].startswith("auth/") for h in answer["results"])


@pytest.mark.parametrize("value", ["", "relative/cache"])
def test_an_empty_or_relative_cache_dir_is_an_error(lgrep, mini_repo: Path, tmp_path: Path, value: str) -> None:
    lgrep.env["LGREP_CACHE_DIR"] = value
    refused = lgrep("index", str(mini_repo), cwd=tmp_path, check=False)
    assert refused.code == 1 and "index.cache_dir" in refused.err and "LGREP_CACHE_DIR" in refused.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "home", "mini"]


def test_lgrep_config_naming_a_missing_file_is_an_error(lgrep_here, mini_repo: Path, tmp_path: Path) -> None:
    lgrep_here.env["LGREP_CONFIG"] = str(tmp_path / "no-such-config.yaml")
    refused = lgrep_here("status", str(mini_repo), check=False)
    assert refused.code == 1 and "LGREP_CONFIG" in refused.err and "no-such-config.yaml" in refused.err


# ------------------------------------------------------------------------ inputs that are numbers


@pytest.mark.parametrize(
    "args",
    [
        ("search", "token", "--bm25-weight", "inf"),
        ("search", "token", "--bm25-weight", "nan"),
        ("search", "token", "--bm25-weight", "-1"),
        ("search", "token", "-n", "0"),
        ("index", "--wait", "nan"),
        ("index", "--wait", "inf"),
    ],
)
def test_flags_that_are_not_finite_numbers_are_usage_errors(lgrep_here, mini_repo: Path, args) -> None:
    refused = lgrep_here(*args, cwd=mini_repo, check=False)
    assert refused.code == 2 and "Traceback" not in refused.err, refused.err


@pytest.mark.parametrize("name", ["LGREP_SEARCH_BM25_WEIGHT", "LGREP_INDEX__LOCK_TIMEOUT_S"])
def test_settings_that_are_not_finite_numbers_are_errors(lgrep_here, mini_repo: Path, name: str) -> None:
    lgrep_here.env[name] = "inf"
    refused = lgrep_here("search", "token", str(mini_repo), "--json", check=False)
    assert refused.code == 1 and name in refused.err and refused.out == ""


# ----------------------------------------------------------------------------- output hygiene


def test_terminal_escapes_and_newlines_are_shown_escaped(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "evil\x1b[2Jname\nnext.py").write_text(
        "def clear_screen_marker():\n    title = '\x1b]0;owned\x07'\n    return '\u202eevil' + title\n"
    )
    human = lgrep("search", "clear_screen_marker", str(repo), "--type", "bm25").out
    assert human.strip()
    assert "\x1b" not in human and "\x07" not in human and "\u202e" not in human
    assert "evil\\x1b[2Jname\\nnext.py:1-3" in human
    assert "\\x1b]0;owned\\x07" in human and "\\u202eevil" in human
    # JSON keeps the exact text (escaped by JSON itself).
    data = lgrep("search", "clear_screen_marker", str(repo), "--type", "bm25", "--json").json()
    assert data["results"][0]["path"] == "evil\x1b[2Jname\nnext.py"


def test_text_past_a_cut_long_line_is_searchable_and_marked_truncated(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    items = ", ".join(f'"item{i}"' for i in range(600))
    (repo / "data.py").write_text(f'def make_items():\n    items = [{items}, "zebracornfinale"]\n    return items\n')
    data = lgrep("search", "zebracornfinale", str(repo), "--type", "bm25", "--json").json()
    assert [h["path"] for h in data["results"]] == ["data.py"]
    assert data["results"][0]["truncated"] is True
    assert "zebracornfinale" not in data["results"][0]["content"]
    human = lgrep("search", "zebracornfinale", str(repo), "--type", "bm25").out
    assert "…" in human


def test_nothing_outside_the_root_is_read_through_git_info(lgrep, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "exclude").write_text("app.py\n")  # would hide app.py if lgrep read it
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "info").symlink_to(outside, target_is_directory=True)
    (repo / "app.py").write_text("def serve_requests(port):\n    return port\n")
    summary = lgrep("index", str(repo), "--json").json()
    assert summary["files_indexed"] == 1


# ------------------------------------------------------- the working directory on PYTHONPATH

BIN = Path(sys.executable).parent

# Modules an lgrep program imports (or Python imports at start-up, or a .pth file of site-packages).
SHADOWED_MODULES = (
    "sitecustomize",
    "usercustomize",
    "_distutils_hack",
    "lgrep_cli",
    "lgrep_core",
    "grpc",
    "numpy",
    "click",
    "yaml",
    "pydantic",
    "mcp",
    "anyio",
    "onnxruntime",
    "lancedb",
)


@pytest.mark.parametrize("pythonpath", [":", ".", "/nonexistent::/also-nonexistent"])
def test_no_entry_point_imports_from_its_working_directory(lgrep, mini_repo: Path, tmp_path: Path, pythonpath) -> None:
    # A common shell mistake (`PYTHONPATH=$PYTHONPATH:/x` with PYTHONPATH unset) puts the working
    # directory on sys.path; agents start `lgrep mcp` inside the project. No program may import from it,
    # not even Python's own sitecustomize hook, which runs before any of lgrep's code.
    markers = tmp_path / "markers"
    markers.mkdir()
    for name in SHADOWED_MODULES:
        (mini_repo / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').write('ran')\n")
    env = {**lgrep.env, "PYTHONPATH": pythonpath}
    runs = [
        ([BIN / "lgrep", "index", ".", "--json"], None),
        ([BIN / "lgrep", "search", "verify token", "--json"], None),
        ([BIN / "lgrep-index", "--help"], None),
        ([BIN / "lgrep-search", "--help"], None),
        ([BIN / "lgrep", "mcp", "."], ""),  # stdio: it reads EOF and ends
        ([BIN / "lgrep-mcp", "."], ""),
    ]
    for args, stdin in runs:
        proc = subprocess.run(
            [str(a) for a in args],
            cwd=mini_repo,
            env=env,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, (args, proc.stderr)
        assert sorted(p.name for p in markers.iterdir()) == [], (args, proc.stderr)


def test_a_project_file_cannot_raise_a_limit_past_the_users_own(lgrep, mini_repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "lgrep-config.yaml"
    config.write_text("index:\n  max_file_bytes: 2000\n")
    lgrep.env["LGREP_CONFIG"] = str(config)
    (mini_repo / ".lgrep.yaml").write_text("index:\n  max_file_bytes: 10000000000\n")
    (mini_repo / "large.py").write_text("".join(f"def handler_{i}():\n    return {i}\n\n" for i in range(200)))
    assert (mini_repo / "large.py").stat().st_size > 2000

    shown = lgrep("config", "show", str(mini_repo), "--json")
    entry = shown.json()["index.max_file_bytes"]
    assert entry["value"] == 2000 and entry["source"] == str(config)
    assert "never raise it" in entry["warning"] and "never raise it" in shown.err
    indexed = lgrep("index", str(mini_repo), "--json")
    assert indexed.json()["files_skipped"].get("too-large") == 1 and "never raise it" in indexed.err
    listed = {f["path"] for f in lgrep("files", str(mini_repo), "--json").json()["files"]}
    assert "large.py" not in listed and "auth/tokens.py" in listed
