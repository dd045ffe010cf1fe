"""Building the records a new turn writes (shared by every backend)."""

from __future__ import annotations

from typing import Any

from .ports import TurnStart
from .records import MessageRecord, check_id

__all__ = ["assistant_placeholder", "conversation_title", "message_record", "visible_text"]

TITLE_LENGTH = 80


def visible_text(parts: list[dict[str, Any]]) -> str:
    """The text parts joined: the message's searchable content."""
    return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


def message_record(
    user_id: str, conversation_id: str, message: dict[str, Any], *, seq: int, now: int, parent_id: str | None = None
) -> MessageRecord:
    """A stored user message from its UIMessage wire form; it follows `parent_id` on its branch (`store.branches`)."""
    message_id = check_id(str(message.get("id", "")), "message id")
    parts: list[dict[str, Any]] = list(message.get("parts") or [])
    return MessageRecord(
        user_id=user_id,
        conversation_id=conversation_id,
        message_id=message_id,
        seq=seq,
        role="user",
        status="completed",
        parent_message_id=parent_id,
        parent_recorded=True,
        parts=parts,
        metadata=message.get("metadata"),
        content=visible_text(parts),
        created_at=now,
        completed_at=now,
    )


def assistant_placeholder(user_id: str, turn: TurnStart, *, seq: int, parent_id: str | None) -> MessageRecord:
    """The empty assistant message a run fills in place, following `parent_id` (the user message it answers)."""
    return MessageRecord(
        user_id=user_id,
        conversation_id=turn.conversation_id,
        message_id=turn.assistant_message_id,
        seq=seq,
        role="assistant",
        status="streaming",
        run_id=turn.run_id,
        parent_message_id=parent_id,
        parent_recorded=True,
        metadata=turn.assistant_metadata,
        created_at=turn.now,
    )


def conversation_title(title: str | None, user_message: MessageRecord | None) -> str:
    """An explicit title, else the start of the first user message."""
    if title:
        return title[:TITLE_LENGTH]
    text = " ".join((user_message.content if user_message else "").split())
    return text[: TITLE_LENGTH - 1] + "…" if len(text) > TITLE_LENGTH else text
