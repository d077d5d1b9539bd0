"""A task-length question (an issue pasted whole) is read by its parts; a short one as before."""

import time

import numpy as np
from lgrep_search.lexical import query_terms
from lgrep_search.query import parse_query
from lgrep_search.question import is_task_question, parse_question
from lgrep_search.retrieval import question_windows

ISSUE = """is_upper() raises IndexError for tall matrices
The function Matrix.is_upper raises an IndexError for a 4x2 matrix of zeros.
```
>>> sympy.zeros(4,2).is_upper
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/usr/lib/python3/site-packages/sympy/matrices/matrices.py", line 1112, in is_upper
    for i in range(1, self.rows)
  File "sympy/matrices/dense.py", line 119, in __getitem__
    return self.extract(i, j)
IndexError: Index out of range: a[2]
```
The code for `is_upper()` is in sympy.matrices.matrices and calls `a2idx`.
"""


def test_an_issue_is_read_by_its_parts() -> None:
    q = parse_question(ISSUE)
    assert q.title == "is_upper() raises IndexError for tall matrices"
    assert [(f.path, f.line, f.function) for f in q.frames][1:] == [
        ("/usr/lib/python3/site-packages/sympy/matrices/matrices.py", 1112, "is_upper"),
        ("sympy/matrices/dense.py", 119, "__getitem__"),
    ]
    assert "sympy/matrices/dense.py" in q.paths and not any(p.startswith("<") for p in q.paths)
    assert q.errors == ("IndexError",)
    assert "sympy.matrices.matrices" in q.dotted and "Matrix.is_upper" in q.dotted
    assert {"is_upper", "extract", "a2idx", "zeros"} <= set(q.identifiers)
    assert q.title_names[0] == "is_upper" and "IndexError" in q.title_names
    assert "is_upper" in q.called and "range" not in q.called  # builtins are nobody's answer
    # The traceback's own framing words are not names of the program.
    assert not {"Traceback", "recent", "File", "line", "stdin"} & set(q.identifiers)
    assert "is_upper" in q.code and "Traceback" not in q.prose


def test_only_long_or_multi_line_questions_are_tasks() -> None:
    assert not is_task_question("how are files split into chunks")
    assert is_task_question("a title\nfirst line\nsecond line")
    assert is_task_question("word " * 50)
    short = parse_query("how does the router match paths")
    assert short.parts is None and short.weights is None


def test_a_task_weighs_its_terms_by_count_title_and_names() -> None:
    q = parse_query(ISSUE)
    assert q.parts is not None and q.weights is not None and len(q.weights) == len(q.terms)
    weight = dict(zip(q.terms, q.weights, strict=True))
    assert len(set(q.terms)) == len(q.terms)  # each term once, its count in the weight
    (upper,) = query_terms("upper")
    (function,) = query_terms("function")
    assert weight[upper] > weight[function] + 1.5  # in the title and in a name, vs once in prose
    assert q.definition_names[0] == "is_upper"  # the title's name first


def test_the_dense_channel_sees_every_window_of_a_long_question() -> None:
    text = "Title line\n" + "\n".join(f"line {n} " + "x" * 90 for n in range(60))
    windows = question_windows(text, "Title line", size=1000)
    assert len(windows) == 6
    assert all(len(w) <= 1000 + len("Title line\n") for w in windows)
    assert all(w.startswith("Title line") for w in windows)
    joined = "\n".join(w.removeprefix("Title line\n") for w in windows[1:])
    assert "line 59 " in joined and "line 10 " in windows[0] + joined  # nothing is cut
    one_long_line = question_windows("T\n" + "y" * 2500, "T", size=1000)
    assert sum(w.count("y") for w in one_long_line) == 2500


def test_hostile_text_is_parsed_in_linear_time() -> None:
    for text in ("a" * 30_000 + "!", 'File "' * 5000, "`" * 30_000, "x." * 15_000, "    a\n" * 5000):
        started = time.perf_counter()
        parse_question(text)
        assert time.perf_counter() - started < 2.0, text[:20]


# --------------------------------------------------------------------- every language's stacks

JAVA = """NPE when a number ends the input
Exception in thread "main" java.lang.NullPointerException
\tat com.fasterxml.jackson.core.json.ReaderBasedJsonParser._parseNumber(ReaderBasedJsonParser.java:1234)
\tat com.fasterxml.jackson.core.json.ReaderBasedJsonParser.nextToken(ReaderBasedJsonParser.java:700)
\tat com.example.App.main(App.java:10)
"""
GO = """panic: runtime error: invalid memory address or nil pointer dereference
goroutine 1 [running]:
github.com/zeromicro/go-zero/core/stores/redis.(*Redis).Get(0x0, {0x1, 0x2})
\t/home/u/go/pkg/mod/github.com/zeromicro/go-zero/core/stores/redis/redis.go:123 +0x1d
main.main()
\t/home/u/app/main.go:12 +0x25
"""
RUST = """thread 'main' panicked at 'index out of bounds', src/fmt/format/mod.rs:12:5
stack backtrace:
   0: tracing_subscriber::fmt::format::Writer::write_str
             at ./tracing-subscriber/src/fmt/format/mod.rs:123:9
   1: app::main
             at ./src/main.rs:5:5
"""
JS_AND_C = """TypeError: Cannot read properties of undefined (reading 'format')
    at Object.format (/app/node_modules/dayjs/plugin/utc/index.js:1:234)
    at render (src/components/Card.tsx:12:5)
import utc from 'dayjs/plugin/utc'
==1==ERROR: AddressSanitizer: heap-buffer-overflow
    #0 0x4f2b1c in ZSTD_decompressStream /src/zstd/lib/decompress/zstd_decompress.c:1234:5
    #1 0x4f2b1d in main /src/zstd/programs/zstdcli.c:99:5
App\\Http\\Kernel::handle fails too
"""


def _frames(text: str) -> list[tuple[str, str]]:
    return [(f.path, f.function) for f in parse_question(text).frames]


def test_jvm_frames_name_the_packages_file_and_the_method_innermost_last() -> None:
    assert _frames(JAVA) == [
        ("com/example/App.java", "main"),
        ("com/fasterxml/jackson/core/json/ReaderBasedJsonParser.java", "nextToken"),
        ("com/fasterxml/jackson/core/json/ReaderBasedJsonParser.java", "_parseNumber"),
    ]
    assert parse_question(JAVA).called == ("main", "nextToken", "_parseNumber")


def test_go_panics_pair_each_function_with_its_file() -> None:
    assert _frames(GO) == [
        ("/home/u/app/main.go", "main"),
        ("/home/u/go/pkg/mod/github.com/zeromicro/go-zero/core/stores/redis/redis.go", "Get"),
    ]


def test_rust_backtraces_and_paths_give_frames_and_modules() -> None:
    q = parse_question(RUST)
    assert [(f.path, f.function) for f in q.frames][:2] == [
        ("./src/main.rs", "main"),
        ("./tracing-subscriber/src/fmt/format/mod.rs", "write_str"),
    ]
    assert len(q.frames) == 2  # where it panicked is the backtrace's file: one frame names it
    # `a::b::c` as a module, also without its crate (a path seldom repeats it)
    assert {"tracing_subscriber.fmt.format.Writer.write_str", "fmt.format.Writer.write_str"} <= set(q.dotted)


def test_v8_sanitizer_frames_imports_and_namespaces() -> None:
    q = parse_question(JS_AND_C)
    assert [(f.path, f.function) for f in q.frames][:4] == [
        ("src/components/Card.tsx", "render"),
        ("/app/node_modules/dayjs/plugin/utc/index.js", "format"),
        ("/src/zstd/programs/zstdcli.c", "main"),
        ("/src/zstd/lib/decompress/zstd_decompress.c", "ZSTD_decompressStream"),
    ]
    assert len(q.frames) == 4  # the `path:line` fallback repeats none of them
    assert {"App.Http.Kernel", "Http.Kernel"} <= set(q.dotted)
    assert q.imports == ("dayjs.plugin.utc", "plugin.utc")  # what the report's code imports, kept apart
    assert "ZSTD_decompressStream" in q.called


def test_a_log_of_thousands_of_paths_keeps_a_bounded_number_of_frames() -> None:
    log = "build failed\n" + "".join(f"src/mod{i}/file{i}.c:{i}: warning\n" for i in range(5000))
    started = time.perf_counter()
    q = parse_question(log)
    assert len(q.frames) <= 200 and time.perf_counter() - started < 2.0


def test_a_task_questions_windows_are_embedded_in_one_call_when_the_provider_can() -> None:
    from lgrep_search.retrieval import embed_question

    class Together:
        def __init__(self) -> None:
            self.calls: list[list[str]] = []

        def embed_query(self, text: str) -> np.ndarray:
            self.calls.append([text])
            return np.ones(4, dtype=np.float32)

        def embed_queries(self, texts: list[str]) -> np.ndarray:
            self.calls.append(list(texts))
            return np.stack([np.full(4, float(len(t)), dtype=np.float32) for t in texts])

    question = parse_query("T\n" + "word " * 600)
    provider = Together()
    vector = embed_question(provider, question)  # type: ignore[arg-type]
    assert len(provider.calls) == 1 and len(provider.calls[0]) > 1  # one call, every window
    assert np.isclose(np.linalg.norm(vector), 1.0)
    short = Together()
    embed_question(short, parse_query("how are files split"))  # type: ignore[arg-type]
    assert short.calls == [["how are files split"]]


def test_links_to_a_repository_hosts_files_name_their_paths() -> None:
    q = parse_question(
        "Calling tz() overrides locale\n"
        "I believe this line overrides the current locale:\n"
        "https://github.com/iamkun/dayjs/blob/a9d7d0398d22ebd4bfc3812ca0134a97606d54d9/src/plugin/timezone/index.js#L98\n"
        "and see https://gitlab.com/group/sub/proj/-/blob/main/lib/a.rb, "
        "https://raw.githubusercontent.com/o/r/v1.2/pkg/b.go or https://bitbucket.org/o/r/src/dev/c.py?at=dev.\n"
        "Nothing from https://github.com/o/r/issues/12 or https://example.com/blob/x/d.py.\n"
    )
    assert q.paths == ("src/plugin/timezone/index.js", "lib/a.rb", "pkg/b.go", "c.py")


def test_ruby_and_php_frames_ruby_requires_and_go_imports() -> None:
    q = parse_question(
        "Cart total is nil after a refund\n"
        "```\n"
        "NoMethodError: undefined method `+' for nil\n"
        "/app/lib/shop/cart.rb:12:in 'Shop::Cart#total'\n"
        "\tfrom /app/app/controllers/carts_controller.rb:5:in `block in show'\n"
        "PHP Fatal error:  Uncaught TypeError\n"
        "#0 /var/www/src/Shop/Cart.php(42): App\\Shop\\Cart->total()\n"
        "#1 /var/www/public/index.php(7): handle()\n"
        "```\n"
        "```ruby\nrequire 'shop/cart'\nrequire_relative '../lib/shop/refund'\n```\n"
        '```go\nimport (\n\t"fmt"\n\t"google.golang.org/grpc/balancer/grpclb"\n)\n```\n'
    )
    assert [(f.path, f.function) for f in q.frames] == [
        ("/app/app/controllers/carts_controller.rb", "show"),
        ("/app/lib/shop/cart.rb", "total"),
        ("/var/www/public/index.php", "handle"),
        ("/var/www/src/Shop/Cart.php", "total"),
    ]
    assert {"shop.cart", "lib.shop.refund", "shop.refund"} <= set(q.imports)
    # a Go package is a folder, named by its own file: balancer/grpclb/grpclb.go
    assert {"balancer.grpclb.grpclb", "grpclb.grpclb"} <= set(q.imports)
