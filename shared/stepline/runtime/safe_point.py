"""Where an interrupted step stops: at once while the model streams, after its tools once they run.

A new message under the `interrupt` policy marks the run to stop with the reason
`new_user_message`. The step's model call is cut at once (the text so far is kept, as with Stop);
but once a tool of the step has started, the step goes on until its tools have finished and the
step is saved, so no tool is left half-run and every result is recorded. The run then ends as
aborted (its pending approvals, if the step asked for any, expire with the same reason).
"""

from __future__ import annotations

import dataclasses
from typing import Final

from ..loop.callbacks import notify
from ..loop.config import LoopConfig

__all__ = ["INTERRUPTED", "ToolsStarted"]

INTERRUPTED: Final = "new_user_message"
"""The stop reason of a run interrupted by a new message (also the expiry reason of its approvals)."""


class ToolsStarted:
    """Notes whether a tool of the step has started (the step's safe point has passed)."""

    def __init__(self) -> None:
        self.started = False

    def watch(self, config: LoopConfig) -> LoopConfig:
        """`config` with `on_tool_execution_start` noting the start first (then the agent's own, if any)."""
        own = config.callbacks.on_tool_execution_start

        async def started(event: object) -> None:
            self.started = True
            await notify(own, event)

        callbacks = dataclasses.replace(config.callbacks, on_tool_execution_start=started)
        return dataclasses.replace(config, callbacks=callbacks)

    def finish_step(self, reason: str | None) -> bool:
        """Whether a stop for `reason` lets the step finish: an interrupt, once a tool has started."""
        return reason == INTERRUPTED and self.started
