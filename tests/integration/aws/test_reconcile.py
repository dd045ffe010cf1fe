"""The reconciler on moto's executions: a run whose execution ended without closing it is closed, and
its conversation takes a new message; a terminal run is never changed.

Each dead execution is made the way it happens on AWS: stopped from outside (the console's
StopExecution), failed by an error no Catch handles (`States.Runtime`), or a continue-as-new whose
next generation never started. The EventBridge status-change event is built from DescribeExecution,
as EventBridge sends it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from stepline.aws.stepfunctions import StepFunctionsOrchestrator
from stepline.llm.scripted import ScriptedModel
from stepline.runtime.handling import Handler
from stepline.runtime.reconcile import DEFAULT_GRACE_MS, handle_event, sweep
from stepline.runtime.turn import begin_turn
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import STOP, USER, Counted, begin, call_step, text_step


def orchestrator(aws: LocalAws) -> StepFunctionsOrchestrator:
    found = aws.services.orchestrator
    assert isinstance(found, StepFunctionsOrchestrator)
    return found


def status_change(aws: LocalAws, run_id: str, generation: int = 0) -> dict[str, Any]:
    """The EventBridge event of the execution's last status change (detail as AWS documents it)."""
    arn = aws.workflow.execution_arn(run_id, generation)
    described = aws.workflow.sfn.describe_execution(executionArn=arn)
    detail = {
        "executionArn": arn,
        "stateMachineArn": aws.workflow.state_machine_arn,
        "name": described["name"],
        "status": described["status"],
        "input": described["input"],
        "error": described.get("error"),
        "cause": described.get("cause"),
    }
    return {"source": "aws.states", "detail-type": "Step Functions Execution Status Change", "detail": detail}


def accepts_a_new_message(aws: LocalAws, run_id: str) -> None:
    """The conversation is free: a new turn starts in it and its run completes."""
    conversation_id = aws.services.store.get_run(USER, run_id).conversation_id
    assert aws.services.store.get_conversation(USER, conversation_id).active_run_id is None
    begin_turn(
        aws.services,
        USER,
        conversation_id=conversation_id,
        run_id=f"{run_id}-next",
        assistant_message_id=f"a-{run_id}-next",
        user_message={"id": f"u-{run_id}-next", "role": "user", "parts": [{"type": "text", "text": "again"}]},
    )
    assert aws.wait_execution(f"{run_id}-next") == "SUCCEEDED"
    assert aws.services.store.get_run(USER, f"{run_id}-next").status == "completed"


SLOW = {
    "delayMs": 50,
    "parts": [
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": "x"} for _ in range(40)),
        {"type": "text-end", "id": "t"},
        STOP,
    ],
}


def test_an_execution_stopped_from_outside_aborts_its_run() -> None:
    # A working run: moto leaves an execution that waits on a task token RUNNING after
    # StopExecution (AWS aborts it at once), so the stop here comes while a step streams.
    model = ScriptedModel.from_script([SLOW, text_step("A new answer.")])
    with local_aws(model) as aws:
        run_id = begin(aws)
        aws.wait_run(USER, run_id, lambda r: r.status == "running" and r.last_event_seq > 1)
        aws.workflow.sfn.stop_execution(executionArn=aws.workflow.execution_arn(run_id), cause="stopped in the console")
        assert aws.wait_execution(run_id) == "ABORTED"
        assert aws.services.store.get_run(USER, run_id).status == "running"  # what it would stay forever
        event = status_change(aws, run_id)
        assert handle_event(aws.services, orchestrator(aws), event) == {
            "runId": run_id,
            "outcome": "closed",
            "status": "aborted",
        }
        run = aws.services.store.get_run(USER, run_id)
        assert (run.status, run.cancel_reason) == ("aborted", "execution_stopped")
        message = aws.services.store.get_message(USER, run.conversation_id, run.assistant_message_id)
        assert message.status == "aborted"
        assert handle_event(aws.services, orchestrator(aws), event)["outcome"] == "untouched"  # idempotent
        accepts_a_new_message(aws, run_id)


class StoreDown(Exception):
    """FailRun cannot write (say, the table is unavailable for longer than its retries)."""


def _fail_run_fails(routes: dict[str, Handler]) -> dict[str, Handler]:
    """ModelStep fails (caught into FailRun), and FailRun fails every attempt: no Catch is left."""
    model_step, fail_run = routes["stepline-model-step"], routes["stepline-fail-run"]

    def broken_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        result = model_step(event, context)  # the step runs and is saved
        if event["runId"].endswith("-next"):  # the conversation's next run works
            return result
        raise RuntimeError("the step's reply was lost")

    def broken_fail_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if event["runId"].endswith("-next"):
            return fail_run(event, context)
        raise StoreDown("the agent table is unavailable")

    return {**routes, "stepline-model-step": broken_step, "stepline-fail-run": broken_fail_run}


@pytest.fixture
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's interpreter sleeps out each Retry's interval; FailRun's six take two minutes. Skip the waits."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    monkeypatch.setattr(retrier_decl, "time", SimpleNamespace(sleep=lambda _: None))


@pytest.mark.usefixtures("instant_retries")
def test_an_execution_failed_by_an_error_no_catch_takes_fails_its_run_with_the_cause() -> None:
    # AWS's uncatchable States.Runtime ends an execution the same way; moto's interpreter lets
    # Catch States.ALL take it, so the error here is FailRun's own, after its last retry.
    model = ScriptedModel.from_script([text_step("Lost."), text_step("A new answer.")])
    with local_aws(model, wrap=_fail_run_fails) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "FAILED"
        assert aws.services.store.get_run(USER, run_id).status == "running"  # what it would stay forever
        event = status_change(aws, run_id)
        assert event["detail"]["error"] == "StoreDown"
        assert handle_event(aws.services, orchestrator(aws), event)["outcome"] == "closed"
        run = aws.services.store.get_run(USER, run_id)
        assert run.status == "failed" and run.error is not None and run.error["code"] == "StoreDown"
        assert run.error["message"] == "the run's execution failed: StoreDown (the agent table is unavailable)"
        assert "Traceback" not in json.dumps(run.error) and "stackTrace" not in json.dumps(run.error)
        message = aws.services.store.get_message(USER, run.conversation_id, run.assistant_message_id)
        assert message.status == "failed" and message.content == "Lost."
        assert handle_event(aws.services, orchestrator(aws), event)["outcome"] == "untouched"
        accepts_a_new_message(aws, run_id)


@pytest.fixture
def continuations_never_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ContinueAsNew state's start of generation 1 is answered "already exists" (so caught as done)."""
    from moto.stepfunctions.exceptions import ExecutionAlreadyExists
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend.start_execution

    def start_execution(self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(name, str) and name.endswith("--g1"):
            raise ExecutionAlreadyExists(f"Execution Already Exists: '{name}'")
        return original(self, state_machine_arn, name, *args, **kwargs)

    monkeypatch.setattr(StepFunctionsParserBackend, "start_execution", start_execution)
    yield


@pytest.mark.usefixtures("continuations_never_start")
def test_a_run_whose_next_execution_never_started_is_failed_by_the_sweep() -> None:
    weather = Counted("weather", {"t": 18})
    model = ScriptedModel.from_script([call_step("weather", "{}"), text_step("A new answer.")])
    with local_aws(model, tools=[weather.tool], steps_per_execution=1) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "SUCCEEDED"  # ContinuedAsNew, with nothing after it
        assert orchestrator(aws).latest_execution(run_id) is not None
        assert aws.services.store.get_run(USER, run_id).status == "running"
        soon = aws.services.clock()
        assert all(r.outcome != "closed" for r in sweep(aws.services, orchestrator(aws), now=soon))  # too young
        later = soon + DEFAULT_GRACE_MS + 1
        (closed,) = [r for r in sweep(aws.services, orchestrator(aws), now=later) if r.run_id == run_id]
        assert (closed.outcome, closed.status) == ("closed", "failed")
        run = aws.services.store.get_run(USER, run_id)
        assert run.error is not None and run.error["message"] == "the run's next execution never started"
        assert weather.runs == 1
        assert sweep(aws.services, orchestrator(aws), now=later) == []  # idempotent: nothing left to sweep
        accepts_a_new_message(aws, run_id)


def test_a_run_without_any_execution_is_failed_by_the_sweep() -> None:
    model = ScriptedModel.from_script([text_step("A new answer.")])
    with local_aws(model) as aws:
        unstarted = dataclasses.replace(aws.services, orchestrator=None)  # the turn written, the start lost
        begin_turn(
            unstarted,
            USER,
            conversation_id="c-lost",
            run_id="run-lost",
            assistant_message_id="a-lost",
            user_message={"id": "u-lost", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        )
        later = aws.services.clock() + DEFAULT_GRACE_MS + 1
        (closed,) = sweep(aws.services, orchestrator(aws), now=later)
        assert (closed.run_id, closed.outcome, closed.status) == ("run-lost", "closed", "failed")
        error = aws.services.store.get_run(USER, "run-lost").error
        assert error is not None and error["code"] == "ExecutionNotFound"
        accepts_a_new_message(aws, "run-lost")


def test_the_reconciler_never_changes_a_terminal_run() -> None:
    model = ScriptedModel.from_script([text_step("Done.")])
    with local_aws(model) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        store = aws.services.store
        run = store.get_run(USER, run_id)

        def records() -> str:
            message = store.get_message(USER, run.conversation_id, run.assistant_message_id)
            conversation = store.get_conversation(USER, run.conversation_id)
            events = store.events_after(USER, run_id, 0, now=aws.services.clock())
            return json.dumps(
                [store.get_run(USER, run_id).model_dump(), message.model_dump(), conversation.model_dump()]
                + [e.model_dump() for e in events]
            )

        before = records()
        for status in ("FAILED", "TIMED_OUT", "ABORTED"):
            event = status_change(aws, run_id)
            event["detail"].update(status=status, error="States.Timeout", cause="late")
            assert handle_event(aws.services, orchestrator(aws), event)["outcome"] == "untouched"
        assert sweep(aws.services, orchestrator(aws), now=aws.services.clock() + 10 * DEFAULT_GRACE_MS) == []
        assert records() == before
