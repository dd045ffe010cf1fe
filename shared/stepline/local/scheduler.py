"""`stepline dev`'s scheduler: a thread that looks at every schedule once a second (`runtime.schedules.tick`).

When each schedule was last looked at is kept in the data folder (`schedules.json`), so an
occurrence that passed while the server was down runs once when it starts again (or is skipped,
per the schedule's `missed`); with `--memory` nothing is kept and every start counts from now.

`POST /api/dev/schedules/{agent}/{schedule}/runs {"scheduledAt": ...}` fires one occurrence now
(its owner only): what a tick delivered late, or twice, does — the same occurrence is one run.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..api.bodies import CheckedRoute
from ..api.deps import ServicesDep, User
from ..api.errors import ApiError
from ..api.schemas import Id, _Body  # pyright: ignore[reportPrivateUsage]
from ..protocol._json import loads_strict
from ..runtime.schedules import fire_occurrence, is_occurrence, tick
from ..runtime.services import Services

__all__ = ["FileScheduleState", "LocalScheduler", "schedules_router"]

_LOG = logging.getLogger("stepline.local")
TICK_SECONDS = 1.0
GRACE_MS = 5_000
"""An occurrence at most this late still counts as on time (`missed="skip"` runs it)."""


@dataclass
class FileScheduleState:
    """`last_seen` per schedule, in a JSON file (None: in memory)."""

    path: Path | None
    _seen: dict[str, int] = field(default_factory=dict[str, int])
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.path is not None and self.path.exists():
            loaded = loads_strict(self.path.read_text())
            self._seen = {str(k): int(v) for k, v in cast(dict[str, int], loaded).items()}

    def last_seen(self, owner: str, key: str) -> int | None:
        with self._lock:
            return self._seen.get(f"{owner}:{key}")

    def mark_seen(self, owner: str, key: str, at: int) -> None:
        with self._lock:
            name = f"{owner}:{key}"
            self._seen[name] = max(at, self._seen.get(name, 0))
            if self.path is not None:
                temporary = self.path.with_suffix(".tmp")
                temporary.write_text(json.dumps(self._seen, sort_keys=True))
                os.replace(temporary, self.path)  # a crash leaves the old file or the new one, never half


@dataclass
class LocalScheduler:
    """Ticks every schedule of the services' agents until stopped."""

    services: Services
    state: FileScheduleState
    clock: Callable[[], int]
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def count(self) -> int:
        return sum(len(agent.schedules) for _, agent in self.services.agent_set)

    def tick_once(self) -> None:
        done = tick(self.services, self.state, now=self.clock(), grace_ms=GRACE_MS)
        for started in done.started:
            if not started.replayed:
                _LOG.info("schedule started run %s", started.run.run_id)
        for key, error in done.failed:
            _LOG.warning("schedule %s: %s (tried again at the next tick)", key, error)

    def start(self) -> LocalScheduler:
        if not self.count:
            return self

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.tick_once()
                except Exception:
                    _LOG.exception("scheduler tick")
                self._stop.wait(TICK_SECONDS)

        self._thread = threading.Thread(target=loop, name="stepline-scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


class FireBody(_Body):
    scheduled_at: dt.datetime


def schedules_router() -> APIRouter:
    """The dev-only route that fires one occurrence of a schedule."""
    router = APIRouter(route_class=CheckedRoute)

    @router.post("/api/dev/schedules/{agent}/{schedule}/runs", tags=["dev"], status_code=202)
    def fire(agent: Id, schedule: Id, body: FireBody, user_id: User, services: ServicesDep) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        """`stepline dev` only: start the run of one occurrence (the same run when fired again)."""
        try:
            found = services.agent(agent)
        except KeyError:
            raise ApiError(404, f"no agent {agent}") from None
        entry = next((s for s in found.schedules if s.name == schedule and s.owner == user_id), None)
        if entry is None:
            raise ApiError(404, f"agent {agent} has no schedule {schedule} of yours")
        at = body.scheduled_at if body.scheduled_at.tzinfo else body.scheduled_at.replace(tzinfo=dt.UTC)
        if not is_occurrence(entry, at):
            raise ApiError(400, f"scheduledAt: {at.isoformat()} is not an occurrence of schedule {schedule}")
        started = fire_occurrence(services, found, entry, at)
        answer = {"runId": started.run.run_id, "conversationId": started.run.conversation_id}
        return JSONResponse(
            answer, status_code=202, headers={"idempotent-replayed": "true"} if started.replayed else {}
        )

    return router
