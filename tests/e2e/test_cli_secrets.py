"""Secrets in an indexed repository never come back out of `lgrep search`, through any channel or
output format, while the code around them is still found (issue 8, class 3).

The secrets are assembled at run time, so this file holds none a scanner would flag. The first test
runs real `lgrep` processes; the others, with many commands each, run them in pytest's process
(`lgrep_here`): the same commands and output, without a process start per call."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest
from lgrep_core.testing.secrets_corpus import FormsRepo, write_forms_repo

pytestmark = pytest.mark.model

_rng = random.Random(3)
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
AWS_KEY_ID = "AK" + "IA" + "".join(_rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
GITHUB_TOKEN = "gh" + "p_" + "".join(_rng.choice(_ALNUM) for _ in range(36))
API_SECRET = "".join(_rng.choice(_ALNUM) for _ in range(24)) + "7Qz"
KEY_LINES = [base64.b64encode(_rng.randbytes(48)).decode() for _ in range(20)]
SECRETS = [AWS_KEY_ID, GITHUB_TOKEN, API_SECRET, *KEY_LINES]

SEARCH_TYPES = ["hybrid", "bm25", "vector", "fuzzy"]


@pytest.fixture
def leaky_repo(tmp_path: Path) -> Path:
    root = tmp_path / "leaky"
    root.mkdir()
    (root / "config.py").write_text(
        '"""Settings for the uploads service."""\n\n'
        'REGION = "eu-west-1"\n'
        f'AWS_ACCESS_KEY_ID = "{AWS_KEY_ID}"  # kept here until the vault is set up\n\n\n'
        "def uploads_bucket(stage: str) -> str:\n"
        '    """Name of the S3 bucket that holds user uploads for a deployment stage."""\n'
        '    return f"uploads-{stage}-{REGION}"\n'
    )
    (root / "deploy.yaml").write_text(
        "name: publish release artifacts\n"
        "on: [push]\n"
        "env:\n"
        f"  GITHUB_TOKEN: {GITHUB_TOKEN}\n"
        "  RELEASE_CHANNEL: stable\n"
        "jobs:\n"
        "  publish:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: make release\n"
    )
    (root / "notes.txt").write_text(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    (root / "client.js").write_text(
        'const API_BASE = "https://api.example.org/v2";\n'
        f'const API_SECRET = "{API_SECRET}";\n\n'
        "export async function fetchInvoices(customerId) {\n"
        "  const response = await fetch(`${API_BASE}/customers/${customerId}/invoices`, {\n"
        "    headers: { 'X-Api-Secret': API_SECRET },\n"
        "  });\n"
        "  return response.json();\n"
        "}\n"
    )
    return root


def _assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{where} printed a secret"


def test_index_reports_the_key_file_skipped(lgrep, leaky_repo: Path) -> None:
    summary = lgrep("index", str(leaky_repo), "--json").json()
    assert summary["files_skipped"].get("secret") == 1
    assert summary["files_indexed"] == 3
    human = lgrep("index", str(leaky_repo), "--force")
    assert "1 secret" in human.err
    _assert_clean(human.out + human.err, "lgrep index")
    status = lgrep("status", str(leaky_repo), "--json")
    _assert_clean(status.out + status.err, "lgrep status")


# (query, a file it must find with --type hybrid/bm25): one per secret-holding file, and one that
# asks for the key itself.
QUERIES = [
    ("aws access key id of the uploads_bucket", "config.py"),
    ("API_SECRET fetchInvoices GITHUB_TOKEN release", "client.js"),
    ("BEGIN OPENSSH PRIVATE KEY", None),
]


def test_search_never_prints_a_secret(lgrep_here, leaky_repo: Path) -> None:
    lgrep_here("index", str(leaky_repo), "--json")
    for search_type in SEARCH_TYPES:
        _search_every_way(lgrep_here, leaky_repo, search_type)


def _search_every_way(lgrep, leaky_repo: Path, search_type: str) -> None:
    contents: dict[str, str] = {}
    for n, (query, expected) in enumerate(QUERIES):
        args = ("search", query, str(leaky_repo), "--type", search_type, "-n", "20")
        if n:  # the human format for two of them (each call costs a process start)
            human = lgrep(*args)
            _assert_clean(human.out + human.err, f"lgrep search {query!r} --type {search_type}")
        out = lgrep(*args, "--json", "--explain")
        _assert_clean(out.out + out.err, f"lgrep search {query!r} --type {search_type} --json")
        hits = out.json()["results"]
        assert all(h["path"] != "notes.txt" for h in hits)
        if expected is not None and search_type in {"hybrid", "bm25"}:
            assert expected in {h["path"] for h in hits}, (query, search_type, hits)
        for h in hits:
            contents[h["path"]] = contents.get(h["path"], "") + h["content"]

    # Searching for the secrets themselves finds nothing of them (the query is echoed; results are not).
    out = lgrep("search", " ".join(SECRETS[:4]), str(leaky_repo), "--json", "--type", search_type).json()
    _assert_clean(json.dumps(out["results"]), f"results for the secrets, --type {search_type}")

    # The code around each secret is still there, with a marker where the secret was.
    if search_type == "bm25":
        assert 'const API_SECRET = "[REDACTED:secret-assignment]";' in contents["client.js"]
        assert 'AWS_ACCESS_KEY_ID = "[REDACTED:aws-access-key]"' in contents["config.py"]
        assert "GITHUB_TOKEN: [REDACTED:github-token]" in contents["deploy.yaml"]


def test_the_code_around_a_secret_is_found_where_it_is(lgrep_here, leaky_repo: Path) -> None:
    lgrep_here("index", str(leaky_repo), "--json")
    hits = lgrep_here("search", "uploads_bucket", str(leaky_repo), "--json", "--type", "bm25").json()["results"]
    (hit,) = [h for h in hits if h["symbol"] == "uploads_bucket"]
    lines = (leaky_repo / "config.py").read_text().splitlines()
    assert lines[hit["start_line"] - 1].startswith("def uploads_bucket")  # line numbers did not move

    vec = lgrep_here("search", "fetch the invoices of a customer", str(leaky_repo), "--json", "--type", "vector").json()
    assert vec["results"] and vec["results"][0]["path"] == "client.js"
    fuzzy = lgrep_here("search", "fetchInvoice", str(leaky_repo), "--json", "--type", "fuzzy").json()
    assert fuzzy["results"][0]["path"] == "client.js"


def test_an_index_from_before_the_scanner_must_be_rebuilt(lgrep_here, leaky_repo: Path) -> None:
    """Indexes of chunker version 1 may hold secrets verbatim: search never serves one as it is."""
    lgrep_here("index", str(leaky_repo), "--json")
    metas = list(lgrep_here.cache.rglob("meta.json"))
    assert metas
    for meta_path in metas:
        meta = json.loads(meta_path.read_text())
        meta["identity"]["chunker_version"] = "1"
        meta_path.write_text(json.dumps(meta))
    refused = lgrep_here("search", "uploads_bucket", str(leaky_repo), "--json", check=False)
    assert "Traceback" not in refused.err
    if refused.code == 0:  # rebuilt on the way (an outdated index is derived data)
        assert refused.json()["results"]
    else:
        assert refused.code == 1 and "lgrep index" in refused.err, refused.err
    lgrep_here("index", str(leaky_repo), "--force", "--json")
    hits = lgrep_here("search", "uploads_bucket", str(leaky_repo), "--json").json()["results"]
    assert hits and hits[0]["path"] == "config.py"


# ------------------------------------------------- the forms of issue 22, through the real command


@pytest.fixture
def forms_repo(tmp_path: Path) -> tuple[Path, FormsRepo]:
    root = tmp_path / "ledger"
    root.mkdir()
    return root, write_forms_repo(root)


def test_secrets_in_config_markup_shell_and_names_never_come_out(
    lgrep_here, forms_repo: tuple[Path, FormsRepo]
) -> None:
    """Unquoted config values with punctuation (INI, YAML, .properties, shell exports), a Makefile
    `?=`, an XML attribute, mysql/curl command lines, a Vault token and a token as a file name: the
    code and config around each are found, the secret is a marker, the token-named file is withheld."""
    root, planted = forms_repo

    def clean(text: str, where: str) -> None:
        leaked = [s for s in planted.secrets if s in text and s != planted.random_dir]
        assert not leaked, f"{where} printed {leaked}"

    index = lgrep_here("index", str(root), "--json")
    clean(index.out + index.err, "lgrep index")
    assert index.json()["files_skipped"].get("secret") == 1  # tokens/<token>.txt

    found = lgrep_here(
        "search", "ledger database password region restore", str(root), "--json", "--type", "bm25", "-n", "50"
    )
    clean(found.out + found.err, "lgrep search")
    hits = found.json()["results"]
    paths = {h["path"] for h in hits}
    assert planted.named not in paths
    for rel in planted.redacted:
        assert rel in paths, (rel, sorted(paths))
        assert "[REDACTED:" in "".join(h["content"] for h in hits if h["path"] == rel), rel

        shown = lgrep_here("file", str(root / rel), "--json")
        clean(shown.out + shown.err, f"lgrep file {rel}")
        assert "[REDACTED:" in shown.json()["content"]
        human = lgrep_here("file", str(root / rel))
        clean(human.out + human.err, f"lgrep file {rel} (text)")

    # The token-named file is not in the index at all: no search shows its name, and asking for it
    # by name (the one place the name is the user's own argument, echoed back) is a clear refusal.
    withheld = lgrep_here("file", str(root / planted.named), "--json", check=False)
    assert withheld.code != 0 and "Traceback" not in withheld.err and "not in the index" in withheld.err
    everything = lgrep_here("search", "ledger deploy bot", str(root), "--json", "-n", "50")
    clean(everything.out + everything.err, "lgrep search for the withheld file")
