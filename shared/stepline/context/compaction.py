"""Compaction: the oldest part of a run's context replaced by a summary a model writes.

`measure` says how many tokens the next call's prompt takes; `compact` (when it is over the
policy's limit) picks the oldest whole groups to summarize (`groups.plan_cut`), has the summarizer
write the summary (folded over several calls when the part is longer than the summarizer's own
window, each long output clipped to its head and tail), and returns the state with the summary in
place of that part. The summary's marker says what it covers: `throughMessageId`, the last stored
message it summarizes whole, and `keptFromStep`, the first step of its run still kept verbatim, so
the next turn rebuilds the same context from the stored messages (`context.history`).

The caller makes it durable: `stepline.runtime.compaction` checkpoints the compacted state, so a
crash during a compaction redoes it and one after it never summarizes the same part again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from ..llm.base import LanguageModel, ModelCallOptions, ToolDefinition
from ..llm.errors import ModelCallError
from ..loop.state import LoopState
from ..protocol._json import dumps
from ..protocol.model_messages import ModelMessage, ModelTextPart, SystemModelMessage, UserModelMessage
from .groups import groups, plan_cut, summary_message, summary_of
from .policy import ContextPolicy
from .tokens import MessageTokens
from .transcript import pieces, transcript_lines

__all__ = ["ITEM_CHARS", "Compaction", "compact", "measure", "message_id_of"]

ITEM_CHARS = 4_000
"""The longest text one transcript entry keeps (its head and tail) when summarizing."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compacted state, the summary and its marker (the `data-context-summary` part's data)."""

    state: LoopState
    summary: str
    marker: dict[str, JsonValue]


def message_id_of(message: ModelMessage) -> str | None:
    """The stored message a history message came from (`providerOptions.stepline.messageId`)."""
    options: dict[str, Any] = getattr(message, "provider_options", None) or {}
    stepline: dict[str, Any] = options.get("stepline") or {}
    value = stepline.get("messageId")
    return value if isinstance(value, str) else None


def measure(tokens: MessageTokens, prompt: Sequence[ModelMessage], tools: Sequence[ToolDefinition] = ()) -> int:
    """Tokens of a request: its messages and the tool definitions it offers."""
    schema = sum(tokens.text(dumps(_tool_wire(t))) for t in tools)
    return tokens.messages(prompt) + schema


def _tool_wire(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "name": tool.name,
        **({"description": d} if (d := getattr(tool, "description", None)) else {}),
        "schema": getattr(tool, "input_schema", None) or getattr(tool, "args", None),
    }


async def compact(
    state: LoopState,
    *,
    policy: ContextPolicy,
    model_id: str,
    summarizer: LanguageModel,
    tokens: MessageTokens,
    fixed_tokens: int,
) -> Compaction | None:
    """The state with its oldest groups summarized, or None when nothing may be summarized.

    `fixed_tokens` is what every request takes besides the conversation (instructions, tools).
    """
    messages = [*state.messages, *state.response_messages]
    counts = [tokens.message(m) for m in messages]
    summary_tokens = min(policy.summary_max_tokens, policy.goal(model_id) // 4)
    goal = policy.goal(model_id) - summary_tokens - fixed_tokens
    cut = plan_cut(counts, groups(messages), goal=max(goal, 0), keep_recent=policy.keep_recent)
    if cut.messages == 0:
        return None
    summarized = messages[: cut.messages]
    previous = summary_of(messages[0])
    summary = await _summarize(summarizer, summarized, policy, tokens, summary_tokens)
    marker: dict[str, JsonValue] = {
        "index": int(previous["index"]) + 1 if previous else 1,
        "runId": state.run_id,
        "summarizedMessages": cut.messages,
        "tokensBefore": sum(counts) + fixed_tokens,
        "tokensAfter": cut.kept_tokens + tokens.text(summary) + fixed_tokens,
        "model": f"{summarizer.provider}:{summarizer.model_id}",
        **_coverage(state, cut.messages, previous),
    }
    message = summary_message(summary, marker)
    base = len(state.messages)
    if cut.messages <= base:
        compacted = state.model_copy(update={"messages": [message, *state.messages[cut.messages :]]})
    else:
        kept = state.response_messages[cut.messages - base :]
        compacted = state.model_copy(update={"messages": [message], "response_messages": kept})
    return Compaction(state=compacted, summary=summary, marker=marker)


def _coverage(state: LoopState, cut: int, previous: dict[str, Any] | None) -> dict[str, JsonValue]:
    """`throughMessageId` and `keptFromStep` of a cut `cut` messages into the state's context."""
    through: Any = previous.get("throughMessageId") if previous else None
    same_run = previous is not None and previous.get("runId") == state.run_id
    first_step = int(previous.get("keptFromStep", 0)) if previous and same_run else 0
    base = len(state.messages)
    marks = [(i, mid) for i, m in enumerate(state.messages) if (mid := message_id_of(m)) is not None]
    for k, (_, message_id) in enumerate(marks):
        next_start = marks[k + 1][0] if k + 1 < len(marks) else base
        if next_start <= cut:
            through = message_id
    kept_from = first_step
    if cut > base:
        remaining = cut - base
        for step in state.steps[first_step:]:
            if remaining <= 0:
                break
            remaining -= len(step.response_messages)
            kept_from += 1
    return {"throughMessageId": through, "keptFromStep": kept_from}


async def _summarize(
    model: LanguageModel,
    messages: Sequence[ModelMessage],
    policy: ContextPolicy,
    tokens: MessageTokens,
    summary_tokens: int,
) -> str:
    """The summary of `messages`, folded over as many calls as the summarizer's window needs."""
    window = policy.window(model.model_id)
    overhead = tokens.text(policy.summary_instructions) + summary_tokens * 2 + 64
    budget = max(int(window.input_budget * policy.threshold) - overhead, 256)
    summary = ""
    for piece in pieces(transcript_lines(messages, item_chars=ITEM_CHARS), budget, tokens.text):
        earlier = f"Earlier summary:\n{summary}\n\n" if summary else ""
        summary = await _call(model, policy, f"{earlier}Transcript:\n{piece}", summary_tokens)
    return summary


async def _call(model: LanguageModel, policy: ContextPolicy, text: str, summary_tokens: int) -> str:
    options = ModelCallOptions(
        prompt=[
            SystemModelMessage(content=policy.summary_instructions),
            UserModelMessage(content=[ModelTextPart(text=text)]),
        ],
        max_output_tokens=summary_tokens,
    )
    out: list[str] = []
    async for part in model.stream(options):
        if part.type == "text-delta":
            out.append(part.delta)
        elif part.type == "error":
            error: Any = part.error
            if isinstance(error, ModelCallError):
                raise error
            raise ModelCallError(f"the summarizer failed: {error}", kind="other", provider=model.provider)
    text_out = "".join(out).strip()
    if not text_out:
        raise ModelCallError("the summarizer returned no text", kind="other", provider=model.provider)
    return text_out
