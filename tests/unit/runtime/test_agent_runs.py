"""What "durable" means for an agent: every worker call below builds its services (and the agent) anew,
as a Lambda invocation in another process would, over one store.

- the run context (claims, body) is fixed at the start and reaches instructions and tools, also
  after an approval decided in "another process";
- a run that waits across a redeploy continues with the new definition; a tool that left the
  agent becomes a tool error the model reads; an agent that left the deployment hands its runs to
  the default agent; never a stuck run;
- run-level callbacks fire once per run, in the function that starts or ends it.
"""

from __future__ import annotations

from typing import Any

from stepline import Agent, RunContext, tool
from stepline.agent.loading import AgentSet
from stepline.llm.scripted import ScriptedModel
from stepline.protocol.model_messages import SystemModelMessage
from stepline.runtime import worker
from stepline.runtime.ending import fail_run, finalize_run
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.runtime.waits import decide, run_state
from stepline.store.blobs import MemoryBlobStore
from stepline.store.memory import MemoryStore
from tests.unit.loop.support import call, text_step, tool_step

USER = "alice"
SEEN: list[Any] = []


@tool(approval="user-approval")
def refund(cents: int, context: RunContext) -> dict[str, Any]:
    """Refund an amount."""
    SEEN.append((context.claims.get("name"), context.body.get("ticket")))
    return {"refunded": cents}


def greeting(context: RunContext) -> str:
    return f"Be kind to {context.claims.get('name')} (ticket {context.body.get('ticket')})."


def agent(model: ScriptedModel, **changes: Any) -> Agent:
    settings: dict[str, Any] = {"name": "desk", "model": model, "instructions": greeting, "tools": [refund]}
    return Agent(**{**settings, **changes})


class Deployment:
    """One store; each `services()` call is a fresh process with the agents of the current deploy."""

    def __init__(self, model: ScriptedModel) -> None:
        self.store, self.blobs, self.model = MemoryStore(), MemoryBlobStore(), model
        self.agents = lambda: AgentSet.single(agent(model))

    def services(self) -> Services:
        return Services(store=self.store, blobs=self.blobs, agents=self.agents(), clock=lambda: 1_000)

    def start(self, **context: Any) -> None:
        begin_turn(
            self.services(),
            USER,
            conversation_id="conv",
            run_id="run-1",
            assistant_message_id="msg-1",
            user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "refund me"}]},
            **context,
        )

    def step(self) -> str:
        return str(worker.model_step(self.services(), USER, "run-1", invocation_id="inv")["next"])


def approval_id(deployment: Deployment) -> str:
    state = run_state(deployment.services(), USER, "run-1")
    (pending,) = state.pending_approvals
    return pending.approval_id


def systems(model: ScriptedModel) -> list[list[str]]:
    return [[m.content for m in c.prompt if isinstance(m, SystemModelMessage)] for c in model.calls]  # type: ignore[misc]


def test_the_run_context_survives_an_approval_decided_in_another_process() -> None:
    SEEN.clear()
    model = ScriptedModel.from_script([tool_step(call("c1", "refund", '{"cents":500}')), text_step("Refunded.")])
    deployment = Deployment(model)
    deployment.start(claims={"sub": USER, "name": "Alice"}, body={"ticket": "T-9"})
    assert deployment.step() == "await-approval"
    decide(deployment.services(), USER, approval_id(deployment), approved=True, reason=None)
    assert deployment.step() == "finished"
    finalize_run(deployment.services(), USER, "run-1")
    assert SEEN == [("Alice", "T-9")]
    assert systems(model) == [["Be kind to Alice (ticket T-9)."]] * 2
    stored = deployment.store.get_run(USER, "run-1").context
    assert stored == {"claims": {"sub": USER, "name": "Alice"}, "body": {"ticket": "T-9"}}


def test_a_tool_removed_by_a_redeploy_while_the_run_waited_becomes_a_tool_error() -> None:
    model = ScriptedModel.from_script([tool_step(call("c1", "refund", '{"cents":500}')), text_step("Sorry.")])
    deployment = Deployment(model)
    deployment.start()
    assert deployment.step() == "await-approval"
    deployment.agents = lambda: AgentSet.single(agent(model, tools=[], instructions="v2"))  # the redeploy
    decide(deployment.services(), USER, approval_id(deployment), approved=True, reason=None)
    assert deployment.step() == "finished"
    finalize_run(deployment.services(), USER, "run-1")
    run = deployment.store.get_run(USER, "run-1")
    message = deployment.store.get_message(USER, "conv", "msg-1")
    (part,) = [p for p in message.parts if p["type"] == "tool-refund"]
    assert part["state"] == "output-error" and "unavailable tool 'refund'" in str(part["errorText"])
    assert (run.status, run.agent) == ("completed", "desk")
    assert run.agent_fingerprint != agent(model, tools=[], instructions="v2").fingerprint()  # recorded at start
    assert systems(model)[-1] == ["v2"]  # the step after the redeploy ran the new definition


def test_a_run_whose_agent_left_the_deployment_is_continued_by_the_default_agent() -> None:
    model = ScriptedModel.from_script([tool_step(call("c1", "refund", '{"cents":5}')), text_step("Done.")])
    deployment = Deployment(model)
    deployment.start()
    assert deployment.step() == "await-approval"
    deployment.agents = lambda: AgentSet.single(agent(model, name="other"))
    decide(deployment.services(), USER, approval_id(deployment), approved=True, reason=None)
    assert deployment.step() == "finished"


def test_run_level_callbacks_fire_once_in_the_function_that_starts_or_ends_the_run() -> None:
    events: list[str] = []
    model = ScriptedModel.from_script([text_step("Hi.")])
    deployment = Deployment(model)
    deployment.agents = lambda: AgentSet.single(
        agent(
            model,
            on_start=lambda e: events.append(f"start:{e.run_id}"),
            on_step_start=lambda e: events.append(f"step:{e.step_number}"),
            on_end=lambda e: events.append(f"end:{e.text}"),
            on_error=lambda e: events.append("error"),
        )
    )
    deployment.start()
    assert events == ["start:run-1"]
    assert deployment.step() == "finished"
    finalize_run(deployment.services(), USER, "run-1")
    finalize_run(deployment.services(), USER, "run-1")  # Step Functions retried FinalizeRun
    fail_run(deployment.services(), USER, "run-1", "late")  # a terminal run does not end again
    assert events == ["start:run-1", "step:0", "end:Hi."]


def test_an_on_start_that_raises_fails_the_run_before_its_first_step() -> None:
    def boom(_: Any) -> None:
        raise RuntimeError("no quota left")

    model = ScriptedModel.from_script([text_step("never")])
    deployment = Deployment(model)
    deployment.agents = lambda: AgentSet.single(agent(model, on_start=boom))
    deployment.start()
    run = deployment.store.get_run(USER, "run-1")
    assert run.status == "failed" and run.error is not None and "on_start failed: no quota left" in str(run.error)
    assert model.calls == []
