"""Mask secrets in every record a unit of work writes (both backends use it).

Message parts, metadata and errors, tool-call inputs/outputs/errors, step response messages and event chunks pass
through the `Redactor` before they are staged. The loop checkpoint is deliberately *not* masked:
it is what an approved tool runs with after a pause, and a masked credential in it would make the
tool run with `*****`. It is encrypted at rest like every item, never sent to a client, and never
logged.
"""

from __future__ import annotations

from typing import Any

from .records import EventRecord, MessageRecord, StepRecordRow, ToolCallRecord
from .redaction import ReasoningPolicy, Redactor, redact_parts, strip_reasoning
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
