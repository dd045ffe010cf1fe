"""The context for the next turn, rebuilt from stored messages.

Recent messages are taken newest first until a character budget is spent (the newest user
message always fits). A message whose parts are complete goes through `convert_to_model_messages`,
so earlier tool calls and results come back as assistant tool-call and tool tool-result messages.
A message without parts (legacy), or one whose parts cannot be converted (an unfinished run, a
relative file URL, a part from an older client), falls back to its visible text — the next turn
never fails because of an old message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..errors import InvalidUIMessageError, MessageConversionError
from ..protocol._json import dumps
from ..protocol._ui_validation import validate_ui_messages
from ..protocol.model_messages import ModelMessage
from ..protocol.to_model_messages import LegacyMessage, ReasoningPolicy, convert_to_model_messages
from .records import MessageRecord

__all__ = ["DEFAULT_BUDGET_CHARS", "history_messages"]

DEFAULT_BUDGET_CHARS = 200_000
"""About 50k tokens of context (4 characters a token is a safe average for budgeting)."""

_LOG = logging.getLogger("stepline.store")
_INCOMPLETE = frozenset({"streaming", "waiting"})


def _size(message: MessageRecord) -> int:
    return len(dumps(message.parts)) if message.parts else len(message.content)


def _within_budget(messages: Sequence[MessageRecord], budget: int) -> list[MessageRecord]:
    chosen: list[MessageRecord] = []
    spent = 0
    for message in reversed(messages):
        size = _size(message)
        if chosen and spent + size > budget:
            break
        chosen.append(message)
        spent += size
    chosen.reverse()
    while chosen and chosen[0].role == "assistant":  # never start the context with an orphan answer
        chosen.pop(0)
    return chosen


def _convert(
    message: MessageRecord, reasoning: ReasoningPolicy, model_supports_reasoning: bool | None
) -> list[ModelMessage]:
    legacy = LegacyMessage(id=message.message_id, role=message.role, content=message.content)
    if not message.parts or message.status in _INCOMPLETE:
        return convert_to_model_messages([legacy]) if message.content else []
    wire = {"id": message.message_id, "role": message.role, "parts": message.parts}
    try:
        validated = validate_ui_messages([wire], keep_extensions=True)
        return convert_to_model_messages(
            validated,
            ignore_incomplete_tool_calls=True,
            reasoning=reasoning,
            model_supports_reasoning=model_supports_reasoning,
        )
    except (InvalidUIMessageError, MessageConversionError) as error:
        _LOG.warning("message %s falls back to its text: %s", message.message_id, type(error).__name__)
        return convert_to_model_messages([legacy]) if message.content else []


def history_messages(
    messages: Sequence[MessageRecord],
    *,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    reasoning: ReasoningPolicy = "auto",
    model_supports_reasoning: bool | None = None,
) -> list[ModelMessage]:
    """Model messages for the stored messages (oldest first), within the budget."""
    out: list[ModelMessage] = []
    for message in _within_budget(messages, budget_chars):
        out.extend(_convert(message, reasoning, model_supports_reasoning))
    return out
