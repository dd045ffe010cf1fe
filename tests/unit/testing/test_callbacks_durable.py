"""Which callback fires in which function, and how often, on the durable path (docs/agents.md's table)."""

from __future__ import annotations

from typing import Any

from stepline import Agent, tool
from stepline.testing import Harness, call, scripted_model, text


def test_run_callbacks_fire_once_step_callbacks_per_step_and_the_tool_hook_before_the_claim() -> None:
    seen: list[str] = []
    harness: Harness

    def status_of(call_id: str) -> str:
        (run_id,) = harness.orchestrator.started
        rows = {r.tool_call_id: r.status for r in harness.store.list_tool_calls(harness.user_id, run_id)}
        return rows.get(call_id, "absent")

    @tool(approval="user-approval")
    def publish(title: str) -> str:
        """Publish a post."""
        seen.append(f"body:{status_of('call-0-0')}")
        return "published"

    def record(name: str) -> Any:
        def callback(event: Any) -> None:
            if name == "on_tool_execution_start":
                seen.append(f"{name}:{status_of(event.tool_call_id)}")
            else:
                seen.append(name)

        return callback

    names = ["on_start", "on_step_start", "on_tool_execution_start", "on_tool_execution_end", "on_step_end"]
    names += ["on_end", "on_error", "on_abort"]

    def make() -> Agent:
        seen.append("process")
        return Agent(name="poster", tools=[publish], **{n: record(n) for n in names})

    harness = Harness(make, model=scripted_model([call("publish", title="hello"), text("Published.")]))
    result = harness.turn("publish hello", approve=True)
    assert result.invocations == ["BeginTurn", "ModelStep", "AwaitInput", "ModelStep", "FinalizeRun"]
    events = [e for e in seen if e != "process"]
    assert events == [
        "on_start",  # BeginTurn (the API function), once
        "on_step_start",  # the first ModelStep: the model asks for publish, which waits
        "on_step_end",
        "on_tool_execution_start:pending",  # the next ModelStep, after the approval: before the claim
        "body:running",  # the claim marked it running, then the body ran
        "on_tool_execution_end",
        "on_step_start",
        "on_step_end",
        "on_end",  # FinalizeRun, once
    ]
    assert seen.count("process") >= len(result.invocations)  # every function rebuilt the agent


@tool(approval="user-approval")
def launch(target: str) -> str:
    """Launch something (a person approves it)."""
    raise AssertionError("an aborted run never runs its waiting tool")


def test_an_aborted_waiting_run_fires_on_abort_once_and_never_on_end() -> None:
    seen: list[str] = []
    agent = Agent(
        tools=[launch],
        on_abort=lambda event: seen.append(f"abort:{event.reason}"),
        on_end=lambda event: seen.append("end"),
    )
    harness = Harness(agent, model=scripted_model([call("launch", target="moon"), text("never")]))
    waiting = harness.turn("launch")
    assert waiting.status == "waiting_approval"
    aborted = harness.abort(waiting.run_id)
    again = harness.abort(waiting.run_id)  # a second abort finds the run ended: nothing fires again
    assert (aborted.status, again.status) == ("aborted", "aborted")
    assert seen == ["abort:user_cancelled"]
    assert aborted.chunk_types()[-1] == "abort"
