"""An OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1 with injectable faults, for tests.
Use it as a litellm `openai/<name>` model with `api_base=server.base_url`."""

from __future__ import annotations

import hashlib
import json
import random
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULT_KINDS: tuple[str, ...] = (
    "timeout",  # sleep past the client's timeout, then answer
    "rate_limited",  # 429 with Retry-After
    "server_error",  # 500 or 503
    "connection_reset",  # read the request, reset the socket, send nothing
    "empty",  # 200 with content ""
    "truncated",  # 200 with half the answer and finish_reason "length"
    "non_json",  # 200 with prose instead of the (JSON) answer
    "auth_error",  # 401 whose body echoes the presented key, as some providers do
    "bad_request",  # 400 invalid_request_error
)
ONCE = "_once"  # "<kind>_once": the fault hits only the first time a given request body is seen
NON_JSON_TEXT = "Sure! Based on the documents, I believe the answer is most likely yes."
MARKER = re.compile(r"FAULT:([a-z_]+)")
_AUTH_HEADERS = frozenset({"authorization", "api-key", "x-api-key"})


def _valid_kind(kind: str) -> bool:
    return kind.removesuffix(ONCE) in FAULT_KINDS


@dataclass
class FaultPlan:
    """Which requests fail and how. Precedence: `by_index`, then a `FAULT:<kind>` marker, then `rate`.

    `rate` draws from `random.Random(seed)` once per request in arrival order, so it is
    deterministic for sequential clients.
    """

    by_index: dict[int, str] = field(default_factory=dict)  # 0-based request index -> kind
    rate: float = 0.0
    rate_kinds: tuple[str, ...] = ()
    seed: int = 0
    honour_markers: bool = True
    retry_after: int | None = 1  # Retry-After seconds on 429; None sends no header
    server_error_status: int = 500  # 500 or 503
    timeout_sleep_s: float = 2.0  # must exceed the client's timeout

    def __post_init__(self) -> None:
        bad = [k for k in [*self.by_index.values(), *self.rate_kinds] if not _valid_kind(k)]
        if bad:
            raise ValueError(f"FaultPlan: unknown fault kind(s) {bad}; known: {FAULT_KINDS} (+'{ONCE}')")
        if self.rate and not self.rate_kinds:
            raise ValueError("FaultPlan: rate > 0 needs rate_kinds to draw from")
        if self.server_error_status not in (500, 503):
            raise ValueError(f"FaultPlan: server_error_status must be 500 or 503, got {self.server_error_status}")


def word_count(text: str) -> int:
    """The server's token count: whitespace-separated words, so tests can predict usage exactly."""
    return len(text.split())


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class FakeOpenAIServer:
    """`with FakeOpenAIServer(answer_fn, faults) as srv:` serves at `srv.base_url` until exit.

    `requests` logs every request (body, headers minus credentials, `auth_present`, the fault
    injected); `fault_counts` counts injected faults by base kind.
    """

    def __init__(
        self,
        # A string is the reply's content; a dict {"tool_calls": [{"id", "name", "arguments"}]} calls tools.
        answer_fn: Callable[[list[dict]], str | dict] = lambda messages: "ok",
        faults: FaultPlan | None = None,
        *,
        expected_key: str | None = None,  # when set, any other key gets a 401 that echoes it
    ) -> None:
        self.answer_fn = answer_fn
        self.faults = faults or FaultPlan()
        self.expected_key = expected_key
        self.requests: list[dict[str, Any]] = []
        self.fault_counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._rng = random.Random(self.faults.seed)
        self._seen_once: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> FakeOpenAIServer:
        handler = type("_Handler", (_Handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        # A short poll keeps shutdown() quick: it waits up to one poll interval.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # wakes handlers sleeping out a "timeout" fault
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer: not started; use it as a context manager")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    # -- fault selection -------------------------------------------------------------------------

    def _choose_fault(self, index: int, body: dict, messages: list[dict]) -> str | None:
        plan = self.faults
        kind = plan.by_index.get(index)
        if kind is None and plan.honour_markers:
            marker = _marker_in_last_user_message(messages)
            kind = marker if marker is not None and _valid_kind(marker) else None
        # Draw for every request, used or not, so the sequence does not depend on the markers.
        drawn = self._rng.choice(plan.rate_kinds) if plan.rate and self._rng.random() < plan.rate else None
        if kind is None:
            kind = drawn
        if kind is None or not kind.endswith(ONCE):
            return kind
        base = kind.removesuffix(ONCE)
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        if (base, digest) in self._seen_once:
            return None
        self._seen_once.add((base, digest))
        return base

    def _admit(self, handler: BaseHTTPRequestHandler, body: Any) -> tuple[int, str | None]:
        """Log the request and decide its fault, under one lock so indices and draws are ordered."""
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _AUTH_HEADERS}
        auth_present = any(k.lower() in _AUTH_HEADERS for k in handler.headers.keys())
        with self._lock:
            index = len(self.requests)
            fault = None
            if isinstance(body, dict) and handler.path.rstrip("/").endswith("/chat/completions"):
                fault = self._choose_fault(index, body, body.get("messages") or [])
            if fault is not None:
                self.fault_counts[fault] += 1
            self.requests.append(
                {
                    "index": index,
                    "method": handler.command,
                    "path": handler.path,
                    "body": body,
                    "headers": headers,
                    "auth_present": auth_present,
                    "fault": fault,
                }
            )
        return index, fault


def _marker_in_last_user_message(messages: list[dict]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            match = MARKER.search(_text_of(message.get("content")))
            return match.group(1) if match else None
    return None


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAIServer
    # HTTP/1.0: one request per connection, so a reset or a stalled request never poisons a
    # pooled keep-alive connection that a later test request would reuse.
    protocol_version = "HTTP/1.0"
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output quiet

    def do_GET(self) -> None:
        self.owner._admit(self, None)
        self._send_json(404, _error(f"no route GET {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        index, fault = self.owner._admit(self, body)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send_json(404, _error(f"no route POST {self.path}", "invalid_request_error"))
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return self._send_json(400, _error("body must be JSON with a 'messages' list", "invalid_request_error"))
        if body.get("stream"):
            return self._send_json(400, _error("FakeOpenAIServer does not stream", "invalid_request_error"))
        presented = self._presented_key()
        expected = self.owner.expected_key
        if fault == "auth_error" or (expected is not None and presented != expected):
            # Echo the key verbatim: the worst case a client's error scrubbing must survive.
            return self._send_json(
                401,
                _error(f"Incorrect API key provided: {presented}.", "invalid_request_error", "invalid_api_key"),
            )
        messages: list[dict] = body["messages"]
        if fault is None and self.owner.faults.honour_markers:
            marker = _marker_in_last_user_message(messages)
            if marker is not None and not _valid_kind(marker):
                return self._send_json(400, _error(f"unknown fault marker FAULT:{marker}", "invalid_request_error"))
        return self._serve(index, body, messages, fault)

    def _serve(self, index: int, body: dict, messages: list[dict], fault: str | None) -> None:
        plan = self.owner.faults
        if fault == "connection_reset":
            # SO_LINGER 0 turns close() into an RST: the client sees a reset, not a clean EOF.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return None
        if fault == "rate_limited":
            headers = {} if plan.retry_after is None else {"Retry-After": str(plan.retry_after)}
            return self._send_json(
                429, _error("Rate limit reached for requests", "requests", "rate_limit_exceeded"), headers
            )
        if fault == "server_error":
            return self._send_json(
                plan.server_error_status,
                _error("The server had an error while processing your request.", "server_error"),
            )
        if fault == "bad_request":
            return self._send_json(400, _error("Invalid value for 'temperature'.", "invalid_request_error"))
        if fault == "timeout":
            self.owner._stop.wait(plan.timeout_sleep_s)

        answer = self.owner.answer_fn(messages)
        finish_reason = "stop"
        tool_calls = None
        if isinstance(answer, dict):  # {"tool_calls": [{"id", "name", "arguments"}]}: the model calls tools
            tool_calls = [{"id": c["id"], "type": "function",
                           "function": {"name": c["name"], "arguments": c["arguments"]}} for c in answer["tool_calls"]]
            answer, finish_reason = "", "tool_calls"
        if fault == "empty":
            answer = ""
        elif fault == "truncated":
            answer, finish_reason = answer[: max(1, len(answer) // 2)], "length"
        elif fault == "non_json":
            answer = NON_JSON_TEXT
        prompt_tokens = sum(word_count(_text_of(m.get("content"))) for m in messages if isinstance(m, dict))
        completion_tokens = word_count(answer)
        payload = {
            "id": f"chatcmpl-fake-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer or None, "tool_calls": tool_calls}
                    if tool_calls else {"role": "assistant", "content": answer},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        try:
            self._send_json(200, payload)
        except OSError:
            pass  # a timed-out client has gone away; nothing to deliver

    def _presented_key(self) -> str | None:
        value = self.headers.get("Authorization")
        if value is not None:
            return value.removeprefix("Bearer ").strip()
        return self.headers.get("api-key") or self.headers.get("x-api-key")

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _error(message: str, type_: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}
