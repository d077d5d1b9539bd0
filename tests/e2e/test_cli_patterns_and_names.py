"""Patterns and file names a repository or a user supplies, through the `lgrep` command: ignore
patterns and `--path` globs that make backtracking regexes take hours, file names that are not
UTF-8, and `--path` given as an absolute path."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.model]

# Python's `re` needs hours for this against a name of 50 'a's (exponential backtracking); each
# command below gets the subprocess timeout as its guard, far above what a linear matcher needs.
PATHOLOGICAL = "a*a*a*a*a*a*a*a*a*a*a*a*b"
GUARD_S = 120
LONG = "a" * 200


def _results(lgrep, repo: Path, query: str, *extra: str) -> list[dict]:
    out = lgrep("search", query, str(repo), "--json", "--type", "bm25", "-n", "50", *extra, timeout=GUARD_S)
    return out.json()["results"]


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err, err


def test_pathological_ignore_patterns_do_not_hang_index_or_status(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sub = repo / "sub"
    sub.mkdir(parents=True)
    overlong = "a*" * 50_000 + "b"  # 100 KB on one line: dropped with a warning (re2 cannot compile it)
    (repo / ".gitignore").write_text(f"{PATHOLOGICAL}\n{overlong}\n")
    (sub / ".gitignore").write_text(f"{PATHOLOGICAL}.py\n")  # rebased to sub/**/a*a*...b.py
    (repo / ".lgrep.yaml").write_text(json.dumps({"index": {"ignore_patterns": [f"**/{PATHOLOGICAL}*/"]}}))
    files = {
        f"{LONG}.py": True,  # ends in ".py", not "b": kept
        f"{LONG}b": False,  # root .gitignore
        f"sub/{LONG}b.py": False,  # sub/.gitignore
        f"sub/{LONG}.py": True,
        f"deep/{LONG}bx/inner.py": False,  # the folder matches ignore_patterns
        f"deep/{LONG}/inner.py": True,
    }
    for n, rel in enumerate(files):
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def marker_function_{n}():\n    return {n}\n")

    index = lgrep("index", str(repo), "--json", timeout=GUARD_S)
    _no_traceback(index.err)
    assert "line 2 is 100001 characters long" in index.err
    status = lgrep("status", str(repo), "--json", timeout=GUARD_S)
    _no_traceback(status.err)
    assert status.json()["changes"]["total"] == 0
    # The kept files, plus the three ignore files and .lgrep.yaml.
    assert status.json()["files"] == sum(files.values()) + 3

    found = {hit["path"] for hit in _results(lgrep, repo, "marker_function")}
    assert found == {rel for rel, kept in files.items() if kept}


def test_search_path_with_a_pathological_glob(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / f"{LONG}.py").write_text("def glob_target_plain():\n    return 1\n")
    (repo / f"{LONG}b.py").write_text("def glob_target_b():\n    return 2\n")
    lgrep("index", str(repo), "--json", timeout=GUARD_S)

    hits = _results(lgrep, repo, "glob_target", "--path", PATHOLOGICAL + ".py")
    assert [hit["path"] for hit in hits] == [f"{LONG}b.py"]
    hits = _results(lgrep, repo, "glob_target", "--path", "**/" + "*a" * 40 + "*?*?*?*?*?*?*?*?.py")
    assert {hit["path"] for hit in hits} == {f"{LONG}.py", f"{LONG}b.py"}

    huge = lgrep("search", "glob_target", str(repo), "--path", "*a" * 5000, check=False, timeout=GUARD_S)
    assert huge.code == 1
    assert huge.err.startswith("lgrep: error: the path filter is 10000 characters long")
    _no_traceback(huge.err)


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that stores raw byte names")
def test_file_names_that_are_not_utf8_are_indexed_and_shown_escaped(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    raw = os.fsencode(repo)
    with open(raw + b"/caf\xe9.py", "wb") as handle:  # noqa: PTH123 - pathlib cannot take a bytes path
        handle.write(b"def zanzibar_frobnicate_cafe(order):\n    return order\n")
    os.mkdir(raw + b"/d\xe9p\xf4t")  # noqa: PTH102 - pathlib cannot take a bytes path
    with open(raw + b"/d\xe9p\xf4t/inner.py", "wb") as handle:  # noqa: PTH123
        handle.write(b"def quixotic_depot_lookup(key):\n    return key\n")
    (repo / "plain.py").write_text("def ordinary_helper():\n    return 0\n")

    index = lgrep("index", str(repo), "--json", timeout=GUARD_S)
    _no_traceback(index.err)
    assert index.json()["files_seen"] == 3
    assert index.json()["files_skipped"] == {}

    [cafe] = _results(lgrep, repo, "zanzibar_frobnicate_cafe")[:1]
    assert cafe["path"] == "caf\\xe9.py"
    assert cafe["stale"] is False
    assert "def zanzibar_frobnicate_cafe" in cafe["content"]
    [depot] = _results(lgrep, repo, "quixotic_depot_lookup")[:1]
    assert depot["path"] == "d\\xe9p\\xf4t/inner.py"
    assert depot["stale"] is False
    # Raw stdout is valid JSON in valid UTF-8, with the byte written as the text \xe9.
    raw_out = lgrep("search", "zanzibar_frobnicate_cafe", str(repo), "--json", "--type", "bm25", timeout=GUARD_S)
    assert '"caf\\\\xe9.py"' in raw_out.out
    raw_out.out.encode("utf-8")

    human = lgrep("search", "zanzibar_frobnicate_cafe", str(repo), "--type", "bm25", timeout=GUARD_S)
    assert "caf\\xe9.py" in human.out
    _no_traceback(human.err)

    only_depot = _results(lgrep, repo, "quixotic_depot_lookup zanzibar_frobnicate_cafe", "--path", "d\\xe9p\\xf4t")
    assert {hit["path"] for hit in only_depot} == {"d\\xe9p\\xf4t/inner.py"}

    status = lgrep("status", str(repo), "--json", timeout=GUARD_S).json()
    assert status["files"] == 3
    assert status["changes"]["total"] == 0

    # A change to the escaped file is seen through its escaped path.
    with open(raw + b"/caf\xe9.py", "ab") as handle:  # noqa: PTH123
        handle.write(b"\n\ndef zanzibar_second_cafe():\n    return 2\n")
    [stale] = _results(lgrep, repo, "zanzibar_frobnicate_cafe")[:1]
    assert stale["stale"] is True


def test_search_path_accepts_an_absolute_path_inside_the_root(lgrep, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "auth").mkdir(parents=True)
    (repo / "src" / "billing").mkdir(parents=True)
    (repo / "src" / "auth" / "tokens.py").write_text("def verify_session_token(token):\n    return token\n")
    (repo / "src" / "billing" / "invoices.py").write_text("def verify_session_invoice(inv):\n    return inv\n")
    lgrep("index", str(repo), "--json", timeout=GUARD_S)

    relative = _results(lgrep, repo, "verify_session", "--path", "src/auth")
    absolute = _results(lgrep, repo, "verify_session", "--path", str(repo / "src" / "auth"))
    assert [hit["path"] for hit in absolute] == [hit["path"] for hit in relative] == ["src/auth/tokens.py"]
    glob = _results(lgrep, repo, "verify_session", "--path", f"{repo}/src/**/*.py")
    assert {hit["path"] for hit in glob} == {"src/auth/tokens.py", "src/billing/invoices.py"}
    whole = _results(lgrep, repo, "verify_session", "--path", str(repo))
    assert len(whole) == 2

    outside = lgrep("search", "verify_session", str(repo), "--path", str(tmp_path / "elsewhere"), check=False)
    assert outside.code == 1
    assert outside.err.startswith("lgrep: error: the path filter ")
    assert "outside the project root" in outside.err
    _no_traceback(outside.err)
