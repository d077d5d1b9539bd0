"""The call graph's language modules on their own: which project files an import names."""

from __future__ import annotations

from lgrep_search.languages import ProjectFiles, builtin_names, family, find_module

PATHS = [
    "src/pkg/__init__.py",  # 0
    "src/pkg/auth.py",  # 1
    "src/pkg/json.py",  # 2
    "web/src/util.ts",  # 3
    "web/src/app.ts",  # 4
    "packages/server/src/index.ts",  # 5
    "internal/store/store.go",  # 6
    "internal/store/doc.md",  # 7
    "cmd/main.go",  # 8
    "crate/src/lib.rs",  # 9
    "crate/src/net/mod.rs",  # 10
    "crate/src/net/tcp.rs",  # 11
    "java/com/acme/Auth.java",  # 12
    "java/com/acme/Token.java",  # 13
]


def names(files: ProjectFiles, found: tuple[int, ...] | None) -> list[str] | None:
    return None if found is None else [files.paths[g] for g in found]


def test_python_finds_relative_and_absolute_modules_and_leaves_libraries() -> None:
    files = ProjectFiles(PATHS)
    assert names(files, find_module(files, 1, "python", ".", "json", qual="")) == ["src/pkg/json.py"]
    assert names(files, find_module(files, 1, "python", "pkg.auth", "", qual="")) == ["src/pkg/auth.py"]
    assert find_module(files, 1, "python", "json", "", qual="") is None  # the standard library's, not pkg/json.py


def test_javascript_finds_relative_files_and_own_packages() -> None:
    files = ProjectFiles(PATHS)
    assert names(files, find_module(files, 4, "typescript", "./util.js", "f", qual="")) == ["web/src/util.ts"]
    assert names(files, find_module(files, 4, "typescript", "@acme/server", "f", qual="")) == [
        "packages/server/src/index.ts"
    ]
    assert find_module(files, 4, "typescript", "zod", "z", qual="") is None


def test_go_rust_and_java() -> None:
    files = ProjectFiles(PATHS)
    assert names(files, find_module(files, 8, "go", "example.com/x/internal/store", "", qual="")) == [
        "internal/store/store.go"
    ]
    assert find_module(files, 8, "go", "fmt", "", qual="") is None
    assert names(files, find_module(files, 9, "rust", "crate::net", "tcp", qual="")) == ["crate/src/net/tcp.rs"]
    assert names(files, find_module(files, 10, "rust", "super", "", qual="")) == ["crate/src/lib.rs"]
    assert find_module(files, 9, "rust", "std::io", "Read", qual="") is None
    assert names(files, find_module(files, 12, "java", "com.acme", "Token", qual="")) == ["java/com/acme/Token.java"]
    assert names(files, find_module(files, 12, "java", "com.acme", "*", qual="")) == [
        "java/com/acme/Auth.java",
        "java/com/acme/Token.java",
    ]


def test_the_file_itself_and_languages_without_a_finder() -> None:
    files = ProjectFiles(PATHS)
    assert find_module(files, 3, "typescript", "#", "a", qual="") == (3,)
    assert find_module(files, 3, "ruby", "set", "", qual="") == ()


def test_families_and_builtins() -> None:
    assert family("tsx") == family("javascript") == "js"
    assert family("ruby") == "ruby"
    assert "len" in builtin_names(family("python"))
    assert builtin_names("ruby") == frozenset()
