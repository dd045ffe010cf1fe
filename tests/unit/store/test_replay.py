"""Replay for reconnects: from every position of a recorded run, the rest rebuilds exactly the full message."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stepline.errors import UIMessageStreamError
from stepline.protocol._json import dumps, loads_strict
from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import UIMessageReducer, reduce_ui_message_stream
from stepline.protocol.sse import SseDecoder, decode_ui_message_stream
from stepline.store.event_batcher import EventBatcher
from stepline.store.records import EventRecord, NewEvent
from stepline.store.replay import (
    WHOLE_EVENT,
    chunks_after,
    chunks_of,
    event_id,
    parse_event_id,
    resume,
    sse_frames,
)

Json = dict[str, Any]


def words(kind: str, part_id: str, text: str) -> list[Json]:
    key = "toolCallId" if kind == "tool-input-delta" else "id"
    field = "inputTextDelta" if kind == "tool-input-delta" else "delta"
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    return [{"type": kind, key: part_id, field: piece} for piece in pieces]


def interleave(a: list[Json], b: list[Json]) -> list[Json]:
    out: list[Json] = []
    for i in range(max(len(a), len(b))):
        out += a[i : i + 1] + b[i : i + 1]
    return out


RUN: list[Json] = [
    {"type": "start", "messageId": "msg-1", "messageMetadata": {"model": "claude-sonnet"}},
    {"type": "start-step"},
    {"type": "reasoning-start", "id": "r1"},
    *words("reasoning-delta", "r1", "The user wants the weather in Paris and an email to Ana."),
    {"type": "reasoning-end", "id": "r1", "providerMetadata": {"anthropic": {"signature": "sig-1"}}},
    {"type": "text-start", "id": "t1"},
    *words("text-delta", "t1", "Let me check the weather and draft the email."),
    {"type": "text-end", "id": "t1"},
    {"type": "tool-input-start", "toolCallId": "call-1", "toolName": "weather"},
    {"type": "tool-input-start", "toolCallId": "call-2", "toolName": "send_email", "title": "Send email"},
    *interleave(
        words("tool-input-delta", "call-1", '{"city":"Paris","days":2}'),
        words("tool-input-delta", "call-2", '{"to":"ana@example.com","body":"Meeting at 10, café Lumière"}'),
    ),
    {
        "type": "tool-input-available",
        "toolCallId": "call-1",
        "toolName": "weather",
        "input": {"city": "Paris", "days": 2},
    },
    {
        "type": "tool-input-available",
        "toolCallId": "call-2",
        "toolName": "send_email",
        "input": {"to": "ana@example.com", "body": "Meeting at 10, café Lumière"},
    },
    {"type": "tool-approval-request", "approvalId": "ap-1", "toolCallId": "call-2", "reason": "sends mail"},
    {"type": "tool-output-available", "toolCallId": "call-1", "output": {"tempC": 18, "sky": "cloudy"}},
    {"type": "data-progress", "id": "p1", "data": {"pct": 50}},
    {"type": "data-status", "data": "waiting for approval", "transient": True},
    {"type": "finish-step"},
    # the continuation after the decision updates the same run and message
    {"type": "tool-approval-response", "approvalId": "ap-1", "approved": True},
    {"type": "tool-output-available", "toolCallId": "call-2", "output": {"sent": True, "id": "mail-7"}},
    {"type": "data-progress", "id": "p1", "data": {"pct": 100}},
    {"type": "start-step"},
    {"type": "source-url", "sourceId": "s1", "url": "https://weather.example/paris", "title": "Paris"},
    {"type": "reasoning-start", "id": "r2"},
    {"type": "text-start", "id": "t2"},
    *interleave(words("reasoning-delta", "r2", "Both done; summarise."), words("text-delta", "t2", "It is 18 °C")),
    {"type": "reasoning-end", "id": "r2"},
    *words("text-delta", "t2", " and cloudy in Paris; the email to Ana was sent."),
    {"type": "text-end", "id": "t2"},
    {"type": "finish-step"},
    {"type": "message-metadata", "messageMetadata": {"usage": {"inputTokens": 812, "outputTokens": 96}}},
    {"type": "finish", "finishReason": "stop"},
]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(raw: list[Json], step: float = 0.02) -> list[EventRecord]:
    clock = FakeClock()
    batcher = EventBatcher(window=0.15, clock=clock)
    new: list[NewEvent] = []
    for chunk in raw:
        clock.now += step
        new += batcher.add(parse_chunk(chunk))
    new += batcher.flush()
    return [
        EventRecord(user_id="u", run_id="r", seq=seq, type=e.type, chunks=e.chunks, durable=e.durable, created_at=seq)
        for seq, e in enumerate(new, start=1)
    ]


def reduce(chunks: list[Json], message: Json | None = None) -> Json:
    reducer = UIMessageReducer(message)
    for chunk in chunks:
        reducer.apply(parse_chunk(chunk))
    return reducer.snapshot()


def stored(message: Json) -> Json:
    """What a snapshot looks like after a round trip through the store."""
    return loads_strict(dumps(message))


def positioned(events: list[EventRecord]) -> list[tuple[int, int, Json]]:
    return [(e.seq, i, chunk) for e in events for i, chunk in enumerate(e.chunks)]


def every_position(events: list[EventRecord]) -> list[tuple[int, int]]:
    return [(0, WHOLE_EVENT)] + [(s, i) for s, i, _ in positioned(events)] + [(e.seq, WHOLE_EVENT) for e in events]


def seen_at(events: list[EventRecord], position: tuple[int, int]) -> tuple[list[Json], list[Json]]:
    seq, index = position
    seen: list[Json] = []
    rest: list[Json] = []
    for s, i, chunk in positioned(events):
        (seen if s < seq or (s == seq and (index == WHOLE_EVENT or i <= index)) else rest).append(chunk)
    return seen, rest


EVENTS = record(RUN)
FULL = reduce(RUN)


def test_the_recorded_run_has_batches_of_several_chunks_and_the_full_message() -> None:
    assert any(len(e.chunks) > 1 for e in EVENTS), "the run must exercise positions inside a batch"
    assert len(EVENTS) < len(RUN)
    assert reduce(list(chunks_of(EVENTS))) == FULL
    assert [p["type"] for p in FULL["parts"]] == [
        "step-start",
        "reasoning",
        "text",
        "tool-weather",
        "tool-send_email",
        "data-progress",
        "step-start",
        "source-url",
        "reasoning",
        "text",
    ]
    assert FULL["parts"][4]["state"] == "output-available"
    assert FULL["parts"][4]["approval"] == {"id": "ap-1", "approved": True, "requestReason": "sends mail"}
    assert FULL["parts"][5]["data"] == {"pct": 100}
    assert FULL["parts"][9]["text"] == "It is 18 °C and cloudy in Paris; the email to Ana was sent."


def test_resume_from_every_position_rebuilds_exactly_the_full_message() -> None:
    positions = every_position(EVENTS)
    assert len(positions) == len(list(chunks_of(EVENTS))) + len(EVENTS) + 1
    mid_text = 0
    for seq, index in positions:
        seen, _ = seen_at(EVENTS, (seq, index))
        snapshot = stored(reduce(seen)) if seen else None
        if snapshot is not None and any(p.get("state") == "streaming" for p in snapshot["parts"]):
            mid_text += 1
        original = copy.deepcopy(snapshot)
        assert resume(snapshot, seq, EVENTS, snapshot_index=index) == FULL, (seq, index)
        later = [e for e in EVENTS if e.seq >= seq]
        assert resume(snapshot, seq, later, snapshot_index=index) == FULL, (seq, index)
        assert snapshot == original, "resume must not change the snapshot it was given"
    assert mid_text > 10, "snapshots inside open text and reasoning parts are covered"


def test_resume_after_the_last_event_is_the_snapshot_and_with_no_snapshot_is_the_whole_run() -> None:
    last = EVENTS[-1].seq
    assert resume(stored(FULL), last, EVENTS) == FULL
    assert resume(None, 0, EVENTS) == FULL
    assert resume(None, 0, []) == {"id": "", "role": "assistant", "parts": []}
    assert resume(None, 0, [], message_id="m-9")["id"] == "m-9"


def test_sse_frames_from_every_position_carry_exactly_the_rest_with_parseable_ids() -> None:
    everything = positioned(EVENTS)
    for position in every_position(EVENTS):
        seen, rest = seen_at(EVENTS, position)
        body = "".join(sse_frames(EVENTS, resume_from=position))
        decoded = decode_ui_message_stream(body)
        assert [chunk.to_wire() for chunk in decoded] == rest, position
        # a client holding the seen part goes on to the full message
        client = UIMessageReducer()
        for chunk in seen:
            client.apply(parse_chunk(chunk))
        for chunk in decoded:
            client.apply(chunk)
        assert client.snapshot() == FULL
        # the ids name exactly the chunks sent, in order
        ids = [event.id for event in SseDecoder().feed(body)]
        expected = [(s, i) for s, i, _ in everything][len(seen) :]
        assert [parse_event_id(i) for i in ids] == expected


def test_a_client_resuming_at_a_frame_id_gets_exactly_the_frames_after_it() -> None:
    frames = list(sse_frames(EVENTS))
    assert len(frames) == len(list(chunks_of(EVENTS)))
    for k, frame in enumerate(frames):
        last_id = SseDecoder().feed(frame)[0].id
        assert list(sse_frames(EVENTS, resume_from=parse_event_id(last_id))) == frames[k + 1 :]


def test_a_plain_seq_id_means_the_whole_event_was_seen() -> None:
    batch = next(e for e in EVENTS if len(e.chunks) > 1)
    frames = list(sse_frames(EVENTS, resume_from=parse_event_id(str(batch.seq))))
    assert frames[0].startswith(f"id: {event_id(batch.seq + 1, 0)}\n")
    assert frames == list(sse_frames(EVENTS, resume_from=(batch.seq, len(batch.chunks) - 1)))


def test_sse_frames_with_done_end_the_stream() -> None:
    body = "".join(sse_frames(EVENTS, resume_from=(EVENTS[-1].seq, WHOLE_EVENT), done=True))
    assert body == "data: [DONE]\n\n"
    assert decode_ui_message_stream(body) == []
    assert "".join(sse_frames(EVENTS[-1:])).startswith(f"id: {EVENTS[-1].seq}.0\ndata: ")


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("5", (5, WHOLE_EVENT)),
        ("0", (0, WHOLE_EVENT)),
        ("5.0", (5, 0)),
        ("12.34", (12, 34)),
        (" 7.1 ", (7, 1)),
        ("123456789012345678", (123456789012345678, WHOLE_EVENT)),
    ],
)
def test_event_ids_parse(text: str, position: tuple[int, int]) -> None:
    assert parse_event_id(text) == position


@pytest.mark.parametrize(
    "text",
    [None, "", " ", "a", "5.", ".5", "-1", "5.-1", "+5", "5.1.2", "05", "5.01", "1e3", "5 .1", "5.1x", "５", "٣", "5\n"]
    + ["1" * 19, "1." + "1" * 10, "5,1", "0x5"],
)
def test_bad_event_ids_are_none(text: str | None) -> None:
    assert parse_event_id(text) is None


def test_event_id_round_trips() -> None:
    for seq, index in [(1, 0), (42, 17), (10**12, 3)]:
        assert parse_event_id(event_id(seq, index)) == (seq, index)


def test_chunks_of_and_chunks_after() -> None:
    assert list(chunks_of(EVENTS)) == [chunk for e in EVENTS for chunk in e.chunks]
    assert list(chunks_of([])) == []
    batch = next(e for e in EVENTS if len(e.chunks) > 1)
    after = list(chunks_after(EVENTS, (batch.seq, 0)))
    assert after[0] == (batch.seq, 1, batch.chunks[1])
    assert len(after) == sum(len(e.chunks) for e in EVENTS if e.seq > batch.seq) + len(batch.chunks) - 1
    # an index past the event's end is the whole event
    assert list(chunks_after(EVENTS, (batch.seq, 99))) == list(chunks_after(EVENTS, (batch.seq, WHOLE_EVENT)))
    with pytest.raises(ValueError, match="position"):
        list(chunks_after(EVENTS, (3, -2)))
    with pytest.raises(ValueError, match="position"):
        list(chunks_after(EVENTS, (-1, 0)))


def test_events_out_of_order_or_twice_are_refused() -> None:
    with pytest.raises(ValueError, match="out of order"):
        list(chunks_of_after([EVENTS[0], EVENTS[2], EVENTS[1]]))
    with pytest.raises(ValueError, match="out of order"):
        resume(None, 0, [EVENTS[0], EVENTS[1], EVENTS[1]])
    with pytest.raises(ValueError, match="out of order"):
        list(sse_frames([EVENTS[1], EVENTS[0]]))


def chunks_of_after(events: list[EventRecord]) -> list[Any]:
    return list(chunks_after(events))


# --- snapshots with open parts ------------------------------------------------------------------


def events_of(raw: list[Json], first_seq: int = 1) -> list[EventRecord]:
    return [
        EventRecord(user_id="u", run_id="r", seq=seq, type="x", chunks=[chunk], created_at=0)
        for seq, chunk in enumerate(raw, start=first_seq)
    ]


def test_two_open_text_parts_cannot_be_told_apart_and_raise() -> None:
    before = [
        {"type": "start", "messageId": "m"},
        {"type": "text-start", "id": "a"},
        {"type": "text-start", "id": "b"},
        {"type": "text-delta", "id": "a", "delta": "A"},
        {"type": "text-delta", "id": "b", "delta": "B"},
    ]
    snapshot = stored(reduce(before))
    with pytest.raises(UIMessageStreamError, match="2 open text parts") as caught:
        resume(snapshot, 5, events_of([{"type": "text-delta", "id": "b", "delta": "!"}], first_seq=6))
    assert caught.value.chunk_id == "b"


def test_open_reasoning_parts_are_found_by_id() -> None:
    before: list[Json] = [
        {"type": "start", "messageId": "m"},
        {"type": "reasoning-start", "id": "a"},
        {"type": "reasoning-start", "id": "b"},
        {"type": "reasoning-delta", "id": "a", "delta": "A"},
    ]
    after: list[Json] = [
        {"type": "reasoning-delta", "id": "b", "delta": "B", "providerMetadata": {"p": {"k": 1}}},
        {"type": "reasoning-delta", "id": "a", "delta": "a"},
        {"type": "reasoning-end", "id": "b"},
        {"type": "reasoning-end", "id": "a", "providerMetadata": {"p": {"sig": "s"}}},
    ]
    full = reduce(before + after)
    assert full["parts"][0]["text"] == "Aa" and full["parts"][1]["text"] == "B"
    assert resume(stored(reduce(before)), 4, events_of(after, first_seq=5)) == full


def test_a_resumed_open_text_part_takes_citations_and_metadata_at_its_end() -> None:
    before: list[Json] = [{"type": "start", "messageId": "m"}, {"type": "text-start", "id": "t"}]
    after: list[Json] = [
        {"type": "text-delta", "id": "t", "delta": "See ", "providerMetadata": {"p": {"n": 1}}},
        {"type": "text-delta", "id": "t", "delta": "[1]"},
        {
            "type": "text-end",
            "id": "t",
            "citations": [{"source": {"url": "https://x.test"}, "startIndex": 4, "endIndex": 7}],
        },
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "again"},
    ]
    full = reduce(before + after)
    assert full["parts"][0]["citations"][0]["startIndex"] == 4
    assert resume(stored(reduce(before)), 2, events_of(after, first_seq=3)) == full


def test_resume_fails_where_the_whole_stream_fails() -> None:
    before: list[Json] = [
        {"type": "start", "messageId": "m"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
    ]
    cases: list[list[Json]] = [
        # a reset step forgets the open part: a later delta of it is a protocol violation
        [{"type": "reset-step"}, {"type": "text-delta", "id": "t", "delta": "x"}],
        # a delta after the part ended
        [{"type": "text-end", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "x"}],
        # a new message id starts over
        [{"type": "start", "messageId": "other"}, {"type": "text-delta", "id": "t", "delta": "x"}],
    ]
    for after in cases:
        with pytest.raises(UIMessageStreamError):
            reduce_ui_message_stream([parse_chunk(c) for c in before + after], terminate_on_error=True)
        with pytest.raises(UIMessageStreamError):
            resume(stored(reduce(before)), 3, events_of(after, first_seq=4))
    # and succeeds where it succeeds: the reset step drops the open part, a new one streams
    ok: list[Json] = [
        {"type": "reset-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "fresh"},
    ]
    assert resume(stored(reduce(before)), 3, events_of(ok, first_seq=4)) == reduce(before + ok)


def test_an_unknown_text_id_is_taken_for_the_one_open_text_part_and_fails_without_one() -> None:
    """A text part has no id on the wire: with one open part, the first unknown id is taken to be its."""
    open_text: list[Json] = [{"type": "start", "messageId": "m"}, {"type": "text-start", "id": "t"}]
    stray: list[Json] = [{"type": "text-delta", "id": "other", "delta": "x"}]
    assert resume(stored(reduce(open_text)), 2, events_of(stray, first_seq=3))["parts"][0]["text"] == "x"
    closed = [*open_text, {"type": "text-end", "id": "t"}]
    with pytest.raises(UIMessageStreamError, match="missing text part"):
        resume(stored(reduce(closed)), 3, events_of(stray, first_seq=4))


def test_an_open_reasoning_part_without_id_is_bound_once_and_an_ended_id_stays_ended() -> None:
    snapshot: Json = {
        "id": "m",
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "text": "old ", "state": "streaming"},
            {"type": "reasoning", "id": "a", "text": "A", "state": "streaming"},
        ],
    }
    after: list[Json] = [
        {"type": "reasoning-end", "id": "a"},
        {"type": "reasoning-delta", "id": "z", "delta": "style"},
        {"type": "reasoning-end", "id": "z"},
    ]
    parts = resume(snapshot, 1, events_of(after, first_seq=2))["parts"]
    assert parts == [
        {"type": "reasoning", "text": "old style", "state": "done"},
        {"type": "reasoning", "id": "a", "text": "A", "state": "done"},
    ]
    ended = [{"type": "reasoning-end", "id": "a"}, {"type": "reasoning-delta", "id": "a", "delta": "again"}]
    with pytest.raises(UIMessageStreamError, match="missing reasoning part"):
        resume(snapshot, 1, events_of(ended, first_seq=2))
