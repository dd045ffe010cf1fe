"""Event-log writes: how many events the EventBatcher writes, and what a step costs in DynamoDB WCU.

    .venv/bin/python bench/event_writes.py

1. Write rate. 2,000 text deltas at 100, 1,000 and 10,000 deltas/s, inside the boundaries of a
   realistic step (start, start-step, text-start … text-end, a tool call and its result,
   finish-step, finish), through `EventBatcher` with a fake clock and a timer-driven writer (it
   polls at `next_deadline()`), for windows of 50 (the default), 150 (the default before) and 300 ms. Printed per rate:
   events per second of streaming, total events, the ideal `ceil(duration / window) + boundaries`
   and the ratio to it, and the longest time a delta waited before its write.

2. DynamoDB write units per agent step. A typical step is run through the real loop (a scripted
   model): 400 text deltas at 50/s, one tool call streamed in 20 input deltas, a tool output of
   about 2 KB. Its UI chunks go through the batcher; the items the store writes are built from the
   actual Stepline records and sized with `stepline.protocol._json.dumps` (attribute names plus
   JSON values: close to DynamoDB's own item size rule). WCU: 1 per started KB per item, twice
   that inside a transaction. An event append is one conditional put per event item (as
   docs/data-model.md describes); printed beside it, the 2-action transaction of before (the
   event item and the run item's `last_event_seq`).

Figures only; no assertions.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from stepline.llm.scripted import ScriptedModel
from stepline.loop.state import LoopState
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from stepline.protocol._json import dumps
from stepline.protocol.chunks import UIMessageChunk, parse_chunk
from stepline.protocol.reducer import UIMessageReducer
from stepline.store.event_batcher import DEFAULT_WINDOW, DELTA_CHUNK_TYPES, EventBatcher
from stepline.store.records import (
    CheckpointRecord,
    EventRecord,
    MessageRecord,
    NewEvent,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)

WINDOWS = (0.05, 0.15, 0.3)
RATES = (100, 1_000, 10_000)
USER = "user_2f9c1d7e5a3b4c8d9e0f1a2b"
RUN = "run_01JH8ZK3W9Q4M5N6P7R8S9T0VX"
CONVERSATION = "conv_01JH8ZJ7B2C3D4E5F6G7H8J9KM"
MESSAGE = "msg_01JH8ZK3WB2C3D4E5F6G7H8J9K"
NOW = 1_760_000_000_000
OFFLOAD = 64 * 1024
"""docs/data-model.md: attributes above 64 KB go to S3 first, the item keeps `{s3_key, sha256, size}`."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def write_events(timed: Iterable[tuple[float, UIMessageChunk]], window: float) -> tuple[list[NewEvent], float]:
    """Feed timed chunks through a batcher with a timer-driven writer; the events and the longest delta wait."""
    clock = FakeClock()
    batcher = EventBatcher(window=window, clock=clock)
    events: list[NewEvent] = []
    held: list[float] = []
    worst = 0.0

    def written(new: list[NewEvent]) -> None:
        nonlocal worst
        if any(not e.durable for e in new):
            worst = max([worst, *(clock.now - t for t in held)])
            held.clear()
        events.extend(new)

    for at, chunk in timed:
        deadline = batcher.next_deadline()
        while deadline is not None and deadline <= at:
            clock.now = deadline
            written(batcher.poll())
            deadline = batcher.next_deadline()
        clock.now = at
        if chunk.type in DELTA_CHUNK_TYPES:
            held.append(at)
        written(batcher.add(chunk))
    written(batcher.flush())
    return events, worst


# --- 1. write rate ------------------------------------------------------------------------------


def rate_stream(rate: int, deltas: int = 2_000) -> tuple[list[tuple[float, UIMessageChunk]], float, int]:
    before = [
        {"type": "start", "messageId": MESSAGE},
        {"type": "start-step"},
        {"type": "text-start", "id": "t0"},
    ]
    after = [
        {"type": "text-end", "id": "t0"},
        {"type": "tool-input-start", "toolCallId": "call_1", "toolName": "search"},
        {"type": "tool-input-available", "toolCallId": "call_1", "toolName": "search", "input": {"q": "dynamodb"}},
        {"type": "tool-output-available", "toolCallId": "call_1", "output": {"hits": 3}},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    timed = [(0.0, parse_chunk(c)) for c in before]
    timed += [(i / rate, parse_chunk({"type": "text-delta", "id": "t0", "delta": "tok "})) for i in range(deltas)]
    end = deltas / rate
    timed += [(end, parse_chunk(c)) for c in after]
    return timed, end, len(before) + len(after)


def report_rates() -> None:
    print("1. Events written for 2,000 text deltas (plus 9 boundary chunks), timer-driven writer")
    for window in WINDOWS:
        print(f"   window {window * 1000:.0f} ms (ideal rate 1/window = {1 / window:.1f}/s plus boundaries)")
        print(
            f"   {'deltas/s':>9} {'stream s':>9} {'events/s':>9} {'events':>7} {'ideal':>6} {'ratio':>6}"
            f" {'max wait':>9}"
        )
        for rate in RATES:
            timed, duration, boundaries = rate_stream(rate)
            events, worst = write_events(timed, window)
            ideal = math.ceil(duration / window) + boundaries
            print(
                f"   {rate:>9,} {duration:>9.2f} {len(events) / duration:>9.1f} {len(events):>7} {ideal:>6} "
                f"{len(events) / ideal:>6.2f} {worst * 1000:>6.0f} ms"
            )
    print("   (no batching: 2,009 events at every rate, i.e. 2,009 / stream seconds per second)")
    print()


# --- 2. WCU per step ----------------------------------------------------------------------------


class SearchInput(BaseModel):
    query: str
    max_results: int = 10


def search_output() -> dict[str, Any]:
    hits = [
        {
            "title": f"DynamoDB transactions and write capacity, part {i}",
            "url": f"https://docs.example.com/amazondynamodb/latest/developerguide/transactions-{i}.html",
            "snippet": "TransactWriteItems consumes two write capacity units per KB written for each item "
            "in the transaction: one to prepare and one to commit.",
        }
        for i in range(7)
    ]
    return {"query": "dynamodb transaction write units", "hits": hits}


async def _search(query: SearchInput) -> dict[str, Any]:
    return search_output()


def step_script(step: int) -> list[dict[str, Any]]:
    words = ["The", " write", " cost", " of", " a", " step", " depends", " on", " item", " sizes."]
    text = [{"type": "text-delta", "id": f"t{step}", "delta": words[i % len(words)]} for i in range(400)]
    tool_input = dumps({"query": "dynamodb transaction write units", "max_results": 10})
    cut = [tool_input[i * len(tool_input) // 20 : (i + 1) * len(tool_input) // 20] for i in range(20)]
    call = f"call_{step}_Vb3kQ9xZ"
    return [
        {"type": "text-start", "id": f"t{step}"},
        *text,
        {"type": "text-end", "id": f"t{step}"},
        {"type": "tool-input-start", "id": call, "toolName": "search"},
        *({"type": "tool-input-delta", "id": call, "delta": piece} for piece in cut),
        {"type": "tool-input-end", "id": call},
        {"type": "tool-call", "toolCallId": call, "toolName": "search", "input": tool_input},
        {
            "type": "finish",
            "finishReason": {"unified": "tool-calls", "raw": "tool_use"},
            "usage": {"inputTokens": {"total": 1850, "noCache": 1850}, "outputTokens": {"total": 430, "text": 430}},
        },
    ]


PROMPT = (
    "Our agent writes every step to DynamoDB. Estimate the write capacity one step of a typical run "
    "consumes, look up how transactions are billed, and explain where the cost comes from."
)


async def run_loop(steps: int) -> tuple[list[UIMessageChunk], LoopState]:
    model = ScriptedModel.from_script([step_script(i) for i in range(steps)], model_id="claude-sonnet-4")
    result = stream_text(
        model=model,
        prompt=PROMPT,
        tools=[Tool(name="search", description="Search the docs", input_model=SearchInput, execute=_search)],
        stop_when=is_step_count(steps),
        run_id=RUN,
        message_id=MESSAGE,
    )
    chunks = [chunk async for chunk in result.ui_message_stream()]
    await result.consume()
    return chunks, result.state


def timeline(chunks: list[UIMessageChunk]) -> list[tuple[float, UIMessageChunk]]:
    """Tokens at 50/s, tool input at 50/s, the tool running 0.5 s."""
    at, timed = 0.0, []
    for chunk in chunks:
        if chunk.type in DELTA_CHUNK_TYPES:
            at += 1 / 50
        elif chunk.type == "tool-output-available":
            at += 0.5
        timed.append((at, chunk))
    return timed


def item_size(record: BaseModel, **extra: Any) -> int:
    """Approximate DynamoDB item size: attribute name bytes plus JSON value bytes, keys included."""
    fields = {**record.model_dump(mode="json", exclude_none=True), **extra}
    return sum(len(name.encode()) + len(dumps(value).encode()) for name, value in fields.items())


def wcu(size: int, *, transactional: bool) -> int:
    units = max(1, math.ceil(size / 1024))
    return 2 * units if transactional else units


def run_record(last_event_seq: int) -> RunRecord:
    return RunRecord(
        user_id=USER,
        run_id=RUN,
        conversation_id=CONVERSATION,
        request_message_id="msg_01JH8ZK3WA1B2C3D4E5F6G7H8J",
        assistant_message_id=MESSAGE,
        assistant_message_seq=12,
        provider="anthropic",
        model="claude-sonnet-4",
        status="running",
        active_step_index=0,
        last_event_seq=last_event_seq,
        checkpoint_seq=0,
        usage={"inputTokens": 1850, "outputTokens": 430},
        started_at=NOW,
        heartbeat_at=NOW + 9_000,
        version=last_event_seq,
    )


def run_keys() -> dict[str, str]:
    return {
        "pk": f"U#{USER}#R#{RUN}",
        "sk": "META",
        "gsi2pk": "RUNS#active",
        "gsi2sk": f"{NOW + 9_000:013}#{USER}#{RUN}",
    }


def step_items(chunks: list[UIMessageChunk], state: LoopState, last_seq: int) -> list[tuple[str, int]]:
    """The items of the step-end transaction, with their sizes."""
    step = state.steps[-1]
    index = len(state.steps) - 1
    run_pk = f"U#{USER}#R#{RUN}"
    step_row = StepRecordRow(
        user_id=USER,
        run_id=RUN,
        step_index=index,
        finish_reason=step.finish_reason,
        usage=dict(step.usage.to_metadata() or {}),
        response_messages=[m.to_wire() for m in step.response_messages],
        provider_metadata=dict(step.provider_metadata or {}) or None,
        started_at=NOW,
        ended_at=NOW + 9_000,
    )
    items = [
        (
            f"step (S#, {len(step_row.response_messages)} response messages)",
            item_size(step_row, pk=run_pk, sk=f"S#{index:06}"),
        )
    ]
    for call, result in zip(step.tool_calls, step.tool_results, strict=True):
        record = ToolCallRecord(
            user_id=USER,
            run_id=RUN,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            step_index=index,
            status="success",
            input=call.input,
            output=result.output,
            claim_token=f"{RUN}:{call.tool_call_id}:1",
            started_at=NOW + 8_500,
            ended_at=NOW + 9_000,
        )
        items.append(("tool call (T#, input + 2 KB output)", item_size(record, pk=run_pk, sk=f"T#{call.tool_call_id}")))
    reducer = UIMessageReducer()
    for chunk in chunks:
        reducer.apply(chunk)
    message = reducer.message()
    record = MessageRecord(
        user_id=USER,
        conversation_id=CONVERSATION,
        message_id=MESSAGE,
        seq=12,
        role="assistant",
        status="streaming",
        run_id=RUN,
        parts=message["parts"],
        metadata=message.get("metadata"),
        content="".join(p.get("text", "") for p in message["parts"] if p["type"] == "text"),
        snapshot_seq=last_seq,
        created_at=NOW,
    )
    items.append(
        (
            f"assistant message (parts snapshot, {len(message['parts'])} parts)",
            item_size(record, pk=f"U#{USER}#C#{CONVERSATION}", sk="M#0000000012"),
        )
    )
    checkpoint = CheckpointRecord(
        user_id=USER,
        run_id=RUN,
        seq=index + 1,
        step_index=index,
        state=state.to_wire(),
        last_event_seq=last_seq,
        created_at=NOW,
    )
    items.append(
        (f"checkpoint (LoopState after {index + 1} step)", item_size(checkpoint, pk=run_pk, sk=f"K#{index + 1:06}"))
    )
    items.append(("run (active_step_index, checkpoint_seq)", item_size(run_record(last_seq), **run_keys())))
    return items


def event_items(events: list[NewEvent]) -> list[int]:
    sizes = []
    for seq, event in enumerate(events, start=1):
        record = EventRecord(
            user_id=USER,
            run_id=RUN,
            seq=seq,
            type=event.type,
            chunks=event.chunks,
            durable=event.durable,
            created_at=NOW,
            expires_at=None if event.durable else NOW + 7 * 86_400_000,
        )
        sizes.append(item_size(record, pk=f"U#{USER}#R#{RUN}", sk=seq))
    return sizes


def report_step() -> None:
    chunks, state = asyncio.run(run_loop(1))
    timed = timeline(chunks)

    def kinds(chunk_type: str) -> int:
        return sum(1 for c in chunks if c.type == chunk_type)

    output_size = len(dumps(search_output()).encode())
    print("2. DynamoDB write units for one typical agent step (real loop, scripted model)")
    print(
        f"   {kinds('text-delta')} text deltas at 50/s, {kinds('tool-input-delta')} tool-input deltas, "
        f"tool output {output_size:,} B; {len(chunks)} UI chunks over {timed[-1][0]:.1f} s"
    )
    run_size = item_size(run_record(500), **run_keys())
    run_units = wcu(run_size, transactional=True)
    print(f"   run item ≈ {run_size} B → {run_units} WCU per transactional update")
    for window in WINDOWS:
        events, _ = write_events(timed, window)
        sizes = event_items(events)
        event_units = sum(wcu(s, transactional=True) for s in sizes)
        durable = sum(1 for e in events if e.durable)
        before_units = event_units + run_units * len(events)
        append_units = sum(wcu(s, transactional=False) for s in sizes)
        print(
            f"   window {window * 1000:>3.0f} ms: {len(events)} events ({durable} durable, "
            f"{len(events) - durable} delta batches; largest item {max(sizes)} B) → appends {append_units} WCU"
            f" (as transactions with the run item: {event_units} + {run_units * len(events)} = {before_units})"
        )
        if window == DEFAULT_WINDOW:
            default_events, default_append = events, append_units
    unbatched = [NewEvent(type="x", chunks=[c.to_wire()], durable=True) for c in chunks]
    unbatched_units = sum(wcu(s, transactional=False) for s in event_items(unbatched))
    print(f"   (one event per chunk, no batching: {len(unbatched)} events → {unbatched_units} WCU)")

    print("   step-end transaction (each item rounded up to 1 KB, ×2 for the transaction):")
    items = step_items(chunks, state, last_seq=len(default_events))
    step_units = 0
    for name, size in items:
        units = wcu(size, transactional=True)
        step_units += units
        print(f"     {name:<48} {size:>7,} B → {units:>3} WCU")
    print(f"     {'total':<48} {'':>9}   {step_units:>3} WCU")
    tool_size = items[1][1]
    tool_units = wcu(tool_size, transactional=False) + wcu(tool_size, transactional=False)
    print(f"   tool execution: claim + outcome (single-item conditional updates) ≈ {tool_units} WCU")
    total = default_append + step_units + tool_units
    print(
        f"   per step at the default {DEFAULT_WINDOW * 1000:.0f} ms window: appends {default_append}"
        f" + step end {step_units} + tool {tool_units} = {total} WCU ({default_append / total:.0%} of it the event log)"
    )
    print("   checkpoint growth (the whole LoopState is rewritten at every step end):")
    for steps in (1, 5, 10):
        _, state_n = asyncio.run(run_loop(steps))
        checkpoint = CheckpointRecord(
            user_id=USER, run_id=RUN, seq=steps, step_index=steps - 1, state=state_n.to_wire(), created_at=NOW
        )
        size = item_size(checkpoint, pk=f"U#{USER}#R#{RUN}", sk=f"K#{steps:06}")
        note = (
            ""
            if size <= OFFLOAD
            else f" (above {OFFLOAD // 1024} KB: the store moves it to S3, the item keeps a pointer)"
        )
        print(
            f"     after {steps:>2} steps: checkpoint {size:>7,} B → "
            f"{wcu(size, transactional=True):>3} WCU inline{note}"
        )


def main() -> None:
    report_rates()
    report_step()


if __name__ == "__main__":
    main()
