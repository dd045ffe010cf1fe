"""A local AppSync Event API speaking the real wire protocol, on two ports of 127.0.0.1.

moto has no AppSync Events, so this fakes the wire, not the client (STYLE example 21):

    HTTP      POST /event  {"channel", "events": [<JSON strings>]} → {"successful": [...], "failed": []}
    WebSocket /event/realtime, subprotocols `aws-appsync-event-ws` + `header-<base64url JSON>`:
              connection_init → connection_ack {connectionTimeoutMs}; "ka" every `ka_seconds`;
              subscribe {id, channel, authorization} → subscribe_success | subscribe_error;
              each published event → data {id, event}; unsubscribe → unsubscribe_success

Every request is authorised as IAM would be: the SigV4 signature (service `appsync`) is
recomputed with botocore from the signed headers the request names and `CREDENTIALS`, over the
body the protocol signs ("{}" to connect, `{"channel"}` to subscribe, the publish body), and a
request that does not verify is refused (HTTP 401, a refused handshake, `subscribe_error`).

Faults: `drop_connections()` closes every socket at once (the client sees an abnormal close);
`refuse_connections = True` refuses handshakes from then on. Recorded: each publish (channel,
events, headers), each handshake's authorization headers, and how many `data` messages went out.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from stepline.aws.appsync_auth import EventApi, EventApiSigner

__all__ = ["CREDENTIALS", "REGION", "FakeEventApi", "Published", "signer_for"]

CREDENTIALS = Credentials("AKIDFAKEEVENTAPI0001", "fake-event-api-secret-key-0123456789", "fake-session-token")
REGION = "us-east-1"


def signer_for(api: EventApi) -> EventApiSigner:
    """A signer with the credentials the fake verifies."""
    return EventApiSigner(api, credentials=lambda: CREDENTIALS)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def verify(headers: Mapping[str, str], body: str, url: str) -> bool:
    """Whether `headers` carry a valid SigV4 signature of `POST url` with `body` by `CREDENTIALS`."""
    lower = {k.lower(): v for k, v in headers.items()}
    authorization = lower.get("authorization", "")
    if not authorization.startswith("AWS4-HMAC-SHA256 ") or "x-amz-date" not in lower:
        return False
    fields = dict(part.strip().split("=", 1) for part in authorization[len("AWS4-HMAC-SHA256 ") :].split(","))
    signed = fields.get("SignedHeaders", "").split(";")
    if not fields.get("Credential", "").startswith(f"{CREDENTIALS.access_key}/") or "host" not in signed:
        return False
    if any(name not in lower for name in signed):
        return False
    request = AWSRequest(method="POST", url=url, data=body.encode(), headers={n: lower[n] for n in signed})
    request.context["timestamp"] = lower["x-amz-date"]
    auth = SigV4Auth(CREDENTIALS, "appsync", REGION)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    return fields.get("Signature") == expected


@dataclass
class Published:
    channel: str
    events: list[str]
    headers: dict[str, str]


@dataclass(eq=False)
class _Socket:
    connection: ServerConnection
    subscriptions: dict[str, str] = field(default_factory=dict)  # id → channel


class FakeEventApi:
    """Start with `with FakeEventApi() as fake:`; `fake.api` is the `EventApi` to point a client at."""

    def __init__(self, *, ka_seconds: float = 1.0, timeout_ms: int = 300_000) -> None:
        self.ka_seconds = ka_seconds
        self.timeout_ms = timeout_ms
        self.refuse_connections = False
        self.published: list[Published] = []
        self.handshakes: list[dict[str, str]] = []
        self.delivered = 0
        self.subscribe_errors = 0
        self._sockets: set[_Socket] = set()
        self._changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._http_handler())
        self._threads: list[threading.Thread] = []
        self.api = EventApi("", "", REGION, secure=False)

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> FakeEventApi:
        http_thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        loop_thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        http_thread.start()
        loop_thread.start()
        self._threads = [http_thread, loop_thread]
        self._server = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(10)
        ws_port = next(iter(self._server.sockets)).getsockname()[1]
        self.api = EventApi(f"127.0.0.1:{self._http.server_address[1]}", f"127.0.0.1:{ws_port}", REGION, secure=False)
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._server.wait_closed(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        for thread in self._threads:
            thread.join(10)
        self._loop.close()

    # -- test controls ---------------------------------------------------------------------------

    def drop_connections(self) -> None:
        """Close every WebSocket abruptly (no close handshake the client could wait for)."""

        async def drop() -> None:
            for socket in list(self._sockets):
                socket.connection.transport.abort()

        asyncio.run_coroutine_threadsafe(drop(), self._loop).result(10)

    def subscribers(self, channel: str) -> int:
        with self._changed:
            return sum(1 for s in self._sockets for c in s.subscriptions.values() if c == channel)

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait until `condition()` (checked whenever the fake's state changes, and every 50 ms)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the fake Event API never reached the expected state")
                self._changed.wait(min(left, 0.05))

    def _touch(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- HTTP publish ----------------------------------------------------------------------------

    def _http_handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
                headers = {k.lower(): v for k, v in self.headers.items()}
                url = f"http://{fake.api.http_domain}{self.path}"
                if self.path != "/event" or not verify(headers, body, url):
                    return self._reply(HTTPStatus.UNAUTHORIZED, {"errors": [{"errorType": "UnauthorizedException"}]})
                request = json.loads(body)
                channel, events = str(request["channel"]), [str(e) for e in request["events"]]
                if not 1 <= len(events) <= 5 or any(not _is_json(e) for e in events):
                    return self._reply(HTTPStatus.BAD_REQUEST, {"errors": [{"errorType": "BadRequestException"}]})
                with fake._changed:
                    fake.published.append(Published(channel, events, headers))
                fake._loop.call_soon_threadsafe(fake._broadcast, channel, events)
                successful = [{"identifier": str(uuid.uuid4()), "index": i} for i in range(len(events))]
                self._reply(HTTPStatus.OK, {"successful": successful, "failed": []})

            def _reply(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    # -- WebSocket -------------------------------------------------------------------------------

    async def _serve(self) -> Server:
        return await serve(
            self._session,
            "127.0.0.1",
            0,
            subprotocols=[Subprotocol("aws-appsync-event-ws")],
            process_request=self._handshake,
            compression=None,
        )

    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        offered = [p.strip() for value in request.headers.get_all("Sec-WebSocket-Protocol") for p in value.split(",")]
        header = next((p[len("header-") :] for p in offered if p.startswith("header-")), None)
        auth: dict[str, str] = {}
        if header is not None:
            with contextlib.suppress(ValueError):
                auth = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
        with self._changed:
            self.handshakes.append(auth)
        url = f"http://{self.api.http_domain}/event"
        if (
            self.refuse_connections
            or request.path != "/event/realtime"
            or "aws-appsync-event-ws" not in offered
            or auth.get("host") != self.api.http_domain
            or not verify(auth, "{}", url)
        ):
            return connection.respond(HTTPStatus.UNAUTHORIZED, "unauthorized\n")
        return None

    async def _session(self, connection: ServerConnection) -> None:
        socket = _Socket(connection)
        keepalive: asyncio.Task[None] | None = None
        try:
            first = json.loads(await connection.recv())
            if first.get("type") != "connection_init":
                return
            await connection.send(_compact({"type": "connection_ack", "connectionTimeoutMs": self.timeout_ms}))
            with self._changed:
                self._sockets.add(socket)
            keepalive = asyncio.get_running_loop().create_task(self._keepalive(connection))
            async for raw in connection:
                await self._message(socket, json.loads(raw))
        except ConnectionClosed:
            pass
        finally:
            if keepalive is not None:
                keepalive.cancel()
            with self._changed:
                self._sockets.discard(socket)
                self._changed.notify_all()

    async def _keepalive(self, connection: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(self.ka_seconds)
                await connection.send(_compact({"type": "ka"}))

    async def _message(self, socket: _Socket, message: dict[str, Any]) -> None:
        kind, sub_id = message.get("type"), str(message.get("id"))
        if kind == "subscribe":
            channel = str(message.get("channel"))
            authorization = message.get("authorization") or {}
            url = f"http://{self.api.http_domain}/event"
            if not verify(authorization, _compact({"channel": channel}), url):
                with self._changed:
                    self.subscribe_errors += 1
                error = {"errorType": "UnauthorizedException", "message": "not authorized"}
                await socket.connection.send(_compact({"type": "subscribe_error", "id": sub_id, "errors": [error]}))
                return
            with self._changed:
                socket.subscriptions[sub_id] = channel
                self._changed.notify_all()
            await socket.connection.send(_compact({"type": "subscribe_success", "id": sub_id}))
        elif kind == "unsubscribe":
            with self._changed:
                socket.subscriptions.pop(sub_id, None)
                self._changed.notify_all()
            await socket.connection.send(_compact({"type": "unsubscribe_success", "id": sub_id}))

    def _broadcast(self, channel: str, events: list[str]) -> None:
        for socket in list(self._sockets):
            for sub_id, subscribed in list(socket.subscriptions.items()):
                if subscribed == channel:
                    for event in events:
                        self._loop.create_task(self._deliver(socket, sub_id, event))

    async def _deliver(self, socket: _Socket, sub_id: str, event: str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await socket.connection.send(_compact({"type": "data", "id": sub_id, "event": event}))
            with self._changed:
                self.delivered += 1
                self._changed.notify_all()


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
