"""The agent's run-level callbacks on the durable path, where no event loop is running.

`on_start` fires in the API function that starts the run (`begin_turn`), `on_end`, `on_error` and
`on_abort` in the function that ends it, each once per run: only the call that moves the run to
its terminal state fires them, so a retried FinalizeRun does not fire `on_end` twice. The step
callbacks fire inside `run_step`, in the ModelStep function (again when a step is redone). A
run-level callback that raises is logged: the run's outcome is already stored when it fires, except
for `on_start`, whose failure fails the run before its first step.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from ..loop.callbacks import Callback, notify

__all__ = ["fire"]

_LOG = logging.getLogger("stepline.runtime")


def fire(callback: Callback | None, event: object) -> BaseException | None:
    """Call a sync or async callback to completion from synchronous code; returns what it raised."""
    if callback is None:
        return None
    failure: list[BaseException] = []

    def call() -> None:
        try:
            asyncio.run(notify(callback, event))
        except Exception as error:  # a user's callback: reported, never a half-done end
            failure.append(error)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        call()
    else:  # called from a coroutine's thread: run the callback's own loop beside it
        thread = threading.Thread(target=call, name="stepline-callback")
        thread.start()
        thread.join()
    if failure:
        name = getattr(callback, "__qualname__", type(callback).__name__)
        _LOG.warning("callback %s raised %s: %s", name, type(failure[0]).__name__, failure[0])
        return failure[0]
    return None
