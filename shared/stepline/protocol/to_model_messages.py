"""UIMessage list → ModelMessage list: the AI SDK's `convertToModelMessages`, plus Stepline's policies.

With default arguments `convert_to_model_messages` gives what `convertToModelMessages` of
`ai@7.0.173` (`packages/ai/src/ui/convert-to-model-messages.ts`) gives, to the JSON key:

- system: the text parts joined into one string; their merged `providerMetadata` → `providerOptions`.
- user: text and file parts (a file by URL, or by `providerReference`); data parts only through
  `convert_data_part`; every other part dropped.
- assistant: split into steps at each `step-start`; each step becomes an assistant message (text,
  reasoning, files, custom parts, tool calls, approval requests, provider-executed results) and
  then a tool message (approval responses and tool results). A `steering-message` part ends the
  step and becomes a user message. Source parts are dropped.
- Tool parts still `approval-requested` before the last user message are dropped (a later user
  message supersedes them); `ignore_incomplete_tool_calls` drops every unfinished tool part.
- A file URL that is not absolute raises `MessageConversionError` (the SDK throws
  `TypeError: Invalid URL`); URLs are normalised as `new URL(url).href` does.

Beyond the SDK (for the next turn's history, `stepline.store.history`): a reasoning policy, an
unsupported-part policy, an empty-message policy, and `LegacyMessage` for stored messages that
predate parts (their text content is all that is converted). Parts skipped silently by the SDK
(other than source citations) are summarised in one warning on the `stepline.protocol` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Protocol, assert_never

from pydantic import JsonValue

from stepline.errors import MessageConversionError

from ._base import WireModel
from ._model_message_blocks import (
    BlockPart,
    Conversion,
    DataPartConverter,
    ResolvedReasoning,
    assistant_step,
    user_content,
)
from .model_messages import (
    AssistantModelMessage,
    ModelMessage,
    ModelTextPart,
    SystemModelMessage,
    ToolResultOutput,
    UserContentPart,
    UserModelMessage,
)
from .parts import (
    DataPart,
    DynamicToolPart,
    FilePart,
    SourceDocumentPart,
    SourceUrlPart,
    SteeringMessagePart,
    StepStartPart,
    TextPart,
    ToolPart,
    UIMessage,
    UIMessagePart,
)

__all__ = [
    "EmptyMessagePolicy",
    "LegacyMessage",
    "ReasoningPolicy",
    "ToolWithModelOutput",
    "UnsupportedPartPolicy",
    "convert_to_model_messages",
]

_LOG = logging.getLogger("stepline.protocol")

ReasoningPolicy = Literal["auto", "preserve", "drop", "text", "strict"]
"""What happens to `reasoning` and `reasoning-file` parts of assistant messages.

- `"auto"`: `"preserve"` when the model takes reasoning history or that is unknown, else drop (with a warning).
- `"preserve"`: the SDK's behaviour: reasoning parts with their provider metadata (signatures).
- `"drop"`: leave reasoning out.
- `"text"`: reasoning text becomes a plain text part (no provider metadata); reasoning files are dropped.
- `"strict"`: as `"preserve"`, but a model that does not take reasoning makes any reasoning part an error.
"""

UnsupportedPartPolicy = Literal["skip", "fail"]
"""A part the target message cannot hold (a source in any message; reasoning, tool or other
non-text parts in a user or system message; a data part without `convert_data_part`):
`"skip"` drops it as the SDK does, `"fail"` raises `MessageConversionError`."""

EmptyMessagePolicy = Literal["keep", "skip", "fail"]
"""A message with nothing for the model. `"keep"` is the SDK's behaviour: a user message with no
convertible part is sent with empty content, a system message with no text as `""`, and an
assistant step with no content is left out. `"skip"` also leaves out empty user and system messages.
`"fail"` raises `MessageConversionError` when a UI message would give an empty model message or none."""


class LegacyMessage(WireModel):
    """A stored message from before parts existed; its text `content` is all that is converted."""

    model_config: ClassVar[Any] = {"extra": "ignore"}

    id: str | None = None
    role: Literal["system", "user", "assistant"]
    content: str


class ToolWithModelOutput(Protocol):
    """A tool that chooses how its output is shown to the model (the SDK's `toModelOutput`).

    Entries of `tools` without a `to_model_output` method get the default (string output → text,
    anything else → JSON). The method may return a `ToolResultOutput` model or its wire dict.
    """

    def to_model_output(
        self, tool_call_id: str, input: JsonValue, output: JsonValue
    ) -> ToolResultOutput | Mapping[str, Any]: ...


def convert_to_model_messages(
    messages: Sequence[UIMessage | LegacyMessage],
    *,
    ignore_incomplete_tool_calls: bool = False,
    convert_data_part: DataPartConverter | None = None,
    tools: Mapping[str, object] | None = None,
    reasoning: ReasoningPolicy = "auto",
    model_supports_reasoning: bool | None = None,
    unsupported_parts: UnsupportedPartPolicy = "skip",
    empty_messages: EmptyMessagePolicy = "keep",
) -> list[ModelMessage]:
    """Convert UI messages (and legacy text-only messages) into the model messages of a prompt.

    Args:
        messages: The conversation, oldest first.
        ignore_incomplete_tool_calls: Drop tool parts that have neither a result nor an approval
            decision (the SDK's `ignoreIncompleteToolCalls`).
        convert_data_part: Turns a `data-*` part into a text or file part, or `None` to drop it.
            Without it data parts are unsupported parts.
        tools: Tool name → tool; a tool with `to_model_output` (see `ToolWithModelOutput`)
            decides how its successful output is shown to the model.
        reasoning: The reasoning policy (see `ReasoningPolicy`).
        model_supports_reasoning: Whether the target model takes reasoning history; `None` when
            unknown (then `"auto"` and `"strict"` preserve reasoning).
        unsupported_parts: The unsupported-part policy (see `UnsupportedPartPolicy`).
        empty_messages: The empty-message policy (see `EmptyMessagePolicy`).

    Raises:
        MessageConversionError: A file URL that is not absolute, or a policy set to fail; the
            message names the position, for example `messages[2].parts[1]`.
    """
    conversion = Conversion(
        tools=tools,
        convert_data_part=convert_data_part,
        reasoning=_resolve_reasoning(reasoning, model_supports_reasoning),
        fail_on_unsupported=unsupported_parts == "fail",
    )
    last_user = max((index for index, message in enumerate(messages) if message.role == "user"), default=-1)
    result: list[ModelMessage] = []
    for index, message in enumerate(messages):
        if isinstance(message, LegacyMessage):
            converted = _legacy_message(message)
        else:
            parts = _kept_parts(index, message, index >= last_user, ignore_incomplete_tool_calls)
            converted = _ui_message(message.role, parts, conversion)
        result.extend(_apply_empty_policy(index, converted, empty_messages))
    _warn_skipped(conversion.skipped)
    return result


def _warn_skipped(skipped: list[str]) -> None:
    if skipped:
        shown = ", ".join(skipped[:5]) + (", ..." if len(skipped) > 5 else "")
        _LOG.warning("model message conversion skipped %d part(s): %s", len(skipped), shown)


def _resolve_reasoning(policy: ReasoningPolicy, supported: bool | None) -> ResolvedReasoning:
    match policy:
        case "auto":
            return "auto-drop" if supported is False else "preserve"
        case "strict":
            return "strict" if supported is False else "preserve"
        case "preserve" | "drop" | "text":
            return policy


def _kept_parts(
    index: int, message: UIMessage, at_or_after_last_user: bool, ignore_incomplete: bool
) -> list[tuple[str, UIMessagePart]]:
    """The parts to convert, each with its position (`messages[i].parts[j]`) in the input."""
    return [
        (f"messages[{index}].parts[{part_index}]", part)
        for part_index, part in enumerate(message.parts)
        if _keeps(part, at_or_after_last_user, ignore_incomplete)
    ]


def _keeps(part: UIMessagePart, at_or_after_last_user: bool, ignore_incomplete: bool) -> bool:
    if not isinstance(part, ToolPart | DynamicToolPart):
        return True
    if part.state == "approval-requested" and not at_or_after_last_user:
        return False  # a later user message supersedes an unanswered approval request
    if not ignore_incomplete:
        return True
    if part.state == "output-available":
        return part.preliminary is not True
    return part.state in ("approval-responded", "output-error", "output-denied")


def _ui_message(
    role: Literal["system", "user", "assistant"], parts: list[tuple[str, UIMessagePart]], conversion: Conversion
) -> list[ModelMessage]:
    match role:
        case "system":
            return [_system_message(parts, conversion)]
        case "user":
            return [UserModelMessage(content=_user_content(parts, conversion))]
        case "assistant":
            return _assistant_messages(parts, conversion)
        case _:  # pragma: no cover - the types allow no other role ("tool" cannot be a UI message)
            assert_never(role)


def _system_message(parts: list[tuple[str, UIMessagePart]], conversion: Conversion) -> SystemModelMessage:
    texts: list[str] = []
    options: dict[str, dict[str, JsonValue]] = {}
    for where, part in parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
            options.update(part.provider_metadata or {})
        else:
            conversion.unsupported(where, part.type)
    if options:
        return SystemModelMessage(content="".join(texts), provider_options=options)
    return SystemModelMessage(content="".join(texts))


def _user_content(parts: list[tuple[str, UIMessagePart]], conversion: Conversion) -> list[UserContentPart]:
    content: list[UserContentPart] = []
    for where, part in parts:
        if isinstance(part, TextPart | FilePart):
            content.append(user_content(part, where))
        elif isinstance(part, DataPart):
            converted = conversion.data(part, where)
            if converted is not None:
                content.append(converted)
        else:
            conversion.unsupported(where, part.type)
    return content


def _assistant_messages(parts: list[tuple[str, UIMessagePart]], conversion: Conversion) -> list[ModelMessage]:
    messages: list[ModelMessage] = []
    block: list[tuple[str, BlockPart]] = []
    for where, part in parts:
        if isinstance(part, StepStartPart | SteeringMessagePart):
            messages.extend(assistant_step(block, conversion))
            block = []
            if isinstance(part, SteeringMessagePart):
                # Steering text the user added between two steps of the run.
                content = [user_content(item, f"{where}.parts[{i}]") for i, item in enumerate(part.parts)]
                messages.append(UserModelMessage(content=content))
        elif isinstance(part, SourceUrlPart | SourceDocumentPart):
            conversion.unsupported(where, part.type)
        else:
            block.append((where, part))
    messages.extend(assistant_step(block, conversion))
    return messages


def _legacy_message(message: LegacyMessage) -> list[ModelMessage]:
    text = message.content
    match message.role:
        case "system":
            return [SystemModelMessage(content=text)]
        case "user":
            return [UserModelMessage(content=[ModelTextPart(text=text)] if text else [])]
        case "assistant":
            return [AssistantModelMessage(content=[ModelTextPart(text=text)])] if text else []


def _apply_empty_policy(index: int, converted: list[ModelMessage], policy: EmptyMessagePolicy) -> list[ModelMessage]:
    if policy == "keep":
        return converted
    kept = [message for message in converted if message.content]
    if policy == "fail" and (not kept or len(kept) < len(converted)):
        raise MessageConversionError(f"messages[{index}]: the message has no content a model can take")
    return kept
