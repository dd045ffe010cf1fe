"""The expire-input function's handler (`ExpireInputFunction`): a wait that timed out, and its children."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..store.records import TERMINAL
from . import ending, waits
from .child_results import child_runs
from .handling import Handler, bound
from .services import Services

__all__ = ["expire_input_handler"]


def expire_input_handler(services: Callable[[], Services]) -> Handler:
    """`stepline-expire-input`: the wait expired, and the child runs its calls started are aborted."""

    def expire_input(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current = services()
        result = waits.expire_input(current, event["userId"], event["runId"])
        for child in child_runs(current, current.store.get_run(event["userId"], event["runId"])):
            if child.status not in TERMINAL["run"]:  # its call has expired: nobody waits for it any more
                ending.abort_run(current, event["userId"], child.run_id, reason="parent_wait_expired")
        return result

    return bound("stepline-expire-input", expire_input, services)
