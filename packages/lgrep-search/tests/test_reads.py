"""Reading an indexed file from disk (GetFile, skeletons): never out of the project, whatever
changes on disk between the checks of a path and its open."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lgrep_core.domain.errors import InvalidRequestError, NotFoundError
from lgrep_core.domain.models import GetFileRequest
from lgrep_search import reads


def test_a_folder_swapped_for_a_symlink_during_a_read_never_serves_a_file_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_corpus: Any
) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "mod.py").write_text("inside = True\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.py").write_text("SECRET = 'outside the project'\n")
    corpus = make_corpus({"path": "src/mod.py", "content": "inside = True\n"})
    real_open = os.open
    swapped: list[bool] = []

    def open_after_a_swap(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # Whatever the reader checked about the path beforehand, `src` becomes a symlink to a
        # folder outside the project before its first open: the race a check-then-open loses.
        if not swapped:
            swapped.append(True)
            (root / "src").rename(root / "src.moved")
            (root / "src").symlink_to(outside, target_is_directory=True)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_after_a_swap)
    with pytest.raises(InvalidRequestError, match="symbolic link"):
        reads.indexed_text(root.resolve(), corpus, "src/mod.py")
    assert swapped


def test_a_file_deleted_once_it_was_read_is_still_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_corpus: Any
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "mod.py").write_text("inside = True\n")
    corpus = make_corpus({"path": "mod.py", "content": "inside = True\n"})
    real_sanitize = reads.sanitize

    def sanitize_then_delete(text: str) -> Any:
        (root / "mod.py").unlink()  # gone between the read and anything after it
        return real_sanitize(text)

    monkeypatch.setattr(reads, "sanitize", sanitize_then_delete)
    reader = SimpleNamespace(root=root.resolve(), manifest=lambda *_: {})
    piece = reads.get_file(reader, corpus, GetFileRequest(project_root=str(root), path="mod.py"))  # type: ignore[arg-type]
    assert piece.content == "inside = True\n" and piece.stale


def test_a_deleted_file_is_not_found(tmp_path: Path, make_corpus: Any) -> None:
    corpus = make_corpus({"path": "pkg/mod.py", "content": "x = 1\n"})
    with pytest.raises(NotFoundError, match="no longer exists"):
        reads.indexed_text(tmp_path, corpus, "pkg/mod.py")
