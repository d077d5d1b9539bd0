"""Requests refuse what the wire cannot carry: a line, offset or limit past int32 is a bad request
with a clear message, never an "internal error" from the protobuf conversion (found by the CLI's
in-memory tests: `lgrep related FILE 99999999999` reported a bug)."""

from __future__ import annotations

from typing import Any

import pytest
from lgrep_core.domain.errors import InvalidRequestError
from lgrep_core.domain.models import MAX_WIRE_INT, FindRelatedRequest, GetFileRequest, ListFilesRequest, TraceRequest
from lgrep_core.rpc import wire

ROOT = "/srv/project"


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda n: GetFileRequest(ROOT, "a.py", n, 0), "start_line"),
        (lambda n: GetFileRequest(ROOT, "a.py", 1, n), "end_line"),
        (lambda n: FindRelatedRequest(ROOT, "a.py", n), "line"),
        (lambda n: ListFilesRequest(ROOT, limit=n), "limit"),
        (lambda n: TraceRequest(ROOT, "verify", offset=n), "offset"),
    ],
)
def test_a_number_past_int32_is_refused_and_the_largest_one_travels(make: Any, what: str) -> None:
    with pytest.raises(InvalidRequestError, match=f"{what} must be at most 2,147,483,647"):
        make(MAX_WIRE_INT + 1).validate()
    request = make(MAX_WIRE_INT).validate()
    message = wire.ROUTES[type(request)].to_proto(request)
    assert getattr(message, what) == MAX_WIRE_INT


def test_a_request_type_must_say_how_it_is_checked() -> None:
    from lgrep_core.domain.models import Request

    class Unchecked(Request[int]):
        __slots__ = ()

    with pytest.raises(TypeError, match="abstract method validate"):
        Unchecked()  # pyright: ignore[reportAbstractUsage]
