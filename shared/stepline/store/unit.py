"""A unit of work: what a store operation reads and writes, committed all at once or not at all.

The operations (`operations/`) are written once against this interface. A backend provides
the unit: `MemoryStore` runs it under a lock; `DynamoStore` reads with strongly consistent reads
and commits every write in one `TransactWriteItems` whose conditions say "the item is still the
revision I read" (or "does not exist yet"). When another writer got there first, the commit fails
with `ConcurrentUpdate` and the whole operation is run again on fresh reads — so a compare-and-set
such as an approval decision is decided exactly once, and a refused operation writes nothing.
"""

from __future__ import annotations

from typing import Protocol

from .records import (
    ApprovalRecord,
    ArtifactRecord,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)

__all__ = ["Record", "Unit", "record_key"]

Record = (
    ConversationRecord
    | MessageRecord
    | RunRecord
    | StepRecordRow
    | ToolCallRecord
    | ApprovalRecord
    | CheckpointRecord
    | EventRecord
    | ArtifactRecord
)


class Unit(Protocol):
    """Reads see committed state (never this unit's own pending writes); writes are staged."""

    def conversation(self, user_id: str, conversation_id: str) -> ConversationRecord | None: ...

    def message(self, user_id: str, conversation_id: str, seq: int) -> MessageRecord | None: ...

    def message_id_taken(self, user_id: str, conversation_id: str, message_id: str) -> bool: ...

    def run(self, user_id: str, run_id: str) -> RunRecord | None: ...

    def step(self, user_id: str, run_id: str, step_index: int) -> StepRecordRow | None: ...

    def tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> ToolCallRecord | None: ...

    def run_tool_calls(self, user_id: str, run_id: str) -> list[ToolCallRecord]: ...

    def run_steps(self, user_id: str, run_id: str, from_step: int = 0) -> list[StepRecordRow]: ...

    def approval(self, user_id: str, approval_id: str) -> ApprovalRecord | None: ...

    def run_approvals(self, user_id: str, run_id: str) -> list[ApprovalRecord]: ...

    def approval_for_tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> str | None:
        """The approval id already requested for this tool call, if any."""
        ...

    def artifact(self, user_id: str, artifact_id: str) -> ArtifactRecord | None: ...

    def checkpoint(self, user_id: str, run_id: str, seq: int) -> CheckpointRecord | None: ...

    def put(self, record: Record, *, new: bool = False) -> None:
        """Stage a write. `new=True`: the item must not exist yet (else the commit conflicts)."""
        ...

    def delete(self, record: Record) -> None:
        """Stage a delete of an item read in this unit."""
        ...


def record_key(record: Record) -> tuple[tuple[str, ...], str | int]:
    """`(partition, sort key)` of a record; every partition starts with its kind and user."""
    match record:
        case ConversationRecord():
            return ("conv", record.user_id), record.conversation_id
        case MessageRecord():
            return ("msg", record.user_id, record.conversation_id), record.seq
        case RunRecord():
            return ("run", record.user_id), record.run_id
        case StepRecordRow():
            return ("step", record.user_id, record.run_id), record.step_index
        case ToolCallRecord():
            return ("tool", record.user_id, record.run_id), record.tool_call_id
        case ApprovalRecord():
            return ("approval", record.user_id), record.approval_id
        case CheckpointRecord():
            return ("ckpt", record.user_id, record.run_id), record.seq
        case EventRecord():
            return ("event", record.user_id, record.run_id), record.seq
        case ArtifactRecord():
            return ("artifact", record.user_id), record.artifact_id
