"""A local fake of the Anthropic Messages API that speaks its streaming wire format.

`FakeAnthropic` serves `POST /v1/messages` on 127.0.0.1 (an ephemeral port, one thread per
connection). Each test scripts the replies in order with `reply(...)`; the server records every
request it receives (headers with credentials redacted, the JSON body) so tests assert exactly
what reached the wire. Point the real `anthropic` client at `fake.base_url`.

Replies:

    StreamReply(events)                   `event: <name>\\ndata: <json>\\n\\n` frames, chunked, ended properly
    StreamReply(events, drop_after=n)     n events, then the socket closes mid-body (FIN; `reset=True`: RST)
    StreamReply(events, first_byte_delay=s)   no bytes at all for s seconds (cut short when the fake closes)
    ErrorReply(status, error_type, message, headers)   an API error body, e.g. 429 with retry-after, 529, 500

`count(n, …)` scripts the answers of `POST /v1/messages/count_tokens` (`{"input_tokens": n}`), kept
apart from the message replies.
A request with no reply left gets a 400 `fake_anthropic` error, and is still recorded. With
`FakeAnthropic(api_key=…)`, a request without that key (as `x-api-key` or `Authorization: Bearer`)
gets the API's 401.
The builders (`message_start`, `text_block`, `thinking_block`, `tool_use_block`, …) produce events
in the shape the real API sends, `ping`s included; `message()` wraps blocks into a whole stream.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ErrorReply",
    "FakeAnthropic",
    "RecordedRequest",
    "SseEvent",
    "StreamReply",
    "error_event",
    "message",
    "message_delta",
    "message_start",
    "message_stop",
    "ping",
    "redacted_thinking_block",
    "server_tool_result_block",
    "server_tool_use_block",
    "text_block",
    "thinking_block",
    "tool_use_block",
]

REDACTED_HEADERS = frozenset({"authorization", "x-api-key"})


@dataclass(frozen=True)
class SseEvent:
    name: str
    data: dict[str, Any]

    def encode(self) -> bytes:
        return f"event: {self.name}\ndata: {json.dumps(self.data)}\n\n".encode()


@dataclass(frozen=True)
class StreamReply:
    events: list[SseEvent]
    drop_after: int | None = None
    reset: bool = False
    first_byte_delay: float = 0.0


@dataclass(frozen=True)
class ErrorReply:
    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeAnthropic:
    """The fake server; use as a context manager (or call `close`)."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._replies: list[StreamReply | ErrorReply] = []
        self._counts: list[int | ErrorReply] = []
        self._lock = threading.Lock()
        self.closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval: `shutdown` waits for it, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-anthropic", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(self, *replies: StreamReply | ErrorReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def count(self, *counts: int | ErrorReply) -> None:
        """Script the answers of `POST /v1/messages/count_tokens`, in order (`{"input_tokens": n}`)."""
        with self._lock:
            self._counts.extend(counts)

    def next_count(self) -> int | ErrorReply | None:
        with self._lock:
            return self._counts.pop(0) if self._counts else None

    @property
    def unused_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def next_reply(self) -> StreamReply | ErrorReply | None:
        with self._lock:
            return self._replies.pop(0) if self._replies else None

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _handler_for(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        server_fake = fake

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake: FakeAnthropic

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length)
        headers = {
            name.lower(): ("<redacted>" if name.lower() in REDACTED_HEADERS else value)
            for name, value in self.headers.items()
        }
        body: dict[str, Any] = json.loads(raw) if raw else {}
        self.server_fake.record(RecordedRequest("POST", self.path, headers, body))
        if not self._authenticated():
            self._error(ErrorReply(401, "authentication_error", "invalid x-api-key"))
            return
        if self.path.split("?")[0] == "/v1/messages/count_tokens":
            self._count()
            return
        reply = self.server_fake.next_reply()
        if reply is None:
            self._error(ErrorReply(400, "fake_anthropic", "no scripted reply left for this request"))
        elif isinstance(reply, ErrorReply):
            self._error(reply)
        else:
            self._stream(reply)

    def _count(self) -> None:
        count = self.server_fake.next_count()
        if count is None:
            self._error(ErrorReply(400, "fake_anthropic", "no scripted token count left for this request"))
        elif isinstance(count, ErrorReply):
            self._error(count)
        else:
            self._json(200, {"input_tokens": count})

    def _authenticated(self) -> bool:
        key = self.server_fake.api_key
        return key is None or key in (self.headers.get("x-api-key"), self.headers.get("authorization", "")[7:])

    def _error(self, reply: ErrorReply) -> None:
        body = {"type": "error", "error": {"type": reply.error_type, "message": reply.message}}
        self._json(reply.status, body, reply.headers)

    def _json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", "req_fake")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, reply: StreamReply) -> None:
        if reply.first_byte_delay and self.server_fake.closing.wait(reply.first_byte_delay):
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", "req_fake")
        self.end_headers()
        for number, event in enumerate(reply.events):
            if reply.drop_after is not None and number >= reply.drop_after:
                self._drop(reset=reply.reset)
                return
            self._chunk(event.encode())
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self, *, reset: bool) -> None:
        """End the connection in the middle of the chunked body."""
        self.wfile.flush()
        self.close_connection = True
        if reset:  # SO_LINGER 0: closing sends RST instead of FIN (the client reads ECONNRESET)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()  # the last reference to the socket besides the connection itself
            self.connection.close()
        else:
            self.connection.shutdown(socket.SHUT_WR)


# --- event builders: the shapes the Messages API streams -------------------------------------


def ping() -> SseEvent:
    return SseEvent("ping", {"type": "ping"})


def message_start(
    *,
    message_id: str = "msg_01",
    model: str = "claude-sonnet-4-6",
    input_tokens: int = 25,
    cache_read: int | None = 0,
    cache_write: int | None = 0,
    output_tokens: int = 1,
) -> SseEvent:
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    return SseEvent(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )


def _block_start(index: int, block: dict[str, Any]) -> SseEvent:
    return SseEvent("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def _delta(index: int, delta: dict[str, Any]) -> SseEvent:
    return SseEvent("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _block_stop(index: int) -> SseEvent:
    return SseEvent("content_block_stop", {"type": "content_block_stop", "index": index})


def text_block(index: int, *chunks: str, citations: list[dict[str, Any]] | None = None) -> list[SseEvent]:
    deltas = [_delta(index, {"type": "text_delta", "text": chunk}) for chunk in chunks]
    cites = [_delta(index, {"type": "citations_delta", "citation": citation}) for citation in citations or []]
    return [_block_start(index, {"type": "text", "text": ""}), *deltas, *cites, _block_stop(index)]


def thinking_block(index: int, *chunks: str, signature: str) -> list[SseEvent]:
    deltas = [_delta(index, {"type": "thinking_delta", "thinking": chunk}) for chunk in chunks]
    return [
        _block_start(index, {"type": "thinking", "thinking": "", "signature": ""}),
        *deltas,
        _delta(index, {"type": "signature_delta", "signature": signature}),
        _block_stop(index),
    ]


def redacted_thinking_block(index: int, data: str) -> list[SseEvent]:
    return [_block_start(index, {"type": "redacted_thinking", "data": data}), _block_stop(index)]


def tool_use_block(index: int, tool_id: str, name: str, *fragments: str, kind: str = "tool_use") -> list[SseEvent]:
    deltas = [_delta(index, {"type": "input_json_delta", "partial_json": fragment}) for fragment in fragments]
    start: dict[str, Any] = {"type": kind, "id": tool_id, "name": name, "input": {}}
    return [
        _block_start(index, start),
        _delta(index, {"type": "input_json_delta", "partial_json": ""}),
        *deltas,
        _block_stop(index),
    ]


def server_tool_use_block(index: int, tool_id: str, name: str, *fragments: str) -> list[SseEvent]:
    """A `server_tool_use` block (web search, web fetch, a code execution sub-tool): its input streamed."""
    return tool_use_block(index, tool_id, name, *fragments, kind="server_tool_use")


def server_tool_result_block(index: int, kind: str, tool_use_id: str, content: Any) -> list[SseEvent]:
    """A `*_tool_result` block (`web_search_tool_result`, …): whole in its start event, no deltas."""
    return [_block_start(index, {"type": kind, "tool_use_id": tool_use_id, "content": content}), _block_stop(index)]


def message_delta(stop_reason: str | None, *, output_tokens: int, **usage: Any) -> SseEvent:
    return SseEvent(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": usage.pop("stop_sequence", None)},
            "usage": {"output_tokens": output_tokens, **usage},
        },
    )


def message_stop() -> SseEvent:
    return SseEvent("message_stop", {"type": "message_stop"})


def error_event(error_type: str, message: str) -> SseEvent:
    return SseEvent("error", {"type": "error", "error": {"type": error_type, "message": message}})


def message(
    *blocks: list[SseEvent],
    stop_reason: str = "end_turn",
    output_tokens: int = 12,
    start: SseEvent | None = None,
    **usage: Any,
) -> list[SseEvent]:
    """A whole streamed message: start, a ping, the blocks (a ping between each), delta and stop."""
    events = [start or message_start(), ping()]
    for block in blocks:
        events += [*block, ping()]
    return [*events, message_delta(stop_reason, output_tokens=output_tokens, **usage), message_stop()]
