"""wire.CONTRACT_REVISION names one exact lgrep.v1 contract: changing the protos without bumping it fails.

The fingerprint covers the descriptors protoc generated (messages, fields, numbers, types, enum values,
services, RPCs), not the comments, so documentation edits need no bump. When this test fails after a
proto change: bump CONTRACT_REVISION in packages/lgrep-core/src/lgrep_core/rpc/wire/__init__.py and
record the new revision with the fingerprint the failure prints. A client refuses a server of another revision
(lgrep_core.rpc.client), so a bump tells users to restart a daemon left running from the old version.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from lgrep.v1 import common_pb2, index_pb2, search_pb2, server_pb2
from lgrep_core.rpc import wire

# revision -> sha256 of the serialized lgrep.v1 file descriptors. Never edit an old entry.
FINGERPRINTS = {
    1: "016830f84aa6ed41b2f7e5dc6d07cce01ad14138b1f41e440f02349ee31309d4",
    2: "3b44fe32d62baeb8a1e9fc5e8a9604421a97bba4dd7778bfa1cb63ac65a3a1c6",
    3: "5e8afc1a912bac25365d6d0d9da8884314df86129d787d8cb5d45359e8d26c02",
    4: "08736bdfcb97932b0a539d7570f274b67e55e90102306b2d0fc71dbb02293cde",
    5: "aac3d55a2143acb70875ef98940ef1e68d7e7aec802a9dc34e56c3f0ba3cd614",
    6: "277600805279f905d9b900ca14d3a8cc5fab093c9eb449def2f712c4979e5140",
    7: "80c86f5d08720edea96836b55abe2840f90b9b0de378e0d03f6921ebcd99ff27",
    8: "d8d138b73f81c783d58656136361e5c7318fa9cdc9026b867fa7b7098f3f0a5e",
    9: "9d6c344786dc9bca0aba4819ac3b7b5a819a0ff9de4a45d1ec942a78db50812d",
    10: "adbf01c017498e477d295312cc4ef9263a49e04fa41458856a8f5bebb12611b3",
    11: "380b7c7eec6758721874150228d796184d0d1cb4e0865fc2fd2998324dc87bff",
}


def contract_fingerprint() -> str:
    digest = hashlib.sha256()
    for module in sorted((common_pb2, index_pb2, search_pb2, server_pb2), key=lambda m: m.DESCRIPTOR.name):
        digest.update(module.DESCRIPTOR.name.encode())
        digest.update(b"\x00")
        digest.update(module.DESCRIPTOR.serialized_pb)
        digest.update(b"\x00")
    return digest.hexdigest()


def test_every_lgrep_v1_file_is_fingerprinted() -> None:
    protos = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "proto" / "lgrep" / "v1").glob("*.proto"))
    assert protos == sorted(
        m.DESCRIPTOR.name.rsplit("/", 1)[1] for m in (common_pb2, index_pb2, search_pb2, server_pb2)
    )


def test_contract_revision_is_the_newest_recorded() -> None:
    assert max(FINGERPRINTS) == wire.CONTRACT_REVISION, (
        f"CONTRACT_REVISION is {wire.CONTRACT_REVISION}, but revisions up to {max(FINGERPRINTS)} are recorded"
    )


def test_the_protos_are_those_of_the_contract_revision() -> None:
    found = contract_fingerprint()
    assert FINGERPRINTS[wire.CONTRACT_REVISION] == found, (
        f"proto/lgrep/v1 changed since contract revision {wire.CONTRACT_REVISION} was recorded: set "
        f"CONTRACT_REVISION = {wire.CONTRACT_REVISION + 1} in lgrep_core/rpc/wire/__init__.py and add "
        f'{wire.CONTRACT_REVISION + 1}: "{found}" to FINGERPRINTS in {__file__}'
    )
