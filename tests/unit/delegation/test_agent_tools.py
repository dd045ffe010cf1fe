"""Agents as tools on the durable path (the harness: the real worker handlers, in memory).

Each agent-tool call is a child run of its own: its record, conversation, checkpoint, event log and
tool ledger, the child agent's own definition, the parent's run context and a link to the parent's
tool call. The parent parks as for a question; the child's end answers the call once and resumes it.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from stepline import Agent, RunContext, tool
from stepline.agent.definition import AgentDefinitionError
from stepline.agent.delegation import AgentTool, DelegatedTask, delegates_of
from stepline.protocol.metadata import MessageMetadata
from stepline.protocol.raised import is_raised
from stepline.runtime.child_results import child_run_id
from stepline.store.errors import NotFound
from stepline.testing import Harness, call, fail, scripted_model, step, text
from stepline.testing.engine import LambdaContext
from stepline.testing.result import TurnResult

CLAIMS = {"sub": "test-user", "name": "Ann", "tenant": "t-7"}


def child(harness: Harness, result: TurnResult, index: int = 0) -> Any:
    return harness.run(child_run_id(result.run.run_id, result.tool_calls[index].tool_call_id))


def prompt_text(model: Any, index: int) -> str:
    return str(model.calls[index].prompt)


def test_a_call_is_a_child_run_and_the_parent_reads_its_final_text() -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def lookup(topic: str, context: RunContext) -> str:
        """Look a topic up."""
        seen.append(dict(context.claims))
        return f"{topic}: 42"

    researcher = Agent(
        name="researcher",
        instructions="You research.",
        tools=[lookup],
        model=scripted_model([call("lookup", topic="X"), text("X is 42.")]),
    )
    lead_model = scripted_model([call("researcher", task="find X"), text("The answer: 42.")])
    lead = Agent(name="lead", model=lead_model, tools=[researcher.as_tool(description="Research a topic.")])
    harness = Harness(lead, claims=CLAIMS)
    result = harness.turn("what is X?")

    assert result.status == "completed" and result.text == "The answer: 42."
    assert result.tool("researcher").output == "X is 42." and result.tool("researcher").status == "success"
    assert "X is 42." in prompt_text(lead_model, 1)  # the parent model read the child's answer
    sub = child(harness, result)
    assert sub.status == "completed" and sub.agent == "researcher"
    assert sub.agent_fingerprint == researcher.fingerprint()
    assert sub.context is not None and sub.context["claims"] == CLAIMS  # the parent's context, no more
    assert sub.context["parent"] == {
        "runId": result.run.run_id,
        "toolCallId": result.tool_calls[0].tool_call_id,
        "toolName": "researcher",
        "conversationId": result.conversation_id,
        "depth": 1,
        "result": "text",
    }
    assert seen == [CLAIMS]  # the child's own tool ran once, with the parent's claims
    # its own conversation, ledger and log: the task is its user message
    messages = harness.store.list_messages("test-user", sub.conversation_id).items
    assert messages[0].parts == [{"type": "text", "text": "find X"}]
    assert [c.tool_name for c in harness.store.list_tool_calls("test-user", sub.run_id)] == ["lookup"]
    assert [c.name for c in result.tool_calls] == ["researcher"]
    assert sub.conversation_id != result.conversation_id
    assert result.invocations == ["BeginTurn", "ModelStep", "AwaitInput", "ModelStep", "FinalizeRun"]


def test_the_definition_default_input_typed_input_and_structured_result() -> None:
    class Brief(BaseModel):
        topic: str
        words: int

    class Findings(BaseModel):
        facts: list[str]

    answer = scripted_model([text('{"facts": ["a", "b"]}')])
    writer = Agent(name="writer", description="Writes.", model=answer, output=Findings)
    default = writer.as_tool()
    assert isinstance(default, AgentTool) and default.name == "writer" and default.description == "Writes."
    assert default.input_model is DelegatedTask and default.input_schema["required"] == ["task"]
    typed = writer.as_tool(name="write_brief", description="Write a brief.", input=Brief, result="output")
    lead_model = scripted_model([call("write_brief", topic="otters", words=50), text("ok")])
    lead = Agent(name="lead", model=lead_model, tools=[typed])
    assert delegates_of([lead]) == {"writer": writer}
    harness = Harness(lead)
    result = harness.turn("brief me")
    assert result.tool("write_brief").output == {"facts": ["a", "b"]}
    task = harness.store.list_messages("test-user", child(harness, result).conversation_id).items[0]
    assert task.parts == [{"type": "text", "text": '{"topic":"otters","words":50}'}]
    with pytest.raises(AgentDefinitionError, match="as_tool: result='output'"):
        Agent(name="plain").as_tool(result="output")
    with pytest.raises(AgentDefinitionError, match="at least 1"):
        writer.as_tool(max_depth=0)
    with pytest.raises(AgentDefinitionError, match="two tools are named writer"):
        Agent(name="lead", tools=[writer.as_tool(), writer.as_tool()])


def test_parallel_calls_are_children_at_once_and_the_parent_goes_on_when_all_ended() -> None:
    a = Agent(name="a", model=scripted_model([text("from a")]))
    b = Agent(name="b", model=scripted_model([text("from b 1"), text("from b 2")]))
    lead_model = scripted_model([step(call("a", task="1"), call("b", task="2"), call("b", task="3")), text("all done")])
    lead = Agent(name="lead", model=lead_model, tools=[a.as_tool(), b.as_tool()])
    harness = Harness(lead)
    result = harness.turn("go")
    assert result.status == "completed" and result.text == "all done"
    assert [c.output for c in result.tool_calls] == ["from a", "from b 1", "from b 2"]
    assert len({child(harness, result, i).run_id for i in range(3)}) == 3
    assert result.invocations.count("ModelStep") == 2  # one parent step waited for all three


def test_three_levels_deep_and_the_depth_limit_is_a_tool_error_the_model_reads() -> None:
    leaf = Agent(name="leaf", model=scripted_model([text("leaf answer")]))
    mid_model = scripted_model([call("leaf", task="deeper"), text("mid answer")])
    mid = Agent(name="mid", model=mid_model, tools=[leaf.as_tool(max_depth=2)])
    top_model = scripted_model([call("mid", task="go on"), text("top answer")])
    top = Agent(name="top", model=top_model, tools=[mid.as_tool()])
    lead = Agent(name="lead", model=scripted_model([call("top", task="start"), text("done")]), tools=[top.as_tool()])
    harness = Harness(lead)
    result = harness.turn("go")
    assert result.status == "completed" and result.tool("top").output == "top answer"
    top_run = child(harness, result)
    top_call = harness.store.list_tool_calls("test-user", top_run.run_id)[0]
    mid_run = harness.run(child_run_id(top_run.run_id, top_call.tool_call_id))
    assert mid_run.context is not None and mid_run.context["parent"]["depth"] == 2  # type: ignore[index]
    refused = harness.store.list_tool_calls("test-user", mid_run.run_id)[0]
    assert refused.status == "error" and "nest 2 levels deep" in str(refused.error)
    assert "nest 2 levels deep" in prompt_text(mid_model, 1)  # the model read the refusal
    with pytest.raises(NotFound):  # no child run was started for the refused call
        harness.run(child_run_id(mid_run.run_id, refused.tool_call_id))


def test_the_fan_out_limit_counts_every_child_the_run_starts() -> None:
    a = Agent(name="a", model=scripted_model([text("one"), text("two")]))
    lead_model = scripted_model([step(call("a", task="1"), call("a", task="2")), call("a", task="3"), text("ok")])
    lead = Agent(name="lead", model=lead_model, tools=[a.as_tool(max_children=2)])
    result = Harness(lead).turn("go")
    assert [c.status for c in result.tool_calls] == ["success", "success", "error"]
    assert "may start 2 sub-agent runs" in str(result.tool_calls[2].error)
    assert result.status == "completed"


def test_a_failed_child_is_a_tool_error_the_parent_model_decides_on() -> None:
    broken = Agent(name="broken", model=scripted_model([fail("invalid_request", status=400)]), max_retries=0)
    lead_model = scripted_model([call("broken", task="x"), text("it failed, sorry")])
    lead = Agent(name="lead", model=lead_model, tools=[broken.as_tool()])
    harness = Harness(lead)
    result = harness.turn("go")
    assert result.status == "completed" and result.text == "it failed, sorry"
    assert child(harness, result).status == "failed"
    assert result.tool("broken").status == "error"
    assert "the broken agent failed" in str(result.tool("broken").error)
    assert "the broken agent failed" in prompt_text(lead_model, 1)


def test_a_child_waiting_for_approval_keeps_the_parent_waiting_then_both_go_on_once() -> None:
    runs: list[str] = []

    @tool(approval="user-approval")
    def publish(title: str) -> str:
        """Publish."""
        runs.append(title)
        return "published"

    writer = Agent(name="writer", tools=[publish], model=scripted_model([call("publish", title="T"), text("posted")]))
    lead_model = scripted_model([call("writer", task="post T"), text("done")])
    lead = Agent(name="lead", model=lead_model, tools=[writer.as_tool()])
    harness = Harness(lead)
    result = harness.turn("go")
    assert result.status == "waiting_user" and runs == []
    sub = child(harness, result)
    assert sub.status == "waiting_approval"
    assert [a.tool_name for a in harness.store.pending_approvals("test-user")] == ["publish"]
    again = harness.resume(result.run.run_id, approve=True)
    assert again.status == "completed" and again.text == "done" and runs == ["T"]
    assert again.tool("writer").output == "posted"
    assert harness.run(sub.run_id).status == "completed"
    # The request raised into the lead's message stays there, settled, in its own step; the lead's
    # next step is no redo over it (no reset-step, no "interrupted" retry): client and store agree.
    stored = again.stored_message
    raised = [(p["toolName"], p["state"]) for p in stored["parts"] if is_raised(p)]
    assert raised == [("publish", "output-available")]
    assert "retries" not in stored["metadata"]
    assert again.message["parts"] == stored["parts"]


def test_usage_rolls_up_from_every_level_and_is_reported_per_child() -> None:
    def used(tokens: int) -> dict[str, Any]:
        return {"inputTokens": {"total": tokens}, "outputTokens": {"total": 1}}

    leaf = Agent(name="leaf", model=scripted_model([step(text("leaf"), usage=used(100))]))
    mid_model = scripted_model([step(call("leaf", task="x"), usage=used(20)), step(text("mid"), usage=used(30))])
    mid = Agent(name="mid", model=mid_model, tools=[leaf.as_tool()])
    lead_model = scripted_model([step(call("mid", task="y"), usage=used(1)), step(text("top"), usage=used(2))])
    lead = Agent(name="lead", model=lead_model, tools=[mid.as_tool()])
    harness = Harness(lead)
    result = harness.turn("go")
    metadata = result.stored_message["metadata"]
    assert metadata["usage"] == {"inputTokens": 153, "outputTokens": 5}  # 1+2 own, 20+30 mid's, 100 leaf's
    (entry,) = metadata["subAgents"]
    assert entry == {
        "toolCallId": result.tool_calls[0].tool_call_id,
        "agent": "mid",
        "runId": child(harness, result).run_id,
        "usage": {"inputTokens": 150, "outputTokens": 3},
    }
    assert MessageMetadata.from_wire(metadata).sub_agents is not None
    assert result.message["metadata"] == metadata  # the stream's finish carries the same


def test_aborting_the_parent_aborts_its_children_and_grandchildren() -> None:
    @tool(approval="user-approval")
    def publish(title: str) -> str:
        """Publish."""
        return "published"

    leaf = Agent(name="leaf", tools=[publish], model=scripted_model([call("publish", title="T")]))
    mid = Agent(name="mid", tools=[leaf.as_tool()], model=scripted_model([call("leaf", task="x")]))
    lead = Agent(name="lead", tools=[mid.as_tool()], model=scripted_model([call("mid", task="y")]))
    harness = Harness(lead)
    result = harness.turn("go")
    mid_run = child(harness, result)
    mid_call = harness.store.list_tool_calls("test-user", mid_run.run_id)[0]
    leaf_run = harness.run(child_run_id(mid_run.run_id, mid_call.tool_call_id))
    assert (result.status, mid_run.status, leaf_run.status) == ("waiting_user", "waiting_user", "waiting_approval")
    harness.abort(result.run.run_id)
    statuses = [harness.run(r).status for r in (result.run.run_id, mid_run.run_id, leaf_run.run_id)]
    assert statuses == ["aborted", "aborted", "aborted"]
    assert harness.run(leaf_run.run_id).cancel_reason == "parent_ended"
    assert harness.store.get_conversation("test-user", result.conversation_id).active_run_id is None


def test_a_child_agent_removed_by_a_redeploy_is_a_tool_error_never_a_stuck_run() -> None:
    deployed = {"researcher": True}
    researcher = Agent(name="researcher", model=scripted_model([text("found")]))

    def agents() -> Agent:
        tools = [researcher.as_tool()] if deployed["researcher"] else []
        return Agent(name="lead", tools=tools, model=lead_model)

    # removed while the child was queued: its step finds no definition and fails; the parent reads why
    lead_model = scripted_model([call("researcher", task="x"), text("could not research")])
    harness = Harness(agents)
    original = harness.services

    def redeploy_before_the_child_runs() -> Any:
        services = original()
        if harness.orchestrator.started[-1:] != harness.orchestrator.started[:1]:  # a child was started
            deployed["researcher"] = False
        return services

    harness.services = redeploy_before_the_child_runs  # type: ignore[method-assign]
    result = harness.turn("go")
    assert result.status == "completed" and result.text == "could not research"
    assert child(harness, result).status == "failed"
    assert "no longer deployed" in str(result.tool("researcher").error)


def test_a_tool_removed_while_the_parent_waited_to_park_is_answered_as_gone() -> None:
    deployed = {"researcher": True}
    researcher = Agent(name="researcher", model=scripted_model([text("found")]))
    lead_model = scripted_model([call("researcher", task="x"), text("no researcher now")])

    def agents() -> Agent:
        tools = [researcher.as_tool()] if deployed["researcher"] else []
        return Agent(name="lead", tools=tools, model=lead_model)

    harness = Harness(agents)
    original = harness._handlers  # pyright: ignore[reportPrivateUsage]

    def handlers() -> Any:
        routes = original()
        step_handler = routes["stepline-model-step"]

        def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
            reply = step_handler(event, context)
            deployed["researcher"] = False  # the redeploy lands between the step and AwaitInput
            return reply

        return routes | {"stepline-model-step": model_step}

    harness._handlers = handlers  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage]
    result = harness.turn("go")
    assert result.status == "completed" and result.text == "no researcher now"
    assert "no longer one of this agent's tools" in str(result.tool("researcher").error)


def test_an_expired_parent_wait_is_a_tool_error_and_aborts_the_children_it_no_longer_waits_for() -> None:
    @tool(approval="user-approval")
    def publish(title: str) -> str:
        """Publish."""
        return "published"

    writer = Agent(name="writer", tools=[publish], model=scripted_model([call("publish", title="T")]))
    lead_model = scripted_model([call("writer", task="post"), text("the writer ran out of time")])
    lead = Agent(name="lead", model=lead_model, tools=[writer.as_tool()])
    harness = Harness(lead)
    result = harness.turn("go")
    sub = child(harness, result)
    assert sub.status == "waiting_approval"
    event = {"userId": "test-user", "runId": result.run.run_id}
    harness._handlers()["stepline-expire-input"](event, LambdaContext("expire"))  # pyright: ignore[reportPrivateUsage]
    assert harness.run(sub.run_id).status == "aborted"
    assert harness.run(sub.run_id).cancel_reason == "parent_wait_expired"
    (row,) = harness.store.list_tool_calls("test-user", result.run.run_id)
    assert row.status == "error" and "no answer before the timeout" in str(row.error)
    harness._handlers()["stepline-model-step"](event, LambdaContext("step"))  # pyright: ignore[reportPrivateUsage]
    assert "no answer before the timeout" in prompt_text(lead_model, 1)  # the model reads the expiry
