"""Following a run's log: exact resume positions, where a stream stops, and where a wait began."""

from __future__ import annotations

import asyncio
from typing import Any

from stepline.api.tail import TailOptions, follow_run, wait_position
from stepline.protocol._json import dumps
from stepline.protocol.sse import SseDecoder
from stepline.store.memory import MemoryStore
from stepline.store.ports import FinishRun, SnapshotUpdate, TurnStart
from stepline.store.records import EventRecord, NewEvent

USER, RUN = "u", "r"


def store_with_events(batches: list[list[dict[str, Any]]]) -> MemoryStore:
    store = MemoryStore()
    store.start_turn(
        USER,
        TurnStart(conversation_id="c", run_id=RUN, assistant_message_id="a", user_message=None, now=1),
    )
    store.mark_running(USER, RUN, now=1)
    store.append_events(USER, RUN, [NewEvent(type="x", chunks=chunks) for chunks in batches], now=2)
    return store


def waiting_store() -> MemoryStore:
    """A run that has written its `start` (seq 1) and waits for a person."""
    store = store_with_events([[{"type": "start"}]])
    store.request_approval(
        USER,
        RUN,
        approvals=[],
        tool_calls=[],
        snapshot=SnapshotUpdate(parts=[], metadata=None, snapshot_seq=1),
        checkpoint_state={},
        event=None,
        now=3,
    )
    return store


def finish(store: MemoryStore) -> None:
    snapshot = SnapshotUpdate(parts=[], metadata=None, snapshot_seq=store.get_run(USER, RUN).last_event_seq)
    event = NewEvent(type="finish", chunks=[{"type": "finish"}])
    store.finish_run(USER, RUN, FinishRun(status="completed", snapshot=snapshot, event=event, now=3))


def read(store: MemoryStore, **options: Any) -> list[tuple[str | None, str]]:
    tail = TailOptions(poll_seconds=0.01, max_seconds=options.pop("max_seconds", 5), **options.pop("tail", {}))

    async def collect() -> list[tuple[str | None, str]]:
        decoder = SseDecoder()
        out: list[tuple[str | None, str]] = []
        async for frame in follow_run(store, USER, RUN, options=tail, clock=lambda: 2, **options):
            out.extend((e.id, e.data) for e in decoder.feed(frame))
        return out

    return asyncio.run(collect())


def delta(i: int) -> dict[str, Any]:
    return {"type": "text-delta", "id": "t", "delta": str(i)}


def test_a_position_inside_a_batch_resumes_at_the_next_chunk() -> None:
    store = store_with_events([[{"type": "start"}], [delta(1), delta(2), delta(3)], [{"type": "finish-step"}]])
    finish(store)
    everything = read(store)
    assert [i for i, _ in everything] == ["1.0", "2.0", "2.1", "2.2", "3.0", "4.0", None]
    assert everything[-1] == (None, "[DONE]")
    assert read(store, after=(2, 1)) == everything[3:]
    assert read(store, after=(2, -1)) == everything[4:]


def test_a_waiting_run_ends_the_stream_only_when_asked() -> None:
    store = waiting_store()
    assert read(store) == [("1.0", '{"type":"start"}'), (None, "[DONE]")]
    following = read(store, tail={"stop_at_input": False}, max_seconds=0.3)
    assert following == [("1.0", '{"type":"start"}')], "it follows the run through the wait, then gives up"
    held = read(store, tail={"stop_at_input": False, "wait_hold_seconds": 0.05}, max_seconds=30)
    assert held == [("1.0", '{"type":"start"}'), (None, "[DONE]")], "a held wait ends the stream, long before 30 s"


def event(seq: int, chunks: list[dict[str, Any]]) -> EventRecord:
    return EventRecord(user_id=USER, run_id=RUN, seq=seq, type="x", chunks=chunks, created_at=0)


def test_wait_position_is_the_end_of_the_step_that_asked() -> None:
    events = [
        event(1, [{"type": "start"}, {"type": "start-step"}]),
        event(2, [{"type": "tool-input-available", "toolCallId": "q1"}]),
        event(3, [{"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c1"}, {"type": "finish-step"}]),
        event(4, [{"type": "tool-output-available", "toolCallId": "c1"}, {"type": "start-step"}]),
        event(5, [{"type": "finish-step"}]),
    ]
    assert wait_position(events, approval_ids={"ap1"}, tool_call_ids=set()) == (3, 1)
    assert wait_position(events, approval_ids=set(), tool_call_ids={"q1"}) == (3, 1)
    assert wait_position(events, approval_ids={"ap1"}, tool_call_ids={"q1"}) == (3, 1)
    assert wait_position(events, approval_ids={"nope"}, tool_call_ids=set()) == (0, -1)


class CountingStore:
    """The store, counting the tail's reads."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.reads: dict[str, int] = {"get_run": 0, "events_after": 0}

    def get_run(self, *args: Any, **kwargs: Any) -> Any:
        self.reads["get_run"] += 1
        return self.store.get_run(*args, **kwargs)

    def events_after(self, *args: Any, **kwargs: Any) -> Any:
        self.reads["events_after"] += 1
        return self.store.events_after(*args, **kwargs)


def test_a_waiting_run_is_polled_less_and_less_and_its_log_is_read_only_when_it_grew(monkeypatch: Any) -> None:
    store = waiting_store()
    counting = CountingStore(store)
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:  # the tail's polls; the run moves on at set points
        slept.append(seconds)
        if len(slept) == 5:  # the decision arrives: the worker goes on and writes
            store.mark_running(USER, RUN, now=4)
            store.append_events(USER, RUN, [NewEvent(type="x", chunks=[delta(1)])], now=4)
        if len(slept) == 8:
            finish(store)
        await real_sleep(0)

    monkeypatch.setattr("stepline.api.tail.asyncio.sleep", sleep)
    options = TailOptions(poll_seconds=0.01, wait_poll_seconds=0.04, stop_at_input=False)

    async def collect() -> list[str]:
        return [f async for f in follow_run(counting, USER, RUN, options=options, clock=lambda: 2)]  # type: ignore[arg-type]

    frames = asyncio.run(collect())
    assert [e.data for f in frames for e in SseDecoder().feed(f)] == [
        '{"type":"start"}',
        '{"type":"text-delta","id":"t","delta":"1"}',
        '{"type":"finish"}',
        "[DONE]",
    ]
    assert slept == [0.01, 0.02, 0.04, 0.04, 0.04, 0.01, 0.01, 0.01], "backs off while waiting, not while running"
    assert counting.reads["events_after"] == 3, "the log is queried only when the run says it grew"
    assert counting.reads["get_run"] == len(slept) + 3 + 1, "a read per poll, one after each delivery, one at the end"


class ResumingStore(CountingStore):
    """The worker resumes the run between the tail's read of the run and its query of the log."""

    def events_after(self, *args: Any, **kwargs: Any) -> Any:
        if self.reads["events_after"] == 0:
            self.store.mark_running(USER, RUN, now=4)
            self.store.append_events(USER, RUN, [NewEvent(type="x", chunks=[delta(1)])], now=4)
        return super().events_after(*args, **kwargs)


def test_a_run_that_resumes_between_the_reads_does_not_end_the_stream(monkeypatch: Any) -> None:
    # Regression: the tail decided on the run it had read before the query; the run looked waiting,
    # the events the query found had been sent, so a continuation's stream ended as the run went on.
    store = waiting_store()
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        finish(store)  # the run ends at the first pause
        await real_sleep(0)

    monkeypatch.setattr("stepline.api.tail.asyncio.sleep", sleep)
    resuming = ResumingStore(store)

    async def collect() -> list[str]:
        options = TailOptions(poll_seconds=0.01)  # stop_at_input: a continuation's stream
        return [f async for f in follow_run(resuming, USER, RUN, options=options, clock=lambda: 2)]  # type: ignore[arg-type]

    data = [e.data for f in asyncio.run(collect()) for e in SseDecoder().feed(f)]
    assert data == ['{"type":"start"}', '{"type":"text-delta","id":"t","delta":"1"}', '{"type":"finish"}', "[DONE]"]


def test_what_a_child_raises_while_its_run_is_read_is_sent_before_the_stream_ends() -> None:
    # The lead waits on its sub-agent; the stream reads the lead, then the children: the child raises
    # its budget card into the lead's log between the two reads and then waits for a person.
    store = waiting_store()
    card = {"type": "data-budget", "id": "b1", "data": {"state": "requested"}}

    def at_work(run: Any) -> bool:
        if store.get_run(USER, RUN).last_event_seq == 1:
            store.append_events(USER, RUN, [NewEvent(type="x", chunks=[card])], now=3)
        return False

    frames = read(store, at_work=at_work)
    assert frames == [("1.0", '{"type":"start"}'), ("2.0", dumps(card)), (None, "[DONE]")]


def test_while_deltas_come_a_poll_reads_the_log_alone(monkeypatch: Any) -> None:
    """Deltas never end or park a run: a poll after a read that found only deltas reads the log
    alone, and the run again only after something else (on DynamoDB a run read is two consistent
    reads, a log read one)."""
    store = store_with_events([[{"type": "start"}]])
    counting = CountingStore(store)
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:  # the worker writes a batch of deltas between polls
        slept.append(seconds)
        if len(slept) <= 6:
            store.append_events(USER, RUN, [NewEvent(type="delta", chunks=[delta(len(slept))])], now=3)
        else:
            finish(store)
        await real_sleep(0)

    monkeypatch.setattr("stepline.api.tail.asyncio.sleep", sleep)

    async def collect() -> list[str]:
        options = TailOptions(poll_seconds=0.01, stop_at_input=False)
        return [f async for f in follow_run(counting, USER, RUN, options=options, clock=lambda: 2)]  # type: ignore[arg-type]

    data = [e.data for f in asyncio.run(collect()) for e in SseDecoder().feed(f)]
    assert data[0] == '{"type":"start"}' and data[-2:] == ['{"type":"finish"}', "[DONE]"]
    assert [d for d in data if '"text-delta"' in d] == [dumps(delta(n)) for n in range(1, 7)]
    assert counting.reads["events_after"] == 8, "the start, six delta batches, the finish"
    # The run: at the start, after the start event, before the first batch, after the finish.
    assert counting.reads["get_run"] == 4, "no run read while the deltas come"


def test_a_run_that_stops_after_its_deltas_without_an_event_ends_the_stream(monkeypatch: Any) -> None:
    """The poll after the deltas reads the log alone; it finds nothing, so the run is read at once
    and the stream ends on what that says (here: the run waits for a person)."""
    store = store_with_events([[{"type": "start"}]])
    counting = CountingStore(store)
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) <= 2:
            store.append_events(USER, RUN, [NewEvent(type="delta", chunks=[delta(len(slept))])], now=3)
        elif len(slept) == 3:  # the run parks on an approval; its request was in an earlier step's log
            store.request_approval(
                USER,
                RUN,
                approvals=[],
                tool_calls=[],
                snapshot=SnapshotUpdate(parts=[], metadata=None, snapshot_seq=store.get_run(USER, RUN).last_event_seq),
                checkpoint_state={},
                event=None,
                now=4,
            )
        await real_sleep(0)

    monkeypatch.setattr("stepline.api.tail.asyncio.sleep", sleep)

    async def collect() -> list[str]:
        options = TailOptions(poll_seconds=0.01, max_seconds=5)  # stop_at_input: a chat's stream
        return [f async for f in follow_run(counting, USER, RUN, options=options, clock=lambda: 2)]  # type: ignore[arg-type]

    data = [e.data for f in asyncio.run(collect()) for e in SseDecoder().feed(f)]
    assert data == ['{"type":"start"}', dumps(delta(1)), dumps(delta(2)), "[DONE]"]
    assert len(slept) == 3, "ended at the poll after the run parked, not at the deadline"
    assert counting.reads["events_after"] == 4, "the start, two batches, the empty read of the log alone"
