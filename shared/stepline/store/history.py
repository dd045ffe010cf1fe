"""The context for the next turn, rebuilt from stored messages, by tokens.

When a run compacted its context, its message holds the summary (a `data-context-summary` part):
the next turn starts from the newest summary, then the stored messages after the last one it
covers (`throughMessageId`), the summarizing run's own message from its first step kept verbatim
(`keptFromStep`). Then the newest messages are taken until the token budget is spent (the newest
user message always fits; of the oldest one that does not, an answer's newest steps that do); what
is left out is counted in the `HistoryReport`, which the run's
start records in its message metadata (`metadata.context.history`): nothing is dropped silently.

A message whose parts are complete goes through `convert_to_model_messages`, so earlier tool calls
and results come back as assistant tool-call and tool tool-result messages. A message without parts
(legacy), or one whose parts cannot be converted (an unfinished run, a relative file URL, a part
from an older client), falls back to its visible text — the next turn never fails because of an
old message. The first model message of each stored message is marked with its id
(`providerOptions.stepline.messageId`, which no adapter sends) so a compaction can say what it covers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import JsonValue

from ..context.groups import summary_message
from ..context.tokens import MessageTokens
from ..errors import InvalidUIMessageError, MessageConversionError
from ..protocol._ui_validation import validate_ui_messages
from ..protocol.model_messages import ModelMessage
from ..protocol.raised import is_raised
from ..protocol.to_model_messages import LegacyMessage, ReasoningPolicy, convert_to_model_messages
from .records import MessageRecord

__all__ = ["DEFAULT_BUDGET_TOKENS", "SUMMARY_PART", "HistoryReport", "TurnHistory", "history_messages", "turn_history"]

DEFAULT_BUDGET_TOKENS = 50_000
"""The budget when the caller names none (the runtime passes its policy's, per model)."""
SUMMARY_PART = "data-context-summary"

_LOG = logging.getLogger("stepline.store")
_INCOMPLETE = frozenset({"streaming", "waiting"})


@dataclass(frozen=True, slots=True)
class HistoryReport:
    """What the next turn carries and what it leaves out."""

    messages: int
    tokens: int
    left_out: list[str] = field(default_factory=list[str])
    """Ids of stored messages the budget left out (oldest first), not covered by a summary."""
    summarized_through: str | None = None
    """The last stored message the carried summary covers (None: no summary carried)."""
    steps_left_out: int = 0
    """The oldest steps of the oldest message carried that did not fit (its newest steps did)."""

    def to_metadata(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {"messages": self.messages, "tokens": self.tokens, "leftOut": len(self.left_out)}
        if self.left_out:
            out["leftOutIds"] = list(self.left_out[-20:])
        if self.summarized_through is not None:
            out["summarizedThrough"] = self.summarized_through
        if self.steps_left_out:
            out["stepsLeftOut"] = self.steps_left_out
        return out


@dataclass(frozen=True, slots=True)
class TurnHistory:
    """The next turn's model messages and what they carry."""

    messages: list[ModelMessage]
    report: HistoryReport


def _marked(messages: list[ModelMessage], message_id: str) -> list[ModelMessage]:
    if not messages:
        return messages
    first = messages[0]
    options: dict[str, Any] = dict(first.provider_options or {})
    options["stepline"] = {**(options.get("stepline") or {}), "messageId": message_id}
    return [first.model_copy(update={"provider_options": options}), *messages[1:]]


def _from_step(parts: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
    """The parts from the `step`-th step on (0-based), summary parts left out."""
    seen = -1
    out: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") == "step-start":
            seen += 1
        if (step == 0 or seen >= step) and part.get("type") != SUMMARY_PART and not is_raised(part):
            out.append(part)
    return [p for i, p in enumerate(out) if not _empty_step(out, i)]


def _empty_step(parts: list[dict[str, Any]], index: int) -> bool:
    """A `step-start` with nothing after it before the next (the step of raised approvals, left out)."""
    if parts[index].get("type") != "step-start":
        return False
    return index + 1 == len(parts) or parts[index + 1].get("type") == "step-start"


def _convert(
    message: MessageRecord,
    reasoning: ReasoningPolicy,
    model_supports_reasoning: bool | None,
    from_step: int = 0,
) -> list[ModelMessage]:
    legacy = LegacyMessage(id=message.message_id, role=message.role, content=message.content)
    if not message.parts or message.status in _INCOMPLETE:
        out = convert_to_model_messages([legacy]) if message.content else []
        return _marked(out, message.message_id)
    parts = _from_step(cast(list[dict[str, Any]], message.parts), from_step)
    wire = {"id": message.message_id, "role": message.role, "parts": parts}
    try:
        validated = validate_ui_messages([wire], keep_extensions=True)
        out = convert_to_model_messages(
            validated,
            ignore_incomplete_tool_calls=True,
            reasoning=reasoning,
            model_supports_reasoning=model_supports_reasoning,
        )
    except (InvalidUIMessageError, MessageConversionError) as error:
        _LOG.warning("message %s falls back to its text: %s", message.message_id, type(error).__name__)
        out = convert_to_model_messages([legacy]) if message.content else []
    return _marked(out, message.message_id)


def _newest_summary(messages: Sequence[MessageRecord]) -> tuple[int, dict[str, Any]] | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role != "assistant":
            continue  # only a run writes summaries (a client's own data part is not one)
        for part in reversed(cast(list[dict[str, Any]], messages[index].parts or [])):
            data: Any = part.get("data")
            if part.get("type") == SUMMARY_PART and isinstance(data, dict):
                marker = cast(dict[str, Any], data)
                if isinstance(marker.get("summary"), str):
                    return index, marker
    return None


def turn_history(
    messages: Sequence[MessageRecord],
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    tokens: MessageTokens | None = None,
    reasoning: ReasoningPolicy = "auto",
    model_supports_reasoning: bool | None = None,
) -> TurnHistory:
    """Model messages for the stored messages (oldest first) within the budget, and the report."""
    counts = tokens or MessageTokens()
    start, prefix, through, trimmed = 0, list[ModelMessage](), None, (-1, 0)
    found = _newest_summary(messages)
    if found is not None:
        index, data = found
        through = data.get("throughMessageId")
        ids = [m.message_id for m in messages]
        start = ids.index(through) + 1 if through in ids else 0
        marker = {k: v for k, v in data.items() if k != "summary"}
        prefix = [summary_message(str(data["summary"]), marker)]
        trimmed = (index - start, int(data.get("keptFromStep") or 0))
    records = list(messages[start:])

    def convert(position: int, from_step: int = 0) -> list[ModelMessage]:
        first = trimmed[1] if position == trimmed[0] else 0
        return _convert(records[position], reasoning, model_supports_reasoning, max(first, from_step))

    budget = budget_tokens - counts.messages(prefix)
    chosen: list[list[ModelMessage]] = []
    spent, taken, steps_left_out = 0, 0, 0
    for position in range(len(records) - 1, -1, -1):
        converted = convert(position)
        size = sum(counts.message(m) for m in converted)
        if chosen and spent + size > budget:
            partial = _newest_steps(records[position], lambda s, p=position: convert(p, s), budget - spent, counts)
            if partial is not None:
                steps_left_out = partial[0] - (trimmed[1] if position == trimmed[0] else 0)
                chosen.append(partial[1])
                taken += 1
            break
        chosen.append(converted)
        spent += size
        taken += 1
    chosen.reverse()
    while not prefix and len(chosen) > 1 and records[len(records) - len(chosen)].role == "assistant":
        chosen.pop(0)  # never open the context with an answer whose question was left out
        taken, steps_left_out = taken - 1, 0
    out = [*prefix, *(m for group in chosen for m in group)]
    report = HistoryReport(
        messages=len(out),
        tokens=counts.messages(out),
        left_out=[m.message_id for m in records[: len(records) - taken]],
        summarized_through=(through or "(start)") if found is not None else None,
        steps_left_out=steps_left_out,
    )
    return TurnHistory(out, report)


def _newest_steps(
    record: MessageRecord, convert: Callable[[int], list[ModelMessage]], budget: int, counts: MessageTokens
) -> tuple[int, list[ModelMessage]] | None:
    """An answer's newest steps within `budget` (and the first step kept), else None."""
    steps = sum(1 for p in cast(list[dict[str, Any]], record.parts or []) if p.get("type") == "step-start")
    if record.role != "assistant" or steps < 2:
        return None
    low, high, best = 1, steps - 1, None
    while low <= high:  # the first step from which the rest fits (fewer steps, fewer tokens)
        middle = (low + high) // 2
        converted = convert(middle)
        if sum(counts.message(m) for m in converted) <= budget:
            best, high = (middle, converted), middle - 1
        else:
            low = middle + 1
    return best


def history_messages(
    messages: Sequence[MessageRecord],
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    reasoning: ReasoningPolicy = "auto",
    model_supports_reasoning: bool | None = None,
) -> list[ModelMessage]:
    """`turn_history`'s messages only."""
    return turn_history(
        messages, budget_tokens=budget_tokens, reasoning=reasoning, model_supports_reasoning=model_supports_reasoning
    ).messages
