"""A local server that speaks OpenAI's streaming wire formats, driven by a per-test script.

Fake the wire, not the SDK (STYLE example 21): the real `openai` client talks HTTP to this server on
127.0.0.1, exactly as it would to api.openai.com.

    POST /v1/responses         SSE as the Responses API frames it: `event: <type>\\ndata: <json>\\n\\n`,
                               every event with a `sequence_number` (assigned in order when absent)
    POST /v1/chat/completions  `data: <json>\\n\\n` chunks, then `data: [DONE]\\n\\n`

Bodies are sent with chunked transfer encoding, as OpenAI does, so a connection closed before the
last chunk is a broken response (not a clean end of stream). Each request takes the next scripted
`Reply` for its path; faults are replies too:

    error_reply(429, headers={"retry-after": "7"})           a status error with OpenAI's JSON error body
    responses_stream(events, drop_after=2)                 write two frames, then close the socket
    chat_stream(chunks, delay_before_headers=1.0)          a slow first byte
    chat_stream(chunks[:2], done=False)                    a body that ends cleanly but unfinished
    FakeOpenAI(responses_api=False)                        404 on /v1/responses (no Responses API)

`collect(model, options)` runs one call to the end in a fresh event loop and returns its parts as
wire JSON (an `error` part keeps its exception object); `collect_failure` also returns the
exception that ended the call. Both close the shared SDK clients before the loop closes.

Every request is recorded (method, path, headers, JSON body) with the Authorization header redacted;
`auth_ok` says whether it carried the expected key. A request with no scripted reply gets a 500 and
is listed in `unexpected`; `assert_all_consumed()` fails on leftovers.

`FakeOpenAI(responder=answer)` answers each request by `answer(request)` instead (a server whose
replies follow from what it is sent, as a model's do; it may block, in the server's thread), and
keeps no list of the requests (`answer` journals what it needs).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from stepline.llm.base import LanguageModel, ModelCallOptions
from stepline.llm.openai import aclose_openai_clients
from stepline.llm.stream_parts import ModelStreamPart, V4Error

__all__ = [
    "API_KEY",
    "CHAT_PATH",
    "RESPONSES_PATH",
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "chat_stream",
    "chat_text_chunks",
    "collect",
    "collect_failure",
    "error_reply",
    "responses_stream",
    "responses_text_events",
]

API_KEY = "sk-test-fake-0123456789abcdef"
RESPONSES_PATH = "/v1/responses"
CHAT_PATH = "/v1/chat/completions"


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        status: HTTP status.
        frames: Ready SSE frames (bytes) for a streaming reply; empty for a JSON reply.
        json_body: The JSON body of a non-streaming reply (errors).
        headers: Extra response headers.
        delay_before_headers: Seconds to wait before sending anything (a slow first byte).
        drop_after: Close the connection after this many frames, without finishing the body.
    """

    status: int = 200
    frames: list[bytes] = field(default_factory=list[bytes])
    json_body: Any = None
    headers: dict[str, str] = field(default_factory=dict[str, str])
    delay_before_headers: float = 0.0
    drop_after: int | None = None


def responses_stream(events: list[dict[str, Any]], **options: Any) -> Reply:
    """A Responses API SSE reply; events without a `sequence_number` get the next one."""
    frames: list[bytes] = []
    for number, event in enumerate(events):
        event = {**event, "sequence_number": event.get("sequence_number", number)}
        frames.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    return Reply(frames=frames, **options)


def chat_stream(chunks: list[dict[str, Any]], *, done: bool = True, **options: Any) -> Reply:
    """A Chat Completions SSE reply, closed by `data: [DONE]` unless `done=False`."""
    frames = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]
    if done:
        frames.append(b"data: [DONE]\n\n")
    return Reply(frames=frames, **options)


def error_reply(
    status: int,
    message: str = "error",
    *,
    code: str | None = None,
    error_type: str = "server_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    """A status error with OpenAI's JSON error body."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return Reply(status=status, json_body=body, headers=headers or {})


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received (Authorization redacted; `auth_ok` tells whether the key matched)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    auth_ok: bool


class FakeOpenAI:
    """The server. Use as a context manager; `base_url` ends in `/v1` like OpenAI's."""

    def __init__(
        self,
        *,
        responses_api: bool = True,
        api_key: str = API_KEY,
        responder: Callable[[RecordedRequest], Reply] | None = None,
    ) -> None:
        self.responses_api = responses_api
        self.api_key = api_key
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self.unexpected: list[str] = []
        self._replies: dict[str, deque[Reply]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.01,), name="fake-openai", daemon=True
        )

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, path: str, *replies: Reply) -> None:
        """Queue replies for `path` (`/v1/responses` or `/v1/chat/completions`)."""
        with self._lock:
            self._replies.setdefault(path, deque()).extend(replies)

    def responses(self, *replies: Reply) -> None:
        self.script(RESPONSES_PATH, *replies)

    def chat(self, *replies: Reply) -> None:
        self.script(CHAT_PATH, *replies)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]

    def last_body(self, path: str) -> Any:
        """The JSON body of the last request to `path`."""
        requests = self.requests_to(path)
        assert requests, f"no request to {path}"
        return requests[-1].body

    def assert_all_consumed(self) -> None:
        with self._lock:
            leftovers = {path: len(queue) for path, queue in self._replies.items() if queue}
        assert not leftovers, f"scripted replies were never requested: {leftovers}"
        assert not self.unexpected, f"requests without a scripted reply: {self.unexpected}"

    # --- called from the server thread ------------------------------------------------------

    def _record(self, handler: _Handler, body: Any) -> RecordedRequest:
        headers = {name.lower(): value for name, value in handler.headers.items()}
        auth_ok = headers.get("authorization") == f"Bearer {self.api_key}"
        if "authorization" in headers:
            headers["authorization"] = "Bearer [redacted]"
        request = RecordedRequest(handler.command, handler.path, headers, body, auth_ok)
        if self.responder is None:
            with self._lock:
                self.requests.append(request)
        return request

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if request.path == RESPONSES_PATH and not self.responses_api:
            return Reply(status=404, json_body={"detail": "Not Found"})
        if self.responder is not None:
            return self.responder(request)
        with self._lock:
            queue = self._replies.get(request.path)
            if queue:
                return queue.popleft()
            self.unexpected.append(f"{request.method} {request.path}")
        return error_reply(500, f"fake server: no scripted reply for {request.method} {request.path}")

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or go away mid-reply are part of the script; stay quiet.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # frames go out as written, like a real SSE server
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        fake = self.server.fake
        reply = fake._next_reply(fake._record(self, body))
        if reply.delay_before_headers:
            fake._wait(reply.delay_before_headers)
        try:
            if reply.frames:
                self._stream(reply)
            else:
                self._json(reply)
        except OSError:
            self.close_connection = True

    def _json(self, reply: Reply) -> None:
        payload = json.dumps(reply.json_body).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for count, frame in enumerate(reply.frames):
            if reply.drop_after is not None and count == reply.drop_after:
                self._drop()
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        # Close without the terminating zero-length chunk: the client sees a broken body.
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)


# --- driving a model --------------------------------------------------------------------------


def collect(model: LanguageModel, options: ModelCallOptions) -> list[dict[str, Any]]:
    """Run one call to the end; its parts as wire JSON. Any exception propagates."""
    parts, error = collect_failure(model, options)
    if error is not None:
        raise error
    return parts


def collect_failure(model: LanguageModel, options: ModelCallOptions) -> tuple[list[dict[str, Any]], Exception | None]:
    """Run one call; the parts yielded before it ended, and the exception that ended it (or None)."""

    async def run() -> tuple[list[dict[str, Any]], Exception | None]:
        parts: list[dict[str, Any]] = []
        try:
            async for part in model.stream(options):
                parts.append(_wire(part))
        except Exception as error:
            return parts, error
        finally:
            await aclose_openai_clients()
        return parts, None

    return asyncio.run(run())


def _wire(part: ModelStreamPart) -> dict[str, Any]:
    if isinstance(part, V4Error) and isinstance(part.error, BaseException):
        return {"type": "error", "error": part.error}
    return part.to_wire()


# --- canned streams -----------------------------------------------------------------------------


def responses_text_events(
    text: str, *, response_id: str = "resp_1", item_id: str = "msg_1", model: str = "gpt-4.1"
) -> list[dict[str, Any]]:
    """The events of a plain-text Responses answer, as OpenAI streams them (two text deltas)."""
    response = {"id": response_id, "object": "response", "created_at": 1_700_000_000, "model": model}
    half = len(text) // 2
    return [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
        {"type": "response.in_progress", "response": {**response, "status": "in_progress", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        },
        {
            "type": "response.content_part.added",
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        *(
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": delta,
                "logprobs": [],
            }
            for delta in (text[:half], text[half:])
        ),
        {
            "type": "response.output_text.done",
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "text": text,
            "logprobs": [],
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "id": item_id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        },
        {
            "type": "response.completed",
            "response": {
                **response,
                "status": "completed",
                "usage": {
                    "input_tokens": 12,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 3,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 15,
                },
            },
        },
    ]


def chat_text_chunks(text: str, *, completion_id: str = "chatcmpl-1", model: str = "gpt-4.1") -> list[dict[str, Any]]:
    """The chunks of a plain-text Chat Completions answer with `include_usage` (two text deltas)."""
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model}
    half = len(text) // 2

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], "usage": None}

    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": text[:half]}),
        chunk({"content": text[half:]}),
        chunk({}, "stop"),
        {
            **base,
            "choices": [],
            "usage": {
                "prompt_tokens": 9,
                "completion_tokens": 2,
                "total_tokens": 11,
                "prompt_tokens_details": {"cached_tokens": 4},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        },
    ]
