"""The worker functions' handlers: parse the Step Functions payload, call the worker, return ids.

`functions/<name>/app.py` binds each handler to the services built from the environment; the
local runtime and the tests bind the same handlers to their own services.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import worker
from .services import Services

__all__ = ["HANDLER_NAMES", "Handler", "TransientModelError", "handlers"]

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
HANDLER_NAMES = (
    "stepline-model-step",
    "stepline-await-input",
    "stepline-expire-input",
    "stepline-finalize-run",
    "stepline-fail-run",
)


_ONGOING = frozenset({"continue", "await-approval", "await-client"})


class TransientModelError(Exception):
    """The model failed in a way worth retrying the whole step (the ASL retries this name)."""


def handlers(services: Callable[[], Services]) -> dict[str, Handler]:
    """The five worker handlers, by function name."""

    def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current = services()
        result = worker.model_step(current, event["userId"], event["runId"], invocation_id=context.aws_request_id)
        if result.get("next") == "failed" and result.get("retryable"):
            raise TransientModelError(str(result.get("error", {}).get("message", "model error")))
        # After a new step, a run that has used this execution's share of the history goes on in a
        # new execution (the ASL's ContinueAsNew), also before a wait: the next generation's first
        # step sees the wait and waits there.
        steps = result.get("steps")
        first = int(event.get("firstStep") or 0)
        if result["next"] in _ONGOING and steps is not None and steps - first >= current.steps_per_execution:
            result["next"] = "continue-as-new"
        return result

    def await_input(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return worker.await_input(services(), event["userId"], event["runId"], event["taskToken"])

    def expire_input(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return worker.expire_input(services(), event["userId"], event["runId"])

    def finalize_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if event.get("next") == "aborted":  # the API already recorded the abort
            return {"userId": event["userId"], "runId": event["runId"], "status": "aborted"}
        return worker.finalize_run(services(), event["userId"], event["runId"])

    def fail_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        state_input: dict[str, Any] = event.get("input") or {}
        raw: dict[str, Any] = state_input.get("error") or {}
        error = (
            {"message": _cause(raw), "code": raw.get("Error")}
            if raw
            else state_input.get("step", {}).get("detail", {}).get("error")
        )
        return worker.fail_run(services(), event["userId"], event["runId"], error)

    return dict(zip(HANDLER_NAMES, (model_step, await_input, expire_input, finalize_run, fail_run), strict=True))


def _cause(raw: dict[str, Any]) -> str:
    """Step Functions' `Cause` is the Lambda error JSON: keep its message, never a stack trace."""
    cause = raw.get("Cause")
    if isinstance(cause, str):
        try:
            import json

            parsed = json.loads(cause)  # noqa: TID251 - AWS-produced JSON, not wire input
            return str(parsed.get("errorMessage") or raw.get("Error") or "the step failed")
        except ValueError:
            return cause[:500]
    return str(raw.get("Error") or "the step failed")
