"""A recorded run, stored through the event batcher: a client that saw events up to any seq gets
exactly the missing events, and rebuilds the full message — on every backend."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from stepline.llm.scripted import ScriptedModel
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.store.event_batcher import EventBatcher
from stepline.store.ports import Store, TurnStart
from stepline.store.replay import chunks_of, resume

USER = "alice"
FINISH = {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": {}}
STOP = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
SCRIPT = [
    [
        {"type": "reasoning-start", "id": "r"},
        *({"type": "reasoning-delta", "id": "r", "delta": f"think {i} "} for i in range(12)),
        {"type": "reasoning-end", "id": "r"},
        {"type": "tool-input-start", "id": "c1", "toolName": "weather"},
        *({"type": "tool-input-delta", "id": "c1", "delta": d} for d in ['{"ci', 'ty":', '"Pa', 'ris"}']),
        {"type": "tool-input-end", "id": "c1"},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": '{"city":"Paris"}'},
        FINISH,
    ],
    [
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": f"word{i} "} for i in range(40)),
        {"type": "text-end", "id": "t"},
        STOP,
    ],
]


async def _weather(_: Any) -> dict[str, Any]:
    return {"temperature": 18}


async def record_chunks() -> list[dict[str, Any]]:
    result = stream_text(
        model=ScriptedModel.from_script(SCRIPT),
        prompt="weather?",
        tools=[Tool(name="weather", input_schema={"type": "object"}, execute=_weather)],
        stop_when=is_step_count(3),
        message_id="a1",
    )
    return [chunk.to_wire() async for chunk in result.ui_message_stream()]


def test_replay_from_every_seq_rebuilds_exactly_the_full_message(backend: tuple[Store, Callable[[], Any]]) -> None:
    store, _ = backend
    store.start_turn(
        USER,
        TurnStart(
            conversation_id="c1",
            run_id="r1",
            assistant_message_id="a1",
            user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]},
            now=1,
        ),
    )
    chunks = asyncio.run(record_chunks())
    clock = itertools.count(0, 0.01)  # 10 ms between chunks: deltas coalesce into batches
    batcher = EventBatcher(window=0.05, clock=lambda: next(clock))
    for chunk in chunks:
        events = batcher.add(parse_chunk(chunk))
        if events:
            store.append_events(USER, "r1", events, now=1_000)
    store.append_events(USER, "r1", batcher.flush(), now=1_000)
    stored = store.events_after(USER, "r1", 0, now=1_001)
    assert len(stored) < len(chunks)  # deltas were coalesced
    full = reduce_ui_message_stream([parse_chunk(c) for c in chunks]).message
    assert full is not None and full["parts"][-1]["text"].startswith("word0 word1")
    for seen in range(stored[-1].seq + 1):
        client = reduce_ui_message_stream(
            [parse_chunk(c) for c in chunks_of(e for e in stored if e.seq <= seen)]
        ).message
        missing = store.events_after(USER, "r1", seen, now=1_001)
        assert [e.seq for e in missing] == list(range(seen + 1, stored[-1].seq + 1))  # exactly the missing ones
        assert resume(client, seen, missing, message_id="a1") == full
