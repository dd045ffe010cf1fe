"""The language model port: one streaming call in, provider-neutral stream parts out.

The vocabulary is the AI SDK's `LanguageModelV4StreamPart` (`@ai-sdk/provider`
`src/language-model/v4/language-model-v4-stream-part.ts`, as `ai@7.0.173` ships it), as pydantic
models with the same JSON shape, so a scripted model can play back JSON scripts written for the
SDK's `MockLanguageModelV4` and every provider adapter speaks the same parts:

    stream-start, response-metadata, text-start/-delta/-end, reasoning-start/-delta/-end,
    tool-input-start/-delta/-end, tool-call (input is JSON *text*), tool-result (provider-executed),
    source, file, custom, finish (usage and finish reason), error, raw.

A model is anything with `provider`, `model_id`, `capabilities` and an async `stream(options)`.
Pure: the standard library and pydantic only. Provider adapters (`stepline.llm.openai`,
`stepline.llm.anthropic`) implement it with the official SDKs; `stepline.llm.scripted` plays scripts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import Field, JsonValue, TypeAdapter, field_serializer

from ..protocol._base import LooseWireModel
from ..protocol.chunks import Citation, ProviderMetadata
from ..protocol.model_messages import ModelMessage, ProviderOptions

__all__ = [
    "FunctionTool",
    "LanguageModel",
    "ModelCallOptions",
    "ModelCapabilities",
    "ModelStreamPart",
    "ProviderTool",
    "ResponseFormat",
    "ToolChoice",
    "ToolDefinition",
    "UnifiedFinishReason",
    "V4Custom",
    "V4Error",
    "V4File",
    "V4Finish",
    "V4FinishReason",
    "V4InputTokens",
    "V4OutputTokens",
    "V4Ping",
    "V4Raw",
    "V4ReasoningDelta",
    "V4ReasoningEnd",
    "V4ReasoningStart",
    "V4ResponseMetadata",
    "V4Source",
    "V4StreamStart",
    "V4TextDelta",
    "V4TextEnd",
    "V4TextStart",
    "V4ToolCall",
    "V4ToolInputDelta",
    "V4ToolInputEnd",
    "V4ToolInputStart",
    "V4ToolResult",
    "V4Usage",
    "close_model",
    "parse_stream_part",
]

UnifiedFinishReason = Literal["stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"]


class _Part(LooseWireModel):
    def to_wire(self) -> dict[str, Any]:
        """The part's JSON; None means absent here (the SDK's parts have no meaningful nulls)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class V4InputTokens(LooseWireModel):
    """Input token counts; None means the provider did not say (never read as 0)."""

    total: int | None = None
    no_cache: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None


class V4OutputTokens(LooseWireModel):
    """Output token counts; `reasoning` is part of `total`."""

    total: int | None = None
    text: int | None = None
    reasoning: int | None = None


class V4Usage(LooseWireModel):
    """`LanguageModelV4Usage`."""

    input_tokens: V4InputTokens = Field(default_factory=V4InputTokens)
    output_tokens: V4OutputTokens = Field(default_factory=V4OutputTokens)
    raw: dict[str, JsonValue] | None = None

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        # Both count objects are always on the wire, as in the SDK (`{"inputTokens": {}, ...}`).
        self.__pydantic_fields_set__.update({"input_tokens", "output_tokens"})


class V4FinishReason(LooseWireModel):
    """The unified reason and the provider's own value."""

    unified: UnifiedFinishReason
    raw: str | None = None


class V4StreamStart(_Part):
    """First part of a call: warnings about unsupported settings."""

    type: Literal["stream-start"] = "stream-start"
    warnings: list[dict[str, JsonValue]] = Field(default_factory=list[dict[str, JsonValue]])
    request_body: dict[str, Any] | None = Field(default=None, exclude=True)
    """Stepline extension, not part of the JSON (the SDK returns it beside the stream): the
    provider request as sent, kept in the step record only with `Include(request_body=True)`."""


class V4ResponseMetadata(_Part):
    """The provider's response id, model id and timestamp, once known."""

    type: Literal["response-metadata"] = "response-metadata"
    id: str | None = None
    model_id: str | None = None
    timestamp: str | None = None


class V4TextStart(_Part):
    type: Literal["text-start"] = "text-start"
    id: str
    provider_metadata: ProviderMetadata | None = None


class V4TextDelta(_Part):
    type: Literal["text-delta"] = "text-delta"
    id: str
    delta: str
    provider_metadata: ProviderMetadata | None = None


class V4TextEnd(_Part):
    type: Literal["text-end"] = "text-end"
    id: str
    citations: list[Citation] | None = None
    provider_metadata: ProviderMetadata | None = None


class V4ReasoningStart(_Part):
    type: Literal["reasoning-start"] = "reasoning-start"
    id: str
    provider_metadata: ProviderMetadata | None = None


class V4ReasoningDelta(_Part):
    type: Literal["reasoning-delta"] = "reasoning-delta"
    id: str
    delta: str
    provider_metadata: ProviderMetadata | None = None


class V4ReasoningEnd(_Part):
    """End of a reasoning block; Anthropic's thinking signature travels in its provider metadata."""

    type: Literal["reasoning-end"] = "reasoning-end"
    id: str
    provider_metadata: ProviderMetadata | None = None


class V4ToolInputStart(_Part):
    type: Literal["tool-input-start"] = "tool-input-start"
    id: str
    tool_name: str
    input_encoding: Literal["json", "text"] | None = None
    provider_metadata: ProviderMetadata | None = None
    provider_executed: bool | None = None
    dynamic: bool | None = None
    title: str | None = None


class V4ToolInputDelta(_Part):
    type: Literal["tool-input-delta"] = "tool-input-delta"
    id: str
    delta: str
    provider_metadata: ProviderMetadata | None = None


class V4ToolInputEnd(_Part):
    type: Literal["tool-input-end"] = "tool-input-end"
    id: str
    provider_metadata: ProviderMetadata | None = None


class V4ToolCall(_Part):
    """A complete tool call. `input` is the JSON *text* the model produced (it may be invalid)."""

    type: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    tool_name: str
    input: str
    provider_executed: bool | None = None
    dynamic: bool | None = None
    provider_metadata: ProviderMetadata | None = None


class V4ToolResult(_Part):
    """The result of a provider-executed tool (web search and the like)."""

    type: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    tool_name: str
    result: JsonValue
    is_error: bool | None = None
    preliminary: bool | None = None
    dynamic: bool | None = None
    provider_metadata: ProviderMetadata | None = None


class V4File(_Part):
    """A generated file. `data` is base64 text (the JSON form of the SDK's file data)."""

    type: Literal["file"] = "file"
    media_type: str
    data: str
    provider_metadata: ProviderMetadata | None = None


class V4Source(_Part):
    type: Literal["source"] = "source"
    source_type: Literal["url", "document"]
    id: str
    url: str | None = None
    title: str | None = None
    media_type: str | None = None
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class V4Custom(_Part):
    type: Literal["custom"] = "custom"
    kind: str
    provider_metadata: ProviderMetadata | None = None


class V4Finish(_Part):
    """Last part of a successful call."""

    type: Literal["finish"] = "finish"
    usage: V4Usage = Field(default_factory=V4Usage)
    finish_reason: V4FinishReason
    provider_metadata: ProviderMetadata | None = None


class V4Ping(_Part):
    type: Literal["ping"] = "ping"


class V4Raw(_Part):
    type: Literal["raw"] = "raw"
    raw_value: JsonValue = None


class V4Error(_Part):
    """An error reported inside the stream. `error` is a JSON value or an exception object."""

    model_config: ClassVar[Any] = {"arbitrary_types_allowed": True}

    type: Literal["error"] = "error"
    error: Any = None

    @field_serializer("error")
    def _error_json(self, error: Any) -> Any:
        # An exception is written as its name and message (never its traceback or arguments).
        if isinstance(error, BaseException):
            return {"name": getattr(error, "name", type(error).__name__), "message": str(error)}
        return error


ModelStreamPart = Annotated[
    V4StreamStart
    | V4ResponseMetadata
    | V4TextStart
    | V4TextDelta
    | V4TextEnd
    | V4ReasoningStart
    | V4ReasoningDelta
    | V4ReasoningEnd
    | V4ToolInputStart
    | V4ToolInputDelta
    | V4ToolInputEnd
    | V4ToolCall
    | V4ToolResult
    | V4File
    | V4Source
    | V4Custom
    | V4Finish
    | V4Ping
    | V4Raw
    | V4Error,
    Field(discriminator="type"),
]

_PART_ADAPTER: TypeAdapter[ModelStreamPart] = TypeAdapter(ModelStreamPart)


def parse_stream_part(value: Any) -> ModelStreamPart:
    """Validate one stream part from its JSON form (as in a script)."""
    return _PART_ADAPTER.validate_python(value)


# --- the call ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTool:
    """A tool the model may call: name, description and the JSON Schema of its input."""

    name: str
    input_schema: dict[str, JsonValue]
    description: str | None = None
    strict: bool | None = None
    provider_options: ProviderOptions | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderTool:
    """A tool the provider runs itself (web search, code execution, …): the SDK's provider tool.

    `id` is `"<provider>.<tool>"` (`"openai.web_search"`, `"anthropic.code_execution_20250825"`),
    `name` the name the model calls it by, `args` its options in the provider's own wording. An
    adapter that cannot send it raises `UnsupportedCapabilityError` before any request; the loop never
    executes or claims its calls (they arrive with `providerExecuted`).
    """

    id: str
    name: str
    args: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])

    @property
    def provider(self) -> str:
        """The provider part of `id`."""
        return self.id.split(".", 1)[0]


ToolDefinition = FunctionTool | ProviderTool
"""What a call tells the model about one tool."""


ToolChoice = Literal["auto", "none", "required"] | dict[str, str]
"""`"auto"`, `"none"`, `"required"` or `{"type": "tool", "toolName": name}`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseFormat:
    """Structured output: `json` with an optional JSON Schema, or plain `text`."""

    type: Literal["text", "json"] = "json"
    schema: dict[str, JsonValue] | None = None
    name: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallOptions:
    """Everything one model call needs (the SDK's `LanguageModelV4CallOptions`)."""

    prompt: list[ModelMessage]
    tools: list[ToolDefinition] = field(default_factory=list[ToolDefinition])
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    reasoning: str | None = None
    response_format: ResponseFormat | None = None
    provider_options: ProviderOptions = field(default_factory=dict[str, dict[str, JsonValue]])
    headers: dict[str, str] = field(default_factory=dict[str, str])
    include_raw_chunks: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCapabilities:
    """What a model accepts. The loop refuses a file the model cannot take, with a clear error.

    Attributes:
        input_media_types: Media type patterns accepted in user file parts (`"image/*"`,
            `"application/pdf"`, `"*/*"`); empty means no files at all.
        reasoning_history: Whether earlier reasoning (with its provider signature) may be sent back.
    """

    input_media_types: tuple[str, ...] = ("image/*",)
    reasoning_history: bool = False

    def accepts(self, media_type: str) -> bool:
        """True when a file of `media_type` (which may itself be a wildcard, `image/*`) may be sent."""
        major = media_type.split("/", 1)[0]
        if media_type.endswith("/*"):
            return any(p == "*/*" or p.split("/", 1)[0] == major for p in self.input_media_types)
        return any(p in ("*/*", media_type, f"{major}/*") for p in self.input_media_types)


@runtime_checkable
class LanguageModel(Protocol):
    """The port every model implements."""

    @property
    def provider(self) -> str: ...

    @property
    def model_id(self) -> str: ...

    @property
    def capabilities(self) -> ModelCapabilities: ...

    def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        """Start one model call and yield its parts.

        Raises `stepline.llm.errors.ModelCallError` (its `retryable` flag says whether the loop may
        retry) for a failure before or during streaming; an `error` part is a failure the provider
        reported inside an otherwise working stream (a `ModelCallError` as its `error` lets the loop
        retry it when nothing visible was streamed yet).
        """
        ...


async def close_model(model: LanguageModel) -> None:
    """Release a model's connections (SDK clients belong to an event loop); a no-op when it holds none.

    Adapters that keep clients implement `async def aclose()`; whoever owns the event loop calls
    this before the loop ends.
    """
    close = getattr(model, "aclose", None)
    if close is not None:
        await close()
