"""Run lifecycle events on Amazon EventBridge (`stepline.runtime.notifications` over `PutEvents`).

One entry per call: an event is published right after the commit of its transition, so there is
never a batch to split. A refused entry (`FailedEntryCount`) raises, like a failed call: the worker
fails, Step Functions retries it, and the retry publishes what the run does not record as published.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..errors import StepLineError
from ..protocol._json import dumps
from ..runtime.notifications import SOURCE, RunEvent

__all__ = ["EventBridgeNotifier", "PublishError"]


class PublishError(StepLineError):
    """EventBridge refused an event (its error code only; the event is not repeated here)."""


class EventBridgeNotifier:
    """Publishes each event to one event bus, with source `stepline`."""

    def __init__(self, client: Any = None, *, bus: str, client_factory: Callable[[], Any] | None = None) -> None:
        # `client_factory` instead of `client`: the client is made at the first publish, not here (making
        # an EventBridge client costs about a sixth of `import boto3`, and most invocations publish nothing).
        if (client is None) == (client_factory is None):
            raise TypeError("EventBridgeNotifier takes a client or a client_factory")
        self._given = client
        self._factory = client_factory
        self._bus = bus

    @functools.cached_property
    def _client(self) -> Any:
        return self._given if self._factory is None else self._factory()

    def publish(self, event: RunEvent) -> None:
        detail = dumps(event.detail)
        entry = {"Source": SOURCE, "DetailType": event.detail_type, "Detail": detail, "EventBusName": self._bus}
        answer = self._client.put_events(Entries=[entry])
        if answer.get("FailedEntryCount", 0):
            code = answer["Entries"][0].get("ErrorCode", "unknown")
            raise PublishError(f"EventBridge refused a {event.detail_type} event ({code})")
