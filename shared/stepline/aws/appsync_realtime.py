"""The stream side of stream push on AWS: subscriptions over an AppSync Event API's WebSocket.

The Event API's real-time protocol: connect to `wss://{realtime}/event/realtime` offering the
subprotocols `aws-appsync-event-ws` and `header-{base64url(JSON of the signed headers of "{}")}`,
send `connection_init`, wait for `connection_ack` (its `connectionTimeoutMs` is the longest silence
allowed: the service sends `ka` keep-alives), then `subscribe` (an id, the channel, the signed
headers of `{"channel": ...}`), answered by `subscribe_success` or `subscribe_error`; each event
published to the channel arrives as `data` with the subscription's id; `unsubscribe` ends one.

One connection per process (per event loop), shared by the streams it serves and kept between
them. Nothing here is needed for correctness: a subscription that cannot start, or whose
connection drops or goes silent, wakes its stream once (so it reads the log) and leaves it to its
fallback poll, then tries again after `retry_seconds`. Each successful subscribe also wakes the
stream, so an append made before the subscription took effect is read at once rather than at the
next poll.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
import uuid
import weakref
from typing import Any, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from ..protocol._json import loads_strict
from ..runtime.stream_push import wait_consumed
from .appsync_auth import EventApi, EventApiSigner

__all__ = ["SUBPROTOCOL", "RealtimeClient", "auth_subprotocol"]

_LOG = logging.getLogger(__name__)

SUBPROTOCOL = Subprotocol("aws-appsync-event-ws")
DEFAULT_TIMEOUT_MS = 300_000
"""The keep-alive timeout until `connection_ack` says otherwise."""

State = Literal["starting", "active", "lost", "closed"]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def auth_subprotocol(headers: dict[str, str]) -> Subprotocol:
    """`header-` and the base64url (unpadded) JSON of the connection's authorization headers."""
    encoded = base64.urlsafe_b64encode(_compact(headers).encode()).rstrip(b"=").decode()
    return Subprotocol(f"header-{encoded}")


class _Subscription:
    """One stream's subscription to its run's channel (a `RunSubscription`)."""

    def __init__(self, client: RealtimeClient, channel: str) -> None:
        self._client = client
        self.channel = channel
        self.id = str(uuid.uuid4())
        self._event = asyncio.Event()
        self.state: State = "starting"
        self._retry_at = 0.0
        self._connection: _Connection | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.state = "starting"
        self._task = asyncio.get_running_loop().create_task(self._subscribe())

    async def _subscribe(self) -> None:
        try:
            connection = await self._client.connection()
            self._connection = connection
            await connection.subscribe(self)
        except Exception as error:  # no push for now: the stream polls
            _LOG.warning("subscribing to the Event API failed (%s)", type(error).__name__)
            self.lost()

    def succeeded(self) -> None:
        if self.state != "closed":
            self.state = "active"
            self._event.set()  # what was appended before the subscription took effect: read it now

    def notified(self) -> None:
        self._event.set()

    def lost(self) -> None:
        if self.state != "closed":
            self.state = "lost"
            self._retry_at = time.monotonic() + self._client.retry_seconds
            self._event.set()

    async def wait(self, seconds: float) -> bool:
        if self.state == "lost" and time.monotonic() >= self._retry_at:
            self.start()
        return await wait_consumed(self._event, seconds)

    def close(self) -> None:
        if self.state == "closed":
            return
        self.state = "closed"
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._connection is not None:
            self._connection.unsubscribe(self)


class _Connection:
    """One open WebSocket and the subscriptions on it; `run` reads it until it closes or goes silent."""

    def __init__(self, socket: ClientConnection, timeout_ms: int, signer: EventApiSigner) -> None:
        self.socket = socket
        self.signer = signer
        self.loop = asyncio.get_running_loop()
        self.timeout = timeout_ms / 1000
        self.last_heard = time.monotonic()
        self.closed = False
        self._subscriptions: dict[str, _Subscription] = {}

    def usable(self) -> bool:
        """Open, and heard from within the keep-alive timeout.

        A frozen Lambda environment can wake up holding a socket the service closed long ago.
        """
        return not self.closed and time.monotonic() - self.last_heard < self.timeout

    async def subscribe(self, subscription: _Subscription) -> None:
        if subscription.state == "closed":
            return
        self._subscriptions[subscription.id] = subscription
        authorization = self.signer.headers(_compact({"channel": subscription.channel}))
        message = {"type": "subscribe", "id": subscription.id, "channel": subscription.channel}
        await self.socket.send(_compact({**message, "authorization": authorization}))

    def unsubscribe(self, subscription: _Subscription) -> None:
        if self._subscriptions.pop(subscription.id, None) is None or self.closed:
            return

        async def send() -> None:
            with contextlib.suppress(Exception):
                await self.socket.send(_compact({"type": "unsubscribe", "id": subscription.id}))

        with contextlib.suppress(RuntimeError):  # the loop has closed: the socket went with it
            self.loop.create_task(send())

    async def run(self) -> None:
        try:
            while True:
                async with asyncio.timeout(self.timeout):
                    raw = await self.socket.recv()
                self.last_heard = time.monotonic()
                self._dispatch(raw)
        except (TimeoutError, ConnectionClosed, OSError):
            pass
        finally:
            self.closed = True
            lost = list(self._subscriptions.values())
            self._subscriptions.clear()
            for subscription in lost:
                subscription.lost()
            with contextlib.suppress(Exception):
                await self.socket.close()

    def _dispatch(self, raw: str | bytes) -> None:
        try:
            message = loads_strict(raw)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        fields: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
        kind = fields.get("type")
        subscription = self._subscriptions.get(str(fields.get("id")))
        if subscription is None:
            return  # "ka", or a message for a subscription already closed
        if kind == "data":
            subscription.notified()
        elif kind == "subscribe_success":
            subscription.succeeded()
        elif kind in ("subscribe_error", "error"):
            self._subscriptions.pop(subscription.id, None)
            _LOG.warning("the Event API refused a subscription (%s)", _error_types(fields))
            subscription.lost()


def _error_types(message: dict[str, Any]) -> str:
    errors: Any = message.get("errors") or []
    if not isinstance(errors, list):
        return "error"
    types = [str(e.get("errorType", "error")) for e in errors if isinstance(e, dict)]  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType, reportUnknownArgumentType]
    return ", ".join(types) or "error"


class RealtimeClient:
    """Subscriptions to an Event API's channels over one WebSocket per event loop."""

    def __init__(
        self, api: EventApi, signer: EventApiSigner, *, connect_timeout: float = 3.0, retry_seconds: float = 5.0
    ) -> None:
        self.api = api
        self.signer = signer
        self.connect_timeout = connect_timeout
        self.retry_seconds = retry_seconds
        self._connection: _Connection | None = None
        self._opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._tasks: set[asyncio.Task[None]] = set()

    def subscribe(self, channel: str) -> _Subscription:
        """Subscribe from the running event loop (the subscription starts in the background)."""
        subscription = _Subscription(self, channel)
        subscription.start()
        return subscription

    async def connection(self) -> _Connection:
        loop = asyncio.get_running_loop()
        lock = self._opening.setdefault(loop, asyncio.Lock())
        async with lock:
            current = self._connection
            if current is not None and current.loop is loop and current.usable():
                return current
            if current is not None and current.loop is loop:
                with contextlib.suppress(Exception):
                    await current.socket.close()
            opened = await asyncio.wait_for(self._open(), self.connect_timeout)
            self._connection = opened
            task = loop.create_task(opened.run())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return opened

    async def _open(self) -> _Connection:
        protocols = [SUBPROTOCOL, auth_subprotocol(self.signer.headers("{}"))]
        socket = await connect(
            self.api.realtime_url,
            subprotocols=protocols,
            open_timeout=self.connect_timeout,
            ping_interval=None,  # the service's "ka" messages are the keep-alive
            compression=None,
            proxy=True if self.api.secure else None,
        )
        try:
            await socket.send(_compact({"type": "connection_init"}))
            timeout_ms = DEFAULT_TIMEOUT_MS
            while True:
                message = loads_strict(await socket.recv())
                if message.get("type") == "connection_ack":
                    timeout_ms = int(message.get("connectionTimeoutMs") or DEFAULT_TIMEOUT_MS)
                    break
                if message.get("type") in ("connection_error", "error"):
                    raise ConnectionError(f"the Event API refused the connection ({_error_types(message)})")
        except BaseException:
            await socket.close()
            raise
        return _Connection(socket, timeout_ms, self.signer)

    def abandon(self) -> None:
        """Forget the connection (it is closed from its own loop if that loop still runs)."""
        current, self._connection = self._connection, None
        if current is not None and not current.closed:
            with contextlib.suppress(RuntimeError):
                current.loop.call_soon_threadsafe(lambda: current.loop.create_task(current.socket.close()))
