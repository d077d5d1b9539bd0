"""Chunk texts as a snapshot keeps them: each compressed on its own.

A snapshot needs a chunk's text for the few chunks a query shows (the snippet) or checks (a
definition line): tens per query, never all of them. Source code compresses to about 40% with
zlib's fastest level, and one chunk decompresses in a few microseconds, so the texts cost less than
half of their size in memory and nothing noticeable per query. (Reading them from LanceDB per query
would keep them out of memory entirely, at milliseconds per query and a read of a table version
the snapshot may no longer pin.)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

__all__ = ["ChunkTexts", "pack"]

_LEVEL = 1  # zlib's fastest: ~2.5x on code, and a full load compresses every chunk once


def pack(text: str) -> bytes:
    """One text as `ChunkTexts` stores it (for `ChunkTexts.of_packed`)."""
    return zlib.compress(text.encode("utf-8", "surrogatepass"), _LEVEL)


def _unpack(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8", "surrogatepass")


class ChunkTexts(Sequence[str]):
    """An immutable sequence of texts, stored compressed (see the module docstring)."""

    __slots__ = ("_blobs",)

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._blobs: list[bytes] = [pack(t) for t in texts]

    @classmethod
    def of_packed(cls, blobs: list[bytes]) -> ChunkTexts:
        """Texts already packed (`pack`), taken as they are: a load that reads a page at a time
        packs each page's texts and places them in the snapshot's order."""
        texts = cls()
        texts._blobs = blobs
        return texts

    def __len__(self) -> int:
        return len(self._blobs)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> ChunkTexts: ...
    def __getitem__(self, index: int | slice) -> str | ChunkTexts:
        if isinstance(index, slice):
            return ChunkTexts.of_packed(self._blobs[index])
        return _unpack(self._blobs[index])

    def __iter__(self) -> Iterator[str]:
        return (_unpack(b) for b in self._blobs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChunkTexts):
            return self._blobs == other._blobs
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-equal like a list

    def taken(self, rows: Sequence[int]) -> ChunkTexts:
        """These rows, in this order (no decompression)."""
        return ChunkTexts.of_packed([self._blobs[i] for i in rows])

    def plus(self, texts: Iterable[str]) -> ChunkTexts:
        """These texts followed by `texts`."""
        return ChunkTexts.of_packed([*self._blobs, *(pack(t) for t in texts)])

    @property
    def nbytes(self) -> int:
        """The compressed size (without the per-object overhead)."""
        return sum(len(b) for b in self._blobs)
