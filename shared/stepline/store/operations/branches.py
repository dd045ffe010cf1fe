"""The operations on a conversation's branches: reading its messages in a unit, and switching the active branch.

What the branches are and how the active one is chosen is `store.branches` (pure); a turn that
starts a branch is `runs.start_turn` with `TurnStart.branch`.
"""

from __future__ import annotations

from ..branches import switch
from ..errors import ActiveRunExists, NotFound
from ..records import ConversationRecord, MessageRecord
from ..unit import Unit
from .common import get_conversation, update

__all__ = ["conversation_messages", "last_active", "switch_branch"]


def conversation_messages(unit: Unit, conversation: ConversationRecord) -> list[MessageRecord]:
    """Every message of the conversation, in seq order (each read in the unit, so its commit checks them)."""
    found = (unit.message(conversation.user_id, conversation.conversation_id, seq) for seq in _seqs(conversation))
    return [m for m in found if m is not None]


def last_active(unit: Unit, conversation: ConversationRecord) -> MessageRecord | None:
    """The last message of the active branch: what a new message follows."""
    for seq in reversed(_seqs(conversation)):
        message = unit.message(conversation.user_id, conversation.conversation_id, seq)
        if message is not None and message.superseded_by is None:
            return message
    return None


def _seqs(conversation: ConversationRecord) -> range:
    return range(1, conversation.last_message_seq + 1)


def switch_branch(
    unit: Unit, user_id: str, conversation_id: str, message_id: str, *, mark: str, now: int
) -> ConversationRecord:
    """Make the branch through `message_id` the active one; the messages it replaces are marked `mark`.

    Refused while a run is active (`ActiveRunExists`: the run answers the branch it started on);
    `NotFound` for a conversation or message that is not the user's.
    """
    conversation = get_conversation(unit, user_id, conversation_id)
    if conversation.active_run_id is not None:
        raise ActiveRunExists(conversation_id, conversation.active_run_id)
    messages = conversation_messages(unit, conversation)
    try:
        changes = switch(messages, message_id, mark)
    except KeyError:
        raise NotFound(f"message {message_id} of conversation {conversation_id} not found") from None
    for message in messages:
        if message.message_id in changes:
            unit.put(update(message, superseded_by=changes[message.message_id]))
    conversation = update(conversation, version=conversation.version + 1, updated_at=now)
    unit.put(conversation)
    return conversation
