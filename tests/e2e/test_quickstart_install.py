"""The README's quick start on a Python that refuses pip installs into the system, as Debian 12 and
Ubuntu 23.04+ ship it (PEP 668), with no python3-venv: `./install.sh` with a fresh HOME leaves a
working `lgrep` (and `uv`) in ~/.local/bin, creating the folder, says how to put it on PATH, runs
again without changing anything, and never replaces a `lgrep` that is not its own (ADR 0021).

The system Python is simulated: a prefix of our own holding a copy of this interpreter's binary
(so `sys.prefix` is that prefix), links to its standard library without `ensurepip`, pip, and the
EXTERNALLY-MANAGED marker. The test first checks that pip really refuses there. It installs from
the machine's uv cache and fetches uv's wheel from PyPI (a minute or less; PyPI is reachable in CI).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "install.sh"
VERSION = re.search(r'^version = "(.+)"$', (REPO / "packages/lgrep/pyproject.toml").read_text(), re.M)[1]  # type: ignore[index]
PY = f"python{sys.version_info.major}.{sys.version_info.minor}"
# What the caller's environment may hold that would point a fresh user's install elsewhere, or let
# pip install into the system after all (the machine's index and certificate settings stay).
DROPPED = {
    "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "XDG_DATA_HOME",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "UV_PROJECT_ENVIRONMENT", "UV_PYTHON", "UV_SYSTEM_PYTHON",
    "UV_NO_SYNC", "PIP_BREAK_SYSTEM_PACKAGES", "PIP_USER", "PIP_TARGET", "PIP_PREFIX", "PIP_REQUIRE_VIRTUALENV",
}  # fmt: skip


def _run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def _uv_cache() -> str:
    if os.environ.get("UV_CACHE_DIR"):
        return os.environ["UV_CACHE_DIR"]
    return str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv")


def _managed_python(prefix: Path) -> Path:
    """A Python installed in `prefix` whose pip refuses to install into it (PEP 668); its python3."""
    real = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    found = subprocess.run(
        [str(real), "-c", "import os, pip; print(os.path.dirname(pip.__file__))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        pytest.skip(f"{real} has no pip: the quick start needs a Python with pip")
    pip_dir = Path(found.stdout.strip())
    stdlib = Path(sysconfig.get_paths()["stdlib"])  # the base interpreter's, also from a venv
    (prefix / "bin").mkdir(parents=True)
    lib = prefix / "lib" / PY
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "dist-packages", "ensurepip", "EXTERNALLY-MANAGED"):
            (lib / entry.name).symlink_to(entry)
    (lib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=This Python belongs to the system.\n")
    shutil.copy2(real, prefix / "bin" / PY)  # a copy, not a link: Python finds its prefix from the binary
    python = prefix / "bin" / "python3"
    python.symlink_to(PY)
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True
    )
    site_packages = Path(site.stdout.strip())
    assert site_packages.is_relative_to(prefix), site_packages
    site_packages.mkdir(parents=True, exist_ok=True)
    for entry in pip_dir.parent.iterdir():
        if entry.name == "pip" or (entry.name.startswith("pip-") and entry.name.endswith(".dist-info")):
            (site_packages / entry.name).symlink_to(entry)
    return python


@pytest.fixture
def stock(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh HOME and the environment of a user of the managed Python: no uv on PATH."""
    python = _managed_python(tmp_path / "system")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in DROPPED and not k.startswith("LGREP_")}
    env.update({"HOME": str(home), "PATH": f"{python.parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
                "UV_CACHE_DIR": _uv_cache(), "UV_PYTHON_DOWNLOADS": "never"})  # fmt: skip
    for folder in ("/usr/bin", "/bin"):
        assert shutil.which("uv", path=folder) is None, f"{folder}/uv would stand in for the uv install.sh fetches"
    return home, env


def test_the_readme_quick_start_starts_with_install_sh() -> None:
    readme = (REPO / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1]
    first = quick_start.split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert first.startswith("./install.sh && "), first
    assert os.access(INSTALL, os.X_OK)


def test_install_sh_on_a_python_that_refuses_pip_installs(stock: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    home, env = stock
    # The Python really is a managed, venv-less system one: what the old quick start ran fails here.
    assert _run(["python3", "-c", "import sys; print(sys.prefix)"], env, tmp_path).stdout.strip() == str(
        tmp_path / "system"
    )
    for args in (["install", "uv>=0.13,<0.14"], ["install", "--user", "uv>=0.13,<0.14"]):
        refused = _run(["python3", "-m", "pip", *args], env, tmp_path)
        assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr, refused.stderr
    assert _run(["python3", "-m", "venv", str(tmp_path / "v")], env, tmp_path).returncode != 0
    assert not (home / ".local").exists()

    first = _run([str(INSTALL)], env, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout + first.stderr
    assert len(out.splitlines()) <= 12, out
    assert "uv 0.13 from PyPI" in out and 'export PATH="$HOME/.local/bin:$PATH"' in out, out
    venv = home / ".local/share/lgrep/venv"
    bin_dir = home / ".local/bin"
    assert (bin_dir / "lgrep").readlink() == venv / "bin/lgrep"
    assert (bin_dir / "uv").readlink() == home / ".local/share/lgrep/uv/bin/uv"

    # `lgrep` found on PATH once ~/.local/bin is on it, as the quick start's `export` does.
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    version = _run(["sh", "-c", "lgrep --version && uv --version"], env, tmp_path)
    assert version.returncode == 0, version.stderr
    lgrep_line, uv_line = version.stdout.splitlines()
    assert lgrep_line == f"lgrep {VERSION}" and uv_line.startswith("uv 0.13."), version.stdout
    # lgrep's own environment: built from the checkout (not linked to it), no dev tools, no torch.
    where = _run([str(venv / "bin/python"), "-c", _WHERE], env, tmp_path)
    assert where.returncode == 0, where.stderr
    assert where.stdout.split() == [str(venv / "lib" / PY / "site-packages" / "lgrep_cli"), "-", "-", "-", "-"]

    again = _run([str(INSTALL)], env, tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "from PyPI" not in again.stdout and "PATH" not in again.stdout, again.stdout
    assert f"lgrep {VERSION} is ~/.local/bin/lgrep" in again.stdout
    assert (bin_dir / "lgrep").readlink() == venv / "bin/lgrep"

    # A `lgrep` that is not this installer's link is never replaced.
    (bin_dir / "lgrep").unlink()
    (bin_dir / "lgrep").write_text("#!/bin/sh\necho mine\n")
    refused = _run([str(INSTALL)], env, tmp_path)
    assert refused.returncode == 1 and "is not this installer's link" in refused.stderr, refused.stderr
    assert (bin_dir / "lgrep").read_text() == "#!/bin/sh\necho mine\n"


# Where lgrep_cli comes from, then a dash for each of pytest, ruff, torch, sentence_transformers not installed.
_WHERE = """
import importlib.util, os
print(os.path.dirname(importlib.util.find_spec("lgrep_cli").origin))
for name in ("pytest", "ruff", "torch", "sentence_transformers"):
    print(importlib.util.find_spec(name) or "-")
"""
