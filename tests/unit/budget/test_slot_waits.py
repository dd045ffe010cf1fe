"""A new run at a full cap on working runs waits its turn for a slot (`working_runs.admitted`).

GIVEN a user allowed one (or two) working runs, WHEN more runs start, THEN each one past the cap
waits in the user's line: it starts when a run gives its slot back, first in line first, slots
freed together are all taken, a waiter that leaves passes its turn on, the first in line finds a
slot freed where this process could not hear it by polling, and one still refused when its wait
is over gets the refusal; with no wait it is refused at once. The admissions are the real ones
(`working_runs.admit` over the memory store's slots). A poll that would find every slot anyway is
stretched to ten minutes where a test checks that a wake, not a poll, starts the run.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator

import pytest

from stepline.loop.limits import Limits
from stepline.runtime import slot_waits
from stepline.runtime.services import Services
from stepline.runtime.working_runs import TooManyRuns, admit, admitted, give_back
from stepline.store.memory import MemoryStore
from stepline.store.run_slots import SlotKey

ANN = SlotKey("user", "ann")
GUARD_SECONDS = 30.0
"""A test that would hang fails after this instead."""


@pytest.fixture
def no_poll(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(slot_waits, "POLL_SECONDS", (600.0, 600.0))
    yield


def _services(cap: int = 1, wait: float = 600.0) -> Services:
    return Services(store=MemoryStore(), limits=Limits(user_working_runs=cap, working_runs_wait_seconds=wait))


async def _start(services: Services, run_id: str, started: list[str]) -> None:
    await admitted(services, "ann", None, lambda: asyncio.to_thread(admit, services, "ann", None, run_id))
    started.append(run_id)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(int(GUARD_SECONDS / 0.005)):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("it never happened")


async def _in_line(services: Services, count: int) -> None:
    """Until `count` requests wait in ann's line."""
    await _until(lambda: services.slot_waits.waiting(ANN) == count)


def _holders(services: Services) -> set[str]:
    return set(services.store.slots.holders(ANN, now_ms=services.clock()))


async def _given_back(services: Services, *run_ids: str) -> None:
    for run_id in run_ids:  # from a worker thread, as a run's end is
        await asyncio.to_thread(give_back, services, [ANN], run_id)


@pytest.mark.usefixtures("no_poll")
def test_a_run_past_the_cap_starts_in_order_when_slots_are_given_back() -> None:
    asyncio.run(_a_run_past_the_cap_starts_in_order_when_slots_are_given_back())


async def _a_run_past_the_cap_starts_in_order_when_slots_are_given_back() -> None:
    services, started = _services(), list[str]()
    await _start(services, "r1", started)
    waiting: list[asyncio.Task[None]] = []
    for count, run_id in enumerate(["r2", "r3", "r4"], start=1):
        waiting.append(asyncio.create_task(_start(services, run_id, started)))
        await _in_line(services, count)  # each joins after the one before
    assert started == ["r1"] and _holders(services) == {"r1"}
    async with asyncio.timeout(GUARD_SECONDS):
        for done, run_id in [("r1", "r2"), ("r2", "r3"), ("r3", "r4")]:
            await _given_back(services, done)
            await _until(lambda run_id=run_id: run_id in started)
            assert _holders(services) == {run_id}  # never more than the cap
        await asyncio.gather(*waiting)
    assert started == ["r1", "r2", "r3", "r4"] and services.slot_waits.waiting(ANN) == 0


@pytest.mark.usefixtures("no_poll")
def test_slots_freed_together_are_all_taken() -> None:
    asyncio.run(_slots_freed_together_are_all_taken())


async def _slots_freed_together_are_all_taken() -> None:
    services, started = _services(cap=2), list[str]()
    await _start(services, "r1", started)
    await _start(services, "r2", started)
    waiting = [asyncio.create_task(_start(services, run_id, started)) for run_id in ("r3", "r4", "r5")]
    await _in_line(services, 3)
    await _given_back(services, "r1", "r2")
    await _until(lambda: len(started) == 4)
    assert started[2:] == ["r3", "r4"] and _holders(services) == {"r3", "r4"}
    await _in_line(services, 1)  # r5 still waits: the slots are full again
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    assert services.slot_waits.waiting(ANN) == 0


@pytest.mark.usefixtures("no_poll")
def test_a_waiter_that_leaves_passes_its_turn_on() -> None:
    asyncio.run(_a_waiter_that_leaves_passes_its_turn_on())


async def _a_waiter_that_leaves_passes_its_turn_on() -> None:
    services, started = _services(), list[str]()
    await _start(services, "r1", started)
    first = asyncio.create_task(_start(services, "r2", started))
    await _in_line(services, 1)
    second = asyncio.create_task(_start(services, "r3", started))
    await _in_line(services, 2)
    services.store.slots.release([ANN], "r1")  # freed where nobody here hears it (the poll is off)
    first.cancel()  # the first in line goes away before it tries: its leaving wakes the next
    await asyncio.gather(first, return_exceptions=True)
    async with asyncio.timeout(GUARD_SECONDS):
        await second
    assert started == ["r1", "r3"] and _holders(services) == {"r3"}


def test_the_first_in_line_finds_a_slot_freed_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slot_waits, "POLL_SECONDS", (0.01, 0.02))
    asyncio.run(_the_first_in_line_finds_a_slot_freed_elsewhere())


async def _the_first_in_line_finds_a_slot_freed_elsewhere() -> None:
    services, started = _services(), list[str]()
    await _start(services, "r1", started)
    waiting = asyncio.create_task(_start(services, "r2", started))
    await _in_line(services, 1)
    services.store.slots.release([ANN], "r1")  # another process's release: nobody here is told
    async with asyncio.timeout(GUARD_SECONDS):
        await waiting
    assert started == ["r1", "r2"]


def test_a_run_still_refused_when_its_wait_is_over_gets_the_refusal() -> None:
    asyncio.run(_a_run_still_refused_when_its_wait_is_over_gets_the_refusal())


async def _a_run_still_refused_when_its_wait_is_over_gets_the_refusal() -> None:
    services, started = _services(wait=0.2), list[str]()
    await _start(services, "r1", started)
    with pytest.raises(TooManyRuns) as refused:
        await _start(services, "r2", started)
    assert refused.value.limit == "user_working_runs" and refused.value.key == ANN
    assert started == ["r1"] and _holders(services) == {"r1"} and services.slot_waits.waiting(ANN) == 0


def test_with_no_wait_a_run_past_the_cap_is_refused_at_once() -> None:
    asyncio.run(_with_no_wait_a_run_past_the_cap_is_refused_at_once())


async def _with_no_wait_a_run_past_the_cap_is_refused_at_once() -> None:
    services, started = _services(wait=0), list[str]()
    await _start(services, "r1", started)
    lines: list[SlotKey] = []
    services.slot_waits.line = lambda key: (lines.append(key), None)[1]  # type: ignore[method-assign]
    with pytest.raises(TooManyRuns):
        await _start(services, "r2", started)
    assert lines == [] and _holders(services) == {"r1"}


@pytest.mark.usefixtures("no_poll")
def test_a_request_behind_a_line_joins_it_without_trying() -> None:
    asyncio.run(_a_request_behind_a_line_joins_it_without_trying())


async def _a_request_behind_a_line_joins_it_without_trying() -> None:
    services, started, tries = _services(), list[str](), Counter[str]()

    async def start(run_id: str) -> None:
        def attempt() -> Awaitable[list[SlotKey]]:
            tries[run_id] += 1
            return asyncio.to_thread(admit, services, "ann", None, run_id)

        await admitted(services, "ann", None, attempt)
        started.append(run_id)

    await start("r1")
    second = asyncio.create_task(start("r2"))
    await _in_line(services, 1)
    third = asyncio.create_task(start("r3"))
    await _in_line(services, 2)
    assert tries == {"r1": 1, "r2": 1}  # r3 found ann's line and joined it: no refused take
    await _given_back(services, "r1")
    await second
    await _until(lambda: tries["r3"] == 1)  # first in line now: it tries, and is refused (r2 works)
    assert started == ["r1", "r2"] and services.slot_waits.waiting(ANN) == 1
    third.cancel()
    await asyncio.gather(third, return_exceptions=True)
