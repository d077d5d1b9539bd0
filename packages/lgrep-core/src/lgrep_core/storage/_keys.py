"""A set of keys as one sorted array: what the vector phase holds for every chunk of a project.

The vector phase asks which embedding keys of the chunks table have no vector yet. As Python sets of
str those keys cost ~110 bytes each, twice over while the difference is taken: ~45 MB at 250k
chunks, on top of the model. As a sorted numpy array of their bytes (32 for an embedding key) they
cost a third of that, and membership of a whole batch of keys is one `searchsorted`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

__all__ = ["KeySet"]


class KeySet:
    """An immutable set of str keys (any text; embedding keys are 32 hex digits), sorted and unique."""

    __slots__ = ("_keys",)

    def __init__(self, keys: np.ndarray) -> None:
        """`keys`: a sorted array of unique UTF-8 byte strings (use `of` or `from_batches`)."""
        self._keys = keys

    @classmethod
    def of(cls, keys: Iterable[str]) -> KeySet:
        return cls.from_batches([list(keys)])

    @classmethod
    def from_batches(cls, batches: Iterable[Sequence[str]]) -> KeySet:
        """The keys of every batch, each batch made unique as it comes (duplicates cost nothing)."""
        parts: list[np.ndarray] = []
        for batch in batches:
            if batch:
                parts.append(np.unique(_encode(batch)))
        if not parts:
            return cls(np.empty(0, dtype="S1"))
        return cls(np.unique(np.concatenate(parts)) if len(parts) > 1 else parts[0])

    def __len__(self) -> int:
        return int(self._keys.size)

    def __bool__(self) -> bool:
        return self._keys.size > 0

    def __iter__(self) -> Iterator[str]:
        for key in self._keys.tolist():
            yield key.decode("utf-8", "surrogateescape")

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and bool(self.positions([key])[0] >= 0)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeySet):
            return self._keys.shape == other._keys.shape and bool(np.all(self._keys == other._keys))
        if isinstance(other, AbstractSet):
            return len(other) == len(self) and all(isinstance(k, str) and k in self for k in other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking like a set: not hashable

    def __repr__(self) -> str:
        return f"KeySet({len(self)} keys)"

    def difference(self, other: KeySet) -> KeySet:
        """The keys of this set that `other` does not hold."""
        if not self or not other:
            return self
        return KeySet(np.setdiff1d(self._keys, other._keys, assume_unique=True))

    def positions(self, keys: Sequence[str]) -> np.ndarray:
        """For each key, its index in this set's sorted order (0..len-1), or -1 when it is not here."""
        if not keys:
            return np.empty(0, dtype=np.int64)
        wanted = _encode(keys)
        if not self:
            return np.full(len(keys), -1, dtype=np.int64)
        at = np.searchsorted(self._keys, wanted)
        at_clipped = np.minimum(at, self._keys.size - 1)
        found = self._keys[at_clipped] == wanted
        return np.where(found, at_clipped, -1).astype(np.int64)


def _encode(keys: Sequence[str]) -> np.ndarray:
    # numpy's bytes dtype drops trailing NULs when it compares: a key ending in one would equal the
    # key without it. Keys are text (hex digests, paths), so none does; refuse one rather than guess.
    out = np.array([k.encode("utf-8", "surrogateescape") for k in keys], dtype=np.bytes_)
    if any(k.endswith("\x00") for k in keys):
        raise ValueError("a key ends with a NUL character")
    return out
