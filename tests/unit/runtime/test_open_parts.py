"""Which tool parts a run that did not complete closes, and how (`stepline.runtime.open_parts`, pure)."""

from __future__ import annotations

from typing import Any

from stepline.runtime.open_parts import close_open_parts, why_ended
from stepline.store.records import ApprovalRecord


def _approval(status: str, decision: str | None = None, reason: str | None = None) -> ApprovalRecord:
    return ApprovalRecord.model_validate(
        {
            "user_id": "u",
            "approval_id": "a1",
            "run_id": "r",
            "tool_call_id": "c1",
            "tool_name": "remember",
            "status": status,
            "decision": decision,
            "reason": reason,
            "requested_at": 1,
        }
    )


def _wire(parts: list[dict[str, Any]], record: ApprovalRecord | None = None, questions: tuple[str, ...] = ()) -> Any:
    closing = close_open_parts(parts, "stopped", approval_of=lambda _id: record, questions=questions)
    return [c.to_wire() for c in closing.chunks], closing.expire_approvals


def test_the_reasons_read_as_sentences() -> None:
    assert why_ended("aborted", "user_cancelled") == "stopped"
    assert why_ended("aborted", "new_user_message") == "interrupted by a new message"
    assert why_ended("aborted", "something_new") == "stopped (something_new)"
    assert why_ended("failed", None) == "the run failed"


def test_finished_and_provider_executed_parts_are_left_alone() -> None:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "hi"},
        {"type": "tool-a", "toolCallId": "c0", "state": "output-available", "input": {}, "output": 1},
        {"type": "tool-b", "toolCallId": "c1", "state": "input-available", "input": {}, "providerExecuted": True},
        {"type": "tool-c", "toolCallId": "c2", "state": "output-denied", "input": {}, "approval": {"id": "x"}},
    ]
    assert _wire(parts) == ([], [])


def test_a_cut_call_and_a_question_get_an_error_saying_why() -> None:
    parts: list[dict[str, Any]] = [
        {"type": "dynamic-tool", "toolName": "d", "toolCallId": "c1", "state": "input-streaming"},
        {"type": "tool-ask_user", "toolCallId": "q1", "state": "input-available", "input": {}},
        {
            "type": "tool-x",
            "toolCallId": "c3",
            "state": "approval-responded",
            "approval": {"id": "a", "approved": True},
        },
        {
            "type": "tool-y",
            "toolCallId": "c4",
            "state": "approval-responded",
            "approval": {"id": "b", "approved": False},
        },
    ]
    chunks, expire = _wire(parts, questions=("q1",))
    assert chunks == [
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": "stopped before the tool reported a result"},
        {"type": "tool-output-error", "toolCallId": "q1", "errorText": "stopped before the question was answered"},
        {"type": "tool-output-error", "toolCallId": "c3", "errorText": "stopped before the tool reported a result"},
        {"type": "tool-output-denied", "toolCallId": "c4"},
    ]
    assert expire == []


_REQUESTED = [{"type": "tool-remember", "toolCallId": "c1", "state": "approval-requested", "approval": {"id": "a1"}}]


def test_an_undecided_approval_is_denied_and_expires_with_the_run() -> None:
    chunks, expire = _wire(_REQUESTED, _approval("requested"))
    response = {"type": "tool-approval-response", "approvalId": "a1", "approved": False}
    assert chunks == [
        {**response, "reason": "stopped before a decision"},
        {"type": "tool-output-denied", "toolCallId": "c1"},
    ]
    assert expire == ["a1"]


def test_a_request_without_a_record_is_denied_with_nothing_to_expire() -> None:
    chunks, expire = _wire(_REQUESTED, None)
    assert [c["type"] for c in chunks] == ["tool-approval-response", "tool-output-denied"] and expire == []


def test_a_decision_made_before_the_end_is_kept() -> None:
    approved, _ = _wire(_REQUESTED, _approval("processing", "approved"))
    assert approved == [
        {"type": "tool-approval-response", "approvalId": "a1", "approved": True},
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": "stopped before the approved tool ran"},
    ]
    denied, expire = _wire(_REQUESTED, _approval("denied", "denied", "not today"))
    assert denied == [
        {"type": "tool-approval-response", "approvalId": "a1", "approved": False, "reason": "not today"},
        {"type": "tool-output-denied", "toolCallId": "c1"},
    ]
    expired, _ = _wire(_REQUESTED, _approval("expired"))
    assert expired[0]["approved"] is False and expired[0]["reason"] == "approval expired" and expire == []
