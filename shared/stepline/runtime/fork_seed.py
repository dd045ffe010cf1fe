"""What a fork starts from, computed from the source's checkpoint and log (pure; `runtime.fork` reads and writes).

The fork point is a step boundary of the source run: the checkpoint its step `n` began from. The
fork's state is that checkpoint's, renamed to the fork (its run, its message, new ids for the
approvals waiting there, signed again); its log is the source's up to that checkpoint, behind a
`start` of its own; the wait it resumes is already decided: the source's decisions and answers,
with the ones the person changed.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import JsonValue

from ..loop.approval import sign_approval
from ..loop.state import LoopState, PendingApproval
from ..protocol.chunks import parse_chunk
from ..protocol.reducer import reduce_ui_message_stream
from ..store.records import ApprovalRecord, EventRecord, NewEvent, ToolCallRecord
from ..store.seed import RunSeed
from ..store.steered import steer_chunk, user_model_messages

__all__ = ["Answer", "Decision", "ForkEdits", "ForkIds", "seed_of"]

_REPLAY_CHUNKS = 400
"""Chunks per replayed event: a few events, whatever the source's log held (each item stays small)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """An approval decided again (`approved`), with its reason."""

    approved: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's answer to a question (a client-side tool call) given again: an output or an error text."""

    output: JsonValue = None
    error_text: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkEdits:
    """What the fork changes at its fork point."""

    decisions: Mapping[str, Decision] = field(default_factory=dict[str, Decision])
    """By the source's approval id."""
    answers: Mapping[str, Answer] = field(default_factory=dict[str, Answer])
    """By tool call id."""
    message: dict[str, JsonValue] | None = None
    """A user message the model reads at the fork point (UIMessage wire form), as a steering message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkIds:
    """The fork's own ids and who makes it."""

    run_id: str
    message_id: str
    user_id: str
    now: int


def seed_of(
    ids: ForkIds,
    *,
    source_run_id: str,
    step: int,
    state: LoopState,
    events: Sequence[EventRecord],
    metadata: dict[str, JsonValue],
    source_approvals: Mapping[str, ApprovalRecord],
    source_calls: Mapping[str, ToolCallRecord],
    edits: ForkEdits,
    secret: bytes | None,
) -> RunSeed:
    """The fork's seed: its first checkpoint, log, message parts, and the decided wait it resumes."""
    renamed = {p.approval_id: f"aitxt-{uuid.uuid4().hex[:24]}" for p in state.pending_approvals}
    pending: list[PendingApproval] = []
    for approval in state.pending_approvals:
        call = approval.tool_call
        new_id = renamed[approval.approval_id]
        signature = None
        if secret is not None:
            signature = sign_approval(
                secret, approval_id=new_id, tool_call_id=call.tool_call_id, tool_name=call.tool_name, input=call.input
            )
        pending.append(approval.model_copy(update={"approval_id": new_id, "signature": signature}))
    forked = state.model_copy(
        update={
            "run_id": ids.run_id,
            "message_id": ids.message_id,
            "started_at": ids.now,
            "pending_approvals": pending,
            "pending_budget": None,
        }
    )
    chunks = _replayed(events, renamed, dict(zip(renamed, (p.signature for p in pending), strict=True)))
    if edits.message is not None:
        chunks.append(steer_chunk(edits.message))
        steered = [*forked.response_messages, *user_model_messages(edits.message)]
        forked = forked.model_copy(update={"response_messages": steered})
    start: dict[str, JsonValue] = {"type": "start", "messageId": ids.message_id, "messageMetadata": metadata}
    signed = {old: p.signature for old, p in zip(renamed, pending, strict=True)}
    approvals, calls = _decided(ids, state, renamed, signed, source_approvals, source_calls, edits)
    reduced = reduce_ui_message_stream(parse_chunk(c) for c in [start, *chunks])
    message = reduced.message or {}
    return RunSeed(
        source_run_id=source_run_id,
        step_index=step,
        checkpoint_state=forked.model_dump(mode="json", by_alias=True),
        events=[NewEvent(type="start", chunks=[start])]
        + [
            NewEvent(type="replay", chunks=chunks[i : i + _REPLAY_CHUNKS])
            for i in range(0, len(chunks), _REPLAY_CHUNKS)
        ],
        parts=cast(list[dict[str, JsonValue]], message.get("parts") or []),
        approvals=approvals,
        tool_calls=calls,
    )


def _replayed(
    events: Sequence[EventRecord], renamed: Mapping[str, str], signatures: Mapping[str, str | None]
) -> list[dict[str, JsonValue]]:
    """The source's chunks without its `start`, the approvals waiting at the fork point renamed."""
    chunks: list[dict[str, JsonValue]] = []
    for event in events:
        for chunk in event.chunks:
            if chunk.get("type") == "start":
                continue
            approval_id = chunk.get("approvalId")
            if chunk.get("type") == "tool-approval-request" and isinstance(approval_id, str) and approval_id in renamed:
                chunk = {**chunk, "approvalId": renamed[approval_id]}
                signature = signatures[approval_id]
                if signature is None:
                    chunk.pop("signature", None)
                else:
                    chunk["signature"] = signature
            chunks.append(chunk)
    return chunks


def _decided(
    ids: ForkIds,
    state: LoopState,
    renamed: Mapping[str, str],
    signed: Mapping[str, str | None],
    source_approvals: Mapping[str, ApprovalRecord],
    source_calls: Mapping[str, ToolCallRecord],
    edits: ForkEdits,
) -> tuple[list[ApprovalRecord], list[ToolCallRecord]]:
    """The fork's approvals and ledger rows at the fork point: the source's outcome, or the changed one."""
    approvals: list[ApprovalRecord] = []
    calls: list[ToolCallRecord] = []
    for pending in state.pending_approvals:
        call, source = pending.tool_call, source_approvals.get(pending.approval_id)
        edit = edits.decisions.get(pending.approval_id)
        fields: dict[str, Any]
        if edit is not None:
            decision = "approved" if edit.approved else "denied"
            fields = {"status": decision, "decision": decision, "reason": edit.reason, "decided_by": ids.user_id}
        elif source is not None and source.status in ("approved", "denied"):
            fields = {"status": source.status, "decision": source.status, "reason": source.reason}
            fields["decided_by"] = source.decided_by
        else:  # expired at the source (a timeout, or the run ended while it waited): expired here too
            reason = source.expired_reason if source is not None else "run_ended"
            fields = {"status": "expired", "expired_reason": reason}
        approvals.append(
            ApprovalRecord(
                user_id=ids.user_id,
                approval_id=renamed[pending.approval_id],
                run_id=ids.run_id,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                input=call.input,
                signature=signed[pending.approval_id],
                requested_at=ids.now,
                decided_at=ids.now,
                checkpoint_seq=1,
                **fields,
            )
        )
        status: Any = {"approved": "pending", "denied": "denied"}.get(fields["status"], "expired")
        calls.append(_row(ids, call.tool_call_id, call.tool_name, call.input, status, state.step_number - 1))
    for asked in state.pending_client_calls:
        answer = edits.answers.get(asked.tool_call_id)
        source_row = source_calls.get(asked.tool_call_id)
        if answer is None and source_row is not None and source_row.status in ("success", "error"):
            answer = Answer(
                output=source_row.output,
                error_text=str(source_row.error.get("message")) if source_row.error else None,
            )
        answer = answer or Answer(error_text="no answer before the run ended")
        status = "error" if answer.error_text is not None else "success"
        row = _row(ids, asked.tool_call_id, asked.tool_name, asked.input, status, state.step_number - 1)
        error: dict[str, JsonValue] | None = None if answer.error_text is None else {"message": answer.error_text}
        calls.append(row.model_copy(update={"output": answer.output, "error": error, "ended_at": ids.now}))
    return approvals, calls


def _row(ids: ForkIds, tool_call_id: str, name: str, input: JsonValue, status: Any, step: int) -> ToolCallRecord:
    return ToolCallRecord(
        user_id=ids.user_id,
        run_id=ids.run_id,
        tool_call_id=tool_call_id,
        tool_name=name,
        step_index=max(step, 0),
        status=status,
        input=input,
        ended_at=None if status == "pending" else ids.now,
    )
