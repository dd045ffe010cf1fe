"""Where an edit or a regeneration branches the conversation (`store.branches`).

- **Edit** (`sendMessage({ text, messageId })`: `submit-message` whose `messageId` names a user
  message the chat already has): the edited text is stored as a new user message that follows
  what the original followed; the original and everything after it stay, on another branch.
- **Regenerate** (`regenerate()` or `regenerate({ messageId })`, of the last answer or any earlier
  one): a new answer follows the user message the regenerated answer answered.

A client keeps the id it gave the message it edited (the server stored the edit under a new id),
so an id is read as the version of that message on the active branch (`active_sibling`).
"""

from __future__ import annotations

from ..store.branches import BranchFrom, active_sibling, parents
from ..store.records import MessageRecord
from .errors import ApiError

__all__ = ["edit_point", "regenerate_point"]


def edit_point(messages: list[MessageRecord], message_id: str) -> BranchFrom:
    """The branch an edit of `message_id` (a stored message) starts: after the original's parent."""
    stored = next(m for m in messages if m.message_id == message_id)
    if stored.role != "user":
        raise ApiError(400, f"messageId: message {message_id} is not a user message; only a user message is edited")
    target = _on_branch(messages, message_id)
    return BranchFrom(after=parents(messages)[target.message_id])


def regenerate_point(messages: list[MessageRecord], *, replaced: str | None, last_posted: str | None) -> BranchFrom:
    """The branch a regeneration starts: after the user message the answer answered.

    `replaced` is the answer the client named (`regenerate({ messageId })`), else the history's
    last message (`last_posted`, a user message) is the one to answer again.
    """
    if replaced is not None:
        target = _on_branch(messages, replaced, field="messageId")
        if target.role == "user":
            return BranchFrom(after=target.message_id)
        parent = parents(messages)[target.message_id]
        if parent is None:
            raise ApiError(400, f"messageId: message {replaced} answers no user message; nothing to answer again")
        return BranchFrom(after=parent)
    if last_posted is None:
        raise ApiError(400, "messages: a regeneration answers a user message; the list must end with one")
    return BranchFrom(after=_on_branch(messages, last_posted, field="messages").message_id)


def _on_branch(messages: list[MessageRecord], message_id: str, *, field: str = "messageId") -> MessageRecord:
    if not any(m.message_id == message_id for m in messages):
        raise ApiError(404, f"{field}: message {message_id} is not in this chat")
    target = active_sibling(messages, message_id)
    if target is None:
        raise ApiError(
            409, f"{field}: message {message_id} is not on the conversation's active branch; switch to its branch first"
        )
    return target
