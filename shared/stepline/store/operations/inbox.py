"""The operations on a conversation's inbox: messages that came while a run worked.

A queued message waits for the active run to end (its run is started by `start_turn` with
`TurnStart.dequeue`, which removes it in the same write); a steering message is taken by the
running run at its next step boundary (`take_steers`: the entries leave the inbox in the same
write that saves the checkpoint holding them and the event that shows them, so a message is
delivered once, never lost, never twice).
"""

from __future__ import annotations

from ..errors import ActiveRunExists, Conflict, NotFound
from ..records import TERMINAL, InboxEntry, StagedSteers, SteerBuilder
from ..unit import Unit
from .common import DELTA_RETENTION_MS, get_conversation, get_run, live_run, stage_checkpoint, stage_events, update

__all__ = ["NoActiveRun", "cancel_queued", "enqueue", "take_steers"]


class NoActiveRun(Conflict):
    """The conversation has no run to queue behind or to steer (it ended meanwhile)."""


def enqueue(
    unit: Unit,
    user_id: str,
    conversation_id: str,
    entry: InboxEntry,
    *,
    now: int,
    interrupt: tuple[str, str] | None = None,
) -> InboxEntry:
    """Add `entry` behind the active run; the same message again returns it.

    With `interrupt` (`(run id, stop reason)`) the entry goes before the others and that run, the
    active one, is marked to stop with the reason, in the same write: an interrupt is never half
    made (a message queued behind a run nobody stops, or a run stopped for a message not stored).

    Raises `NoActiveRun` when no run is active (start a turn instead), `ActiveRunExists` when a
    steering message or an interrupt names a run that is no longer the active one, `Conflict` for
    a message id the conversation already has.
    """
    conversation = get_conversation(unit, user_id, conversation_id)
    same = next((e for e in conversation.inbox if e.message_id == entry.message_id), None)
    if same is not None:
        return same
    if conversation.active_run_id is None:
        raise NoActiveRun(f"conversation {conversation_id} has no active run")
    if entry.mode == "steer" and entry.run_id != conversation.active_run_id:
        raise ActiveRunExists(conversation_id, conversation.active_run_id)
    if interrupt is not None and interrupt[0] != conversation.active_run_id:
        raise ActiveRunExists(conversation_id, conversation.active_run_id)
    if unit.message_id_taken(user_id, conversation_id, entry.message_id):
        raise Conflict(f"message id {entry.message_id} is already in this conversation")
    if interrupt is not None:
        run = get_run(unit, user_id, interrupt[0])
        if run.status not in TERMINAL["run"] and run.cancel_reason is None:
            unit.put(update(run, cancel_reason=interrupt[1], version=run.version + 1))
    unit.put(
        update(
            conversation,
            inbox=[entry, *conversation.inbox] if interrupt is not None else [*conversation.inbox, entry],
            updated_at=now,
            version=conversation.version + 1,
        )
    )
    return entry


def cancel_queued(unit: Unit, user_id: str, conversation_id: str, message_id: str, *, now: int) -> InboxEntry:
    """Remove a message that is still waiting (`NotFound` once its run started, or never queued)."""
    conversation = get_conversation(unit, user_id, conversation_id)
    entry = next((e for e in conversation.inbox if e.message_id == message_id), None)
    if entry is None:
        raise NotFound(f"message {message_id} is not waiting in conversation {conversation_id}")
    kept = [e for e in conversation.inbox if e.message_id != message_id]
    unit.put(update(conversation, inbox=kept, updated_at=now, version=conversation.version + 1))
    return entry


def take_steers(
    unit: Unit,
    user_id: str,
    run_id: str,
    build: SteerBuilder,
    *,
    now: int,
    retention: int = DELTA_RETENTION_MS,
) -> StagedSteers | None:
    """Move the run's steering messages into its state: checkpoint, events and inbox in one write.

    None when there is nothing to take (or the run is no longer live: the messages stay, to be
    answered as the next turn).
    """
    run = live_run(unit, user_id, run_id)
    if run.cancel_reason is not None:
        return None
    conversation = get_conversation(unit, user_id, run.conversation_id)
    entries = [e for e in conversation.inbox if e.mode == "steer" and e.run_id == run_id]
    if not entries:
        return None
    state, events = build(entries)
    run, stored = stage_events(unit, run, events, now, retention)
    checkpoint = stage_checkpoint(unit, run, state, run.active_step_index, "step_end", now)
    unit.put(update(run, checkpoint_seq=checkpoint.seq))
    kept = [e for e in conversation.inbox if e not in entries]
    unit.put(update(conversation, inbox=kept, updated_at=now, version=conversation.version + 1))
    return StagedSteers(entries=entries, checkpoint=checkpoint, events=stored)
