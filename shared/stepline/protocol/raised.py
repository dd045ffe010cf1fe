"""A sub-agent's approval request raised into the conversation's message: how its part is named.

`stepline.runtime.child_approvals` writes a dynamic tool part per approval a sub-agent (at any
depth) waits for into the conversation's own message, so the AI SDK's `addToolApprovalResponse`
finds it; its `toolCallId` is `sub-approval-{approvalId}`. Such a part is no call of the message's
own model: the history the next turn sends the model leaves it out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["RAISED_PREFIX", "is_raised", "raised_call_id", "raised_only"]

RAISED_PREFIX = "sub-approval-"


def raised_call_id(approval_id: str) -> str:
    """The tool call id of a sub-agent's approval raised into the conversation's message."""
    return f"{RAISED_PREFIX}{approval_id}"


def is_raised(part: Mapping[str, Any]) -> bool:
    """Whether a UI part is a sub-agent's raised approval (not one of the message's own tool calls)."""
    return part.get("type") == "dynamic-tool" and str(part.get("toolCallId", "")).startswith(RAISED_PREFIX)


def raised_only(chunks: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an event of the conversation's log holds raised requests only (and their settling).

    Such an event is written by a sub-agent's run into a waiting parent's log: it is no attempt
    of the parent's own next step, which must neither redo itself over it nor count it as a crash.
    """
    own = [c for c in chunks if c.get("type") != "start-step"]
    raised = [c for c in own if str(c.get("toolCallId", "")).startswith(RAISED_PREFIX) or _raised_card(c)]
    settling = [c for c in own if c.get("type") == "tool-approval-response"]
    return bool(raised) and len(raised) + len(settling) == len(own)


def _raised_card(chunk: Mapping[str, Any]) -> bool:
    """A sub-agent's budget card raised into the conversation (a `data-*` part naming its `subAgent`)."""
    data = chunk.get("data")
    return str(chunk.get("type", "")).startswith("data-") and isinstance(data, Mapping) and "subAgent" in data
