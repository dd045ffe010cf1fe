"""The model step function's handler (`ModelStepFunction`): one step of the model loop per invocation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import waits, worker
from .handling import Handler, TransientModelError, bound
from .services import Services

__all__ = ["model_step_handler"]

_ONGOING = frozenset({"continue", "await-approval", "await-client"})
_WAITS = frozenset({"await-approval", "await-client"})


def model_step_handler(services: Callable[[], Services]) -> Handler:
    """`stepline-model-step`: the next step, its outcome for the ASL's Choice (and its wait's deadline)."""

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

    return bound("stepline-model-step", model_step, services)
