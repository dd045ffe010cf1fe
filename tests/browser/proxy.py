"""A fault-injecting HTTP proxy between the browser and the dev server, on 127.0.0.1.

It forwards every request unchanged (upstream over HTTP/1.0, so the body is not chunked) and can
damage the next SSE response of a kind, the way a network does: cut it after N events (the
browser sees a broken chunked body, a network error), deliver every event twice, hand the whole
body over in one write (thousands of events in one network chunk), hold its end (`[DONE]` and the
close) until the test releases it, so the stream is still open while the page shows what came
before, or stall it right after a given event (the answer's first delta) until released; stall the
next resume stream after its approval requests (the page follows the wait and hears nothing more
until released); and answer the next resume requests with 502. Every request is recorded as
(method, path, status).
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from typing import cast


@dataclass
class Faults:
    drop_chat_after: int | None = None
    """Cut the next `POST /api/chat` response after this many SSE data events."""
    duplicate_next_chat: bool = False
    """Send every event of the next `POST /api/chat` response twice."""
    coalesce_next_chat: bool = False
    """Send the whole next `POST /api/chat` response in a single chunk, once it is complete."""
    fail_resumes: int = 0
    """Answer this many `GET /api/chat/{id}/stream` with 502."""
    hold_next_chat_end: threading.Event | None = None
    """Hold the next `POST /api/chat` response's `[DONE]` and its close until this event is set."""
    stall_next_chat_at: tuple[bytes, threading.Event] | None = None
    """Relay the next `POST /api/chat` response up to and including its first event that contains
    these bytes (b'"text-delta"': the answer has begun), then nothing more until the event is set: the
    page shows that moment for as long as the test needs, however fast the server is."""
    stall_next_resume: threading.Event | None = None
    """Relay the next `GET /api/chat/{id}/stream` up to its first event with an approval request, then
    nothing more (what the server sends waits in the proxy) until this event is set."""


@dataclass
class FaultProxy:
    upstream: tuple[str, int]
    faults: Faults = field(default_factory=Faults)
    requests: list[tuple[str, str, int]] = field(default_factory=list[tuple[str, str, int]])
    dropped: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    # -- one connection, one request ------------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        try:
            self._handle(client)
        except OSError:
            pass
        finally:
            client.close()

    def _take(self, method: str, path: str) -> dict[str, object]:
        with self._lock:
            faults = self.faults
            plan: dict[str, object] = {}
            if method == "POST" and path == "/api/chat":
                if faults.drop_chat_after is not None:
                    plan["drop"] = faults.drop_chat_after
                    faults.drop_chat_after = None
                if faults.duplicate_next_chat:
                    plan["duplicate"] = True
                    faults.duplicate_next_chat = False
                if faults.coalesce_next_chat:
                    plan["coalesce"] = True
                    faults.coalesce_next_chat = False
                if faults.hold_next_chat_end is not None:
                    plan["hold"] = faults.hold_next_chat_end
                    faults.hold_next_chat_end = None
                if faults.stall_next_chat_at is not None:
                    plan["stall_at"] = faults.stall_next_chat_at
                    faults.stall_next_chat_at = None
            resume = method == "GET" and path.startswith("/api/chat/") and path.endswith("/stream")
            if resume and faults.fail_resumes:
                faults.fail_resumes -= 1
                plan["fail"] = True
            elif resume and faults.stall_next_resume is not None:
                plan["stall"] = faults.stall_next_resume
                faults.stall_next_resume = None
            return plan

    def _handle(self, client: socket.socket) -> None:
        head, body = _read_request(client)
        if head is None:
            return
        lines = head.split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        path = target.split("?", 1)[0]
        plan = self._take(method, path)
        if plan.get("fail"):
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            self.requests.append((method, path, 502))
            return
        headers = [h for h in lines[1:] if h and not h.lower().startswith(("connection:", "keep-alive:"))]
        upstream = socket.create_connection(self.upstream)
        try:
            request = "\r\n".join([f"{method} {target} HTTP/1.0", *headers, "connection: close", "", ""])
            upstream.sendall(request.encode("latin-1") + body)
            self._relay(client, upstream, method, path, plan)
        finally:
            upstream.close()

    def _relay(
        self, client: socket.socket, upstream: socket.socket, method: str, path: str, plan: dict[str, object]
    ) -> None:
        raw = b""
        while b"\r\n\r\n" not in raw:
            data = upstream.recv(65536)
            if not data:
                return
            raw += data
        head, rest = raw.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        self.requests.append((method, path, status))
        headers = [h for h in lines[1:] if not h.lower().startswith(("connection:", "transfer-encoding:"))]
        sse = any(h.lower().startswith("content-type: text/event-stream") for h in headers)
        if not sse:
            client.sendall(
                ("\r\n".join([f"HTTP/1.1 {lines[0].split(' ', 1)[1]}", *headers, "connection: close", "", ""])).encode(
                    "latin-1"
                )
            )
            client.sendall(rest)
            while data := upstream.recv(65536):
                client.sendall(data)
            return
        response_head = "\r\n".join(
            [
                f"HTTP/1.1 {lines[0].split(' ', 1)[1]}",
                *headers,
                "transfer-encoding: chunked",
                "connection: close",
                "",
                "",
            ]
        )
        client.sendall(response_head.encode("latin-1"))
        self._relay_sse(client, upstream, rest, plan)

    def _relay_sse(self, client: socket.socket, upstream: socket.socket, rest: bytes, plan: dict[str, object]) -> None:
        drop = plan.get("drop")
        duplicate = bool(plan.get("duplicate"))
        coalesce = bool(plan.get("coalesce"))
        hold = plan.get("hold")
        stall = plan.get("stall")
        stall_at = plan.get("stall_at")
        buffer = rest
        held: list[bytes] = []
        events = 0

        def send(payload: bytes) -> None:
            if payload:
                client.sendall(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")

        while True:
            *complete, buffer = buffer.split(b"\n\n")
            out: list[bytes] = []
            for event in complete:
                block = event + b"\n\n"
                if isinstance(hold, threading.Event) and event.endswith(b"data: [DONE]"):
                    send(b"".join(out))
                    out = []
                    hold.wait(60)
                out.append(block)
                if duplicate and b"\nid:" in b"\n" + event:
                    out.append(block)
                if isinstance(stall_at, tuple) and cast(tuple[bytes, threading.Event], stall_at)[0] in event:
                    send(b"".join(out))  # up to and including this event, then nothing until released
                    out = []
                    cast(tuple[bytes, threading.Event], stall_at)[1].wait(60)
                    stall_at = None
                if any(line.startswith(b"data:") for line in event.split(b"\n")):
                    events += 1
                    if drop is not None and events >= int(str(drop)):
                        send(b"".join(out))
                        self.dropped += 1
                        client.shutdown(socket.SHUT_RDWR)  # mid-body, no final chunk: a network error
                        return
            if coalesce:
                held.extend(out)
            else:
                send(b"".join(out))
            if isinstance(stall, threading.Event) and any(b'"tool-approval-request"' in block for block in out):
                stall.wait(60)
                stall = None
            data = upstream.recv(65536)
            if not data:
                break
            buffer += data
        send(b"".join(held) + buffer)
        client.sendall(b"0\r\n\r\n")


def _read_request(client: socket.socket) -> tuple[str | None, bytes]:
    raw = b""
    while b"\r\n\r\n" not in raw:
        data = client.recv(65536)
        if not data:
            return None, b""
        raw += data
    head, body = raw.split(b"\r\n\r\n", 1)
    text = head.decode("latin-1")
    length = 0
    for line in text.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        data = client.recv(65536)
        if not data:
            break
        body += data
    return text, body
