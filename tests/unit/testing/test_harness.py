"""stepline.testing: scripted models from Python values, and turns through the durable path in memory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from stepline import Agent, RunContext, tool
from stepline.llm.base import FunctionTool
from stepline.llm.scripted import ScriptedModel
from stepline.protocol.model_messages import ModelMessage, SystemModelMessage, ToolModelMessage
from stepline.store.records import ApprovalRecord
from stepline.testing import (
    FunctionModel,
    Harness,
    HarnessError,
    ToolExecution,
    call,
    fail,
    reasoning,
    run_turn,
    run_turn_async,
    script,
    scripted_model,
    step,
    text,
)

written: list[str] = []


@tool
def get_weather(city: Annotated[str, Field(description="City name")], unit: str = "C") -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temperature": 21, "unit": unit}


@tool(approval="user-approval")
def write_note(title: str, body: str, context: RunContext) -> dict[str, Any]:
    """Save a note for the user."""
    written.append(title)
    return {"saved": title, "for": context.claims.get("name")}


@tool(client_side=True)
def ask_user(question: str) -> str:
    """Ask the user a question; the client answers."""
    raise AssertionError("a client-side tool's body never runs")


def greet(context: RunContext) -> str:
    return f"You help {context.claims.get('name', 'someone')} ({context.body.get('plan', 'free')} plan)."


AGENT = Agent(name="helper", instructions=greet, tools=[get_weather, write_note, ask_user])


@pytest.fixture(autouse=True)
def _clear() -> None:
    written.clear()


def system_text(prompt: list[ModelMessage]) -> str:
    return "".join(m.content for m in prompt if isinstance(m, SystemModelMessage))


# -- the script format -----------------------------------------------------------------------------


def test_values_compile_to_the_one_script_format_a_file_plays_alike(tmp_path: Path) -> None:
    steps = [step(reasoning("think"), call("get_weather", city="Paris")), text("Sunny.")]
    compiled = script(steps)
    assert compiled[0] == [
        {"type": "reasoning-start", "id": "r0-0"},
        {"type": "reasoning-delta", "id": "r0-0", "delta": "think"},
        {"type": "reasoning-end", "id": "r0-0"},
        {"type": "tool-call", "toolCallId": "call-0-1", "toolName": "get_weather", "input": '{"city":"Paris"}'},
        {
            "type": "finish",
            "finishReason": {"unified": "tool-calls", "raw": "tool-calls"},
            "usage": {"inputTokens": {"total": 10}, "outputTokens": {"total": 5}},
        },
    ]
    assert compiled[1][-1]["finishReason"]["unified"] == "stop"
    path = tmp_path / "script.json"
    path.write_text(json.dumps(compiled))
    from_file = run_turn(AGENT, "weather?", model=ScriptedModel.from_file(path))
    from_values = run_turn(AGENT, "weather?", model=scripted_model(steps))
    assert from_file.text == from_values.text == "Sunny."
    assert from_file.tool_calls[0].output == from_values.tool_calls[0].output


def test_a_failure_and_pacing_become_the_scripts_directives() -> None:
    (failed, paced) = script([fail("rate_limit", status=429, retry_after=1.5), step(text("x"), delay_ms=5)])
    assert failed == {"parts": [], "raise": {"kind": "rate_limit", "status": 429, "retryAfter": 1.5}, "after": 0}
    assert isinstance(paced, dict) and paced["delayMs"] == 5 and len(paced["parts"]) == 4


# -- a turn through the durable path ---------------------------------------------------------------


def test_a_tool_turn_returns_the_message_the_tool_calls_and_the_stream() -> None:
    model = scripted_model([call("get_weather", city="Paris"), text("It is 21 °C in Paris.")])
    result = run_turn(AGENT, "weather in Paris?", model=model)
    model.assert_consumed()
    assert result.status == "completed"
    assert result.text == "It is 21 °C in Paris."
    assert result.tool_calls == [
        ToolExecution(
            "call-0-0",
            "get_weather",
            {"city": "Paris"},
            "success",
            {"city": "Paris", "temperature": 21, "unit": "C"},
            None,
        )
    ]
    assert result.invocations == ["BeginTurn", "ModelStep", "ModelStep", "FinalizeRun"]
    assert result.chunk_types()[0] == "start" and result.chunk_types()[-1] == "finish"
    assert result.message == result.stored_message  # the stream and the store agree
    (tool_part,) = [p for p in result.parts if p["type"] == "tool-get_weather"]
    assert tool_part["state"] == "output-available"
    # the model was sent the @tool's inferred schema
    (sent,) = [t for t in model.calls[0].tools if t.name == "get_weather"]
    assert sent.input_schema["properties"]["city"]["description"] == "City name"  # type: ignore[index]


def test_approve_runs_the_gated_tool_with_the_run_context_fixed_at_the_start() -> None:
    model = scripted_model([call("write_note", title="milk", body="buy milk"), text("Saved.")])
    result = run_turn(
        AGENT, "note", model=model, approve=True, claims={"sub": "u1", "name": "Ann"}, body={"plan": "pro"}
    )
    assert result.invocations == ["BeginTurn", "ModelStep", "AwaitInput", "ModelStep", "FinalizeRun"]
    assert written == ["milk"]
    assert result.tool("write_note").output == {"saved": "milk", "for": "Ann"}
    # both steps (before and after the wait, in other processes) had the same dynamic instructions
    assert [system_text(c.prompt) for c in model.calls] == ["You help Ann (pro plan)."] * 2
    assert result.run.context == {"claims": {"sub": "u1", "name": "Ann"}, "body": {"plan": "pro"}}
    assert result.run.agent == "helper" and len(result.run.agent_fingerprint or "") == 16


def test_deny_never_runs_the_tool_and_the_model_reads_the_denial() -> None:
    model = scripted_model([call("write_note", title="x", body="y"), text("I did not save it.")])
    result = run_turn(AGENT, "note", model=model, approve={"write_note": (False, "not now")})
    assert written == []
    assert result.tool("write_note").status == "denied"
    (tool_part,) = [p for p in result.parts if p["type"] == "tool-write_note"]
    assert tool_part["approval"]["approved"] is False and tool_part["approval"]["reason"] == "not now"
    denial = [m for m in model.calls[1].prompt if isinstance(m, ToolModelMessage)]
    assert denial, "the second step's prompt carries the denied call's result"


def test_undecided_the_turn_waits_and_resume_goes_on_later() -> None:
    seen: list[ApprovalRecord] = []

    def later(approval: ApprovalRecord) -> bool:
        seen.append(approval)
        return True

    harness = Harness(AGENT, model=scripted_model([call("write_note", title="a", body="b"), text("Done.")]))
    waiting = harness.turn("note")
    assert waiting.status == "waiting_approval" and written == []
    assert [a.tool_name for a in waiting.pending_approvals] == ["write_note"]
    done = harness.resume(waiting.run_id, approve=later)
    assert (done.status, done.text, written) == ("completed", "Done.", ["a"])
    assert [a.input for a in seen] == [{"title": "a", "body": "b"}]
    assert done.invocations == ["AwaitInput", "ModelStep", "FinalizeRun"]


def test_a_question_is_answered_and_the_model_reads_the_answer() -> None:
    def reply(prompt: list[ModelMessage], tools: list[FunctionTool]) -> Any:
        answered = [m for m in prompt if isinstance(m, ToolModelMessage)]
        if not answered:
            return call("ask_user", question="Which city?")
        return text(f"Answer was {json.dumps(answered[-1].content[0].output.value)}")  # type: ignore[union-attr]

    result = run_turn(AGENT, "weather?", model=FunctionModel(reply), answer={"ask_user": "Lyon"})
    assert result.status == "completed"
    assert result.text == 'Answer was "Lyon"'
    assert result.tool("ask_user").output == "Lyon"
    assert "AwaitInput" in result.invocations


def test_every_function_invocation_rebuilds_the_agent() -> None:
    built: list[Agent] = []

    def make() -> Agent:
        built.append(AGENT.model_copy())
        return built[-1]

    model = scripted_model([call("write_note", title="t", body="b"), text("ok")])
    result = run_turn(make, "note", model=model, approve=True)
    assert result.status == "completed"
    assert len(built) >= len(result.invocations)  # at least one new definition per function


def test_a_retryable_model_failure_is_retried_as_the_state_machine_does() -> None:
    model = scripted_model([fail("overloaded", status=529), fail("overloaded", status=529), text("Back.")])
    result = run_turn(Agent(max_retries=0), "hi", model=model)
    assert (result.status, result.text) == ("completed", "Back.")
    assert result.invocations.count("ModelStep") == 3


def test_a_model_that_keeps_failing_fails_the_run_through_fail_run() -> None:
    result = run_turn(Agent(max_retries=0), "hi", model=scripted_model([fail("auth", status=401)]))
    assert result.status == "failed"
    assert result.invocations[-1] == "FailRun"
    assert result.stream_errors == ["An error occurred."]  # the client sees a safe text, the run keeps why
    assert result.run.error is not None and result.run.error["code"] == "auth"


def test_a_script_that_runs_out_fails_the_run_loudly() -> None:
    result = run_turn(AGENT, "weather", model=scripted_model([call("get_weather", city="Oslo")]))
    assert result.status == "failed"
    # the run's error names no Python class (issue 12): a fixed sentence and a stable code
    assert result.run.error is not None and result.run.error["code"] == "step_failed"


def test_several_agents_each_with_its_own_model() -> None:
    agents = {"a": Agent(name="a", instructions="I am a."), "b": Agent(name="b", instructions="I am b.")}
    models = {"a": scripted_model([text("from a")]), "b": scripted_model([text("from b")])}
    result = run_turn(agents, "hi", model=models, agent_name="b")
    assert (result.text, result.run.agent) == ("from b", "b")
    assert system_text(models["b"].calls[0].prompt) == "I am b." and models["a"].calls == []


def test_a_wait_never_resumed_is_reported_not_hung() -> None:
    harness = Harness(AGENT, model=scripted_model([call("write_note", title="t", body="b"), text("ok")]))
    harness.orchestrator.resume = lambda task_token: False  # type: ignore[method-assign]
    with pytest.raises(HarnessError, match="never resumed"):
        harness.turn("note", approve=True)


def test_run_turn_async_from_a_coroutine() -> None:
    async def main() -> str:
        result = await run_turn_async(AGENT, "hi", model=scripted_model([text("async ok")]))
        return result.text

    assert asyncio.run(main()) == "async ok"


def test_a_redeploy_while_waiting_continues_with_the_new_definition_and_a_removed_tool_is_a_tool_error() -> None:
    model = scripted_model([call("write_note", title="t", body="b"), text("The tool is gone; nothing saved.")])
    harness = Harness(AGENT, model=model)
    waiting = harness.turn("note")
    started_with = waiting.run.agent_fingerprint
    harness.agent = Agent(name="helper", instructions="v2", tools=[get_weather])  # redeployed without write_note
    done = harness.resume(waiting.run_id, approve=True)
    assert done.status == "completed" and written == []
    assert done.run.agent_fingerprint == started_with  # the run records the definition it started with
    (part,) = [p for p in done.parts if p["type"] == "tool-write_note"]
    assert part["state"] == "output-error" and "write_note" in part["errorText"], part
    note = done.tool("write_note")  # the store records the same error, not a call left pending
    assert note.status == "error" and note.error is not None and "AI_NoSuchToolError" in note.error
    (result,) = [m for m in model.calls[1].prompt if isinstance(m, ToolModelMessage)]
    assert "AI_NoSuchToolError" in result.model_dump_json()  # the model reads why
    assert system_text(model.calls[1].prompt) == "v2"  # the next step runs the new definition


def test_a_new_message_while_the_run_waits_closes_that_run_as_the_chat_endpoint_does() -> None:
    harness = Harness(AGENT, model=scripted_model([call("write_note", title="t", body="b"), text("Hi again.")]))
    waiting = harness.turn("note")
    moved_on = harness.turn("never mind, hello", conversation_id=waiting.conversation_id)
    assert moved_on.text == "Hi again." and written == []
    left = harness.run(waiting.run_id)
    assert (left.status, left.cancel_reason) == ("aborted", "new_user_message")


def test_a_mapping_names_its_unnamed_agents_by_their_keys_as_stepline_agent_does() -> None:
    model = scripted_model([text("one"), text("two")])
    harness = Harness({"first": Agent(), "second": Agent(instructions="2")}, model=model)
    first = harness.turn("hi", agent="second")
    again = harness.turn("again", conversation_id=first.conversation_id)
    assert (first.run.agent, again.run.agent) == ("second", "second")
    assert [system_text(c.prompt) for c in model.calls] == ["2", "2"]
    with pytest.raises(HarnessError, match="entry 'x' holds the agent named 'y'"):
        Harness({"x": Agent(name="y")}).services()
