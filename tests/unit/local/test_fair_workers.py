"""The local engine takes steps fairly: round-robin across tenants, then users, FIFO per user.

`FairQueue` alone (its order), `Workers` (threads started as needed, a flood queued behind a held
worker does not push another tenant's job back), and `LocalStepFunctions` with an `owner_of`: one
tenant's 30 runs queued before another's one, the other's first step is among the first taken.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from stepline.local.engine import LocalStepFunctions
from stepline.local.workers import FairQueue, Owner, Workers

A1, A2, B1 = Owner("a", "a1"), Owner("a", "a2"), Owner("b", "b1")
WAIT = 20.0


def _order(queue: FairQueue, puts: list[tuple[Owner, str]]) -> list[str]:
    taken: list[str] = []
    for owner, name in puts:
        queue.put(owner, lambda name=name: taken.append(name))
    while len(queue):
        queue.take()()
    return taken


def test_tenants_take_turns_whatever_one_of_them_queued() -> None:
    puts = [(A1, f"a{i}") for i in range(5)] + [(B1, "b0"), (B1, "b1")]
    assert _order(FairQueue(), puts) == ["a0", "b0", "a1", "b1", "a2", "a3", "a4"]


def test_within_a_tenant_users_take_turns_and_each_users_jobs_keep_their_order() -> None:
    puts = [(A1, "x0"), (A1, "x1"), (A1, "x2"), (A2, "y0"), (B1, "z0")]
    assert _order(FairQueue(), puts) == ["x0", "z0", "y0", "x1", "x2"]


def test_an_owner_that_emptied_its_queue_joins_at_the_back_when_it_queues_again() -> None:
    queue = FairQueue()
    taken: list[str] = []
    queue.put(A1, lambda: taken.append("a0"))
    queue.take()()
    queue.put(B1, lambda: taken.append("b0"))
    queue.put(A1, lambda: taken.append("a1"))
    while len(queue):
        queue.take()()
    assert taken == ["a0", "b0", "a1"]


def test_a_flood_queued_behind_a_busy_pool_does_not_push_another_tenants_job_back() -> None:
    workers = Workers(1)
    held, release = threading.Event(), threading.Event()
    taken: list[str] = []
    done = threading.Event()

    def hold() -> None:
        held.set()
        assert release.wait(WAIT)

    try:
        workers.submit(hold, A1)
        assert held.wait(WAIT)
        for i in range(50):
            workers.submit(lambda i=i: taken.append(f"a{i}"), A1)
        workers.submit(lambda: taken.append("b"), B1)
        workers.submit(done.set, A1)
        release.set()
        assert done.wait(WAIT)
    finally:
        workers.close()
    assert taken.index("b") == 1, f"tenant b's job waited behind {taken.index('b')} of a's"
    assert [t for t in taken if t != "b"] == [f"a{i}" for i in range(50)]


def test_the_pool_starts_a_thread_per_queued_job_up_to_its_size() -> None:
    workers = Workers(3)
    together = threading.Barrier(4, timeout=WAIT)  # three jobs and the test, all at once

    def meet() -> None:
        together.wait()

    try:
        for owner in (A1, A1, B1):
            workers.submit(meet, owner)
        together.wait()  # would time out if the pool ran the jobs one after the other
    finally:
        workers.close()


def test_the_engine_takes_a_second_tenants_first_step_among_the_first() -> None:
    taken: list[str] = []
    lock = threading.Lock()
    gate = threading.Event()

    def model_step(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        assert gate.wait(WAIT)  # the first step holds the only worker while everything queues
        with lock:
            taken.append(str(event["runId"]))
        return {"next": "finished"}

    def record(_event: dict[str, Any], _context: Any) -> dict[str, Any]:
        return {}

    routes: dict[str, Callable[[dict[str, Any], Any], dict[str, Any]]] = {
        "stepline-model-step": model_step,
        "stepline-await-input": record,
        "stepline-expire-input": record,
        "stepline-finalize-run": record,
        "stepline-fail-run": record,
    }

    def owner_of(user_id: str, _run_id: str) -> Owner:
        return Owner(f"tenant-{user_id}", user_id)

    machine = LocalStepFunctions(routes, approval_timeout_seconds=3600, workers=1, owner_of=owner_of)
    try:
        for i in range(30):
            machine.start_run("flooder", f"a{i}")
        machine.start_run("other", "b")
        gate.set()

        def all_ended() -> bool:
            ended = [machine.latest_execution(r) for r in [*(f"a{i}" for i in range(30)), "b"]]
            return all(e is not None and e.status == "SUCCEEDED" for e in ended)

        deadline = time.monotonic() + WAIT
        while not all_ended():
            assert time.monotonic() < deadline, "the runs never ended"
            time.sleep(0.01)
    finally:
        machine.close()
    # The flooder's first step may already hold the worker when the rest queue (its tenant then
    # queues again, behind none): the other tenant's step comes at most second after it.
    assert taken.index("b") <= 2, f"tenant-other's step waited behind {taken.index('b')} of the flooder's"
    assert len(taken) == 31


def test_close_waits_for_the_job_that_runs_and_starts_no_other() -> None:
    workers = Workers(2)
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    def held() -> None:
        entered.set()
        release.wait(30)
        order.append("held job returned")

    workers.submit(held, Owner("t", "u"))
    assert entered.wait(30)
    closing = threading.Thread(target=lambda: (workers.close(wait=30), order.append("closed")))
    closing.start()
    closing.join(0.3)  # close may not return while the job runs
    workers.submit(lambda: order.append("a job after close"), Owner("t", "u"))
    release.set()
    closing.join(30)
    assert order == ["held job returned", "closed"]
