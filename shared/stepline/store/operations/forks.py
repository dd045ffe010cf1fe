"""Staging a fork's seed with its turn (`store.seed`): log, snapshot, first checkpoint, decided waits."""

from __future__ import annotations

from ..errors import Conflict
from ..records import TERMINAL, CheckpointRecord, MessageRecord, RunRecord, check_id
from ..seed import RunSeed
from ..turns import visible_text
from ..unit import Unit
from .common import event_records, update

__all__ = ["stage_seed"]


def stage_seed(
    unit: Unit, run: RunRecord, assistant: MessageRecord, seed: RunSeed, *, now: int, retention: int
) -> tuple[RunRecord, MessageRecord]:
    """Stage what the fork starts with; returns its run and message as they are then (unstaged).

    Refused (`Conflict`, nothing written) when the source is not an ended run of this conversation.
    """
    source = unit.run(run.user_id, seed.source_run_id)
    if source is None or source.conversation_id != run.conversation_id:
        raise Conflict(f"run {seed.source_run_id} is not a run of conversation {run.conversation_id}")
    if source.status not in TERMINAL["run"]:
        raise Conflict(f"run {seed.source_run_id} is {source.status}; only an ended run is forked")
    events = event_records(run.user_id, run.run_id, 0, seed.events, now, retention)
    for event in events:
        unit.put(event, new=True)
    last_seq = events[-1].seq if events else 0
    checkpoint = CheckpointRecord(
        user_id=run.user_id,
        run_id=run.run_id,
        seq=1,
        step_index=max(seed.step_index - 1, 0),
        state=seed.checkpoint_state,
        last_event_seq=last_seq,
        created_at=now,
    )
    unit.put(checkpoint, new=True)
    for approval in seed.approvals:
        check_id(approval.approval_id, "approval id")
        if approval.run_id != run.run_id or approval.status in ("requested", "processing"):
            raise Conflict(f"approval {approval.approval_id} is not a decided approval of run {run.run_id}")
        unit.put(approval, new=True)
    for call in seed.tool_calls:
        unit.put(update(call, run_id=run.run_id, user_id=run.user_id), new=True)
    run = update(
        run, last_event_seq=last_seq, checkpoint_seq=1, active_step_index=checkpoint.step_index, heartbeat_at=now
    )
    parts = seed.parts
    assistant = update(assistant, parts=parts, content=visible_text(parts), snapshot_seq=last_seq)
    return run, assistant
