"""A closed moto workflow: its executions end, and none of them reaches another workflow's handlers.

moto's executions are threads that outlive the backend that started them. Seen in CI: an
execution left from an earlier test woke from a retry's sleep and ran the next test's FailRun
against a run that test never had (a span in the wrong trace, a NotFound in the log).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, cast

import boto3
from moto import mock_aws

from stepline.local.backend import MOTO_CONFIG, REGION
from stepline.local.workflow import LocalWorkflow
from stepline.runtime.handling import Handler


def _recording(calls: list[dict[str, Any]]) -> dict[str, Handler]:
    def fail_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        calls.append(event)
        return {}

    return {"stepline-fail-run": fail_run}


def _invoke(function_arn: str, event: dict[str, Any]) -> dict[str, Any]:
    client = cast(Any, boto3.client("lambda", region_name=REGION))  # pyright: ignore[reportUnknownMemberType]
    return client.invoke(FunctionName=function_arn, Payload=json.dumps(event).encode())


def test_a_closed_workflows_functions_reach_no_handlers_and_an_open_ones_reach_only_its_own() -> None:
    with mock_aws(config=MOTO_CONFIG):
        first_calls: list[dict[str, Any]] = []
        second_calls: list[dict[str, Any]] = []
        first = LocalWorkflow(_recording(first_calls), region=REGION, name="first")
        second = LocalWorkflow(_recording(second_calls), region=REGION, name="second")
        first.close()
        late = _invoke(first.functions["stepline-fail-run"], {"runId": "from-the-first"})
        current = _invoke(second.functions["stepline-fail-run"], {"runId": "from-the-second"})
        second.close()
    assert late["FunctionError"] == "Unhandled"
    assert json.loads(late["Payload"].read())["errorType"] == "WorkflowClosed"
    assert "FunctionError" not in current
    assert (first_calls, second_calls) == ([], [{"runId": "from-the-second"}])


def test_close_stops_the_running_executions_and_waits_for_the_call_in_a_handler() -> None:
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    def held_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        entered.set()
        release.wait(30)
        order.append("handler returned")
        return {"next": "done"}

    with mock_aws(config=MOTO_CONFIG):
        workflow = LocalWorkflow({"stepline-model-step": held_step}, region=REGION)
        started = workflow.sfn.start_execution(
            stateMachineArn=workflow.state_machine_arn,
            name="held",
            input=json.dumps({"userId": "u", "runId": "held", "firstStep": True}),
        )
        assert entered.wait(30)
        closing = threading.Thread(target=lambda: (workflow.close(), order.append("closed")))
        closing.start()
        closing.join(0.3)  # close may not return while the call is in the handler
        release.set()
        closing.join(30)
        deadline = time.monotonic() + 30  # moto reflects the stop when its execution thread sees it
        while (status := workflow.sfn.describe_execution(executionArn=started["executionArn"])["status"]) == "RUNNING":
            assert time.monotonic() < deadline, "the execution was never stopped"
            time.sleep(0.02)
    assert order == ["handler returned", "closed"]
    assert status == "ABORTED"
