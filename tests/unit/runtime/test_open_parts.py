"""Which tool parts a run that did not complete closes, and how (`stepline.runtime.open_parts`, pure)."""

from __future__ import annotations

from typing import Any

from stepline.runtime.open_parts import close_open_parts, end_kind, why_ended
from stepline.store.records import ApprovalRecord


def _approval(
    status: str, decision: str | None = None, reason: str | None = None, *, budget: bool = False
) -> ApprovalRecord:
    return ApprovalRecord.model_validate(
        {
            "user_id": "u",
            "approval_id": "a1",
            "run_id": "r",
            "tool_call_id": "c1",
            "tool_name": "budget" if budget else "remember",
            "budget_limit": "run_tokens" if budget else None,
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


_OPEN: list[dict[str, Any]] = [
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
"""A cut call, a question, an approved call that had not reported, a denied one."""


def test_a_cut_call_and_a_question_get_an_error_saying_why() -> None:
    chunks, expire = _wire(_OPEN, questions=("q1",))
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


def _marked(parts: list[dict[str, Any]], record: ApprovalRecord | None = None) -> dict[str, Any]:
    return close_open_parts(parts, "stopped", approval_of=lambda _id: record, questions=("q1",)).mark("stopped")


def test_the_end_marks_the_parts_it_closed_by_id_and_not_the_ones_with_an_outcome_of_their_own() -> None:
    parts: list[dict[str, Any]] = [
        {"type": "tool-a", "toolCallId": "c0", "state": "output-available", "input": {}, "output": 1},
        *_OPEN,
        {"type": "tool-z", "toolCallId": "c5", "state": "input-available", "input": {}, "providerExecuted": True},
    ]
    assert _marked(parts) == {"reason": "stopped", "toolCallIds": ["c1", "q1", "c3"], "dataPartIds": []}
    assert _marked(_REQUESTED, _approval("requested"))["toolCallIds"] == ["c1"], "undecided: closed by the end"
    assert _marked(_REQUESTED, _approval("processing", "approved"))["toolCallIds"] == ["c1"], "approved, never ran"
    assert _marked(_REQUESTED, _approval("denied", "denied", "no"))["toolCallIds"] == [], "a denial is its own"
    assert _marked(_REQUESTED, _approval("expired"))["toolCallIds"] == [], "so is an expiry"


def test_the_reason_kinds_a_client_reads() -> None:
    assert end_kind("aborted", "user_cancelled") == "stopped"
    assert end_kind("aborted", None) == "stopped"
    assert end_kind("aborted", "new_user_message") == "new_user_message"
    assert end_kind("aborted", "parent_wait_expired") == "expired"
    assert end_kind("aborted", "parent_ended") == "parent_ended"
    assert end_kind("aborted", "something_new") == "stopped"
    assert end_kind("failed", None) == "failed"


_BUDGET_DATA: dict[str, Any] = {"approvalId": "a1", "limit": "run_tokens", "message": "over", "state": "requested"}
_BUDGET = [{"type": "data-budget", "id": "a1", "data": _BUDGET_DATA}]


def test_an_undecided_budget_request_is_closed_with_the_reason_and_expires_with_the_run() -> None:
    closing = close_open_parts(
        _BUDGET, "interrupted by a new message", approval_of=lambda _id: _approval("requested", budget=True)
    )
    closed = {**_BUDGET_DATA, "state": "closed", "reason": "interrupted by a new message before a decision"}
    assert [c.to_wire() for c in closing.chunks] == [{"type": "data-budget", "id": "a1", "data": closed}]
    assert closing.expire_approvals == ["a1"]
    assert closing.mark("new_user_message") == {"reason": "new_user_message", "toolCallIds": [], "dataPartIds": ["a1"]}
    lost = close_open_parts(_BUDGET, "stopped", approval_of=lambda _id: None)  # its record lost: nothing to expire
    assert lost.chunks[0].to_wire()["data"]["state"] == "closed" and lost.expire_approvals == []


def test_a_budget_decision_made_before_the_end_is_kept_and_a_settled_card_left_alone() -> None:
    def data(record: ApprovalRecord) -> tuple[Any, list[str], list[str]]:
        closing = close_open_parts(_BUDGET, "stopped", approval_of=lambda _id: record)
        return closing.chunks[0].to_wire()["data"], closing.expire_approvals, closing.data_ids

    assert data(_approval("processing", "approved", budget=True)) == ({**_BUDGET_DATA, "state": "approved"}, [], [])
    denied = {**_BUDGET_DATA, "state": "denied", "reason": "over plan"}
    assert data(_approval("denied", "denied", "over plan", budget=True)) == (denied, [], [])
    expired = {**_BUDGET_DATA, "state": "denied", "reason": "approval expired"}
    assert data(_approval("expired", budget=True)) == (expired, [], [])
    settled = [{"type": "data-budget", "id": "a1", "data": {**_BUDGET_DATA, "state": "approved"}}]
    assert close_open_parts(settled, "stopped", approval_of=lambda _id: None).chunks == []


def test_a_budget_request_another_runs_end_expired_is_closed_by_an_end_and_a_timed_out_one_denied() -> None:
    """A sub-agent's request raised into its lead's message: the lead's end expires it first."""
    by_lead = _approval("expired", budget=True).model_copy(update={"expired_reason": "user_cancelled"})
    closing = close_open_parts(_BUDGET, "stopped because its parent run ended", approval_of=lambda _id: by_lead)
    data = closing.chunks[0].to_wire()["data"]
    assert data == {
        **_BUDGET_DATA,
        "state": "closed",
        "reason": "stopped because its parent run ended before a decision",
    }
    assert closing.data_ids == ["a1"] and closing.expire_approvals == [], "already expired: nothing to expire again"
    timed_out = _approval("expired", budget=True).model_copy(update={"expired_reason": "timeout"})
    late = close_open_parts(_BUDGET, "stopped", approval_of=lambda _id: timed_out)
    assert late.chunks[0].to_wire()["data"]["state"] == "denied" and late.data_ids == []
