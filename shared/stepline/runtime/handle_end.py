"""The handlers of the two functions that end a run: `FinalizeRunFunction` and `FailRunFunction`.

Both write the run's end (`ending`) and then start the message that waited behind it (`inbox`);
neither loads the model loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ending, inbox
from .handling import Handler, bound
from .services import Services

__all__ = ["fail_run_handler", "finalize_run_handler"]


def finalize_run_handler(services: Callable[[], Services]) -> Handler:
    """`stepline-finalize-run`: the run's final message and status (an aborted run keeps its own)."""

    def finalize_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # An aborted run is already terminal: finalize_run then returns its stored status.
        current = services()
        result = ending.finalize_run(current, event["userId"], event["runId"])
        inbox.start_after(current, event["userId"], event["runId"])  # a message waiting behind the run
        return result

    return bound("stepline-finalize-run", finalize_run, services)


def fail_run_handler(services: Callable[[], Services]) -> Handler:
    """`stepline-fail-run`: the run failed for good; why, as a fixed sentence and a stable code."""

    def fail_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        message, code = step_error(event.get("input") or {})
        current = services()
        result = ending.fail_run(current, event["userId"], event["runId"], message, code)
        inbox.start_after(current, event["userId"], event["runId"])
        return result

    return bound("stepline-fail-run", fail_run, services)


_CAUGHT: dict[str, tuple[str, str]] = {
    "TransientModelError": ("the model stayed unavailable after the step's retries", "model_unavailable"),
    "States.Timeout": ("the step timed out", "step_timeout"),
    "States.HeartbeatTimeout": ("the step timed out", "step_timeout"),
    "ConcurrentUpdate": ("the run kept changing under the step", "concurrent_update"),
    "StepFailed": ("the step failed unexpectedly", "step_failed"),
}


def step_error(state_input: dict[str, Any]) -> tuple[str, str | None]:
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
