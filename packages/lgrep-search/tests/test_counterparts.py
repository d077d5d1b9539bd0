"""A file's counterpart (counterparts.py): its header, its type declarations, its stub."""

import pytest
from lgrep_core.domain.models import Chunk, ChunkKind, ContentType
from lgrep_search.corpus import Corpus
from lgrep_search.counterparts import counterpart, counterpart_role


def _corpus(*paths: str) -> Corpus:
    return Corpus.of_chunks(
        [
            Chunk(p, "c", 1, 1, f"int f{i}(void);", ChunkKind.FUNCTION, f"f{i}", (), "", ContentType.CODE)
            for i, p in enumerate(paths)
        ]
    )


def _pair(corpus: Corpus, path: str) -> str | None:
    f = counterpart(corpus, corpus.file_numbers[path])
    return None if f is None else corpus.files[f]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("programs/fileio.c", "programs/fileio.h"),
        ("programs/fileio.h", "programs/fileio.c"),
        ("src/plugin/utc/index.js", "types/plugin/utc.d.ts"),
        ("types/plugin/utc.d.ts", "src/plugin/utc/index.js"),
        ("lib/parser.ts", "lib/parser.d.ts"),
        ("pkg/core.pyi", "pkg/core.py"),
        ("include/zstd_ldm.h", "lib/zstd_ldm.cpp"),
    ],
)
def test_a_file_pairs_with_the_other_half_of_its_unit(path: str, expected: str) -> None:
    corpus = _corpus(
        "programs/fileio.c",
        "programs/fileio.h",
        "src/plugin/utc/index.js",
        "types/plugin/utc.d.ts",
        "lib/parser.ts",
        "lib/parser.d.ts",
        "pkg/core.py",
        "pkg/core.pyi",
        "include/zstd_ldm.h",
        "lib/zstd_ldm.cpp",
    )
    assert _pair(corpus, path) == expected


def test_the_same_folder_wins_and_several_elsewhere_are_no_pair() -> None:
    corpus = _corpus("a/util.c", "a/util.h", "b/util.h", "c/main.c", "x/main.h", "y/main.h", "README.c")
    assert _pair(corpus, "a/util.c") == "a/util.h"
    assert _pair(corpus, "b/util.h") is None  # a/util.c has its own header; which of two is a guess
    assert _pair(corpus, "c/main.c") is None
    assert _pair(corpus, "README.c") is None


def test_files_of_no_pair_have_no_role() -> None:
    corpus = _corpus("src/index.js", "src/app.go", "src/lib.rs")
    assert _pair(corpus, "src/app.go") is None and counterpart_role("src/app.go") is None
    assert _pair(corpus, "src/index.js") is None  # no `src.d.ts` and no index.d.ts beside it
    assert counterpart_role("types/x.d.ts") == "declaration" and counterpart_role("x.hpp") == "header"
