"""The issues-dev benchmark's split and its language rules (tools/bench_issues.py), on hand-made cases."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.tools.conftest import load_tool


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_tool("bench_issues")


def _rows(spec: dict[str, tuple[str, int]]) -> list[dict[str, str]]:
    return [
        {"instance_id": f"{repo}-{n}", "repo": repo, "language": lang}
        for repo, (lang, count) in spec.items()
        for n in range(count)
    ]


def test_the_split_is_by_repository_keeps_forks_together_and_holds_each_languages_share(bench: ModuleType) -> None:
    spec = {f"org/py{i}": ("python", 10) for i in range(10)}
    spec |= {"yt-dlp/yt-dlp": ("python", 20), "ytdl-org/youtube-dl": ("python", 5)}
    spec |= {f"org/go{i}": ("go", 5) for i in range(4)}
    rows = _rows(spec)
    split = bench.make_split(rows)
    assert split == bench.make_split(list(reversed(rows)))  # names and counts decide, not order
    assert sorted(split["dev"] + split["train"]) == sorted(spec)
    assert not set(split["dev"]) & set(split["train"])
    fork_side = {"dev" if r in split["dev"] else "train" for r in ("yt-dlp/yt-dlp", "ytdl-org/youtube-dl")}
    assert len(fork_side) == 1
    for lang in ("python", "go"):
        total = sum(n for r, (lg, n) in spec.items() if lg == lang)
        dev = sum(n for r, (lg, n) in spec.items() if lg == lang and r in split["dev"])
        assert bench.DEV_SHARE * total <= dev < total  # at least the share, never all of it


def test_the_committed_split_is_what_the_rule_gives(bench: ModuleType) -> None:
    data = bench.DEFAULT_DATA / "issues.jsonl"
    if not data.is_file():
        pytest.skip("the issues-dev set is not beside the project")
    split = bench.make_split(bench.load_rows(bench.DEFAULT_DATA))
    assert bench.read_split() == {r: part for part in ("dev", "train") for r in split[part]}


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("src/test/java/com/fasterxml/jackson/core/JsonParserTest.java", True),
        ("src/main/java/com/fasterxml/jackson/core/JsonParser.java", False),
        ("src/it/java/FooIT.java", True),
        ("grpc/clientconn_test.go", True),
        ("grpc/clientconn.go", False),
        ("internal/testdata/x.go", True),
        ("src/__tests__/plugin.js", True),
        ("test/parse.test.js", True),
        ("src/parse.spec.ts", True),
        ("spec/lib/parser_spec.rb", True),
        ("tests/fuzz/regression.c", True),
        ("tracing-core/tests/macros.rs", True),
        ("tracing-core/src/field.rs", False),
        ("lib/ansible/modules/copy.py", False),
        ("conftest.py", True),
        ("src/latest.rs", False),
        ("src/contest.py", False),
    ],
)
def test_test_files_of_each_ecosystem(bench: ModuleType, path: str, test: bool) -> None:
    assert bench.is_test(path) is test


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("lib/zstd.h", True),
        ("src/dayjs.ts", True),
        ("src/index.tsx", True),
        ("grpc/server.go", True),
        ("README.md", False),
        ("docs/conf.toml", False),
        ("Makefile", False),
        ("pandas/_libs/lib.pyx", True),
    ],
)
def test_code_files(bench: ModuleType, path: str, code: bool) -> None:
    assert bench.is_code(path) is code


def test_the_floor_ranks_code_files_of_every_language_and_can_leave_tests_out(
    bench: ModuleType, tmp_path: Path
) -> None:
    floor_mod = load_tool("bench_swebench")
    repo = tmp_path / "r"
    files = {
        "src/parser.go": "func parseDuration(s string) {}\n",
        "src/parser_test.go": "func TestParseDuration(t) { parseDuration(parseDuration) }\n",
        "src/other.rs": "fn unrelated() {}\n",
        "README.md": "parse duration parse duration parse duration\n",
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    floor = floor_mod.Floor(repo, bench.is_code, bench.is_test)
    ranked = floor.rankings("HEAD", "parseDuration fails on an empty string")
    assert set(ranked["with_tests"][:2]) == {"src/parser.go", "src/parser_test.go"}
    assert ranked["no_tests"][0] == "src/parser.go"
    assert "README.md" not in ranked["with_tests"]
    assert "src/parser_test.go" not in ranked["no_tests"]


def test_context_counts_tokens_up_to_the_first_and_the_last_gold_file(bench: ModuleType) -> None:
    text = '{"files":[{"path":"src/a.py"},{"path":"src/b.py"}],"results":[{"path":"src/c.py"}]}'

    def count(s: str) -> int:
        return len(s)

    first, every = bench._first_mention(text, ["src/b.py", "src/c.py"], count)
    assert first == text.index('"src/b.py"') + len('"src/b.py"')
    assert every == text.index('"src/c.py"') + len('"src/c.py"')
    assert bench._first_mention(text, ["src/b.py", "src/z.py"], count)[1] is None  # one never appears
    assert bench._first_mention(text, ["src/z.py"], count) == (None, None)
