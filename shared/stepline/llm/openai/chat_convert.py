"""ModelCallOptions → the keyword arguments of `AsyncOpenAI().chat.completions.create` (pure).

Mirrors `@ai-sdk/openai` 4.0.46 `src/chat/openai-chat-language-model.ts` (`getArgs`),
`convert-to-openai-chat-messages.ts` and `openai-chat-prepare-tools.ts`. providerOptions keys:

    logitBias -> logit_bias          logprobs -> logprobs + top_logprobs (true = 0, n = n)
    parallelToolCalls, user, maxCompletionTokens, store, metadata, prediction, serviceTier,
    promptCacheKey, promptCacheOptions, promptCacheRetention, safetyIdentifier
                                    -> the snake_case field of the same name
    reasoningEffort -> reasoning_effort     textVerbosity -> verbosity
    strictJsonSchema -> response_format.json_schema.strict
    systemMessageMode, forceReasoning       -> how messages and sampling settings are converted

Chat Completions takes images only (`image_url`); any other file raises
`UnsupportedCapabilityError`. Earlier reasoning cannot be sent back on this API and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...protocol.model_messages import (
    AssistantModelMessage,
    DataFileData,
    ModelFilePart,
    ModelMessage,
    ModelTextPart,
    ReferenceFileData,
    SystemModelMessage,
    TextFileData,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UrlFileData,
    UserModelMessage,
)
from ..base import FunctionTool, ModelCallOptions, ModelCapabilities, ResponseFormat, ToolChoice
from ..errors import function_tools_only
from .capabilities import OpenAIModelFamily, chat_capabilities, model_family, service_tier_warning
from .options import (
    CallWarning,
    OpenAIChatOptions,
    SystemMessageMode,
    other_warning,
    parse_chat_options,
    unsupported_warning,
)
from .prompt import (
    FileTarget,
    file_base64,
    openai_options_of,
    resolve_media_type,
    string_option,
    tool_call_arguments,
    tool_result_text,
)

__all__ = ["API_LABEL", "ChatRequest", "build_chat_request", "convert_chat_messages"]

API_LABEL = "OpenAI Chat Completions"

Body = dict[str, Any]

_DIRECT_FIELDS: tuple[tuple[str, str], ...] = (
    ("logit_bias", "logit_bias"),
    ("user", "user"),
    ("parallel_tool_calls", "parallel_tool_calls"),
    ("max_completion_tokens", "max_completion_tokens"),
    ("store", "store"),
    ("metadata", "metadata"),
    ("prediction", "prediction"),
    ("service_tier", "service_tier"),
    ("text_verbosity", "verbosity"),
    ("prompt_cache_key", "prompt_cache_key"),
    ("prompt_cache_retention", "prompt_cache_retention"),
    ("safety_identifier", "safety_identifier"),
)

# Settings reasoning models reject, and the warning feature names the AI SDK uses for them.
_REASONING_REJECTS: tuple[tuple[str, str], ...] = (
    ("frequency_penalty", "frequencyPenalty"),
    ("presence_penalty", "presencePenalty"),
    ("logit_bias", "logitBias"),
    ("top_logprobs", "topLogprobs"),
)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """The request body (keyword arguments for the SDK, JSON-ready) and the call warnings."""

    body: Body
    warnings: list[CallWarning]
    options: OpenAIChatOptions


def build_chat_request(
    model_id: str,
    options: ModelCallOptions,
    *,
    provider: str = "openai",
    capabilities: ModelCapabilities | None = None,
) -> ChatRequest:
    """Convert one call; raises `UnsupportedCapabilityError` for a file the model cannot take."""
    settings, warnings = parse_chat_options(options.provider_options, provider=provider)
    family = model_family(model_id)
    is_reasoning = settings.force_reasoning if settings.force_reasoning is not None else family.is_reasoning_model
    target = FileTarget(
        provider=provider,
        model_id=model_id,
        api_label=API_LABEL,
        capabilities=capabilities or chat_capabilities(model_id),
    )
    mode: SystemMessageMode = settings.system_message_mode or ("developer" if is_reasoning else "system")
    messages, message_warnings = convert_chat_messages(options.prompt, target=target, system_message_mode=mode)
    warnings.extend(message_warnings)
    effort = _reasoning_effort(settings, options.reasoning, is_reasoning=is_reasoning, warnings=warnings)
    body: Body = {"model": model_id, "messages": messages, **_provider_fields(settings)}
    body.update(_sampling(options))
    body["reasoning_effort"] = effort
    if is_reasoning:
        _strip_for_reasoning(body, effort=effort, family=family, warnings=warnings)
    if options.top_k is not None:
        warnings.append(unsupported_warning("topK"))
    tier_warning = service_tier_warning(settings.service_tier, family)
    if tier_warning is not None:
        warnings.append(tier_warning)
        body["service_tier"] = None
    body["response_format"] = _response_format(options.response_format, strict=settings.strict_json_schema)
    tools = function_tools_only(options.tools, provider=provider, model_id=model_id, api="Chat Completions")
    body.update(_tool_fields(tools, options.tool_choice))
    body["stream_options"] = {"include_usage": True}
    return ChatRequest(
        body={key: value for key, value in body.items() if value is not None}, warnings=warnings, options=settings
    )


def _reasoning_effort(
    settings: OpenAIChatOptions, call_reasoning: str | None, *, is_reasoning: bool, warnings: list[CallWarning]
) -> str | None:
    if settings.reasoning_effort is not None:
        return settings.reasoning_effort
    if call_reasoning in (None, "provider-default"):
        return None
    if not is_reasoning:
        warnings.append(unsupported_warning("reasoning", "reasoning is not supported for non-reasoning models"))
        return None
    return call_reasoning


def _provider_fields(settings: OpenAIChatOptions) -> Body:
    body: Body = {field: getattr(settings, attribute) for attribute, field in _DIRECT_FIELDS}
    if settings.prompt_cache_options is not None:
        body["prompt_cache_options"] = settings.prompt_cache_options.model_dump(exclude_none=True)
    logprobs = settings.logprobs
    if logprobs is not None and logprobs is not False:
        body["logprobs"] = True
        body["top_logprobs"] = 0 if logprobs is True else logprobs
    return body


def _sampling(options: ModelCallOptions) -> Body:
    return {
        "max_tokens": options.max_output_tokens,
        "temperature": options.temperature,
        "top_p": options.top_p,
        "frequency_penalty": options.frequency_penalty,
        "presence_penalty": options.presence_penalty,
        "stop": options.stop_sequences,
        "seed": options.seed,
    }


def _strip_for_reasoning(
    body: Body, *, effort: str | None, family: OpenAIModelFamily, warnings: list[CallWarning]
) -> None:
    # GPT-5.1+ accept temperature, topP and logprobs again when reasoning is switched off.
    if effort != "none" or not family.supports_non_reasoning_parameters:
        for key, feature in (("temperature", "temperature"), ("top_p", "topP"), ("logprobs", "logprobs")):
            if body.get(key) is not None:
                body[key] = None
                warnings.append(unsupported_warning(feature, f"{feature} is not supported for reasoning models"))
    for key, feature in _REASONING_REJECTS:
        if body.get(key) is not None:
            body[key] = None
            warnings.append(unsupported_warning(feature, f"{feature} is not supported for reasoning models"))
    # Reasoning models count hidden reasoning tokens too: they take max_completion_tokens.
    if body.get("max_tokens") is not None:
        if body.get("max_completion_tokens") is None:
            body["max_completion_tokens"] = body["max_tokens"]
        body["max_tokens"] = None


def _response_format(response_format: ResponseFormat | None, *, strict: bool | None) -> Body | None:
    if response_format is None or response_format.type != "json":
        return None
    if response_format.schema is None:
        return {"type": "json_object"}
    json_schema: Body = {
        "schema": response_format.schema,
        "strict": True if strict is None else strict,
        "name": response_format.name or "response",
    }
    if response_format.description is not None:
        json_schema["description"] = response_format.description
    return {"type": "json_schema", "json_schema": json_schema}


def _tool_fields(tools: list[FunctionTool], tool_choice: ToolChoice | None) -> Body:
    if not tools:
        return {}
    function_tools = [{"type": "function", "function": _function(tool)} for tool in tools]
    choice: str | Body | None = tool_choice if tool_choice is None or isinstance(tool_choice, str) else None
    if isinstance(tool_choice, dict):
        choice = {"type": "function", "function": {"name": tool_choice["toolName"]}}
    return {"tools": function_tools, "tool_choice": choice}


def _function(tool: FunctionTool) -> Body:
    function: Body = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.input_schema
    if tool.strict is not None:
        function["strict"] = tool.strict
    return function


# --- messages ---------------------------------------------------------------------------------


def convert_chat_messages(
    prompt: list[ModelMessage], *, target: FileTarget, system_message_mode: SystemMessageMode
) -> tuple[list[Body], list[CallWarning]]:
    """The `messages` list for `prompt`, and warnings about what was left out."""
    messages: list[Body] = []
    warnings: list[CallWarning] = []
    for message in prompt:
        match message:
            case SystemModelMessage():
                if system_message_mode == "remove":
                    warnings.append(other_warning("system messages are removed for this model"))
                else:
                    messages.append({"role": system_message_mode, "content": message.content})
            case UserModelMessage():
                messages.append(_user_message(message, target))
            case AssistantModelMessage():
                messages.append(_assistant_message(message))
            case ToolModelMessage():
                messages.extend(_tool_messages(message))
    return messages, warnings


def _user_message(message: UserModelMessage, target: FileTarget) -> Body:
    if len(message.content) == 1 and isinstance(message.content[0], ModelTextPart):
        return {"role": "user", "content": message.content[0].text}
    content: list[Body] = []
    for part in message.content:
        if isinstance(part, ModelTextPart):
            content.append({"type": "text", "text": part.text})
        else:
            content.append(_image_part(part, target))
    return {"role": "user", "content": content}


def _image_part(part: ModelFilePart, target: FileTarget) -> Body:
    media_type = resolve_media_type(part)
    if not (media_type.startswith("image/") or media_type == "image"):
        raise target.unsupported(f"{media_type} files", "Chat Completions takes images only")
    if not target.capabilities.accepts(media_type):
        raise target.unsupported(f"{media_type} images")
    match part.data:
        case UrlFileData(url=url):
            image: Body = {"url": url}
        case DataFileData() | TextFileData():
            image = {"url": f"data:{media_type};base64,{file_base64(part.data)}"}
        case ReferenceFileData():
            raise target.unsupported("images given as uploaded-file references")
    detail = string_option(openai_options_of(part.provider_options, target.provider), "imageDetail")
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def _assistant_message(message: AssistantModelMessage) -> Body:
    text = ""
    tool_calls: list[Body] = []
    for part in message.content:
        if isinstance(part, ModelTextPart):
            text += part.text
        elif isinstance(part, ToolCallPart) and not part.provider_executed:
            function = {"name": part.tool_name, "arguments": tool_call_arguments(part)}
            tool_calls.append({"id": part.tool_call_id, "type": "function", "function": function})
    if not tool_calls:
        return {"role": "assistant", "content": text}
    return {"role": "assistant", "content": text or None, "tool_calls": tool_calls}


def _tool_messages(message: ToolModelMessage) -> list[Body]:
    return [
        {"role": "tool", "tool_call_id": part.tool_call_id, "content": tool_result_text(part.output)}
        for part in message.content
        if isinstance(part, ToolResultPart)
    ]
