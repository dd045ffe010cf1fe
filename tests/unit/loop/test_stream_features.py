"""include.raw_chunks, stream transforms, usage totals and call settings reaching the model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from stepline.loop.callbacks import Callbacks, ChunkEvent
from stepline.loop.config import CallSettings, Include
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from stepline.protocol import stream_parts as sp

from .support import call, collect, finish, kinds, model, run, text, text_step, tool_step

RAW_STEP = [{"type": "raw", "rawValue": {"provider": "event-1"}}, *text("t", "hi"), finish()]


def _parts(scripted: Any, **options: Any) -> list[sp.TextStreamPart]:
    async def scenario() -> list[sp.TextStreamPart]:
        return await collect(stream_text(model=scripted, prompt="go", **options))

    return run(scenario)


def test_raw_chunks_are_off_by_default() -> None:
    scripted = model(RAW_STEP)
    parts = _parts(scripted)
    assert "raw" not in kinds(parts)
    assert scripted.calls[0].include_raw_chunks is False


def test_raw_chunks_when_included() -> None:
    scripted = model(RAW_STEP)
    parts = _parts(scripted, include=Include(raw_chunks=True))
    assert [p.raw_value for p in parts if isinstance(p, sp.Raw)] == [{"provider": "event-1"}]
    assert scripted.calls[0].include_raw_chunks is True


def test_transforms_apply_in_order_to_the_stream() -> None:
    seen_by_callback: list[str] = []

    async def upper(stream: AsyncIterator[sp.TextStreamPart]) -> AsyncIterator[sp.TextStreamPart]:
        async for part in stream:
            yield sp.TextDelta(id=part.id, text=part.text.upper()) if isinstance(part, sp.TextDelta) else part

    async def exclaim(stream: AsyncIterator[sp.TextStreamPart]) -> AsyncIterator[sp.TextStreamPart]:
        async for part in stream:
            yield sp.TextDelta(id=part.id, text=part.text + "!") if isinstance(part, sp.TextDelta) else part

    async def drop_reasoning(stream: AsyncIterator[sp.TextStreamPart]) -> AsyncIterator[sp.TextStreamPart]:
        async for part in stream:
            if not isinstance(part, sp.ReasoningStart | sp.ReasoningDelta | sp.ReasoningEnd):
                yield part

    def on_chunk(event: ChunkEvent) -> None:
        if isinstance(event.part, sp.TextDelta):
            seen_by_callback.append(event.part.text)

    reasoning = [
        {"type": "reasoning-start", "id": "r"},
        {"type": "reasoning-delta", "id": "r", "delta": "hmm"},
        {"type": "reasoning-end", "id": "r"},
    ]
    scripted = model([*reasoning, *text("t", "a", "b"), finish()])
    parts = _parts(scripted, transforms=[upper, exclaim, drop_reasoning], callbacks=Callbacks(on_chunk=on_chunk))
    assert [p.text for p in parts if isinstance(p, sp.TextDelta)] == ["A!", "B!"]
    assert not any(k.startswith("reasoning") for k in kinds(parts))
    assert kinds(parts)[0] == "start" and kinds(parts)[-1] == "finish"
    assert seen_by_callback == ["a", "b"]  # callbacks see the loop's own parts


def test_full_stream_can_be_read_more_than_once() -> None:
    scripted = model(text_step("once"))

    async def scenario() -> tuple[list[sp.TextStreamPart], list[sp.TextStreamPart]]:
        result = stream_text(model=scripted, prompt="go")
        first = [p async for p in result.full_stream]
        second = [p async for p in result.full_stream]
        return first, second

    first, second = run(scenario)
    assert first == second and len(first) > 3
    assert len(scripted.calls) == 1


def test_usage_is_summed_over_steps_and_reported_in_finish() -> None:
    scripted = model(
        [*call("c1", "t"), finish("tool-calls", input_tokens=100, output_tokens=10)],
        [*text("x", "done"), finish(input_tokens=150, output_tokens=20)],
    )
    parts = _parts(scripted, tools=[Tool(name="t", execute=lambda _: 1)], stop_when=is_step_count(2))
    finish_part = parts[-1]
    assert isinstance(finish_part, sp.Finish)
    assert (finish_part.total_usage.input_tokens, finish_part.total_usage.output_tokens) == (250, 30)
    steps = [p for p in parts if isinstance(p, sp.FinishStep)]
    assert [(s.usage.input_tokens, s.finish_reason) for s in steps] == [(100, "tool-calls"), (150, "stop")]


def test_call_settings_headers_and_provider_options_reach_the_model() -> None:
    scripted = model(tool_step(call("c1", "t")))
    settings = CallSettings(max_output_tokens=99, temperature=0.2, stop_sequences=["END"], seed=7)
    _parts(
        scripted,
        tools=[Tool(name="t", execute=lambda _: 1)],
        settings=settings,
        headers={"x-trace": "1"},
        provider_options={"openai": {"store": False}},
    )
    options = scripted.calls[0]
    assert (options.max_output_tokens, options.temperature, options.stop_sequences, options.seed) == (
        99,
        0.2,
        ["END"],
        7,
    )
    assert options.headers == {"x-trace": "1"}
    assert options.provider_options == {"openai": {"store": False}}


def test_include_keeps_request_messages_and_body_only_when_asked() -> None:
    from stepline.llm.base import ModelCallOptions
    from stepline.llm.stream_parts import V4Finish, V4FinishReason, V4StreamStart, V4TextDelta, V4TextEnd, V4TextStart
    from stepline.loop.config import Include
    from stepline.loop.stream_text import stream_text

    class BodyModel:
        provider = "test"
        model_id = "body"

        @property
        def capabilities(self) -> Any:
            from stepline.llm.base import ModelCapabilities

            return ModelCapabilities()

        async def stream(self, options: ModelCallOptions) -> Any:
            yield V4StreamStart(request_body={"model": "body", "messages": len(options.prompt)})
            yield V4TextStart(id="t")
            yield V4TextDelta(id="t", delta="hi")
            yield V4TextEnd(id="t")
            yield V4Finish(finish_reason=V4FinishReason(unified="stop"))

    async def run(include: Include) -> Any:
        result = stream_text(model=BodyModel(), prompt="hello", instructions="be brief", include=include)
        return (await result.steps())[0]

    plain = asyncio.run(run(Include()))
    assert plain.request_messages is None and plain.request_body is None
    full = asyncio.run(run(Include(request_messages=True, request_body=True)))
    assert full.request_body == {"model": "body", "messages": 2}
    assert [m.role for m in full.request_messages] == ["system", "user"]
