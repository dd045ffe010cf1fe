"""What starts an agent without a person typing: `Schedule`s and inbound `Hook`s, declared on the `Agent`.

    nightly = Schedule(name="nightly", cron="0 2 * * *", timezone="Europe/Paris",
                       input="Write the nightly report.", owner="ops-team")
    tickets = Hook(name="ticket", owner="ops-team",
                   prompt=lambda payload: f"Triage ticket {payload['id']}: {payload['title']}")
    triage = Agent(name="triage", schedules=[nightly], hooks=[tickets], tools=[...])

Each run they start is a conversation of the `owner` (a user id of the deployment: a Cognito `sub`
on AWS, a user of `STEPLINE_DEV_TOKENS` or `local` in `stepline dev`), who sees it in the sidebar,
watches it, answers its approvals and continues it by chatting.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator, model_validator

from ..errors import StepLineError
from ..protocol._request_rules import ID_PATTERN

__all__ = ["Hook", "HookPrompt", "Missed", "Schedule", "UnattendedDefinitionError", "rate_seconds", "unique_names"]

Missed = Literal["run_once", "skip"]
"""What a schedule does with occurrences missed while nothing was running to fire them."""
HookPrompt = Callable[[JsonValue], str | None]
"""`(payload) -> prompt`: the user message a webhook's JSON payload becomes; None ignores it (no run)."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_RATE = re.compile(r"^(\d+)\s*(second|minute|hour|day)s?$")
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def _check_name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError("use 1-64 characters from A-Z a-z 0-9 _ -, starting with a letter or digit")
    return value


def _check_owner(value: str) -> str:
    if not ID_PATTERN.match(value):
        raise ValueError("must be a user id (1-200 characters from A-Z a-z 0-9 . _ : @ + = -)")
    return value


class UnattendedDefinitionError(StepLineError, ValueError):
    """A schedule or hook that cannot work as defined; the message names it and the setting."""


class _Definition(BaseModel):
    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            kind = type(self).__name__.lower()
            problems = "; ".join(
                f"{'.'.join(str(p) for p in issue['loc']) or kind}: {issue.get('ctx', {}).get('error', issue['msg'])}"
                for issue in error.errors()
            )
            raise UnattendedDefinitionError(f"{kind} {data.get('name', '?')}: {problems}") from None


class Schedule(_Definition):
    """An agent run on a timetable: a `cron` expression or a `rate`, in a time zone.

    Attributes:
        name: Unique among the agent's schedules (`A-Z a-z 0-9 _ -`).
        cron: Five fields (minute hour day-of-month month day-of-week), evaluated in `timezone`.
        rate: An interval: `"30 seconds"`, `"5 minutes"`, `"1 hour"`, `"1 day"` (counted from the
            Unix epoch, so every process agrees on the occurrences).
        timezone: An IANA zone name (`Europe/Paris`); daylight saving is the zone's.
        input: The user message of every run (text).
        owner: The user whose conversation each run is.
        missed: `run_once`: occurrences missed while the scheduler was not running run once (the
            latest of them) when it is back; `skip`: they are dropped.
        metadata: Given to every run, as a headless run's `metadata`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    cron: str | None = None
    rate: str | None = None
    timezone: str = "UTC"
    input: str = Field(min_length=1, max_length=100_000)
    owner: str
    missed: Missed = "run_once"
    metadata: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("owner")
    @classmethod
    def _valid_owner(cls, value: str) -> str:
        return _check_owner(value)

    @field_validator("timezone")
    @classmethod
    def _valid_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (use an IANA name such as Europe/Paris)") from None
        return value

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        if value is not None and (len(value.split()) != 5 or not croniter.is_valid(value)):
            raise ValueError(f"{value!r} is not a five-field cron expression (minute hour day month weekday)")
        return value

    @field_validator("rate")
    @classmethod
    def _valid_rate(cls, value: str | None) -> str | None:
        if value is not None and (not _RATE.match(value.strip()) or rate_seconds(value) < 1):
            raise ValueError(f"{value!r} is not a rate: use a count and a unit, such as '5 minutes'")
        return value

    @model_validator(mode="after")
    def _one_timetable(self) -> Schedule:
        if (self.cron is None) == (self.rate is None):
            raise ValueError("give exactly one of cron= and rate=")
        return self

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def interval(self) -> timedelta | None:
        """The rate as a duration (None for a cron schedule)."""
        return None if self.rate is None else timedelta(seconds=rate_seconds(self.rate))


def rate_seconds(rate: str) -> int:
    """`"5 minutes"` -> 300."""
    found = _RATE.match(rate.strip())
    if found is None:
        raise ValueError(f"not a rate: {rate!r}")
    return int(found.group(1)) * _UNIT_SECONDS[found.group(2)]


class Hook(_Definition):
    """An inbound webhook: `POST /api/hooks/{agent}/{name}`, signed, whose JSON payload becomes a run.

    Attributes:
        name: Unique among the agent's hooks (`A-Z a-z 0-9 _ -`).
        prompt: Maps the verified JSON payload to the run's user message; returning None accepts
            the delivery without starting a run (an event the agent does not handle).
        owner: The user whose conversation each run is.
        metadata: Given to every run.

    The secret is the hook's own: on AWS a Secrets Manager secret named
    `<prefix><agent>/<hook>`, in `stepline dev` the variable `STEPLINE_HOOK_SECRET_<AGENT>_<HOOK>`
    (upper case, other characters as `_`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str
    prompt: Any
    owner: str
    metadata: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("owner")
    @classmethod
    def _valid_owner(cls, value: str) -> str:
        return _check_owner(value)

    @field_validator("prompt")
    @classmethod
    def _callable(cls, value: Any) -> Any:
        if not callable(value):
            raise ValueError("must be a function of the payload returning the prompt (or None)")
        return value

    def prompt_for(self, payload: JsonValue) -> str | None:
        prompt: Any = self.prompt(payload)
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"hook {self.name}: prompt returned {type(prompt).__name__}, not a string or None")
        return prompt


def unique_names(kind: str, names: list[str]) -> None:
    """Raise when two schedules (or hooks) of one agent share a name."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{kind}: two are named {', '.join(twice)}")
