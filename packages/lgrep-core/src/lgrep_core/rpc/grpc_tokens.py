"""lgrep's bearer token: its form, how a call carries it, and the 0600 file it lives in.

Calls over TCP carry `authorization: Bearer <token>` (`bearer_metadata`); the server checks it with
`lgrep_core.rpc.grpc_interceptors.TokenAuthInterceptor`. The daemon makes a token (`new_token`) and writes
it where only its user can read it (`write_token_file`); clients read it back (`read_token_file`),
which refuses a file anyone else could have written or read.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from pathlib import Path

from lgrep_core.domain import errors

__all__ = ["AUTHORIZATION_KEY", "bearer_metadata", "check_token", "new_token", "read_token_file", "write_token_file"]

AUTHORIZATION_KEY = "authorization"
"""Metadata key of the bearer token (`authorization: Bearer <token>`); gRPC metadata keys are lowercase."""

_TOKEN_RE = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")
_TOKEN_BYTES = 32  # 256 bits, 43 characters


def check_token(token: str) -> str:
    """`token` itself when it has the form of an lgrep token; ConfigError otherwise."""
    if not _TOKEN_RE.fullmatch(token):
        raise errors.ConfigError(
            "an lgrep token must be 16 to 512 characters of letters, digits and ._~+/=- (make one with new_token())"
        )
    return token


def bearer_metadata(token: str) -> tuple[tuple[str, str]]:
    """The call metadata that carries `token` (pass as `metadata=` to a stub call)."""
    return ((AUTHORIZATION_KEY, f"Bearer {check_token(token)}"),)


def new_token() -> str:
    """A fresh random bearer token (256 bits, URL-safe text)."""
    return secrets.token_urlsafe(_TOKEN_BYTES)


def write_token_file(path: str | os.PathLike[str], token: str) -> Path:
    """Write `token` to `path`, readable by its owner only (0600), atomically: readers see the old
    token or the new one. Whatever was at `path` (a file, a symlink) is replaced, not followed."""
    target = Path(path)
    check_token(token)
    temp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, 0o600)
    except OSError as exc:
        raise errors.ConfigError(f"cannot write the token file {target}: {exc.strerror}") from None
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{token}\n".encode("ascii"))
        os.fsync(fd)
        os.close(fd)
        fd = -1
        temp.replace(target)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        temp.unlink(missing_ok=True)
        raise errors.ConfigError(f"cannot write the token file {target}: {exc.strerror}") from None
    return target


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token in `path`. Refuses, with a message that says what to do, a symlink, anything but a
    regular file, a file another user owns, and a file that its group or others may read or write."""
    target = Path(path)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise errors.ConfigError(
            f"no token file at {target}: the lgrep server writes it when it listens on TCP; is it running with TCP on?"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise errors.ConfigError(
                f"the token file {target} is a symbolic link; lgrep reads a token only from a regular file: "
                "remove the link and let the server write the file"
            ) from None
        raise errors.ConfigError(f"cannot read the token file {target}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise errors.ConfigError(f"the token file {target} is not a regular file")
        if info.st_uid != os.geteuid():
            raise errors.ConfigError(
                f"the token file {target} belongs to user id {info.st_uid}, not to you ({os.geteuid()}): "
                "lgrep only trusts a token file you own"
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise errors.ConfigError(
                f"the token file {target} can be used by other users (mode {mode:04o}): run `chmod 600 {target}`"
            )
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if not _TOKEN_RE.fullmatch(token):
        raise errors.ConfigError(f"the token file {target} does not hold an lgrep token")
    return token
