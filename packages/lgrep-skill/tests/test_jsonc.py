"""The JSONC editor changes one member and leaves every other byte alone."""

from __future__ import annotations

import json

import pytest
from lgrep_core.domain.errors import ConfigError
from lgrep_skill import jsonc

ENTRY = {"type": "local", "command": ["/opt/lgrep/bin/lgrep", "mcp"], "enabled": True}

DOCUMENTS = [
    "{}\n",
    "{}",
    '{\n  "$schema": "https://opencode.ai/config.json"\n}\n',
    '{\n  "mcp": {\n    "other": {"type": "local", "command": ["x"]}\n  }\n}\n',
    '{\n    "mcp": {\n        "a": {"command": ["a"]},\n        "b": {"command": ["b"]}\n    }\n}\n',
    '{"mcp": {"other": {"command": ["x"]}}}',
    '{\n\t"mcp": {\n\t\t"other": {}\n\t}\n}\n',
    # JSONC: comments, trailing commas, a comment on the last member's line
    '{\n  // models\n  "model": "a/b", /* inline */\n'
    '  "mcp": {\n    "other": {"command": ["x"]}, // keep me\n  },\n}\n',
    '{\n  "mcp": {\n    // nothing yet\n  }\n}\n',
    '{\n  "mcp": {}, "x": 1\n}\n',
    '{ "mcp": { "other": 1, } }',
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_set_then_remove_gives_back_the_same_bytes(text: str) -> None:
    added = jsonc.set_member(text, ["mcp", "lgrep"], ENTRY)
    assert jsonc.loads(added)["mcp"]["lgrep"] == ENTRY
    before = jsonc.loads(text)
    after = jsonc.loads(added)
    # Everything else is still there, with the same values.
    assert {k: v for k, v in after.items() if k != "mcp"} == {k: v for k, v in before.items() if k != "mcp"}
    assert {k: v for k, v in after["mcp"].items() if k != "lgrep"} == before.get("mcp", {})
    assert jsonc.set_member(added, ["mcp", "lgrep"], ENTRY) == added  # idempotent
    removed = jsonc.remove_member(added, ["mcp", "lgrep"])
    if "mcp" in before:
        assert removed == text
    else:  # the `mcp` object was created: it stays, empty, for the caller to drop
        assert jsonc.loads(removed) == {**before, "mcp": {}}
        assert jsonc.remove_member(removed, ["mcp"]) in (text, text.replace("\n}", "}"))


def test_strict_json_stays_strict_json() -> None:
    text = json.dumps({"numStartups": 3, "projects": {"/p": {"x": [1, 2]}}, "mcpServers": {"a": {}}}, indent=2)
    added = jsonc.set_member(text, ["mcpServers", "lgrep"], {"command": "/x", "args": ["mcp"]})
    assert json.loads(added)["mcpServers"] == {"a": {}, "lgrep": {"command": "/x", "args": ["mcp"]}}
    assert json.loads(jsonc.remove_member(added, ["mcpServers", "lgrep"])) == json.loads(text)
    assert jsonc.remove_member(added, ["mcpServers", "lgrep"]) == text


def test_a_changed_value_is_replaced_in_place() -> None:
    text = '{\n  // mine\n  "mcp": {\n    "lgrep": {"command": ["old"]}, // note\n    "z": 1\n  }\n}\n'
    out = jsonc.set_member(text, ["mcp", "lgrep"], {"command": ["new"]})
    assert "// mine" in out and "// note" in out and '"z": 1' in out
    assert jsonc.loads(out)["mcp"] == {"lgrep": {"command": ["new"]}, "z": 1}


def test_the_first_of_several_members_is_removed_cleanly() -> None:
    text = '{\n  "mcp": {\n    "lgrep": {"command": ["x"]},\n    "other": 1\n  }\n}\n'
    assert jsonc.remove_member(text, ["mcp", "lgrep"]) == '{\n  "mcp": {\n    "other": 1\n  }\n}\n'


def test_missing_members_are_left_alone() -> None:
    text = '{"a": 1}'
    assert jsonc.remove_member(text, ["mcp", "lgrep"]) == text
    assert jsonc.remove_member(text, ["b"]) == text


def test_strings_with_comment_markers_and_escapes() -> None:
    text = '{"url": "http://x//y", "q": "a \\" /* b */", "mcp": {}}'
    out = jsonc.set_member(text, ["mcp", "lgrep"], {"command": ["é"]})
    assert jsonc.loads(out) == {"url": "http://x//y", "q": 'a " /* b */', "mcp": {"lgrep": {"command": ["é"]}}}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1,, }', "line 1 column 9"),
        ('{\n  "a": 1\n  "b": 2\n}', "line 3 column 3"),
        ('{"a": tru}', "line 1 column 7"),
        ('{"a": "x', "unterminated string"),
        ("{/* open", "unterminated /* comment"),
        ('{"a": 1} x', "after the value"),
        ("", "end of file"),
    ],
)
def test_malformed_text_is_a_config_error_naming_the_place(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        jsonc.parse(text, "opencode.json")
    assert "opencode.json" in info.value.message and where in info.value.message


def test_a_member_that_is_not_an_object_on_the_path_is_refused() -> None:
    with pytest.raises(ConfigError, match="mcp is not an object"):
        jsonc.set_member('{"mcp": [1]}', ["mcp", "lgrep"], {}, "x.json")
    with pytest.raises(ConfigError, match="not a JSON object"):
        jsonc.set_member("[1]", ["mcp", "lgrep"], {}, "x.json")


@pytest.mark.parametrize(
    "text",
    [
        '{"l": []}',
        '{"l": ["a"]}',
        '{"l": ["a", "b"]}',
        '{"l": ["a",]}',
        '{\n  "l": [\n    "a"\n  ]\n}\n',
        '{\n  "l": [\n    "a", // mine\n  ]\n}\n',
        '{"x": 1}',
        # only comments in the list: they stay where they were
        '{\n  "l": [ // mine\n  ]\n}\n',
        '{\n  "l": [\n    // approved by hand\n  ]\n}\n',
        '{"l": [ /* none */ ]}',
        '{"l": [/* none */]}',
    ],
)
def test_add_then_remove_an_item_gives_back_the_same_bytes(text: str) -> None:
    added = jsonc.add_item(text, ["l"], "lgrep")
    assert jsonc.loads(added)["l"] == [*jsonc.loads(text).get("l", []), "lgrep"]
    assert jsonc.add_item(added, ["l"], "lgrep") == added
    removed = jsonc.remove_item(added, ["l"], "lgrep")
    if "l" in jsonc.loads(text):
        assert removed == text
    else:
        assert jsonc.loads(removed) == {**jsonc.loads(text), "l": []}


def test_an_item_the_user_placed_in_the_middle_is_removed_cleanly() -> None:
    assert jsonc.remove_item('{"l": ["a", "lgrep", "b"]}', ["l"], "lgrep") == '{"l": ["a", "b"]}'
    text = '{\n  "l": [\n    "lgrep",\n    "b"\n  ]\n}'
    assert jsonc.remove_item(text, ["l"], "lgrep") == '{\n  "l": [\n    "b"\n  ]\n}'


def test_nesting_is_bounded_by_a_clear_error_not_a_recursion_error() -> None:
    ok = "[" * jsonc.MAX_DEPTH + "]" * jsonc.MAX_DEPTH
    assert jsonc.parse(ok).end == len(ok)
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ConfigError, match=r"cfg.json: line 1 column \d+: .*too deeply nested to edit safely"):
        jsonc.parse(deep, "cfg.json")
    with pytest.raises(ConfigError, match="too deeply nested"):
        jsonc.set_member('{"x": ' + '{"y": ' * 300 + "1" + "}" * 300 + "}", ["mcp", "lgrep"], 1)


def test_a_key_twice_in_one_object_is_refused_by_name_line_and_column() -> None:
    # Clients keep one of the two (JSON.parse the last): whichever lgrep showed or edited, the other
    # could be the one that runs, so neither is read.
    text = '{\n  "mcpServers": {\n    "lgrep": {"command": "evil"},\n    "lgrep": {"command": "lgrep"}\n  }\n}\n'
    for attempt in (
        lambda: jsonc.loads(text, "mcp.json"),
        lambda: jsonc.remove_member(text, ["mcpServers", "lgrep"], "mcp.json"),
        lambda: jsonc.set_member(text, ["mcpServers", "lgrep"], {}, "mcp.json"),
    ):
        with pytest.raises(ConfigError) as info:
            attempt()
        assert info.value.message == (
            'mcp.json: line 4 column 5: "lgrep" appears twice in the same object; lgrep cannot tell which one '
            "the client uses: remove one"
        )
    assert jsonc.loads('{"a": {"x": 1}, "b": {"x": 2}}') == {"a": {"x": 1}, "b": {"x": 2}}  # other objects: fine


def test_a_number_too_long_to_convert_is_a_config_error_naming_the_place() -> None:
    # json.loads raises ValueError past 4,300 digits (Python's int limit): it was an "internal error".
    with pytest.raises(ConfigError) as info:
        jsonc.loads('{\n  "n": ' + "9" * 5000 + "\n}", "settings.json")
    assert info.value.message == "settings.json: line 2 column 8: a number 5,000 characters long: too long to read"
    assert jsonc.loads('{"n": 1e999, "m": ' + "9" * 4000 + "}")["m"] == int("9" * 4000)
