"""Stream push on AWS: the run's writer publishes to an AppSync Event API, the streams subscribe.

`AppSyncEventsNotifier` is the `RunNotifier` (`stepline.runtime.stream_push`) of the Lambda
functions. The writer (the model step, and the workers that end a run) publishes "the run's log has
grown to `seq`" to the run's channel over the API's HTTP endpoint (`POST https://{http}/event`);
the stream function subscribes to that channel over the real-time WebSocket endpoint
(`stepline.aws.appsync_realtime`). The event log stays the truth: a message carries `{"seq": N}`
and nothing else, a stream that hears nothing reads the log at its fallback poll, and chunks are
sent by their log position, so a lost message costs one poll interval and a duplicated one a read.

Authorization is IAM (SigV4, botocore's signer, service `appsync`), not an API key: the functions
already hold role credentials, the key would be a long-lived secret in their environment that
expires (at most a year) and lets whoever has it subscribe to every channel, while IAM gives the
writer `appsync:EventPublish` only and the stream `EventConnect`/`EventSubscribe` only.

A run's channel is `/runs/{digest}`: a digest of the user and the run, so the channel names no user
(user ids can be e-mail addresses) and two users' runs never share one, whatever characters the ids
hold (hex digits fit a channel segment; a namespace name is letters, digits and dashes, and the
segments after it are taken to allow at least those).

Publishing never slows the step: `notify` records the run's highest seq and returns; one thread per
process sends, coalescing what piled up while a request was in flight (only the highest seq of a
run matters). `flush` waits for what is pending, so a Lambda handler can send before it returns
(an environment is frozen between invocations).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, cast

from ..runtime.stream_push import RunSubscription
from .appsync_auth import EventApi, EventApiSigner

__all__ = ["NAMESPACE", "AppSyncEventsNotifier", "channel_of", "flush_notifications", "reset_notifiers"]

_LOG = logging.getLogger(__name__)

NAMESPACE = "runs"
"""The channel namespace of the runs (template.yaml's `RunsChannelNamespace`)."""


def channel_of(user_id: str, run_id: str) -> str:
    """The run's channel: `/runs/` and a digest of (user, run), 40 hex characters."""
    digest = hashlib.sha256(f"{user_id}\x00{run_id}".encode()).hexdigest()[:40]
    return f"/{NAMESPACE}/{digest}"


class _Publisher:
    """One sending thread, started on the first notification; pending is the highest seq per channel."""

    def __init__(self, send: Callable[[str, int], None]) -> None:
        self._send = send
        self._pending: dict[str, int] = {}
        self._sending = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def publish(self, channel: str, seq: int) -> None:
        with self._changed:
            self._pending[channel] = max(seq, self._pending.get(channel, seq))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="stepline-event-api", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def flush(self, timeout: float) -> bool:
        """Wait until nothing is pending or in flight (True), or `timeout` (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending and not self._sending, timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending))
                batch, self._pending = self._pending, {}
                self._sending = True
            try:
                for channel, seq in batch.items():
                    try:
                        self._send(channel, seq)
                    except Exception as error:  # best effort: the stream's poll reads the log anyway
                        _LOG.warning("publishing to the Event API failed (%s)", type(error).__name__)
            finally:
                with self._changed:
                    self._sending = False
                    self._changed.notify_all()


_LIVE: weakref.WeakSet[AppSyncEventsNotifier] = weakref.WeakSet()


def reset_notifiers() -> None:
    """Drop every notifier's connections (after a SnapStart restore)."""
    for notifier in list(_LIVE):
        notifier.reset()


def flush_notifications(timeout: float = 2.0) -> None:
    """Send what this process's notifiers have pending (a Lambda handler, before it returns)."""
    for notifier in list(_LIVE):
        notifier.flush(timeout)


class AppSyncEventsNotifier:
    """`RunNotifier` over an AppSync Event API: publish over HTTP, subscribe over its WebSocket."""

    def __init__(
        self,
        api: EventApi,
        *,
        signer: EventApiSigner | None = None,
        publish_timeout: float = 2.0,
        connect_timeout: float = 3.0,
    ) -> None:
        self.api = api
        self.signer = signer or EventApiSigner(api)
        self._publish_timeout = publish_timeout
        self._connect_timeout = connect_timeout
        self._publisher = _Publisher(self._post)
        self._http: Any = None
        self._realtime: Any = None
        _LIVE.add(self)

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        self._publisher.publish(channel_of(user_id, run_id), seq)

    def flush(self, timeout: float = 2.0) -> bool:
        """Send what is pending before a handler returns (True when all was sent or given up on)."""
        return self._publisher.flush(timeout)

    def subscribe(self, user_id: str, run_id: str) -> RunSubscription:
        from .appsync_realtime import RealtimeClient

        if self._realtime is None:
            self._realtime = RealtimeClient(self.api, self.signer, connect_timeout=self._connect_timeout)
        realtime = cast(RealtimeClient, self._realtime)
        return realtime.subscribe(channel_of(user_id, run_id))

    def reset(self) -> None:
        """Drop the HTTP connections and the WebSocket (after a SnapStart restore: they are stale)."""
        self._http = None
        realtime, self._realtime = self._realtime, None
        if realtime is not None:
            realtime.abandon()

    def _post(self, channel: str, seq: int) -> None:
        import urllib3

        if self._http is None:
            self._http = urllib3.PoolManager(
                timeout=urllib3.Timeout(connect=self._publish_timeout, read=self._publish_timeout), retries=False
            )
        body = json.dumps({"channel": channel, "events": [json.dumps({"seq": seq})]}, separators=(",", ":"))
        response = self._http.request(
            "POST", self.api.publish_url, body=body.encode(), headers=self.signer.headers(body)
        )
        if response.status >= 300:
            _LOG.warning("the Event API refused a publish (HTTP %s)", response.status)
