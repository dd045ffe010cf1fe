"""What a forked run starts with (`runtime.fork`), written in the same unit as its turn.

A fork is a new run whose first steps are another run's, replayed rather than run: its first
checkpoint is that run's state at the fork point (with the changed decisions), its event log starts
with that run's stream up to there, its assistant message with the parts that stream reduces to,
and the approvals and answers of the wait it resumes are already decided. The model is not called
and no tool runs for any of it; the first live step is the worker's, as after any wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from .records import ApprovalRecord, NewEvent, ToolCallRecord

__all__ = ["RunSeed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSeed:
    """A fork's first checkpoint, log, message parts and decided waits."""

    source_run_id: str
    """The run forked from: it must have ended, in the same conversation (never written to)."""
    step_index: int
    """The fork's first live step (the checkpoint's `step_index` is the last replayed one)."""
    checkpoint_state: dict[str, Any]
    events: list[NewEvent]
    """The fork's log up to the fork point: its `start`, then the replayed steps."""
    parts: list[dict[str, JsonValue]]
    """The assistant message those events reduce to (its snapshot at the log's last seq)."""
    approvals: list[ApprovalRecord] = field(default_factory=list[ApprovalRecord])
    """The fork's own approvals at the fork point, each already decided."""
    tool_calls: list[ToolCallRecord] = field(default_factory=list[ToolCallRecord])
    """The tool calls those approvals and the answered questions name (their rows in the fork's ledger)."""
