"""Sub-agents on the real ASL: moto's Step Functions interpreter, and the local engine `stepline dev` runs.

A lead calls two sub-agents in one step; one of them calls a sub-sub-agent whose tool waits for an
approval. Each child is an execution of its own (named by its run id); the parent's execution
parks on its AwaitInput task token while they work, holding nothing; the approval is decided
through the webhook's code; every run ends completed, every tool ran once, and no execution is left
running. The parent also waits across a continue-as-new (one step per execution).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from stepline import Agent, tool
from stepline.agent.loading import AgentSet
from stepline.local.backend import Engine, LocalBackend, local_backend
from stepline.local.engine import LocalStepFunctions
from stepline.runtime import waits
from stepline.runtime.child_results import child_run_id
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.store.records import RunRecord
from stepline.testing import call, scripted_model, step, text

USER = "alice"


def _until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
    return value


def _agents(published: list[str]) -> AgentSet:
    @tool(approval="user-approval")
    def publish(title: str) -> str:
        """Publish a note."""
        published.append(title)
        return f"published {title}"

    checker_model = scripted_model([call("publish", title="N"), text("checked")])
    checker = Agent(name="checker", tools=[publish], model=checker_model)
    researcher = Agent(
        name="researcher",
        tools=[checker.as_tool()],
        model=scripted_model([call("checker", task="check it"), text("researched")]),
    )
    writer = Agent(name="writer", model=scripted_model([text("written")]))
    lead = Agent(
        name="lead",
        tools=[researcher.as_tool(), writer.as_tool()],
        model=scripted_model([step(call("researcher", task="dig"), call("writer", task="draft")), text("all done")]),
    )
    return AgentSet({"lead": lead})


def _children(services: Services, run: RunRecord) -> list[RunRecord]:
    calls = services.store.list_tool_calls(USER, run.run_id)
    return [services.store.get_run(USER, child_run_id(run.run_id, c.tool_call_id)) for c in calls]


@pytest.mark.parametrize("engine", ["moto", "local"])
@pytest.mark.parametrize("steps_per_execution", [400, 1])
def test_children_are_executions_and_the_parent_waits_for_them_holding_nothing(
    engine: Engine, steps_per_execution: int
) -> None:
    published: list[str] = []
    agents = _agents(published)

    def make(**backend: Any) -> Services:
        return Services(agents=agents, steps_per_execution=steps_per_execution, **backend)

    with local_backend(make, engine=engine) as backend:
        services = backend.services
        begin_turn(
            services,
            USER,
            conversation_id="c-lead",
            run_id="run-lead",
            assistant_message_id="a-lead",
            user_message={"id": "u-lead", "role": "user", "parts": [{"type": "text", "text": "go"}]},
            claims={"sub": USER, "name": "Alice"},
        )
        pending = _until(lambda: services.store.pending_approvals(USER), "the grandchild's approval")
        (approval,) = pending
        _until(lambda: services.store.get_approval(USER, approval.approval_id).task_token, "the approval's token")
        lead = services.store.get_run(USER, "run-lead")
        assert lead.status == "waiting_user"
        researcher, writer = _children(services, lead)
        assert researcher.agent == "researcher" and writer.agent == "writer"
        _until(lambda: services.store.get_run(USER, writer.run_id).status == "completed", "the writer's end")
        assert services.store.get_run(USER, "run-lead").status == "waiting_user"  # still waits for the researcher
        (checker,) = _children(services, services.store.get_run(USER, researcher.run_id))
        assert checker.run_id == approval.run_id and checker.context is not None
        assert checker.context["claims"] == {"sub": USER, "name": "Alice"}
        waits.decide(services, USER, approval.approval_id, approved=True, reason=None)
        done = _until(
            lambda: (r := services.store.get_run(USER, "run-lead")).status == "completed" and r, "the lead's end"
        )
        assert done.status == "completed" and published == ["N"]
        message = services.store.get_message(USER, done.conversation_id, done.assistant_message_id)
        outputs = [p.get("output") for p in message.parts if str(p["type"]).startswith("tool-")]
        assert outputs == ["researched", "written"]
        assert message.parts[-1] == {"type": "text", "text": "all done", "state": "done"}
        runs = ["run-lead", researcher.run_id, writer.run_id, checker.run_id]
        _until(lambda: _executions_ended(backend, runs), "every execution's end")


def _executions_ended(backend: LocalBackend, run_ids: list[str]) -> bool:
    orchestrator = backend.orchestrator
    if isinstance(orchestrator, LocalStepFunctions):
        return orchestrator.running() == 0
    assert backend.workflow is not None
    return all(_latest_status(backend, r) == "SUCCEEDED" for r in run_ids)


def _latest_status(backend: LocalBackend, run_id: str) -> str:
    assert backend.workflow is not None
    generation = 0
    while True:
        try:
            backend.workflow.status(run_id, generation + 1)
        except Exception:  # no later generation
            return backend.workflow.status(run_id, generation)
        generation += 1


def test_a_restart_over_the_data_folder_loses_no_child_and_no_approval(tmp_path: Any) -> None:
    """`stepline dev` stops while a grandchild waits for its approval; started again, the decision goes home."""
    published: list[str] = []
    agents = _agents(published)

    def make(**backend: Any) -> Services:
        return Services(agents=agents, **backend)

    with local_backend(make, engine="local", data_dir=tmp_path) as backend:
        services = backend.services
        begin_turn(
            services,
            USER,
            conversation_id="c-lead",
            run_id="run-lead",
            assistant_message_id="a-lead",
            user_message={"id": "u-lead", "role": "user", "parts": [{"type": "text", "text": "go"}]},
        )
        (approval,) = _until(lambda: services.store.pending_approvals(USER), "the grandchild's approval")
        _until(lambda: services.store.get_approval(USER, approval.approval_id).task_token, "the approval's token")
        researcher, writer = _children(services, services.store.get_run(USER, "run-lead"))
        _until(lambda: services.store.get_run(USER, writer.run_id).status == "completed", "the writer's end")
    with local_backend(make, engine="local", data_dir=tmp_path) as backend:  # the next start of the server
        services = backend.services
        assert backend.redriven >= 3  # the lead, the researcher and the checker, each waiting
        _until(lambda: services.store.get_approval(USER, approval.approval_id).task_token, "the token again")
        waits.decide(services, USER, approval.approval_id, approved=True, reason=None)
        done = _until(
            lambda: (r := services.store.get_run(USER, "run-lead")).status == "completed" and r, "the lead's end"
        )
        message = services.store.get_message(USER, done.conversation_id, done.assistant_message_id)
        outputs = [p.get("output") for p in message.parts if str(p["type"]).startswith("tool-")]
        assert outputs == ["researched", "written"] and published == ["N"]
        assert services.store.get_run(USER, researcher.run_id).status == "completed"
