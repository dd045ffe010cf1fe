"""The stream parts a language model yields: the AI SDK's `LanguageModelV4StreamPart`.

The same JSON shape as `@ai-sdk/provider`'s `language-model-v4-stream-part.ts` (as `ai@7.0.173`
ships it), as pydantic models, so a scripted model can play back JSON scripts written for the SDK's
`MockLanguageModelV4` and every provider adapter speaks the same parts. `base` re-exports them
with the port.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, JsonValue, TypeAdapter, field_serializer

from ..protocol._base import DEFERRED, LooseWireModel
from ..protocol.chunks import Citation, ProviderMetadata

__all__ = [
    "parse_stream_part",
    "ModelStreamPart",
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

_PART_ADAPTER: TypeAdapter[ModelStreamPart] = TypeAdapter(ModelStreamPart, config=DEFERRED)


def parse_stream_part(value: Any) -> ModelStreamPart:
    """Validate one stream part from its JSON form (as in a script)."""
    return _PART_ADAPTER.validate_python(value)
