"""One definition per answer shape (issue 37, item 5): every MCP tool's output schema is a model
derived from lgrep_core.app.shapes, whose fields are the core shapes' (same names, same types) or
the model's declared extensions, each listed in docs/json.md."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

import anyio
import pytest
from lgrep_core.app import shapes as core
from lgrep_core.app.shapes import Doc
from lgrep_mcp.answers import ANSWERS, Answer, SearchAnswer, derive
from lgrep_mcp.roots import AllowedRoots
from lgrep_mcp.server import _untitled, build_server
from pydantic import BaseModel, ValidationError

DOCS = Path(__file__).resolve().parents[3] / "docs" / "json.md"


def _models(model: type[BaseModel], seen: dict[str, type[Answer]] | None = None) -> dict[str, type[Answer]]:
    """`model` and every answer model its fields hold, by name."""
    seen = {} if seen is None else seen
    assert issubclass(model, Answer), f"{model.__name__} is written by hand, not derived from a core shape"
    seen[model.__name__] = model
    for field in model.model_fields.values():
        for inner in _types(field.annotation):
            if isinstance(inner, type) and issubclass(inner, BaseModel) and inner.__name__ not in seen:
                _models(inner, seen)
    return seen


def _types(tp: Any) -> list[Any]:
    return [tp, *(t for arg in typing.get_args(tp) for t in _types(arg))]


EVERY = {name: m for answer in ANSWERS.values() for name, m in _models(answer).items()}


def test_every_tool_publishes_its_derived_answer_as_its_output_schema(tmp_path: Path) -> None:
    server = build_server(AllowedRoots(tmp_path), cache_dir=tmp_path / "cache")
    tools = anyio.run(server.list_tools)
    assert {t.name for t in tools} == set(ANSWERS)
    for tool in tools:
        assert tool.output_schema == _untitled(ANSWERS[tool.name].model_json_schema()), tool.name


@pytest.mark.parametrize("name", sorted(EVERY))
def test_every_field_is_a_core_field_or_a_declared_extension(name: str) -> None:
    model = EVERY[name]
    core_fields: dict[str, Any] = {}
    for shape in model.shapes:
        for key, hint in typing.get_type_hints(shape, include_extras=True).items():
            core_fields.setdefault(key, hint)
    for key in model.model_fields:
        assert key in core_fields or key in model.extensions, f"{name}.{key} is neither shared nor declared"
        assert not (key in core_fields and key in model.extensions), f"{name}.{key} redefines a shared field"
    assert model.shapes or model.extensions, name


@pytest.mark.parametrize("name", sorted(EVERY))
def test_a_shared_field_keeps_the_core_type(name: str) -> None:
    """A shared field's JSON type is the core field's (a nested shape is an object either way)."""
    model = EVERY[name]
    schema = model.model_json_schema()
    for shape in model.shapes:
        for key, hint in typing.get_type_hints(shape, include_extras=True).items():
            if key not in model.model_fields:
                continue  # left out
            ours = _kinds(schema["properties"][key], schema)
            theirs = _py_kinds(_plain(hint))
            assert ours - {"null"} == theirs - {"null"}, (name, key, ours, theirs)


def _plain(hint: Any) -> Any:
    if typing.get_origin(hint) in (NotRequired, typing.Required):
        hint = typing.get_args(hint)[0]
    return hint


JSON_KINDS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _py_kinds(tp: Any) -> set[str]:
    """The JSON types a core field's Python type allows."""
    if typing.get_origin(tp) is Annotated:
        return _py_kinds(tp.__origin__)
    if typing.is_typeddict(tp) or tp is dict or typing.get_origin(tp) is dict:
        return {"object"}
    if typing.get_origin(tp) is list:
        return {"array"}
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return {k for arg in typing.get_args(tp) for k in _py_kinds(arg)}
    return {JSON_KINDS[tp]}


def _kinds(schema: dict[str, Any], root: dict[str, Any]) -> set[str]:
    """The JSON types a schema allows, `$ref`s and unions followed one level."""
    if "$ref" in schema:
        return {"object"}
    if "anyOf" in schema:
        return {k for s in schema["anyOf"] for k in _kinds(s, root)}
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind or ())


def test_every_extension_is_listed_in_docs_json_md() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## MCP extensions", 1)[1]
    listed = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    declared = {key for model in EVERY.values() for key in model.extensions}
    assert declared == listed


def test_every_core_field_is_in_docs_json_md() -> None:
    text = DOCS.read_text(encoding="utf-8").split("## MCP extensions", 1)[0]
    for shape in core.SHAPES:
        for key in typing.get_type_hints(shape):
            assert f"`{key}`" in text, f"{shape.__name__}.{key}"


def test_an_answer_with_an_undeclared_field_is_refused() -> None:
    data = {"project_root": "/p", "scope": "", "results": [], "stale_files": [], "tokens": 1, "max_tokens": 9}
    SearchAnswer.model_validate(data)
    with pytest.raises(ValidationError, match="hint"):
        SearchAnswer.model_validate({**data, "hint": "an undeclared field"})


class _Renamed(TypedDict):
    path: Annotated[int, Doc("a path as a number")]


class _Added(TypedDict):
    uri: NotRequired[str]


def test_derive_refuses_an_extension_that_redefines_a_shared_field() -> None:
    with pytest.raises(TypeError, match="extension path redefines"):
        derive("Bad", core.LocationJSON, extensions=_Renamed)


def test_derive_refuses_a_nested_model_of_another_shape() -> None:
    release = derive("ReleaseX", core.ReleaseJSON)
    with pytest.raises(TypeError, match="not derived from LocationJSON"):
        derive("Bad", core.TraceJSON, items={"definitions": release})


def test_derive_refuses_a_field_no_shape_has() -> None:
    with pytest.raises(TypeError, match="no field sites"):
        derive("Bad", core.LocationJSON, omit=("sites",))


def test_a_derived_answer_adds_its_extensions_and_leaves_out_what_it_omits() -> None:
    model = derive("Brief", core.LocationJSON, omit=("signature", "kind"), extensions=_Added)
    assert list(model.model_fields) == ["path", "start_line", "end_line", "symbol", "language", "scope", "uri"]
    assert model.extensions == ("uri",)
    assert model.model_fields["path"].description == "File, relative to the project root"
