"""tools/gen_proto.py --check passes on the checked-in tree and fails on a tampered copy (STYLE 3.3)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GEN_PROTO = ROOT / "tools" / "gen_proto.py"
SRC = ROOT / "packages" / "lgrep-core" / "src"

pytestmark = pytest.mark.skipif(
    find_spec("grpc_tools") is None,
    reason="needs the codegen group (uv sync --group codegen); make proto-check covers CI",
)


def _gen_proto(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GEN_PROTO), *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _copy_of_generated_tree(dest: Path) -> Path:
    shutil.copytree(SRC / "lgrep", dest / "lgrep", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_checked_in_code_is_current() -> None:
    proc = _gen_proto("--check")
    assert proc.returncode == 0, f"generated code is stale; run make proto\n{proc.stdout}{proc.stderr}"


def test_check_passes_on_an_untouched_copy(tmp_path: Path) -> None:
    out = _copy_of_generated_tree(tmp_path)
    proc = _gen_proto("--check", "--out", out)
    assert proc.returncode == 0, proc.stderr


def test_check_fails_on_a_modified_copy(tmp_path: Path) -> None:
    out = _copy_of_generated_tree(tmp_path)
    v1 = out / "lgrep" / "v1"
    with (v1 / "search_pb2.py").open("a", encoding="utf-8") as f:
        f.write("# hand edit\n")
    (v1 / "index_pb2_grpc.pyi").unlink()
    (v1 / "old_pb2.py").write_text("# from a deleted proto\n", encoding="utf-8")
    (v1 / "__pycache__").mkdir()
    (v1 / "__pycache__" / "common_pb2.cpython-311.pyc").write_bytes(b"ignored")

    proc = _gen_proto("--check", "--out", out)

    assert proc.returncode == 1
    assert f"differs:    {v1 / 'search_pb2.py'}" in proc.stderr
    assert f"missing:    {v1 / 'index_pb2_grpc.pyi'}" in proc.stderr
    assert f"unexpected: {v1 / 'old_pb2.py'}" in proc.stderr
    assert "__pycache__" not in proc.stderr
    assert "make proto" in proc.stderr
    assert (v1 / "old_pb2.py").exists(), "--check must not write"


def test_check_fails_when_the_tree_is_absent(tmp_path: Path) -> None:
    proc = _gen_proto("--check", "--out", tmp_path)
    assert proc.returncode == 1
    assert f"missing:    {tmp_path / 'lgrep' / 'v1' / 'common_pb2.py'}" in proc.stderr


def test_generate_replaces_the_tree_wholesale(tmp_path: Path) -> None:
    stale = tmp_path / "lgrep" / "v1" / "old_pb2.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("# from a deleted proto\n", encoding="utf-8")

    proc = _gen_proto("--out", tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert not stale.exists()
    generated = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    checked_in = sorted(
        p.relative_to(SRC).as_posix()
        for p in (SRC / "lgrep").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert generated == checked_in
    for rel in generated:
        assert (tmp_path / rel).read_bytes() == (SRC / rel).read_bytes(), rel


def test_generated_files_carry_the_banner() -> None:
    for path in sorted((SRC / "lgrep" / "v1").glob("*_pb2*.py*")):
        head = path.read_text(encoding="utf-8").splitlines()[:2]
        assert any("do not edit; run `make proto`" in line for line in head), path.name
    for init in (SRC / "lgrep" / "__init__.py", SRC / "lgrep" / "v1" / "__init__.py"):
        assert init.read_text(encoding="utf-8") == '"""Generated; run make proto."""\n'
