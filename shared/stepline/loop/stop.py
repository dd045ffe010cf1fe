"""Stop conditions: small named predicates over the steps so far (the SDK's `stop-condition.ts`).

The loop continues after a step only when that step called tools and every call has a result;
then each condition is asked, and any that says "stop" ends the run. A list means any-of.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .state import StepRecord

__all__ = ["StopCondition", "has_tool_call", "is_loop_finished", "is_step_count", "should_stop"]

StopCondition = Callable[[Sequence["StepRecord"]], bool | Awaitable[bool]]


def is_step_count(count: int) -> StopCondition:
    """Stop once `count` steps have run (the default is `is_step_count(1)`)."""
    if count < 1:
        raise ValueError("is_step_count needs a count of at least 1")

    def condition(steps: Sequence[StepRecord]) -> bool:
        return len(steps) >= count

    condition.__name__ = f"is_step_count({count})"
    return condition


def has_tool_call(*tool_names: str) -> StopCondition:
    """Stop when the last step called one of these tools."""

    def condition(steps: Sequence[StepRecord]) -> bool:
        return bool(steps) and any(call.tool_name in tool_names for call in steps[-1].tool_calls)

    condition.__name__ = f"has_tool_call({', '.join(tool_names)})"
    return condition


def is_loop_finished() -> StopCondition:
    """Never stop on a condition: run until the model stops calling tools."""

    def condition(steps: Sequence[StepRecord]) -> bool:
        return False

    return condition


async def should_stop(conditions: StopCondition | Sequence[StopCondition], steps: Sequence[StepRecord]) -> bool:
    """True when any condition holds."""
    for condition in [conditions] if callable(conditions) else conditions:
        result = condition(steps)
        if inspect.isawaitable(result):
            result = await result
        if result:
            return True
    return False
