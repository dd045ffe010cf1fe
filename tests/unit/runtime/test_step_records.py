"""A step record stores the step's answer once: the inspector's `response` and the tool-call rows,
not the response messages again (the checkpoint keeps those for replay and resume)."""

from __future__ import annotations

from typing import Any

from stepline import Agent, tool
from stepline.agent.loading import AgentSet
from stepline.llm.scripted import ScriptedModel
from stepline.runtime import worker
from stepline.runtime.inspection import run_view
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.runtime.waits import run_state
from stepline.store.blobs import MemoryBlobStore
from stepline.store.memory import MemoryStore
from tests.unit.loop.support import call, text_step, tool_step

USER = "alice"


@tool
def lookup(city: str) -> dict[str, Any]:
    """Look a city up."""
    return {"city": city, "weather": "sunny"}


def _run(*, inspect: bool) -> Services:
    model = ScriptedModel.from_script([tool_step(call("c1", "lookup", '{"city":"Oslo"}')), text_step("Sunny.")])
    store, blobs = MemoryStore(), MemoryBlobStore()
    agents = AgentSet.single(Agent(name="desk", model=model, instructions="Be brief.", tools=[lookup]))

    def services() -> Services:
        return Services(store=store, blobs=blobs, agents=agents, clock=lambda: 1_000, inspect=inspect)

    begin_turn(
        services(),
        USER,
        conversation_id="conv",
        run_id="run-1",
        assistant_message_id="msg-1",
        user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather in Oslo?"}]},
    )
    assert worker.model_step(services(), USER, "run-1", invocation_id="a")["next"] == "continue"
    assert worker.model_step(services(), USER, "run-1", invocation_id="b")["next"] == "finished"
    return services()


def test_an_inspected_step_stores_its_answer_once_and_the_inspector_still_shows_it() -> None:
    services = _run(inspect=True)
    first, second = services.store.list_steps(USER, "run-1")
    assert first.response_messages == [] and second.response_messages == []
    view = run_view(services.store, USER, "run-1")
    (tool_view,) = view["steps"][0]["tools"]
    assert tool_view["output"] == {"city": "Oslo", "weather": "sunny"}
    assert view["steps"][0]["response"]["toolCalls"][0]["toolName"] == "lookup"
    assert view["steps"][1]["response"]["text"] == "Sunny."
    # The step's answer and the tool's result reach the next request as sent...
    sent = view["steps"][1]["request"]["messages"]
    assert [m["role"] for m in sent[-2:]] == ["assistant", "tool"]
    # ...and the checkpoint keeps the response messages that replay and resume read.
    state = run_state(services, USER, "run-1")
    roles = [m.to_wire()["role"] for m in state.steps[0].response_messages]
    assert roles == ["assistant", "tool"]


def test_without_the_inspector_a_step_record_keeps_its_response_messages() -> None:
    services = _run(inspect=False)
    first, _ = services.store.list_steps(USER, "run-1")
    assert first.response is None
    assert [m["role"] for m in first.response_messages] == ["assistant", "tool"]
