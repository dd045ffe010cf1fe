"""`providerOptions.anthropic`: the Anthropic provider options of the AI SDK, validated.

Mirrors `anthropicLanguageModelOptions` (and the file-part options) of `@ai-sdk/anthropic`
(`src/anthropic-language-model-options.ts`) for the sixteen keys the Stepline spec lists:
sendReasoning, structuredOutputMode, thinking, disableParallelToolUse, cacheControl, metadata,
mcpServers, container, toolStreaming, effort, taskBudget, speed, inferenceGeo, fallbacks,
anthropicBeta and contextManagement.

Keys are the SDK's camelCase. A key this module does not know (at any depth) is kept out of the
request and reported as a stream-start warning; a known key with a value of the wrong shape is a
non-retryable `ModelCallError` whose message names the path, never the value (an MCP server's
authorization token must not end up in a log). Pure: pydantic and the standard library only.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError
from pydantic.alias_generators import to_camel

from ...protocol.model_messages import ProviderOptions
from ..errors import ModelCallError

__all__ = [
    "AnthropicProviderOptions",
    "CacheControl",
    "FilePartOptions",
    "Warning",
    "parse_anthropic_options",
    "parse_cache_control",
    "parse_file_part_options",
    "to_snake_wire",
]

_M = TypeVar("_M", bound=BaseModel)

Warning = dict[str, JsonValue]
"""A `SharedV4Warning` as JSON (`{"type": "unsupported", "feature": …, "details": …}`)."""


class _Options(BaseModel):
    """camelCase keys in, unknown keys kept aside (as `model_extra`) so they become warnings."""

    model_config: ClassVar[ConfigDict] = ConfigDict(alias_generator=to_camel, extra="allow", frozen=True)


class _WireNamed(BaseModel):
    """Entries the SDK passes to the API as they are, so their keys are already snake_case."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow", frozen=True)


class CacheControl(_Options):
    """`{type: 'ephemeral', ttl?: '5m' | '1h'}`: a prompt-cache breakpoint."""

    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class ThinkingEnabled(_Options):
    type: Literal["enabled"]
    budget_tokens: int | None = None


class ThinkingAdaptive(_Options):
    type: Literal["adaptive"]
    display: Literal["omitted", "summarized"] | None = None


class ThinkingDisabled(_Options):
    type: Literal["disabled"]


Thinking = Annotated[ThinkingEnabled | ThinkingAdaptive | ThinkingDisabled, Field(discriminator="type")]


class Metadata(_Options):
    user_id: str | None = None


class McpToolConfiguration(_Options):
    enabled: bool | None = None
    allowed_tools: list[str] | None = None


class McpServer(_Options):
    type: Literal["url"]
    name: str
    url: str
    authorization_token: str | None = None
    tool_configuration: McpToolConfiguration | None = None


class AnthropicSkill(_Options):
    type: Literal["anthropic"]
    skill_id: str
    version: str | None = None


class CustomSkill(_Options):
    type: Literal["custom"]
    provider_reference: dict[str, str]
    version: str | None = None


class Container(_Options):
    id: str | None = None
    skills: list[Annotated[AnthropicSkill | CustomSkill, Field(discriminator="type")]] | None = None


class TaskBudget(_Options):
    type: Literal["tokens"]
    total: int = Field(ge=20000)
    remaining: int | None = Field(default=None, ge=0)


class FallbackModel(_WireNamed):
    model: str
    max_tokens: int | None = None
    thinking: dict[str, JsonValue] | None = None
    output_config: dict[str, JsonValue] | None = None
    speed: Literal["fast", "standard"] | None = None


class InputTokensTrigger(_Options):
    type: Literal["input_tokens"]
    value: int


class ToolUsesCount(_Options):
    type: Literal["tool_uses"]
    value: int


class ThinkingTurns(_Options):
    type: Literal["thinking_turns"]
    value: int


class ClearToolUses(_Options):
    type: Literal["clear_tool_uses_20250919"]
    trigger: Annotated[InputTokensTrigger | ToolUsesCount, Field(discriminator="type")] | None = None
    keep: ToolUsesCount | None = None
    clear_at_least: InputTokensTrigger | None = None
    clear_tool_inputs: bool | None = None
    exclude_tools: list[str] | None = None


class ClearThinking(_Options):
    type: Literal["clear_thinking_20251015"]
    keep: Literal["all"] | ThinkingTurns | None = None


class Compact(_Options):
    type: Literal["compact_20260112"]
    trigger: InputTokensTrigger | None = None
    pause_after_compaction: bool | None = None
    instructions: str | None = None


class ContextManagement(_Options):
    edits: list[Annotated[ClearToolUses | ClearThinking | Compact, Field(discriminator="type")]]


class AnthropicProviderOptions(_Options):
    """The request-level `providerOptions.anthropic` (sixteen keys, all optional)."""

    send_reasoning: bool | None = None
    structured_output_mode: Literal["outputFormat", "jsonTool", "auto"] | None = None
    thinking: Thinking | None = None
    disable_parallel_tool_use: bool | None = None
    cache_control: CacheControl | None = None
    metadata: Metadata | None = None
    mcp_servers: list[McpServer] | None = None
    container: Container | None = None
    tool_streaming: bool | None = None
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    task_budget: TaskBudget | None = None
    speed: Literal["fast", "standard"] | None = None
    inference_geo: Literal["us", "global"] | None = None
    fallbacks: Literal["default"] | list[FallbackModel] | None = None
    anthropic_beta: list[str] | None = None
    context_management: ContextManagement | None = None


class FileCitations(_Options):
    enabled: bool


class FilePartOptions(_Options):
    """`providerOptions.anthropic` on a file part (documents): citations, title, context."""

    citations: FileCitations | None = None
    title: str | None = None
    context: str | None = None


def parse_anthropic_options(raw: Any) -> tuple[AnthropicProviderOptions, list[Warning]]:
    """Validate `providerOptions.anthropic`; unknown keys come back as warnings."""
    options = _validate(AnthropicProviderOptions, raw or {}, "providerOptions.anthropic")
    return options, [_unknown_key_warning(path) for path in _unknown_keys(options, "providerOptions.anthropic")]


def parse_cache_control(provider_options: ProviderOptions | None, where: str) -> CacheControl | None:
    """The `cacheControl` (or `cache_control`) of a part's or message's `providerOptions.anthropic`."""
    anthropic = (provider_options or {}).get("anthropic") or {}
    value = anthropic.get("cacheControl", anthropic.get("cache_control"))
    if value is None:
        return None
    return _validate(CacheControl, value, f"{where}.providerOptions.anthropic.cacheControl")


def parse_file_part_options(provider_options: ProviderOptions | None, where: str) -> FilePartOptions:
    """The document options of a file part (other keys on the part, like cacheControl, are ignored)."""
    anthropic = (provider_options or {}).get("anthropic") or {}
    known = {key: value for key, value in anthropic.items() if key in ("citations", "title", "context")}
    return _validate(FilePartOptions, known, f"{where}.providerOptions.anthropic")


def to_snake_wire(value: Any) -> JsonValue:
    """The API form of validated options: field names (snake_case) as keys, unset fields and extras left out.

    Anthropic's request fields are the snake_case spelling of the SDK's camelCase option keys,
    which is exactly how the Python fields are named.
    """
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return {name: to_snake_wire(getattr(value, name)) for name in fields if getattr(value, name) is not None}
    if isinstance(value, list):
        return [to_snake_wire(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _validate(model: type[_M], raw: Any, where: str) -> _M:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join([where, *(str(step) for step in problem['loc'])])}: {problem['msg']}"
            for problem in error.errors(include_input=False, include_url=False)
        )
        # `from None`: the pydantic error would repeat the input values, and a token may be among them.
        raise ModelCallError(
            f"invalid Anthropic options: {problems}", kind="bad_request", provider="anthropic"
        ) from None


def _unknown_keys(value: Any, path: str) -> list[str]:
    if isinstance(value, list):
        return [key for index, item in enumerate(value) for key in _unknown_keys(item, f"{path}.{index}")]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if not isinstance(value, _Options):
        return []
    found = [f"{path}.{key}" for key in value.model_extra or {}]
    for name, field in type(value).model_fields.items():
        found += _unknown_keys(getattr(value, name), f"{path}.{field.alias or name}")
    return found


def _unknown_key_warning(path: str) -> Warning:
    return {"type": "unsupported", "feature": path, "details": "unknown Anthropic provider option; it was not sent"}
