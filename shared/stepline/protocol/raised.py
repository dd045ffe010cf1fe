"""A sub-agent's approval request raised into the conversation's message: how its part is named.

`stepline.runtime.child_approvals` writes a dynamic tool part per approval a sub-agent (at any
depth) waits for into the conversation's own message, so the AI SDK's `addToolApprovalResponse`
finds it; its `toolCallId` is `sub-approval-{approvalId}`. Such a part is no call of the message's
own model: the history the next turn sends the model leaves it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RAISED_PREFIX", "is_raised", "raised_call_id"]

RAISED_PREFIX = "sub-approval-"


def raised_call_id(approval_id: str) -> str:
    """The tool call id of a sub-agent's approval raised into the conversation's message."""
    return f"{RAISED_PREFIX}{approval_id}"


def is_raised(part: Mapping[str, Any]) -> bool:
    """Whether a UI part is a sub-agent's raised approval (not one of the message's own tool calls)."""
    return part.get("type") == "dynamic-tool" and str(part.get("toolCallId", "")).startswith(RAISED_PREFIX)
