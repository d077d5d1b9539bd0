"""Each retrieval channel, the fusion and each ranking signal, through `lgrep search` as an agent runs it.

The fixture (tests/fixtures/repos/ranking) is small and deliberate: one file defines `ConfigParser`
while another mentions it more often, a test file and a docs page talk about it too, one file holds six
request handlers, a `.d.ts` stub repeats a TypeScript interface, and a vendored router sits beside
ours (re-included through `.lgrepignore`). One index serves the whole module; tests that change files
work on their own copy. The index is built by a real `lgrep index`; the searches, some forty, run
in pytest's process (InProcessLgrep), each a call of the command as a process would make it.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, InProcessLgrep, Lgrep

# One worker builds the module's index (xdist_group) and serves every test of it.
pytestmark = [pytest.mark.model, pytest.mark.xdist_group("ranking")]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> tuple[Lgrep, Path]:
    base = tmp_path_factory.mktemp("ranking")
    dest = base / "ranking"
    shutil.copytree(FIXTURES / "ranking", dest)
    cache = base / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(model_dir, target_is_directory=True)
    home = base / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_") and k != "XDG_CONFIG_HOME"}
    env.update(
        {"HOME": str(home), "LGREP_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1", "LGREP_SERVER__AUTOSTART": "0"}
    )
    Lgrep(cache, env)("index", str(dest), "--json")
    return InProcessLgrep(cache, env), dest


def search(repo: tuple[Lgrep, Path], *args: str) -> dict[str, Any]:
    lgrep, root = repo
    return lgrep("search", *args, str(root), "--json", "--explain").json()


def paths(out: dict[str, Any]) -> list[str]:
    return [h["path"] for h in out["results"]]


# ----------------------------------------------------------------------------------------- channels


def test_fuzzy_channel_forgives_a_typo(repo) -> None:
    out = search(repo, "getUsrById", "--type", "fuzzy")
    top = out["results"][0]
    assert (top["path"], top["symbol"], top["match"]) == ("src/users/repository.py", "getUserById", "fuzzy")
    assert any("edit1" in w for w in top["why"]), top["why"]


def test_fuzzy_channel_completes_a_prefix(repo) -> None:
    top = search(repo, "getUserBy", "--type", "fuzzy")["results"][0]
    assert top["symbol"] == "getUserById"
    assert any("prefix" in w for w in top["why"]), top["why"]


def test_bm25_matches_identifier_pieces_and_stems(repo) -> None:
    # "parsing configs" shares no literal word with `parse_config` / `ConfigParser`: only the split,
    # stemmed terms meet.
    out = search(repo, "parsing configs", "--type", "bm25", "-n", "3")
    assert out["results"][0]["path"] == "src/config/parser.py"
    assert out["results"][0]["symbol"] == "ConfigParser"
    assert all(h["match"] == "bm25" for h in out["results"])


def test_vector_channel_answers_without_shared_words(repo) -> None:
    out = search(repo, "check whether a login has timed out", "--type", "vector", "-n", "3")
    assert out["results"][0]["path"] == "web/session.ts"
    assert all(h["match"] == "vector" for h in out["results"])


def test_hybrid_fuses_channels_and_reports_them(repo) -> None:
    out = search(repo, "how do we parse the config", "-n", "5")
    top = out["results"][0]
    assert top["path"] == "src/config/parser.py"
    assert {"bm25", "vector"} <= set(top["match"].split("+"))
    assert out["query_kind"] == "natural"
    assert out["search_type"] == "hybrid"
    assert set(out["timings_ms"]) >= {"query_embedding_ms", "retrieval_ms", "ranking_ms", "total_ms"}
    assert top["signals"]["fused"] > 0


def test_symbol_queries_are_read_as_names_and_skip_the_encoder(repo) -> None:
    out = search(repo, "ConfigParser")
    assert out["query_kind"] == "symbol"
    assert "query_embedding_ms" not in out["timings_ms"]


def test_bm25_weight_moves_the_fusion_between_channels(repo) -> None:
    query = "register a handler for a path prefix"
    bm25_top = search(repo, query, "--type", "bm25")["results"][0]
    heavy = search(repo, query, "--bm25-weight", "50")["results"][0]
    assert (heavy["path"], heavy["start_line"]) == (bm25_top["path"], bm25_top["start_line"])

    def bm25_first(weight: str) -> tuple[tuple[str, int], float]:
        out = search(repo, query, "--bm25-weight", weight, "-n", "30")
        hit = next(h for h in out["results"] if h["signals"].get("bm25_rank") == 1)
        return (hit["path"], hit["start_line"]), hit["signals"]["fused"]

    # Weight 0 switches the channel off.
    off = search(repo, query, "--bm25-weight", "0")["results"]
    assert off and all("bm25" not in h["match"] and "bm25_rank" not in h["signals"] for h in off)

    # Reciprocal rank fusion: each unit of BM25 weight adds 1 / (60 + 1) to BM25's first chunk.
    (one, fused_one), (two, fused_two) = bm25_first("1"), bm25_first("2")
    assert one == two
    assert fused_two - fused_one == pytest.approx(1 / 61, abs=2e-6)


# ------------------------------------------------------------------------------------------ ranking


def test_definition_beats_mentions(repo) -> None:
    out = search(repo, "ConfigParser", "-n", "5")
    top = out["results"][0]
    assert (top["path"], top["symbol"]) == ("src/config/parser.py", "ConfigParser")
    assert "defines ConfigParser" in top["why"]
    assert top["signals"]["definition"] > 0
    # app.py says ConfigParser four times to parser.py's one, and still ranks below the definition.
    app = next(h for h in out["results"] if h["path"] == "src/app.py")
    assert "definition" not in app["signals"]


def test_tests_are_penalised_unless_asked_for(repo) -> None:
    plain = search(repo, "ConfigParser", "-n", "10")
    test_hits = [h for h in plain["results"] if h["path"] == "tests/test_parser.py"]
    assert all("test file ×0.3" in h["why"] for h in test_hits)
    assert paths(plain).index("src/config/parser.py") < min(
        (i for i, p in enumerate(paths(plain)) if p.startswith("tests/")), default=99
    )
    asked = search(repo, "ConfigParser tests", "-n", "5")
    assert "tests/test_parser.py" in paths(asked)[:3]
    assert all("penalty" not in h["signals"] for h in asked["results"] if h["path"].startswith("tests/"))


def test_docs_are_penalised_unless_asked_for(repo) -> None:
    plain = search(repo, "how do we parse the config", "-n", "10")
    doc = next(h for h in plain["results"] if h["path"] == "docs/configuration.md")
    assert doc["signals"]["penalty"] == 0.5 and "docs file ×0.5" in doc["why"]
    asked = search(repo, "configuration documentation", "-n", "10")
    doc = next(h for h in asked["results"] if h["path"] == "docs/configuration.md")
    assert "penalty" not in doc["signals"]


def test_vendored_and_declaration_files_rank_below_the_real_ones(repo) -> None:
    router = search(repo, "Router", "-n", "5")
    assert router["results"][0]["path"] == "src/http/router.go"
    vendored = [h for h in router["results"] if h["path"].startswith("vendor/")]
    assert vendored and all("vendored file ×0.3" in h["why"] for h in vendored)
    session = search(repo, "Session", "-n", "5")
    assert paths(session)[0] == "web/session.ts"
    stub = next(h for h in session["results"] if h["path"] == "types/session.d.ts")
    assert "declaration file ×0.7" in stub["why"]


def test_at_most_three_chunks_per_file_and_no_overlaps(repo) -> None:
    out = search(repo, "handle request", "-n", "10")
    per_file: dict[str, list[tuple[int, int]]] = {}
    for h in out["results"]:
        per_file.setdefault(h["path"], []).append((h["start_line"], h["end_line"]))
    assert len(per_file["src/big/handlers.py"]) == 3  # six handlers match; three are shown
    for spans in per_file.values():
        spans.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), spans
    later = [h for h in out["results"] if h["path"] == "src/big/handlers.py"][1:]
    assert all(h["signals"]["saturation"] < 1 for h in later)


def test_file_coherence_lifts_a_file_with_several_matches(repo) -> None:
    out = search(repo, "handle request", "-n", "10")
    handlers = [h for h in out["results"] if h["path"] == "src/big/handlers.py"]
    others = [h for h in out["results"] if h["path"] != "src/big/handlers.py" and "file_coherence" in h["signals"]]
    assert handlers[0]["signals"]["file_coherence"] > max(h["signals"]["file_coherence"] for h in others)


def test_identifier_stems_match_the_path_words(repo) -> None:
    out = search(repo, "settings parsing", "-n", "5")
    top = next(h for h in out["results"] if h["path"] == "src/config/parser.py")
    assert top["signals"]["path_match"] > 0


# ------------------------------------------------------------------------------------ filters, results


def test_filters_by_language_path_and_content_type(repo) -> None:
    go = search(repo, "handler", "--lang", "go")
    assert go["results"] and {h["language"] for h in go["results"]} == {"go"}
    under = search(repo, "parse", "--path", "src/config")
    assert under["results"] and all(h["path"].startswith("src/config/") for h in under["results"])
    ts = search(repo, "session", "--path", "*.ts")
    assert ts["results"] and all(h["path"].endswith(".ts") for h in ts["results"])
    deep = search(repo, "parse", "--path", "src/**/*.py")
    assert deep["results"] and all(h["path"].startswith("src/") and h["path"].endswith(".py") for h in deep["results"])
    docs = search(repo, "parse config", "--content", "docs")
    assert paths(docs) == ["docs/configuration.md"] * len(docs["results"]) and docs["results"]
    assert docs["chunks_searched"] < search(repo, "parse config")["chunks_searched"]


def test_unknown_language_is_a_clear_error(repo) -> None:
    lgrep, root = repo
    result = lgrep("search", "x", str(root), "--lang", "cobol", check=False)
    assert result.code != 0
    assert "cobol" in result.err and "python" in result.err


def test_snippets_are_cut_to_the_budget(repo) -> None:
    out = search(repo, "summarize metric values in many steps", "-n", "3")
    hit = next(h for h in out["results"] if h["symbol"] == "summarize_metrics")
    assert hit["truncated"] is True
    assert len(hit["content"].splitlines()) <= 40
    assert hit["end_line"] - hit["start_line"] + 1 > 40  # the span still names the whole chunk


def test_results_flag_files_changed_since_indexing(tmp_path: Path, lgrep) -> None:
    root = tmp_path / "ranking"
    shutil.copytree(FIXTURES / "ranking", root)
    lgrep("index", str(root), "--json")
    target = root / "src/config/parser.py"
    target.write_text(target.read_text() + "\n# edited\n")
    out = lgrep("search", "ConfigParser", str(root), "--json").json()
    flags = {h["path"]: h["stale"] for h in out["results"]}
    assert flags["src/config/parser.py"] is True
    assert not any(stale for p, stale in flags.items() if p != "src/config/parser.py")
