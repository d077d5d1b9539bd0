"""The released lgrep.v1 contract (proto/released/lgrep-v1.binpb) is still served by the current code.

`buf breaking` (.ci/run) is the full check; this is its core, offline and inside pytest: every message,
field, enum value, service and RPC of the released image still exists with the same number, name,
type and streaming. Adding is allowed; a change or a removal means lgrep.v2 (DEVELOPERS.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from lgrep.v1 import common_pb2, index_pb2, search_pb2, server_pb2

IMAGE = Path(__file__).resolve().parents[2] / "proto" / "released" / "lgrep-v1.binpb"
CURRENT = {m.DESCRIPTOR.name: m.DESCRIPTOR for m in (common_pb2, index_pb2, search_pb2, server_pb2)}


def _released() -> list[descriptor_pb2.FileDescriptorProto]:
    image = descriptor_pb2.FileDescriptorSet.FromString(IMAGE.read_bytes())  # a buf image reads as one
    return [f for f in image.file if f.package == "lgrep.v1"]


def _current(name: str) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    CURRENT[name].CopyToProto(proto)
    return proto


def test_the_image_holds_the_lgrep_v1_files() -> None:
    assert {f.name for f in _released()} >= {"lgrep/v1/common.proto", "lgrep/v1/index.proto"}
    assert {f.name for f in _released()} <= set(CURRENT)


@pytest.mark.parametrize("released", _released(), ids=lambda f: f.name)
def test_everything_released_is_still_there(released: descriptor_pb2.FileDescriptorProto) -> None:
    current = _current(released.name)
    messages = {m.name: m for m in current.message_type}
    for message in released.message_type:
        assert message.name in messages, f"message {message.name} was removed"
        fields = {f.number: f for f in messages[message.name].field}
        for field in message.field:
            now = fields.get(field.number)
            assert now is not None, f"{message.name}.{field.name} (#{field.number}) was removed"
            assert (now.name, now.type, now.label, now.type_name) == (
                field.name,
                field.type,
                field.label,
                field.type_name,
            ), f"{message.name}.{field.name} (#{field.number}) changed"
    enums = {e.name: {v.number: v.name for v in e.value} for e in current.enum_type}
    for enum in released.enum_type:
        assert enum.name in enums, f"enum {enum.name} was removed"
        for value in enum.value:
            assert enums[enum.name].get(value.number) == value.name, f"{enum.name}.{value.name} changed"
    services = {s.name: {m.name: m for m in s.method} for s in current.service}
    for service in released.service:
        assert service.name in services, f"service {service.name} was removed"
        for method in service.method:
            now = services[service.name].get(method.name)
            assert now is not None, f"{service.name}.{method.name} was removed"
            assert (now.input_type, now.output_type, now.server_streaming, now.client_streaming) == (
                method.input_type,
                method.output_type,
                method.server_streaming,
                method.client_streaming,
            ), f"{service.name}.{method.name} changed"
