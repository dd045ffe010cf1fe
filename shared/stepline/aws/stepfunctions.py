"""The Step Functions orchestrator: start (named by run id), stop, and resume a waiting task."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..runtime.executions import Execution

__all__ = ["StepFunctionsOrchestrator", "execution_arn", "execution_name", "first_input"]

_ALREADY_DONE = ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken")
"""What SendTaskSuccess answers for a token already used or expired: AWS says TaskTimedOut or
TaskDoesNotExist, moto says InvalidToken. All mean "already resumed or expired", never "retry"."""


_MAX_GENERATIONS = 1000
"""Far above any run: at 400 steps per execution this is 400,000 model steps."""


def execution_name(run_id: str, generation: int = 0) -> str:
    """The ASL's ContinueAsNew names generation n `{run_id}--g{n}` (States.Format)."""
    return run_id if generation == 0 else f"{run_id}--g{generation}"


def first_input(user_id: str, run_id: str, *, approval_timeout_seconds: int, first_step: int = 0) -> dict[str, Any]:
    """The input of a run's first execution, as the ASL reads it (generation 0)."""
    return {
        "userId": user_id,
        "runId": run_id,
        "approvalTimeoutSeconds": approval_timeout_seconds,
        "generation": 0,
        "firstStep": first_step,
    }


def execution_arn(state_machine_arn: str, run_id: str, generation: int = 0) -> str:
    """The ARN of a run's `generation` (0 first; the ASL continues long runs as new ones)."""
    return state_machine_arn.replace(":stateMachine:", ":execution:") + f":{execution_name(run_id, generation)}"


class StepFunctionsOrchestrator:
    """Runs each agent run as one Standard execution named by its run id."""

    def __init__(self, client: Any, *, state_machine_arn: str, approval_timeout_seconds: int) -> None:
        self._client = client
        self._arn = state_machine_arn
        self._timeout = approval_timeout_seconds

    def execution_arn(self, run_id: str, generation: int = 0) -> str:
        return execution_arn(self._arn, run_id, generation)

    def start_run(self, user_id: str, run_id: str, *, first_step: int = 0) -> None:
        """Start generation 0; `first_step` > 0 drives a run again from its checkpoint (the local restart)."""
        payload = first_input(user_id, run_id, approval_timeout_seconds=self._timeout, first_step=first_step)
        # Same name and same input while RUNNING returns the running execution, and a name already
        # used raises ExecutionAlreadyExists: either way a duplicated start is harmless.
        with contextlib.suppress(self._client.exceptions.ExecutionAlreadyExists):
            self._client.start_execution(stateMachineArn=self._arn, name=run_id, input=json.dumps(payload))

    def stop_run(self, user_id: str, run_id: str) -> None:
        """Stop whichever generation of the run is running (at most one: each starts the next as it ends)."""
        for generation in range(_MAX_GENERATIONS):
            arn = self.execution_arn(run_id, generation)
            try:
                status = self._client.describe_execution(executionArn=arn)["status"]
            except self._client.exceptions.ExecutionDoesNotExist:
                return
            if status == "RUNNING":
                with contextlib.suppress(self._client.exceptions.ExecutionDoesNotExist):
                    self._client.stop_execution(executionArn=arn, cause="aborted by the user")

    def latest_execution(self, run_id: str) -> Execution | None:
        """The run's last generation that exists (None: not even the first was started)."""
        found: Execution | None = None
        for generation in range(_MAX_GENERATIONS):
            try:
                described = self._client.describe_execution(executionArn=self.execution_arn(run_id, generation))
            except self._client.exceptions.ExecutionDoesNotExist:
                break
            found = Execution(generation, str(described["status"]), described.get("error"), described.get("cause"))
        return found

    def resume(self, task_token: str) -> bool:
        try:
            self._client.send_task_success(taskToken=task_token, output="{}")
        except Exception as error:  # botocore's modelled errors differ by service version
            code = getattr(error, "response", {}).get("Error", {}).get("Code")
            if code in _ALREADY_DONE:
                return False
            raise
        return True
