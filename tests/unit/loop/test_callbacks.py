"""Every callback fires in the SDK's order, with the payload the docs promise."""

from __future__ import annotations

import asyncio
from typing import Any

from stepline.loop.callbacks import (
    AbortEvent,
    Callbacks,
    ChunkEvent,
    EndEvent,
    ErrorEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    StartEvent,
    StepEndEvent,
    StepStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
)
from stepline.loop.state import StepRecord
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    ErrorTextOutput,
    SystemModelMessage,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
)

from .support import Ids, call, collect, finish, kind, kinds, model, run, text, text_step, tool_step

WEATHER_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


class Recorder:
    """Records every callback as `(name, event)` in one list."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []

    def callback(self, name: str) -> Any:
        def record(event: Any) -> None:
            self.log.append((name, event))

        return record

    def callbacks(self, **overrides: Any) -> Callbacks:
        names = [
            "on_start",
            "on_step_start",
            "on_language_model_call_start",
            "on_chunk",
            "on_language_model_call_end",
            "on_tool_execution_start",
            "on_tool_execution_end",
            "on_step_end",
            "on_end",
            "on_error",
            "on_abort",
        ]
        return Callbacks(**{n: overrides.get(n, self.callback(n)) for n in names})

    def prepare_step(self, **kwargs: Any) -> None:
        self.log.append(("prepare_step", kwargs))

    def names(self) -> list[str]:
        return [f"on_chunk:{kind(e.part)}" if n == "on_chunk" else n for n, e in self.log]

    def events(self, name: str) -> list[Any]:
        return [e for n, e in self.log if n == name]


class Clock:
    """A clock that advances 5 ms per reading, so durations are known."""

    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        self.now += 5
        return self.now


def weather_tool(outputs: list[str]) -> Tool:
    async def execute(args: Any) -> Any:
        outputs.append(args["city"])
        return {"city": args["city"], "temperature": 18}

    return Tool(name="weather", input_schema=WEATHER_SCHEMA, execute=execute)


def two_step_script() -> Any:
    return model(
        [
            {"type": "response-metadata", "id": "resp-1", "modelId": "scripted-v1"},
            *call("c1", "weather", '{"city":"Paris"}'),
            finish("tool-calls", input_tokens=10, output_tokens=5),
        ],
        [*text("t1", "18 ", "degrees."), finish(input_tokens=20, output_tokens=7)],
    )


def test_callbacks_fire_in_sdk_order_over_a_two_step_run() -> None:
    recorder = Recorder()

    async def scenario() -> None:
        result = stream_text(
            model=two_step_script(),
            prompt="Weather in Paris?",
            tools=[weather_tool([])],
            stop_when=is_step_count(3),
            callbacks=recorder.callbacks(),
            prepare_step=recorder.prepare_step,
        )
        await collect(result)

    run(scenario)
    assert recorder.names() == [
        "on_start",
        "on_chunk:start",
        "prepare_step",
        "on_step_start",
        "on_language_model_call_start",
        "on_chunk:start-step",
        "on_chunk:tool-call",
        "on_language_model_call_end",
        "on_tool_execution_start",
        "on_tool_execution_end",
        "on_chunk:tool-result",
        "on_chunk:finish-step",
        "on_step_end",
        "prepare_step",
        "on_step_start",
        "on_language_model_call_start",
        "on_chunk:start-step",
        "on_chunk:text-start",
        "on_chunk:text-delta",
        "on_chunk:text-delta",
        "on_chunk:text-end",
        "on_language_model_call_end",
        "on_chunk:finish-step",
        "on_step_end",
        "on_chunk:finish",
        "on_end",
    ]


def test_callback_payloads() -> None:
    recorder = Recorder()
    outputs: list[str] = []
    context = {"tenant": "t-1"}

    async def scenario() -> list[sp.TextStreamPart]:
        result = stream_text(
            model=two_step_script(),
            prompt="Weather in Paris?",
            instructions="Be brief.",
            tools=[weather_tool(outputs)],
            stop_when=is_step_count(3),
            callbacks=recorder.callbacks(),
            prepare_step=recorder.prepare_step,
            runtime_context=context,
            run_id="run-1",
            clock=Clock(),
        )
        return await collect(result)

    parts = run(scenario)

    (start,) = recorder.events("on_start")
    assert isinstance(start, StartEvent)
    assert (start.run_id, start.provider, start.model_id) == ("run-1", "scripted", "script")
    assert [m.to_wire() for m in start.messages] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}
    ]
    assert start.tools == ["weather"]
    assert start.runtime_context is context

    prepared = recorder.events("prepare_step")
    assert [p["step_number"] for p in prepared] == [0, 1]
    assert [len(p["steps"]) for p in prepared] == [0, 1]
    assert prepared[0]["instructions"] == "Be brief."
    assert prepared[1]["runtime_context"] is context

    step_starts = recorder.events("on_step_start")
    assert all(isinstance(e, StepStartEvent) for e in step_starts)
    assert [e.step_number for e in step_starts] == [0, 1]
    assert [len(e.messages) for e in step_starts] == [1, 3]  # user; user + assistant call + tool result

    call_starts = recorder.events("on_language_model_call_start")
    assert all(isinstance(e, ModelCallStartEvent) for e in call_starts)
    assert [(e.step_number, e.attempt) for e in call_starts] == [(0, 0), (1, 0)]
    assert call_starts[0].tools == ["weather"]
    assert isinstance(call_starts[0].prompt[0], SystemModelMessage)
    assert call_starts[0].prompt[0].content == "Be brief."

    call_ends = recorder.events("on_language_model_call_end")
    assert all(isinstance(e, ModelCallEndEvent) for e in call_ends)
    assert [e.finish_reason for e in call_ends] == ["tool-calls", "stop"]
    assert (call_ends[0].usage.input_tokens, call_ends[0].usage.output_tokens) == (10, 5)
    assert call_ends[0].response_id == "resp-1"
    assert all(e.duration_ms > 0 for e in call_ends)

    (tool_start,) = recorder.events("on_tool_execution_start")
    assert isinstance(tool_start, ToolExecutionStartEvent)
    assert (tool_start.step_number, tool_start.tool_call_id, tool_start.tool_name) == (0, "c1", "weather")
    assert tool_start.input == {"city": "Paris"}

    (tool_end,) = recorder.events("on_tool_execution_end")
    assert isinstance(tool_end, ToolExecutionEndEvent)
    assert tool_end.output == {"city": "Paris", "temperature": 18}
    assert tool_end.error is None
    assert tool_end.duration_ms > 0

    chunks = recorder.events("on_chunk")
    assert all(isinstance(e, ChunkEvent) and e.run_id == "run-1" for e in chunks)
    assert [e.part for e in chunks] == parts  # every part, in stream order

    step_ends = recorder.events("on_step_end")
    assert all(isinstance(e, StepEndEvent) and isinstance(e.step, StepRecord) for e in step_ends)
    first, second = (e.step for e in step_ends)
    # Each step's response messages are that step's only.
    assert [type(m) for m in first.response_messages] == [AssistantModelMessage, ToolModelMessage]
    assert isinstance(first.response_messages[0].content[0], ToolCallPart)
    assert [type(m) for m in second.response_messages] == [AssistantModelMessage]
    assert second.text == "18 degrees."
    assert first.response_id == "resp-1"

    (end,) = recorder.events("on_end")
    assert isinstance(end, EndEvent)
    assert end.finish_reason == "stop"
    assert len(end.steps) == 2
    assert (end.total_usage.input_tokens, end.total_usage.output_tokens) == (30, 12)
    assert end.text == "18 degrees."
    assert len(end.response_messages) == 3
    assert recorder.events("on_error") == [] and recorder.events("on_abort") == []
    assert outputs == ["Paris"]


def test_async_callbacks_are_awaited_before_the_loop_goes_on() -> None:
    log: list[str] = []

    async def slow_start(event: Any) -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        log.append("claimed")

    async def execute(args: Any) -> str:
        log.append("executed")
        return "ok"

    async def scenario() -> None:
        result = stream_text(
            model=model(tool_step(call("c1", "t")), text_step("done")),
            prompt="go",
            tools=[Tool(name="t", execute=execute)],
            stop_when=is_step_count(2),
            callbacks=Callbacks(on_tool_execution_start=slow_start),
        )
        await collect(result)

    run(scenario)
    assert log == ["claimed", "executed"]


def test_on_tool_execution_start_raising_skips_the_tool_and_ends_the_call_as_a_tool_error() -> None:
    executed: list[str] = []
    ends: list[ToolExecutionEndEvent] = []

    def refuse(event: Any) -> None:
        raise RuntimeError("claim write failed")

    async def execute(args: Any) -> str:
        executed.append("ran")
        return "ok"

    scripted = model(tool_step(call("c1", "t")), text_step("sorry"))

    async def scenario() -> list[sp.TextStreamPart]:
        result = stream_text(
            model=scripted,
            prompt="go",
            tools=[Tool(name="t", execute=execute)],
            stop_when=is_step_count(2),
            callbacks=Callbacks(on_tool_execution_start=refuse, on_tool_execution_end=ends.append),
        )
        return await collect(result)

    parts = run(scenario)
    assert executed == []
    errors = [p for p in parts if isinstance(p, sp.ToolError)]
    assert len(errors) == 1 and errors[0].tool_call_id == "c1"
    assert isinstance(ends[0].error, RuntimeError)
    # The model reads the failure in its next step.
    tool_message = scripted.calls[1].prompt[-1]
    assert isinstance(tool_message, ToolModelMessage)
    result_part = tool_message.content[0]
    assert isinstance(result_part, ToolResultPart)
    assert result_part.output == ErrorTextOutput(value="RuntimeError: claim write failed")
    assert "finish" in kinds(parts)


def test_a_failing_callback_fails_the_run_with_on_error_and_no_on_end() -> None:
    errors: list[ErrorEvent] = []
    ended: list[Any] = []

    def broken(event: Any) -> None:
        raise ValueError("step end handler broke")

    async def scenario() -> list[sp.TextStreamPart]:
        result = stream_text(
            model=model(text_step("hi")),
            prompt="go",
            run_id="run-x",
            callbacks=Callbacks(on_step_end=broken, on_error=errors.append, on_end=ended.append),
        )
        return await collect(result)

    parts = run(scenario)
    assert len(errors) == 1 and errors[0].run_id == "run-x"
    assert isinstance(errors[0].error, ValueError)
    assert ended == []
    assert kinds(parts)[-1] == "error"
    assert "finish" not in kinds(parts)


def test_on_error_fires_for_a_failed_model_call() -> None:
    errors: list[ErrorEvent] = []
    ended: list[Any] = []

    async def scenario() -> list[sp.TextStreamPart]:
        result = stream_text(
            model=model({"raise": {"kind": "bad_request", "status": 400, "message": "bad prompt"}}),
            prompt="go",
            callbacks=Callbacks(on_error=errors.append, on_end=ended.append),
        )
        return await collect(result)

    parts = run(scenario)
    assert len(errors) == 1
    assert "bad prompt" in str(errors[0].error)
    assert ended == []
    assert "error" in kinds(parts) and "finish" not in kinds(parts)


def test_on_abort_payload() -> None:
    aborted: list[AbortEvent] = []
    ended: list[Any] = []
    from stepline.loop.config import AbortSignal

    signal = AbortSignal()

    async def stop_now(args: Any) -> str:
        signal.abort("user pressed stop")
        await asyncio.Event().wait()
        return "never"

    async def scenario() -> None:
        result = stream_text(
            model=model(tool_step(call("c1", "t")), text_step("unused")),
            prompt="go",
            run_id="run-a",
            tools=[Tool(name="t", execute=stop_now)],
            stop_when=is_step_count(2),
            abort=signal,
            callbacks=Callbacks(on_abort=aborted.append, on_end=ended.append),
            new_id=Ids(),
        )
        await collect(result)

    run(scenario)
    assert len(aborted) == 1
    assert (aborted[0].run_id, aborted[0].reason) == ("run-a", "user pressed stop")
    assert aborted[0].steps == []  # the step did not complete
    assert ended == []
