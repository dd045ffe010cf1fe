"""The port's reads that every backend answers the same way: through its unit of work's reads.

A record read by its key (a conversation, a run, an approval, an artifact, a run's latest
checkpoint) and a run's tool calls and step records mean the same thing on every backend, so they are written
once here, over `Unit`; a backend supplies `_peek` (a unit that reads the committed state outside
any transaction). The listings that need an index or a query of their own (conversations by
recency, messages by seq, the event log, the sweeps) stay with each backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

from .errors import InvalidCursor, NotFound
from .records import (
    ApprovalRecord,
    ArtifactRecord,
    CheckpointRecord,
    ConversationRecord,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)
from .unit import Unit

__all__ = ["UnitReads", "offset_cursor"]

T = TypeVar("T")


class UnitReads(ABC):
    """Reads by key and a run's tool calls and steps, each one read of a unit."""

    @abstractmethod
    def _peek(self, read: Callable[[Unit], T]) -> T:
        """`read` on a unit outside any transaction: the latest committed state, in records the caller may keep."""

    def _found(self, read: Callable[[Unit], T | None], missing: str) -> T:
        found = self._peek(read)
        if found is None:
            raise NotFound(missing)
        return found

    def get_conversation(self, user_id: str, conversation_id: str) -> ConversationRecord:
        return self._found(
            lambda u: u.conversation(user_id, conversation_id), f"conversation {conversation_id} not found"
        )

    def get_run(self, user_id: str, run_id: str) -> RunRecord:
        return self._found(lambda u: u.run(user_id, run_id), f"run {run_id} not found")

    def latest_checkpoint(self, user_id: str, run_id: str) -> CheckpointRecord | None:
        """The run's checkpoint numbered `checkpoint_seq` (every checkpoint written moves it), or None."""
        run = self.get_run(user_id, run_id)
        if run.checkpoint_seq == 0:
            return None
        return self._found(lambda u: u.checkpoint(user_id, run_id, run.checkpoint_seq), "checkpoint not found")

    def checkpoint_for_step(self, user_id: str, run_id: str, step: int) -> CheckpointRecord | None:
        """The last checkpoint holding exactly `step` finished steps: the state step `step` began from.

        Checkpoints are numbered in the order they were written and a state's steps only grow, so
        a binary search over their numbers finds it in a few reads.
        """
        run = self.get_run(user_id, run_id)
        low, high, found = 1, run.checkpoint_seq, None
        while low <= high:
            middle = (low + high) // 2
            checkpoint = self._peek(lambda u, seq=middle: u.checkpoint(user_id, run_id, seq))
            steps = -1 if checkpoint is None else len(checkpoint.state.get("steps") or [])
            if steps <= step:
                found = checkpoint if steps == step else found
                low = middle + 1
            else:
                high = middle - 1
        return found

    def get_approval(self, user_id: str, approval_id: str) -> ApprovalRecord:
        return self._found(lambda u: u.approval(user_id, approval_id), f"approval {approval_id} not found")

    def get_artifact(self, user_id: str, artifact_id: str) -> ArtifactRecord:
        return self._found(lambda u: u.artifact(user_id, artifact_id), f"artifact {artifact_id} not found")

    def list_tool_calls(self, user_id: str, run_id: str) -> list[ToolCallRecord]:
        """The run's tool calls by step, then id (NotFound for a run that is not the user's)."""
        self.get_run(user_id, run_id)
        calls = self._peek(lambda u: u.run_tool_calls(user_id, run_id))
        return sorted(calls, key=lambda c: (c.step_index, c.tool_call_id))

    def list_steps(self, user_id: str, run_id: str, *, from_step: int = 0) -> list[StepRecordRow]:
        """The run's step records from `from_step` on, in step order (NotFound: not the user's run)."""
        self.get_run(user_id, run_id)
        return sorted(self._peek(lambda u: u.run_steps(user_id, run_id, from_step)), key=lambda s: s.step_index)


def offset_cursor(cursor: str | None) -> int:
    """The offset an offset cursor (a listing's `next_cursor` where pages are counted) stands for."""
    if not cursor:
        return 0
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 9):
        raise InvalidCursor("not a cursor this API gave out")
    return int(cursor)
