"""Every stop condition, any-of lists, async conditions, and when the loop continues at all."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.loop.approval import ApprovalDecision
from stepline.loop.state import StepRecord, ToolCallRecord
from stepline.loop.stop import has_tool_call, is_loop_finished, is_step_count, should_stop
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tools import Tool

from .support import call, collect, model, run, text_step, tool_step


def _tool(name: str, counter: list[str]) -> Tool:
    def execute(args: Any) -> str:
        counter.append(name)
        return f"{name} done"

    return Tool(name=name, execute=execute)


def _loop(
    script: list[Any], stop_when: Any, tools: tuple[str, ...] = ("search", "done")
) -> tuple[Any, StreamTextResult]:
    executed: list[str] = []
    scripted = model(*script)

    async def scenario() -> StreamTextResult:
        result = stream_text(
            model=scripted, prompt="go", tools=[_tool(n, executed) for n in tools], stop_when=stop_when
        )
        await collect(result)
        return result

    return scripted, run(scenario)


def always_tools(n: int) -> list[Any]:
    return [tool_step(call(f"c{i}", "search")) for i in range(n)]


def test_default_stop_is_one_step() -> None:
    scripted, result = _loop(always_tools(1), stop_when=is_step_count(1))
    assert len(scripted.calls) == 1
    assert result.outcome is not None and result.outcome.kind == "finished"
    assert result.outcome.finish_reason == "tool-calls"


def test_default_config_stops_after_one_step() -> None:
    scripted = model(*always_tools(2))

    async def scenario() -> None:
        await collect(stream_text(model=scripted, prompt="go", tools=[_tool("search", [])]))

    run(scenario)
    assert len(scripted.calls) == 1


def test_is_step_count_runs_exactly_that_many_steps() -> None:
    scripted, result = _loop(always_tools(3), stop_when=is_step_count(3))
    assert len(scripted.calls) == 3
    assert len(result.state.steps) == 3


def test_is_step_count_rejects_less_than_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        is_step_count(0)


def test_has_tool_call_stops_after_the_named_tool() -> None:
    script = [tool_step(call("c1", "search")), tool_step(call("c2", "done")), tool_step(call("c3", "search"))]
    scripted, result = _loop(script, stop_when=has_tool_call("done"))
    assert len(scripted.calls) == 2
    assert [c.tool_name for c in result.state.steps[-1].tool_calls] == ["done"]


def test_has_tool_call_on_no_steps_and_other_tools() -> None:
    step = StepRecord(
        step_number=0, finish_reason="tool-calls", tool_calls=[ToolCallRecord(tool_call_id="a", tool_name="x")]
    )
    assert has_tool_call("done")([]) is False
    assert has_tool_call("done")([step]) is False
    assert has_tool_call("done", "x")([step]) is True


def test_is_loop_finished_runs_until_the_model_stops_calling_tools() -> None:
    script = [*always_tools(4), text_step("all done")]
    scripted, result = _loop(script, stop_when=is_loop_finished())
    assert len(scripted.calls) == 5
    assert result.outcome is not None and result.outcome.finish_reason == "stop"


def test_a_list_of_conditions_is_any_of() -> None:
    script = [tool_step(call("c1", "search")), tool_step(call("c2", "done")), *always_tools(3)]
    scripted, _ = _loop(script, stop_when=[is_step_count(10), has_tool_call("done")])
    assert len(scripted.calls) == 2
    scripted, _ = _loop(always_tools(3), stop_when=[is_step_count(3), has_tool_call("done")])
    assert len(scripted.calls) == 3


def test_async_conditions_are_awaited() -> None:
    seen: list[int] = []

    async def after_two(steps: Any) -> bool:
        seen.append(len(steps))
        return len(steps) >= 2

    scripted, _ = _loop(always_tools(3), stop_when=after_two)
    assert len(scripted.calls) == 2
    assert seen == [1, 2]


def test_should_stop_directly() -> None:
    step = StepRecord(step_number=0, finish_reason="stop")
    assert run(lambda: should_stop(is_step_count(1), [step])) is True
    assert run(lambda: should_stop([is_step_count(2), is_loop_finished()], [step])) is False


def test_a_step_without_tool_calls_ends_the_run_whatever_the_conditions_say() -> None:
    scripted, result = _loop([text_step("hello"), text_step("unused")], stop_when=is_loop_finished())
    assert len(scripted.calls) == 1
    assert result.outcome is not None and result.outcome.kind == "finished"


def test_conditions_count_only_the_steps_since_the_run_resumed() -> None:
    executed: list[str] = []
    tools = [_tool("search", executed), _tool("delete", executed)]
    first = model(tool_step(call("c1", "delete")))

    async def pause() -> StreamTextResult:
        result = stream_text(
            model=first, prompt="go", tools=tools, tool_approval={"delete": "user-approval"}, stop_when=is_step_count(2)
        )
        await collect(result)
        return result

    paused = run(pause)
    assert paused.outcome is not None and paused.outcome.kind == "await-approval"
    approval_id = paused.state.pending_approvals[0].approval_id
    second = model(tool_step(call("c2", "search")), tool_step(call("c3", "search")), text_step("unused"))

    async def resume() -> None:
        await collect(
            stream_text(
                model=second,
                state=paused.state,
                approval_decisions=[ApprovalDecision(approval_id=approval_id, approved=True)],
                tools=tools,
                tool_approval={"delete": "user-approval"},
                stop_when=is_step_count(2),
            )
        )

    run(resume)
    # Two new steps run after resuming, although the run already had one step before.
    assert len(second.calls) == 2
    assert executed == ["delete", "search", "search"]
