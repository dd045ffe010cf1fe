"""The await-input function's handler (`AwaitInputFunction`): parks the run on its task token.

A run that waits on its client tool calls (`waiting_user`) first gets a child run for each of its
agent-tool calls (`children`, imported on that branch only: a run waiting for an approval never
loads the turn-starting path).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import waits
from .handling import Handler, bound
from .services import Services

__all__ = ["await_input_handler"]


def await_input_handler(services: Callable[[], Services]) -> Handler:
    """`stepline-await-input`: the run's wait, with the child runs of its agent-tool calls started."""

    def await_input(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current = services()
        user_id, run_id = event["userId"], event["runId"]
        run = current.store.get_run(user_id, run_id)
        if run.status == "waiting_user":  # its agent-tool calls' child runs, before it parks
            from .children import start_children

            start_children(current, run, waits.run_state(current, user_id, run_id))
        return waits.await_input(current, user_id, run_id, event["taskToken"])

    return bound("stepline-await-input", await_input, services)
