"""Deltas held by the event batcher are written when their window passes, also while the model is silent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from stepline.llm.base import ModelCallOptions, ModelCapabilities
from stepline.llm.stream_parts import ModelStreamPart, parse_stream_part
from stepline.runtime import worker
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.store.memory import MemoryStore

PAUSE = 0.8


class PausingModel:
    """Streams three deltas, falls silent for PAUSE seconds, then finishes (named for what it does)."""

    provider = "scripted"
    model_id = "pausing"
    capabilities = ModelCapabilities(input_media_types=("*/*",))

    def __init__(self) -> None:
        self.resumed_at: float | None = None

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        parts: list[dict[str, Any]] = [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": "t"},
            *({"type": "text-delta", "id": "t", "delta": f"d{i} "} for i in range(3)),
        ]
        for part in parts:
            yield parse_stream_part(part)
        await asyncio.sleep(PAUSE)
        self.resumed_at = time.time()
        for part in [
            {"type": "text-delta", "id": "t", "delta": "after"},
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
        ]:
            yield parse_stream_part(part)


def test_deltas_before_a_pause_are_written_within_the_window() -> None:
    store, model = MemoryStore(), PausingModel()
    services = Services(store=store, model=model, delta_window=0.15)
    user_message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    begin_turn(services, "u", conversation_id="c", run_id="r", assistant_message_id="a", user_message=user_message)
    started = time.time()
    assert worker.model_step(services, "u", "r", invocation_id="i1")["next"] == "finished"
    events = store.events_after("u", "r", 0, now=services.clock())
    written = {
        str(c.get("delta")): e.created_at / 1000 for e in events for c in e.chunks if c.get("type") == "text-delta"
    }
    assert model.resumed_at is not None
    for held in ("d2 ",):  # the last delta before the pause: only the timer can write it
        key = next(k for k in written if held in k)
        assert written[key] < model.resumed_at - PAUSE / 2, "written during the pause, not after it"
    assert written[next(k for k in written if "after" in k)] >= model.resumed_at - 0.002  # ms clock
    assert time.time() - started < PAUSE + 2
