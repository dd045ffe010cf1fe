"""Where a conversation may be cut: between groups, never inside one (pure).

A group is a user (or system) message on its own, or an assistant message with the tool messages
that follow it: the step's tool calls with their results, its approval requests with their
decisions, its reasoning with the text it signs. Compaction summarizes whole groups only, so no
request ever holds a tool call without its result or a result without its call.

A summary is a user message marked `providerOptions.stepline.summary` (adapters read only their own
provider's key): `summary_of` finds it, `summary_message` makes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import JsonValue

from ..protocol.model_messages import (
    AssistantModelMessage,
    ModelMessage,
    ModelTextPart,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UserModelMessage,
)

__all__ = ["SUMMARY_HEADER", "Cut", "groups", "plan_cut", "summary_message", "summary_of", "unpaired_calls"]

SUMMARY_HEADER = "[Summary of the earlier conversation, written when it grew too long for the context window]"


def groups(messages: Sequence[ModelMessage]) -> list[tuple[int, int]]:
    """`(start, end)` index ranges of the groups, in order, covering every message."""
    out: list[tuple[int, int]] = []
    index = 0
    while index < len(messages):
        end = index + 1
        if isinstance(messages[index], AssistantModelMessage | ToolModelMessage):
            while end < len(messages) and isinstance(messages[end], ToolModelMessage):
                end += 1
        out.append((index, end))
        index = end
    return out


@dataclass(frozen=True, slots=True)
class Cut:
    """How many leading messages a compaction summarizes, and the tokens left after it."""

    messages: int
    kept_tokens: int


def plan_cut(counts: Sequence[int], ranges: Sequence[tuple[int, int]], *, goal: int, keep_recent: int) -> Cut:
    """Summarize the fewest oldest groups that bring the rest within `goal` tokens.

    The newest `keep_recent` groups are never summarized; when even they do not fit, fewer are kept
    (down to the newest one, which holds what the next call answers), and when that is still over
    the goal, everything before the newest group is summarized.
    """
    total = sum(counts)
    for keep in range(min(keep_recent, len(ranges)), 0, -1):
        remaining = total
        for taken, (start, end) in enumerate(ranges[: len(ranges) - keep]):
            if remaining <= goal and taken:
                return Cut(start, remaining)
            remaining -= sum(counts[start:end])
        if remaining <= goal and len(ranges) > keep:
            return Cut(ranges[len(ranges) - keep][0], remaining)
    if len(ranges) > 1:
        start = ranges[-1][0]
        return Cut(start, sum(counts[start:]))
    return Cut(0, total)


def summary_of(message: ModelMessage) -> dict[str, Any] | None:
    """The summary marker of a message, or None when it is not a summary."""
    if not isinstance(message, UserModelMessage) or not message.provider_options:
        return None
    stepline: dict[str, Any] = message.provider_options.get("stepline") or {}
    marker = stepline.get("summary")
    return cast(dict[str, Any], marker) if isinstance(marker, dict) else None


def summary_message(text: str, marker: dict[str, JsonValue]) -> UserModelMessage:
    """The user message carrying a summary into later prompts."""
    return UserModelMessage(
        content=[ModelTextPart(text=f"{SUMMARY_HEADER}\n\n{text}")],
        provider_options={"stepline": {"summary": marker}},
    )


def unpaired_calls(messages: Sequence[ModelMessage]) -> list[str]:
    """Tool call ids without a result, or results without a call (a provider refuses either)."""
    calls: list[str] = []
    results: list[str] = []
    for message in messages:
        if isinstance(message, AssistantModelMessage | ToolModelMessage):
            for part in message.content:
                if isinstance(part, ToolCallPart) and not part.provider_executed:
                    calls.append(part.tool_call_id)
                elif isinstance(part, ToolResultPart) and isinstance(message, ToolModelMessage):
                    results.append(part.tool_call_id)
    return sorted(set(calls).symmetric_difference(results))
