"""Usage counters per user and per tenant, per day and per month: the port and its in-memory backend.

A counter holds what its owner spent in one period (`tokens`, `nano_usd`: USD in billionths, so
sums are exact integers on every backend, and `calls`) and what is *committed*: spent plus the
worst case of the calls under way. Before a model call the budget gate `reserve`s the call's worst
case on every counter the call counts against, each counter refusing when its committed amount
plus the worst case would pass its ceiling; the check and the add are one atomic step per counter
(a lock here, one SQLite transaction, one DynamoDB `TransactWriteItems` with an `ADD` and a
condition per counter), so runs racing one budget can never all pass on the same remainder. After
the call `settle` replaces the reservation by what the call used. A reservation is all or nothing:
a refusal by one counter reserves on none.

Periods are UTC: `day:2026-12-02`, `month:2026-12`. A counter of one agent's spending
(`agent="desk"`) is written by `settle` only, for `GET /api/usage`. A run tree's counter (a run
and its sub-agents' runs, `stepline.runtime.run_tree`) is one of its user's, period
`run:2026-12-02:{rootRunId}` (the root run's start day).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import astuple, dataclass, replace
from datetime import UTC, datetime
from typing import Literal, Protocol

__all__ = [
    "NANO",
    "Scope",
    "added",
    "settlements",
    "Ceiling",
    "CounterKey",
    "CounterValue",
    "MemoryCounters",
    "UsageCounters",
    "period_keys",
    "periods",
    "expiry_seconds",
]

NANO = 1_000_000_000
"""Nano-dollars per dollar."""

Scope = Literal["user", "tenant"]


@dataclass(frozen=True, slots=True)
class CounterKey:
    """One counter: an owner's spending in one period, or one agent's share of it."""

    scope: Scope
    owner: str
    period: str
    agent: str | None = None

    def of_agent(self, agent: str) -> CounterKey:
        return replace(self, agent=agent)


@dataclass(frozen=True, slots=True)
class CounterValue:
    """What a counter holds (zeros for a counter never written)."""

    tokens: int = 0
    nano_usd: int = 0
    calls: int = 0
    unpriced_calls: int = 0
    """Calls of a model without a price: their cost is not in `nano_usd` (the sum is then a floor)."""
    committed_tokens: int = 0
    committed_nano_usd: int = 0


@dataclass(frozen=True, slots=True)
class Ceiling:
    """A counter with its limits: a reservation that would take its committed amount past one is refused."""

    key: CounterKey
    name: str
    """What refuses, for the budget request (`user_day`, `tenant_month`, ...)."""
    tokens: int | None = None
    nano_usd: int | None = None

    def refuses(self, value: CounterValue, tokens: int, nano_usd: int) -> bool:
        over_tokens = self.tokens is not None and value.committed_tokens + tokens > self.tokens
        over_usd = self.nano_usd is not None and value.committed_nano_usd + nano_usd > self.nano_usd
        return over_tokens or over_usd


def periods(now_ms: int) -> tuple[str, str]:
    """The UTC day and month of a moment: (`day:2026-12-02`, `month:2026-12`)."""
    moment = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    return f"day:{moment:%Y-%m-%d}", f"month:{moment:%Y-%m}"


def period_keys(scope: Scope, owner: str, now_ms: int) -> tuple[CounterKey, CounterKey]:
    """An owner's day and month counters at a moment."""
    day, month = periods(now_ms)
    return CounterKey(scope, owner, day), CounterKey(scope, owner, month)


_KEPT_SECONDS = {"minute": 3_600, "day": 35 * 86_400, "run": 35 * 86_400, "month": 400 * 86_400}
"""How long a counter is kept after its period ends (the TTL of its DynamoDB item): a minute's (a
rate limit's) an hour, a day's five weeks, a month's 400 days; a run tree's five weeks after the
day its root started (a run waiting longer than that for a person starts its tree's count anew).
Only the current periods are read."""


def expiry_seconds(period: str) -> int:
    """When a period's counter may be deleted (epoch seconds): its period's end plus what is kept."""
    kind, _, when = period.partition(":")
    if kind == "minute":
        start = datetime.strptime(when, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)
        end = start.timestamp() + 60
    elif kind in ("day", "run"):  # a run tree's: `run:{day}:{rootRunId}`
        day = when.partition(":")[0] if kind == "run" else when
        end = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() + 86_400
    elif kind == "month":
        start = datetime.strptime(when, "%Y-%m").replace(tzinfo=UTC)
        after = (
            start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        )
        end = after.timestamp()
    else:
        raise ValueError(f"not a counter period: {period!r}")
    return int(end) + _KEPT_SECONDS[kind]


class UsageCounters(Protocol):
    """Atomic usage counters (memory, SQLite, DynamoDB)."""

    def reserve(self, ceilings: Sequence[Ceiling], tokens: int, nano_usd: int) -> Ceiling | None:
        """Add the worst case to every ceiling's committed amount, or to none: the refusing ceiling."""
        ...

    def settle(
        self,
        keys: Sequence[CounterKey],
        *,
        reserved: tuple[int, int],
        used: tuple[int, int],
        agent: str | None = None,
        priced: bool = True,
    ) -> None:
        """Replace a reservation (`reserved` tokens, nano-USD) by what the call `used`, on each key.

        `agent` also adds the usage to that agent's share of each key; `priced=False` counts the
        call as one whose cost is unknown.
        """
        ...

    def read(self, key: CounterKey) -> CounterValue:
        """A counter's value (zeros when it was never written)."""
        ...

    def agents(self, key: CounterKey) -> dict[str, CounterValue]:
        """The per-agent shares of a counter, by agent name."""
        ...


class MemoryCounters:
    """The counters in a dict, behind one lock (the tests' and `MemoryStore`'s)."""

    def __init__(self) -> None:
        self._values: dict[CounterKey, CounterValue] = {}
        self._lock = threading.Lock()

    def reserve(self, ceilings: Sequence[Ceiling], tokens: int, nano_usd: int) -> Ceiling | None:
        with self._lock:
            for ceiling in ceilings:
                if ceiling.refuses(self._values.get(ceiling.key, CounterValue()), tokens, nano_usd):
                    return ceiling
            for ceiling in ceilings:
                value = self._values.get(ceiling.key, CounterValue())
                self._values[ceiling.key] = replace(
                    value,
                    committed_tokens=value.committed_tokens + tokens,
                    committed_nano_usd=value.committed_nano_usd + nano_usd,
                )
            return None

    def settle(
        self,
        keys: Sequence[CounterKey],
        *,
        reserved: tuple[int, int],
        used: tuple[int, int],
        agent: str | None = None,
        priced: bool = True,
    ) -> None:
        with self._lock:
            for key, delta in settlements(keys, reserved=reserved, used=used, agent=agent, priced=priced):
                self._values[key] = added(self._values.get(key, CounterValue()), delta)

    def read(self, key: CounterKey) -> CounterValue:
        with self._lock:
            return self._values.get(key, CounterValue())

    def agents(self, key: CounterKey) -> dict[str, CounterValue]:
        with self._lock:
            return {
                k.agent: v
                for k, v in self._values.items()
                if k.agent is not None and replace(k, agent=None) == replace(key, agent=None)
            }


def settlements(
    keys: Sequence[CounterKey], *, reserved: tuple[int, int], used: tuple[int, int], agent: str | None, priced: bool
) -> list[tuple[CounterKey, CounterValue]]:
    """What `UsageCounters.settle` adds to each counter, on every backend.

    The call's usage and count, and its reservation replaced by what it used (an agent's share holds
    no reservation).
    """

    def delta(held: tuple[int, int]) -> CounterValue:
        return CounterValue(
            tokens=used[0],
            nano_usd=used[1],
            calls=1,
            unpriced_calls=0 if priced else 1,
            committed_tokens=used[0] - held[0],
            committed_nano_usd=used[1] - held[1],
        )

    found = [(key, delta(reserved)) for key in keys]
    return found if agent is None else found + [(key.of_agent(agent), delta(used)) for key in keys]


def added(value: CounterValue, delta: CounterValue) -> CounterValue:
    """`value` with every field of `delta` added."""
    return CounterValue(*(a + b for a, b in zip(astuple(value), astuple(delta), strict=True)))
