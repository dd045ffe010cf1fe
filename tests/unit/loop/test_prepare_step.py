"""prepare_step: its arguments, and each override applying to that step only."""

from __future__ import annotations

from typing import Any

from stepline.llm.scripted import ScriptedModel
from stepline.loop.config import PrepareStepResult
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tools import Tool
from stepline.protocol.model_messages import (
    ModelTextPart,
    SystemModelMessage,
    ToolModelMessage,
    ToolResultPart,
    UserModelMessage,
)

from .support import call, collect, model, run, text_step, tool_step


def _tools(executed: list[str]) -> list[Tool]:
    def make(name: str) -> Tool:
        def execute(args: Any) -> str:
            executed.append(name)
            return name

        return Tool(name=name, execute=execute)

    return [make("alpha"), make("beta"), make("gamma")]


def _run(scripted: ScriptedModel, prepare: Any, executed: list[str] | None = None, **options: Any) -> StreamTextResult:
    async def scenario() -> StreamTextResult:
        result = stream_text(
            model=scripted,
            prompt="go",
            tools=_tools(executed if executed is not None else []),
            stop_when=is_step_count(3),
            prepare_step=prepare,
            **options,
        )
        await collect(result)
        return result

    return run(scenario)


def test_prepare_step_receives_the_step_and_what_came_before() -> None:
    seen: list[dict[str, Any]] = []
    scripted = model(tool_step(call("c1", "alpha")), text_step("done"))
    _run(scripted, lambda **kw: seen.append(kw), instructions="sys", runtime_context="ctx")
    assert [kw["step_number"] for kw in seen] == [0, 1]
    assert [len(kw["steps"]) for kw in seen] == [0, 1]
    assert seen[1]["steps"][0].tool_calls[0].tool_name == "alpha"
    assert all(kw["model"] is scripted for kw in seen)
    assert [len(kw["messages"]) for kw in seen] == [1, 3]
    assert all(kw["instructions"] == "sys" and kw["runtime_context"] == "ctx" for kw in seen)


def test_model_override_for_one_step() -> None:
    main = model(tool_step(call("c1", "alpha")), text_step("unused"))
    other = ScriptedModel.from_script([text_step("from the other model")], model_id="other")

    def prepare(*, step_number: int, **_: Any) -> PrepareStepResult | None:
        return PrepareStepResult(model=other) if step_number == 1 else None

    result = _run(main, prepare)
    assert len(main.calls) == 1 and len(other.calls) == 1
    assert result.state.steps[-1].text == "from the other model"


def test_instructions_override_applies_to_that_step_only() -> None:
    scripted = model(tool_step(call("c1", "alpha")), tool_step(call("c2", "alpha")), text_step("done"))

    def prepare(*, step_number: int, **_: Any) -> PrepareStepResult | None:
        return PrepareStepResult(instructions="step one only") if step_number == 1 else None

    _run(scripted, prepare, instructions="default")
    systems = [c.prompt[0] for c in scripted.calls]
    assert all(isinstance(s, SystemModelMessage) for s in systems)
    assert [s.content for s in systems if isinstance(s, SystemModelMessage)] == ["default", "step one only", "default"]


def test_active_tools_override_limits_definitions_and_calls() -> None:
    executed: list[str] = []
    scripted = model(tool_step(call("c1", "alpha")), tool_step(call("c2", "alpha")), text_step("done"))

    def prepare(*, step_number: int, **_: Any) -> PrepareStepResult | None:
        return PrepareStepResult(active_tools=["beta"]) if step_number == 1 else None

    result = _run(scripted, prepare, executed)
    assert [t.name for t in scripted.calls[0].tools] == ["alpha", "beta", "gamma"]
    assert [t.name for t in scripted.calls[1].tools] == ["beta"]
    assert [t.name for t in scripted.calls[2].tools] == ["alpha", "beta", "gamma"]
    # alpha ran in step 0; in step 1 it was not active, so the call is invalid and did not run.
    assert executed == ["alpha"]
    step1 = result.state.steps[1]
    assert step1.tool_calls[0].invalid is True
    assert step1.tool_results[0].error_text == (
        "AI_NoSuchToolError: Model tried to call unavailable tool 'alpha'. Available tools: beta."
    )


def test_tool_choice_override() -> None:
    scripted = model(tool_step(call("c1", "alpha")), text_step("done"))

    def prepare(*, step_number: int, **_: Any) -> PrepareStepResult | None:
        return PrepareStepResult(tool_choice={"type": "tool", "toolName": "alpha"}) if step_number == 0 else None

    _run(scripted, prepare, tool_choice="auto")
    assert scripted.calls[0].tool_choice == {"type": "tool", "toolName": "alpha"}
    assert scripted.calls[1].tool_choice == "auto"


def test_messages_override_replaces_the_prompt_for_that_step_only() -> None:
    scripted = model(tool_step(call("c1", "alpha")), text_step("done"))
    replacement = [UserModelMessage(content=[ModelTextPart(text="summarised history")])]

    def prepare(*, step_number: int, **_: Any) -> PrepareStepResult | None:
        return PrepareStepResult(messages=replacement) if step_number == 0 else None

    _run(scripted, prepare)
    assert [m.to_wire() for m in scripted.calls[0].prompt] == [
        {"role": "user", "content": [{"type": "text", "text": "summarised history"}]}
    ]
    # The next step is built from the real conversation, not the override.
    second = scripted.calls[1].prompt
    assert second[0].to_wire() == {"role": "user", "content": [{"type": "text", "text": "go"}]}
    assert isinstance(second[-1], ToolModelMessage)
    assert isinstance(second[-1].content[0], ToolResultPart)


def test_async_prepare_step_and_none_keeps_defaults() -> None:
    calls: list[int] = []

    async def prepare(*, step_number: int, **_: Any) -> PrepareStepResult | None:
        calls.append(step_number)
        return None

    scripted = model(text_step("hi"))
    result = _run(scripted, prepare, instructions="default")
    assert calls == [0]
    first = scripted.calls[0].prompt[0]
    assert isinstance(first, SystemModelMessage) and first.content == "default"
    assert [t.name for t in scripted.calls[0].tools] == ["alpha", "beta", "gamma"]
    assert result.outcome is not None and result.outcome.kind == "finished"


def test_prepare_step_runs_before_on_step_start_sees_the_prepared_messages() -> None:
    from stepline.loop.callbacks import Callbacks, StepStartEvent

    starts: list[StepStartEvent] = []
    replacement = [UserModelMessage(content=[ModelTextPart(text="rewritten")])]
    scripted = model(text_step("hi"))

    def prepare(**_: Any) -> PrepareStepResult:
        return PrepareStepResult(messages=replacement)

    _run(scripted, prepare, callbacks=Callbacks(on_step_start=starts.append))
    assert starts[0].messages == replacement
