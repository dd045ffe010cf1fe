"""Timeouts (chunk, tool, step, total) and abort. These use tiny real timeouts (≤ 0.2 s)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from stepline.llm.scripted import ScriptedModel
from stepline.loop.callbacks import AbortEvent, Callbacks, ChunkEvent, ErrorEvent
from stepline.loop.config import AbortSignal, Timeouts
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tool_execution import ToolTimeoutError
from stepline.loop.tools import Tool
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import ErrorTextOutput, ToolModelMessage, ToolResultPart

from .support import FakeSleep, call, collect, kinds, model, run, text, text_step, tool_step


def _run(scripted: ScriptedModel, **options: Any) -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
    async def scenario() -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
        result = stream_text(model=scripted, prompt="go", sleep=FakeSleep(), **options)
        return result, await collect(result)

    return run(scenario)


def _slow(*parts: Any, delay_ms: int) -> dict[str, Any]:
    return {"parts": list(parts), "delayMs": delay_ms}


# --- chunk --------------------------------------------------------------------------------------


def test_chunk_timeout_fails_the_call() -> None:
    scripted = model(_slow(*text_step("late"), delay_ms=200))
    result, parts = _run(scripted, timeouts=Timeouts(chunk=0.02), max_retries=0)
    outcome = result.outcome
    assert outcome is not None and outcome.kind == "failed" and outcome.retryable is True
    assert "error" in kinds(parts) and "text-delta" not in kinds(parts)


def test_chunk_timeout_before_output_is_retried() -> None:
    scripted = model(_slow(*text_step("late"), delay_ms=200), text_step("quick"))
    result, _ = _run(scripted, timeouts=Timeouts(chunk=0.02), max_retries=1)
    assert result.error is None
    assert [r.reason for r in result.state.retries] == ["timeout"]
    assert result.state.steps[0].text == "quick"


class _Stamped(ScriptedModel):
    """Notes the loop's clock as each part is handed over (the consumer's task runs the stream, so
    this is when the call receives it) and when the call began."""

    stamps: list[float]

    async def stream(self, options: Any) -> Any:
        clock = asyncio.get_running_loop().time
        self.stamps = [clock()]
        async for part in super().stream(options):
            self.stamps.append(clock())
            yield part


def test_chunk_timeout_is_per_gap_not_per_call() -> None:
    # Eight parts 0.1 s apart take 0.8 s in all but never leave a 0.5 s gap. A machine that stalls
    # for a whole timeout makes a real gap that long (and the call rightly times out): such an
    # attempt proves nothing either way, so the scenario runs again, up to three times.
    limit = 0.5
    for _ in range(3):
        scripted = _Stamped.from_script(
            [
                _slow(
                    *text("t", "a", "b", "c", "d", "e", "f"),
                    {"type": "finish", "finishReason": {"unified": "stop"}},
                    delay_ms=100,
                )
            ]
        )
        result, _ = _run(scripted, timeouts=Timeouts(chunk=limit), max_retries=0)
        gaps = [later - earlier for earlier, later in itertools.pairwise(scripted.stamps)]
        if gaps and max(gaps) < limit:
            break
    assert max(gaps) < limit < scripted.stamps[-1] - scripted.stamps[0], gaps
    assert result.error is None and result.outcome is not None and result.outcome.kind == "finished"
    assert result.state.steps[0].text == "abcdef"


def test_chunk_timeout_after_visible_text_is_not_retried() -> None:
    class Stall(ScriptedModel):
        """Streams the step's first two parts (text-start, "Hi"), then goes silent."""

        async def stream(self, options: Any) -> Any:
            self.calls.append(options)
            for part in self.steps[len(self.calls) - 1].parts[:2]:
                yield part
            await asyncio.sleep(1)

    scripted = Stall.from_script([text_step("Hi"), text_step("unused")])
    result, parts = _run(scripted, timeouts=Timeouts(chunk=0.03), max_retries=2)
    assert len(scripted.calls) == 1
    assert result.state.retries == []
    assert [p.text for p in parts if isinstance(p, sp.TextDelta)] == ["Hi"]
    assert result.outcome is not None and result.outcome.kind == "failed"


# --- tool ---------------------------------------------------------------------------------------


def test_tool_timeout_is_a_tool_error_and_other_tools_are_unaffected() -> None:
    # The quick tool answers without waiting and the limit is 0.5 s, so a loaded machine cannot make
    # it time out too (it once did at 0.05 s with a 10 ms sleep); the slow one is cut at the limit.
    async def slow(args: Any) -> str:
        await asyncio.sleep(30)
        return "never"

    async def quick(args: Any) -> str:
        return "quick"

    scripted = model(tool_step(call("c1", "slow"), call("c2", "quick")), text_step("ok"))
    ends: list[Any] = []
    result, parts = _run(
        scripted,
        tools=[Tool(name="slow", execute=slow), Tool(name="quick", execute=quick)],
        timeouts=Timeouts(tool=0.05),
        stop_when=is_step_count(2),
        callbacks=Callbacks(on_tool_execution_end=ends.append),
    )
    (error,) = [p for p in parts if isinstance(p, sp.ToolError)]
    assert error.tool_call_id == "c1" and isinstance(error.error, ToolTimeoutError)
    assert [p.tool_call_id for p in parts if isinstance(p, sp.ToolResult)] == ["c2"]
    message = scripted.calls[1].prompt[-1]
    assert isinstance(message, ToolModelMessage)
    outputs = {p.tool_call_id: p.output for p in message.content if isinstance(p, ToolResultPart)}
    assert outputs["c1"] == ErrorTextOutput(value="ToolTimeoutError: tool slow timed out after 0.05 s")
    assert {e.tool_call_id: e.error is not None for e in ends} == {"c1": True, "c2": False}
    assert result.outcome is not None and result.outcome.kind == "finished"


def test_per_tool_timeout_overrides_the_default() -> None:
    async def medium(args: Any) -> str:
        await asyncio.sleep(0.05)
        return "done"

    scripted = model(tool_step(call("c1", "medium"), call("c2", "other")), text_step("ok"))
    result, _ = _run(
        scripted,
        tools=[Tool(name="medium", execute=medium), Tool(name="other", execute=medium)],
        timeouts=Timeouts(tool=0.01, tools={"medium": 0.2}),
        stop_when=is_step_count(2),
    )
    results = {r.tool_call_id: r for r in result.state.steps[0].tool_results}
    assert results["c1"].output == "done" and results["c1"].error_text is None
    assert results["c2"].error_text is not None and "timed out" in results["c2"].error_text
    assert Timeouts(tool=1, tools={"a": 2}).for_tool("a") == 2
    assert Timeouts(tool=1, tools={"a": 2}).for_tool("b") == 1


# --- step and total -----------------------------------------------------------------------------


def test_step_timeout_fails_the_run() -> None:
    errors: list[ErrorEvent] = []
    ended: list[Any] = []
    # The first delta comes at once, the rest 400 ms apart: the step's own first work (the prompt, the
    # wire models' validators built on first use) has 300 ms before the timeout, on a loaded machine too.
    script = [*text("t", "a", "b", "c", "d"), {"type": "finish", "finishReason": {"unified": "stop"}}]
    scripted = model({"parts": script, "delaysMs": [0, 0] + [400] * (len(script) - 2)})
    result, parts = _run(
        scripted, timeouts=Timeouts(step=0.3), callbacks=Callbacks(on_error=errors.append, on_end=ended.append)
    )
    assert isinstance(result.error, TimeoutError)
    assert len(errors) == 1 and ended == []
    assert kinds(parts)[-1] == "error" and "finish" not in kinds(parts)
    assert 0 < len([p for p in parts if isinstance(p, sp.TextDelta)]) < 5


def _paused(*parts: Any, pause_ms: int) -> dict[str, Any]:
    """A step whose parts come at once but for one pause of `pause_ms` before its last."""
    return {"parts": list(parts), "delaysMs": [0] * (len(parts) - 1) + [pause_ms]}


def test_step_timeout_applies_to_each_step_separately() -> None:
    # Four steps of 0.3 s against a step timeout of 0.8 s: 1.2 s in all, and each step has 0.5 s to
    # spare (a loaded machine's overhead stays far below that; 20 ms steps against 0.15 s did not).
    steps = [_paused(*tool_step(call(f"c{i}", "t")), pause_ms=300) for i in range(3)]
    scripted = model(*steps, _paused(*text_step("ok"), pause_ms=300))
    result, _ = _run(
        scripted, tools=[Tool(name="t", execute=lambda _: 1)], timeouts=Timeouts(step=0.8), stop_when=is_step_count(4)
    )
    assert result.error is None and len(result.state.steps) == 4


def test_total_timeout_bounds_the_run() -> None:
    step = _slow(*tool_step(call("c1", "t")), delay_ms=25)
    scripted = model(step, step, step, step, text_step("unused"))
    result, parts = _run(
        scripted,
        tools=[Tool(name="t", execute=lambda _: 1)],
        timeouts=Timeouts(total=0.12, step=1.0),
        stop_when=is_step_count(10),
    )
    assert isinstance(result.error, TimeoutError)
    assert 1 <= len(scripted.calls) < 5
    assert "finish" not in kinds(parts)


# --- abort --------------------------------------------------------------------------------------


def test_abort_mid_stream_ends_with_an_abort_part_and_no_finish() -> None:
    signal = AbortSignal()
    aborted: list[AbortEvent] = []
    ended: list[Any] = []

    def on_chunk(event: ChunkEvent) -> None:
        if isinstance(event.part, sp.TextDelta) and event.part.text == "b":
            signal.abort("stop button")

    scripted = model(
        _slow(
            *text("t", "a", "b", "c", "d", "e", "f"),
            {"type": "finish", "finishReason": {"unified": "stop"}},
            delay_ms=10,
        )
    )
    result, parts = _run(
        scripted,
        abort=signal,
        callbacks=Callbacks(on_chunk=on_chunk, on_abort=aborted.append, on_end=ended.append),
    )
    assert result.aborted is True
    assert kinds(parts)[-1] == "abort"
    assert parts[-1] == sp.Abort(reason="stop button")
    assert "finish" not in kinds(parts)
    assert [p.text for p in parts if isinstance(p, sp.TextDelta)] == ["a", "b"]
    assert len(aborted) == 1 and aborted[0].reason == "stop button"
    assert ended == []


def test_abort_without_a_reason_uses_the_sdk_text() -> None:
    signal = AbortSignal()

    async def stop(args: Any) -> str:
        signal.abort()
        await asyncio.Event().wait()
        return "never"

    scripted = model(tool_step(call("c1", "t")), text_step("unused"))
    _, parts = _run(scripted, abort=signal, tools=[Tool(name="t", execute=stop)], stop_when=is_step_count(2))
    assert parts[-1] == sp.Abort(reason="AbortError: This operation was aborted")
    assert len(scripted.calls) == 1
