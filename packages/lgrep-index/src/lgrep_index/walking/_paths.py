"""Verdicts on a path by its name alone: the form of a project-relative path, secret-looking
paths, and files left out or skipped by name (ignore rules and built-in defaults, credentials,
binary extensions, generated and minified names)."""

from __future__ import annotations

from lgrep_core.domain.secrets import path_has_secret

from lgrep_index.walking._defaults import (
    BINARY_EXTENSIONS,
    MINIFIED_SUFFIXES,
    VCS_FILES,
    extension,
    is_default_file,
    is_generated_name,
)
from lgrep_index.walking._ignore import Rules
from lgrep_index.walking._model import SKIP_BINARY, SKIP_GENERATED, SKIP_MINIFIED, SKIP_SECRET

__all__ = ["ignored_file", "is_project_path", "is_secret_path", "name_verdict", "relative_parts"]

_SECRET_NAMES = frozenset(
    {
        ".env",
        ".envrc",
        ".npmrc",
        ".pypirc",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".git-credentials",
        ".htpasswd",
        "credentials.json",
        "secrets.yaml",
        "secrets.yml",
        "secrets.json",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
    }
)
_SECRET_SUFFIXES = (
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".jks",
    ".keystore",
    ".kdbx",
    ".p8",
    ".ppk",
    ".tfstate",
    ".tfstate.backup",
)
# (parent folder, file name) pairs: credentials stored under a tool's dot-folder.
_SECRET_IN_DIR = frozenset({(".aws", "credentials"), (".docker", "config.json"), (".kube", "config")})
# `.env.example` and friends document the variables and hold no values; they are worth indexing.
_ENV_TEMPLATE_PARTS = frozenset({"example", "sample", "template", "dist"})


def is_secret_path(path: str) -> bool:
    """Whether a file at this project-relative path must never be indexed (keys, tokens, credentials)."""
    parts = path.replace("\\", "/").rsplit("/", 2)
    name = parts[-1].lower()
    parent = parts[-2].lower() if len(parts) > 1 else ""
    if name in _SECRET_NAMES or name.endswith(_SECRET_SUFFIXES) or (parent, name) in _SECRET_IN_DIR:
        return True
    if name.startswith(".env.") or name.endswith(".env"):
        return _ENV_TEMPLATE_PARTS.isdisjoint(name.split("."))
    if name.endswith(".json") and ("credentials" in name or name.startswith("client_secret")):
        return True
    # A token in the path (`tokens/ghp_....txt`, `backup/hvs....`): a credential store by its name,
    # and the name itself would reach the index, search results and the embedder (ADR 0005).
    return path_has_secret(path)


def ignored_file(name: str, rel: str, rules: Rules) -> bool:
    """Whether the ignore rules leave a file out silently: a version-control file, a built-in
    default that no lgrep negation re-includes, or a file an ignore pattern names."""
    if name in VCS_FILES:
        return True
    if is_default_file(name.lower()):
        return not rules.reincludes(rel, is_dir=False)
    return rules.ignores(rel, is_dir=False)


def name_verdict(lower_name: str, rel: str, rules: Rules) -> str | None:
    """Why a file is skipped by its name alone (a credential, a binary extension, a generated or
    minified name that no lgrep negation re-includes), or None. The walk and TreeRules share it."""
    if is_secret_path(rel):
        return SKIP_SECRET
    if extension(lower_name) in BINARY_EXTENSIONS:
        return SKIP_BINARY
    by_name = (
        SKIP_GENERATED
        if is_generated_name(lower_name)
        else SKIP_MINIFIED
        if lower_name.endswith(MINIFIED_SUFFIXES)
        else None
    )
    return by_name if by_name is not None and not rules.reincludes(rel, is_dir=False) else None


def is_project_path(path: str) -> bool:
    """Whether `path` has the form of a project-relative path: '/'-separated names, none empty, '.'
    or '..', not absolute. Anything else never names a file of the project."""
    return relative_parts(path) is not None


def relative_parts(path: str) -> list[str] | None:
    """The names of a project-relative path, or None when it is not one (absolute, empty names,
    '.' or '..', a NUL)."""
    if not path or "\x00" in path:
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts
