"""The working-run slots' contract, on each backend (memory, SQLite, DynamoDB on moto), and under races.

GIVEN an owner's slots with a cap, WHEN runs take, renew and release leases, THEN a run past the
cap is refused (nothing written), a holder renewing is never refused, a release frees the slot,
a lease that expired (a crashed run that never released) no longer counts, taking on a user and a
tenant is all or nothing, and many threads racing the last slots never pass the cap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from stepline.runtime.working_runs import retry_after
from stepline.store.run_slots import MemorySlots, RunSlots, SlotCap, SlotKey, take_all
from stepline.store.sqlite_slots import SqliteSlots
from tests.support.dynamo_store import make_dynamo_store

ANN = SlotKey("user", "ann")
BOB = SlotKey("user", "bob")
ACME = SlotKey("tenant", "acme")
NOW = 1_764_633_600_000
LEASE = 60_000


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def slots(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunSlots]:
    if request.param == "memory":
        yield MemorySlots()
    elif request.param == "sqlite":
        yield SqliteSlots(tmp_path / "stepline.db")
    else:
        with mock_aws():
            store, _ = make_dynamo_store()
            yield store.slots


def _take(slots: RunSlots, cap: SlotCap, run: str, now: int = NOW) -> bool:
    return slots.take_one(cap, run, now_ms=now, lease_ms=LEASE)


def test_the_cap_refuses_a_new_run_and_a_release_frees_its_slot(slots: RunSlots) -> None:
    cap = SlotCap(ANN, "user_working_runs", 2)
    assert _take(slots, cap, "r1") and _take(slots, cap, "r2")
    assert not _take(slots, cap, "r3")
    assert set(slots.holders(ANN, now_ms=NOW)) == {"r1", "r2"}  # the refused run wrote nothing
    assert _take(slots, cap, "r1", NOW + 1000)  # a holder renewing is never refused
    assert slots.holders(ANN, now_ms=NOW)["r1"] == NOW + 1000 + LEASE
    slots.release([ANN], "r2")
    slots.release([ANN], "r2")  # twice: nothing more happens
    slots.release([ANN], "never-held")
    assert _take(slots, cap, "r3")
    assert set(slots.holders(ANN, now_ms=NOW)) == {"r1", "r3"}
    assert slots.holders(BOB, now_ms=NOW) == {}  # another owner's slots are their own
    assert _take(slots, SlotCap(BOB, "user_working_runs", 1), "b1")


def test_a_lease_that_expired_no_longer_counts(slots: RunSlots) -> None:
    """A run that crashed without releasing: its slot comes back when the lease expires."""
    cap = SlotCap(ANN, "user_working_runs", 1)
    assert _take(slots, cap, "crashed")
    assert not _take(slots, cap, "next", NOW + LEASE - 1)
    assert _take(slots, cap, "next", NOW + LEASE)
    assert set(slots.holders(ANN, now_ms=NOW + LEASE)) == {"next"}


def test_a_run_without_a_cap_is_counted_but_never_refused(slots: RunSlots) -> None:
    assert _take(slots, SlotCap(ANN, "user_working_runs", 1), "r1")
    assert _take(slots, SlotCap(ANN, "user_working_runs", None), "resumed")  # a resumed run takes its slot back
    assert set(slots.holders(ANN, now_ms=NOW)) == {"r1", "resumed"}
    assert not _take(slots, SlotCap(ANN, "user_working_runs", 2), "new")  # and it counts


def test_taking_on_a_user_and_a_tenant_is_all_or_nothing(slots: RunSlots) -> None:
    tenant = SlotCap(ACME, "tenant_working_runs", 1)
    assert take_all(slots, [SlotCap(ANN, "user_working_runs", 5), tenant], "r1", now_ms=NOW, lease_ms=LEASE) is None
    refused = take_all(slots, [SlotCap(BOB, "user_working_runs", 5), tenant], "b1", now_ms=NOW, lease_ms=LEASE)
    assert refused == tenant
    assert slots.holders(BOB, now_ms=NOW) == {}  # bob's slot, taken first, went back


def test_threads_racing_the_last_slots_never_pass_the_cap(slots: RunSlots) -> None:
    cap = SlotCap(ACME, "tenant_working_runs", 3)
    taken: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(12)

    def race(n: int) -> None:
        start.wait()
        if _take(slots, cap, f"r{n}"):
            with lock:
                taken.append(f"r{n}")

    threads = [threading.Thread(target=race, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(taken) == 3
    assert set(slots.holders(ACME, now_ms=NOW)) == set(taken)


def test_a_refusals_retry_after_is_spread_over_one_to_three_seconds() -> None:
    drawn = {retry_after() for _ in range(60)}
    assert drawn <= {1, 2, 3} and len(drawn) > 1, "one value for all would bring a refused burst back together"
