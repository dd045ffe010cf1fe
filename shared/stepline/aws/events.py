"""Run lifecycle events on Amazon EventBridge (`stepline.runtime.notifications` over `PutEvents`).

One entry per call: an event is published right after the commit of its transition, so there is
never a batch to split. A refused entry (`FailedEntryCount`) raises, like a failed call: the worker
fails, Step Functions retries it, and the retry publishes what the run does not record as published.
"""

from __future__ import annotations

from typing import Any

from ..errors import StepLineError
from ..protocol._json import dumps
from ..runtime.notifications import SOURCE, RunEvent

__all__ = ["EventBridgeNotifier", "PublishError"]


class PublishError(StepLineError):
    """EventBridge refused an event (its error code only; the event is not repeated here)."""


class EventBridgeNotifier:
    """Publishes each event to one event bus, with source `stepline`."""

    def __init__(self, client: Any, *, bus: str) -> None:
        self._client = client
        self._bus = bus

    def publish(self, event: RunEvent) -> None:
        detail = dumps(event.detail)
        entry = {"Source": SOURCE, "DetailType": event.detail_type, "Detail": detail, "EventBusName": self._bus}
        answer = self._client.put_events(Entries=[entry])
        if answer.get("FailedEntryCount", 0):
            code = answer["Entries"][0].get("ErrorCode", "unknown")
            raise PublishError(f"EventBridge refused a {event.detail_type} event ({code})")
