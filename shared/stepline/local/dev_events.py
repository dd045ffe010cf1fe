"""Where a person sees an unattended run's lifecycle in `stepline dev`: the server log and `GET /api/dev/events`.

Every lifecycle event (`stepline.runtime.notifications`) is printed as one line, an approval
request with the signed link that decides it (the command to run), and kept in memory for
`GET /api/dev/events`, which answers the caller's own events. On AWS the same events go to the
EventBridge bus; neither the lines nor the route exist there (the route is added by `stepline dev`
only, never by `create_app`).

An event of a run started with a `callbackUrl` is also handed to the callback outbox.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TextIO, cast

from fastapi import APIRouter, Query
from pydantic import JsonValue

from ..api.bodies import CheckedRoute
from ..api.deps import User
from ..api.schemas import _Body  # pyright: ignore[reportPrivateUsage]
from ..protocol._json import dumps
from ..runtime.notifications import RunEvent

__all__ = ["DevEvent", "DevEventList", "DevNotifier", "dev_events_router"]

KEEP = 2000
"""Events kept for the route (the oldest go first)."""
Enqueue = Callable[[RunEvent], None]


class DevEvent(_Body):
    """One lifecycle event as `GET /api/dev/events` answers it."""

    seq: int
    detail_type: str
    detail: dict[str, JsonValue]


class DevEventList(_Body):
    """`GET /api/dev/events`."""

    events: list[DevEvent]


@dataclass
class DevNotifier:
    """Prints, keeps and forwards lifecycle events (the dev server's `Notifier`)."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    base_url: str = ""
    """The server's URL, for the printed links (set once the port is bound)."""
    forward: Enqueue | None = None
    events: list[DevEvent] = field(default_factory=list[DevEvent])
    _seq: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, event: RunEvent) -> None:
        with self._lock:
            self._seq += 1
            self.events.append(DevEvent(seq=self._seq, detail_type=event.detail_type, detail=event.detail))
            del self.events[:-KEEP]
        self.out.write(event_line(event, self.base_url) + "\n")
        self.out.flush()
        if self.forward is not None:
            self.forward(event)

    def of_user(self, user_id: str, after: int) -> list[DevEvent]:
        with self._lock:
            return [e for e in self.events if e.seq > after and e.detail.get("userId") == user_id]


def event_line(event: RunEvent, base_url: str) -> str:
    """One line: the event, its run and conversation, and for an approval the command that decides it."""
    detail = event.detail
    line = f"event  {event.detail_type}  run {detail.get('runId')}  conversation {detail.get('conversationId')}"
    if "toolName" in detail:
        line += f"  tool {detail['toolName']}"
    if "status" in detail:
        line += f"  status {detail['status']}"
    found: Any = detail.get("decision")
    if isinstance(found, dict):
        decision = cast(dict[str, Any], found)
        body = dumps({"approved": True, "token": decision.get("token")})
        url = f"{base_url}{decision.get('path')}"
        line += f"  decide: curl -X POST {url} -H 'content-type: application/json' -d '{body}'"
    return line


def dev_events_router(notifier: DevNotifier) -> APIRouter:
    """`GET /api/dev/events`: the caller's lifecycle events after `after` (a `seq`), oldest first."""
    router = APIRouter(route_class=CheckedRoute)

    @router.get("/api/dev/events", tags=["dev"])
    def dev_events(user_id: User, after: Annotated[int, Query(ge=0)] = 0) -> DevEventList:  # pyright: ignore[reportUnusedFunction]
        """`stepline dev` only: the caller's lifecycle events, with approval links (absent on AWS)."""
        return DevEventList(events=notifier.of_user(user_id, after))

    return router
