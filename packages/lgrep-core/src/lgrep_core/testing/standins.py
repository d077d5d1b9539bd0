"""Stand-ins for the cloud embedding APIs, on 127.0.0.1, for tests.

`EmbeddingStandIn` is a real HTTP server that speaks the REST contract of Voyage's or OpenAI's
`POST /v1/embeddings` — request fields, bearer-key authentication, per-request limits, the reply's
shape and `usage`, and each API's error bodies (`{"detail": ...}` for Voyage, `{"error": {...}}` for
OpenAI) — so the providers are tested through their vendors' SDKs, over a socket, as in use.

Its vectors are deterministic and meaningful (`FakeEmbedder`'s hashed words: a text and a query
that share identifiers are close), of any dimension; `offset` adds a constant component to every
vector, which squeezes all cosine similarities towards 1 (a provider with another score range).
It bills one token per word or punctuation mark, as a tokenizer other than cl100k would.

Faults are scripted: `fail_next(kind, count, ...)` makes the next `count` requests (of documents,
of queries, or any) answer 429 with Retry-After, 500, a malformed body, vectors of a wrong
dimension, or no answer until the client gives up. `noise` gives each text a little direction of its
own, so that texts sharing no word do not all tie at a similarity of 0. Every request is kept in `requests` (texts,
input type, model, key, time) for a test to read what "left the machine".
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

from lgrep_core.testing.fakes import FakeEmbedder

__all__ = ["EmbeddingStandIn", "Fault", "SeenRequest"]

Flavor = Literal["voyage", "openai"]
FaultKind = Literal["429", "500", "503", "malformed", "dimension", "hang", "disconnect"]
_BILLED = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class SeenRequest:
    texts: list[str]
    input_type: str | None  # Voyage: "document" | "query"; OpenAI: None
    model: str
    key: str
    dimensions: int | None
    time: float
    answered: str  # "ok", or the fault it got


@dataclass(slots=True)
class Fault:
    kind: FaultKind
    count: int
    applies_to: Literal["document", "query", "any"] = "any"
    retry_after: float | None = None
    seconds: float = 30.0  # "hang": how long before the server gives up on answering
    match: str | None = None  # only requests with a text containing this


@dataclass(slots=True)
class _State:
    flavor: Flavor
    key: str | None
    dimension: int
    offset: float
    max_texts: int
    max_tokens: int
    latency: float = 0.0
    noise: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    faults: deque[Fault] = field(default_factory=deque[Fault])
    requests: list[SeenRequest] = field(default_factory=list[SeenRequest])
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)


class EmbeddingStandIn:
    """A Voyage or OpenAI embeddings API on 127.0.0.1 (use as a context manager)."""

    def __init__(
        self,
        flavor: Flavor,
        *,
        key: str | None = "test-key",
        dimension: int = 64,
        offset: float = 0.0,
        max_texts: int | None = None,
        max_tokens: int | None = None,
        latency: float = 0.0,
        noise: float = 0.0,
    ) -> None:
        self.state = _State(
            latency=latency,
            noise=noise,
            flavor=flavor,
            key=key,
            dimension=dimension,
            offset=offset,
            max_texts=max_texts or (1000 if flavor == "voyage" else 2048),
            max_tokens=max_tokens or (120_000 if flavor == "voyage" else 300_000),
        )
        state = self.state

        class Handler(_Handler):
            pass

        Handler.state = state
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="standin", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[SeenRequest]:
        with self.state.lock:
            return list(self.state.requests)

    def texts(self, input_type: str | None = "document") -> list[str]:
        """Every text received in a request that was answered, of one input type (Voyage) or all."""
        return [
            t
            for r in self.requests
            if r.answered == "ok" and (input_type is None or r.input_type in (input_type, None))
            for t in r.texts
        ]

    def fail_next(
        self,
        kind: FaultKind,
        count: int = 1,
        *,
        applies_to: Literal["document", "query", "any"] = "any",
        retry_after: float | None = None,
        seconds: float = 30.0,
        match: str | None = None,
    ) -> None:
        with self.state.lock:
            self.state.faults.append(Fault(kind, count, applies_to, retry_after, seconds, match))

    def clear_faults(self) -> None:
        with self.state.lock:
            self.state.faults.clear()

    @property
    def max_in_flight(self) -> int:
        """The most requests it was answering at once."""
        return self.state.max_in_flight

    def __enter__(self) -> EmbeddingStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.state.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @staticmethod
    def billed_tokens(text: str) -> int:
        return len(_BILLED.findall(text))


class _Handler(BaseHTTPRequestHandler):
    state: _State
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`
        return

    def do_POST(self) -> None:
        st = self.state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/embeddings":
            self._error(404, f"no route {self.path}")
            return
        key = (self.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        try:
            body = json.loads(raw)
            texts = body["input"]
            if isinstance(texts, str):
                texts = [texts]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise TypeError
            model = str(body["model"])
        except (ValueError, KeyError, TypeError):
            self._error(400 if st.flavor == "openai" else 422, "the body is not a valid embeddings request")
            return
        input_type = body.get("input_type") if st.flavor == "voyage" else None
        dims = body.get("output_dimension") if st.flavor == "voyage" else body.get("dimensions")
        kind = "query" if input_type == "query" else "document"
        fault = self._take_fault(kind, texts)
        seen = SeenRequest(texts, input_type, model, key, dims, time.time(), fault.kind if fault else "ok")
        if st.key is not None and key != st.key:
            seen = SeenRequest(texts, input_type, model, key, dims, time.time(), "401")
            self._record(seen)
            self._error(401, "Provided API key is invalid." if st.flavor == "voyage" else "Incorrect API key provided")
            return
        tokens = [EmbeddingStandIn.billed_tokens(t) for t in texts]
        if not texts or any(not t for t in texts):
            self._record(SeenRequest(texts, input_type, model, key, dims, time.time(), "400"))
            self._error(400, "input must be a non-empty list of non-empty strings")
            return
        if len(texts) > st.max_texts or sum(tokens) > st.max_tokens:
            self._record(SeenRequest(texts, input_type, model, key, dims, time.time(), "400"))
            self._error(
                400,
                f"The batch has {len(texts)} texts and {sum(tokens)} tokens; the limits are "
                f"{st.max_texts} texts and {st.max_tokens} tokens per request.",
            )
            return
        self._record(seen)
        with st.lock:
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            if fault is not None and self._answer_fault(fault):
                return
            if st.latency:
                st.closing.wait(st.latency)
            self._answer(texts, tokens, model, dims, fault)
        finally:
            with st.lock:
                st.in_flight -= 1

    def _answer(self, texts: list[str], tokens: list[int], model: str, dims: Any, fault: Fault | None) -> None:
        st = self.state
        dimension = int(dims) if dims else st.dimension
        if fault is not None and fault.kind == "dimension":
            dimension += 3
        vectors = _vectors(texts, dimension, st.offset, st.noise)
        data = [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vectors)]
        if st.flavor == "voyage":
            reply: dict[str, Any] = {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"total_tokens": sum(tokens)},
            }
        else:
            reply = {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": sum(tokens), "total_tokens": sum(tokens)},
            }
        self._send(200, json.dumps(reply).encode())

    def _take_fault(self, kind: str, texts: list[str]) -> Fault | None:
        st = self.state
        with st.lock:
            for fault in st.faults:
                if fault.match is not None and not any(fault.match in t for t in texts):
                    continue
                if fault.applies_to in (kind, "any") and fault.count > 0:
                    fault.count -= 1
                    if fault.count == 0:
                        st.faults.remove(fault)
                    return fault
        return None

    def _answer_fault(self, fault: Fault) -> bool:
        """Answer with the fault; False for a fault that shapes a normal reply."""
        if fault.kind == "429":
            headers = {"retry-after": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            self._error(429, "You have exceeded your rate limit.", headers)
        elif fault.kind in ("500", "503"):
            self._error(int(fault.kind), "The server had an error while processing your request.")
        elif fault.kind == "malformed":
            self._send(200, b'{"object": "list", "data": [{"embedding": [0.1, ', content_type="application/json")
        elif fault.kind == "hang":
            self.state.closing.wait(fault.seconds)
            self.close_connection = True
        elif fault.kind == "disconnect":
            self.close_connection = True
            self.connection.close()
        else:
            return False
        return True

    def _record(self, seen: SeenRequest) -> None:
        with self.state.lock:
            self.state.requests.append(seen)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        if self.state.flavor == "voyage":
            body = {"detail": message}
        else:
            body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        self._send(status, json.dumps(body).encode(), headers=headers)

    def _send(
        self, status: int, data: bytes, *, headers: dict[str, str] | None = None, content_type: str = "application/json"
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (a timeout test)
            self.close_connection = True


_FAKES: dict[int, FakeEmbedder] = {}


def _vectors(texts: list[str], dimension: int, offset: float, noise: float = 0.0) -> list[list[float]]:
    """FakeEmbedder's unit vectors; with `offset` c, of one dimension fewer plus a last component c,
    so that after normalising every cosine s becomes (s + c²) / (1 + c²): the same order, squeezed
    towards 1."""
    inner = dimension - 1 if offset else dimension
    fake = _FAKES.setdefault(inner, FakeEmbedder(inner, "standin"))
    matrix = np.asarray(fake.embed_documents(texts), dtype=np.float64)
    if noise:  # a little of each text's own direction: texts that share no word are not all tied at 0
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()[:8], "little")
            matrix[i] += noise * np.random.default_rng(seed).standard_normal(inner) / np.sqrt(inner)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    if offset:
        matrix = np.hstack([matrix, np.full((len(texts), 1), offset)])
    return [[round(float(x), 7) for x in row] for row in matrix]
