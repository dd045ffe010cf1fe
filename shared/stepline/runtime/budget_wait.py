"""A run paused on a budget request: recording the request, who may decide it, and applying it.

The request is an approval record (`budget_limit` set, `tool_name` `budget`, no tool call), so it
waits like a tool approval: AwaitInput attaches the task token, `POST /api/approvals/{id}` or a
signed link decides it once, ExpireInput expires it (read as a denial). Who may decide:

- a run limit (`run_*`): the run's own user;
- a user or tenant limit: an admin — a caller whose token carries the deployment's admin claim
  (`STEPLINE_ADMIN_CLAIM`), or a signed approval link (minted for whoever the `Approval Requested`
  event reaches). Anyone else gets 403 and nothing is decided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import StepLineError
from ..loop.approval import ApprovalDecision
from ..loop.state import LoopState
from ..store.records import ApprovalRecord, RunRecord
from .services import Services

__all__ = [
    "BUDGET_TOOL_NAME",
    "BudgetDecisionForbidden",
    "budget_record",
    "check_decider",
    "is_admin",
    "pending_ids",
    "request_budget_approval",
    "split_budget",
]

BUDGET_TOOL_NAME = "budget"
"""The `toolName` of a budget request's approval (it has no tool call)."""


class BudgetDecisionForbidden(StepLineError):
    """The caller may not raise this limit (403); nothing was decided."""


def pending_ids(state: LoopState) -> list[str]:
    """The approval ids the state waits on: its tool approvals and its budget request."""
    ids = [p.approval_id for p in state.pending_approvals]
    return [*ids, state.pending_budget.approval_id] if state.pending_budget is not None else ids


def budget_record(run: RunRecord, state: LoopState, *, expires_at: int | None) -> ApprovalRecord:
    """The approval record of the state's budget request."""
    pending = state.pending_budget
    assert pending is not None
    return ApprovalRecord(
        user_id=run.user_id,
        approval_id=pending.approval_id,
        run_id=run.run_id,
        tool_call_id=pending.approval_id,
        tool_name=BUDGET_TOOL_NAME,
        input={
            "limit": pending.limit,
            "message": pending.message,
            "value": pending.value,
            "spent": pending.spent,
            "needed": pending.needed,
        },
        reason=pending.message,
        budget_limit=pending.limit,
        requested_at=pending.requested_at,
        expires_at=expires_at,
    )


def request_budget_approval(services: Services, run: RunRecord, state: LoopState, snapshot: Any) -> None:
    """Record the budget request with the run waiting and its checkpoint, in one transaction."""
    now = services.clock()
    services.store.request_approval(
        run.user_id,
        run.run_id,
        approvals=[budget_record(run, state, expires_at=now + services.approval_timeout_ms)],
        tool_calls=[],
        snapshot=snapshot,
        checkpoint_state=state.model_dump(mode="json", by_alias=True),
        event=None,
        now=now,
    )


def split_budget(
    state: LoopState, decisions: Sequence[ApprovalDecision]
) -> tuple[ApprovalDecision | None, list[ApprovalDecision]]:
    """The budget request's decision apart from the tool approvals' decisions."""
    budget_id = state.pending_budget.approval_id if state.pending_budget is not None else None
    budget = next((d for d in decisions if d.approval_id == budget_id), None)
    return budget, [d for d in decisions if d.approval_id != budget_id]


def is_admin(claims: Mapping[str, Any], admin_claim: str | None) -> bool:
    """Whether the claims carry the admin claim: `claim` (value true) or `claim=value`.

    The claim's value may be a list or a comma- or space-separated string (Cognito groups).
    """
    if not admin_claim:
        return False
    name, _, wanted = admin_claim.partition("=")
    value = claims.get(name.strip())
    wanted = wanted.strip() or "true"
    if isinstance(value, bool):
        return value and wanted == "true"
    if isinstance(value, list):
        return wanted in [str(v) for v in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, str):
        return wanted in value.strip("[]").replace(",", " ").split()
    return False


def check_decider(approval: ApprovalRecord, *, admin: bool, by_link: bool) -> None:
    """Raise `BudgetDecisionForbidden` when the decider may not raise the approval's limit."""
    limit = approval.budget_limit
    if limit is None or limit.startswith("run_") or admin or by_link:
        return
    raise BudgetDecisionForbidden(
        f"approval {approval.approval_id}: raising the {limit} limit needs an admin (or a signed approval link)"
    )
