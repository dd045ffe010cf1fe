"""A run that waits: for approvals (the webhook) or a client's answers (client-side tools).

The run's waiting state lives in its latest checkpoint and the approval and tool-call records;
each function reads it there, decides once (the store's compare-and-set) and resumes the workflow
when nothing is left to wait for. Every function is safe to run twice.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from pydantic import JsonValue

from ..loop.resume import ClientToolOutput
from ..loop.state import LoopState
from ..store.errors import Conflict, NotFound
from ..store.records import (
    TERMINAL,
    ApprovalRecord,
    RunRecord,
    ToolCallRecord,
)
from .announce import announce_approvals, announce_question
from .budget_wait import check_decider, pending_ids
from .child_approvals import raise_requests, settle_raised
from .services import Services
from .traces import request_span

__all__ = [
    "answer",
    "await_input",
    "client_outputs",
    "decide",
    "expire_input",
    "resume_workflow",
    "run_approvals",
    "run_state",
    "still_requested",
    "wait_seconds",
]

_LOG = logging.getLogger("stepline.runtime")


def run_state(services: Services, user_id: str, run_id: str) -> LoopState:
    """The run's latest checkpoint (every run has one from its start)."""
    checkpoint = services.store.latest_checkpoint(user_id, run_id)
    assert checkpoint is not None
    return LoopState.model_validate(checkpoint.state)


def run_approvals(services: Services, user_id: str, run_id: str, state: LoopState) -> list[ApprovalRecord]:
    """The stored approvals of the state's pending calls (one not recorded yet is left out)."""
    found: list[ApprovalRecord] = []
    for approval_id in pending_ids(state):
        with contextlib.suppress(NotFound):  # any other store error propagates: never read as "absent"
            found.append(services.store.get_approval(user_id, approval_id))
    return [a for a in found if a.run_id == run_id]


def client_outputs(
    services: Services, user_id: str, run_id: str, state: LoopState
) -> tuple[list[ClientToolOutput], bool]:
    """The clients' outputs for the state's pending questions, and whether one is still unanswered."""
    if not state.pending_client_calls:
        return [], False
    rows = {c.tool_call_id: c for c in services.store.list_tool_calls(user_id, run_id)}
    outputs: list[ClientToolOutput] = []
    for call in state.pending_client_calls:
        row = rows.get(call.tool_call_id)
        if row is None or row.status not in TERMINAL["tool_call"]:
            return [], True
        error = str(row.error.get("message")) if row.error else None
        outputs.append(ClientToolOutput(tool_call_id=call.tool_call_id, output=row.output, error_text=error))
    return outputs, False


def await_input(services: Services, user_id: str, run_id: str, task_token: str) -> dict[str, Any]:
    """Store the task token with what the run waits for; resume at once if it was already decided."""
    store = services.store
    run = store.get_run(user_id, run_id)
    state = run_state(services, user_id, run_id)  # the wait's checkpoint: answers and decisions are rows
    if run.status == "waiting_user":
        store.attach_run_token(user_id, run_id, task_token)
        announce_question(services, run, state)  # if the step's own was lost
        if not client_outputs(services, user_id, run_id, state)[1]:
            resume_workflow(services, task_token)
        return {"waiting": "client"}
    waiting = False
    announce_approvals(services, run, state)  # the step's own announcement, if a crash lost it
    raise_requests(services, run, run_approvals(services, user_id, run_id, state))  # likewise a child's
    for approval in run_approvals(services, user_id, run_id, state):
        if approval.status == "requested":
            with contextlib.suppress(Conflict):  # decided between the read and this write
                store.attach_task_token(user_id, approval.approval_id, task_token)
                waiting = True
    if not waiting or not still_requested(services, user_id, run_id, state):  # re-read: decided meanwhile?
        resume_workflow(services, task_token)
    return {"waiting": "approval"}


def wait_seconds(services: Services, user_id: str, run_id: str) -> int:
    """How long the wait the run enters may last: until the deadline stored when it began (at least 1 s).

    An approval's deadline is its `expires_at`; a question's is its checkpoint's time plus the
    timeout. AwaitInput reads this (`TimeoutSecondsPath`), so a wait rolled over to a new execution
    (continue-as-new, or the local runtime's restart) keeps its first deadline.
    """
    now = services.clock()
    checkpoint = services.store.latest_checkpoint(user_id, run_id)
    assert checkpoint is not None
    state = LoopState.model_validate(checkpoint.state)
    deadlines = [
        a.expires_at
        for a in run_approvals(services, user_id, run_id, state)
        if a.status == "requested" and a.expires_at is not None
    ]
    if not deadlines:
        deadlines = [checkpoint.created_at + services.approval_timeout_ms]
    return max(1, -(-(min(deadlines) - now) // 1000))


def still_requested(services: Services, user_id: str, run_id: str, state: LoopState) -> bool:
    """True while one of the run's pending approvals is undecided."""
    return any(a.status == "requested" for a in run_approvals(services, user_id, run_id, state))


def resume_workflow(services: Services, task_token: str) -> None:
    """Resume the waiting workflow (a token already used or expired is not an error)."""
    if services.orchestrator is not None and not services.orchestrator.resume(task_token):
        _LOG.info("task already resumed or expired")


def expire_input(services: Services, user_id: str, run_id: str) -> dict[str, Any]:
    """The wait timed out: pending approvals expire (the model reads a denial), questions get an error."""
    store, now = services.store, services.clock()
    state = run_state(services, user_id, run_id)
    for approval in run_approvals(services, user_id, run_id, state):
        store.expire_approval(user_id, approval.approval_id, now=now)
        settle_raised(services, store.get_approval(user_id, approval.approval_id))
    for call in state.pending_client_calls:
        with contextlib.suppress(Conflict):
            store.answer_tool_call(
                user_id, run_id, call.tool_call_id, error={"message": "no answer before the timeout"}, now=now
            )
    return {"userId": user_id, "runId": run_id}


def decide(
    services: Services,
    user_id: str,
    approval_id: str,
    *,
    approved: bool,
    reason: str | None,
    decided_by: str | None = None,
    admin: bool = False,
) -> ApprovalRecord:
    """The approval webhook's core: decide once (compare-and-set), then resume the workflow.

    Raises the store's `NotFound` (404), `Gone` (410) and `DecisionConflict` (409), and
    `BudgetDecisionForbidden` (403) for a user or tenant budget request decided by neither an
    admin nor a link. Deciding the same way again returns the stored approval. `decided_by` is
    recorded on it: the user (the default), or `link` for a signed approval link.
    """
    store = services.store
    check_decider(store.get_approval(user_id, approval_id), admin=admin, by_link=decided_by == "link")
    run = _traced_run(services, user_id, approval_id)
    attributes = {
        "stepline.approval.id": approval_id,
        "stepline.approval.decision": "approved" if approved else "denied",
        "stepline.approval.by": "link" if decided_by == "link" else "user",
    }
    with request_span(services, "stepline.decide_approval", run, attributes) as span:
        result = store.decide_approval(
            user_id,
            approval_id,
            approved=approved,
            reason=reason,
            now=services.clock(),
            decided_by=decided_by or user_id,
            trace=span.traceparent,
        )
        approval = store.settle_approval(user_id, approval_id, now=services.clock())
        settle_raised(services, approval)  # a child's approval: its part in the conversation's message
        run_still_waiting = still_requested(
            services, user_id, approval.run_id, run_state(services, user_id, approval.run_id)
        )
        resumes = result.first and approval.task_token is not None and not run_still_waiting
        span.update({"stepline.approval.first": result.first, "stepline.resumed": resumes})
        if resumes and approval.task_token:
            resume_workflow(services, approval.task_token)
    return approval


def _traced_run(services: Services, user_id: str, approval_id: str) -> RunRecord | None:
    """The run an approval belongs to, for its trace (read only when tracing is on)."""
    if services.telemetry is None:
        return None
    approval = services.store.get_approval(user_id, approval_id)
    return services.store.get_run(user_id, approval.run_id)


def answer(
    services: Services, user_id: str, run_id: str, tool_call_id: str, *, output: Any, error_text: str | None
) -> ToolCallRecord:
    """A client's output for a question (client-side tool); resumes the run once all are answered."""
    error: dict[str, JsonValue] | None = {"message": error_text} if error_text is not None else None
    traced = services.store.get_run(user_id, run_id) if services.telemetry is not None else None
    with request_span(services, "stepline.answer_tool_call", traced, {"gen_ai.tool.call.id": tool_call_id}) as span:
        row = services.store.answer_tool_call(
            user_id, run_id, tool_call_id, output=output, error=error, now=services.clock()
        )
        run = services.store.get_run(user_id, run_id)
        resumes = (
            bool(run.task_token)
            and not client_outputs(services, user_id, run_id, run_state(services, user_id, run_id))[1]
        )
        span.set("stepline.resumed", resumes)
        if resumes and run.task_token:
            resume_workflow(services, run.task_token)
    return row
