"""Run notifications in process: a writer on another thread wakes the stream's event loop."""

from __future__ import annotations

import asyncio
import threading

from pydantic import JsonValue

from stepline.protocol.chunks import parse_chunk
from stepline.runtime.recorder import RunRecorder
from stepline.runtime.stream_push import CoalescingNotifier, InProcessNotifier, coalescing_window
from stepline.store.errors import TerminalState
from stepline.store.memory import MemoryStore
from stepline.store.ports import TurnStart

USER, RUN = "u", "r"


def test_a_notification_from_another_thread_wakes_the_subscriber() -> None:
    notifier = InProcessNotifier()

    async def follow() -> bool:
        subscription = notifier.subscribe(USER, RUN)
        writer = threading.Thread(target=notifier.notify, args=(USER, RUN, 7))
        writer.start()
        try:
            return await subscription.wait(3600)  # returns on the notification, or the test hangs
        finally:
            writer.join()
            subscription.close()

    assert asyncio.run(follow()) is True


def test_notifications_that_came_together_wake_once_and_other_runs_do_not_wake() -> None:
    notifier = InProcessNotifier()

    async def follow() -> list[bool]:
        subscription = notifier.subscribe(USER, RUN)
        notifier.notify(USER, "another-run", 1)
        notifier.notify("another-user", RUN, 1)
        await asyncio.sleep(0)  # let any scheduled wake run
        first = await subscription.wait(0)
        notifier.notify(USER, RUN, 2)
        notifier.notify(USER, RUN, 3)
        await asyncio.sleep(0)
        return [first, await subscription.wait(0), await subscription.wait(0)]

    assert asyncio.run(follow()) == [False, True, False]


def test_closing_unsubscribes_and_a_closed_loop_is_not_an_error() -> None:
    notifier = InProcessNotifier()

    async def subscribe_and_close() -> None:
        kept = notifier.subscribe(USER, RUN)
        closed = notifier.subscribe(USER, RUN)
        assert notifier.subscribers(USER, RUN) == 2
        closed.close()
        closed.close()  # idempotent
        assert notifier.subscribers(USER, RUN) == 1
        del kept  # left subscribed: its loop closes with asyncio.run

    asyncio.run(subscribe_and_close())
    notifier.notify(USER, RUN, 1)  # the subscriber's loop is gone: nothing raises


def started_store() -> MemoryStore:
    store = MemoryStore()
    started = store.start_turn(
        USER, TurnStart(conversation_id="c", run_id=RUN, assistant_message_id="a", user_message=None, now=1)
    )
    store.mark_running(USER, RUN, now=1)
    assert started.run.run_id == RUN
    return store


def recorder(store: MemoryStore, notified: list[int]) -> RunRecorder:
    run = store.get_run(USER, RUN)
    message = store.get_message(USER, run.conversation_id, run.assistant_message_id)
    return RunRecorder(store, run, message, now=lambda: 2, notify=notified.append)


def test_the_recorder_notifies_after_each_append_with_the_last_seq() -> None:
    store = started_store()
    notified: list[int] = []
    rec = recorder(store, notified)
    rec.write([parse_chunk({"type": "start-step"}), parse_chunk({"type": "text-start", "id": "t"})])
    assert notified == []  # the openings wait for what fills them: nothing stored, nothing notified
    rec.write([parse_chunk({"type": "text-delta", "id": "t", "delta": "Hi"})])  # the leading edge
    assert notified == [1]  # one append of one event (the openings and the delta): notified after it was stored
    rec.write([parse_chunk({"type": "text-end", "id": "t"})])
    assert notified == [1, 2]
    assert store.get_run(USER, RUN).last_event_seq == 2


def test_the_recorder_does_not_notify_what_was_not_written() -> None:
    store = started_store()
    notified: list[int] = []
    rec = recorder(store, notified)

    def refuse(*args: object, **kwargs: object) -> object:
        raise TerminalState("run is aborted")

    store.append_events = refuse  # type: ignore[method-assign]
    rec.write([parse_chunk({"type": "finish-step"})])
    assert rec.closed and notified == []


class _Counting(InProcessNotifier):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str, int]] = []

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        self.sent.append((user_id, run_id, seq))
        super().notify(user_id, run_id, seq)


def test_a_coalescing_notifier_sends_the_first_append_of_each_burst_per_run() -> None:
    now = [100.0]
    inner = _Counting()
    coalesced = CoalescingNotifier(inner, window=1.0, clock=lambda: now[0])
    coalesced.notify(USER, RUN, 1)  # the first: sent at once
    now[0] = 100.5
    coalesced.notify(USER, RUN, 2)  # half a window after the last: dropped
    coalesced.notify(USER, "other-run", 1)  # another run has its own
    now[0] = 101.2
    coalesced.notify(USER, RUN, 3)  # over a window after the first sent, but 0.7 s after an append: dropped
    now[0] = 102.1
    coalesced.notify(USER, RUN, 4)  # 0.9 s after the last: the burst goes on, dropped
    now[0] = 103.1
    coalesced.notify(USER, RUN, 5)  # a quiet window before it: sent
    assert inner.sent == [(USER, RUN, 1), (USER, "other-run", 1), (USER, RUN, 5)]
    assert coalescing_window(coalesced) == 1.0
    assert coalescing_window(inner) == 0.0 and coalescing_window(None) == 0.0


def test_a_coalescing_notifier_subscribes_through_its_inner_notifier() -> None:
    inner = InProcessNotifier()
    coalesced = CoalescingNotifier(inner, window=60.0)

    async def follow() -> list[bool]:
        subscription = coalesced.subscribe(USER, RUN)
        assert inner.subscribers(USER, RUN) == 1
        coalesced.notify(USER, RUN, 1)
        coalesced.notify(USER, RUN, 2)
        await asyncio.sleep(0)
        woken = [await subscription.wait(0), await subscription.wait(0)]
        subscription.close()
        return woken

    assert asyncio.run(follow()) == [True, False]


def test_a_step_is_written_as_few_items_and_reads_back_chunk_by_chunk_in_order() -> None:
    store = started_store()
    rec = recorder(store, [])
    chunks: list[dict[str, JsonValue]] = [
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "Hi"},
        {"type": "text-end", "id": "t"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "x"},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "x", "input": {}},
    ]
    rec.write([parse_chunk(chunk) for chunk in chunks])
    events = store.events_after(USER, RUN, 0, now=3)
    # One write: the openings, the leading delta and the boundaries after it in one event (one item).
    assert [(e.seq, e.type, e.durable) for e in events] == [(1, "step_start", True)]
    assert [chunk for e in events for chunk in e.chunks] == chunks
    rec.write([parse_chunk({"type": "finish-step"})])
    assert [e.seq for e in store.events_after(USER, RUN, 1, now=3)] == [2]
