"""Mask secrets in every record a unit of work writes (both backends use it): the boundary to storage.

    conversations   the title (credentials by shape)
    messages        parts (`redact_parts`), `content`, metadata and error
    runs            `error` (its message may quote a provider's reply)
    tool calls      input, output, output text, error
    approvals       the tool input the approval shows and the decision's `reason`
    steps           response messages
    events          every chunk (streamed deltas were masked with state before, by the recorder)
    artifacts       metadata

The loop checkpoint is deliberately *not* masked: it is what an approved tool runs with after a
pause and what the next step sends the model, and a masked credential in it would make the tool
run with `*****`. It is encrypted at rest like every item, never sent to a client, never logged,
and never in a state-machine payload (docs/data-model.md, "Secrets").
"""

from __future__ import annotations

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


def redact_record(record: Record, redactor: Redactor, reasoning: ReasoningPolicy = "keep") -> Record:
    """The record with the secrets in its payloads masked (a copy); reasoning text per the policy."""
    match record:
        case MessageRecord():
            parts = redact_parts(record.parts, redactor)
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
            return record.model_copy(update={"response_messages": redactor.redact(record.response_messages)})
        case EventRecord():
            return record.model_copy(update={"chunks": [redactor.redact(c) for c in record.chunks]})
        case _:
            return record


class RedactingUnit:
    """Delegates reads; masks writes."""

    def __init__(self, unit: Unit, redactor: Redactor, reasoning: ReasoningPolicy = "keep") -> None:
        self._unit = unit
        self._redactor = redactor
        self._reasoning: ReasoningPolicy = reasoning

    def __getattr__(self, name: str) -> Any:
        return getattr(self._unit, name)

    def put(self, record: Record, *, new: bool = False) -> None:
        self._unit.put(redact_record(record, self._redactor, self._reasoning), new=new)

    def delete(self, record: Record) -> None:
        self._unit.delete(record)
