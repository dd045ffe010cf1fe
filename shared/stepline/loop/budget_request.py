"""A budget request: at a limit the run pauses, and a person raises the limit for it or ends it (pure).

When `admit_call` refuses a call (`BudgetStop`) and the runtime asks for budget requests
(`LoopConfig.budget_requests`), the call is not made and the step ends `await-approval` with a
`PendingBudget` in the state and a `data-budget` part in the message:

    {"type": "data-budget", "id": "<approvalId>", "data": {"approvalId": …, "limit": "user_day_usd",
     "message": "this answer needs about $0.40 more than your daily budget", "value": 5, "spent": 4.8,
     "needed": 0.6, "raiseTo": 10, "state": "requested"}}

The decision replaces that part (same id) with `state` `approved` or `denied`. Approved: the limit
is raised for this run only, to `raised_value` (twice the limit, or what the call needs if that
is more), and the same step is tried again, continuing the same assistant message. Denied: the
run ends `failed` with code `budget_exceeded` and the request's sentence; what the run already
did (text, tool results) stays. A USD limit over a model without a price is not a request: its
cost cannot be bounded, so the run ends at once.
"""

from __future__ import annotations

import math

from pydantic import JsonValue

from ..protocol import stream_parts as sp
from .budget import BudgetStop, over_budget
from .call_parts import Emit
from .config import LoopConfig
from .limits import Limits
from .state import LoopState, PendingBudget, StepOutcome

__all__ = [
    "BUDGET_PART",
    "budget_data",
    "budget_denied",
    "effective_limits",
    "held_back",
    "raised_value",
    "request_budget",
    "resume_with_budget",
]

BUDGET_PART = "budget"
"""The data part's name (`data-budget` on the wire)."""


def effective_limits(limits: Limits | None, state: LoopState) -> Limits | None:
    """The limits with what a person raised for this run."""
    if limits is None or not state.raised_limits:
        return limits
    return limits.model_copy(update=dict(state.raised_limits))


def raised_value(limit: str, value: float, spent: float, needed: float) -> float:
    """What approving a budget request raises the limit to: twice it, or what the call needs."""
    raised = max(value * 2, spent + needed)
    return round(raised, 9) if limit.endswith("_usd") else float(math.ceil(raised))


def budget_data(pending: PendingBudget, state: str, reason: str | None = None) -> dict[str, JsonValue]:
    """The `data` of a budget request's `data-budget` part, in `state` (requested, approved, denied)."""
    data: dict[str, JsonValue] = {
        "approvalId": pending.approval_id,
        "limit": pending.limit,
        "message": pending.message,
        "value": pending.value,
        "spent": pending.spent,
        "needed": pending.needed,
        "raiseTo": raised_value(pending.limit, pending.value, pending.spent, pending.needed),
        "state": state,
    }
    if reason is not None:
        data["reason"] = reason
    return data


def _part(pending: PendingBudget, state: str, reason: str | None = None) -> sp.Data:
    return sp.Data(name=BUDGET_PART, id=pending.approval_id, data=budget_data(pending, state, reason))


async def request_budget(state: LoopState, stop: BudgetStop, *, approval_id: str, now: int, emit: Emit) -> StepOutcome:
    """The call is held back: the run waits on a budget request (emitted as its `data-budget` part)."""
    pending = PendingBudget(
        approval_id=approval_id,
        limit=stop.limit,
        value=stop.value,
        spent=round(stop.spent, 9),
        needed=round(stop.needed, 9),
        message=stop.message(),
        requested_at=now,
    )
    await emit(_part(pending, "requested"))
    waiting = state.model_copy(update={"pending_budget": pending})
    return StepOutcome("await-approval", waiting, finish_reason="budget")


async def held_back(config: LoopConfig, state: LoopState, stop: BudgetStop, *, emit: Emit) -> StepOutcome:
    """A call a limit refused: a budget request when the runtime takes them, else the end of the run."""
    if not config.budget_requests or stop.unpriced is not None:
        return over_budget(state, stop)
    return await request_budget(state, stop, approval_id=config.new_id("budget"), now=config.clock(), emit=emit)


def budget_denied(pending: PendingBudget, reason: str | None) -> str:
    """The run's error text when a person denies its budget request."""
    text = f"{pending.message}; the budget request was denied"
    return f"{text} ({reason})" if reason else text


async def resume_with_budget(
    state: LoopState, *, approved: bool, reason: str | None, emit: Emit
) -> LoopState | StepOutcome:
    """Apply the decision: the state with the limit raised for this run, or the failed outcome."""
    pending = state.pending_budget
    assert pending is not None, "resume_with_budget needs a pending budget request"
    await emit(_part(pending, "approved" if approved else "denied", reason))
    resumed = state.model_copy(update={"pending_budget": None})
    if not approved:
        text = budget_denied(pending, reason)
        return StepOutcome("failed", resumed, finish_reason="error", error_text=text, error_code="budget_exceeded")
    raised = raised_value(pending.limit, pending.value, pending.spent, pending.needed)
    return resumed.model_copy(update={"raised_limits": {**state.raised_limits, pending.limit: raised}})
