"""Retry rules: only at a safe boundary, honouring retry-after, bounded, recorded, and never re-running
completed tools; no automatic retry after visible text."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from stepline.llm.scripted import ScriptedModel
from stepline.loop.callbacks import Callbacks, ErrorEvent, ModelCallStartEvent
from stepline.loop.config import LoopConfig
from stepline.loop.model_call import backoff_delay
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tools import Tool
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import AssistantModelMessage, ToolCallPart, ToolModelMessage, ToolResultPart

from .support import FakeSleep, call, collect, fixed_clock, kinds, model, run, text, text_step, tool_step

RATE_LIMIT = {"raise": {"kind": "rate_limit", "status": 429, "retryAfter": 7.5}}
SERVER = {"raise": {"kind": "server", "status": 503}}


def _run(scripted: ScriptedModel, **options: Any) -> tuple[StreamTextResult, list[sp.TextStreamPart], list[Any]]:
    async def scenario() -> tuple[StreamTextResult, list[sp.TextStreamPart], list[Any]]:
        result = stream_text(model=scripted, prompt="go", clock=fixed_clock, **options)
        chunks = [c.to_wire() async for c in result.ui_message_stream()]
        return result, await collect(result), chunks

    return run(scenario)


def test_a_429_before_any_output_is_retried_after_retry_after() -> None:
    sleep = FakeSleep()
    scripted = model(RATE_LIMIT, text_step("fine now"))
    result, parts, chunks = _run(scripted, sleep=sleep)
    assert len(scripted.calls) == 2
    assert len(sleep.delays) == 1 and sleep.delays[0] >= 7.5
    assert result.error is None
    assert result.outcome is not None and result.outcome.kind == "finished"
    assert result.state.steps[0].text == "fine now"
    # Recorded in the state and as a `data-retry` chunk.
    assert [r.to_wire() for r in result.state.retries] == [
        {"reason": "rate limit (429)", "attempt": 1, "at": fixed_clock()}
    ]
    assert [c for c in chunks if c["type"] == "data-retry"] == [
        {"type": "data-retry", "data": {"reason": "rate limit (429)", "attempt": 1}}
    ]
    # One step: the retry does not start a second one.
    assert kinds(parts).count("start-step") == 1 and kinds(parts).count("finish-step") == 1
    assert kinds(parts)[-1] == "finish"


def test_each_attempt_is_its_own_model_call_start_with_the_same_prompt() -> None:
    starts: list[ModelCallStartEvent] = []
    scripted = model(SERVER, SERVER, text_step("ok"))
    _run(scripted, sleep=FakeSleep(), callbacks=Callbacks(on_language_model_call_start=starts.append))
    assert [(s.step_number, s.attempt) for s in starts] == [(0, 0), (0, 1), (0, 2)]
    assert scripted.calls[0].prompt == scripted.calls[1].prompt == scripted.calls[2].prompt


def test_invisible_parts_before_the_failure_still_allow_a_retry() -> None:
    sleep = FakeSleep()
    failing = {
        "parts": [
            {"type": "stream-start", "warnings": []},
            {"type": "response-metadata", "id": "r-1"},
            *text("t", "never"),
        ],
        **SERVER,
        "after": 2,
    }
    scripted = model(failing, text_step("second try"))
    result, parts, _ = _run(scripted, sleep=sleep)
    assert len(scripted.calls) == 2
    assert result.state.steps[0].text == "second try"
    assert kinds(parts).count("start-step") == 1
    assert [p.text for p in parts if isinstance(p, sp.TextDelta)] == ["second try"]


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    config = LoopConfig(model=model(), retry_base_delay=1.0, retry_max_delay=8.0)
    random.seed(7)
    for attempt in range(1, 10):
        ceiling = min(8.0, 2 ** (attempt - 1))
        for _ in range(20):
            delay = backoff_delay(config, attempt, None)
            assert ceiling / 2 <= delay <= ceiling
    assert backoff_delay(config, 1, 20.0) == 20.0  # retry-after wins when longer


def test_backoff_delays_used_by_the_loop_are_bounded() -> None:
    sleep = FakeSleep()
    scripted = model(SERVER, SERVER, SERVER, text_step("ok"))
    result, _, _ = _run(scripted, sleep=sleep, max_retries=3, retry_base_delay=0.5, retry_max_delay=1.0)
    assert result.error is None
    assert len(sleep.delays) == 3
    assert 0.25 <= sleep.delays[0] <= 0.5
    assert all(0.5 <= d <= 1.0 for d in sleep.delays[1:])
    assert [r.attempt for r in result.state.retries] == [1, 2, 3]


def test_max_retries_exhausted_fails_the_step_with_an_error() -> None:
    sleep = FakeSleep()
    errors: list[ErrorEvent] = []
    ended: list[Any] = []
    scripted = model(SERVER, SERVER, SERVER, text_step("unused"))
    result, parts, chunks = _run(
        scripted, sleep=sleep, max_retries=2, callbacks=Callbacks(on_error=errors.append, on_end=ended.append)
    )
    assert len(scripted.calls) == 3
    assert len(sleep.delays) == 2
    outcome = result.outcome
    assert outcome is not None
    assert (outcome.kind, outcome.error_code, outcome.retryable) == ("failed", "server", True)
    assert [r.attempt for r in outcome.state.retries] == [1, 2]
    assert len([c for c in chunks if c["type"] == "data-retry"]) == 2
    assert "error" in kinds(parts) and "finish" not in kinds(parts)
    assert [c["type"] for c in chunks if c["type"] == "error"] == ["error"]
    assert len(errors) == 1 and ended == []


def test_max_retries_zero_means_no_retry() -> None:
    sleep = FakeSleep()
    scripted = model(RATE_LIMIT, text_step("unused"))
    result, _, _ = _run(scripted, sleep=sleep, max_retries=0)
    assert len(scripted.calls) == 1 and sleep.delays == []
    assert result.outcome is not None and result.outcome.kind == "failed"


def test_negative_max_retries_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        LoopConfig(model=model(), max_retries=-1)


def test_a_non_retryable_error_is_not_retried() -> None:
    sleep = FakeSleep()
    scripted = model({"raise": {"kind": "auth", "status": 401}}, text_step("unused"))
    result, _, _ = _run(scripted, sleep=sleep)
    assert len(scripted.calls) == 1 and sleep.delays == []
    outcome = result.outcome
    assert outcome is not None and (outcome.kind, outcome.error_code, outcome.retryable) == ("failed", "auth", False)
    assert result.state.retries == []


def test_no_automatic_retry_after_visible_text() -> None:
    sleep = FakeSleep()
    failing = {"parts": text("t", "Hel", "lo", " there"), **SERVER, "after": 2}  # text-start and "Hel" streamed
    scripted = model(failing, text_step("unused"))
    result, parts, chunks = _run(scripted, sleep=sleep)
    assert len(scripted.calls) == 1
    assert sleep.delays == []
    assert result.state.retries == []
    # The partial text stays in the stream; the failure is an error on the message.
    assert [p.text for p in parts if isinstance(p, sp.TextDelta)] == ["Hel"]
    assert [c["delta"] for c in chunks if c["type"] == "text-delta"] == ["Hel"]
    assert [c for c in chunks if c["type"] == "error"] != []
    assert not [c for c in chunks if c["type"] == "data-retry"]
    # Not retryable from the step's start either: the durable path (Step Functions) must not redo it.
    outcome = result.outcome
    assert outcome is not None and outcome.kind == "failed" and outcome.retryable is False
    assert "finish" not in kinds(parts)


def test_a_retry_in_step_two_does_not_rerun_step_ones_tool() -> None:
    executions: list[dict[str, Any]] = []
    sleep = FakeSleep()

    def weather(args: Any) -> dict[str, Any]:
        executions.append(args)
        return {"temperature": 18}

    scripted = model(
        tool_step(call("c1", "weather", '{"city":"Paris"}')),
        RATE_LIMIT,
        SERVER,
        text_step("18 degrees"),
    )
    result, _, _ = _run(
        scripted, sleep=sleep, tools=[Tool(name="weather", execute=weather)], stop_when=is_step_count(3)
    )
    assert executions == [{"city": "Paris"}]
    assert len(scripted.calls) == 4
    assert result.error is None and result.state.steps[-1].text == "18 degrees"
    assert [(r.reason, r.attempt) for r in result.state.retries] == [("rate limit (429)", 1), ("server (503)", 2)]
    # Every attempt of step 2 carries step 1's tool call and result.
    for attempt in scripted.calls[1:]:
        assistant, tool_message = attempt.prompt[-2], attempt.prompt[-1]
        assert isinstance(assistant, AssistantModelMessage) and isinstance(tool_message, ToolModelMessage)
        (tool_call,) = assistant.content
        assert isinstance(tool_call, ToolCallPart) and tool_call.tool_call_id == "c1"
        (tool_result,) = tool_message.content
        assert isinstance(tool_result, ToolResultPart) and tool_result.tool_call_id == "c1"
    assert scripted.calls[1].prompt == scripted.calls[3].prompt


def test_retries_recorded_in_earlier_runs_are_kept() -> None:
    sleep = FakeSleep()
    first = model(RATE_LIMIT, tool_step(call("c1", "ask")))
    paused, _, _ = _run(first, sleep=sleep, tools=[Tool(name="ask")])
    assert len(paused.state.retries) == 1
    from stepline.loop.resume import ClientToolOutput

    second = model(SERVER, text_step("ok"))

    async def resume() -> StreamTextResult:
        result = stream_text(
            model=second,
            state=paused.state,
            client_outputs=[ClientToolOutput(tool_call_id="c1", output="yes")],
            tools=[Tool(name="ask")],
            sleep=sleep,
        )
        await collect(result)
        return result

    resumed = run(resume)
    assert [r.reason for r in resumed.state.retries] == ["rate limit (429)", "server (503)"]


def test_a_retryable_error_reported_inside_the_stream_before_output_is_retried() -> None:
    from stepline.llm.errors import ModelCallError
    from stepline.llm.scripted import ScriptedModel, ScriptedStep
    from stepline.llm.stream_parts import V4Error, parse_stream_part
    from stepline.loop.stream_text import stream_text

    overloaded = ModelCallError("Overloaded", kind="overloaded", provider="anthropic", status_code=529)
    first = ScriptedStep(parts=[parse_stream_part({"type": "stream-start", "warnings": []}), V4Error(error=overloaded)])
    second = ScriptedStep(
        parts=[
            parse_stream_part(p)
            for p in [
                {"type": "text-start", "id": "t"},
                {"type": "text-delta", "id": "t", "delta": "ok"},
                {"type": "text-end", "id": "t"},
                {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
            ]
        ]
    )
    model = ScriptedModel(steps=[first, second])
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    async def run() -> tuple[str, list[str]]:
        result = stream_text(model=model, prompt="hi", sleep=sleep)
        types = [c.type async for c in result.ui_message_stream()]
        return await result.text(), types

    text, types = asyncio.run(run())
    assert text == "ok"
    assert len(model.calls) == 2 and len(delays) == 1
    assert "error" not in types and "data-retry" in types


def test_a_providers_in_stream_error_json_is_classified_retried_before_output_and_named_plainly() -> None:
    # An adapter (or a script) may hand the loop the provider's own JSON: it is classified the same
    # way as a typed error, so an overload before any output is retried ...
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    sleep = FakeSleep()
    scripted = model({"parts": [overloaded]}, text_step("fine now"))
    result, _, _ = _run(scripted, sleep=sleep)
    assert len(scripted.calls) == 2 and [r.reason for r in result.state.retries] == ["overloaded"]
    # ... and after visible text it ends the step with a plain sentence, never a class name.
    scripted = model({"parts": [*text("t", "Half"), overloaded]}, text_step("unused"))
    result, _, _ = _run(scripted, sleep=FakeSleep())
    outcome = result.outcome
    assert outcome is not None and outcome.kind == "failed" and outcome.retryable is False
    assert outcome.error_text == "Scripted stream error overloaded_error: busy"
    assert "Error" not in (outcome.error_text or "").replace("_error", "")
