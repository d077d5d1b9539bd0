"""Find secrets in text and redact them: the gate every byte of repository content passes before it
is stored in an index, sent to an embedding provider, or handed to an agent.

`scan(text)` returns the findings (kind, character offsets, 1-based line span); `redact(text)`
replaces each secret's characters with a marker such as ``[REDACTED:aws-access-key]`` while keeping
every line break, so the line numbers of the text do not change (a PEM block keeps its BEGIN and
END lines; its body lines become the marker and empty lines); `sanitize(text)` does both and also
decides whether the text is *essentially a credential* (secrets cover at least `WITHHOLD_SHARE` of
its non-whitespace characters, like a private key saved as `deploy_key` or a token alone in
`server.txt`), in which case it should be withheld whole rather than redacted.

What is detected:

- private-key blocks (PEM, OpenSSH, PGP; multi-line, JSON-escaped, or cut at either end),
- token formats with a recognisable prefix: AWS access key ids, GitHub, GitLab, Slack (tokens and
  webhooks), Stripe live keys, Google API keys, OpenAI, Anthropic, Hugging Face, npm, PyPI,
  SendGrid, Twilio API keys, JWTs, `Authorization: Bearer/Basic` credentials,
- AWS secret access keys assigned to AWS-named keys, passwords in URLs (`scheme://user:pw@host`),
- any high-entropy value assigned to a name like secret/password/token/api_key/access_key/
  private_key/client_secret/auth, in code, YAML, JSON, INI and .env syntax, quoted or not.
  Placeholders (`xxx`, `changeme`, `<your-token>`, `${VAR}`, `os.environ[...]`, `process.env.X`,
  plain words and identifiers, short values) are not secrets.

Every pattern runs on RE2 (google-re2), whose matching time is linear in the input, because the
text comes from repositories nobody has read (ADR 0005), and a text with more than
`MAX_CANDIDATES` secret-shaped matches is withheld whole instead of checked one by one. The module
imports nothing heavy, so the embedding providers and the MCP server can use it as is.
"""

from __future__ import annotations

import functools
import math
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import re2

__all__ = [
    "MAX_CANDIDATES",
    "REDACTED_PREFIX",
    "UNCHECKED",
    "WITHHOLD_SHARE",
    "Finding",
    "Sanitized",
    "contains_secret",
    "path_has_secret",
    "redact",
    "redact_path",
    "sanitize",
    "scan",
    "secret_share",
]

REDACTED_PREFIX = "[REDACTED:"
"""Every marker starts with this; the kind and "]" follow."""

WITHHOLD_SHARE = 0.5
"""A text whose secrets cover at least this share of its non-whitespace characters is a credential
file, not code with a secret in it: what would be left after redaction is a label or two."""

MIN_SECRET_CHARS = 16
"""Shortest value taken as a token or key when only its name says it is secret (random keys and
tokens are 20 characters or more; shorter values are ids, flags and words)."""

MIN_PASSWORD_CHARS = 8
"""Passwords are chosen by people and shorter; below 8 characters they are examples and defaults."""

MIN_ENTROPY_BITS = 3.0
"""Shannon entropy (bits per character) a named value needs to count as random. Random base62 of
16 characters averages ~3.7 and hex of 16 ~3.4; words and identifiers of that length are mostly
lower, and the identifier and placeholder rules catch those that are not."""

MIN_PASSWORD_ENTROPY_BITS = 2.5
"""Passwords mix a few words and digits; this only rules out repetitions like `aaaaaaaa1`."""

MAX_CANDIDATES = 4096
"""Pattern matches examined per text (each costs some microseconds of Python). The busiest of 3,500
site-packages files has 735; a text with more is a flood of secret-shaped strings, and it is reported
as one `UNCHECKED` finding over all of it, so it is withheld whole, in bounded time."""

UNCHECKED = "unchecked"
"""The kind of the finding that covers a text with more than `MAX_CANDIDATES` candidates."""

ENTROPY_SAMPLE_CHARS = 256
"""Entropy is taken over at most this many characters of a value: enough to tell, and bounded."""

_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")  # str.splitlines() breaks on all of these


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret: `text[start:end]` is what `redact` replaces; lines are 1-based and inclusive."""

    kind: str
    start: int
    end: int
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Sanitized:
    """What `sanitize` decided. `text` is the redacted text, or None when the whole text is withheld."""

    text: str | None
    findings: tuple[Finding, ...]
    share: float

    @property
    def withheld(self) -> bool:
        return self.text is None


def scan(text: str) -> list[Finding]:
    """The secrets in `text`, in order, overlapping ones merged. Never raises on odd input."""
    if not text:
        return []
    data = text.encode("utf-8", "surrogatepass")
    spans: list[tuple[int, int, str, int]] = []  # byte start, byte end, kind, priority
    candidates = 0
    for rule in _RULES:
        if rule.needle is not None and not any(n in data for n in rule.needle):
            continue
        for m in rule.regex.finditer(data):
            candidates += 1
            if candidates > MAX_CANDIDATES:
                return [Finding(UNCHECKED, 0, len(text), 1, 1 + _count_breaks(text, 0, len(text)))]
            for kind, start, end in rule.accept(m, data):
                if end > start:
                    spans.append((start, end, kind, rule.priority))
    if not spans:
        return []
    merged = _merge(spans)
    return _to_findings(text, data, merged)


def contains_secret(text: str) -> bool:
    return bool(scan(text))


def redact(text: str, findings: Sequence[Finding] | None = None) -> str:
    """`text` with every secret replaced by ``[REDACTED:<kind>]``; line breaks are kept, so the text
    has the same lines as before (findings default to `scan(text)`)."""
    found = scan(text) if findings is None else sorted(findings, key=lambda f: f.start)
    if not found:
        return text
    out: list[str] = []
    pos = 0
    for f in found:
        if f.start < pos:  # overlapping findings given by a caller: the earlier one covered it
            if f.end <= pos:
                continue
            start = pos
        else:
            start = f.start
        out.append(text[pos:start])
        out.append(_replacement(text[start : f.end], f.kind))
        pos = f.end
    out.append(text[pos:])
    return "".join(out)


def redact_path(path: str) -> str:
    """`path` with every token in it replaced by a marker, for the places a path is shown to
    someone other than the user at the terminal: the embedding text (sent to a cloud provider), the
    egress log and the logs. A token is what `scan` finds (a file named `ghp_...`, `hvs....`), or a
    run of 20 or more letters and digits that looks random (`_random_name`): a session id, an
    upload's key, a content hash. Names, words, versions, UUIDs and short hashes stay as they are.

    A path with a finding of `scan` in it is withheld from the index altogether by the walker
    (`path_has_secret`); this is the gate for the rest."""
    if not path:
        return path
    redacted = redact(path)
    if len(redacted) < _MIN_RANDOM_NAME:
        return redacted
    out: list[str] = []
    pos = 0
    for start, end in _name_runs(redacted):
        if _random_name(redacted[start:end]):
            out += [redacted[pos:start], f"{REDACTED_PREFIX}random-name]"]
            pos = end
    if not out:
        return redacted
    out.append(redacted[pos:])
    return "".join(out)


def _name_runs(path: str) -> Iterator[tuple[int, int]]:
    """Spans of the runs of at least `_MIN_RANDOM_NAME` ASCII letters and digits (a plain loop: a
    path may hold lone surrogates, which RE2's UTF-8 cannot take)."""
    start = -1
    for i, ch in enumerate(path + "/"):
        if ch in _ALNUM_CHARS:
            if start < 0:
                start = i
        elif start >= 0:
            if i - start >= _MIN_RANDOM_NAME:
                yield start, i
            start = -1


def path_has_secret(path: str) -> bool:
    """A path with a token of a known format in it (`keys/ghp_....txt`): its file is a credential
    store by its name alone, and the name itself must not reach an index or a search result."""
    return bool(scan(path))


_MIN_RANDOM_NAME = 20
"""Shortest run of letters and digits in a path taken as a token: random ids and keys are 20 or
more; shorter runs are words, short hashes (`main.3f2a9b8c.js`) and the parts of a UUID."""
_ALNUM_CHARS = frozenset(string.ascii_letters + string.digits)
_LETTERS_OR_DIGITS = re2.compile(r"([0-9]+)")  # split() keeps the numbers; ASCII runs only


MAX_NAME_NUMBER = 4
"""Longest number inside a name (`route53`, `utf8`, `2024`); random keys put longer ones together."""


def _words_and_numbers(run: str) -> bool:
    """`route53globalresolver`, `mathalphabet2unichar`, `ThisIsAComponent2024`: words (one case or
    camel case, `MIN_WORD_CHARS` or longer on average) between short numbers. Random keys have
    letter pieces of a character or two, in mixed case."""
    pieces = [p for p in _LETTERS_OR_DIGITS.split(run) if p]
    for piece in pieces:
        if piece.isdigit():
            if len(piece) > MAX_NAME_NUMBER:
                return False
        elif len(piece) < MIN_WORD_CHARS or (
            not (piece.islower() or piece.isupper()) and len(piece) / len(_words(piece)) < MIN_WORD_CHARS
        ):
            return False
    return True


def _random_name(run: str) -> bool:
    """A run of letters and digits in a path that reads as random rather than as a name: letters
    and digits mixed, not a name with a number at its end (`ThisIsAComponent2024`), and the
    entropy of a random key (hex's alphabet caps it lower)."""
    if run.isdigit() or run.isalpha() or _words_and_numbers(run):
        return False
    if not run.strip(string.hexdigits):
        return _entropy(run) >= MIN_ENTROPY_BITS - 0.5
    return _entropy(run) >= MIN_ENTROPY_BITS


def secret_share(text: str, findings: Iterable[Finding]) -> float:
    """Share of `text`'s non-whitespace characters that lie inside findings (0.0 to 1.0)."""
    total = _non_whitespace(text)
    if total == 0:
        return 0.0
    covered = sum(_non_whitespace(text[f.start : f.end]) for f in findings)
    return min(1.0, covered / total)


def sanitize(text: str, *, withhold_share: float = WITHHOLD_SHARE) -> Sanitized:
    """Scan once and decide: withhold a text that is essentially a credential, redact the rest."""
    findings = tuple(scan(text))
    if not findings:
        return Sanitized(text, (), 0.0)
    share = secret_share(text, findings)
    if share >= withhold_share:
        return Sanitized(None, findings, share)
    return Sanitized(redact(text, findings), findings, share)


# --------------------------------------------------------------------------------------- internals

_Accept = Callable[["re2._Match", bytes], Iterator[tuple[str, int, int]]]


@dataclass(frozen=True, slots=True)
class _Rule:
    regex: re2._Regexp
    accept: _Accept
    priority: int  # which kind names a merged span: specific formats beat the generic assignment rule
    needle: tuple[bytes, ...] | None = None  # skip the regex when none of these substrings occurs


def _compile(pattern: str) -> re2._Regexp:
    options = re2.Options()
    # Latin-1: every byte is one character, so the DFA never decodes UTF-8; all patterns are ASCII,
    # and every match starts and ends next to an ASCII character, so byte offsets map back cleanly.
    options.encoding = re2.Options.Encoding.LATIN1
    options.log_errors = False  # re2 logs to stderr in its own format: nothing a user should read
    return re2.compile(pattern.encode("ascii"), options)


def _group(regex: re2._Regexp, name: str) -> int:
    """The number of a named group (the binding's Match methods take numbers only)."""
    return regex.groupindex[name.encode("ascii")]  # a bytes pattern names its groups in bytes


def _entropy(value: str) -> float:
    sample = value[:ENTROPY_SAMPLE_CHARS]
    n = len(sample)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(sample).values())


_PLACEHOLDER_PARTS = (
    "xxx",
    "***",
    "...",
    "000000",
    "123456",
    "abcdef",
    "qwerty",
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "placeholder",
    "example",
    "sample",
    "dummy",
    "fake",
    "mock",
    "test",
    "redacted",
    "your",
    "insert",
    "replace",
    "todo",
    "fixme",
    "password",
    "passwd",
    "secret",
    "<",
    ">",
    "{",
    "$(",
    "%(",
    "%s",
    "environ",
    "getenv",
    "process.env",
    "env.",
    "env[",
    "env(",
    "secrets.",
    "vault:",
    "\\",
    "(?",
    "a-z",
    "0-9",
)
"""Parts of values that mark a template, an example or an indirection, not a secret."""

_WORD_CHARS = string.ascii_letters + "_.-"  # words, snake/kebab/camel case, dotted names: no digits
_NUMBER_CHARS = string.digits + ".-_:"  # numbers, versions, dates, times
_PATH_CHARS = _WORD_CHARS + "/"
_SEPARATORS = str.maketrans(dict.fromkeys("_.-/:;=+,", " "))
MIN_WORD_CHARS = 3
"""Average length of the case-delimited words of a letters-only piece below which it is random
mixed case (`xKqPzLmN`: about 2) rather than an identifier (`getAccessToken`: about 4)."""


def _identifier_like(value: str) -> bool:
    """Names, not secrets: every piece between separators is a number, a short tag (`v2`), or a
    word in one case or camel case, optionally with trailing digits (`token_2024`, `API_KEY_V2`,
    `application/json`, `sha256`). Random keys have letters and digits mixed inside a piece."""
    for piece in value.translate(_SEPARATORS).split():
        if piece.isdigit() or (len(piece) <= 3 and piece.isalnum()):
            continue
        head = piece.rstrip(string.digits)
        if not head.isalpha() or len(head) < MIN_WORD_CHARS:
            return False
        if not (head.islower() or head.isupper()) and len(head) / len(_words(head)) < MIN_WORD_CHARS:
            return False
    return True


def _is_placeholder(value: str) -> bool:
    low = value.lower()
    return any(p in low for p in _PLACEHOLDER_PARTS)


def _looks_random(value: str, *, password: bool = False) -> bool:
    """Whether a value assigned to a secret-sounding name is plausibly the secret itself.

    Plain string operations only: this runs once per candidate, and a hostile file has many."""
    if len(value) < (MIN_PASSWORD_CHARS if password else MIN_SECRET_CHARS):
        return False
    if " " in value or "\t" in value or "://" in value:
        return False  # a sentence or prompt; URLs with credentials have their own rule
    if value[0] in "$&*%@!" or value.startswith(("./", "../", "~/", "//")):
        return False  # shell or template variable, YAML anchor, alias or tag, annotation, path
    if not value.strip(_NUMBER_CHARS):
        return False  # a number, version, date or time
    if (not value.strip(_WORD_CHARS)) if password else _identifier_like(value):
        return False  # a word or a name
    if value[0] == "/" and not value.strip(_PATH_CHARS):
        return False
    if _is_placeholder(value):
        return False
    if not password and not value.strip(string.hexdigits):
        return _entropy(value) >= MIN_ENTROPY_BITS - 0.5  # hex has 16 symbols: 4 bits at most
    return _entropy(value) >= (MIN_PASSWORD_ENTROPY_BITS if password else MIN_ENTROPY_BITS)


_SYMBOLS = frozenset("!@#%^&*?~|")  # not `=`, `+`, `,`, `;`, `.`: code chains names with those


def _has_symbols(value: str) -> bool:
    """Letters, digits and punctuation marks together, as in a password a person chose."""
    return not _SYMBOLS.isdisjoint(value) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _named_value_random(value: str, key_class: str) -> bool:
    """`_looks_random` for a value assigned to a name of `key_class`; a value of letters, digits and
    symbols (a password a person chose) takes the shorter minimum of passwords whatever the name,
    unless it is still a name (`e.a=e.b`)."""
    if _looks_random(value, password=key_class == "password"):
        return True
    return _has_symbols(value) and not _identifier_like(value) and _looks_random(value, password=True)


def _token_ok(token: bytes) -> bool:
    """A prefixed token is real unless it is visibly a placeholder (`ghp_xxxx...`, `...EXAMPLE`)."""
    value = token.decode("latin-1")
    low = value.lower()
    if "xxxx" in low or "****" in value or "example" in low or "0000000000" in value or "<" in value:
        return False
    return _entropy(value) >= 2.5


# --- rule: prefixed token formats -------------------------------------------------------------

# (kind, pattern). Left boundaries are \b; every pattern ends in a greedy class, so a match cannot
# stop inside a longer token.
_TOKEN_FORMATS: tuple[tuple[str, str], ...] = (
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("slack-webhook", r"(?i:https?://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/\-]{8,}"),
    ("stripe-key", r"\b[rs]k_live_[A-Za-z0-9]{16,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    (
        "openai-key",
        r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9_\-]{0,80}T3BlbkFJ[A-Za-z0-9_\-]{10,})",
    ),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36,}"),
    ("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("twilio-key", r"\bSK[0-9a-fA-F]{32}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}"),
    # HashiCorp Vault: service, batch and recovery tokens (Vault 1.10+).
    ("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}"),
    ("shopify-token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("grafana-token", r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})"),
    ("linear-key", r"\blin_api_[A-Za-z0-9]{40}"),
    ("postman-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("age-secret-key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("doppler-token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{2,35}\.)?[A-Za-z0-9]{40,44}"),
    ("databricks-token", r"\bdapi[a-f0-9]{32}(?:-[0-9])?"),
    ("telegram-bot-token", r"\b[0-9]{8,10}:AA[0-9A-Za-z_\-]{33,}"),
    ("square-token", r"\bsq0(?:atp-[0-9A-Za-z_\-]{22}|csp-[0-9A-Za-z_\-]{43})"),
    ("mailgun-key", r"\bkey-[0-9a-f]{32}\b"),
    ("slack-token", r"\bxapp-[0-9]-[A-Z0-9]{9,}-[0-9]{10,}-[a-f0-9]{32,}"),
)
_TOKEN_GROUPS = tuple(f"t{i}" for i in range(len(_TOKEN_FORMATS)))
_TOKENS = _compile("|".join(f"(?P<{g}>{p})" for g, (_, p) in zip(_TOKEN_GROUPS, _TOKEN_FORMATS, strict=True)))
_TOKEN_KINDS = tuple((_group(_TOKENS, g), kind) for g, (kind, _) in zip(_TOKEN_GROUPS, _TOKEN_FORMATS, strict=True))


def _accept_token(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
    for group, kind in _TOKEN_KINDS:
        start, end = m.span(group)
        if start >= 0:
            if _token_ok(data[start:end]):
                yield kind, start, end
            return


# --- rule: private keys -------------------------------------------------------------------------

_BEGIN = r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_END = r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_B64_LINE = r"[A-Za-z0-9+/=]"
_ARMOR_HEADER = r"[A-Za-z][A-Za-z\-]*:[ \t][^\r\n\\\"']*"  # Proc-Type:, DEK-Info:, Version:, Comment:
# A whole block, its body made only of key material: base64, whitespace, armor headers and the
# \n escapes of a key stored in a JSON or code string. Code that merely names the markers (a PEM
# parser) has quotes and parentheses between them, so it does not match.
_PEM_BLOCK = _compile(rf"{_BEGIN}(?P<body>(?:{_B64_LINE}|\s|\\[nr]|{_ARMOR_HEADER})*){_END}")
# A block cut off (a truncated file, or a chunk that holds only one end of it): the lines of key
# material right after a BEGIN line, or right before an END line.
_PEM_AFTER_BEGIN = _compile(
    rf"{_BEGIN}[ \t]*\r?\n(?P<body>(?:[ \t]*(?:{_ARMOR_HEADER}|{_B64_LINE}*)[ \t]*\r?\n)*[ \t]*{_B64_LINE}*)"
)
_PEM_BEFORE_END = _compile(rf"(?P<body>(?:[ \t]*{_B64_LINE}{{16,}}[ \t]*\r?\n)*[ \t]*{_B64_LINE}+[ \t]*\r?\n){_END}")


MIN_KEY_BODY_CHARS = 16
"""Key material is hundreds of characters; a shorter "body" is prose that names the markers."""
_FRAME = b" \t\r\n"
_FRAME_ESCAPES = (b"\\n", b"\\r")


def _accept_body(kind: str, regex: re2._Regexp) -> _Accept:
    body = _group(regex, "body")

    def accept(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
        start, end = m.span(body)
        # Keep the line breaks (or their escapes in a JSON string) that frame the body with the BEGIN and END lines.
        while start < end:
            if data[start] in _FRAME:
                start += 1
            elif data[start : start + 2] in _FRAME_ESCAPES:
                start += 2
            else:
                break
        while end > start:
            if data[end - 1] in _FRAME:
                end -= 1
            elif end - start >= 2 and data[end - 2 : end] in _FRAME_ESCAPES:
                end -= 2
            else:
                break
        if end - start >= MIN_KEY_BODY_CHARS:
            yield kind, start, end

    return accept


# --- rule: credentials in URLs and Authorization headers -------------------------------------

# The user part and the password stop at the characters a URL template uses ([]{}()<>) and at ":",
# so `scheme://host:port,other:port@...` and `git://[repo[:]][ref@]path` are not read as credentials.
_URL_PASSWORD = _compile(
    r"(?i)\b[a-z][a-z0-9+.\-]{1,30}://[^\s:/?#@\"'<>\[\](){}]{0,128}:(?P<pw>[^\s:/?#@\"'<>\[\](){}]{1,256})"
    r"@[a-z0-9\[._\-]"
)


_URL_PASSWORD_PW = _group(_URL_PASSWORD, "pw")


def _accept_url_password(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
    start, end = m.span(_URL_PASSWORD_PW)
    value = data[start:end].decode("latin-1")
    if not value.strip(_NUMBER_CHARS) or not value.strip(_WORD_CHARS) or _is_placeholder(value):
        return  # host:port@..., or a placeholder word: user:pass, guest:guest, org:repo
    yield "url-password", start, end


_AUTH_HEADER = _compile(
    r"(?i)(?:\bbearer|authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:basic|token|bearer))[ \t]+"
    r"(?P<v>[A-Za-z0-9_\-.~+/]{16,}={0,2})"
)


_AUTH_HEADER_V = _group(_AUTH_HEADER, "v")


def _accept_auth_header(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
    start, end = m.span(_AUTH_HEADER_V)
    if _looks_random(data[start:end].decode("latin-1")):
        yield "auth-header", start, end


# --- rule: values assigned to secret-sounding names -------------------------------------------


_SECRET_WORDS = frozenset(
    {
        "secret",
        "secrets",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "token",
        "apikey",
        "auth",
        "credential",
        "credentials",
        "authorization",
    }
)
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "passphrase", "pass"})
# Words that, before "key", make it a credential: api_key, secret_key, signing_key, AccountKey...
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "access",
        "private",
        "secret",
        "signing",
        "encryption",
        "master",
        "app",
        "consumer",
        "account",
        "client",
        "auth",
        "service",
        "session",
        "hmac",
        "jwt",
        "license",
        "storage",
        "subscription",
    }
)
_SECRET_NAME = (
    r"[a-z0-9_.\-]*(?:secret|passw(?:or)?d|pwd|pass|token|auth|credential"
    rf"|(?:{'|'.join(sorted(_KEY_QUALIFIERS))})[_.\-]?key)[a-z0-9_.\-]*"
)
# A name containing one of the keywords (checked word by word in `_key_class`), an optional closing
# quote or bracket (JSON keys, `cfg["token"]`), an assignment (`=`, `:`, `:=`, `=>`, Makefile's
# `?=`, `::=`, `+=`, or a typed `name: str =`), and a value: quoted (Python/C# prefixes allowed) or
# bare up to whitespace, quotes and brackets. A bare value keeps `#`, `,` and `;`: in INI, YAML,
# .properties and .env files they are part of the value (a comment needs a space before it), and
# in code a trailing one is dropped (`_accept_assignment`). The typed form needs a space before its
# `=`, so the YAML value `ab9=cd` is a value, not a type annotation `ab9` and a value `cd`.
_ASSIGNMENT = _compile(
    rf"(?i)(?P<key>{_SECRET_NAME})"
    r"[\"'\]]{0,2}[ \t]*"
    r"(?::[ \t]*[a-z_][a-z0-9_.\[\], |]{0,60}[ \t]+=|::=|:=|\?=|\+=|=>|=|:)[ \t]*"
    r"(?:[bfru@]{0,2}\"(?P<dq>[^\"\r\n]*)\"|[bfru]{0,2}'(?P<sq>[^'\r\n]*)'|`(?P<bq>[^`\r\n]*)`"
    r"|(?P<bare>[!$%&*+\-./0-9:=?@a-z^_|~#,;]+))"
)

# A name ending in one of these is about a secret, not the secret: token_url, secret_name, password_hash.
_NOT_SECRET_LAST = frozenset(
    {
        "id",
        "ids",
        "type",
        "types",
        "name",
        "names",
        "url",
        "uri",
        "urls",
        "endpoint",
        "path",
        "file",
        "filename",
        "dir",
        "field",
        "fields",
        "length",
        "len",
        "count",
        "size",
        "limit",
        "prefix",
        "suffix",
        "header",
        "headers",
        "env",
        "var",
        "param",
        "params",
        "policy",
        "format",
        "pattern",
        "regex",
        "regexp",
        "label",
        "hint",
        "prompt",
        "message",
        "msg",
        "error",
        "errors",
        "version",
        "expiry",
        "expires",
        "expiration",
        "ttl",
        "timeout",
        "mode",
        "kind",
        "class",
        "enabled",
        "required",
        "min",
        "max",
        "provider",
        "store",
        "manager",
        "service",
        "scope",
        "scopes",
        "method",
        "column",
        "attr",
        "hash",
        "digest",
        "input",
        "form",
        "template",
        "rule",
        "rules",
        "location",
        "ref",
        "arn",
        "index",
        "source",
        "lifetime",
        "duration",
        "strength",
        "reset",
        "confirm",
        "confirmation",
        "placeholder",
        "description",
        "help",
        "title",
        "text",
        "option",
        "options",
        "fn",
        "func",
        "callback",
        "handler",
        "tokens",
        "generator",
        "validator",
    }
)


def _words(name: str) -> list[str]:
    """`self.apiKey` -> [self, api, key]; `APIKey` -> [api, key]; `DB_PASSWORD` -> [db, password]."""
    words: list[str] = []
    current: list[str] = []
    prev = ""
    for i, ch in enumerate(name):
        if not ch.isalnum():
            if current:
                words.append("".join(current))
                current = []
            prev = ""
            continue
        boundary = False
        if current:
            nxt = name[i + 1] if i + 1 < len(name) else ""
            if ch.isupper() and (prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower())):
                boundary = True
        if boundary:
            words.append("".join(current))
            current = []
        current.append(ch)
        prev = ch
    if current:
        words.append("".join(current))
    return [w.lower() for w in words]


@functools.lru_cache(maxsize=4096)
def _key_class(name: str) -> str | None:
    """ "password" for password-like names, "secret" for other credential names, None otherwise."""
    words = _words(name[-80:])
    if not words or words[-1] in _NOT_SECRET_LAST or "public" in words:
        return None  # about a secret (token_url, secret_name), or public by name (publicKeyToken)
    if words[-1] in _PASSWORD_WORDS or any(w in _PASSWORD_WORDS - {"pass"} for w in words):
        return "password"
    if words[-1].endswith(("password", "passwd")):
        return "password"  # PGPASSWORD, MYSQL_ROOTPASSWORD
    for i, w in enumerate(words):
        if w in _SECRET_WORDS or w.endswith(("token", "secret", "apikey", "password")):
            return "secret"
        if w == "key" and i > 0 and words[i - 1] in _KEY_QUALIFIERS:
            return "secret"
        if w.endswith("key") and w[:-3] in _KEY_QUALIFIERS:
            return "secret"
    return None


_ASSIGNMENT_KEY = _group(_ASSIGNMENT, "key")
_ASSIGNMENT_BARE = _group(_ASSIGNMENT, "bare")
_ASSIGNMENT_VALUES = tuple(_group(_ASSIGNMENT, g) for g in ("dq", "sq", "bq", "bare"))


def _accept_assignment(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
    key_start, key_end = m.span(_ASSIGNMENT_KEY)
    key_class = _key_class(data[key_start:key_end].decode("latin-1"))
    if key_class is None:
        return
    for group in _ASSIGNMENT_VALUES:
        start, end = m.span(group)
        if start < 0:
            continue
        if group == _ASSIGNMENT_BARE:
            if data[end : end + 1] in (b"(", b"["):
                return  # a call or subscript: `token = get_token()`, `password = os.environ["X"]`
            end = _bare_end(data, key_start, start, end)
        value = data[start:end].decode("latin-1")
        if _named_value_random(value, key_class):
            yield "secret-assignment", start, end
        return


_LINE_PREFIX = b" \t-"  # indentation, a YAML list item
_CONFIG_PREFIX_BYTES = 64  # indentation and `export ` before a name on a config line


def _bare_end(data: bytes, key_start: int, start: int, end: int) -> int:
    """Where a bare value ends. On a config line (the name starts the line, after indentation or
    `export`, and the value runs to its end or to a comment) `,` and `;` are part of the value, as
    INI, YAML, .properties and .env read them; in code they end it (`x.token=0,y.z=new`,
    `f(token=abc,`)."""
    lo = max(0, key_start - _CONFIG_PREFIX_BYTES)  # bounded: a minified line is megabytes long
    newline = max(data.rfind(b"\n", lo, key_start), data.rfind(b"\r", lo, key_start))
    if newline < 0 and lo > 0:
        return _cut_at_separator(data, start, end)
    prefix = data[newline + 1 : key_start].strip(_LINE_PREFIX)
    after = data[end : end + 2]
    config = (not prefix or prefix == b"export") and (after[:1] in (b"", b"\n", b"\r") or after[:1] in b" \t")
    if not config:
        return _cut_at_separator(data, start, end)
    while end > start and data[end - 1] in b",;":
        end -= 1  # a statement's end: `token=abc...;`
    return end


def _cut_at_separator(data: bytes, start: int, end: int) -> int:
    return min((i for i in (data.find(b",", start, end), data.find(b";", start, end)) if i >= 0), default=end)


# AWS secret access keys are 40 base64 characters; their names vary more than the generic rule knows.
_AWS_SECRET = _compile(
    r"(?i)aws[a-z0-9_.\-]{0,32}(?:secret|sk)[a-z0-9_.\-]{0,32}[\"'\]]{0,2}[ \t]*(?::=|=>|=|:)[ \t]*[\"']?"
    r"(?P<v>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"
)


_AWS_SECRET_V = _group(_AWS_SECRET, "v")


def _accept_aws_secret(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
    start, end = m.span(_AWS_SECRET_V)
    if _token_ok(data[start:end]):
        yield "aws-secret-key", start, end


# --- rule: passwords on command lines (shell history, scripts, CI steps) -----------------------

# A quoted or bare argument; quotes are dropped in `_accept_cli_password`.
_ARG = r"(?:'[^'\r\n]+'|\"[^\"\r\n]+\"|[^\s'\"]+)"
# The option that takes a password, after the command that reads it, on the same line. mysql's
# `-p` takes its value glued to it (`-p secret` would prompt, then open the database `secret`);
# `-P` is the port, so the flag is matched case-sensitively.
_CLI_PASSWORD = _compile(
    r"\b(?:"
    rf"(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mariadb|mariadb-dump)\b[^\r\n]*?[ \t]-p(?P<a>{_ARG})"
    rf"|sshpass(?:[ \t]+-[a-zA-Z])*[ \t]+-p[ \t]*(?P<b>{_ARG})"
    rf"|redis-cli\b[^\r\n]*?[ \t]-a[ \t]+(?P<c>{_ARG})"
    r"|(?:docker|podman|nerdctl|helm)[ \t]+(?:registry[ \t]+)?login\b"
    rf"[^\r\n]*?[ \t](?:-p|--password)[ \t]+(?P<d>{_ARG})"
    rf"|curl\b[^\r\n]*?[ \t](?:-u|--user|--proxy-user|-U)[ \t]*[\"']?[^\s:\"']*:(?P<e>{_ARG})"
    rf"|htpasswd[ \t]+-[a-zA-Z]*b[a-zA-Z]*(?:[ \t]+-[a-zA-Z]+)*[ \t]+[^\s]+[ \t]+[^\s]+[ \t]+(?P<f>{_ARG})"
    r")"
)
_CLI_GROUPS = tuple(_group(_CLI_PASSWORD, g) for g in "abcdef")


def _accept_cli_password(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
    for group in _CLI_GROUPS:
        start, end = m.span(group)
        if start < 0:
            continue
        if end - start >= 2 and data[start] in b"'\"" and data[end - 1] == data[start]:
            start, end = start + 1, end - 1
        elif data[end - 1 : end] in (b"'", b'"'):
            end -= 1  # `curl -u "user:pass"`: the quote opened before the user name
        if _looks_random(data[start:end].decode("latin-1"), password=True):
            yield "cli-password", start, end
        return


# --- rule: markup (XML, HTML, .NET and Java config) -------------------------------------------

# Repeats are unbounded (`*`), not counted: counted ones multiply the size of RE2's automaton.
# An opening tag that mentions a secret-sounding word: `<password>`, `<add key="DbPassword" ...>`,
# `<input type="password" ...>`, `<setting name="ClientSecret">`. Tags without one are not
# candidates, so a page of ordinary markup costs no Python.
_MARKUP = _compile(r"(?i)<(?P<tag>[a-z_][a-z0-9_.:\-]*)(?P<attrs>(?:[ \t\r\n][^<>]*)?)>")
_MARKUP_NEEDLE = _compile(rf"(?i){_SECRET_NAME}")
_ATTRIBUTE = _compile(r"(?i)([a-z_][a-z0-9_.:\-]*)[ \t\r\n]*=[ \t\r\n]*(?:\"([^\"]*)\"|'([^']*)')")
_MARKUP_TAG = _group(_MARKUP, "tag")
_MARKUP_ATTRS = _group(_MARKUP, "attrs")
# Attributes that name what an element holds; `value` is what it holds.
_NAMING_ATTRIBUTES = frozenset({b"key", b"name", b"id", b"type", b"property", b"setting"})
_ELEMENT_TEXT = _compile(r"[ \t\r\n]{0,200}(?:<value>[ \t\r\n]{0,200})?(?P<v>[^<>\r\n]{1,256})</")
_ELEMENT_TEXT_V = _group(_ELEMENT_TEXT, "v")
_MARKUP_LOOKAHEAD = 720  # bytes after a tag that `_ELEMENT_TEXT` can match


def _accept_markup(m: re2._Match, data: bytes) -> Iterator[tuple[str, int, int]]:
    tag_start, tag_end = m.span(_MARKUP_TAG)
    attrs_start, attrs_end = m.span(_MARKUP_ATTRS)
    if _MARKUP_NEEDLE.search(data[tag_start:attrs_end]) is None:
        return
    named: str | None = None
    value: tuple[int, int] | None = None
    if attrs_end > attrs_start:
        for a in _ATTRIBUTE.finditer(data, attrs_start, attrs_end):
            name = data[a.start(1) : a.end(1)].lower()
            which = 2 if a.start(2) >= 0 else 3
            if name == b"value":
                value = a.span(which)
            elif name in _NAMING_ATTRIBUTES and named is None:
                named = _key_class(data[a.start(which) : a.end(which)].decode("latin-1"))
    if named is not None and value is not None:
        start, end = value
    else:
        kind = _key_class(data[tag_start:tag_end].decode("latin-1")) or named
        if kind is None or data[m.end() - 2 : m.end() - 1] == b"/":
            return
        named = kind
        text = _ELEMENT_TEXT.match(data, m.end(), min(len(data), m.end() + _MARKUP_LOOKAHEAD))
        if text is None:
            return
        start, end = text.span(_ELEMENT_TEXT_V)
        while end > start and data[end - 1] in b" \t":
            end -= 1
    if _named_value_random(data[start:end].decode("latin-1"), named):
        yield "secret-markup", start, end


_RULES: tuple[_Rule, ...] = (
    _Rule(_PEM_BLOCK, _accept_body("private-key", _PEM_BLOCK), 3, (b"PRIVATE KEY",)),
    _Rule(_PEM_AFTER_BEGIN, _accept_body("private-key", _PEM_AFTER_BEGIN), 3, (b"PRIVATE KEY",)),
    _Rule(_PEM_BEFORE_END, _accept_body("private-key", _PEM_BEFORE_END), 3, (b"PRIVATE KEY",)),
    _Rule(_TOKENS, _accept_token, 2),
    _Rule(_AWS_SECRET, _accept_aws_secret, 2),
    _Rule(_URL_PASSWORD, _accept_url_password, 1, (b"://",)),
    _Rule(_AUTH_HEADER, _accept_auth_header, 1),
    _Rule(_CLI_PASSWORD, _accept_cli_password, 1),
    _Rule(_MARKUP, _accept_markup, 1, (b"<",)),
    _Rule(_ASSIGNMENT, _accept_assignment, 0),
)


def _merge(spans: list[tuple[int, int, str, int]]) -> list[tuple[int, int, str]]:
    """Union overlapping spans; a merged span is named after its highest-priority part."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, str]] = []
    cur_start, cur_end, cur_kind, cur_prio = spans[0]
    for start, end, kind, prio in spans[1:]:
        if start < cur_end:
            cur_end = max(cur_end, end)
            if prio > cur_prio:
                cur_kind, cur_prio = kind, prio
            continue
        merged.append((cur_start, cur_end, cur_kind))
        cur_start, cur_end, cur_kind, cur_prio = start, end, kind, prio
    merged.append((cur_start, cur_end, cur_kind))
    return merged


def _to_findings(text: str, data: bytes, merged: list[tuple[int, int, str]]) -> list[Finding]:
    """Byte spans -> character offsets and line numbers, in one pass over the text."""
    ascii_only = len(data) == len(text)
    findings: list[Finding] = []
    byte_pos = char_pos = 0
    line = 1
    for b_start, b_end, kind in merged:
        if ascii_only:
            start, end = b_start, b_end
        else:
            start = char_pos + len(data[byte_pos:b_start].decode("utf-8", "surrogatepass"))
            end = start + len(data[b_start:b_end].decode("utf-8", "surrogatepass"))
        line += _count_breaks(text, char_pos, start)
        start_line = line
        end_line = start_line + _count_breaks(text, start, end)
        findings.append(Finding(kind, start, end, start_line, end_line))
        byte_pos, char_pos = b_start, start
    return findings


def _count_breaks(text: str, start: int, end: int) -> int:
    """Line breaks in text[start:end] as the chunker counts them: \\n, \\r\\n and a lone \\r."""
    n = text.count("\n", start, end)
    if "\r" in text:
        n += text.count("\r", start, end) - text.count("\r\n", start, end)
        if end < len(text) and end > start and text[end - 1] == "\r" and text[end] == "\n":
            n -= 1  # the pair is counted once, by its \n, in the next piece
    return n


def _non_whitespace(text: str) -> int:
    return len(text) - sum(text.count(ch) for ch in " \t\n\r\f\v")


def _replacement(secret: str, kind: str) -> str:
    """The marker where the secret's first line was, and the secret's line breaks after it."""
    marker = f"{REDACTED_PREFIX}{kind}]"
    if not any(ch in _LINE_BREAKS for ch in secret):
        return marker
    out: list[str] = []
    placed = False
    for ch in secret:
        if ch in _LINE_BREAKS:
            out.append(ch)
        elif not placed:
            out.append(marker)
            placed = True
    return "".join(out)
