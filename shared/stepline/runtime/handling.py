"""What every worker handler shares: its type, the function names, the errors the ASL matches, the guard.

Each worker function has its own handler module, which imports only the path it runs
(`handle_model_step`, `handle_await_input`, `handle_expire_input`, `handle_end`): a Lambda function's
cold start loads its own handler's modules, not the others' (the model loop is the model step's
alone). `stepline.runtime.handlers` binds all five for the local runtime and the tests.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..store.errors import ConcurrentUpdate
from .traces import traced_handler

if TYPE_CHECKING:
    from .services import Services

__all__ = [
    "HANDLER_NAMES",
    "SAME_HANDLER",
    "Handler",
    "HandlerFactory",
    "StepFailed",
    "TransientModelError",
    "bound",
    "handler_for",
    "logical_name",
]

_LOG = logging.getLogger("stepline.runtime")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
HandlerFactory = Callable[[Callable[[], "Services"]], Handler]
"""`(services) -> handler`: one worker's handler bound to how its process gets its services."""
HANDLER_NAMES = (
    "stepline-model-step",
    "stepline-await-input",
    "stepline-expire-input",
    "stepline-finalize-run",
    "stepline-fail-run",
)


SAME_HANDLER = {"stepline-model-step-unwatched": "stepline-model-step"}
"""Functions that run another's handler: the model step of a run nobody watches, on less memory.

A step whose delta window was the unattended one (nobody followed the run) says so in its reply
(`watched: false`), and the ASL's Route sends the run's next step to `ModelStepUnwatchedFunction`:
the same code with less memory, so less CPU, which only a watcher's deltas would have needed
(docs/architecture.md, "Steps nobody follows")."""


def handler_for(routes: Mapping[str, Handler], function_name: str) -> Handler | None:
    """The handler that runs for `function_name` in `routes`: its own, else the one it shares."""
    own = routes.get(function_name)
    if own is not None or function_name not in SAME_HANDLER:
        return own
    return routes.get(SAME_HANDLER[function_name])


def logical_name(function_name: str) -> str:
    """`stepline-model-step` → `ModelStep`: the template's logical id stem and the metric name."""
    return "".join(word.capitalize() for word in function_name.removeprefix("stepline-").split("-"))


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


def bound(name: str, function: Handler, services: Callable[[], Services]) -> Handler:
    """The worker `name`'s handler: `function` traced as one span of the run, inside the guard.

    Traced inside the guard: a failure to build the services is a `StepFailed` like any other.
    """
    return _guarded(name, traced_handler(logical_name(name), function, services))
