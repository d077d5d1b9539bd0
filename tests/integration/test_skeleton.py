"""Skeletons: the indexer's outline of a file (lgrep_index.outline) rendered by search
(lgrep_search.skeleton), for the shapes real code has."""

from __future__ import annotations

import pytest
from lgrep_index.outline import outline_file
from lgrep_search.skeleton import render_skeleton


def _skeleton(path: str, text: str) -> str:
    outline = outline_file(path, text)
    assert outline is not None
    return render_skeleton(path, text, outline)[0]


def test_python_signatures_docstrings_decorators_and_elided_bodies() -> None:
    text = (
        '"""Module doc."""\n'
        "import os\n"
        "from typing import (\n    Any,\n    Final,\n)\n\n\n"
        "class Store:\n"
        '    """Keeps things.\n\n    More words.\n    """\n\n'
        "    @property\n"
        "    def size(self) -> int:\n"
        "        return len(self.items)\n\n"
        "    def put(\n        self,\n        key: str,\n        value: Any,\n    ) -> None:\n"
        '        """Store value under key."""\n'
        "        self.items[key] = value\n"
        "        os.sync()\n"
        "        return None\n"
    )
    shape = _skeleton("store.py", text)
    assert shape == (
        "import os\n"
        "from typing import (\n    Any,\n    Final,\n)\n\n"
        "class Store:\n"
        '    """Keeps things."""\n'
        "    ⋯ 5 lines (L10-14)\n"
        "    @property\n"
        "    def size(self) -> int:\n"
        "        return len(self.items)\n"
        "    def put(\n        self,\n        key: str,\n        value: Any,\n    ) -> None:\n"
        '        """Store value under key."""\n'
        "        ⋯ 4 lines (L24-27)\n"
    )


def test_imports_wherever_they_stand_and_multi_line_ones_whole() -> None:
    # Zig imports at the bottom, a TypeScript export list after the code: nothing is dropped
    zig = _skeleton("m.zig", 'fn add(a: i32, b: i32) i32 {\n    return a + b;\n}\n\nconst std = @import("std");\n')
    assert "fn add(a: i32, b: i32) i32 {" in zig
    ts = _skeleton("m.ts", 'import { x } from "./x";\n\nfunction f(): number {\n  return x;\n}\n\nexport { f };\n')
    assert ts.index('import { x } from "./x";') < ts.index("function f(): number {") < ts.index("export { f };")
    rust = _skeleton("lib.rs", "use crate::{\n    a::B,\n    c,\n};\n\n#[cfg(test)]\nfn f() {\n    1\n}\n")
    assert rust == "use crate::{\n    a::B,\n    c,\n};\n\n#[cfg(test)]\nfn f() {\n    1\n}\n"
    inline = (
        "mod redirect;\n\n#[cfg(test)]\nmod tests {\n    use crate::Json;\n\n"
        "    fn works() {\n        let x = 1;\n        x\n    }\n}\n"
    )
    assert _skeleton("lib.rs", inline) == (
        "mod redirect;\n\n#[cfg(test)]\nmod tests {\n    ⋯ 2 lines (L5-6)\n"
        "    fn works() {\n        ⋯ 3 lines (L8-10)\n"
    )
    long_export = "export {\n" + "".join(f"  /** doc {i} */\n  type Name{i},\n" for i in range(40)) + "} from './x';\n"
    assert _skeleton("shared.ts", long_export).startswith("export {\n")


def test_attributes_are_not_docs_and_keep_their_arguments() -> None:
    kotlin = '@Deprecated(\n    "use B",\n    level = DeprecationLevel.WARNING\n)\nclass A(\n    x: Int\n) : B()\n'
    assert _skeleton("A.kt", kotlin) == kotlin
    csharp = _skeleton(
        "A.cs", "namespace N\n{\n    /// <summary>Does A.</summary>\n    [Obsolete]\n    class A\n    {\n    }\n}\n"
    )
    assert "[Obsolete]" in csharp and "// [Obsolete]" not in csharp and "<summary>Does A.</summary>" in csharp


def test_brace_bodies_elide_their_lines_and_show_one_statement() -> None:
    java = _skeleton(
        "A.java",
        "class A {\n  int get() {\n    return 1;\n  }\n\n  void run() {\n    a();\n    b();\n  }\n}\n",
    )
    assert java == "class A {\n  int get() {\n    return 1;\n  }\n  void run() {\n    ⋯ 3 lines (L7-9)\n"
    php = _skeleton("E.php", "<?php\n\nnamespace N;\n\nclass E extends \\RuntimeException\n{\n}\n")
    assert "⋯" not in php  # an empty body is not worth a line


@pytest.mark.parametrize("path", ["notes.txt", "data.json", "Makefile"])
def test_files_without_a_known_structure_have_no_outline(path: str) -> None:
    assert outline_file(path, "a = 1\n") is None


def test_markdown_skeleton_is_its_headings() -> None:
    shape = _skeleton("README.md", "# Title\n\nintro\n\n## Install\n\nsteps\nmore\n\n## Use\n\nwords\n")
    assert shape.splitlines()[0] == "# Title" and "## Install" in shape and "## Use" in shape
    assert "steps" not in shape
