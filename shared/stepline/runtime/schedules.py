"""Schedules: which occurrences are due, and the one run each occurrence starts.

One function decides for both drivers (the thread of `stepline dev`, the dispatcher function that
EventBridge Scheduler invokes every minute on AWS): given when the scheduler last looked at a
schedule (`last_seen`, kept durably per schedule) and now, the occurrences in between are due —
all of them while the scheduler keeps up; after a gap (the scheduler was down longer than the
tick's grace), the latest one once, its metadata counting the occurrences it stands for
(`missed="run_once"`), or none (`missed="skip"`). A schedule seen for the first time starts
counting from now: deploying a nightly schedule at noon does not run it.

Each occurrence starts its run with the idempotency key `schedule:<agent>/<name>@<time>`, so a
tick delivered twice, two schedulers, or a crash between the start and the `last_seen` write
still make exactly one run per occurrence.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from croniter import croniter
from pydantic import JsonValue

from ..agent.definition import Agent
from ..agent.unattended import Schedule
from .headless import HeadlessStart, Started, start_headless
from .services import Services

__all__ = [
    "Due",
    "ScheduleState",
    "Tick",
    "due_occurrences",
    "fire_occurrence",
    "is_occurrence",
    "schedule_key",
    "tick",
]

_MAX_SCAN = 10_000
"""Occurrences examined at most in one gap (a seconds-rate schedule down for hours)."""


@dataclass(frozen=True, slots=True)
class Due:
    """An occurrence to run; `missed` > 1 when it stands for that many missed while nothing ran."""

    at: dt.datetime
    missed: int = 1


class ScheduleState(Protocol):
    """When each schedule was last looked at (epoch ms), by `schedule_key`."""

    def last_seen(self, owner: str, key: str) -> int | None: ...

    def mark_seen(self, owner: str, key: str, at: int) -> None:
        """Record `at` (a later value than the stored one only)."""
        ...


def schedule_key(agent: str, schedule: Schedule) -> str:
    """`<agent>/<schedule>`: names a schedule in its state and its runs' keys."""
    return f"{agent}/{schedule.name}"


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _after(schedule: Schedule, start: dt.datetime) -> Iterator[dt.datetime]:
    """The occurrences strictly after `start` (UTC), in order."""
    interval = schedule.interval
    if interval is not None:
        step = int(interval.total_seconds())
        k = int(start.timestamp()) // step + 1
        while True:
            yield dt.datetime.fromtimestamp(k * step, tz=dt.UTC)
            k += 1
    assert schedule.cron is not None
    times = croniter(schedule.cron, start.astimezone(schedule.zone))
    while True:
        yield times.get_next(dt.datetime).astimezone(dt.UTC)


def due_occurrences(schedule: Schedule, *, last_seen: int | None, now: int, grace_ms: int) -> list[Due]:
    """The occurrences to run now (see the module docstring)."""
    if last_seen is None or now <= last_seen:
        return []
    until = _utc(now)
    found: list[dt.datetime] = []
    for at in _after(schedule, _utc(last_seen)):
        if at > until or len(found) >= _MAX_SCAN:
            break
        found.append(at)
    if now - last_seen <= grace_ms:  # the scheduler kept up: every occurrence is on time
        return [Due(at) for at in found]
    if schedule.missed == "skip" or not found:
        return []
    return [Due(found[-1], missed=len(found))]  # run_once: the latest, standing for all of them


def is_occurrence(schedule: Schedule, at: dt.datetime) -> bool:
    """Whether `at` is an occurrence of the schedule (to the second)."""
    previous = next(_after(schedule, at - dt.timedelta(seconds=1)))
    return previous == at.astimezone(dt.UTC).replace(microsecond=0)


def fire_occurrence(services: Services, agent: Agent, schedule: Schedule, at: dt.datetime, missed: int = 1) -> Started:
    """The run of one occurrence (the same run however often it is fired)."""
    stamp = at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    local = at.astimezone(schedule.zone).strftime("%Y-%m-%d %H:%M")
    key = f"schedule:{schedule_key(agent.name, schedule)}@{stamp}"
    metadata: dict[str, JsonValue] = {**schedule.metadata, "schedule": schedule.name, "scheduledAt": stamp}
    if missed > 1:
        metadata["missedOccurrences"] = missed
    return start_headless(
        services,
        schedule.owner,
        HeadlessStart(
            agent=agent.name,
            message={
                "id": f"msg-{uuid.uuid4().hex}",
                "role": "user",
                "parts": [{"type": "text", "text": schedule.input}],
            },
            trigger="schedule",
            metadata=metadata,
            idempotency_key=key,
            request={"schedule": key},
            title=f"{schedule.name} · {local} {schedule.timezone}",
        ),
    )


@dataclass(frozen=True, slots=True)
class Tick:
    """One look at every schedule: the runs it started (or found already started)."""

    started: list[Started]
    failed: list[tuple[str, str]]
    """(schedule key, error) of occurrences that could not be started; retried at the next tick."""


def tick(services: Services, state: ScheduleState, *, now: int, grace_ms: int) -> Tick:
    """Start every due occurrence of every schedule of the deployment's agents."""
    started: list[Started] = []
    failed: list[tuple[str, str]] = []
    for _, agent in services.agent_set:
        for schedule in agent.schedules:
            key = schedule_key(agent.name, schedule)
            due = due_occurrences(schedule, last_seen=state.last_seen(schedule.owner, key), now=now, grace_ms=grace_ms)
            try:
                started.extend(fire_occurrence(services, agent, schedule, d.at, d.missed) for d in due)
            except Exception as error:  # the next tick sees the same occurrences again (idempotent)
                failed.append((key, f"{type(error).__name__}: {error}"))
                continue
            state.mark_seen(schedule.owner, key, now)
    return Tick(started, failed)
