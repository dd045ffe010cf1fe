"""What `SqliteStore` adds to the store contract (tests/contract runs that on it): the state outlives
the store object and the process, and concurrent writers — threads, or another connection to the
same file — are serialised without a lost or duplicated event seq."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from stepline.store.errors import StoreError
from stepline.store.ports import TurnStart
from stepline.store.records import NewEvent
from stepline.store.sqlite import SqliteStore

USER = "alice"


def start(store: SqliteStore, run: str = "r1") -> None:
    store.start_turn(
        USER,
        TurnStart(
            conversation_id=f"c-{run}",
            run_id=run,
            assistant_message_id=f"a-{run}",
            user_message={"id": f"u-{run}", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
            now=1_000,
        ),
    )


def event(i: int) -> NewEvent:
    return NewEvent(type="chunks", chunks=[{"type": "text-delta", "id": "t", "delta": str(i)}])


def test_the_state_is_read_back_by_a_new_store_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "stepline.db"
    first = SqliteStore(path)
    start(first)
    first.append_events(USER, "r1", [event(1), event(2)], now=2_000)
    run, conversation = first.get_run(USER, "r1"), first.get_conversation(USER, "c-r1")
    first.close()
    again = SqliteStore(path)
    assert again.get_run(USER, "r1") == run and again.get_conversation(USER, "c-r1") == conversation
    assert [e.seq for e in again.events_after(USER, "r1", 0, now=2_000)] == [1, 2]
    assert again.stale_runs(heartbeat_before=10**15) == [(USER, "r1")]
    again.close()


def test_concurrent_appends_from_threads_and_a_second_connection_get_every_seq_once(tmp_path: Path) -> None:
    path = tmp_path / "stepline.db"
    stores = [SqliteStore(path), SqliteStore(path)]  # two stores: two sets of connections, as two processes
    start(stores[0])
    barrier = threading.Barrier(8)

    def append(store: SqliteStore) -> None:
        barrier.wait()
        for i in range(25):
            store.append_events(USER, "r1", [event(i)], now=2_000)

    threads = [threading.Thread(target=append, args=(stores[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seqs = [e.seq for e in stores[1].events_after(USER, "r1", 0, now=2_000)]
    assert seqs == list(range(1, 201))
    assert stores[0].get_run(USER, "r1").last_event_seq == 200
    for store in stores:
        store.close()


def test_a_closed_store_refuses_every_call(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "stepline.db")
    start(store)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get_run(USER, "r1")
    with pytest.raises(StoreError, match="closed"):
        start(store, "r2")


def test_close_lets_a_read_in_flight_end_on_an_open_connection(tmp_path: Path) -> None:
    # Closing a connection while another thread ran a statement on it crashed a test worker (a
    # segfault at a browser stack's teardown, its engine threads still reading). A read is held
    # inside the store until `close` has begun; it must still end on its open connection.
    store = SqliteStore(tmp_path / "stepline.db")
    start(store)
    inside, release = threading.Event(), threading.Event()
    read: list[object] = []

    def held(unit: Any) -> object:
        inside.set()
        release.wait(10)
        return unit.run(USER, "r1")

    def reader() -> None:
        try:
            read.append(store._peek(held))  # pyright: ignore[reportPrivateUsage]
        except Exception as error:
            read.append(error)

    threads = [threading.Thread(target=reader)]
    threads[0].start()
    assert inside.wait(10)
    threads.append(threading.Thread(target=store.close))
    threads[1].start()
    threads[1].join(1)  # the closing has begun (before the fix it closed the connection here)
    release.set()
    for thread in threads:
        thread.join(10)
    assert [getattr(r, "run_id", r) for r in read] == ["r1"]
    with pytest.raises(StoreError, match="closed"):
        store.get_run(USER, "r1")


def test_expired_delta_batches_are_purged_and_boundary_events_kept(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "stepline.db", delta_retention_ms=1_000)
    start(store)
    store.append_events(USER, "r1", [NewEvent(type="delta", chunks=[], durable=False), event(1)], now=2_000)
    assert store.purge_expired(now=2_500) == 0
    assert store.purge_expired(now=3_000) == 1  # the delta batch's retention ended at 3 000
    assert [e.seq for e in store.events_after(USER, "r1", 0, now=0)] == [2]
    store.close()


def test_a_thread_s_connection_is_closed_when_the_thread_ends(tmp_path: Path) -> None:
    import gc

    store = SqliteStore(tmp_path / "stepline.db")
    start(store)
    threads = [threading.Thread(target=store.get_run, args=(USER, "r1")) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    gc.collect()
    assert store.open_connections() == 1  # this thread's; moto's execution threads come and go
    store.close()
