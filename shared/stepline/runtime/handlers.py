"""The worker functions' handlers: parse the Step Functions payload, call the worker, return ids.

`stepline/stack/functions/<name>/app.py` binds each handler to the services built from the environment; the
local runtime and the tests bind the same handlers to their own services.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

from ..store.errors import ConcurrentUpdate
from ..store.records import TERMINAL
from . import children, ending, inbox, waits, worker
from .child_results import child_runs
from .services import Services
from .traces import traced_handler

__all__ = ["HANDLER_NAMES", "Handler", "StepFailed", "TransientModelError", "handlers", "logical_name"]

_LOG = logging.getLogger("stepline.runtime")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
HANDLER_NAMES = (
    "stepline-model-step",
    "stepline-await-input",
    "stepline-expire-input",
    "stepline-finalize-run",
    "stepline-fail-run",
)


def logical_name(function_name: str) -> str:
    """`stepline-model-step` → `ModelStep`: the template's logical id stem and the metric name."""
    return "".join(word.capitalize() for word in function_name.removeprefix("stepline-").split("-"))


_ONGOING = frozenset({"continue", "await-approval", "await-client"})
_WAITS = frozenset({"await-approval", "await-client"})


class TransientModelError(Exception):
    """The model failed in a way worth retrying the whole step (the ASL retries this name)."""


class StepFailed(Exception):
    """An unexpected error in a worker, as Step Functions records it: a fixed sentence.

    The original's message may quote anything (a record, a provider's reply); the execution
    history keeps this one instead, and the function's log the original's class and frames.
    """


_PASS_THROUGH = (TransientModelError, ConcurrentUpdate)
"""Errors the ASL matches by name (retries): raised as they are, their messages are ours."""


def _guarded(name: str, handler: Handler) -> Handler:
    @functools.wraps(handler)
    def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return handler(event, context)
        except _PASS_THROUGH:
            raise
        except Exception as error:
            frames = "".join(traceback.format_tb(error.__traceback__))
            _LOG.error("%s failed with %s at\n%s", name, type(error).__name__, frames)
            raise StepFailed(f"{name} failed unexpectedly; its log has the details") from None

    return run


def handlers(services: Callable[[], Services]) -> dict[str, Handler]:
    """The five worker handlers, by function name."""

    def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current = services()
        result = worker.model_step(current, event["userId"], event["runId"], invocation_id=context.aws_request_id)
        if result.get("next") == "failed" and result.get("retryable"):
            # A fixed sentence and a stable code: the provider's text never enters the history.
            code = result.get("error", {}).get("code") or "model_error"
            raise TransientModelError(f"the model call failed before any output ({code}); the step is retried")
        # After a new step, a run that has used this execution's share of the history goes on in a
        # new execution (the ASL's ContinueAsNew), also before a wait: the next generation's first
        # step sees the wait and waits there.
        steps = result.get("steps")
        first = int(event.get("firstStep") or 0)
        if result["next"] in _ONGOING and steps is not None and steps - first >= current.steps_per_execution:
            result["next"] = "continue-as-new"
        if result["next"] in _WAITS:  # AwaitInput's TimeoutSecondsPath: the wait's stored deadline
            result["waitSeconds"] = waits.wait_seconds(current, event["userId"], event["runId"])
        return result

    def await_input(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current = services()
        user_id, run_id = event["userId"], event["runId"]
        run = current.store.get_run(user_id, run_id)
        if run.status == "waiting_user":  # its agent-tool calls' child runs, before it parks
            children.start_children(current, run, waits.run_state(current, user_id, run_id))
        return waits.await_input(current, user_id, run_id, event["taskToken"])

    def expire_input(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current = services()
        result = waits.expire_input(current, event["userId"], event["runId"])
        for child in child_runs(current, current.store.get_run(event["userId"], event["runId"])):
            if child.status not in TERMINAL["run"]:  # its call has expired: nobody waits for it any more
                ending.abort_run(current, event["userId"], child.run_id, reason="parent_wait_expired")
        return result

    def finalize_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # An aborted run is already terminal: finalize_run then returns its stored status.
        current = services()
        result = ending.finalize_run(current, event["userId"], event["runId"])
        inbox.start_after(current, event["userId"], event["runId"])  # a message waiting behind the run
        return result

    def fail_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        message, code = _step_error(event.get("input") or {})
        current = services()
        result = ending.fail_run(current, event["userId"], event["runId"], message, code)
        inbox.start_after(current, event["userId"], event["runId"])
        return result

    functions = (model_step, await_input, expire_input, finalize_run, fail_run)
    return {
        # Traced inside the guard: a failure to build the services is a `StepFailed` like any other.
        name: _guarded(name, traced_handler(logical_name(name), function, services))
        for name, function in zip(HANDLER_NAMES, functions, strict=True)
    }


_CAUGHT: dict[str, tuple[str, str]] = {
    "TransientModelError": ("the model stayed unavailable after the step's retries", "model_unavailable"),
    "States.Timeout": ("the step timed out", "step_timeout"),
    "States.HeartbeatTimeout": ("the step timed out", "step_timeout"),
    "ConcurrentUpdate": ("the run kept changing under the step", "concurrent_update"),
    "StepFailed": ("the step failed unexpectedly", "step_failed"),
}


def _step_error(state_input: dict[str, Any]) -> tuple[str, str | None]:
    """(message, code) of why the run failed: a caught Step Functions error, or the step's own.

    A caught error (`{Error, Cause}`) becomes a fixed sentence and a stable code by its name: its
    `Cause` (the Lambda's message and stack trace, a Python class name) is for the logs, not for
    the run a client reads. A step that fails for good ends the run itself (`worker`), so the
    step's own error is a fallback.
    """
    caught: dict[str, Any] = state_input.get("error") or {}
    if not caught:
        own: dict[str, Any] = state_input.get("step", {}).get("detail", {}).get("error") or {}
        code = own.get("code")
        return "the run failed", str(code) if code else None
    name = str(caught.get("Error") or "")
    if name in _CAUGHT:
        return _CAUGHT[name]
    if name.startswith("Lambda."):
        return "the step's function failed", "step_crashed"
    return "the step failed unexpectedly", "step_failed"
