"""The indexer's secret gate: redacted chunks, withheld credential files, lines kept, re-index paths.

Secrets are assembled at run time so that this file itself holds none."""

from __future__ import annotations

import base64
import random
from pathlib import Path

from lgrep_core.settings.config import load_settings
from lgrep_core.storage.store import ProjectStore
from lgrep_core.testing import FakeEmbedder
from lgrep_index.pipeline import Indexer

_rng = random.Random(8)
AWS_KEY_ID = "AK" + "IA" + "".join(_rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
GITHUB_TOKEN = "gh" + "p_" + "".join(_rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGH0123456789") for _ in range(36))
KEY_LINES = [base64.b64encode(_rng.randbytes(48)).decode() for _ in range(12)]
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END OPENSSH PRIVATE KEY-----\n"
SECRETS = [AWS_KEY_ID, GITHUB_TOKEN, *KEY_LINES]

CONFIG_PY = f'''"""Settings for the uploads service."""

REGION = "eu-west-1"
AWS_ACCESS_KEY_ID = "{AWS_KEY_ID}"


def uploads_bucket(stage: str) -> str:
    """Name of the bucket that holds user uploads for a deployment stage."""
    return f"uploads-{{stage}}-{{REGION}}"
'''


def _settings(tmp_path: Path):
    return load_settings(None, env={"LGREP_CACHE_DIR": str(tmp_path / "cache")}, user_config=tmp_path / "none").settings


def _rows(settings, root: Path) -> list[dict[str, object]]:
    store = ProjectStore(settings.cache_dir, root)
    store.open()
    try:
        return [
            r
            for b in store.iter_chunk_rows(["path", "content", "start_line", "symbol"])
            for r in (dict(zip(b, row, strict=True)) for row in zip(*b.values(), strict=True))
        ]
    finally:
        store.close()


def _manifest(settings, root: Path):
    store = ProjectStore(settings.cache_dir, root)
    store.open()
    try:
        return store.manifest_records()
    finally:
        store.close()


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "config.py").write_text(CONFIG_PY)
    (root / "notes.txt").write_text(PRIVATE_KEY)
    (root / "ci.yaml").write_text(
        f"name: build\nenv:\n  GH_TOKEN: {GITHUB_TOKEN}\n  STAGE: prod\nsteps:\n  - run: make\n"
    )
    return root


def test_secrets_never_reach_chunks_or_the_embedder(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    settings = _settings(tmp_path)
    embedder = FakeEmbedder()
    summary = Indexer(settings, root, embedder).run()

    assert summary.skipped["secret"] == 1  # notes.txt is a key and nothing else
    assert summary.files_indexed == 2
    rows = _rows(settings, root)
    assert {r["path"] for r in rows} == {"config.py", "ci.yaml"}
    stored = "\n".join(str(r["content"]) for r in rows)
    embedded = "\n".join(embedder.embedded_texts)
    for secret in SECRETS:
        assert secret not in stored
        assert secret not in embedded
    assert "[REDACTED:aws-access-key]" in stored and "[REDACTED:github-token]" in stored
    # Lines did not move: the function still starts where it is in the file.
    (bucket,) = [r for r in rows if r["symbol"] == "uploads_bucket"]
    assert bucket["start_line"] == CONFIG_PY.splitlines().index("def uploads_bucket(stage: str) -> str:") + 1

    # The manifest keeps the hash of the file as it is on disk, so an unchanged file stays unchanged.
    again = Indexer(settings, root, embedder).run()
    assert (again.files_indexed, again.files_unchanged) == (0, 3)
    assert _manifest(settings, root)["notes.txt"].chunks == 0


def test_a_file_that_becomes_a_credential_loses_its_old_chunks(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "deploy_key").write_text("placeholder until ops hands over the real key\n")
    (root / "app.py").write_text("def main():\n    return 0\n")
    settings = _settings(tmp_path)
    Indexer(settings, root, FakeEmbedder()).run()
    assert {r["path"] for r in _rows(settings, root)} == {"deploy_key", "app.py"}

    (root / "deploy_key").write_text(PRIVATE_KEY)
    summary = Indexer(settings, root, FakeEmbedder()).run()
    assert summary.skipped["secret"] == 1
    assert {r["path"] for r in _rows(settings, root)} == {"app.py"}

    # Back to code with a key pasted in: indexed again, redacted.
    code = "".join(f"def rotate_{n}(keyring):\n    return keyring.rotate(slot={n})\n\n" for n in range(40))
    (root / "deploy_key").write_text(f"# rotate monthly\nKEY = '''\n{PRIVATE_KEY}'''\n{code}")
    summary = Indexer(settings, root, FakeEmbedder()).run()
    assert "secret" not in summary.skipped
    contents = [str(r["content"]) for r in _rows(settings, root) if r["path"] == "deploy_key"]
    assert contents and all(line not in c for c in contents for line in KEY_LINES)


def test_no_secret_skip_is_reported_when_there_is_none(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 1\n")
    summary = Indexer(_settings(tmp_path), root, FakeEmbedder()).run()
    assert "secret" not in summary.skipped
