"""Helpers for the loop tests: script builders, a fake sleep, deterministic ids, stream collection."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from stepline.llm.scripted import ScriptedModel
from stepline.loop.stream_text import StreamTextResult
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import ModelMessage

Json = dict[str, Any]
T = TypeVar("T")


def finish(reason: str = "stop", *, input_tokens: int = 10, output_tokens: int = 5) -> Json:
    return {
        "type": "finish",
        "finishReason": {"unified": reason, "raw": reason},
        "usage": {
            "inputTokens": {"total": input_tokens, "noCache": input_tokens},
            "outputTokens": {"total": output_tokens, "text": output_tokens},
        },
    }


def text(id_: str, *deltas: str) -> list[Json]:
    return [
        {"type": "text-start", "id": id_},
        *({"type": "text-delta", "id": id_, "delta": d} for d in deltas),
        {"type": "text-end", "id": id_},
    ]


def call(call_id: str, name: str, input_text: str = "{}", *, stream: bool = False) -> list[Json]:
    streamed: list[Json] = [
        {"type": "tool-input-start", "id": call_id, "toolName": name},
        {"type": "tool-input-delta", "id": call_id, "delta": input_text},
        {"type": "tool-input-end", "id": call_id},
    ]
    return [
        *(streamed if stream else []),
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": input_text},
    ]


def text_step(*deltas: str, id_: str = "t") -> list[Json]:
    """A model step that answers with text and stops."""
    return [*text(id_, *deltas), finish()]


def tool_step(*calls: list[Json]) -> list[Json]:
    """A model step that makes the given tool calls."""
    return [*(p for c in calls for p in c), finish("tool-calls")]


def model(*steps: Any) -> ScriptedModel:
    return ScriptedModel.from_script(list(steps))


class FakeSleep:
    """An injected `sleep` that records the delays it was asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


class Ids:
    """Deterministic `new_id`."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}-{next(self._counter)}"


def fixed_clock() -> int:
    return 1_700_000_000_000


def kind(part: sp.TextStreamPart) -> str:
    """The SDK `type` tag of a part (`TextDelta` → `text-delta`; `StreamError` → `error`)."""
    if isinstance(part, sp.StreamError):
        return "error"
    return re.sub(r"(?<!^)(?=[A-Z])", "-", type(part).__name__).lower()


def kinds(parts: list[sp.TextStreamPart]) -> list[str]:
    return [kind(p) for p in parts]


async def collect(result: StreamTextResult) -> list[sp.TextStreamPart]:
    """Every part of the run, after it ended."""
    parts = [p async for p in result.full_stream]
    await result.consume()
    return parts


def run(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run an async test body (the project has no pytest-asyncio)."""
    return asyncio.run(factory())


def prompt_wire(messages: list[ModelMessage]) -> list[Json]:
    return [m.to_wire() for m in messages]
