"""Mask secrets in every record a unit of work writes (both backends use it): the boundary to storage.

    conversations   the title (credentials by shape)
    messages        parts (`redact_parts`), `content`, metadata and error
    runs            `error` (its message may quote a provider's reply)
    tool calls      input, output, output text, error
    approvals       the tool input the approval shows and the decision's `reason`
    steps           response messages
    events          every chunk (streamed deltas were masked with state before, by the recorder)
    artifacts       metadata

A message's parts equal to the ones the unit read back are stored as read: they are the stored,
already masked parts, and masking is idempotent (a mask never matches a pattern), so a step masks
only the parts it changed or added, not its whole message again.

The loop checkpoint is deliberately *not* masked: it is what an approved tool runs with after a
pause and what the next step sends the model, and a masked credential in it would make the tool
run with `*****`. It is encrypted at rest like every item, never sent to a client, never logged,
and never in a state-machine payload (docs/data-model.md, "Secrets").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .records import (
    ApprovalRecord,
    ArtifactRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)
from .redaction import ReasoningPolicy, Redactor
from .stored_parts import redact_parts, strip_reasoning
from .unit import Record, Unit

__all__ = ["RedactingUnit", "redact_record"]


def redact_record(
    record: Record, redactor: Redactor, reasoning: ReasoningPolicy = "keep", stored: Sequence[Mapping[str, Any]] = ()
) -> Record:
    """The record with the secrets in its payloads masked (a copy); reasoning text per the policy.

    `stored`: the message's parts as read from the store (masked already); a part equal to the one
    at its index there is kept as it is.
    """
    match record:
        case MessageRecord():
            parts = _redact_changed(record.parts, stored, redactor)
            return record.model_copy(
                update={
                    "parts": strip_reasoning(parts, reasoning) if reasoning != "keep" else parts,
                    # metadata reaches clients too (a failed run's error message is in it)
                    "content": redactor.redact_text(record.content),
                    "metadata": redactor.redact(record.metadata),
                    "error": redactor.redact(record.error),
                }
            )
        case ToolCallRecord():
            return record.model_copy(
                update={
                    "input": redactor.redact(record.input),
                    "output": redactor.redact(record.output),
                    "error": redactor.redact(record.error),
                    "output_text": redactor.redact_text(record.output_text)
                    if record.output_text
                    else record.output_text,
                }
            )
        case RunRecord():
            return record.model_copy(update={"error": redactor.redact(record.error)})
        case ApprovalRecord():
            reason = redactor.redact_text(record.reason) if record.reason else record.reason
            return record.model_copy(update={"input": redactor.redact(record.input), "reason": reason})
        case ConversationRecord():
            return record.model_copy(update={"title": redactor.redact_text(record.title)})
        case ArtifactRecord():
            return record.model_copy(update={"metadata": redactor.redact(record.metadata)})
        case StepRecordRow():
            return record.model_copy(
                update={
                    "response_messages": redactor.redact(record.response_messages),
                    "request": redactor.redact(record.request),
                    "response": redactor.redact(record.response),
                }
            )
        case EventRecord():
            return record.model_copy(update={"chunks": [redactor.redact(c) for c in record.chunks]})
        case _:
            return record


def _redact_changed(
    parts: Sequence[Mapping[str, Any]], stored: Sequence[Mapping[str, Any]], redactor: Redactor
) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    changed: list[int] = []
    for index, part in enumerate(parts):
        if index < len(stored) and part == stored[index]:
            result.append(dict(part))
        else:
            result.append({})
            changed.append(index)
    for index, masked in zip(changed, redact_parts([parts[i] for i in changed], redactor), strict=True):
        result[index] = masked
    return result


class RedactingUnit:
    """Delegates reads (noting the messages' stored parts); masks writes."""

    def __init__(self, unit: Unit, redactor: Redactor, reasoning: ReasoningPolicy = "keep") -> None:
        self._unit = unit
        self._redactor = redactor
        self._reasoning: ReasoningPolicy = reasoning
        self._stored: dict[tuple[str, str, int], list[dict[str, Any]]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._unit, name)

    def message(self, user_id: str, conversation_id: str, seq: int) -> MessageRecord | None:
        found = self._unit.message(user_id, conversation_id, seq)
        if found is not None:
            self._stored[(user_id, conversation_id, seq)] = found.parts
        return found

    def put(self, record: Record, *, new: bool = False) -> None:
        stored = self._stored.get(_message_key(record), []) if isinstance(record, MessageRecord) else []
        self._unit.put(redact_record(record, self._redactor, self._reasoning, stored), new=new)


def _message_key(record: MessageRecord) -> tuple[str, str, int]:
    return (record.user_id, record.conversation_id, record.seq)

    def delete(self, record: Record) -> None:
        self._unit.delete(record)
