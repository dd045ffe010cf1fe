"""The tool parts a run that did not complete leaves open, closed by its end (pure).

A run stopped, interrupted by a new message, failed or ended by the reconciler may leave tool
parts that nothing will ever finish: a tool call whose input was still streaming, a tool that was
running (or approved and about to run), a question nobody answered, an approval nobody decided.
The run's end (`ending`) closes each in the same write that ends the run, with chunks the client
reduces as it would any other outcome, so a stream, a resume and the stored message agree:

- an open tool call (`input-streaming`, `input-available`, an approved `approval-responded`)
  and an open question get `tool-output-error` saying why the run ended before it finished
  (a denied `approval-responded` gets its `tool-output-denied`);
- an approval still requested is denied with that reason (`tool-approval-response` with
  `approved: false`, then `tool-output-denied`), and its record expires in the same write
  (`FinishRun.expire_approvals`: the write fails if it was decided meanwhile, and the end is built
  again with the decision);
- an approval decided before the end keeps its decision: a denial is closed as denied, an approval
  gets the error of a tool that never ran;
- a budget request still requested (a `data-budget` part, the run's own or a sub-agent's raised
  one) is rewritten `closed` with that reason, and its record expires in the same write like an
  approval's; one decided (or expired) meanwhile is rewritten with its decision instead.

The end also marks what it closed, for clients that must not read the sentences: the message's
metadata gets `closedByEnd` (`Closing.mark`): why the run ended (`end_kind`), the tool call ids
it closed and the ids of the data parts it closed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import JsonValue

from ..protocol.chunks import (
    DataChunk,
    ToolApprovalResponseChunk,
    ToolOutputDeniedChunk,
    ToolOutputErrorChunk,
    UIMessageChunk,
)
from ..store.records import ApprovalRecord

__all__ = ["BUDGET_CLOSED", "Closing", "close_open_parts", "end_kind", "why_ended"]

_OPEN_CALL = frozenset({"input-streaming", "input-available"})
_REASONS = {
    "user_cancelled": "stopped",
    "new_user_message": "interrupted by a new message",
    "parent_ended": "stopped because its parent run ended",
    "parent_wait_expired": "stopped because its parent's wait expired",
    "execution_stopped": "stopped because its execution ended",
}
_KINDS = {
    "user_cancelled": "stopped",
    "new_user_message": "new_user_message",
    "parent_ended": "parent_ended",
    "parent_wait_expired": "expired",
    "execution_stopped": "execution_stopped",
}
_BUDGET = "data-budget"
BUDGET_CLOSED = "closed"
"""The `state` of a budget request's part that the run's end closed before anyone decided it."""


@dataclass(slots=True)
class Closing:
    """The chunks that close a message's open tool parts, and the approvals to expire with them."""

    chunks: list[UIMessageChunk] = field(default_factory=lambda: list[UIMessageChunk]())
    expire_approvals: list[str] = field(default_factory=lambda: list[str]())
    tool_call_ids: list[str] = field(default_factory=lambda: list[str]())
    """The tool parts closed, by tool call id."""
    data_ids: list[str] = field(default_factory=lambda: list[str]())
    """The data parts closed (budget requests), by part id."""

    def mark(self, kind: str) -> dict[str, JsonValue]:
        """The message metadata's `closedByEnd`: why the run ended and which parts that closed."""
        return {
            "reason": kind,
            "toolCallIds": cast(list[JsonValue], list(self.tool_call_ids)),
            "dataPartIds": cast(list[JsonValue], list(self.data_ids)),
        }


def why_ended(status: str, reason: str | None) -> str:
    """Why a run ended without completing, as the user reads it ("stopped", "the run failed")."""
    if status == "failed":
        return "the run failed"
    if reason is None:
        return "stopped"
    return _REASONS.get(reason, f"stopped ({reason})")


def end_kind(status: str, reason: str | None) -> str:
    """Why a run ended without completing, as a client reads it (`closedByEnd.reason`).

    `stopped`, `new_user_message`, `failed`, `expired` (its parent's wait expired), `parent_ended`
    or `execution_stopped`.
    """
    if status == "failed":
        return "failed"
    return _KINDS.get(reason or "user_cancelled", "stopped")


def close_open_parts(
    parts: Sequence[dict[str, Any]],
    why: str,
    *,
    approval_of: Callable[[str], ApprovalRecord | None],
    questions: Collection[str] = (),
) -> Closing:
    """The closing of every open tool part of `parts`; `questions` are the tool call ids that ask the user."""
    closing = Closing()
    for part in parts:
        kind = str(part.get("type", ""))
        if kind == _BUDGET:
            _close_budget(closing, part, why, approval_of)
            continue
        if not (kind == "dynamic-tool" or kind.startswith("tool-")) or part.get("providerExecuted") is True:
            continue
        call_id = str(part["toolCallId"])
        state = part.get("state")
        if state in _OPEN_CALL:
            closing.tool_call_ids.append(call_id)
            what = "the question was answered" if call_id in questions else "the tool reported a result"
            closing.chunks.append(ToolOutputErrorChunk(tool_call_id=call_id, error_text=f"{why} before {what}"))
        elif state == "approval-requested":
            _close_request(closing, part, call_id, why, approval_of)
        elif state == "approval-responded":
            if _approval(part).get("approved"):  # approved: the tool may have been running
                closing.tool_call_ids.append(call_id)
                closing.chunks.append(
                    ToolOutputErrorChunk(tool_call_id=call_id, error_text=f"{why} before the tool reported a result")
                )
            else:
                closing.chunks.append(ToolOutputDeniedChunk(tool_call_id=call_id))
    return closing


def _close_request(
    closing: Closing,
    part: dict[str, Any],
    call_id: str,
    why: str,
    approval_of: Callable[[str], ApprovalRecord | None],
) -> None:
    approval_id = str(_approval(part).get("id", ""))
    record = approval_of(approval_id) if approval_id else None
    if record is None or record.status == "requested":  # undecided: it expires with the run, denied
        if record is not None:
            closing.expire_approvals.append(approval_id)
        closing.tool_call_ids.append(call_id)
        response = ToolApprovalResponseChunk(approval_id=approval_id, approved=False, reason=f"{why} before a decision")
        closing.chunks += [response, ToolOutputDeniedChunk(tool_call_id=call_id)]
        return
    approved = record.status != "expired" and record.decision == "approved"
    reason = "approval expired" if record.status == "expired" else record.reason
    response = ToolApprovalResponseChunk(approval_id=approval_id, approved=approved)
    if reason is not None:
        response.reason = reason
    if approved:  # decided meanwhile: a denial (or expiry) is its own outcome, an approval never ran
        closing.tool_call_ids.append(call_id)
    closing.chunks += [response, _unrun(call_id, why) if approved else ToolOutputDeniedChunk(tool_call_id=call_id)]


def _close_budget(
    closing: Closing, part: dict[str, Any], why: str, approval_of: Callable[[str], ApprovalRecord | None]
) -> None:
    """A budget request still shown requested: closed with the reason, or its decision made meanwhile."""
    data = part.get("data")
    if not isinstance(data, dict) or cast(dict[str, Any], data).get("state") != "requested":
        return
    shown = cast(dict[str, JsonValue], data)
    approval_id = str(shown.get("approvalId") or part.get("id") or "")
    record = approval_of(approval_id) if approval_id else None
    rewritten: dict[str, JsonValue] = {k: v for k, v in shown.items() if k != "reason"}
    # Undecided: it expires with the run. Expired by another run's end (a sub-agent's request, raised
    # into its lead's message, that the lead's end closed first): closed by an end all the same.
    ended_first = record is not None and record.status == "expired" and record.expired_reason not in (None, "timeout")
    if record is None or record.status == "requested" or ended_first:
        if record is not None and not ended_first:
            closing.expire_approvals.append(approval_id)
        closing.data_ids.append(str(part.get("id") or approval_id))
        rewritten.update(state=BUDGET_CLOSED, reason=f"{why} before a decision")
    elif record.status == "expired":
        rewritten.update(state="denied", reason="approval expired")
    else:
        rewritten["state"] = "approved" if record.decision == "approved" else "denied"
        if record.reason is not None:  # the decision's reason (the request's own is its message)
            rewritten["reason"] = record.reason
    closing.chunks.append(DataChunk(type=_BUDGET, id=part.get("id"), data=rewritten))


def _approval(part: dict[str, Any]) -> dict[str, Any]:
    found = part.get("approval")
    return cast(dict[str, Any], found) if isinstance(found, dict) else {}


def _unrun(call_id: str, why: str) -> ToolOutputErrorChunk:
    return ToolOutputErrorChunk(tool_call_id=call_id, error_text=f"{why} before the approved tool ran")
