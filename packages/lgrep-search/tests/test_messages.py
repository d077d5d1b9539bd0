"""The messages a program raises, warns or logs, found in its code and in a question that quotes them."""

from __future__ import annotations

from lgrep_search.messages import MessageIndex, file_messages


def test_messages_are_the_literals_of_lines_that_raise_warn_or_log_cut_at_their_format_holes() -> None:
    python = (
        "def parse(text):\n"
        "    if not text:\n"
        "        raise ValueError('Malformed option description %r, should look like \"opt\"' % text)\n"
        "    name = 'a plain string that nothing needs'\n"
        "    logger.warning(__('no number is assigned for %s: %s'), figtype, labelid)\n"
    )
    assert file_messages([python]) == {
        ("malformed", "option", "description"),
        ("should", "look", "like", "opt"),
        ("no", "number", "is", "assigned", "for"),
    }
    javascript = "throw new Error(`Cannot read the locale ${name} from the cache`);"
    go = 'return fmt.Errorf("unknown compression level %d for the writer", level)'
    rust = 'panic!("index out of bounds: the len is {} but the index is {}", len, index);'
    assert file_messages([javascript]) == {("cannot", "read", "the", "locale"), ("from", "the", "cache")}
    assert file_messages([go]) == {("unknown", "compression", "level"), ("for", "the", "writer")}
    assert file_messages([rust]) == {
        ("index", "out", "of", "bounds", "the", "len", "is"),
        ("but", "the", "index", "is"),
    }
    # Two words, or a few letters, are no message.
    assert file_messages(["raise KeyError('not found')", "raise OSError('a b c d')"]) == set()


def test_a_question_names_the_files_whose_messages_it_quotes_the_longest_quote_kept() -> None:
    index = MessageIndex.of_files(
        {
            "sphinx/domains/std.py": [
                "raise ValueError('Malformed option description %r, should look like \"opt\"' % x)",
                "logger.warning('no number is assigned for %s: %s', a, b)",
            ],
            "sphinx/util/nodes.py": ["logger.warning('no number is assigned for %s', node)"],
            "sphinx/writers/latex.py": ["label = 'no number is assigned for table'  # a plain label"],
        }
    )
    question = (
        "Sphinx 3.2 complains about option:: syntax\n"
        "Warning, treated as error:\n"
        "../../docs/qemu-option-trace.rst.inc:4:Malformed option description '[enable=]PATTERN', should look like "
        '"opt", "-opt args"\n'
        "and also WARNING: no number is assigned for table:\n"
    )
    assert index.quoted(question) == {
        "sphinx/domains/std.py": ("no", "number", "is", "assigned", "for"),
        "sphinx/util/nodes.py": ("no", "number", "is", "assigned", "for"),
    }
    assert index.quoted("an unrelated question about malformed input") == {}


def test_a_fragment_many_files_hold_is_a_phrase_not_a_message() -> None:
    texts = {f"pkg/m{i}.py": ["raise TypeError('the value must be a string')"] for i in range(4)}
    texts["pkg/only.py"] = ["raise TypeError('the frobnicator must be a string')"]
    index = MessageIndex.of_files(texts)
    assert index.quoted("I get: the value must be a string, and the frobnicator must be a string") == {
        "pkg/only.py": ("the", "frobnicator", "must", "be", "a", "string")
    }


def test_an_update_drops_the_changed_files_and_reads_them_again() -> None:
    index = MessageIndex.of_files(
        {
            "a.py": ["raise ValueError('the first message here')"],
            "b.py": ["raise ValueError('the second message here')"],
        }
    )
    updated = index.updated(["a.py", "b.py"], {"b.py": ["raise ValueError('a third message now')"]})
    assert updated.by_path == {"b.py": {("a", "third", "message", "now")}}
    assert index.quoted("the first message here") == {"a.py": ("the", "first", "message", "here")}
    assert updated.quoted("the first message here") == {}


def test_hostile_text_is_read_in_linear_time() -> None:
    # An unterminated quote on a long line, quotes without end, one endless literal: a backtracking
    # matcher would run past the suite's timeout on these.
    texts = ["raise ValueError('" + "a \\" * 100_000, "throw " + '"' * 50_000, "error(`" + "x" * 200_000]
    assert file_messages(texts) == set()
    assert MessageIndex.of_files({"x.py": [*texts, "raise ValueError('ab ab ab ab ab')"]}).quoted("ab " * 50_000) == {
        "x.py": ("ab", "ab", "ab", "ab", "ab")
    }
