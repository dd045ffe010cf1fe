"""The real ASL, executed by moto's Step Functions interpreter, with Lambda tasks run in process.

moto (pinned in pyproject) has a port of LocalStack's ASL interpreter (`execute_state_machine`),
which calls Lambda through a boto3 client. Its Lambda backend without Docker (`LambdaSimpleBackend`)
only echoes payloads, so **this is the one place that routes a Lambda invocation to a Python
handler**: `install_lambda_router` replaces `LambdaSimpleBackend.invoke` with a dispatcher by
function name. An exception in a handler is reported as an unhandled function error with its class
name as `errorType`, exactly what Step Functions' `Retry`/`Catch` match on.

Each `LocalWorkflow` creates its functions under names tagged with its own number
(`stepline-model-step--3`) and routes only those to its handlers. moto's executions are threads
that outlive the backend that started them (a retry's `time.sleep` is not interruptible), so
without the tag an execution left over from a closed backend would wake later and run the next
backend's handlers against a run that backend never had. `LocalWorkflow.close` stops its running
executions, stops routing to its handlers and waits for the calls already in them.

`install_sfn_start_adapter` is the other moto adaptation: its optimized `states:startExecution`
integration passes the ASL's parameter names (`StateMachineArn`, `Name`, `Input`, as AWS documents
them) to boto3 unchanged, which wants `stateMachineArn`, `name`, `input`, and then cannot serialise
the response's datetime. The adapter renames the parameters and returns what AWS returns
(`ExecutionArn`, `StartDate`), so the ASL's ContinueAsNew state stays the one AWS runs.
"""

from __future__ import annotations

import io
import itertools
import json
import threading
import traceback
import zipfile
from collections.abc import Callable, Mapping
from typing import Any, cast

from stepline.aws.stepfunctions import execution_arn
from stepline.protocol._json import loads_strict
from stepline.runtime.handling import HANDLER_NAMES, SAME_HANDLER, Handler, handler_for, logical_name
from stepline.stack import ASL

from .moto_speed import install_sfn_speedups

__all__ = [
    "FUNCTIONS",
    "LocalWorkflow",
    "SimulatedCrash",
    "install_lambda_router",
    "install_sfn_start_adapter",
    "lambda_error_type",
]

FUNCTIONS = {
    f"{logical_name(name)}FunctionArn": name  # the ASL's placeholder: ${ModelStepFunctionArn}
    for name in (*HANDLER_NAMES, *SAME_HANDLER)
}
_TAG = "--"  # between a handler's name and its workflow's number: Lambda names allow no dots
_numbers = itertools.count(1)


class _Routes:
    """One workflow's handlers, and how many calls are in them."""

    def __init__(self, routes: Mapping[str, Handler]) -> None:
        self.routes = routes  # read at each call: the backend fills it after creating the workflow
        self.calls = 0
        self.idle = threading.Condition()

    def enter(self) -> None:
        with self.idle:
            self.calls += 1

    def leave(self) -> None:
        with self.idle:
            self.calls -= 1
            self.idle.notify_all()

    def drain(self, timeout: float) -> bool:
        with self.idle:
            return self.idle.wait_for(lambda: self.calls == 0, timeout)


_LIVE: dict[str, _Routes] = {}  # workflow number -> its routes, while the workflow is open


class _Context:
    """The parts of a Lambda context the handlers read."""

    def __init__(self, function_name: str, request_id: str) -> None:
        self.function_name = function_name
        self.aws_request_id = request_id


def _unhandled(response_headers: dict[str, str], error_type: str, message: str) -> bytes:
    response_headers["x-amz-function-error"] = "Unhandled"
    return json.dumps({"errorType": error_type, "errorMessage": message, "stackTrace": []}).encode()


def install_lambda_router() -> None:
    """Route moto's Lambda invocations to the in-process handlers of the workflow that owns the function."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    counter = itertools.count(1)

    def invoke(
        self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: dict[str, str]
    ) -> bytes:
        tagged = function_name.split(":function:")[-1].split(":")[0]
        name, _, number = tagged.partition(_TAG)
        owner = _LIVE.get(number)
        if owner is None:  # an execution of a closed workflow: it reaches no one's handlers
            return _unhandled(response_headers, "WorkflowClosed", f"the workflow of {tagged} is closed")
        handler = handler_for(owner.routes, name)
        if handler is None:
            return _unhandled(response_headers, "KeyError", f"no in-process handler for Lambda function {name}")
        event: dict[str, Any] = loads_strict(body) if body else {}
        owner.enter()
        try:
            result = handler(event, _Context(name, f"local-{next(counter)}"))
        except (Exception, _SimulatedCrash, BaseExceptionGroup) as error:  # as Lambda reports an unhandled error
            response_headers["x-amz-function-error"] = "Unhandled"
            payload = {
                "errorType": lambda_error_type(error),
                "errorMessage": str(error),
                "stackTrace": traceback.format_exc().splitlines(),
            }
            return json.dumps(payload).encode()
        finally:
            owner.leave()
        return json.dumps(result).encode()

    LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign]


_SFN_PARAMETERS = {"StateMachineArn": "stateMachineArn", "Name": "name", "Input": "input"}


def install_sfn_start_adapter() -> None:
    """Make moto's `states:startExecution` task take AWS's parameter names (see the module docstring)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_sfn

    service = state_task_service_sfn.StateTaskServiceSfn
    if getattr(service, "_stepline_adapted", False):
        return
    original: Callable[..., None] = getattr(service, "_eval_service_task")  # noqa: B009 - moto's private hook

    def eval_service_task(
        self: Any, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
    ) -> None:
        renamed = {_SFN_PARAMETERS.get(key, key): value for key, value in normalised_parameters.items()}
        original(
            self,
            env=env,
            resource_runtime_part=resource_runtime_part,
            normalised_parameters=renamed,
            state_credentials=state_credentials,
        )
        response = env.stack.pop()
        env.stack.append({"ExecutionArn": response["executionArn"], "StartDate": response["startDate"].isoformat()})

    service._eval_service_task = eval_service_task  # pyright: ignore[reportPrivateUsage]
    service._stepline_adapted = True  # pyright: ignore[reportAttributeAccessIssue]


class _SimulatedCrash(BaseException):
    """Base of test exceptions that stand for a dying process (they pass through `except Exception`)."""


def lambda_error_type(error: BaseException) -> str:
    """The `errorType` Step Functions sees for an unhandled error.

    A crash of the process itself reaches Step Functions as `Lambda.Unknown`; tests simulate one
    with an exception carrying `lambda_error_type` (also inside an exception group).
    """
    inners: tuple[BaseException, ...] = getattr(error, "exceptions", ())  # an exception group's members
    for inner in inners:
        found = lambda_error_type(inner)
        if found != type(inner).__name__:
            return found
    name: str = type(error).__name__
    return str(getattr(error, "lambda_error_type", name))


def _dummy_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


class LocalWorkflow:
    """Creates the functions and the state machine on moto (call inside `mock_aws(...)`), routed to `routes`.

    `close()` before leaving `mock_aws`: see the module docstring.
    """

    def __init__(
        self, routes: Mapping[str, Handler], *, region: str = "us-east-1", name: str = "stepline-agent-run"
    ) -> None:
        import boto3

        self._number = str(next(_numbers))
        self._routes = _Routes(routes)
        install_lambda_router()
        install_sfn_start_adapter()
        install_sfn_speedups()  # the same interpreter, without re-parsing and new clients per execution
        self.sfn = cast(Any, boto3.client("stepfunctions", region_name=region))  # pyright: ignore[reportUnknownMemberType]
        self._lambda = cast(Any, boto3.client("lambda", region_name=region))  # pyright: ignore[reportUnknownMemberType]
        self._iam = cast(Any, boto3.client("iam", region_name=region))  # pyright: ignore[reportUnknownMemberType]
        trust = json.dumps({"Version": "2012-10-17", "Statement": []})
        role: dict[str, Any] = self._iam.create_role(
            RoleName=f"stepline-local{_TAG}{self._number}", AssumeRolePolicyDocument=trust
        )
        arns: dict[str, str] = {}
        self.functions: dict[str, str] = {}
        """Each handler's name -> the ARN of its function here."""
        for placeholder, function in FUNCTIONS.items():
            created: dict[str, Any] = self._lambda.create_function(
                FunctionName=f"{function}{_TAG}{self._number}",
                Runtime="python3.13",
                Role=role["Role"]["Arn"],
                Handler="app.handler",
                Code={"ZipFile": _dummy_zip()},
            )
            arns[placeholder] = self.functions[function] = created["FunctionArn"]
        definition = ASL.read_text(encoding="utf-8")
        for placeholder, arn in arns.items():  # CloudFormation's DefinitionSubstitutions; moto does not substitute
            definition = definition.replace("${" + placeholder + "}", arn)
        self.state_machine_arn: str = self.sfn.create_state_machine(
            name=name, definition=definition, roleArn=role["Role"]["Arn"], type="STANDARD"
        )["stateMachineArn"]
        _LIVE[self._number] = self._routes

    def close(self, timeout: float = 10.0) -> None:
        """Stop the running executions and the routing to the handlers; wait for the calls in them."""
        try:
            pages = self.sfn.get_paginator("list_executions").paginate(
                stateMachineArn=self.state_machine_arn, statusFilter="RUNNING"
            )
            for page in pages:
                for execution in page["executions"]:
                    self.sfn.stop_execution(executionArn=execution["executionArn"])
        finally:
            _LIVE.pop(self._number, None)
            self._routes.drain(timeout)  # a call held past it (a test's gate) is left to its thread

    def execution_arn(self, run_id: str, generation: int = 0) -> str:
        return execution_arn(self.state_machine_arn, run_id, generation)

    def status(self, run_id: str, generation: int = 0) -> str:
        return str(self.sfn.describe_execution(executionArn=self.execution_arn(run_id, generation))["status"])

    def history(self, run_id: str, generation: int = 0) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"executionArn": self.execution_arn(run_id, generation), "maxResults": 1000}
        while True:
            page: dict[str, Any] = self.sfn.get_execution_history(**kwargs)
            events.extend(page["events"])
            if "nextToken" not in page:
                return events
            kwargs["nextToken"] = page["nextToken"]


SimulatedCrash = _SimulatedCrash
