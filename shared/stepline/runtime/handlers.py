"""The five worker handlers bound to one process's services: the local runtime's and the tests'.

Each Lambda function binds only its own (`stepline.aws.wiring.worker_handler` with the function's
handler module); here all five are bound together, by function name (`handling.HANDLER_NAMES`).
"""

from __future__ import annotations

from collections.abc import Callable

from .handle_await_input import await_input_handler
from .handle_end import fail_run_handler, finalize_run_handler
from .handle_expire_input import expire_input_handler
from .handle_model_step import model_step_handler
from .handling import HANDLER_NAMES, Handler, HandlerFactory
from .services import Services

__all__ = ["HANDLERS", "handlers"]

HANDLERS: dict[str, HandlerFactory] = dict(
    zip(
        HANDLER_NAMES,
        (model_step_handler, await_input_handler, expire_input_handler, finalize_run_handler, fail_run_handler),
        strict=True,
    )
)
"""Each worker function's handler factory, by function name."""


def handlers(services: Callable[[], Services]) -> dict[str, Handler]:
    """The five worker handlers, by function name."""
    return {name: bind(services) for name, bind in HANDLERS.items()}
