"""A new run at a full cap on working runs waits its turn for a slot, up to a bound, before a 429.

A request refused at the cap (`working_runs.TooManyRuns`) joins its owner's line: the user's or
the tenant's, whichever refused it (`working_runs.admitted` waits in it). A request whose owner
already has a line joins its end without trying, so in a burst only the requests that arrive
before the first refusal try. When a run of that owner gives its slot back in this process
(`SlotWaits.freed`, called by every release), the first in line tries again; when it leaves the
line (started, or out of time), the next tries at once, so slots freed together are all taken.
The first in line also tries every `POLL_SECONDS`, for a slot freed where this process cannot
hear it: another process (on AWS every request and every step is a Lambda invocation of its own)
or the lease of a run that crashed. A request still refused after `working_runs_wait_seconds`
gets the 429 after all (`Retry-After` as before).

Why a line, and not every waiter trying at each freed slot or after its `Retry-After`: a flood of
refused requests coming back together arrives in waves, and a wave is CPU that every other
tenant's request waits behind (docs/architecture.md, "Budgets, rate limits and fairness").
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections import deque
from collections.abc import AsyncGenerator, Sequence

from ..store.run_slots import SlotKey

__all__ = ["POLL_SECONDS", "SlotWaits", "Ticket", "poll_seconds"]

POLL_SECONDS = (0.75, 1.25)
"""How often the first in line tries without being told a slot freed (drawn each time, so lines in
many processes do not poll together)."""


def poll_seconds() -> float:
    """One wait of the first in line between tries, drawn from `POLL_SECONDS`."""
    return random.uniform(*POLL_SECONDS)  # spreading polls, not a secret


class Ticket:
    """One request's place in a line; woken from any thread."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._woken = asyncio.Event()

    def wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._woken.set)

    async def woken(self, seconds: float) -> None:
        """Until woken or `seconds` have passed (a wake before the call counts)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(seconds, 0)):
                await self._woken.wait()
        self._woken.clear()


class SlotWaits:
    """The requests waiting for a working-run slot in this process, a line per owner."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: dict[SlotKey, deque[Ticket]] = {}

    def freed(self, keys: Sequence[SlotKey]) -> None:
        """A slot of each of these owners was given back (any thread): the first in each line tries."""
        with self._lock:
            first = [line[0] for key in keys if (line := self._lines.get(key))]
        for ticket in first:
            ticket.wake()

    def waiting(self, key: SlotKey) -> int:
        """How many requests wait for one of the owner's slots."""
        with self._lock:
            return len(self._lines.get(key, ()))

    def first(self, key: SlotKey, ticket: Ticket) -> bool:
        with self._lock:
            line = self._lines.get(key)
            return bool(line) and line[0] is ticket

    @contextlib.asynccontextmanager
    async def line(self, key: SlotKey) -> AsyncGenerator[Ticket]:
        """A place at the end of the owner's line, for the duration; leaving it first wakes the next."""
        ticket = Ticket()
        with self._lock:
            self._lines.setdefault(key, deque()).append(ticket)
        try:
            yield ticket
        finally:
            with self._lock:
                line = self._lines[key]
                was_first = line[0] is ticket
                line.remove(ticket)
                after = line[0] if line else None
                if not line:
                    del self._lines[key]
            if was_first and after is not None:
                after.wake()
