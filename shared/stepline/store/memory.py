"""`MemoryStore`: the store port in memory, for tests and the local runtime.

Records live in partitions keyed as on DynamoDB (`unit.record_key`). Each operation runs its
unit of work under one lock and applies the staged writes only when the operation returned, so a
refused operation leaves nothing half-written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from .errors import Conflict, NotFound
from .operations.common import DELTA_RETENTION_MS
from .ports import Page
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
from .redacting_unit import RedactingUnit
from .redaction import ReasoningPolicy, Redactor
from .run_slots import MemorySlots, RunSlots
from .transactional import TransactionalStore
from .unit import Record, Unit, record_key
from .unit_reads import UnitReads, offset_cursor
from .usage_counters import MemoryCounters, UsageCounters

__all__ = ["MemoryStore"]

T = TypeVar("T")
R = TypeVar("R", bound=Record)
Partition = tuple[str, ...]


class _MemoryUnit:
    """Reads the committed partitions; stages writes."""

    def __init__(self, items: dict[Partition, dict[Any, Record]]) -> None:
        self._items = items
        self.writes: list[tuple[Record, bool]] = []
        self.deletes: list[Record] = []

    def _get(self, partition: Partition, key: Any) -> Any:
        return self._items.get(partition, {}).get(key)

    def _all(self, partition: Partition) -> list[Any]:
        return list(self._items.get(partition, {}).values())

    def conversation(self, user_id: str, conversation_id: str) -> ConversationRecord | None:
        return self._get(("conv", user_id), conversation_id)

    def message(self, user_id: str, conversation_id: str, seq: int) -> MessageRecord | None:
        return self._get(("msg", user_id, conversation_id), seq)

    def message_id_taken(self, user_id: str, conversation_id: str, message_id: str) -> bool:
        return any(m.message_id == message_id for m in self._all(("msg", user_id, conversation_id)))

    def run(self, user_id: str, run_id: str) -> RunRecord | None:
        return self._get(("run", user_id), run_id)

    def step(self, user_id: str, run_id: str, step_index: int) -> StepRecordRow | None:
        return self._get(("step", user_id, run_id), step_index)

    def tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        return self._get(("tool", user_id, run_id), tool_call_id)

    def run_tool_calls(self, user_id: str, run_id: str) -> list[ToolCallRecord]:
        return self._all(("tool", user_id, run_id))

    def run_steps(self, user_id: str, run_id: str, from_step: int = 0) -> list[StepRecordRow]:
        steps = self._items.get(("step", user_id, run_id), {})
        return [cast(StepRecordRow, row) for index, row in steps.items() if index >= from_step]

    def approval(self, user_id: str, approval_id: str) -> ApprovalRecord | None:
        return self._get(("approval", user_id), approval_id)

    def run_approvals(self, user_id: str, run_id: str) -> list[ApprovalRecord]:
        return [a for a in self._all(("approval", user_id)) if a.run_id == run_id]

    def approval_for_tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> str | None:
        found = [a.approval_id for a in self.run_approvals(user_id, run_id) if a.tool_call_id == tool_call_id]
        return found[0] if found else None

    def artifact(self, user_id: str, artifact_id: str) -> ArtifactRecord | None:
        return self._get(("artifact", user_id), artifact_id)

    def checkpoint(self, user_id: str, run_id: str, seq: int) -> CheckpointRecord | None:
        return self._get(("ckpt", user_id, run_id), seq)

    def put(self, record: Record, *, new: bool = False) -> None:
        self.writes.append((record, new))

    def delete(self, record: Record) -> None:
        self.deletes.append(record)

    def commit(self) -> None:
        for record, new in self.writes:
            partition, key = record_key(record)
            if new and key in self._items.get(partition, {}):
                raise Conflict(f"{partition[0]} {key} already exists")
        for record, _ in self.writes:
            partition, key = record_key(record)
            self._items.setdefault(partition, {})[key] = record.model_copy(deep=True)
        for record in self.deletes:
            partition, key = record_key(record)
            self._items.get(partition, {}).pop(key, None)


class MemoryStore(TransactionalStore, UnitReads):
    """The store in process memory (one lock; copies in and out)."""

    def __init__(
        self,
        *,
        delta_retention_ms: int = DELTA_RETENTION_MS,
        redactor: Redactor | None = None,
        reasoning: ReasoningPolicy = "keep",
    ) -> None:
        self._redactor = redactor or Redactor()
        self._reasoning: ReasoningPolicy = reasoning
        self._lock = threading.RLock()
        self.delta_retention_ms = delta_retention_ms
        self.items: dict[Partition, dict[Any, Record]] = {}
        self.counters: UsageCounters = MemoryCounters()
        self.slots: RunSlots = MemorySlots()

    def _do(self, operation: Callable[[_MemoryUnit], T]) -> T:
        with self._lock:
            unit = _MemoryUnit(self.items)
            result = operation(cast(_MemoryUnit, RedactingUnit(unit, self._redactor, self._reasoning)))
            unit.commit()
            return _detached(result)

    def _peek(self, read: Callable[[Unit], T]) -> T:
        with self._lock:
            return _detached(read(_MemoryUnit(self.items)))

    def _read(self, partition: Partition) -> list[Any]:
        with self._lock:
            return [r.model_copy(deep=True) for r in self.items.get(partition, {}).values()]

    # -- conversations and messages ------------------------------------------------------------

    def list_conversations(
        self, user_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> Page[ConversationRecord]:
        mine = sorted(self._read(("conv", user_id)), key=lambda c: (c.updated_at, c.conversation_id), reverse=True)
        start = offset_cursor(cursor)
        more = start + limit < len(mine)
        return Page(mine[start : start + limit], str(start + limit) if more else None)

    def list_messages(
        self, user_id: str, conversation_id: str, *, after_seq: int = 0, limit: int = 100
    ) -> Page[MessageRecord]:
        self.get_conversation(user_id, conversation_id)
        messages = sorted(
            (m for m in self._read(("msg", user_id, conversation_id)) if m.seq > after_seq), key=lambda m: m.seq
        )
        page = messages[:limit]
        return Page(page, str(page[-1].seq) if len(messages) > limit and page else None)

    def get_message(self, user_id: str, conversation_id: str, message_id: str) -> MessageRecord:
        for message in self._read(("msg", user_id, conversation_id)):
            if message.message_id == message_id:
                return message
        raise NotFound(f"message {message_id} not found")

    def delete_conversation(self, user_id: str, conversation_id: str) -> None:
        with self._lock:
            conversation = self.get_conversation(user_id, conversation_id)
            if conversation.active_run_id is not None:
                raise Conflict(f"conversation {conversation_id} has an active run; abort it first")
            self.items.get(("conv", user_id), {}).pop(conversation_id, None)
            self.items.pop(("msg", user_id, conversation_id), None)

    # -- approvals ----------------------------------------------------------------------------------

    def pending_approvals(self, user_id: str) -> list[ApprovalRecord]:
        pending = [a for a in self._read(("approval", user_id)) if a.status == "requested"]
        return sorted(pending, key=lambda a: (a.expires_at or 0, a.approval_id))

    # -- events -------------------------------------------------------------------------------------

    def events_after(
        self, user_id: str, run_id: str, after_seq: int, *, limit: int | None = None, now: int
    ) -> list[EventRecord]:
        self.get_run(user_id, run_id)
        with self._lock:
            log = self.items.get(("event", user_id, run_id), {})
            seqs = sorted(s for s in log if s > after_seq)
            selected = [cast(EventRecord, log[s]) for s in seqs]
        live = [e for e in selected if e.expires_at is None or e.expires_at > now]
        return [e.model_copy(deep=True) for e in live[:limit]]

    # -- artifacts ------------------------------------------------------------------------------------

    def list_message_artifacts(self, user_id: str, message_id: str) -> list[ArtifactRecord]:
        found = [a for a in self._read(("artifact", user_id)) if a.message_id == message_id]
        return sorted(found, key=lambda a: (a.created_at, a.artifact_id))

    # -- system sweeps ----------------------------------------------------------------------------

    def _all(self, kind: str) -> list[Any]:
        with self._lock:
            return [r for partition, rows in self.items.items() if partition[0] == kind for r in rows.values()]

    def stale_runs(self, *, heartbeat_before: int, limit: int = 100) -> list[tuple[str, str]]:
        stale = [
            (r.heartbeat_at or 0, r.user_id, r.run_id)
            for r in self._all("run")
            if r.status not in ("completed", "failed", "aborted") and (r.heartbeat_at or 0) < heartbeat_before
        ]
        return [(u, r) for _, u, r in sorted(stale)[:limit]]

    def expiring_approvals(self, *, before: int, limit: int = 100) -> list[tuple[str, str]]:
        expiring = [
            (a.expires_at, a.user_id, a.approval_id)
            for a in self._all("approval")
            if a.status == "requested" and a.expires_at is not None and a.expires_at < before
        ]
        return [(u, a) for _, u, a in sorted(expiring)[:limit]]


def _detached(value: T) -> T:
    """Results never alias stored records."""
    if isinstance(value, tuple):
        return cast(T, tuple(_detached(v) for v in cast(tuple[Any, ...], value)))
    if isinstance(value, list):
        return cast(T, [_detached(v) for v in cast(list[Any], value)])
    copy = getattr(value, "model_copy", None)
    if copy is not None:
        return copy(deep=True)
    return value
