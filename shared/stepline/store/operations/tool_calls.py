"""The operations on tool calls.

A claim so that each executes once, the claim holder's start and outcome, and a client-side tool
call's answer.
"""

from __future__ import annotations

from pydantic import JsonValue

from ..errors import Conflict, NotFound
from ..records import TERMINAL, ToolCallRecord
from ..results import ClaimResult
from ..unit import Unit
from .common import get_run, live_run, update

__all__ = ["answer_tool_call", "claim_tool_call", "record_tool_outcome", "start_tool_call"]


def claim_tool_call(
    unit: Unit,
    user_id: str,
    run_id: str,
    tool_call_id: str,
    *,
    tool_name: str,
    input: JsonValue,
    step_index: int,
    claim_token: str,
    now: int,
) -> ClaimResult:
    """Claim a tool call for execution (created when the step has not saved it yet)."""
    live_run(unit, user_id, run_id)
    existing = unit.tool_call(user_id, run_id, tool_call_id)
    call = existing or ToolCallRecord(
        user_id=user_id,
        run_id=run_id,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        input=input,
        step_index=step_index,
    )
    if call.status in TERMINAL["tool_call"]:
        return ClaimResult("done", call)
    if call.status == "awaiting_approval" or (call.status == "running" and call.started_at is not None):
        # Started by an earlier holder: it may have had a side effect, so it is never taken over.
        return ClaimResult("in_progress", call)
    # pending, or claimed by a holder that died before starting the body: safe to (re)claim.
    call = update(call, status="running", claim_token=claim_token, started_at=None)
    unit.put(call, new=existing is None)
    return ClaimResult("claimed", call)


def start_tool_call(
    unit: Unit, user_id: str, run_id: str, tool_call_id: str, *, claim_token: str, now: int
) -> ToolCallRecord:
    """The claim holder is about to run the body: from here a crash means "possibly ran"."""
    call = unit.tool_call(user_id, run_id, tool_call_id)
    if call is None:
        raise NotFound(f"tool call {tool_call_id} not found")
    if call.status != "running" or call.claim_token != claim_token or call.started_at is not None:
        raise Conflict(f"tool call {tool_call_id} is no longer claimed by this worker")
    call = update(call, started_at=now)
    unit.put(call)
    return call


def answer_tool_call(
    unit: Unit,
    user_id: str,
    run_id: str,
    tool_call_id: str,
    *,
    output: JsonValue,
    error: dict[str, JsonValue] | None,
    now: int,
) -> ToolCallRecord:
    """The client's output for a client-side tool call (a question's answer): `pending → success/error`."""
    live_run(unit, user_id, run_id)
    call = unit.tool_call(user_id, run_id, tool_call_id)
    if call is None:
        raise NotFound(f"tool call {tool_call_id} not found")
    if call.status in TERMINAL["tool_call"]:
        if call.output == output and call.error == error:
            return call  # the same answer again
        raise Conflict(f"tool call {tool_call_id} was already answered")
    if call.status != "pending":
        raise Conflict(f"tool call {tool_call_id} is {call.status}; it does not wait for a client output")
    call = update(call, status="error" if error is not None else "success", output=output, error=error, ended_at=now)
    unit.put(call)
    return call


def record_tool_outcome(
    unit: Unit,
    user_id: str,
    run_id: str,
    tool_call_id: str,
    *,
    claim_token: str,
    output: JsonValue,
    error: dict[str, JsonValue] | None,
    now: int,
) -> ToolCallRecord:
    """Record the claim holder's outcome: `running → success/error`."""
    get_run(unit, user_id, run_id)
    call = unit.tool_call(user_id, run_id, tool_call_id)
    if call is None:
        raise NotFound(f"tool call {tool_call_id} not found")
    if call.claim_token != claim_token:
        raise Conflict(f"tool call {tool_call_id} is claimed by another worker")
    if call.status in TERMINAL["tool_call"]:
        return call
    call = update(call, status="error" if error is not None else "success", output=output, error=error, ended_at=now)
    unit.put(call)
    return call
