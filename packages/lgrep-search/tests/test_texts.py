"""Chunk texts kept compressed read back exactly, in any order."""

from __future__ import annotations

from lgrep_search.texts import ChunkTexts

TEXTS = ["def f():\n    return 1\n", "", "naïve — 日本語 \U0001f600", "x" * 10_000, "lone \udcff surrogate"]


def test_texts_read_back_exactly() -> None:
    texts = ChunkTexts(TEXTS)
    assert len(texts) == len(TEXTS) and list(texts) == TEXTS
    assert [texts[i] for i in range(len(TEXTS))] == TEXTS and texts[-1] == TEXTS[-1]
    assert list(texts[1:3]) == TEXTS[1:3]


def test_taken_and_plus_keep_each_text_with_its_row() -> None:
    texts = ChunkTexts(TEXTS)
    assert list(texts.taken([3, 0, 0])) == [TEXTS[3], TEXTS[0], TEXTS[0]]
    assert list(texts.taken([4]).plus(["new"])) == [TEXTS[4], "new"]
    assert texts.taken(range(len(TEXTS))) == texts and texts != ChunkTexts(TEXTS[:-1])


def test_code_is_held_in_well_under_its_size() -> None:
    code = "\n".join(f"    def method_{i}(self, value):\n        return self.items[{i}] + value" for i in range(20))
    assert ChunkTexts([code] * 10).nbytes < 0.5 * 10 * len(code)
