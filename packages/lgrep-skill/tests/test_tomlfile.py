"""The TOML editor sets or removes one table and leaves every other byte alone."""

from __future__ import annotations

import pytest
from lgrep_core.domain.errors import ConfigError
from lgrep_skill import tomlfile

PATH = ["mcp_servers", "lgrep"]
ENTRY = {"command": "/opt/lgrep/bin/lgrep", "args": ["mcp"]}

DOCUMENTS = [
    "",
    "\n",
    'model = "o3"\n',
    '# only a comment\nmodel = "o3"  # trailing\n\n\n',
    '[projects."/home/me/x"]\ntrust_level = "trusted"\n',
    '[mcp_servers.other]\ncommand = "x"\nargs = [\n  "a", # why\n  "b",\n]\n\n[tui]\nnotifications = true\n',
    "[mcp_servers]\n",
    "[mcp_servers]\n# mine\n\n[x]\ny = 1\n",
    # A header-looking line inside a multi-line string is text, not a table.
    'notes = """\n[mcp_servers.lgrep]\ncommand = "not real"\n"""\n',
    "s = '''\n[mcp_servers.lgrep]\n'''\n",
    'a = "quote \\" [x]"\nb = { c = 1, d = [2, 3] }\n',
    'mcp_servers.other.command = "x"\n',
    "[[profiles]]\nname = 'a'\n",
    'model = "o3"\r\n\r\n[tui]\r\nnotifications = true\r\n',  # Windows line ends
    '[ mcp_servers . "other" ]  # spaced, quoted\ncommand = "x"\n',
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_set_then_remove_gives_back_the_same_bytes(text: str) -> None:
    added = tomlfile.set_table(text, PATH, ENTRY)
    assert added.startswith(text)
    doc = tomlfile.loads(added)
    assert doc["mcp_servers"]["lgrep"] == ENTRY
    before = tomlfile.loads(text)
    assert {k: v for k, v in doc.items() if k != "mcp_servers"} == {
        k: v for k, v in before.items() if k != "mcp_servers"
    }
    assert tomlfile.set_table(added, PATH, ENTRY) == added  # idempotent
    assert tomlfile.remove_table(added, PATH) == text


def test_a_spaced_quoted_header_of_ours_is_found_and_edited() -> None:
    text = '[ mcp_servers . "lgrep" ]  # mine\ncommand = "/old"\nargs = ["mcp"]\n'
    after = tomlfile.set_table(text, PATH, ENTRY)
    assert after == text.replace("/old", "/opt/lgrep/bin/lgrep")
    assert tomlfile.remove_table(after, PATH) == ""


def test_an_existing_table_is_edited_in_place() -> None:
    text = (
        "[mcp_servers.lgrep]  # mine\n"
        'command = "/old" # moved\n'
        "startup_timeout_sec = 30\n"
        "\n"
        "[mcp_servers.lgrep.env]\n"
        'X = "1"\n'
        "\n"
        "[other]\n"
        "k = 1\n"
    )
    after = tomlfile.set_table(text, PATH, ENTRY)
    assert after == text.replace('"/old"', '"/opt/lgrep/bin/lgrep"').replace("# mine\n", '# mine\nargs = ["mcp"]\n')
    assert tomlfile.remove_table(after, PATH) == "[other]\nk = 1\n"


def test_a_multi_line_value_is_replaced_whole() -> None:
    text = '[mcp_servers.lgrep]\ncommand = "lgrep"\nargs = [\n  "mcp",\n  "/abs/project", # old\n]\nenabled = true\n'
    after = tomlfile.set_table(text, PATH, {"command": "lgrep", "args": ["mcp"]})
    assert after == '[mcp_servers.lgrep]\ncommand = "lgrep"\nargs = ["mcp"]\nenabled = true\n'


def test_strings_are_written_as_toml_reads_them() -> None:
    odd = 'C:\\lgrep "x"\t\x7f\u00e9'
    after = tomlfile.set_table("", PATH, {"command": odd, "args": []})
    assert tomlfile.loads(after)["mcp_servers"]["lgrep"] == {"command": odd, "args": []}


@pytest.mark.parametrize(
    "text",
    [
        'mcp_servers = { other = { command = "x" } }\n',
        '[mcp_servers]\nlgrep = { command = "x" }\n',
        'mcp_servers.lgrep.command = "x"\n',
    ],
)
def test_forms_it_does_not_rewrite_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="edit it by hand"):
        tomlfile.set_table(text, PATH, ENTRY)


def test_a_file_toml_cannot_read_is_an_error_with_where() -> None:
    with pytest.raises(ConfigError, match=r"config.toml: .*line 2"):
        tomlfile.set_table("a = 1\nb = \n", PATH, ENTRY, "config.toml")


def test_removing_what_is_not_there_changes_nothing() -> None:
    assert tomlfile.remove_table('model = "o3"', PATH) == 'model = "o3"'


def test_removal_keeps_the_blank_line_and_comment_of_the_table_after_ours() -> None:
    # Codex appends its `[projects.*]` after our table; they, and what sits before their header, stay.
    original = 'model = "o3"\n'
    added = tomlfile.set_table(original, PATH, ENTRY)
    later = '\n# a folder I trust\n[projects."/home/me/x"]\ntrust_level = "trusted"\n'
    assert tomlfile.remove_table(added + later, PATH) == original + later
    # The user's own table, first in the file, with a comment after it: the comment stays.
    mine = '[mcp_servers.lgrep]\ncommand = "lgrep"\n# about the next one\n[tui]\nx = 1\n'
    assert tomlfile.remove_table(mine, PATH) == "# about the next one\n[tui]\nx = 1\n"


def test_nesting_past_the_json_bound_is_refused_not_a_recursion_error() -> None:
    # tomllib reads a header thousands of keys deep; copying or comparing it then recursed past the limit.
    from lgrep_skill import jsonc

    deepest = "[" + ".".join(["a"] * (jsonc.MAX_DEPTH - 1)) + "]\nx = 1\n"  # the root and 199 tables
    assert tomlfile.remove_table(deepest, PATH) == deepest
    for text in (
        "[" + ".".join(["a"] * jsonc.MAX_DEPTH) + "]\n",
        "[" + ".".join(["a"] * 3000) + "]\n",
        "x = " + "[" * 250 + "]" * 250 + "\n",
    ):
        for attempt in (tomlfile.loads, lambda t, s: tomlfile.remove_table(t, PATH, s)):
            with pytest.raises(ConfigError, match=r"^config.toml: .*too deeply nested to edit safely"):
                attempt(text, "config.toml")


def test_a_number_too_long_to_convert_is_a_config_error_naming_the_place() -> None:
    with pytest.raises(ConfigError) as info:
        tomlfile.loads("[x]\nn = " + "9" * 5000 + "\n", "config.toml")
    assert info.value.message == "config.toml: line 2 column 5: a number 5,000 characters long: too long to read"


@pytest.mark.parametrize(
    "text",
    [
        '[mcp_servers.lgrep]\ncommand = "a"\n\n[mcp_servers.lgrep]\ncommand = "b"\n',
        '[mcp_servers.lgrep]\ncommand = "a"\ncommand = "b"\n',
    ],
)
def test_a_key_or_table_defined_twice_is_a_clear_error(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        tomlfile.set_table(text, PATH, ENTRY, "config.toml")
    message = info.value.message
    assert message.startswith("config.toml: ") and "line " in message
    assert message.endswith(
        "a key or table is defined twice, which TOML does not allow (the client cannot read the file either): "
        "remove one"
    )
