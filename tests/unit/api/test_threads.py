"""The API's threads go to waiting tenants in turn: one tenant's burst never queues another's request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from stepline.api.threads import FairThreads

T = TypeVar("T")


def _run(scenario: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(scenario(), timeout=30))


class Gate:
    """Blocking work that holds its thread until opened, and the order the work started in."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._lock = threading.Lock()
        self._gates: dict[str, threading.Event] = {}

    def work(self, name: str) -> Callable[[], str]:
        gate = self._gates.setdefault(name, threading.Event())

        def run() -> str:
            with self._lock:
                self.started.append(name)
            gate.wait(20)
            return name

        return run

    def open(self, name: str) -> None:
        self._gates[name].set()


async def _until(condition: Callable[[], bool]) -> None:
    """Until `condition` holds (what it reads is written by worker threads too: no event to wait on)."""
    while not condition():  # noqa: ASYNC110
        await asyncio.sleep(0.001)


def test_another_tenants_request_takes_the_next_thread_freed_not_a_place_behind_a_burst() -> None:
    async def scenario() -> list[str]:
        threads, gate = FairThreads(total=2), Gate()
        burst = [asyncio.create_task(threads.of("a")(gate.work(f"a{n}"))) for n in range(10)]
        await _until(lambda: len(gate.started) == 2 and threads.waiting == {"a": 8})
        other = asyncio.create_task(threads.of("b")(gate.work("b0")))
        await _until(lambda: threads.waiting == {"a": 8, "b": 1})
        gate.open("a0")  # one thread freed: tenant b's turn comes before a's eight others
        await _until(lambda: len(gate.started) == 3)
        for name in [f"a{n}" for n in range(10)] + ["b0"]:
            gate.open(name)
        await asyncio.gather(*burst, other)
        return gate.started

    started = _run(scenario)
    assert sorted(started[:2]) == ["a0", "a1"] and started[2] == "b0"
    assert sorted(started[3:]) == [f"a{n}" for n in range(2, 10)]  # two threads at once: their order is theirs


def test_waiting_tenants_are_served_in_turn() -> None:
    async def scenario() -> list[str]:
        threads, gate = FairThreads(total=1), Gate()
        first = asyncio.create_task(threads.of("a")(gate.work("a0")))
        await _until(lambda: gate.started == ["a0"])
        tasks = [first]
        for name in ("a1", "a2", "b1", "b2", "c1"):
            tasks.append(asyncio.create_task(threads.of(name[0])(gate.work(name))))
            await _until(lambda: sum(threads.waiting.values()) == len(tasks) - 1)
        for name in ("a0", "a1", "b1", "c1", "a2", "b2"):
            gate.open(name)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return gate.started

    assert _run(scenario) == ["a0", "a1", "b1", "c1", "a2", "b2"]


def test_a_tenant_alone_uses_every_thread() -> None:
    async def scenario() -> int:
        threads, gate = FairThreads(total=4), Gate()
        tasks = [asyncio.create_task(threads.of("a")(gate.work(f"a{n}"))) for n in range(4)]
        await _until(lambda: len(gate.started) == 4)
        at_once = len(gate.started)
        for n in range(4):
            gate.open(f"a{n}")
        await asyncio.gather(*tasks)
        return at_once

    assert _run(scenario) == 4


def test_a_request_cancelled_while_it_waits_leaves_no_thread_taken_or_lost() -> None:
    async def scenario() -> tuple[list[str], dict[str, int]]:
        threads, gate = FairThreads(total=1), Gate()
        holder = asyncio.create_task(threads.of("a")(gate.work("a0")))
        await _until(lambda: gate.started == ["a0"])
        waiting = asyncio.create_task(threads.of("b")(gate.work("b0")))
        await _until(lambda: threads.waiting == {"b": 1})
        waiting.cancel()  # the client went away before its turn
        await asyncio.gather(waiting, return_exceptions=True)
        left = threads.waiting
        gate.open("a0")
        await holder
        later = [asyncio.create_task(threads.of("c")(gate.work("c0")))]
        await _until(lambda: "c0" in gate.started)
        gate.open("c0")
        await asyncio.gather(*later)
        return gate.started, left

    started, left = _run(scenario)
    assert left == {} and started == ["a0", "c0"]


def test_a_request_cancelled_as_it_is_handed_a_thread_passes_the_thread_on() -> None:
    async def scenario() -> bool:
        threads = FairThreads(total=1)
        release = asyncio.Event()

        async def take(tenant: str) -> None:
            async with threads.turn(tenant):
                pass

        async def holder() -> None:
            async with threads.turn("a"):
                await release.wait()
            handed.cancel()  # the thread is b's now, and b has not resumed yet

        holding = asyncio.create_task(holder())
        await _until(lambda: threads.waiting == {} and not release.is_set())
        handed = asyncio.create_task(take("b"))
        after = asyncio.create_task(take("c"))
        await _until(lambda: threads.waiting == {"b": 1, "c": 1})
        release.set()
        await holding
        await asyncio.gather(handed, return_exceptions=True)
        await after  # c's turn came: b passed its thread on
        return handed.cancelled()

    assert _run(scenario)
