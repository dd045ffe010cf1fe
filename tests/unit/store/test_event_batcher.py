"""EventBatcher: boundaries at once, deltas coalesced per window, and the same message either way."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepline.protocol.chunks import UIMessageChunk, parse_chunk
from stepline.protocol.reducer import UIMessageReducer
from stepline.store.event_batcher import (
    DELTA_CHUNK_TYPES,
    EVENT_TYPES,
    OPENING_CHUNK_TYPES,
    EventBatcher,
    event_type_of,
    together,
)
from stepline.store.records import NewEvent

Json = dict[str, Any]


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def c(**raw: Any) -> UIMessageChunk:
    return parse_chunk(raw)


def text_delta(delta: str, id_: str = "t", **extra: Any) -> UIMessageChunk:
    return parse_chunk({"type": "text-delta", "id": id_, "delta": delta, **extra})


def opened(b: EventBatcher, kind: str, id_: str) -> None:
    """Open a part and write the opening at once (it is otherwise held for the next chunk)."""
    assert b.add(c(type=kind, id=id_)) == []
    assert [e.chunks for e in b.flush()] == [[{"type": kind, "id": id_}]]


def batcher(window: float = 0.15) -> tuple[EventBatcher, FakeClock]:
    clock = FakeClock()
    return EventBatcher(window=window, clock=clock), clock


def all_chunks(events: list[NewEvent]) -> list[Json]:
    return [chunk for event in events for chunk in event.chunks]


def reduce(chunks: list[Json]) -> Json:
    reducer = UIMessageReducer()
    for chunk in chunks:
        reducer.apply(parse_chunk(chunk))
    return reducer.snapshot()


# --- deltas -------------------------------------------------------------------------------------


def test_the_first_delta_after_a_quiet_period_is_written_at_once() -> None:
    b, clock = batcher()
    assert b.add(c(type="text-start", id="t")) == []  # an opening boundary waits for what fills it
    assert b.flush()[0].durable
    events = b.add(text_delta("Hel"))
    assert events == [NewEvent(type="delta", chunks=[{"type": "text-delta", "id": "t", "delta": "Hel"}], durable=False)]
    assert not b.has_pending
    assert b.next_deadline() is None
    # quiet again once a whole window passed since that write
    clock.now = 0.15
    assert len(b.add(text_delta("lo"))) == 1


def test_later_deltas_are_held_until_the_window_since_the_last_write_elapses() -> None:
    b, clock = batcher()
    opened(b, "text-start", "t")
    assert len(b.add(text_delta("a"))) == 1  # t = 0: immediate
    for step in range(1, 15):  # 0.01 … 0.14
        clock.now = step / 100
        assert b.add(text_delta(str(step % 10))) == []
    assert b.has_pending
    assert b.next_deadline() == pytest.approx(0.15)
    clock.now = 0.15
    events = b.add(text_delta("z"))
    assert events == [
        NewEvent(type="delta", chunks=[{"type": "text-delta", "id": "t", "delta": "12345678901234z"}], durable=False)
    ]
    assert not b.has_pending


def test_poll_writes_held_deltas_only_once_the_deadline_is_reached() -> None:
    b, clock = batcher(window=0.1)
    opened(b, "text-start", "t")
    b.add(text_delta("a"))
    clock.now = 0.02
    b.add(text_delta("b"))
    assert b.next_deadline() == pytest.approx(0.1)
    clock.now = 0.099
    assert b.poll() == []
    deadline = b.next_deadline()
    assert deadline is not None
    clock.now = deadline
    assert all_chunks(b.poll()) == [{"type": "text-delta", "id": "t", "delta": "b"}]
    assert b.poll() == []
    assert b.next_deadline() is None
    # a delta right after a timer flush is held (the window restarts at the flush)
    clock.now += 0.001
    assert b.add(text_delta("c")) == []
    assert b.next_deadline() == pytest.approx(deadline + 0.1)


def test_the_first_delta_of_every_part_is_written_at_once() -> None:
    """The leading edge: a part's first token is visible at once, even inside a batch window."""
    b, clock = batcher()
    opened(b, "reasoning-start", "r")
    assert all_chunks(b.add(c(type="reasoning-delta", id="r", delta="think"))) == [
        {"type": "reasoning-delta", "id": "r", "delta": "think"}
    ]
    clock.now = 0.001
    assert b.add(c(type="reasoning-delta", id="r", delta="ing")) == []  # held: the window is not over
    clock.now = 0.002
    assert all_chunks(b.add(c(type="text-start", id="t"))) == [  # a boundary writes what is held first
        {"type": "reasoning-delta", "id": "r", "delta": "ing"}
    ]
    clock.now = 0.003
    events = b.add(text_delta("Hi"))  # with the part's opening, held for it: one append
    assert all_chunks(events) == [{"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "Hi"}]
    clock.now = 0.004
    assert b.add(text_delta(" there")) == []
    # the same part's next deltas are batched; the leading edge of another part flushes them with it
    clock.now = 0.005
    events = b.add(c(type="tool-input-delta", toolCallId="c1", inputTextDelta="{"))
    assert all_chunks(events) == [
        {"type": "text-delta", "id": "t", "delta": " there"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{"},
    ]


def test_a_slow_models_deltas_are_never_held() -> None:
    """Deltas that come no faster than one per window are written as they come; faster ones are
    held, at most one window."""
    b, clock = batcher(window=0.05)
    opened(b, "text-start", "slow")
    held = 0
    for i in range(10):  # one every 60 ms: slower than one per 50 ms window
        clock.now = i * 0.06
        held += b.add(parse_chunk({"type": "text-delta", "id": "slow", "delta": str(i)})) == []
    assert held == 0
    b.add(c(type="text-end", id="slow"))
    opened(b, "text-start", "fast")
    start = clock.now
    written = 0
    for i in range(10):  # one every 10 ms: held, at most one window
        clock.now = start + 0.001 + i * 0.01
        events = b.add(parse_chunk({"type": "text-delta", "id": "fast", "delta": str(i)}))
        written += len(events)
        deadline = b.next_deadline()
        assert deadline is None or deadline - clock.now <= 0.05
    assert written == 2  # the leading edge, then one batch when the window had passed


def test_next_deadline_is_none_when_nothing_is_held() -> None:
    b, clock = batcher()
    assert b.next_deadline() is None
    assert b.poll() == []
    opened(b, "text-start", "t")
    assert b.next_deadline() is None
    b.add(text_delta("a"))
    assert b.next_deadline() is None
    clock.now = 0.05
    b.add(text_delta("b"))
    assert b.next_deadline() == pytest.approx(0.15)
    b.flush()
    assert b.next_deadline() is None


def test_a_boundary_flushes_the_pending_deltas_first() -> None:
    b, clock = batcher()
    opened(b, "text-start", "t")
    b.add(text_delta("a"))
    clock.now = 0.01
    b.add(text_delta("b"))
    clock.now = 0.02
    b.add(text_delta("c"))
    events = b.add(c(type="text-end", id="t"))
    assert [(e.type, e.durable, e.chunks) for e in events] == [
        ("delta", False, [{"type": "text-delta", "id": "t", "delta": "bc"}]),
        ("part_end", True, [{"type": "text-end", "id": "t"}]),
    ]
    assert not b.has_pending


def test_a_boundary_with_nothing_pending_is_one_event() -> None:
    b, _ = batcher()
    assert b.add(c(type="start", messageId="m")) == [
        NewEvent(type="conversation", chunks=[{"type": "start", "messageId": "m"}], durable=True)
    ]


def test_deltas_of_one_part_in_a_batch_become_one_chunk() -> None:
    b, clock = batcher()
    opened(b, "text-start", "t")
    b.add(text_delta("first "))
    clock.now = 0.001
    for i in range(500):
        assert b.add(text_delta(f"w{i} ")) == []
    events = b.flush()
    assert len(events) == 1
    assert events[0].chunks == [{"type": "text-delta", "id": "t", "delta": "".join(f"w{i} " for i in range(500))}]
    assert b.flush() == []


def test_deltas_of_different_parts_keep_their_exact_order() -> None:
    b, clock = batcher()
    b.add(c(type="tool-input-start", toolCallId="c1", toolName="a"))
    b.add(c(type="tool-input-start", toolCallId="c2", toolName="b"))
    opened(b, "reasoning-start", "x")
    opened(b, "text-start", "x")
    for raw in (  # the first delta of each part: written at once (leading edges)
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": ""},
        {"type": "tool-input-delta", "toolCallId": "c2", "inputTextDelta": ""},
        {"type": "reasoning-delta", "id": "x", "delta": ""},
        {"type": "text-delta", "id": "x", "delta": "0"},
    ):
        assert len(b.add(parse_chunk(raw))) == 1
    clock.now = 0.01
    for raw in (
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a"'},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": ":1"},
        {"type": "tool-input-delta", "toolCallId": "c2", "inputTextDelta": "{"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "}"},
        {"type": "reasoning-delta", "id": "x", "delta": "r"},
        {"type": "text-delta", "id": "x", "delta": "t"},  # same id, another part type: not merged
        {"type": "text-delta", "id": "x", "delta": "u"},
    ):
        assert b.add(parse_chunk(raw)) == []
    assert all_chunks(b.flush()) == [
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":1'},
        {"type": "tool-input-delta", "toolCallId": "c2", "inputTextDelta": "{"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "}"},
        {"type": "reasoning-delta", "id": "x", "delta": "r"},
        {"type": "text-delta", "id": "x", "delta": "tu"},
    ]


def test_a_merged_delta_keeps_the_last_provider_metadata() -> None:
    b, clock = batcher()
    opened(b, "text-start", "t")
    b.add(text_delta("a"))
    clock.now = 0.01
    b.add(text_delta("b", providerMetadata={"p": {"n": 1}}))
    b.add(text_delta("c", providerMetadata={"p": {"n": 2}}))
    b.add(text_delta("d"))
    assert all_chunks(b.flush()) == [
        {"type": "text-delta", "id": "t", "delta": "bcd", "providerMetadata": {"p": {"n": 2}}}
    ]


def test_a_single_held_delta_is_written_as_it_came() -> None:
    b, clock = batcher()
    opened(b, "reasoning-start", "r")
    b.add(c(type="reasoning-delta", id="r", delta="a"))
    clock.now = 0.01
    b.add(c(type="reasoning-delta", id="r", delta="b", providerMetadata={"p": {"s": "x"}}))
    assert all_chunks(b.flush()) == [
        {"type": "reasoning-delta", "id": "r", "delta": "b", "providerMetadata": {"p": {"s": "x"}}}
    ]


def test_flush_at_the_end_writes_what_is_held_and_nothing_twice() -> None:
    b, clock = batcher()
    opened(b, "text-start", "t")
    b.add(text_delta("a"))
    clock.now = 0.01
    b.add(text_delta("b"))
    assert all_chunks(b.flush()) == [{"type": "text-delta", "id": "t", "delta": "b"}]
    assert b.flush() == []
    assert b.poll() == []


def test_window_zero_writes_every_delta_and_a_negative_window_is_refused() -> None:
    b, _ = batcher(window=0)
    opened(b, "text-start", "t")
    assert [len(b.add(text_delta(str(i)))) for i in range(5)] == [1] * 5
    with pytest.raises(ValueError, match="window"):
        EventBatcher(window=-0.1)
    with pytest.raises(ValueError, match="window"):
        EventBatcher(window=float("nan"))


def test_event_types_follow_the_documented_mapping() -> None:
    b, _ = batcher()
    samples: list[tuple[Json, str, bool]] = [
        ({"type": "start", "messageId": "m"}, "conversation", True),
        ({"type": "start-step"}, "step_start", True),
        ({"type": "tool-input-start", "toolCallId": "c", "toolName": "w"}, "tool_use", True),
        ({"type": "tool-input-available", "toolCallId": "c", "toolName": "w", "input": {}}, "tool_use", True),
        ({"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c"}, "approval", True),
        ({"type": "tool-approval-response", "approvalId": "a", "approved": True}, "approval_resolved", True),
        ({"type": "tool-output-available", "toolCallId": "c", "output": 1}, "tool_result", True),
        ({"type": "tool-output-denied", "toolCallId": "c"}, "tool_result", True),
        ({"type": "data-progress", "id": "p", "data": {"pct": 5}}, "data", True),
        ({"type": "data-status", "data": "busy", "transient": True}, "data", False),
        ({"type": "source-url", "sourceId": "s", "url": "https://x.test"}, "content", True),
        ({"type": "message-metadata", "messageMetadata": {"a": 1}}, "metadata", True),
        ({"type": "finish-step"}, "step_end", True),
        ({"type": "error", "errorText": "boom"}, "error", True),
        ({"type": "abort", "reason": "user"}, "abort", True),
        ({"type": "finish", "finishReason": "stop"}, "done", True),
    ]
    for raw, expected, durable in samples:
        added = b.add(parse_chunk(raw))
        if raw["type"] in OPENING_CHUNK_TYPES:
            assert added == []
            added = b.flush()
        assert added == [NewEvent(type=expected, chunks=[raw], durable=durable)]
    assert event_type_of("text-delta") == "delta"
    assert event_type_of("data-anything") == "data"
    assert DELTA_CHUNK_TYPES.isdisjoint(EVENT_TYPES)


# --- write rate ---------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [0.05, 0.15, 0.3])
def test_writes_at_10000_deltas_per_second_stay_near_one_per_window(window: float) -> None:
    rate, seconds = 10_000, 2.0
    b, clock = batcher(window)
    boundaries = [c(type="start", messageId="m"), c(type="start-step"), c(type="text-start", id="t")]
    events: list[NewEvent] = []
    for chunk in boundaries:
        events += b.add(chunk)
    for i in range(int(rate * seconds)):
        clock.now = i / rate
        events += b.add(text_delta("x"))
    clock.now = seconds
    for chunk in (c(type="text-end", id="t"), c(type="finish-step"), c(type="finish")):
        events += b.add(chunk)
    durable = [e for e in events if e.durable]
    assert len(durable) == 6
    per_second = len(events) / seconds
    assert per_second <= 1 / window + len(durable) / seconds + 1
    assert "".join(str(ch["delta"]) for ch in all_chunks(events) if ch["type"] == "text-delta") == "x" * 20_000


# --- the property: the same message, whatever the timing ---------------------------------------

TOOL_PIECES = ['{"city":', '"Par', 'is"', ',"days":', "3", "}", " ", "[", '"\\u00e9', "\\n", "tru", "e"]


@st.composite
def timed_streams(draw: st.DrawFn) -> list[tuple[float, bool, Json]]:
    """A valid chunk stream with interleaved open parts, each chunk with a gap and maybe a poll before it."""
    raw: list[Json] = [{"type": "start", "messageId": "m"}, {"type": "start-step"}]
    ids = itertools.count()
    open_parts: list[tuple[str, str]] = []  # (kind, id)
    for _ in range(draw(st.integers(0, 80))):
        action = draw(
            st.sampled_from(
                ["open", "delta", "delta", "delta", "delta", "delta", "close", "data", "transient", "step", "meta"]
            )
        )
        if action == "open" or (action in ("delta", "close") and not open_parts):
            kind = draw(st.sampled_from(["text", "reasoning", "tool"]))
            part_id = f"{kind[0]}{next(ids)}"
            open_parts.append((kind, part_id))
            if kind == "tool":
                raw.append({"type": "tool-input-start", "toolCallId": part_id, "toolName": "weather"})
            else:
                raw.append({"type": f"{kind}-start", "id": part_id})
        elif action == "delta":
            kind, part_id = draw(st.sampled_from(open_parts))
            for _ in range(draw(st.integers(1, 6))):
                if kind == "tool":
                    piece = draw(st.sampled_from(TOOL_PIECES))
                    raw.append({"type": "tool-input-delta", "toolCallId": part_id, "inputTextDelta": piece})
                else:
                    delta: Json = {"type": f"{kind}-delta", "id": part_id, "delta": draw(st.text(max_size=4))}
                    if draw(st.integers(0, 9)) == 0:
                        delta["providerMetadata"] = {"p": {"n": draw(st.integers(0, 3))}}
                    raw.append(delta)
        elif action == "close":
            kind, part_id = draw(st.sampled_from(open_parts))
            open_parts.remove((kind, part_id))
            raw.extend(_close(kind, part_id, output=draw(st.booleans())))
        elif action == "data":
            raw.append({"type": "data-progress", "id": draw(st.sampled_from(["a", "b"])), "data": {"n": len(raw)}})
        elif action == "transient":
            raw.append({"type": "data-status", "data": len(raw), "transient": True})
        elif action == "meta":
            raw.append({"type": "message-metadata", "messageMetadata": {"k": len(raw)}})
        elif not open_parts:
            raw += [{"type": "finish-step"}, {"type": "start-step"}]
    for kind, part_id in open_parts:
        raw.extend(_close(kind, part_id, output=True))
    raw += [{"type": "finish-step"}, {"type": "finish", "finishReason": "stop"}]
    gap = st.one_of(st.sampled_from([0.0, 0.001, 0.0499, 0.05, 0.1, 0.149, 0.15, 0.151, 0.3]), st.floats(0, 0.4))
    return [(draw(gap), draw(st.integers(0, 4)) == 0, chunk) for chunk in raw]


def _close(kind: str, part_id: str, *, output: bool) -> list[Json]:
    if kind != "tool":
        return [{"type": f"{kind}-end", "id": part_id}]
    closing: list[Json] = [{"type": "tool-input-available", "toolCallId": part_id, "toolName": "weather", "input": {}}]
    if output:
        closing.append({"type": "tool-output-available", "toolCallId": part_id, "output": {"ok": part_id}})
    return closing


def _key(chunk: Json) -> tuple[str, str] | None:
    if chunk["type"] not in DELTA_CHUNK_TYPES:
        return None
    return (chunk["type"], chunk["toolCallId"] if chunk["type"] == "tool-input-delta" else chunk["id"])


def collapse(chunks: list[Json]) -> list[Any]:
    """Runs of deltas of one part joined (text and last provider metadata); boundaries as they are."""
    out: list[Any] = []
    for chunk in chunks:
        key = _key(chunk)
        if key is None:
            out.append(chunk)
            continue
        text = chunk.get("delta", chunk.get("inputTextDelta"))
        metadata = chunk.get("providerMetadata")
        if out and isinstance(out[-1], list) and out[-1][0] == key:
            out[-1][1] += text
            out[-1][2] = metadata if metadata is not None else out[-1][2]
        else:
            out.append([key, text, metadata])
    return out


@settings(max_examples=150, deadline=None)
@given(stream=timed_streams(), window=st.sampled_from([0.0, 0.05, 0.15, 0.3]))
def test_reducing_the_events_gives_the_same_message_as_reducing_the_chunks(
    stream: list[tuple[float, bool, Json]], window: float
) -> None:
    b, clock = batcher(window)
    events: list[NewEvent] = []
    for gap, poll, raw in stream:
        clock.now += gap
        if poll:
            events += b.poll()
        events += b.add(parse_chunk(raw))
    events += b.flush()
    original = [raw for _, _, raw in stream]
    written = all_chunks(events)

    assert reduce(written) == reduce(original)
    # the same deltas in the same order (only runs of one part are merged), the same boundaries
    assert collapse(written) == collapse([parse_chunk(r).to_wire() for r in original])
    for event in events:
        if event.type == "delta":
            assert not event.durable and event.chunks
            keys = [_key(chunk) for chunk in event.chunks]
            assert None not in keys
            assert all(a != b_ for a, b_ in itertools.pairwise(keys)), "adjacent deltas of one part were not merged"
        else:
            assert len(event.chunks) == 1 and _key(event.chunks[0]) is None
            assert event.durable == (event.chunks[0].get("transient") is not True)
    assert not b.has_pending


def test_an_opening_boundary_is_written_with_the_next_chunk_or_when_its_window_passes() -> None:
    b, clock = batcher(window=0.05)
    assert b.add(c(type="start-step")) == []
    assert b.add(c(type="text-start", id="t")) == []
    assert b.has_pending and b.next_deadline() == pytest.approx(0.05)
    clock.now = 0.004
    events = b.add(text_delta("Hi"))
    assert [(e.type, e.chunks) for e in events] == [
        ("step_start", [{"type": "start-step"}]),
        ("part_start", [{"type": "text-start", "id": "t"}]),
        ("delta", [{"type": "text-delta", "id": "t", "delta": "Hi"}]),
    ]
    # a model that pauses after opening a part: the timer writes the opening once the window passed
    b.add(c(type="text-end", id="t"))
    clock.now = 1.0
    assert b.add(c(type="reasoning-start", id="r")) == []
    clock.now = 1.049
    assert b.poll() == []
    clock.now = 1.05
    assert all_chunks(b.poll()) == [{"type": "reasoning-start", "id": "r"}]
    # a boundary that is not an opening writes the held opening first, in order
    b.add(c(type="start-step"))
    events = b.add(c(type="tool-input-start", toolCallId="c1", toolName="w"))
    assert [e.type for e in events] == ["step_start", "tool_use"]


def test_slow_appends_widen_the_window_to_four_times_their_duration() -> None:
    """A store whose appends take 30 ms gets batches every ~120 ms, not a writer that only writes."""
    b, clock = batcher(window=0.05)
    assert b.effective_window == 0.05
    for _ in range(30):
        b.wrote(0.03)
    assert b.effective_window == pytest.approx(0.12, rel=0.01)
    opened(b, "text-start", "t")
    b.add(text_delta("a"))  # the leading edge is not held, however slow the store
    assert not b.has_pending
    clock.now = 0.01
    b.add(text_delta("b"))
    clock.now = 0.06  # past the configured window, inside the widened one
    assert b.add(text_delta("c")) == []
    assert b.next_deadline() == pytest.approx(0.12, rel=0.01)
    for _ in range(30):
        b.wrote(0.001)  # fast again: back to the configured window
    assert b.effective_window == 0.05
    assert all_chunks(b.add(text_delta("d"))) == [{"type": "text-delta", "id": "t", "delta": "bcd"}]


def test_what_one_append_writes_is_one_event_typed_and_durable_as_its_first_boundary() -> None:
    batcher = EventBatcher(window=0.05, clock=FakeClock())
    ready = [*batcher.add(c(type="start-step")), *batcher.add(c(type="text-start", id="t"))]
    ready += batcher.add(text_delta("Hi"))
    assert [e.type for e in ready] == ["step_start", "part_start", "delta"]
    (one,) = together(ready)
    assert (one.type, one.durable) == ("step_start", True)
    assert one.chunks == [chunk for event in ready for chunk in event.chunks]
    deltas = NewEvent(type="delta", chunks=[text_delta("a").to_wire()], durable=False)
    (batch,) = together([deltas, deltas])
    assert (batch.type, batch.durable, len(batch.chunks)) == ("delta", False, 2)
    assert together([deltas]) == [deltas] and together([]) == []


def test_a_transient_boundary_is_never_merged_into_a_durable_event() -> None:
    transient = NewEvent(type="data", chunks=[{"type": "data-x", "data": 1, "transient": True}], durable=False)
    opening = NewEvent(type="part_start", chunks=[{"type": "text-start", "id": "t"}])
    deltas = NewEvent(type="delta", chunks=[text_delta("a").to_wire()], durable=False)
    assert together([opening, transient]) == [opening, transient]
    (live,) = together([deltas, transient])
    assert (live.type, live.durable) == ("data", False)
