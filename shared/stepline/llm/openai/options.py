"""OpenAI `providerOptions`: one pydantic model per API, validated, with warnings instead of crashes.

Mirrors `@ai-sdk/openai` 4.0.46: `openaiLanguageModelResponsesOptionsSchema`
(`src/responses/openai-responses-language-model-options.ts`, 28 keys) and
`openaiLanguageModelChatOptions` (`src/chat/openai-chat-language-model-options.ts`, 18 keys).
Keys are camelCase on the wire, as the AI SDK spells them; values are checked strictly (no
coercion, as zod does not coerce either).

Where the AI SDK's zod object silently strips keys it does not know, Stepline reports them:

    unknown key                          -> a `stream-start` warning ({"type": "other", ...})
    key of the other OpenAI API only     -> a `stream-start` warning ({"type": "unsupported", ...})
    known key with an invalid value      -> ModelCallError(kind="bad_request"), never retried

Pure: pydantic and the standard library.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError
from pydantic.alias_generators import to_camel

from ...protocol.model_messages import ProviderOptions
from ..errors import ModelCallError

__all__ = [
    "CHAT_OPTION_KEYS",
    "TOP_LOGPROBS_MAX",
    "RESPONSES_OPTION_KEYS",
    "AllowedTools",
    "ContextManagementEntry",
    "OpenAIApi",
    "OpenAIChatOptions",
    "OpenAIResponsesOptions",
    "PromptCacheOptions",
    "SystemMessageMode",
    "CallWarning",
    "other_warning",
    "parse_chat_options",
    "parse_responses_options",
    "unsupported_warning",
]

OpenAIApi = Literal["responses", "chat"]

CallWarning = dict[str, JsonValue]
"""A call warning in the AI SDK's shape (`SharedV4Warning`): `unsupported` with a feature, or `other`."""

TOP_LOGPROBS_MAX = 20

ServiceTier = Literal["auto", "flex", "priority", "fast", "default"]
SystemMessageMode = Literal["system", "developer", "remove"]
TextVerbosity = Literal["low", "medium", "high"]
ResponsesIncludable = Literal[
    "reasoning.encrypted_content",
    "file_search_call.results",
    "web_search_call.results",
    "message.output_text.logprobs",
]


def unsupported_warning(feature: str, details: str | None = None) -> CallWarning:
    """`{"type": "unsupported", "feature": ..., "details": ...}` (details omitted when None)."""
    warning: CallWarning = {"type": "unsupported", "feature": feature}
    if details is not None:
        warning["details"] = details
    return warning


def other_warning(message: str) -> CallWarning:
    """`{"type": "other", "message": ...}`."""
    return {"type": "other", "message": message}


class _Options(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(
        alias_generator=to_camel, populate_by_name=False, strict=True, extra="forbid", frozen=True, defer_build=True
    )


class PromptCacheOptions(_Options):
    """`promptCacheOptions`: GPT-5.6+ cache breakpoint mode and minimum lifetime."""

    mode: Literal["implicit", "explicit"] | None = None
    ttl: Literal["30m"] | None = None


class ContextManagementEntry(_Options):
    """One `contextManagement` entry: server-side compaction above a token threshold."""

    type: Literal["compaction"]
    compact_threshold: int


class AllowedTools(_Options):
    """`allowedTools`: keep every tool definition but let the model call only these."""

    tool_names: list[str] = Field(min_length=1)
    mode: Literal["auto", "required"] | None = None


class OpenAIResponsesOptions(_Options):
    """`providerOptions.openai` for the Responses API (the 28 keys of `@ai-sdk/openai` 4.0.46)."""

    conversation: str | None = None
    include: list[ResponsesIncludable] | None = None
    instructions: str | None = None
    logprobs: bool | Annotated[int, Field(ge=1, le=TOP_LOGPROBS_MAX)] | None = None
    max_tool_calls: int | None = None
    metadata: JsonValue = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_options: PromptCacheOptions | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    reasoning_effort: str | None = None
    reasoning_mode: Literal["standard", "pro"] | None = None
    reasoning_context: Literal["auto", "current_turn", "all_turns"] | None = None
    reasoning_summary: str | None = None
    safety_identifier: str | None = None
    service_tier: ServiceTier | None = None
    store: bool | None = None
    pass_through_unsupported_files: bool | None = None
    strict_json_schema: bool | None = None
    text_verbosity: TextVerbosity | None = None
    truncation: Literal["auto", "disabled"] | None = None
    user: str | None = None
    system_message_mode: SystemMessageMode | None = None
    force_reasoning: bool | None = None
    context_management: list[ContextManagementEntry] | None = None
    compaction_trigger: bool | None = None
    allowed_tools: AllowedTools | None = None


class OpenAIChatOptions(_Options):
    """`providerOptions.openai` for Chat Completions (the 18 keys of `@ai-sdk/openai` 4.0.46)."""

    logit_bias: dict[Annotated[str, Field(pattern=r"^-?\d+$")], int | float] | None = None
    logprobs: bool | Annotated[int, Field(ge=0)] | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    max_completion_tokens: int | None = None
    store: bool | None = None
    metadata: dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=512)]] | None = None
    prediction: dict[str, JsonValue] | None = None
    service_tier: ServiceTier | None = None
    strict_json_schema: bool | None = None
    text_verbosity: TextVerbosity | None = None
    prompt_cache_key: str | None = None
    prompt_cache_options: PromptCacheOptions | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    safety_identifier: str | None = None
    system_message_mode: SystemMessageMode | None = None
    force_reasoning: bool | None = None


def _aliases(model: type[_Options]) -> frozenset[str]:
    return frozenset(field.alias or name for name, field in model.model_fields.items())


RESPONSES_OPTION_KEYS: frozenset[str] = _aliases(OpenAIResponsesOptions)
"""The camelCase keys the Responses API path accepts."""

CHAT_OPTION_KEYS: frozenset[str] = _aliases(OpenAIChatOptions)
"""The camelCase keys the Chat Completions path accepts."""

_API_LABEL: dict[OpenAIApi, str] = {"responses": "the OpenAI Responses API", "chat": "OpenAI Chat Completions"}

_OptionsT = TypeVar("_OptionsT", bound=_Options)


def parse_responses_options(
    provider_options: ProviderOptions, *, provider: str = "openai"
) -> tuple[OpenAIResponsesOptions, list[CallWarning]]:
    """Validate `provider_options[provider]` for the Responses API; warnings for keys it ignores."""
    return _parse(OpenAIResponsesOptions, provider_options, api="responses", provider=provider)


def parse_chat_options(
    provider_options: ProviderOptions, *, provider: str = "openai"
) -> tuple[OpenAIChatOptions, list[CallWarning]]:
    """Validate `provider_options[provider]` for Chat Completions; warnings for keys it ignores."""
    return _parse(OpenAIChatOptions, provider_options, api="chat", provider=provider)


def _parse(
    model: type[_OptionsT], provider_options: ProviderOptions, *, api: OpenAIApi, provider: str
) -> tuple[_OptionsT, list[CallWarning]]:
    raw = provider_options.get(provider) or {}
    accepted = RESPONSES_OPTION_KEYS if api == "responses" else CHAT_OPTION_KEYS
    other_api: OpenAIApi = "chat" if api == "responses" else "responses"
    other_keys = CHAT_OPTION_KEYS if api == "responses" else RESPONSES_OPTION_KEYS
    warnings: list[CallWarning] = []
    known: dict[str, JsonValue] = {}
    for key, value in raw.items():
        if key in accepted:
            known[key] = value
        elif key in other_keys:
            details = f"{key} is an option of {_API_LABEL[other_api]}; {_API_LABEL[api]} ignores it"
            warnings.append(unsupported_warning(key, details))
        else:
            warnings.append(other_warning(_unknown_key_message(provider, key, accepted)))
    try:
        return model.model_validate(known), warnings
    except ValidationError as error:
        raise _invalid_options_error(error, provider=provider) from None


def _unknown_key_message(provider: str, key: str, accepted: frozenset[str]) -> str:
    message = f"unknown providerOptions.{provider} key {key!r} was ignored"
    camel = to_camel(key)
    if camel != key and camel in accepted:
        message += f" (did you mean {camel!r}?)"
    return message


def _invalid_options_error(error: ValidationError, *, provider: str) -> ModelCallError:
    # Quote the field path and the reason, never the value: option values may be user data.
    reasons = "; ".join(
        f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
        for item in error.errors(include_input=False, include_url=False)
    )
    return ModelCallError(
        f"invalid providerOptions.{provider}: {reasons}", kind="bad_request", provider=provider, retryable=False
    )
