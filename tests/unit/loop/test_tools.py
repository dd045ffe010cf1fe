"""Tools: input validation, every executor kind, concurrency and completion order, client-side
tools and their resumption, tool_order and active_tools."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from stepline.llm.scripted import ScriptedModel
from stepline.loop.callbacks import Callbacks, ChunkEvent, ModelCallEndEvent, ToolExecutionStartEvent
from stepline.loop.config import LoopConfig
from stepline.loop.resume import ClientToolOutput, InvalidClientOutputError
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tool_order import ordered_tools
from stepline.loop.tools import InvalidToolInputError, Tool, ToolContext, tool
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import (
    ErrorTextOutput,
    JsonOutput,
    TextOutput,
    ToolModelMessage,
    ToolResultPart,
)

from .support import call, collect, kinds, model, run, text_step, tool_step


class CityInput(BaseModel):
    city: str
    days: int = 1


def _run(
    scripted: ScriptedModel, tools: list[Tool], **options: Any
) -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
    async def scenario() -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
        result = stream_text(model=scripted, prompt="go", tools=tools, **options)
        return result, await collect(result)

    return run(scenario)


def _results_in_prompt(scripted: ScriptedModel, index: int) -> list[ToolResultPart]:
    message = scripted.calls[index].prompt[-1]
    assert isinstance(message, ToolModelMessage)
    return [p for p in message.content if isinstance(p, ToolResultPart)]


# --- validation ---------------------------------------------------------------------------------


def test_pydantic_input_is_validated_into_the_model() -> None:
    t = tool("weather", "Weather", CityInput)
    parsed = t.validate_input({"city": "Paris"})
    assert parsed == CityInput(city="Paris", days=1)
    assert t.input_schema["required"] == ["city"]
    with pytest.raises(InvalidToolInputError, match=r"Invalid input for tool weather: days: "):
        t.validate_input({"city": "Paris", "days": "many"})
    with pytest.raises(InvalidToolInputError, match=r"city: Field required"):
        t.validate_input({})


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"n": 1}, "input.name: required property missing"),
        ({"name": 3}, "input.name: expected string"),
        ({"name": "a", "n": True}, "input.n: expected integer"),
        ({"name": "a", "n": 1.5}, "input.n: expected integer"),
        ({"name": "a", "mode": "loud"}, "input.mode: must be one of ['fast', 'slow']"),
        ({"name": "a", "tags": ["x", 2]}, "input.tags[1]: expected string"),
        ({"name": "a", "extra": 1}, "input.extra: unexpected property"),
        ([], "input: expected object"),
    ],
)
def test_json_schema_check_says_what_is_wrong(value: Any, problem: str) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "n": {"type": "integer"},
            "mode": {"enum": ["fast", "slow"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    t = tool("t", None, schema)
    with pytest.raises(InvalidToolInputError) as caught:
        t.validate_input(value)
    assert str(caught.value) == f"Invalid input for tool t: {problem}"
    assert t.validate_input({"name": "a", "n": 2, "mode": "fast", "tags": ["x"]}) == {
        "name": "a",
        "n": 2,
        "mode": "fast",
        "tags": ["x"],
    }


def test_invalid_input_in_a_run_is_a_tool_error_and_the_executor_does_not_run() -> None:
    ran: list[Any] = []
    scripted = model(tool_step(call("c1", "weather", '{"days":2}')), text_step("sorry"))
    t = tool("weather", None, CityInput, ran.append)
    result, parts = _run(scripted, [t], stop_when=is_step_count(2))
    assert ran == []
    (error,) = [p for p in parts if isinstance(p, sp.ToolError)]
    assert error.tool_call_id == "c1" and error.dynamic is True
    (tool_call,) = [p for p in parts if isinstance(p, sp.ToolCall)]
    assert tool_call.invalid is True
    (result_part,) = _results_in_prompt(scripted, 1)
    assert isinstance(result_part.output, ErrorTextOutput)
    assert result_part.output.value.startswith("AI_InvalidToolInputError: Invalid input for tool weather: city:")
    assert result.state.steps[0].tool_calls[0].invalid is True


def test_unparsable_json_input_is_a_tool_error() -> None:
    scripted = model(tool_step(call("c1", "t", '{"a":')), text_step("sorry"))
    _, parts = _run(scripted, [Tool(name="t", execute=lambda _: "x")], stop_when=is_step_count(2))
    (error,) = [p for p in parts if isinstance(p, sp.ToolError)]
    assert "JSON parsing failed" in str(error.error)


def test_unknown_tool_lists_the_available_ones() -> None:
    scripted = model(tool_step(call("c1", "forecast")), text_step("sorry"))
    tools = [Tool(name="b", execute=lambda _: 1), Tool(name="a", execute=lambda _: 1)]
    _run(scripted, tools, stop_when=is_step_count(2))
    (result_part,) = _results_in_prompt(scripted, 1)
    assert result_part.output == ErrorTextOutput(
        value="AI_NoSuchToolError: Model tried to call unavailable tool 'forecast'. Available tools: b, a."
    )


def test_repair_tool_call_fixes_the_input() -> None:
    got: list[CityInput] = []
    seen: list[dict[str, Any]] = []

    def repair(*, tool_call: dict[str, Any], tools: Any, error: Any, messages: Any) -> dict[str, Any]:
        seen.append(tool_call)
        return {**tool_call, "input": '{"city":"Rome"}'}

    scripted = model(tool_step(call("c1", "weather", '{"town":"Rome"}')), text_step("ok"))
    t = tool("weather", None, CityInput, lambda a: got.append(a) or "sunny")
    _run(scripted, [t], stop_when=is_step_count(2), repair_tool_call=repair)
    assert seen == [{"toolCallId": "c1", "toolName": "weather", "input": '{"town":"Rome"}'}]
    assert got == [CityInput(city="Rome")]


# --- executors ----------------------------------------------------------------------------------


def test_sync_async_and_context_taking_executors() -> None:
    contexts: list[ToolContext] = []

    def sync_tool(args: Any) -> str:
        return "sync"

    async def async_tool(args: Any) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"n": 1}

    async def with_context(args: CityInput, context: ToolContext) -> CityInput:
        contexts.append(context)
        return CityInput(city=args.city.upper(), days=args.days)

    scripted = model(
        tool_step(call("c1", "s"), call("c2", "a"), call("c3", "ctx", '{"city":"oslo"}')),
        text_step("done"),
    )
    tools = [
        Tool(name="s", execute=sync_tool),
        Tool(name="a", execute=async_tool),
        tool("ctx", None, CityInput, with_context),
    ]
    result, _ = _run(
        scripted, tools, stop_when=is_step_count(2), run_id="run-9", tools_context="tctx", runtime_context="rctx"
    )
    outputs = {r.tool_call_id: r.output for r in result.state.steps[0].tool_results}
    assert outputs == {"c1": "sync", "c2": {"n": 1}, "c3": {"city": "OSLO", "days": 1}}  # pydantic → JSON
    (context,) = contexts
    assert (context.tool_call_id, context.tool_name, context.run_id) == ("c3", "ctx", "run-9")
    assert (context.tools_context, context.runtime_context) == ("tctx", "rctx")
    assert len(context.messages) == 1
    by_id = {p.tool_call_id: p.output for p in _results_in_prompt(scripted, 1)}
    assert by_id["c1"] == TextOutput(value="sync")
    assert by_id["c2"] == JsonOutput(value={"n": 1})


def test_async_generator_yields_preliminary_outputs_then_the_final_one() -> None:
    async def progress(args: Any) -> Any:
        yield {"status": "searching"}
        yield {"status": "reading"}
        yield {"status": "done", "hits": 3}

    scripted = model(tool_step(call("c1", "search")), text_step("3 hits"))
    result, parts = _run(scripted, [Tool(name="search", execute=progress)], stop_when=is_step_count(2))
    results = [p for p in parts if isinstance(p, sp.ToolResult)]
    assert [(r.output, r.preliminary) for r in results] == [
        ({"status": "searching"}, True),
        ({"status": "reading"}, True),
        ({"status": "done", "hits": 3}, None),
    ]
    assert result.state.steps[0].tool_results[0].output == {"status": "done", "hits": 3}
    assert _results_in_prompt(scripted, 1)[0].output == JsonOutput(value={"status": "done", "hits": 3})


def test_a_tool_that_raises_is_a_tool_error_the_model_reads() -> None:
    def boom(args: Any) -> Any:
        raise LookupError("no such city")

    scripted = model(tool_step(call("c1", "t")), text_step("sorry"))
    result, parts = _run(scripted, [Tool(name="t", execute=boom)], stop_when=is_step_count(2))
    assert "tool-error" in kinds(parts)
    assert result.state.steps[0].tool_results[0].error_text == "LookupError: no such city"
    assert _results_in_prompt(scripted, 1)[0].output == ErrorTextOutput(value="LookupError: no such city")


def test_to_model_output_controls_what_the_model_reads() -> None:
    def shown(tool_call_id: str, input: Any, output: Any) -> dict[str, Any]:
        return {"type": "text", "value": f"{tool_call_id}: {output['n']} items"}

    scripted = model(tool_step(call("c1", "t")), text_step("ok"))
    t = Tool(name="t", execute=lambda _: {"n": 4}, to_model_output=shown)
    result, _ = _run(scripted, [t], stop_when=is_step_count(2))
    assert _results_in_prompt(scripted, 1)[0].output == TextOutput(value="c1: 4 items")
    assert result.state.steps[0].tool_results[0].output == {"n": 4}


def test_tools_run_after_the_model_stream_ends_concurrently_and_report_in_completion_order() -> None:
    log: list[str] = []
    second_started = asyncio.Event()

    async def slow(args: Any) -> str:
        log.append("slow:start")
        await second_started.wait()  # finishes only if `fast` runs concurrently
        await asyncio.sleep(0)
        log.append("slow:end")
        return "slow"

    async def fast(args: Any) -> str:
        log.append("fast:start")
        second_started.set()
        return "fast"

    def on_chunk(event: ChunkEvent) -> None:
        if isinstance(event.part, sp.ToolCall):
            log.append(f"chunk:tool-call:{event.part.tool_name}")

    def on_call_end(event: ModelCallEndEvent) -> None:
        log.append("model-call-end")

    scripted = model(tool_step(call("c1", "slow"), call("c2", "fast")), text_step("ok"))
    result, parts = _run(
        scripted,
        [Tool(name="slow", execute=slow), Tool(name="fast", execute=fast)],
        stop_when=is_step_count(2),
        callbacks=Callbacks(on_chunk=on_chunk, on_language_model_call_end=on_call_end),
    )
    assert log[:3] == ["chunk:tool-call:slow", "chunk:tool-call:fast", "model-call-end"]
    assert log.index("fast:start") < log.index("slow:end")
    assert [p.tool_name for p in parts if isinstance(p, sp.ToolResult)] == ["fast", "slow"]
    assert [r.tool_call_id for r in result.state.steps[0].tool_results] == ["c2", "c1"]


def test_tools_do_not_run_when_the_step_finished_with_an_error() -> None:
    ran: list[str] = []
    scripted = model(
        [
            *call("c1", "t"),
            {"type": "error", "error": {"message": "overloaded"}},
            {
                "type": "finish",
                "finishReason": {"unified": "error", "raw": "error"},
                "usage": {"inputTokens": {"total": 1}, "outputTokens": {"total": 1}},
            },
        ]
    )
    result, _ = _run(scripted, [Tool(name="t", execute=lambda _: ran.append("t"))])
    assert ran == []
    assert result.outcome is not None and result.outcome.kind == "failed"


# --- client-side tools --------------------------------------------------------------------------


def _ask_user() -> Tool:
    return Tool(name="ask_user", input_schema={"type": "object", "properties": {"question": {"type": "string"}}})


def _pause_on_client_tool() -> StreamTextResult:
    scripted = model(tool_step(call("c1", "ask_user", '{"question":"Which city?"}')))
    result, parts = _run(scripted, [_ask_user()], stop_when=is_step_count(3))
    assert kinds(parts)[-1] == "finish"
    return result


def test_a_client_side_tool_ends_the_step_with_the_call() -> None:
    result = _pause_on_client_tool()
    assert result.outcome is not None and result.outcome.kind == "await-client"
    assert result.outcome.finish_reason == "tool-calls"
    assert [c.tool_call_id for c in result.state.pending_client_calls] == ["c1"]
    assert result.state.steps[0].tool_results == []


def test_the_loop_continues_when_the_client_supplies_the_output() -> None:
    paused = _pause_on_client_tool()
    scripted = model(text_step("Paris it is."))

    async def resume() -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
        result = stream_text(
            model=scripted,
            state=paused.state,
            client_outputs=[ClientToolOutput(tool_call_id="c1", output="Paris")],
            tools=[_ask_user()],
            stop_when=is_step_count(3),
        )
        return result, await collect(result)

    result, parts = run(resume)
    (tool_result,) = [p for p in parts if isinstance(p, sp.ToolResult)]
    assert (tool_result.tool_call_id, tool_result.output) == ("c1", "Paris")
    assert _results_in_prompt(scripted, 0)[0].output == TextOutput(value="Paris")
    assert result.state.pending_client_calls == []
    assert result.state.steps[0].tool_results[0].output == "Paris"
    assert result.outcome is not None and result.outcome.kind == "finished"
    assert [s.text for s in result.state.steps] == ["", "Paris it is."]


def test_a_client_error_output_reaches_the_model_as_error_text() -> None:
    paused = _pause_on_client_tool()
    scripted = model(text_step("ok"))

    async def resume() -> list[sp.TextStreamPart]:
        result = stream_text(
            model=scripted,
            state=paused.state,
            client_outputs=[ClientToolOutput(tool_call_id="c1", error_text="user closed the dialog")],
            tools=[_ask_user()],
        )
        return await collect(result)

    parts = run(resume)
    assert "tool-error" in kinds(parts)
    assert _results_in_prompt(scripted, 0)[0].output == ErrorTextOutput(value="user closed the dialog")


def test_an_output_for_a_call_that_is_not_waiting_is_rejected_before_any_model_call() -> None:
    paused = _pause_on_client_tool()
    scripted = model(text_step("unused"))

    async def resume() -> StreamTextResult:
        result = stream_text(
            model=scripted,
            state=paused.state,
            client_outputs=[ClientToolOutput(tool_call_id="c-other", output="x")],
            tools=[_ask_user()],
        )
        await collect(result)
        return result

    result = run(resume)
    assert isinstance(result.error, InvalidClientOutputError)
    assert scripted.calls == []


# --- tool_order and active_tools ----------------------------------------------------------------


def _named(*names: str) -> list[Tool]:
    return [Tool(name=n, execute=lambda _: None) for n in names]


def test_tool_order_listed_first_then_alphabetical() -> None:
    config = LoopConfig(model=model(), tools=_named("zeta", "alpha", "mid", "beta"), tool_order=["mid", "nope", "mid"])
    assert [t.name for t in ordered_tools(config)] == ["mid", "alpha", "beta", "zeta"]


def test_without_tool_order_the_declaration_order_is_kept() -> None:
    config = LoopConfig(model=model(), tools=_named("zeta", "alpha", "mid"))
    assert [t.name for t in ordered_tools(config)] == ["zeta", "alpha", "mid"]


def test_tool_order_and_active_tools_reach_the_model() -> None:
    scripted = model(text_step("hi"))
    _run(scripted, _named("zeta", "alpha", "mid", "beta"), tool_order=["zeta"], active_tools=["alpha", "zeta", "mid"])
    assert [t.name for t in scripted.calls[0].tools] == ["zeta", "alpha", "mid"]


def test_an_inactive_tool_cannot_be_called() -> None:
    ran: list[str] = []
    tools = [Tool(name="a", execute=lambda _: ran.append("a")), Tool(name="b", execute=lambda _: ran.append("b"))]
    scripted = model(tool_step(call("c1", "a")), text_step("ok"))
    _run(scripted, tools, active_tools=["b"], stop_when=is_step_count(2))
    assert ran == []
    assert _results_in_prompt(scripted, 1)[0].output == ErrorTextOutput(
        value="AI_NoSuchToolError: Model tried to call unavailable tool 'a'. Available tools: b."
    )


def test_duplicate_tool_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate tool names"):
        LoopConfig(model=model(), tools=_named("a", "a"))


def test_tool_execution_start_event_sees_validated_input() -> None:
    starts: list[ToolExecutionStartEvent] = []
    scripted = model(tool_step(call("c1", "weather", '{"city":"Oslo"}')), text_step("ok"))
    t = tool("weather", None, CityInput, lambda a: a.city)
    _run(scripted, [t], stop_when=is_step_count(2), callbacks=Callbacks(on_tool_execution_start=starts.append))
    assert [(s.tool_call_id, s.input) for s in starts] == [("c1", {"city": "Oslo"})]
