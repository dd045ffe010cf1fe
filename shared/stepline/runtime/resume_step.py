"""What a waiting run resumes with, applied before its next step: a budget decision, approvals, answers."""

from __future__ import annotations

from ..loop.approval import ApprovalDecision
from ..loop.budget_request import resume_with_budget
from ..loop.config import LoopConfig
from ..loop.resume import ClientToolOutput, resume_with_client_outputs, resume_with_decisions
from ..loop.state import LoopState, StepOutcome
from ..protocol.chunks import ToolApprovalResponseChunk
from .budget_wait import split_budget
from .recorder import RunRecorder

__all__ = ["response_chunk", "resume_waited"]


async def resume_waited(
    config: LoopConfig,
    state: LoopState,
    decisions: list[ApprovalDecision],
    outputs: list[ClientToolOutput],
    recorder: RunRecorder,
) -> LoopState | StepOutcome:
    """Apply what the run waited for: a budget decision, tool approvals, client outputs."""
    budget, decisions = split_budget(state, decisions)
    if budget is not None:
        applied = await resume_with_budget(state, approved=budget.approved, reason=budget.reason, emit=recorder.emit)
        if isinstance(applied, StepOutcome):
            return applied
        state = applied
    if decisions:
        recorder.write([response_chunk(d) for d in decisions])
        state = await resume_with_decisions(config, state, decisions, emit=recorder.emit)
    if outputs:
        state = await resume_with_client_outputs(config, state, outputs, emit=recorder.emit)
    return state


def response_chunk(decision: ApprovalDecision) -> ToolApprovalResponseChunk:
    """The decision as the client's own `addToolApprovalResponse` records it on the part.

    The SDK does not stream it on a continuation (the client already holds it); the stored message
    and a client following the run from elsewhere (the resume stream, another tab) need it.
    """
    chunk = ToolApprovalResponseChunk(approval_id=decision.approval_id, approved=decision.approved)
    if decision.reason is not None:  # set only when there is one: absent on the wire, never null
        chunk.reason = decision.reason
    return chunk
