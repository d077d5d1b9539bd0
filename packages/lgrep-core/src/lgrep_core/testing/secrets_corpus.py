"""The secrets corpus (tests/fixtures/secrets): samples of how secrets are written, per form, with
their secrets filled in at run time so that the repository itself holds none.

`load(folder)` reads `positives/*.txt` and `negatives/*.txt`; each `«kind»` marker of a positive
sample becomes a freshly generated secret of that kind (seeded: the same corpus every run), and the
sample carries the list of secrets it holds. See tests/fixtures/secrets/README.md for the format and
for what the negatives decide is not a secret.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TOKENS", "FormsRepo", "Sample", "fill", "load", "write_forms_repo"]

_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_PUNCT = "!@#%^*-_+=?~."
_PUNCT_WIDE = _PUNCT + "&,;:|/"
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
_LINE_BREAK = "⏎"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _password(rng: random.Random, n: int, punct: str) -> str:
    """A letter first (YAML reads `!`, `&`, `*` first as tags and anchors), then at least one upper,
    lower, digit and punctuation mark, in random order."""
    body = [rng.choice(string.ascii_uppercase), rng.choice(string.digits), rng.choice(punct), rng.choice(punct)]
    body += [rng.choice(_ALNUM + punct) for _ in range(n - 1 - len(body))]
    rng.shuffle(body)
    return rng.choice(string.ascii_lowercase) + "".join(body)


TOKENS: dict[str, Callable[[random.Random], str]] = {
    "hvs": lambda r: "hvs." + "CAES" + _pick(r, _ALNUM + "_-", 86),
    "hvb": lambda r: "hvb." + "AAAAAQ" + _pick(r, _ALNUM + "_-", 120),
    "hvr": lambda r: "hvr." + _pick(r, _ALNUM, 24),
    "dop": lambda r: "dop_v1_" + _pick(r, _HEX, 64),
    "shpat": lambda r: "shpat_" + _pick(r, _HEX, 32),
    "glsa": lambda r: "glsa_" + _pick(r, _ALNUM, 32) + "_" + _pick(r, _HEX, 8),
    "linapi": lambda r: "lin_api_" + _pick(r, _ALNUM, 40),
    "pmak": lambda r: "PMAK-" + _pick(r, _HEX, 24) + "-" + _pick(r, _HEX, 34),
    "age": lambda r: "AGE-SECRET-KEY-1" + _pick(r, _BECH32, 58),
    "doppler": lambda r: "dp.st." + _pick(r, string.ascii_lowercase, 3) + "." + _pick(r, _ALNUM, 40),
    "dapi": lambda r: "dapi" + _pick(r, _HEX, 32),
    "telegram": lambda r: _pick(r, string.digits, 10) + ":AA" + _pick(r, _ALNUM + "_-", 33),
    "sq0atp": lambda r: "sq0atp-" + _pick(r, _ALNUM + "_-", 22),
    "sq0csp": lambda r: "sq0csp-" + _pick(r, _ALNUM + "_-", 43),
    "mailgun": lambda r: "key-" + _pick(r, _HEX, 32),
    "xapp": lambda r: (
        "xapp-1-A"
        + _pick(r, "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ", 10)
        + "-"
        + _pick(r, string.digits, 13)
        + "-"
        + _pick(r, _HEX, 64)
    ),
    "ghp": lambda r: "gh" + "p_" + _pick(r, _ALNUM, 36),
    "glpat": lambda r: "gl" + "pat-" + _pick(r, _ALNUM + "_-", 20),
    "awsid": lambda r: "AK" + "IA" + _pick(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "jwt": lambda r: (
        "ey" + "J" + _pick(r, _ALNUM, 20) + ".eyJ" + _pick(r, _ALNUM, 40) + "." + _pick(r, _ALNUM + "_-", 43)
    ),
}


def _generate(kind: str, rng: random.Random) -> str:
    name, _, size = kind.partition(":")
    if name == "pw":
        return _password(rng, 14, _PUNCT)
    if name == "pwp":
        return _password(rng, 16, _PUNCT_WIDE)
    if name == "b62":
        value = _pick(rng, _ALNUM, int(size))
        return (
            value[:-3]
            + rng.choice(string.ascii_uppercase)
            + rng.choice(string.digits)
            + rng.choice(string.ascii_lowercase)
        )
    if name == "hex":
        return _pick(rng, _HEX, int(size))
    if name == "word":
        return rng.choice(("deploy", "jenkins", "admin2", "svc_build", "release"))
    return TOKENS[name](rng)


@dataclass(frozen=True, slots=True)
class Sample:
    form: str  # the file's name without .txt
    text: str
    secrets: tuple[str, ...]  # empty for negatives
    line: int  # where it is in its file, for messages


def fill(template: str, rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """The template with each «kind» marker replaced by a new secret, and those secrets (user names
    from «word» are not secrets and are not listed)."""
    out: list[str] = []
    secrets: list[str] = []
    rest = template.replace(_LINE_BREAK, "\n")
    while "«" in rest:
        head, _, tail = rest.partition("«")
        kind, _, rest = tail.partition("»")
        value = _generate(kind, rng)
        out += [head, value]
        if kind != "word":
            secrets.append(value)
    out.append(rest)
    return "".join(out), tuple(secrets)


def load(folder: Path, *, seed: int = 22) -> tuple[list[Sample], list[Sample]]:
    """(positives, negatives) of the corpus in `folder`."""
    rng = random.Random(seed)
    result: tuple[list[Sample], list[Sample]] = ([], [])
    for bucket, samples in zip(("positives", "negatives"), result, strict=True):
        for path in sorted((folder / bucket).glob("*.txt")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if not line.strip() or line.startswith("# "):
                    continue
                text, secrets = fill(line, rng) if bucket == "positives" else (line.replace(_LINE_BREAK, "\n"), ())
                samples.append(Sample(path.stem, text, secrets, number))
    return result


@dataclass(frozen=True, slots=True)
class FormsRepo:
    """What `write_forms_repo` planted: `secrets` (none may come out of lgrep), `redacted` (files that
    are indexed with a marker where the secret was), `named` (a file whose name is a token: withheld)
    and `random_dir` (a folder named like a session id: its file is indexed, the name is redacted
    wherever a path is sent or logged)."""

    secrets: tuple[str, ...]
    redacted: tuple[str, ...]
    named: str
    random_dir: str


def write_forms_repo(root: Path, *, seed: int = 7) -> FormsRepo:
    """A small project with a secret in each form of issue 22's corpus, among ordinary code around
    it (so files are redacted, not withheld)."""
    rng = random.Random(seed)
    secrets: list[str] = []

    def put(rel: str, template: str) -> str:
        text, found = fill(template, rng)
        secrets.extend(found)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return rel

    redacted = [
        put("config/app.ini", "[database]⏎host = db.internal⏎port = 5432⏎password = «pwp»⏎pool_size = 8⏎"),
        put(
            "config/application.yaml",
            "datasource:⏎  url: jdbc:postgresql://db.internal/ledger⏎  username: ledger⏎  password: «pwp»⏎  pool: 8⏎",
        ),
        put(
            "config/ledger.properties",
            "spring.application.name=ledger⏎spring.datasource.url=jdbc:postgresql://db/ledger⏎"
            "spring.datasource.password=«pwp»⏎",
        ),
        put("deploy/vars.sh", "#!/bin/sh⏎export LEDGER_REGION=eu-west-1⏎export DB_PASSWORD=«pwp»⏎export WORKERS=4⏎"),
        put("Makefile", "DB_PASSWORD ?= «pw»⏎⏎migrate:⏎\t./bin/migrate --database ledger --workers 4⏎"),
        put(
            "web.config",
            '<configuration>⏎  <appSettings>⏎    <add key="LedgerApiKey" value="«b62:32»" />⏎'
            '    <add key="Region" value="eu-west-1" />⏎  </appSettings>⏎</configuration>⏎',
        ),
        put(
            "ops/restore_ledger.sh",
            "#!/bin/sh⏎# restore the ledger database from last night's dump⏎"
            "mysql -u root -p«pw» ledger < /backups/ledger.sql⏎"
            "curl -u admin:«pw» -X POST https://ci.example.org/job/ledger-reindex/build⏎",
        ),
        put(
            "docs/ledger_vault.md",
            "# Ledger secrets⏎⏎The ledger reads its database password from Vault.⏎"
            "For a manual restore, log in with `vault login «hvs»` and run ops/restore_ledger.sh.⏎",
        ),
    ]
    token = TOKENS["ghp"](rng)
    named = put(f"tokens/{token}.txt", "ledger deploy bot⏎")
    secrets.append(token)
    session = _generate("b62:32", rng)
    put(f"sessions/{session}/resume_ledger.py", "def resume_ledger_session(store):⏎    return store.load()⏎")
    secrets.append(session)
    return FormsRepo(tuple(secrets), tuple(redacted), named, session)
