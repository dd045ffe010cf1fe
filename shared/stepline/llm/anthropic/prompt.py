"""ModelMessage list → the `system` and `messages` of an Anthropic Messages request.

After `convertToAnthropicPrompt` of `@ai-sdk/anthropic` (`src/convert-to-anthropic-prompt.ts`):

- system messages → `system`: a plain string for one block without cache control, otherwise an
  array of text blocks, each keeping its own `cache_control`;
- user and tool messages in a row → one `user` message (tool results first, as they come),
  assistant messages in a row → one `assistant` message, as the API wants strict alternation;
- reasoning → `thinking` with its signature, or `redacted_thinking` with its data, in place and
  unchanged (a tool-use turn that came with thinking must be sent back starting with it);
  reasoning without either is dropped with a warning;
- provider-executed calls and results → `server_tool_use` and `*_tool_result` blocks in the
  API's own spelling (`server_blocks`); a text's citations (its provider metadata) go back with it;
- files → `image` or `document` blocks (`content`); a media type the model cannot
  take raises `UnsupportedCapabilityError`, never a silent drop;
- `cacheControl` in a part's (or, for its last part, a message's) `providerOptions.anthropic`
  → `cache_control` on that block, at most four breakpoints a request as the API allows.

Pure: pydantic, the standard library and `stepline` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from pydantic import JsonValue

from ...protocol.model_messages import (
    AssistantContentPart,
    AssistantModelMessage,
    ContentOutput,
    ModelCustomPart,
    ModelFilePart,
    ModelMessage,
    ModelReasoningFilePart,
    ModelReasoningPart,
    ModelTextPart,
    ProviderOptions,
    SystemModelMessage,
    ToolApprovalRequestPart,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UserModelMessage,
)
from .content import Block, PromptContext, file_block, tool_result_block
from .options import parse_cache_control
from .server_blocks import server_tool_result_block, server_tool_use_block

__all__ = ["AnthropicPrompt", "convert_prompt"]


@dataclass(frozen=True, slots=True)
class AnthropicPrompt:
    """The `system` and `messages` request fields."""

    system: str | list[Block] | None
    messages: list[Block]


def convert_prompt(prompt: list[ModelMessage], context: PromptContext) -> AnthropicPrompt:
    """Convert a prompt; raises `UnsupportedCapabilityError` for a file the model cannot take."""
    system: list[Block] = []
    messages: list[Block] = []
    last = len(prompt) - 1
    for index, message in enumerate(prompt):
        where = f"prompt.{index}"
        match message:
            case SystemModelMessage():
                if messages:
                    context.warn(f"{where}: a system message after the conversation began was moved into `system`")
                system.append(_system_block(message, context, where))
            case UserModelMessage():
                _append(messages, "user", _user_blocks(message, context, where))
            case ToolModelMessage():
                _append(messages, "user", _tool_blocks(message, context, where))
            case AssistantModelMessage():
                _append(messages, "assistant", _assistant_blocks(message, context, where, is_last=index == last))
            case _:
                assert_never(message)
    return AnthropicPrompt(system=_system_value(system), messages=messages)


def _append(messages: list[Block], role: str, blocks: list[Block]) -> None:
    """Merge into the previous message when it has the same role (the API wants alternation)."""
    if not blocks:
        return
    previous = messages[-1] if messages else None
    if previous is not None and previous["role"] == role and isinstance(previous["content"], list):
        previous["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": list[JsonValue](blocks)})


def _with_cache(block: Block, cache_control: JsonValue) -> Block:
    if cache_control is not None:
        block["cache_control"] = cache_control
    return block


def _system_block(message: SystemModelMessage, context: PromptContext, where: str) -> Block:
    cache_control = context.cache_control(message.provider_options, where)
    return _with_cache({"type": "text", "text": message.content}, cache_control)


def _system_value(blocks: list[Block]) -> str | list[Block] | None:
    if not blocks:
        return None
    if len(blocks) == 1 and "cache_control" not in blocks[0]:
        text = blocks[0]["text"]
        return text if isinstance(text, str) else None
    return blocks


def _part_cache(
    part_options: ProviderOptions | None,
    message_options: ProviderOptions | None,
    context: PromptContext,
    where: str,
    *,
    is_last: bool,
) -> JsonValue:
    """A part's own cache control; for the last part of a message, the message's as a fallback."""
    own = context.cache_control(part_options, where)
    if own is not None or not is_last:
        return own
    return context.cache_control(message_options, where.rsplit(".content.", 1)[0])


# --- user -------------------------------------------------------------------------------------


def _user_blocks(message: UserModelMessage, context: PromptContext, where: str) -> list[Block]:
    blocks: list[Block] = []
    last = len(message.content) - 1
    for index, part in enumerate(message.content):
        part_where = f"{where}.content.{index}"
        cache = _part_cache(part.provider_options, message.provider_options, context, part_where, is_last=index == last)
        match part:
            case ModelTextPart():
                blocks.append(_with_cache({"type": "text", "text": part.text}, cache))
            case ModelFilePart():
                blocks.append(_with_cache(file_block(part, context, part_where), cache))
            case _:
                assert_never(part)
    return blocks


# --- tool results -------------------------------------------------------------------------------


def _tool_blocks(message: ToolModelMessage, context: PromptContext, where: str) -> list[Block]:
    blocks: list[Block] = []
    last = len(message.content) - 1
    for index, part in enumerate(message.content):
        if not isinstance(part, ToolResultPart):
            continue  # approval decisions were settled by the loop; the API has no block for them
        part_where = f"{where}.content.{index}"
        # The part's own cache control first, then its output's, then (last part only) the message's.
        cache = context.cache_control(part.provider_options, part_where)
        if cache is None and not isinstance(part.output, ContentOutput):
            cache = context.cache_control(part.output.provider_options, f"{part_where}.output")
        if cache is None and index == last:
            cache = context.cache_control(message.provider_options, where)
        blocks.append(_with_cache(tool_result_block(part, context), cache))
    return blocks


# --- assistant ----------------------------------------------------------------------------------


def _assistant_blocks(
    message: AssistantModelMessage, context: PromptContext, where: str, *, is_last: bool
) -> list[Block]:
    blocks: list[Block] = []
    last = len(message.content) - 1
    for index, part in enumerate(message.content):
        part_where = f"{where}.content.{index}"
        if isinstance(part, ModelReasoningPart):
            blocks.extend(_reasoning_blocks(part, context, part_where))
            continue
        cache = _part_cache(part_options(part), message.provider_options, context, part_where, is_last=index == last)
        block = _assistant_block(part, context, part_where, trim=is_last and index == last)
        if block is not None:
            blocks.append(_with_cache(block, cache))
    return blocks


def part_options(part: AssistantContentPart) -> ProviderOptions | None:
    return None if isinstance(part, ToolApprovalRequestPart) else part.provider_options


def _assistant_block(part: AssistantContentPart, context: PromptContext, where: str, *, trim: bool) -> Block | None:
    match part:
        case ModelTextPart():
            # A prefilled last assistant turn may not end in whitespace; empty text blocks are refused.
            text = part.text.rstrip() if trim else part.text
            if not text:
                return None
            citations = ((part.provider_options or {}).get("anthropic") or {}).get("citations")
            return {"type": "text", "text": text, **({"citations": citations} if citations is not None else {})}
        case ToolCallPart():
            if part.provider_executed:
                return server_tool_use_block(part, _tool_input(part.input))
            return {
                "type": "tool_use",
                "id": part.tool_call_id,
                "name": part.tool_name,
                "input": _tool_input(part.input),
            }
        case ToolResultPart():
            return server_tool_result_block(part, context, where)
        case ToolApprovalRequestPart():
            return None  # the loop's bookkeeping: the API has no block for it
        case ModelFilePart() | ModelReasoningFilePart() | ModelCustomPart() | ModelReasoningPart():
            context.warn(f"{where}: an assistant {part.type} part cannot be sent to Anthropic and was left out")
            return None
        case _:
            assert_never(part)


def _tool_input(value: JsonValue) -> JsonValue:
    """Anthropic wants an object; a missing input is `{}`, anything else is wrapped (as the AI SDK does)."""
    if value is None:
        return {}
    return value if isinstance(value, dict) else {"rawInvalidInput": value}


def _reasoning_blocks(part: ModelReasoningPart, context: PromptContext, where: str) -> list[Block]:
    metadata = (part.provider_options or {}).get("anthropic") or {}
    signature, redacted = metadata.get("signature"), metadata.get("redactedData")
    if not context.send_reasoning:
        context.warn(f"{where}: reasoning was not sent (sendReasoning is false)")
        return []
    if parse_cache_control(part.provider_options, where) is not None:
        context.warn(f"{where}: thinking blocks cannot carry cache control; it was left out")
    if isinstance(signature, str) and signature:
        return [{"type": "thinking", "thinking": part.text, "signature": signature}]
    if isinstance(redacted, str) and redacted:
        return [{"type": "redacted_thinking", "data": redacted}]
    context.warn(f"{where}: reasoning without an Anthropic signature was not sent")
    return []
