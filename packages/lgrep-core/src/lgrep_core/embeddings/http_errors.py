"""Reading what an HTTP API said about a failed request, the same way for every cloud provider."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["RETRYABLE_STATUS", "retry_after_s", "short_body"]

# Statuses worth another try: rate limits, a server's failure or overload, a gateway's timeout.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})


def retry_after_s(headers: Mapping[str, Any] | Any) -> float | None:
    """Seconds a server asks to wait: `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    if headers is None:
        return None
    get = getattr(headers, "get", None)
    if get is None:
        return None
    millis = get("retry-after-ms") or get("Retry-After-Ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = get("retry-after") or get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def short_body(body: object, limit: int = 200) -> str:
    """A response body as one short line for an error message."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
