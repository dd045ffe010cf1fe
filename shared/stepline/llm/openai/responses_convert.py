"""ModelCallOptions → the keyword arguments of `AsyncOpenAI().responses.create` (pure).

Mirrors `getArgs` of `@ai-sdk/openai` 4.0.46 (`src/responses/openai-responses-language-model.ts`)
and `prepareResponsesTools` for tools (`responses_tools`: function tools and OpenAI's built-in
ones). Every providerOptions key lands on its request field:

    conversation, instructions, maxToolCalls, metadata, parallelToolCalls, previousResponseId,
    promptCacheKey, promptCacheOptions, promptCacheRetention, safetyIdentifier, serviceTier,
    store, truncation, user                      -> the snake_case field of the same name
    include                                      -> include (plus what logprobs / store need)
    logprobs                                     -> top_logprobs (true = 20) + include logprobs
    reasoningEffort/-Summary/-Mode/-Context      -> reasoning.{effort, summary, mode, context}
    strictJsonSchema, textVerbosity              -> text.format.strict, text.verbosity
    contextManagement                            -> context_management[{type, compact_threshold}]
    compactionTrigger                            -> a final {"type": "compaction_trigger"} input item
    allowedTools                                 -> tool_choice {"type": "allowed_tools", ...}
    systemMessageMode, forceReasoning,
    passThroughUnsupportedFiles                  -> how the input is converted

Settings the API or model does not take are left out with a `stream-start` warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..base import ModelCallOptions, ModelCapabilities, ProviderTool, ResponseFormat
from .capabilities import OpenAIModelFamily, model_family, responses_capabilities, service_tier_warning
from .options import (
    TOP_LOGPROBS_MAX,
    CallWarning,
    OpenAIResponsesOptions,
    parse_responses_options,
    unsupported_warning,
)
from .prompt import FileTarget
from .responses_context import ResponsesInputContext
from .responses_input import convert_responses_input
from .responses_tools import ToolNames, prepare_responses_tools

__all__ = ["API_LABEL", "ResponsesRequest", "build_responses_request"]

API_LABEL = "the OpenAI Responses API"

Body = dict[str, Any]

# Provider options that map one-to-one onto a request field.
_DIRECT_FIELDS: tuple[tuple[str, str], ...] = (
    ("conversation", "conversation"),
    ("instructions", "instructions"),
    ("max_tool_calls", "max_tool_calls"),
    ("metadata", "metadata"),
    ("parallel_tool_calls", "parallel_tool_calls"),
    ("previous_response_id", "previous_response_id"),
    ("prompt_cache_key", "prompt_cache_key"),
    ("prompt_cache_retention", "prompt_cache_retention"),
    ("safety_identifier", "safety_identifier"),
    ("service_tier", "service_tier"),
    ("store", "store"),
    ("truncation", "truncation"),
    ("user", "user"),
)


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    """The request body (keyword arguments for the SDK, JSON-ready) and the call warnings."""

    body: Body
    warnings: list[CallWarning]
    options: OpenAIResponsesOptions
    tool_names: ToolNames = field(default_factory=ToolNames)
    """The agent's names for OpenAI's built-in tools in this call (the stream reports calls by them)."""


def build_responses_request(
    model_id: str,
    options: ModelCallOptions,
    *,
    provider: str = "openai",
    capabilities: ModelCapabilities | None = None,
) -> ResponsesRequest:
    """Convert one call; raises `UnsupportedCapabilityError` for a file the model cannot take."""
    settings, warnings = parse_responses_options(options.provider_options, provider=provider)
    family = model_family(model_id)
    is_reasoning = settings.force_reasoning if settings.force_reasoning is not None else family.is_reasoning_model
    tool_names = ToolNames.of(options.tools)
    context = _input_context(
        model_id, settings, provider=provider, capabilities=capabilities, is_reasoning=is_reasoning
    )
    context = replace(context, tool_names=tool_names)
    items, input_warnings = convert_responses_input(options.prompt, context)
    warnings.extend(input_warnings)
    if settings.compaction_trigger:
        # OpenAI requires the trigger to be the last input item.
        items.append({"type": "compaction_trigger"})
    body: Body = {"model": model_id, "input": items}
    effort = settings.reasoning_effort or _call_reasoning(options.reasoning)
    body.update(_sampling(options, is_reasoning=is_reasoning, effort=effort, family=family, warnings=warnings))
    body.update(_provider_fields(settings, options, family=family, is_reasoning=is_reasoning, warnings=warnings))
    body.update(
        _reasoning_fields(settings, options.reasoning, effort=effort, is_reasoning=is_reasoning, warnings=warnings)
    )
    tool_fields = prepare_responses_tools(
        options.tools, options.tool_choice, settings.allowed_tools, warnings, provider=provider, model_id=model_id
    )
    body.update(tool_fields)
    text = _text_config(options.response_format, strict=settings.strict_json_schema, verbosity=settings.text_verbosity)
    if text:
        body["text"] = text
    return ResponsesRequest(
        body={key: value for key, value in body.items() if value is not None},
        warnings=warnings,
        options=settings,
        tool_names=tool_names,
    )


def _input_context(
    model_id: str,
    settings: OpenAIResponsesOptions,
    *,
    provider: str,
    capabilities: ModelCapabilities | None,
    is_reasoning: bool,
) -> ResponsesInputContext:
    target = FileTarget(
        provider=provider,
        model_id=model_id,
        api_label=API_LABEL,
        capabilities=capabilities or responses_capabilities(model_id, force_reasoning=is_reasoning),
    )
    return ResponsesInputContext(
        target=target,
        system_message_mode=settings.system_message_mode or ("developer" if is_reasoning else "system"),
        pass_through_unsupported_files=bool(settings.pass_through_unsupported_files),
        has_conversation=settings.conversation is not None,
        has_previous_response_id=settings.previous_response_id is not None,
        store=settings.store is not False,
    )


def _call_reasoning(reasoning: str | None) -> str | None:
    return None if reasoning in (None, "provider-default") else reasoning


def _sampling(
    options: ModelCallOptions,
    *,
    is_reasoning: bool,
    effort: str | None,
    family: OpenAIModelFamily,
    warnings: list[CallWarning],
) -> Body:
    for feature, value in (
        ("topK", options.top_k),
        ("seed", options.seed),
        ("presencePenalty", options.presence_penalty),
        ("frequencyPenalty", options.frequency_penalty),
        ("stopSequences", options.stop_sequences),
    ):
        if value is not None:
            warnings.append(unsupported_warning(feature))
    body: Body = {
        "temperature": options.temperature,
        "top_p": options.top_p,
        "max_output_tokens": options.max_output_tokens,
    }
    # GPT-5.1+ accept temperature and topP again when reasoning is switched off.
    if is_reasoning and not (effort == "none" and family.supports_non_reasoning_parameters):
        for feature, key in (("temperature", "temperature"), ("topP", "top_p")):
            if body[key] is not None:
                body[key] = None
                warnings.append(unsupported_warning(feature, f"{feature} is not supported for reasoning models"))
    return body


def _provider_fields(
    settings: OpenAIResponsesOptions,
    options: ModelCallOptions,
    *,
    family: OpenAIModelFamily,
    is_reasoning: bool,
    warnings: list[CallWarning],
) -> Body:
    body: Body = {field: getattr(settings, attribute) for attribute, field in _DIRECT_FIELDS}
    if settings.conversation is not None and settings.previous_response_id is not None:
        details = "conversation and previousResponseId cannot be used together"
        warnings.append(unsupported_warning("conversation", details))
    if settings.prompt_cache_options is not None:
        body["prompt_cache_options"] = settings.prompt_cache_options.model_dump(exclude_none=True)
    if settings.context_management is not None:
        body["context_management"] = [
            {"type": entry.type, "compact_threshold": entry.compact_threshold} for entry in settings.context_management
        ]
    include: list[str] = list(settings.include or [])
    top_logprobs = _top_logprobs(settings.logprobs)
    if top_logprobs is not None:
        body["top_logprobs"] = top_logprobs
        include.append("message.output_text.logprobs")
    include.extend(_tool_includes(options))
    if settings.store is False and is_reasoning:
        # Without server-side storage the reasoning chain can only come back as encrypted content.
        include.append("reasoning.encrypted_content")
    if include:
        body["include"] = list(dict.fromkeys(include))
    tier_warning = service_tier_warning(settings.service_tier, family)
    if tier_warning is not None:
        warnings.append(tier_warning)
        body["service_tier"] = None
    return body


def _tool_includes(options: ModelCallOptions) -> list[str]:
    # As the SDK does: a web search's sources and a code run's outputs are asked for when listed.
    ids = {tool.id for tool in options.tools if isinstance(tool, ProviderTool)}
    include: list[str] = []
    if "openai.web_search" in ids:
        include.append("web_search_call.action.sources")
    if "openai.code_interpreter" in ids:
        include.append("code_interpreter_call.outputs")
    return include


def _top_logprobs(logprobs: bool | int | None) -> int | None:
    if logprobs is True:
        return TOP_LOGPROBS_MAX
    if logprobs is None or logprobs is False:
        return None
    return logprobs


def _reasoning_fields(
    settings: OpenAIResponsesOptions,
    call_reasoning: str | None,
    *,
    effort: str | None,
    is_reasoning: bool,
    warnings: list[CallWarning],
) -> Body:
    summary = settings.reasoning_summary
    if summary is None and effort is not None and effort != "none":
        summary = "detailed"
    fields = {
        "effort": effort,
        "summary": summary,
        "mode": settings.reasoning_mode,
        "context": settings.reasoning_context,
    }
    reasoning = {key: value for key, value in fields.items() if value is not None}
    if is_reasoning:
        return {"reasoning": reasoning or None}
    for feature, value in (
        ("reasoningEffort", settings.reasoning_effort),
        ("reasoningSummary", settings.reasoning_summary),
        ("reasoningMode", settings.reasoning_mode),
        ("reasoningContext", settings.reasoning_context),
    ):
        if value is not None:
            warnings.append(unsupported_warning(feature, f"{feature} is not supported for non-reasoning models"))
    if _call_reasoning(call_reasoning) is not None and settings.reasoning_effort is None:
        warnings.append(unsupported_warning("reasoning", "reasoning is not supported for non-reasoning models"))
    return {}


def _text_config(response_format: ResponseFormat | None, *, strict: bool | None, verbosity: str | None) -> Body:
    text: Body = {}
    if response_format is not None and response_format.type == "json":
        text["format"] = _json_format(response_format, strict=strict)
    if verbosity is not None:
        text["verbosity"] = verbosity
    return text


def _json_format(response_format: ResponseFormat, *, strict: bool | None) -> Body:
    if response_format.schema is None:
        return {"type": "json_object"}
    json_format: Body = {
        "type": "json_schema",
        "strict": True if strict is None else strict,
        "name": response_format.name or "response",
        "schema": response_format.schema,
    }
    if response_format.description is not None:
        json_format["description"] = response_format.description
    return json_format
