"""The branches of a conversation: the tree its messages form, and which path through it is active.

Every message follows one message, its `parent_message_id` (None: the conversation's first message;
an assistant message follows the user message it answers). Messages that follow the same message
are alternatives of each other: an edited user message and the original, a regenerated answer and
the answer it replaced. A **branching point** is a message with more than one alternative.

The **active branch** is one path from the first message to a leaf: the messages not marked
`superseded_by`. It is what the model sees and what `GET /api/conversations/{id}` shows; along
one path seqs only grow, so the active messages in seq order are that path. A message leaves the
active branch marked with the id of what took it off (the run of the edit or regeneration, or
the `switch-…` id of a switch); every message that left together carries the same mark, so
switching back restores the whole branch as it was last seen.

Pure functions; `operations.runs.start_turn` and `operations.branches.switch_branch` write what
they compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .records import MessageRecord

__all__ = ["BranchFrom", "BranchPoint", "active_sibling", "branch_points", "children", "leaving", "parents", "switch"]


@dataclass(frozen=True, slots=True)
class BranchFrom:
    """A turn that starts a branch: it follows `after` (None: it is the new first message).

    The active messages after `after` leave the active branch, marked with the new run's id.
    """

    after: str | None


@dataclass(frozen=True, slots=True)
class BranchPoint:
    """The alternatives that follow `parent_id`, oldest first, and which of them is on the active branch."""

    parent_id: str | None
    sibling_ids: list[str]
    active_id: str


def parents(messages: Sequence[MessageRecord]) -> dict[str, str | None]:
    """Each message's parent.

    A record written before branches existed (`parent_recorded` False) with no parent follows the
    newest earlier message that was still in the conversation when it was written: one not
    superseded, or superseded by a run whose answer came later (a regeneration wrote the new answer
    without a parent, and user messages had none).
    """
    answer_seq = {m.run_id: m.seq for m in messages if m.role == "assistant" and m.run_id is not None}
    ordered = sorted(messages, key=lambda m: m.seq)
    found: dict[str, str | None] = {}
    for index, message in enumerate(ordered):
        if message.parent_recorded or message.parent_message_id is not None:
            found[message.message_id] = message.parent_message_id
            continue
        found[message.message_id] = next(
            (
                earlier.message_id
                for earlier in reversed(ordered[:index])
                if earlier.superseded_by is None or answer_seq.get(earlier.superseded_by, message.seq + 1) > message.seq
            ),
            None,
        )
    return found


def children(messages: Sequence[MessageRecord]) -> dict[str | None, list[MessageRecord]]:
    """The messages following each message (None: the first messages), in seq order."""
    parent_of = parents(messages)
    found: dict[str | None, list[MessageRecord]] = {}
    for message in sorted(messages, key=lambda m: m.seq):
        found.setdefault(parent_of[message.message_id], []).append(message)
    return found


def branch_points(messages: Sequence[MessageRecord]) -> list[BranchPoint]:
    """Every branching point on the active branch, in its order."""
    points: list[BranchPoint] = []
    for parent_id, followers in children(messages).items():
        active = next((m for m in followers if m.superseded_by is None), None)
        if len(followers) > 1 and active is not None:
            points.append(BranchPoint(parent_id, [m.message_id for m in followers], active.message_id))
    by_seq = {m.message_id: m.seq for m in messages}
    return sorted(points, key=lambda p: by_seq[p.active_id])


def active_sibling(messages: Sequence[MessageRecord], message_id: str) -> MessageRecord | None:
    """The message, or when it is off the active branch its alternative that is on it (None: neither).

    A client keeps the id it gave a user message after editing it (the AI SDK's
    `sendMessage({ text, messageId })`), while the server stores the edit as a new message: that
    id then names the original, and what the client means is the version it shows.
    """
    message = next((m for m in messages if m.message_id == message_id), None)
    if message is None or message.superseded_by is None:
        return message
    parent_of = parents(messages)
    parent = parent_of[message_id]
    return next(
        (m for m in messages if m.superseded_by is None and parent_of[m.message_id] == parent),
        None,
    )


def leaving(messages: Sequence[MessageRecord], after: str | None) -> list[MessageRecord]:
    """The active messages after `after` (which must be active): what a branch from it takes off.

    Raises:
        ValueError: `after` is not a message on the active branch.
    """
    active = sorted((m for m in messages if m.superseded_by is None), key=lambda m: m.seq)
    if after is None:
        return active
    index = next((i for i, m in enumerate(active) if m.message_id == after), None)
    if index is None:
        raise ValueError(f"message {after} is not on the conversation's active branch")
    return active[index + 1 :]


def switch(messages: Sequence[MessageRecord], message_id: str, mark: str) -> dict[str, str | None]:
    """The new `superseded_by` of each message that changes when the branch through `message_id` becomes active.

    The new branch is the path to `message_id`, then below it the messages that left the active
    branch together with it (the same mark), else the newest alternative at each point. The
    messages it replaces get `mark`.

    Raises:
        KeyError: No message `message_id`.
    """
    by_id = {m.message_id: m for m in messages}
    target = by_id[message_id]
    parent_of, followers = parents(messages), children(messages)
    path: set[str] = set()
    at: str | None = message_id
    while at is not None:
        path.add(at)
        at = parent_of[at]
    below = target
    while followers.get(below.message_id):
        options = followers[below.message_id]
        below = next((m for m in options if m.superseded_by == below.superseded_by), options[-1])
        path.add(below.message_id)
    changes: dict[str, str | None] = {}
    for message in messages:
        if message.message_id in path and message.superseded_by is not None:
            changes[message.message_id] = None
        elif message.message_id not in path and message.superseded_by is None:
            changes[message.message_id] = mark
    return changes
