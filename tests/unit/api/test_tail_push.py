"""Following a run with notifications: a notification reads the log at once, a lost one costs one
fallback poll and never an event, and nothing is sent twice. The subscription is a fake driven by
the test (no clock, no sleeps): each `wait` is one point where the writer may act."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from stepline.api.tail import TailOptions, follow_run
from stepline.protocol.sse import SseDecoder
from stepline.store.memory import MemoryStore
from stepline.store.ports import SnapshotUpdate
from stepline.store.records import NewEvent
from tests.unit.api.test_tail import RUN, USER, CountingStore, delta, finish, store_with_events


class ScriptedWake:
    """A subscription whose every `wait` runs the next step of a script: (what the writer does, notified?)."""

    def __init__(self, steps: list[tuple[Callable[[], None], bool]]) -> None:
        self.steps = steps
        self.asked: list[float] = []

    async def wait(self, seconds: float) -> bool:
        self.asked.append(seconds)
        if not self.steps:
            raise AssertionError("the tail waited past the end of the script")
        act, notified = self.steps.pop(0)
        act()
        await asyncio.sleep(0)
        return notified

    def close(self) -> None:
        pass


def append(store: MemoryStore, *chunks: dict[str, Any], kind: str = "delta") -> Callable[[], None]:
    return lambda: store.append_events(USER, RUN, [NewEvent(type=kind, chunks=list(chunks), durable=False)], now=3)


def nothing() -> None:
    pass


def follow(store: Any, wake: ScriptedWake, **options: Any) -> list[tuple[str | None, str]]:
    tail = TailOptions(poll_seconds=0.01, push_poll_seconds=5.0, **options)

    async def collect() -> list[tuple[str | None, str]]:
        decoder = SseDecoder()
        out: list[tuple[str | None, str]] = []
        async for frame in follow_run(store, USER, RUN, options=tail, clock=lambda: 2, wake=wake):
            out.extend((e.id, e.data) for e in decoder.feed(frame))
        return out

    return asyncio.run(collect())


def test_a_notification_reads_the_log_at_once_and_delta_batches_need_no_read_of_the_run() -> None:
    store = store_with_events([[{"type": "start"}]])
    counting = CountingStore(store)
    wake = ScriptedWake(
        [
            (append(store, delta(1)), True),
            (append(store, delta(2)), True),
            (lambda: finish(store), True),
        ]
    )
    frames = follow(counting, wake)
    assert [i for i, _ in frames] == ["1.0", "2.0", "3.0", "4.0", None]
    assert frames[-1] == (None, "[DONE]")
    # the run is read first, and again after the `start` and after the `finish` (boundaries: the run may
    # have ended or parked); each notification is one query of the log, the delta batches no read of the run
    assert counting.reads == {"get_run": 3, "events_after": 4}
    assert wake.asked == [5.0, 5.0, 5.0], "between notifications the tail waits the fallback interval"


def test_a_lost_notification_is_delivered_by_the_fallback_poll() -> None:
    store = store_with_events([[{"type": "start"}]])
    wake = ScriptedWake(
        [
            (append(store, delta(1)), False),  # written, never notified: the wait times out
            (lambda: finish(store), False),
        ]
    )
    frames = follow(store, wake)
    assert [d for _, d in frames] == [
        '{"type":"start"}',
        '{"type":"text-delta","id":"t","delta":"1"}',
        '{"type":"finish"}',
        "[DONE]",
    ]
    assert wake.asked == [5.0, 5.0], "each lost notification cost one fallback interval, no more"


def test_duplicate_and_empty_notifications_send_nothing_twice() -> None:
    store = store_with_events([[{"type": "start"}]])
    wake = ScriptedWake(
        [
            (append(store, delta(1), delta(2)), True),
            (nothing, True),  # notified again for the same seq
            (nothing, True),
            (append(store, delta(3)), True),
            (nothing, False),  # a poll that finds nothing new
            (lambda: finish(store), True),
            (nothing, True),
        ]
    )
    frames = follow(store, wake)
    ids = [i for i, _ in frames if i is not None]
    assert ids == ["1.0", "2.0", "2.1", "3.0", "4.0"]
    assert len(ids) == len(set(ids))
    assert frames[-1] == (None, "[DONE]")


def test_a_notified_status_change_without_events_is_read_from_the_run() -> None:
    """A wait for a person is a change of status only: the notification finds no new event, the
    tail reads the run and ends the stream (stop_at_input) without waiting for a poll."""
    store = store_with_events([[{"type": "start"}], [{"type": "finish-step"}]])

    def park() -> None:
        store.request_approval(
            USER,
            RUN,
            approvals=[],
            tool_calls=[],
            snapshot=SnapshotUpdate(parts=[], metadata=None, snapshot_seq=2),
            checkpoint_state={},
            event=None,
            now=3,
        )

    wake = ScriptedWake([(park, True)])
    frames = follow(store, wake)
    assert [i for i, _ in frames] == ["1.0", "2.0", None]
    assert wake.asked == [5.0]
