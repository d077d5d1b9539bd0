"""A file judged by its first bytes (binary, a "generated" banner, minified), and a walked file
read and decoded as text for indexing."""

from __future__ import annotations

import codecs
import logging
import os
import re
from pathlib import Path

from lgrep_core.domain.errors import LgrepError
from lgrep_core.domain.pathnames import open_project_file, read_up_to
from lgrep_core.domain.text import decode_text

from lgrep_index.walking._defaults import MINIFIED_SUFFIXES, extension, is_generated_name
from lgrep_index.walking._ignore import Rules
from lgrep_index.walking._model import SKIP_BINARY, SKIP_GENERATED, SKIP_MINIFIED, WalkedFile

__all__ = ["SNIFF_BYTES", "content_verdict", "read_text"]

logger = logging.getLogger(__name__)

# Bytes inspected to classify a file (binary, generated, minified); git and ripgrep also look at 8 KiB.
SNIFF_BYTES = 8192
# More than this share of control characters (other than whitespace, backspace, escape) means binary.
_BINARY_CONTROL_RATIO = 0.10
# The "generated" banner must sit in the header; later mentions are ordinary prose or code.
_GENERATED_HEADER_LINES = 10
# Minified .js/.css: an average line over 300 characters across at least 1 KiB. Hand-written code
# averages 30-60; minified bundles run to thousands.
_MINIFIED_MIN_SAMPLE = 1024
_MINIFIED_AVG_LINE = 300
_MINIFIABLE_EXTENSIONS = frozenset({"js", "mjs", "cjs", "css"})

_GENERATED_BANNER = re.compile(
    r"(?<![\w@])@generated\b"
    r"|\bgenerated\b.{0,120}\bdo not (?:edit|modify)\b"
    r"|\bdo not (?:edit|modify)\b.{0,120}\bgenerated\b"
    r"|^\W*(?:this (?:file|code|module) (?:is|was|has been) )?"
    r"(?:auto-?generated|automatically generated|machine generated)\b",
    re.IGNORECASE | re.MULTILINE,
)

# Bytes that occur in text: printable ASCII, high bytes (UTF-8, legacy code pages), and the
# whitespace and control characters source files use (BEL, BS, TAB, LF, VT, FF, CR, ESC).
_TEXT_BYTES = bytes({7, 8, 9, 10, 11, 12, 13, 27} | set(range(0x20, 0x100)) - {0x7F})
_UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def read_text(file: WalkedFile, max_file_bytes: int) -> str | None:
    """Read and decode a walked file for indexing; never raises.

    Returns None when the file should not be indexed after all: it is binary, it grew past
    `max_file_bytes`, or it vanished or became unreadable since the walk.
    """
    # Opened name by name below the root, no symlink followed (lgrep_core.domain.pathnames): a folder
    # swapped for a symlink since the walk listed it cannot lead the read out of the project.
    depth = file.path.count("/") + 1
    parts = file.abs_path.parts
    try:
        fd, st = open_project_file(Path(*parts[:-depth]), "/".join(parts[-depth:]))
    except LgrepError as exc:
        logger.debug("cannot open %s: %s", file.path, exc.message)
        return None
    try:
        if st.st_size > max_file_bytes:
            return None
        data = read_up_to(fd, max_file_bytes + 1)
    except OSError as exc:
        logger.debug("cannot read %s: %s", file.path, exc)
        return None
    finally:
        os.close(fd)
    if len(data) > max_file_bytes or _looks_binary(data[:SNIFF_BYTES]):
        return None
    return decode_text(data)


def content_verdict(head: bytes, lower_name: str, rel: str, rules: Rules) -> str | None:
    """Why a file is skipped by its first bytes (binary; a generated banner or minified text that
    no lgrep negation re-includes), or None. A generated or minified *name* that was re-included is
    kept whatever its content says."""
    if _looks_binary(head):
        return SKIP_BINARY
    if is_generated_name(lower_name) or lower_name.endswith(MINIFIED_SUFFIXES):
        return None  # only reached when a negation re-included the name
    reason = (
        SKIP_GENERATED
        if _has_generated_banner(head)
        else SKIP_MINIFIED
        if extension(lower_name) in _MINIFIABLE_EXTENSIONS and _looks_minified(head)
        else None
    )
    return reason if reason is not None and not rules.reincludes(rel, is_dir=False) else None


def _looks_binary(head: bytes) -> bool:
    if not head or head.startswith(_UTF32_BOMS) or head.startswith(_UTF16_BOMS):
        return False
    if b"\x00" in head:
        return True
    control = len(head.translate(None, _TEXT_BYTES))
    return control > len(head) * _BINARY_CONTROL_RATIO


def _has_generated_banner(head: bytes) -> bool:
    if head.startswith(_UTF32_BOMS) or head.startswith(_UTF16_BOMS):
        header = "\n".join(decode_text(head).splitlines()[:_GENERATED_HEADER_LINES])
    else:
        raw = b"\n".join(head.split(b"\n", _GENERATED_HEADER_LINES)[:_GENERATED_HEADER_LINES])
        if b"generated" not in raw.lower():  # every banner says "generated"; skip the regex
            return False
        header = decode_text(raw)
    return _GENERATED_BANNER.search(header) is not None


def _looks_minified(head: bytes) -> bool:
    if len(head) < _MINIFIED_MIN_SAMPLE:
        return False
    return len(head) / (head.count(b"\n") + 1) > _MINIFIED_AVG_LINE
