"""`LocalStepFunctions`: the ASL of template.yaml run in this process, no thread held by a waiting run.

moto's Step Functions interpreter (`stepline.local.workflow`) runs every execution on threads of
its own for as long as it lives: three while it waits on a task token (the execution's, the
program's, the state's), so 200 runs parked on approvals held 640 threads, and it keeps every
thread it ever started in a module list. That is right for the tests of the ASL on moto, and wrong
for a server that holds many conversations, most of them waiting for a person.

This engine runs the same definition file (`stepline.stack.ASL`, the root template's DefinitionUri, checked
at start: `stepline.local.asl` refuses a state or field it does not run) with the Lambda tasks routed
to the in-process handlers, as moto's Lambda is. What differs is where an execution lives:

- a state that runs (a Lambda task) is a job on a small pool of worker threads (`workers`, default
  16): a run takes one for the duration of one step, then goes back into the queue, so runs
  interleave and at most `workers` steps run at once (the rest queue, as at a Lambda concurrency
  limit); the queue takes turns across tenants and their users (`stepline.local.workers`), so one
  tenant's flood does not delay another's steps;
- an execution between states is a record: parked on a task token it is an entry in a table that
  `resume` (SendTaskSuccess) takes out again, its timeout (`TimeoutSecondsPath`) and the delays of
  `Retry` are entries of one timer thread. No thread is held by a waiting run.

It keeps no execution history; a finished execution is remembered by its status only (what the
reconciler asks, `latest_execution`). It implements the orchestrator port (`start_run`, `stop_run`,
`resume`) and the reconciler's (`latest_execution`).
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from typing import Any

from ..aws.stepfunctions import execution_arn, execution_name, first_input
from ..protocol._json import loads_strict
from ..runtime.executions import Execution
from ..runtime.handling import Handler, handler_for
from ..stack import ASL
from . import asl
from .workers import Owner, Timers, Workers
from .workflow import FUNCTIONS, SimulatedCrash, lambda_error_type

__all__ = ["STEP_WORKERS", "LocalStepFunctions"]

_LOG = logging.getLogger("stepline.local")
STEP_WORKERS = 16
"""Steps that run at once: enough to keep two cores busy with scripted models and a few with real
ones, while the server's threads stay bounded whatever the number of conversations."""
_STATE_MACHINE_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-agent-run"


@dataclass(eq=False)
class _Run:
    """One execution between two states (or in one)."""

    name: str
    run_id: str
    generation: int
    data: Any
    state: str
    owner: Owner
    attempts: dict[int, int] = field(default_factory=dict[int, int])
    status: str = "RUNNING"
    token: str | None = None
    resumed: bool = False
    """The task token was used while the state's Lambda was still being invoked."""
    invoking: bool = False


def _own_tenant(user_id: str, _run_id: str) -> Owner:
    return Owner("", user_id)


class _Context:
    """The parts of a Lambda context the handlers read."""

    def __init__(self, function_name: str, request_id: str) -> None:
        self.function_name = function_name
        self.aws_request_id = request_id


class LocalStepFunctions:
    """Runs each agent run as one execution of the ASL named by its run id (see the module docstring)."""

    def __init__(
        self,
        routes: Mapping[str, Handler],
        *,
        approval_timeout_seconds: int,
        workers: int = STEP_WORKERS,
        definition: Traversable = ASL,
        owner_of: Callable[[str, str], Owner] | None = None,
    ) -> None:
        """Run `definition` with its Lambda tasks routed to `routes`.

        `owner_of(user_id, run_id)`: whose turn a run's steps take in the queue (default: the
        user's, all in one tenant); asked once per execution.
        """
        text = definition.read_text(encoding="utf-8")
        for placeholder, function in FUNCTIONS.items():  # the function's name stands for its ARN
            text = text.replace("${" + placeholder + "}", function)
        self._definition: dict[str, Any] = loads_strict(text)
        asl.check_definition(self._definition)
        self._routes = routes
        self._timeout = approval_timeout_seconds
        self._lock = threading.Lock()
        self._runs: dict[str, _Run | Execution] = {}
        """Executions by name: the live ones, and the status of each finished one."""
        self._waiting: dict[str, _Run] = {}
        """Task token -> the execution parked on it."""
        self._requests = itertools.count(1)
        self._owner_of: Callable[[str, str], Owner] = owner_of or _own_tenant
        self._workers = Workers(workers)
        self._timers = Timers(self._workers)

    def close(self, wait: float = 0.0) -> None:
        """Stop taking work; wait up to `wait` s for the steps that run (a cut run is redone on start)."""
        self._timers.stop()
        self._workers.close(wait)

    # -- the ports -------------------------------------------------------------------------------

    def start_run(self, user_id: str, run_id: str, *, first_step: int = 0) -> None:
        """Start generation 0 (a name already used is left alone, as StepFunctionsOrchestrator does)."""
        payload = first_input(user_id, run_id, approval_timeout_seconds=self._timeout, first_step=first_step)
        self._start(run_id, 0, payload)

    def stop_run(self, user_id: str, run_id: str) -> None:
        """Stop whichever generation of the run is running: a parked one at once, a step when it returns."""
        with self._lock:
            for generation in itertools.count():
                found = self._runs.get(execution_name(run_id, generation))
                if found is None:
                    return
                if isinstance(found, _Run) and found.status == "RUNNING":
                    if found.token is not None:
                        self._waiting.pop(found.token, None)
                    self._end(found, "ABORTED", None, "aborted by the user")

    def resume(self, task_token: str) -> bool:
        """SendTaskSuccess: False when the token was already used, has expired or is unknown."""
        with self._lock:
            run = self._waiting.pop(task_token, None)
            if run is None:
                return False
            run.token = None
            if run.invoking:  # the Lambda that got the token has not returned yet: go on when it does
                run.resumed = True
                return True
        self._workers.submit(lambda: self._after_task(run, {}, None), run.owner)
        return True

    def latest_execution(self, run_id: str) -> Execution | None:
        """The run's last generation that exists (None: not even the first was started)."""
        found: Execution | None = None
        with self._lock:
            for generation in itertools.count():
                run = self._runs.get(execution_name(run_id, generation))
                if run is None:
                    return found
                found = run if isinstance(run, Execution) else Execution(generation, run.status)
        return found  # pragma: no cover - the loop only ends by returning

    def running(self) -> int:
        """How many executions have not ended (waiting ones included): for tests and diagnostics."""
        with self._lock:
            return sum(isinstance(r, _Run) for r in self._runs.values())

    # -- executions ------------------------------------------------------------------------------

    def _start(self, run_id: str, generation: int, payload: dict[str, Any]) -> bool:
        name = execution_name(run_id, generation)
        owner = self._owner_of(str(payload.get("userId", "")), run_id)
        run = _Run(name, run_id, generation, payload, self._definition["StartAt"], owner)
        with self._lock:
            if name in self._runs:
                return False
            self._runs[name] = run
        self._submit(run)
        return True

    def _submit(self, run: _Run) -> None:
        self._workers.submit(lambda: self._advance(run), run.owner)

    def _end(self, run: _Run, status: str, error: str | None, cause: str | None) -> None:
        """Call with the lock held: the execution is remembered by its status only."""
        run.status = status
        self._runs[run.name] = Execution(run.generation, status, error, cause)

    def _settle(self, run: _Run, status: str, error: str | None = None, cause: str | None = None) -> None:
        """End the execution with `status`, unless it has ended already (stopped meanwhile)."""
        with self._lock:
            if run.status == "RUNNING":
                self._end(run, status, error, cause)

    def _context(self, run: _Run, token: str | None = None) -> dict[str, Any]:
        context: dict[str, Any] = {
            "Execution": {"Id": execution_arn(_STATE_MACHINE_ARN, run.run_id, run.generation), "Name": run.name},
            "StateMachine": {"Id": _STATE_MACHINE_ARN},
            "State": {"Name": run.state},
        }
        if token is not None:
            context["Task"] = {"Token": token}
        return context

    def _advance(self, run: _Run) -> None:
        """Run states until the next task has run (then queue again) or the execution parks or ends."""
        while run.status == "RUNNING":
            state: dict[str, Any] = self._definition["States"][run.state]
            kind = state["Type"]
            try:
                if kind == "Choice":
                    run.state = asl.next_choice(state, run.data, self._context(run))
                    continue
            except asl.AslError as error:
                self._fail(run, error.error, error.cause)
                return
            if kind in ("Succeed", "Fail"):
                self._settle(run, "FAILED" if kind == "Fail" else "SUCCEEDED", state.get("Error"), state.get("Cause"))
                return
            self._task(run, state)
            return

    def _task(self, run: _Run, state: dict[str, Any]) -> None:
        resource: str = state["Resource"]
        token = secrets.token_urlsafe(24) if resource.endswith(".waitForTaskToken") else None
        try:
            parameters = asl.evaluate(state.get("Parameters", {}), run.data, self._context(run, token))
        except asl.AslError as error:
            self._after_task(run, None, (error.error, error.cause))
            return
        if resource.endswith(":states:startExecution"):
            self._after_task(run, *self._start_execution(parameters))
            return
        seconds: float | None = None
        if token is not None:
            try:
                timeout = state.get("TimeoutSecondsPath")
                seconds = None if timeout is None else float(asl.read_path(run.data, timeout, {}))
            except (asl.AslError, TypeError, ValueError) as error:
                self._after_task(run, None, ("States.Runtime", f"TimeoutSecondsPath: {error}"))
                return
            with self._lock:  # parked before the Lambda runs: it hands the token on, which may be used at once
                if run.status != "RUNNING":
                    return
                run.token, run.invoking, run.resumed = token, True, False
                self._waiting[token] = run
        result, error = self._invoke(parameters)
        if token is None or error is not None:
            if token is not None:
                with self._lock:
                    self._waiting.pop(token, None)
                    run.token, run.invoking = None, False
            self._after_task(run, result, error)
            return
        with self._lock:
            run.invoking = False
            if not run.resumed:  # parked: no thread holds it until the token is used or expires
                if seconds is not None:
                    self._timers.after(seconds, lambda: self._expire(token), run.owner)  # the token only: no run kept
                return
        self._after_task(run, {}, None)

    def _expire(self, token: str) -> None:
        with self._lock:
            run = self._waiting.pop(token, None)
            if run is None:  # used, or the run was stopped
                return
            run.token = None
        self._after_task(run, None, ("States.Timeout", "the task token was not used in time"))

    def _invoke(self, parameters: dict[str, Any]) -> tuple[Any, tuple[str, str] | None]:
        """A Lambda invocation as Step Functions' `lambda:invoke` reports it."""
        name = str(parameters["FunctionName"])
        handler = handler_for(self._routes, name)
        if handler is None:
            raise KeyError(f"no handler for Lambda function {name}")
        event = loads_strict(json.dumps(parameters.get("Payload", {})))  # as it crosses the wire
        try:
            payload = handler(event, _Context(name, f"local-{next(self._requests)}"))
        except (Exception, SimulatedCrash, BaseExceptionGroup) as error:  # an unhandled function error
            kind = lambda_error_type(error)
            cause = {"errorType": kind, "errorMessage": str(error), "stackTrace": traceback.format_exc().splitlines()}
            return None, (kind, json.dumps(cause))
        return {"ExecutedVersion": "$LATEST", "Payload": loads_strict(json.dumps(payload)), "StatusCode": 200}, None

    def _start_execution(self, parameters: dict[str, Any]) -> tuple[Any, tuple[str, str] | None]:
        """`states:startExecution` of the next generation (ContinueAsNew)."""
        payload: dict[str, Any] = parameters["Input"]
        if not self._start(str(payload["runId"]), int(payload["generation"]), payload):
            return None, ("StepFunctions.ExecutionAlreadyExistsException", f"{parameters['Name']} already exists")
        return {"ExecutionArn": execution_arn(_STATE_MACHINE_ARN, payload["runId"], payload["generation"])}, None

    def _after_task(self, run: _Run, result: Any, error: tuple[str, str] | None) -> None:
        """A task's result or error: the next state (queued), a retry (on the timer), or the end."""
        state: dict[str, Any] = self._definition["States"][run.state]
        if run.status != "RUNNING":
            return
        if error is None:
            try:
                if "ResultSelector" in state:
                    result = asl.evaluate(state["ResultSelector"], result, self._context(run))
                run.data = asl.apply_result_path(run.data, state.get("ResultPath", "$"), result)
            except asl.AslError as failure:
                self._fail(run, failure.error, failure.cause)
                return
            run.attempts = {}
            if state.get("End"):  # a task that ends the execution (FinalizeRun)
                self._settle(run, "SUCCEEDED")
                return
            run.state = state["Next"]
            self._submit(run)
            return
        name, cause = error
        delay = asl.retry_delay(state.get("Retry", []), name, run.attempts)
        if delay is not None:
            self._timers.after(delay, lambda: self._advance(run), run.owner)
            return
        catcher = asl.catcher_for(state.get("Catch", []), name)
        if catcher is None:
            self._fail(run, name, cause)
            return
        run.attempts = {}
        run.data = asl.apply_result_path(run.data, catcher.get("ResultPath", "$"), {"Error": name, "Cause": cause})
        run.state = catcher["Next"]
        self._submit(run)

    def _fail(self, run: _Run, error: str, cause: str) -> None:
        _LOG.warning("execution %s failed: %s", run.name, error)
        self._settle(run, "FAILED", error, cause)
