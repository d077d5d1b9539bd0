"""fit_results: what is cut, in which order, and that the count is the tokenizer's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lgrep_mcp.budget import MIN_SNIPPET_LINES, SNIPPET_LINES, TokenCounter, compact_json, fit_results, measured


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter()


def _answer(results: int, lines: int) -> dict[str, Any]:
    body = "\n".join(f"    value_{n} = compute_something(value_{n - 1}, retries={n})" for n in range(lines))
    return {
        "project": "/p",
        "results": [
            {"path": f"src/m{i}.py", "start_line": 1, "end_line": lines, "content": body} for i in range(results)
        ],
    }


def test_a_small_answer_is_left_whole_and_counted_exactly(counter: TokenCounter) -> None:
    answer = _answer(2, 5)
    text, tokens = fit_results(answer, "results", counter, 4000)
    assert json.loads(text) == answer and "omitted" not in answer
    assert answer["tokens"] == tokens and abs(tokens - counter.count(text)) <= 2
    assert all("truncated" not in r for r in answer["results"])


def test_snippets_are_cut_to_the_default_lines_first(counter: TokenCounter) -> None:
    answer = _answer(3, SNIPPET_LINES + 10)
    fit_results(answer, "results", counter, 32_000)
    assert all(r["content"].count("\n") == SNIPPET_LINES - 1 and r["truncated"] for r in answer["results"])


def test_lower_results_shrink_before_the_best_and_then_drop(counter: TokenCounter) -> None:
    full = _answer(10, SNIPPET_LINES)
    _, whole = fit_results(json.loads(compact_json(full)), "results", counter, 32_000)
    # A budget a little under the whole: only the lowest results are shortened.
    answer = json.loads(compact_json(full))
    _, tokens = fit_results(answer, "results", counter, whole - 200)
    lines = [r["content"].count("\n") + 1 for r in answer["results"]]
    assert tokens <= whole - 200 and lines[0] == SNIPPET_LINES and lines[-1] == MIN_SNIPPET_LINES
    assert lines == sorted(lines, reverse=True) and "omitted" not in answer
    # A budget far under it: results are dropped from the bottom, and the note says how to get them.
    answer = json.loads(compact_json(full))
    _, tokens = fit_results(answer, "results", counter, 600)
    assert tokens <= 600 and answer["omitted"] > 0
    assert [r["path"] for r in answer["results"]] == [f"src/m{i}.py" for i in range(len(answer["results"]))]
    (note,) = answer["notes"]
    assert "max_tokens" in note and str(answer["omitted"]) in note


def test_existing_notes_are_kept(counter: TokenCounter) -> None:
    answer = {**_answer(10, SNIPPET_LINES), "notes": ["indexed /p first"]}
    fit_results(answer, "results", counter, 600)
    first, dropped = answer["notes"]
    assert first == "indexed /p first" and dropped.endswith("or a narrower path")


def test_measured_counts_itself(counter: TokenCounter) -> None:
    answer: dict[str, Any] = {"x": "word " * 500}
    text, tokens = measured(answer, counter)
    assert answer["tokens"] == tokens and abs(counter.count(text) - tokens) <= 2
