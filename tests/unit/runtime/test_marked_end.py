"""A run marked to be stopped ends as aborted, whichever end comes for it.

GIVEN a run whose stop was asked for (`request_abort`: a person's Stop, or its parent's end) but
not yet ended (its step still ran), WHEN its next end is a finish or a failure (the step failed,
say, cut by the stop; FailRun or the reconciler ends it), THEN it ends aborted with the stop's
reason, and the agent's abort callback fires (not its error callback). A run that was never
marked fails as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepline import Agent
from stepline.agent.loading import AgentSet
from stepline.llm.scripted import ScriptedModel
from stepline.loop.callbacks import AbortEvent, ErrorEvent
from stepline.runtime.ending import fail_run, finalize_run
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.store.memory import MemoryStore
from tests.unit.loop.support import text_step

USER = "alice"
End = Callable[[Services, str, str], dict[str, Any]]


def _failed(services: Services, user_id: str, run_id: str) -> dict[str, Any]:
    return fail_run(services, user_id, run_id, "the step failed unexpectedly", "step_failed")


def _started(events: list[str]) -> Services:
    def aborted(event: AbortEvent) -> None:
        events.append(f"abort:{event.reason}")

    def failed(event: ErrorEvent) -> None:
        events.append("error")

    agent = Agent(name="desk", model=ScriptedModel.from_script([text_step("Hi.")]), on_abort=aborted, on_error=failed)
    services = Services(store=MemoryStore(), agents=AgentSet.single(agent), clock=lambda: 1_000)
    begin_turn(
        services,
        USER,
        conversation_id="conv",
        run_id="run-1",
        assistant_message_id="msg-1",
        user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]},
    )
    return services


@pytest.mark.parametrize("end", [finalize_run, _failed], ids=["finished", "failed"])
def test_a_run_marked_to_stop_ends_aborted_with_the_stops_reason(end: End) -> None:
    events: list[str] = []
    services = _started(events)
    services.store.request_abort(USER, "run-1", reason="parent_ended")
    result = end(services, USER, "run-1")
    run = services.store.get_run(USER, "run-1")
    assert result["status"] == run.status == "aborted" and run.cancel_reason == "parent_ended"
    assert events == ["abort:parent_ended"]


def test_a_run_never_marked_fails() -> None:
    events: list[str] = []
    services = _started(events)
    assert _failed(services, USER, "run-1")["status"] == "failed"
    assert services.store.get_run(USER, "run-1").error is not None and events == ["error"]
