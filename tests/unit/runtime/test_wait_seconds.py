"""A wait ends at the deadline stored when it began, in whichever execution waits (AwaitInput reads
`waitSeconds` from the step): a wait driven again after a restart, or rolled over to a new
execution, does not get a fresh timeout."""

from __future__ import annotations

from typing import Any

from stepline.llm.scripted import ScriptedModel
from stepline.loop.tools import Tool
from stepline.runtime.handlers import handlers
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.runtime.waits import wait_seconds
from stepline.store.memory import MemoryStore
from tests.support.runs import USER, call_step

TIMEOUT_MS = 3_600_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def waiting(tool: str, **options: Any) -> tuple[Services, Clock]:
    clock = Clock()

    async def run(_: Any) -> Any:
        return {"ok": True}

    tools = [Tool(name=tool, input_schema={"type": "object"}, execute=run if options else None)]
    services = Services(
        store=MemoryStore(),
        model=ScriptedModel.from_script([call_step(tool, "{}")]),
        tools=tools,
        approval_timeout_ms=TIMEOUT_MS,
        clock=clock,
        **options,
    )
    begin_turn(
        services,
        USER,
        conversation_id="c1",
        run_id="r1",
        assistant_message_id="a1",
        user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
    )
    return services, clock


class Context:
    aws_request_id = "req-1"


def test_an_approval_wait_keeps_the_approvals_deadline() -> None:
    services, clock = waiting("delete_file", tool_approval={"delete_file": "user-approval"})
    step = handlers(lambda: services)["stepline-model-step"]
    first = step({"userId": USER, "runId": "r1", "firstStep": 0}, Context())
    assert (first["next"], first["waitSeconds"]) == ("await-approval", TIMEOUT_MS // 1000)
    (approval,) = services.store.pending_approvals(USER)
    assert approval.expires_at == clock.now + TIMEOUT_MS
    clock.now += 600_500  # ten minutes later the run is driven again (a restart, or a new generation)
    again = step({"userId": USER, "runId": "r1", "firstStep": 1}, Context())
    assert (again["next"], again["waitSeconds"]) == ("await-approval", 3_000)  # what was left, rounded up
    clock.now += 10 * TIMEOUT_MS  # long past the deadline: the wait ends at once
    assert wait_seconds(services, USER, "r1") == 1


def test_a_question_wait_keeps_the_deadline_of_its_checkpoint() -> None:
    services, clock = waiting("ask_user_question")  # client-side: no executor
    step = handlers(lambda: services)["stepline-model-step"]
    assert step({"userId": USER, "runId": "r1", "firstStep": 0}, Context())["next"] == "await-client"
    clock.now += 1_800_000
    assert wait_seconds(services, USER, "r1") == 1_800
