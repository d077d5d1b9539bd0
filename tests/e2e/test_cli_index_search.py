"""Index and search through the `lgrep` command, with the real embedded model. The first tests run
`lgrep` processes as a user does; the rest check what the commands answer, and run them in pytest's
process (`lgrep_here`: the same commands, without a process start per call)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.model


def _hits(result: object) -> list[dict[str, object]]:
    assert isinstance(result, dict)
    return result["results"]  # type: ignore[no-any-return]


def test_index_then_search_json(lgrep, mini_repo: Path) -> None:
    summary = lgrep("index", str(mini_repo), "--json").json()
    assert summary["files_seen"] == 7  # six sources and the .gitignore
    assert summary["files_indexed"] == 7
    assert summary["vectors_pending"] == 0
    assert summary["chunks_total"] >= 10

    out = lgrep("search", "where do we verify JWT signatures", str(mini_repo), "--json", "-n", "5").json()
    hits = _hits(out)
    assert hits, out
    top = hits[0]
    assert set(top) >= {"path", "start_line", "end_line", "symbol", "kind", "score", "content", "match"}
    assert top["path"] == "auth/tokens.py"
    assert any(h["path"] == "auth/tokens.py" and "def verify_jwt" in str(h["content"]) for h in hits)
    assert not str(top["path"]).startswith("/")
    assert set(out["timings_ms"]) >= {"total_ms", "retrieval_ms", "query_embedding_ms", "ranking_ms"}
    assert out["chunks_searched"] == summary["chunks_total"]
    assert out["vectors_pending"] == 0


def test_spans_point_at_the_code(lgrep_here, mini_repo: Path) -> None:
    lgrep_here("index", str(mini_repo), "--json")
    hits = _hits(lgrep_here("search", "allowRequest", str(mini_repo), "--json", "--type", "bm25").json())
    hit = hits[0]
    assert hit["path"] == "web/rateLimiter.ts"
    lines = (mini_repo / "web/rateLimiter.ts").read_text().splitlines()
    span = "\n".join(lines[int(hit["start_line"]) - 1 : int(hit["end_line"])])
    assert "allowRequest(clientId: string" in span
    assert span == hit["content"]
    assert hit["symbol"] in {"RateLimiter", "allowRequest"}


def test_vector_and_bm25_types(lgrep_here, mini_repo: Path) -> None:
    lgrep_here("index", str(mini_repo), "--json")
    vec = _hits(
        lgrep_here("search", "evict the least recently used entry", str(mini_repo), "--json", "--type", "vector").json()
    )
    assert vec[0]["path"] == "cmd/cache.rs"
    assert all(h["match"] == "vector" for h in vec)
    bm = _hits(lgrep_here("search", "LoadConfig", str(mini_repo), "--json", "--type", "bm25").json())
    assert bm[0]["path"] == "cmd/server.go"
    assert all(h["match"] == "bm25" for h in bm)


def test_first_search_builds_the_index(lgrep, mini_repo: Path) -> None:
    result = lgrep("search", "database migrations on startup", str(mini_repo), "--json")
    assert "no index yet" in result.err
    assert _hits(result.json())[0]["path"] == "docs/deploy.md"


def test_human_output_and_default_path(lgrep, mini_repo: Path) -> None:
    lgrep("index", cwd=mini_repo)
    result = lgrep("search", "token bucket rate limit", cwd=mini_repo)
    assert "web/rateLimiter.ts:" in result.out


def test_incremental_reindexes_only_changes(lgrep_here, mini_repo: Path) -> None:
    lgrep_here("index", str(mini_repo), "--json")
    again = lgrep_here("index", str(mini_repo), "--json").json()
    assert (again["files_indexed"], again["vectors_embedded"], again["chunks_written"]) == (0, 0, 0)

    go = mini_repo / "cmd/server.go"
    go.write_text(
        go.read_text() + "\n// ShutdownGracefully drains open connections before exit.\nfunc ShutdownGracefully() {}\n"
    )
    (mini_repo / "docs/deploy.md").unlink()
    changed = lgrep_here("index", str(mini_repo), "--json").json()
    assert changed["files_indexed"] == 1
    assert changed["files_deleted"] == 1
    assert 0 < changed["vectors_embedded"] <= 3  # only the new or changed chunks of server.go

    hits = _hits(lgrep_here("search", "ShutdownGracefully", str(mini_repo), "--json", "--type", "bm25").json())
    assert hits[0]["path"] == "cmd/server.go"
    hits = _hits(lgrep_here("search", "database migrations rollback", str(mini_repo), "--json", "-n", "20").json())
    assert all(h["path"] != "docs/deploy.md" for h in hits)


def test_renamed_and_copied_files_reuse_vectors(lgrep_here, mini_repo: Path) -> None:
    lgrep_here("index", str(mini_repo), "--json")
    (mini_repo / "cmd/cache.rs").rename(mini_repo / "cmd/lru.rs")
    (mini_repo / "web/copy").mkdir()
    (mini_repo / "web/copy/limiter.ts").write_text((mini_repo / "web/rateLimiter.ts").read_text())
    result = lgrep_here("index", str(mini_repo), "--json").json()
    assert result["files_indexed"] == 2
    assert result["files_deleted"] == 1
    assert result["vectors_embedded"] == 0
    assert result["vectors_pending"] == 0
    paths = {h["path"] for h in _hits(lgrep_here("search", "LruCache", str(mini_repo), "--json").json())}
    assert "cmd/lru.rs" in paths
    assert "cmd/cache.rs" not in paths


def test_status_json(lgrep_here, mini_repo: Path) -> None:
    lgrep_here("index", str(mini_repo))
    status = lgrep_here("status", str(mini_repo), "--json").json()
    assert status["files"] == 7
    assert status["vectors_pending"] == 0
    assert status["provider"] == "local"
    assert status["model"].startswith("all-MiniLM-L6-v2")
    assert status["dimension"] == 384
    assert status["languages"]["python"] == 1
    assert status["last_indexed"]
    assert status["changes"]["total"] == 0
    (mini_repo / "auth/tokens.py").write_text("# emptied\n")
    (mini_repo / "new.py").write_text("x = 1\n")
    changed = lgrep_here("status", str(mini_repo), "--json").json()["changes"]
    assert changed == {"added": 1, "modified": 1, "deleted": 0, "total": 2}


def test_stale_results_are_flagged(lgrep_here, mini_repo: Path) -> None:
    lgrep_here("index", str(mini_repo))
    path = mini_repo / "cmd/cache.rs"
    path.write_text(path.read_text() + "\n// edited\n")
    hits = _hits(lgrep_here("search", "LruCache", str(mini_repo), "--json", "--type", "bm25").json())
    assert any(h["path"] == "cmd/cache.rs" and h["stale"] for h in hits)
    assert all(not h["stale"] for h in hits if h["path"] != "cmd/cache.rs")


def test_clean_removes_the_index(lgrep_here, mini_repo: Path) -> None:
    lgrep_here("index", str(mini_repo))
    index_dir = Path(lgrep_here("status", str(mini_repo), "--json").json()["index_dir"])
    assert index_dir.is_dir()
    lgrep_here("clean", str(mini_repo))
    assert not index_dir.exists()
    missing = lgrep_here("status", str(mini_repo), check=False)
    assert missing.code == 1
    assert "lgrep index" in missing.err


def test_a_chunking_change_is_answered_with_a_note_until_reindexed(lgrep_here, mini_repo: Path) -> None:
    """The index's vectors still match the query's model, so it answers; the note says how to bring
    its chunks up to date, which an incremental run does, keeping the vectors (ADR 0017)."""
    lgrep_here("index", str(mini_repo))
    (mini_repo / ".lgrep.yaml").write_text("chunking:\n  max_tokens: 200\n")
    served = lgrep_here("search", "verify_jwt", str(mini_repo), "--json")
    assert _hits(served.json())
    assert any("chunking" in n and f"lgrep index {mini_repo.resolve()}" in n for n in served.json()["notes"])
    again = lgrep_here("index", str(mini_repo), "--json").json()
    assert again["vectors_embedded"] < again["chunks_total"]  # re-chunked; vectors of unchanged text kept
    fresh = lgrep_here("search", "verify_jwt", str(mini_repo), "--json").json()
    assert _hits(fresh) and fresh["notes"] == []


def test_config_show_names_sources(lgrep_here, mini_repo: Path) -> None:
    (mini_repo / ".lgrep.yaml").write_text("chunking:\n  overlap_tokens: 16\n")
    lgrep_here.env["LGREP_CHUNKING__MAX_TOKENS"] = "300"
    shown = lgrep_here("config", "show", str(mini_repo), "--json").json()
    assert shown["chunking.max_tokens"] == {"value": 300, "source": "env LGREP_CHUNKING__MAX_TOKENS"}
    assert shown["chunking.overlap_tokens"]["source"].endswith(".lgrep.yaml")
    assert shown["embedding.provider"] == {"value": "local", "source": "default"}
    text = lgrep_here("config", "show", str(mini_repo)).out
    assert "chunking.max_tokens" in text and "# env LGREP_CHUNKING__MAX_TOKENS" in text


def test_bad_config_value_is_reported(lgrep_here, mini_repo: Path) -> None:
    config = Path(lgrep_here.env["HOME"]) / ".config" / "lgrep" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("embedding:\n  dimensions: many\n")
    result = lgrep_here("index", str(mini_repo), check=False)
    assert result.code == 1
    assert "embedding.dimensions" in result.err and str(config) in result.err


def test_missing_path_is_a_clear_error(lgrep, tmp_path: Path) -> None:
    result = lgrep("index", str(tmp_path / "nope"), check=False)
    assert result.code == 1
    assert "is not a directory" in result.err
    assert [p.name for p in lgrep.cache.iterdir()] == ["models"]
