"""The Step Functions orchestrator's answers: a duplicated start, a token used twice, AWS's codes."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from stepline.aws.stepfunctions import StepFunctionsOrchestrator
from stepline.llm.scripted import ScriptedModel
from stepline.runtime.waits import decide
from tests.support.local_aws import local_aws
from tests.support.runs import USER, Counted, begin, call_step, text_step, wait_for_token


def test_a_used_token_resumes_nothing_and_a_duplicated_start_is_one_execution() -> None:
    delete = Counted("delete_file", {"deleted": True})
    model = ScriptedModel.from_script([call_step("delete_file", '{"path":"/x"}'), text_step("Done.")])
    with local_aws(model, tools=[delete.tool], tool_approval={"delete_file": "user-approval"}) as aws:
        run_id = begin(aws)
        orchestrator = aws.services.orchestrator
        assert orchestrator is not None
        orchestrator.start_run(USER, run_id)  # the same start again: harmless
        executions = aws.workflow.sfn.list_executions(stateMachineArn=aws.workflow.state_machine_arn)["executions"]
        assert [e["name"] for e in executions] == [run_id]
        aws.wait_run(USER, run_id, lambda r: r.status == "waiting_approval")
        approval_id = wait_for_token(aws, "c1")
        token = aws.services.store.get_approval(USER, approval_id).task_token
        assert token is not None
        decide(aws.services, USER, approval_id, approved=True, reason=None)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        assert orchestrator.resume(token) is False  # moto answers InvalidToken
        assert delete.runs == 1


@pytest.mark.parametrize("code", ["TaskTimedOut", "TaskDoesNotExist"])
def test_aws_answers_for_a_finished_task_mean_already_done(code: str) -> None:
    client = boto3.client("stepfunctions", region_name="us-east-1")
    orchestrator = StepFunctionsOrchestrator(
        client, state_machine_arn="arn:aws:states:us-east-1:0:stateMachine:m", approval_timeout_seconds=60
    )
    with Stubber(client) as stub:  # AWS's own error codes, which moto does not produce
        stub.add_client_error("send_task_success", service_error_code=code, http_status_code=400)
        assert orchestrator.resume("token") is False


def test_any_other_error_is_raised_for_the_caller_to_retry() -> None:
    client = boto3.client("stepfunctions", region_name="us-east-1")
    orchestrator = StepFunctionsOrchestrator(
        client, state_machine_arn="arn:aws:states:us-east-1:0:stateMachine:m", approval_timeout_seconds=60
    )
    with Stubber(client) as stub:
        stub.add_client_error("send_task_success", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(client.exceptions.ClientError):
            orchestrator.resume("token")
