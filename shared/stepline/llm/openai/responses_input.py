"""Model messages → the `input` items of `POST /v1/responses` (pure).

Mirrors `@ai-sdk/openai` 4.0.46 `src/responses/convert-to-openai-responses-input.ts` for function
tools. Items carry what the API needs to continue a conversation:

    system       -> {"role": "system"|"developer", "content"} (or removed, with a warning)
    user         -> {"role": "user", "content": [input_text | input_image | input_file]}
    assistant    -> {"role": "assistant", "content": [output_text], "id"?}
                    {"type": "reasoning", "id"?, "encrypted_content"?, "summary": [summary_text]}
                    {"type": "function_call", "call_id", "name", "arguments", "id"?}
                    {"type": "compaction", "id", "encrypted_content"}      (custom `openai.compaction`)
                    {"type": "item_reference", "id"} / {"type": "web_search_call", …} for the calls
                    and results of OpenAI's built-in tools (`provider_items`, @ai-sdk/openai 4.0.118)
    tool         -> {"type": "function_call_output", "call_id", "output"}

Reasoning parts that share an OpenAI item id (one per summary part) become one reasoning item
whose `encrypted_content` is the last one given, so a reasoning model gets its chain of thought
back even with `store: false`. A file the model or API cannot take raises
`UnsupportedCapabilityError`; nothing is dropped silently.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from ...protocol.model_messages import (
    AssistantModelMessage,
    ContentOutput,
    DataFileData,
    ModelCustomPart,
    ModelFilePart,
    ModelMessage,
    ModelReasoningFilePart,
    ModelReasoningPart,
    ModelTextPart,
    ProviderOptions,
    ReferenceFileData,
    SystemModelMessage,
    TextFileData,
    ToolApprovalRequestPart,
    ToolCallPart,
    ToolModelMessage,
    ToolResultOutput,
    ToolResultPart,
    UrlFileData,
    UserModelMessage,
)
from .options import CallWarning, other_warning
from .prompt import (
    FileTarget,
    file_base64,
    file_reference_id,
    openai_options_of,
    resolve_media_type,
    string_option,
    tool_call_arguments,
    tool_output_text,
)
from .provider_items import provider_call_item, provider_result_items
from .responses_context import ResponsesInputContext

__all__ = ["convert_responses_input"]

Item = dict[str, Any]


def convert_responses_input(
    prompt: list[ModelMessage], context: ResponsesInputContext
) -> tuple[list[Item], list[CallWarning]]:
    """The `input` list for `prompt`, and warnings about what was left out."""
    items: list[Item] = []
    warnings: list[CallWarning] = []
    for message in prompt:
        match message:
            case SystemModelMessage():
                items.extend(_system_items(message, context, warnings))
            case UserModelMessage():
                items.append(_user_item(message, context))
            case AssistantModelMessage():
                items.extend(_assistant_items(message, context, warnings))
            case ToolModelMessage():
                items.extend(_tool_items(message, context, warnings))
    return items, warnings


def _system_items(
    message: SystemModelMessage, context: ResponsesInputContext, warnings: list[CallWarning]
) -> list[Item]:
    if context.system_message_mode == "remove":
        warnings.append(other_warning("system messages are removed for this model"))
        return []
    return [{"role": context.system_message_mode, "content": message.content}]


# --- user -------------------------------------------------------------------------------------


def _user_item(message: UserModelMessage, context: ResponsesInputContext) -> Item:
    content: list[Item] = []
    for index, part in enumerate(message.content):
        if isinstance(part, ModelTextPart):
            content.append({"type": "input_text", "text": part.text})
        else:
            content.append(_file_input(part, index, context))
    return {"role": "user", "content": content}


def _file_input(part: ModelFilePart, index: int, context: ResponsesInputContext) -> Item:
    media_type = resolve_media_type(part)
    target = context.target
    if media_type.startswith("image/") or media_type == "image":
        if not target.capabilities.accepts(media_type):
            raise target.unsupported(f"{media_type} images")
        return _image_input(part, media_type, target)
    if media_type == "application/pdf":
        if not target.capabilities.accepts(media_type):
            raise target.unsupported("PDF files")
    elif not context.pass_through_unsupported_files:
        hint = "only images and PDFs are sent unless providerOptions.openai.passThroughUnsupportedFiles is true"
        raise target.unsupported(f"{media_type} files", hint)
    default_name = f"part-{index}.pdf" if media_type == "application/pdf" else f"part-{index}"
    return _generic_file_input(part, media_type, default_name, target)


def _image_input(part: ModelFilePart, media_type: str, target: FileTarget) -> Item:
    item: Item = {"type": "input_image"}
    match part.data:
        case UrlFileData(url=url):
            item["image_url"] = url
        case ReferenceFileData():
            item["file_id"] = file_reference_id(part.data, target)
        case DataFileData() | TextFileData():
            item["image_url"] = f"data:{media_type};base64,{file_base64(part.data)}"
    detail = string_option(openai_options_of(part.provider_options, target.provider), "imageDetail")
    if detail is not None:
        item["detail"] = detail
    return item


def _generic_file_input(part: ModelFilePart, media_type: str, default_name: str, target: FileTarget) -> Item:
    match part.data:
        case UrlFileData(url=url):
            return {"type": "input_file", "file_url": url}
        case ReferenceFileData():
            return {"type": "input_file", "file_id": file_reference_id(part.data, target)}
        case DataFileData() | TextFileData():
            data_url = f"data:{media_type};base64,{file_base64(part.data)}"
            return {"type": "input_file", "filename": part.filename or default_name, "file_data": data_url}


# --- assistant --------------------------------------------------------------------------------


def _assistant_items(
    message: AssistantModelMessage, context: ResponsesInputContext, warnings: list[CallWarning]
) -> list[Item]:
    items: list[Item] = []
    reasoning_items: dict[str, Item] = {}
    for part in message.content:
        item: Item | None = None
        match part:
            case ModelTextPart():
                item = _assistant_text(part, context)
            case ToolCallPart():
                item = _function_call(part, context, warnings)
            case ModelReasoningPart():
                item = _reasoning(part, context, reasoning_items, warnings)
            case ModelCustomPart():
                item = _custom(part, context, warnings)
            case ToolResultPart():
                items.extend(provider_result_items(part, context, warnings))
            case ModelFilePart() | ModelReasoningFilePart():
                warnings.append(other_warning("assistant file parts are not sent to the OpenAI Responses API"))
            case ToolApprovalRequestPart():
                pass  # approvals are decided by Stepline's loop; OpenAI never saw the request
        if item is not None:
            items.append(item)
    return items


def _item_id(options: ProviderOptions | None, context: ResponsesInputContext) -> str | None:
    return string_option(openai_options_of(options, context.provider), "itemId")


def _assistant_text(part: ModelTextPart, context: ResponsesInputContext) -> Item | None:
    item_id = _item_id(part.provider_options, context)
    if context.has_conversation and item_id is not None:
        return None
    item: Item = {"role": "assistant", "content": [{"type": "output_text", "text": part.text}]}
    if item_id is not None:
        item["id"] = item_id
    return item


def _function_call(part: ToolCallPart, context: ResponsesInputContext, warnings: list[CallWarning]) -> Item | None:
    item_id = _item_id(part.provider_options, context)
    if part.provider_executed:
        return provider_call_item(item_id, context)
    if context.has_conversation and item_id is not None:
        return None
    item: Item = {
        "type": "function_call",
        "call_id": part.tool_call_id,
        "name": part.tool_name,
        "arguments": tool_call_arguments(part),
    }
    if item_id is not None:
        item["id"] = item_id
    return item


def _reasoning(
    part: ModelReasoningPart,
    context: ResponsesInputContext,
    reasoning_items: dict[str, Item],
    warnings: list[CallWarning],
) -> Item | None:
    options = openai_options_of(part.provider_options, context.provider)
    item_id = string_option(options, "itemId")
    encrypted = string_option(options, "reasoningEncryptedContent")
    if item_id is not None and (context.has_conversation or context.has_previous_response_id):
        return None
    if item_id is None and encrypted is None:
        warnings.append(other_warning("reasoning without an OpenAI item id or encrypted content was not sent"))
        return None
    summary: list[Item] = [{"type": "summary_text", "text": part.text}] if part.text else []
    existing = reasoning_items.get(item_id) if item_id is not None else None
    if existing is not None:
        # A later summary part of the same reasoning item: extend it; the last encrypted content wins.
        existing["summary"].extend(summary)
        if encrypted is not None:
            existing["encrypted_content"] = encrypted
        return None
    item: Item = {"type": "reasoning", "summary": summary}
    if item_id is not None:
        item["id"] = item_id
        reasoning_items[item_id] = item
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def _custom(part: ModelCustomPart, context: ResponsesInputContext, warnings: list[CallWarning]) -> Item | None:
    options = openai_options_of(part.provider_options, context.provider)
    item_id = string_option(options, "itemId")
    encrypted = string_option(options, "encryptedContent")
    if part.kind != "openai.compaction" or item_id is None or encrypted is None:
        warnings.append(other_warning(f"custom part of kind {part.kind!r} was not sent"))
        return None
    if context.has_conversation:
        return None
    return {"type": "compaction", "id": item_id, "encrypted_content": encrypted}


# --- tool results -----------------------------------------------------------------------------


def _tool_items(message: ToolModelMessage, context: ResponsesInputContext, warnings: list[CallWarning]) -> list[Item]:
    items: list[Item] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            output = _function_output(part.output, context, warnings)
            items.append({"type": "function_call_output", "call_id": part.tool_call_id, "output": output})
    return items


def _function_output(
    output: ToolResultOutput, context: ResponsesInputContext, warnings: list[CallWarning]
) -> str | list[Item]:
    if not isinstance(output, ContentOutput):
        return tool_output_text(output)
    items: list[Item] = []
    for index, entry in enumerate(output.value):
        item = _content_item(entry, index, context)
        if item is None:
            warnings.append(other_warning(f"tool result content item of type {entry.get('type')!r} was not sent"))
        else:
            items.append(item)
    return items


def _content_item(entry: dict[str, JsonValue], index: int, context: ResponsesInputContext) -> Item | None:
    kind = entry.get("type")
    if kind == "text":
        text = entry.get("text")
        return {"type": "input_text", "text": text} if isinstance(text, str) else None
    if kind != "file":
        return None
    try:
        part = ModelFilePart.model_validate(entry)
    except ValueError:
        return None
    return _file_input(part, index, context)
