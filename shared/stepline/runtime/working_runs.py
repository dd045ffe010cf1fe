"""The cap on working runs per user and per tenant (`user_working_runs`, `tenant_working_runs`).

A run *works* from its start until it ends or parks on an approval or a question; then it holds
one lease on its user's slots and one on its tenant's (`stepline.store.run_slots`). The lifecycle:

- **admission** (`admit`): a turn started from outside (`POST /api/chat`, `POST /api/runs`, a hook,
  a schedule) takes its leases before anything is written; at the cap it is refused with
  `TooManyRuns`, and nothing is started. A request (`admitted`) then waits its turn for a slot, up
  to `working_runs_wait_seconds` (`stepline.runtime.slot_waits`), before the API's 429 with
  `Retry-After`; a schedule's occurrence is tried again at its next tick;
- **every step** (`hold`) takes or renews the run's leases without a cap: a run resumed after an
  approval, a queued message the inbox starts, a sub-agent, all take theirs back (they may pass the
  cap for a while; they are never refused: a person already waited for them);
- **the end** of a run (completed, failed, aborted, by the reconciler too) and a step that parks
  it (`release`) give them back; a run that crashed without either gives them back when its lease
  expires (`run_slots.LEASE_MS`: the longest step plus a minute).

With neither cap set nothing is read or written.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from ..errors import StepLineError
from ..store.errors import NotFound
from ..store.records import RunRecord
from ..store.run_slots import LEASE_MS, SlotCap, SlotKey, take_all
from .budget_gate import tenant_of
from .services import Services
from .slot_waits import poll_seconds

T = TypeVar("T")

__all__ = [
    "RETRY_AFTER_SECONDS",
    "TooManyRuns",
    "admit",
    "admitted",
    "capped",
    "give_back",
    "hold",
    "release",
    "retry_after",
    "run_tenant",
    "slot_caps",
]

RETRY_AFTER_SECONDS = (1, 3)
"""The range of a refusal's `Retry-After`, drawn for each refusal: a run's slot frees when it ends
or waits, which no one can date; a chat step takes seconds, so a client that tries again after one
to three finds one free soon. Drawn, not fixed: the clients refused in one burst come back spread
over two seconds instead of all together."""


def retry_after() -> int:
    """A refusal's `Retry-After` in whole seconds (the header's unit), drawn from `RETRY_AFTER_SECONDS`."""
    low, high = RETRY_AFTER_SECONDS
    return random.randint(low, high)  # spreading retries, not a secret


class TooManyRuns(StepLineError):
    """A turn refused at the cap on working runs (nothing was started)."""

    def __init__(self, limit: str, value: int, retry_after: int, key: SlotKey) -> None:
        super().__init__(
            f"too many runs at once: {limit} is {value}; try again when one ends (retry in {retry_after} s)"
        )
        self.limit = limit
        self.value = value
        self.retry_after = retry_after
        self.key = key
        """The owner whose slots are full (its line, `slot_waits`)."""


def slot_caps(services: Services, user_id: str, tenant: str, *, capped: bool) -> list[SlotCap]:
    """The caps a run counts against (only those set); `capped=False`: counted, never refused."""
    limits = services.limits
    if limits is None:
        return []
    found: list[SlotCap] = []
    for key, name, value in (
        (SlotKey("user", user_id), "user_working_runs", limits.user_working_runs),
        (SlotKey("tenant", tenant), "tenant_working_runs", limits.tenant_working_runs),
    ):
        if value is not None:
            found.append(SlotCap(key, name, value if capped else None))
    return found


def capped(services: Services) -> bool:
    """Whether a cap on working runs is set (else nothing is read or written for them)."""
    limits = services.limits
    return limits is not None and (limits.user_working_runs or limits.tenant_working_runs) is not None


def _tenant(services: Services, run: RunRecord) -> str:
    claims = (run.context or {}).get("claims")
    return tenant_of(claims if isinstance(claims, Mapping) else None, services.tenant_claim)


def run_tenant(services: Services, user_id: str, run_id: str) -> str:
    """The tenant of a stored run (the claims it keeps); its user's own when the run is not found."""
    try:
        return _tenant(services, services.store.get_run(user_id, run_id))
    except NotFound:
        return user_id


def admit(services: Services, user_id: str, claims: Mapping[str, object] | None, run_id: str) -> list[SlotKey]:
    """Take the new run's leases at the caps (the owners taken), or raise `TooManyRuns` (nothing taken)."""
    tenant = tenant_of(claims or {"sub": user_id}, services.tenant_claim)  # the claims the run will keep
    caps = slot_caps(services, user_id, tenant, capped=True)
    if not caps:
        return []
    refused = take_all(services.store.slots, caps, run_id, now_ms=services.clock(), lease_ms=LEASE_MS)
    if refused is not None:
        raise TooManyRuns(refused.name, refused.cap or 0, retry_after(), refused.key)
    return [c.key for c in caps]


def hold(services: Services, run: RunRecord) -> None:
    """A step of the run begins: its leases taken or renewed, whatever the cap."""
    caps = slot_caps(services, run.user_id, _tenant(services, run), capped=False)
    if caps:
        take_all(services.store.slots, caps, run.run_id, now_ms=services.clock(), lease_ms=LEASE_MS)


def release(services: Services, run: RunRecord) -> None:
    """The run ended or parks: its leases given back (idempotent)."""
    caps = slot_caps(services, run.user_id, _tenant(services, run), capped=False)
    if caps:
        give_back(services, [c.key for c in caps], run.run_id)


def give_back(services: Services, keys: Sequence[SlotKey], run_id: str) -> None:
    """`run_id`'s leases on these owners given back, and the requests waiting for them told."""
    if keys:
        services.store.slots.release(keys, run_id)
        services.slot_waits.freed(keys)


async def admitted(
    services: Services, user_id: str, claims: Mapping[str, object] | None, attempt: Callable[[], Awaitable[T]]
) -> T:
    """`attempt()`, which starts a run of `user_id` from outside (`admit`), waiting for a slot at a full cap.

    A request whose user or tenant already has requests waiting for a slot joins the end of their
    line without trying; one refused joins the refusing owner's line. In the line it tries again
    when its turn comes (`stepline.runtime.slot_waits`), until it starts or
    `working_runs_wait_seconds` have passed (one still behind others then tries once): then the
    refusal is raised.
    """
    wait_seconds = services.limits.working_runs_wait_seconds if services.limits is not None else 0.0
    if wait_seconds <= 0:
        return await attempt()
    deadline = time.monotonic() + wait_seconds
    waits = services.slot_waits
    last: TooManyRuns | None = None
    tenant = tenant_of(claims or {"sub": user_id}, services.tenant_claim)
    key = next((c.key for c in slot_caps(services, user_id, tenant, capped=True) if waits.waiting(c.key)), None)
    if key is None:
        try:
            return await attempt()
        except TooManyRuns as refused:
            key, last = refused.key, refused
    async with waits.line(key) as ticket:
        while True:
            left = deadline - time.monotonic()
            if last is not None and left <= 0:
                raise last
            first = waits.first(key, ticket)
            if last is not None or not first:  # one that joined without trying tries as soon as it is first
                await ticket.woken(min(left, poll_seconds()) if first else left)
            try:
                return await attempt()
            except TooManyRuns as refused:
                last = refused
