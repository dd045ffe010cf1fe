"""UIMessageChunk: every object a UI Message Stream carries, one pydantic model per `type`.

Mirrors `packages/ai/src/ui-message-stream/ui-message-chunks.ts` of `ai@7.0.173`. Field names are
snake_case in Python and camelCase on the wire. Inbound chunks are loose (unknown keys pass, as
with the SDK's `z.looseObject`); an unknown `type` or a missing required key is rejected, which is
what `DefaultChatTransport` does.

Compatibility note: `ai@7.0.77` rejects `finishReason: "interrupted"` and the
`steering-message` chunk; Stepline never emits the first, and the second only for a message sent
with the `steer` policy (see docs/protocol.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import Discriminator, Field, JsonValue, Tag, TypeAdapter, field_validator

from ._base import DEFERRED, LooseWireModel

__all__ = [
    "FINISH_REASONS",
    "AbortChunk",
    "Citation",
    "CustomChunk",
    "DataChunk",
    "ErrorChunk",
    "FileChunk",
    "FinishChunk",
    "FinishReason",
    "FinishStepChunk",
    "MessageMetadataChunk",
    "ProviderMetadata",
    "ReasoningDeltaChunk",
    "ReasoningEndChunk",
    "ReasoningFileChunk",
    "ReasoningStartChunk",
    "ResetStepChunk",
    "SourceDocumentChunk",
    "SourceUrlChunk",
    "StartChunk",
    "StartStepChunk",
    "SteeringMessageChunk",
    "TextDeltaChunk",
    "TextEndChunk",
    "TextStartChunk",
    "ToolApprovalRequestChunk",
    "ToolApprovalResponseChunk",
    "ToolInputAvailableChunk",
    "ToolInputDeltaChunk",
    "ToolInputErrorChunk",
    "ToolInputStartChunk",
    "ToolOutputAvailableChunk",
    "ToolOutputDeniedChunk",
    "ToolOutputErrorChunk",
    "UIMessageChunk",
    "parse_chunk",
]

ProviderMetadata = dict[str, dict[str, JsonValue]]
"""Provider-specific metadata, keyed by provider name (`{"anthropic": {"signature": "…"}}`)."""

FinishReason = Literal["stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"]
FINISH_REASONS: tuple[str, ...] = ("stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other")


class Citation(LooseWireModel):
    """A reference supporting a finished text part (ai 7.0.173 `LanguageModelV4Citation`)."""

    source: dict[str, JsonValue]
    start_index: int | None = Field(default=None, ge=0)
    end_index: int | None = Field(default=None, ge=0)
    cited_text: str | None = None


class _Chunk(LooseWireModel):
    pass


class StartChunk(_Chunk):
    """Opens the assistant message; carries its id so the client does not invent one."""

    type: Literal["start"] = "start"
    message_id: str | None = None
    message_metadata: JsonValue = None


class StartStepChunk(_Chunk):
    """A model step begins (becomes a `step-start` part)."""

    type: Literal["start-step"] = "start-step"


class FinishStepChunk(_Chunk):
    """A model step ended."""

    type: Literal["finish-step"] = "finish-step"


class ResetStepChunk(_Chunk):
    """Drop every part since the last `step-start` (a retried step starts over)."""

    type: Literal["reset-step"] = "reset-step"


class FinishChunk(_Chunk):
    """The stream ended normally."""

    type: Literal["finish"] = "finish"
    finish_reason: FinishReason | None = None
    message_metadata: JsonValue = None


class AbortChunk(_Chunk):
    """The run was stopped on purpose."""

    type: Literal["abort"] = "abort"
    reason: str | None = None


class ErrorChunk(_Chunk):
    """A stream-level error, already turned into safe text."""

    type: Literal["error"] = "error"
    error_text: str


class MessageMetadataChunk(_Chunk):
    """Deep-merged into the message's metadata."""

    type: Literal["message-metadata"] = "message-metadata"
    message_metadata: JsonValue


class TextStartChunk(_Chunk):
    type: Literal["text-start"] = "text-start"
    id: str
    provider_metadata: ProviderMetadata | None = None


class TextDeltaChunk(_Chunk):
    type: Literal["text-delta"] = "text-delta"
    id: str
    delta: str
    provider_metadata: ProviderMetadata | None = None


class TextEndChunk(_Chunk):
    """Closes a text part.

    `citations` is passed through as it came, as the SDK's reducer does (`processUIMessageStream`
    copies any non-null value onto the part); Stepline's own streams write `Citation`s.
    """

    type: Literal["text-end"] = "text-end"
    id: str
    citations: JsonValue = None
    provider_metadata: ProviderMetadata | None = None


class ReasoningStartChunk(_Chunk):
    type: Literal["reasoning-start"] = "reasoning-start"
    id: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningDeltaChunk(_Chunk):
    type: Literal["reasoning-delta"] = "reasoning-delta"
    id: str
    delta: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningEndChunk(_Chunk):
    type: Literal["reasoning-end"] = "reasoning-end"
    id: str
    provider_metadata: ProviderMetadata | None = None


class _ToolChunkFlags(_Chunk):
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    tool_metadata: dict[str, JsonValue] | None = None
    dynamic: bool | None = None


class ToolInputStartChunk(_ToolChunkFlags):
    type: Literal["tool-input-start"] = "tool-input-start"
    tool_call_id: str
    tool_name: str
    input_encoding: Literal["json", "text"] | None = None
    title: str | None = None


class ToolInputDeltaChunk(_Chunk):
    """A fragment of a tool call's input text. It has no `toolName`: the reducer takes it from the start."""

    type: Literal["tool-input-delta"] = "tool-input-delta"
    tool_call_id: str
    input_text_delta: str


class ToolInputAvailableChunk(_ToolChunkFlags):
    type: Literal["tool-input-available"] = "tool-input-available"
    tool_call_id: str
    tool_name: str
    input: JsonValue  # the key must be present (null is fine), as the SDK's schema demands
    title: str | None = None


class ToolInputErrorChunk(_ToolChunkFlags):
    type: Literal["tool-input-error"] = "tool-input-error"
    tool_call_id: str
    tool_name: str
    input: JsonValue
    error_text: str
    title: str | None = None


class ToolApprovalRequestChunk(_Chunk):
    type: Literal["tool-approval-request"] = "tool-approval-request"
    approval_id: str
    tool_call_id: str
    approval_descriptor: JsonValue = None
    input_schema_input: JsonValue = None
    reason: str | None = None
    is_automatic: bool | None = None
    signature: str | None = None


class ToolApprovalResponseChunk(_Chunk):
    type: Literal["tool-approval-response"] = "tool-approval-response"
    approval_id: str
    approved: bool
    reason: str | None = None
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None


class ToolOutputAvailableChunk(_ToolChunkFlags):
    type: Literal["tool-output-available"] = "tool-output-available"
    tool_call_id: str
    output: JsonValue
    preliminary: bool | None = None


class ToolOutputErrorChunk(_ToolChunkFlags):
    type: Literal["tool-output-error"] = "tool-output-error"
    tool_call_id: str
    error_text: str


class ToolOutputDeniedChunk(_Chunk):
    type: Literal["tool-output-denied"] = "tool-output-denied"
    tool_call_id: str


class SourceUrlChunk(_Chunk):
    type: Literal["source-url"] = "source-url"
    source_id: str
    url: str
    title: str | None = None
    provider_metadata: ProviderMetadata | None = None


class SourceDocumentChunk(_Chunk):
    type: Literal["source-document"] = "source-document"
    source_id: str
    media_type: str
    title: str
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class FileChunk(_Chunk):
    type: Literal["file"] = "file"
    url: str
    media_type: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningFileChunk(_Chunk):
    type: Literal["reasoning-file"] = "reasoning-file"
    url: str
    media_type: str
    provider_metadata: ProviderMetadata | None = None


class CustomChunk(_Chunk):
    """Provider-specific content; `kind` is `{provider}.{provider-type}`."""

    type: Literal["custom"] = "custom"
    kind: str
    provider_metadata: ProviderMetadata | None = None


class SteeringMessageChunk(_Chunk):
    """A user message injected between steps (ai 7.0.173 only; Stepline emits it for a steering message)."""

    type: Literal["steering-message"] = "steering-message"
    id: str
    parts: list[dict[str, JsonValue]]


class DataChunk(_Chunk):
    """`data-<name>`: application data. With an `id` it replaces the part of the same type and id."""

    type: str
    data: JsonValue
    id: str | None = None
    transient: bool | None = None

    @field_validator("type")
    @classmethod
    def _data_prefix(cls, value: str) -> str:
        if not value.startswith("data-"):
            raise ValueError('a data chunk type must be "data-<name>"')
        return value

    @property
    def name(self) -> str:
        """The data name without the `data-` prefix."""
        return self.type[len("data-") :]


def _chunk_tag(value: Any) -> str | None:
    chunk_type: object = (
        cast(dict[str, Any], value).get("type") if isinstance(value, dict) else getattr(value, "type", None)
    )
    if not isinstance(chunk_type, str):
        return None
    return "data" if chunk_type.startswith("data-") else chunk_type


UIMessageChunk = Annotated[
    Annotated[StartChunk, Tag("start")]
    | Annotated[StartStepChunk, Tag("start-step")]
    | Annotated[FinishStepChunk, Tag("finish-step")]
    | Annotated[ResetStepChunk, Tag("reset-step")]
    | Annotated[FinishChunk, Tag("finish")]
    | Annotated[AbortChunk, Tag("abort")]
    | Annotated[ErrorChunk, Tag("error")]
    | Annotated[MessageMetadataChunk, Tag("message-metadata")]
    | Annotated[TextStartChunk, Tag("text-start")]
    | Annotated[TextDeltaChunk, Tag("text-delta")]
    | Annotated[TextEndChunk, Tag("text-end")]
    | Annotated[ReasoningStartChunk, Tag("reasoning-start")]
    | Annotated[ReasoningDeltaChunk, Tag("reasoning-delta")]
    | Annotated[ReasoningEndChunk, Tag("reasoning-end")]
    | Annotated[ToolInputStartChunk, Tag("tool-input-start")]
    | Annotated[ToolInputDeltaChunk, Tag("tool-input-delta")]
    | Annotated[ToolInputAvailableChunk, Tag("tool-input-available")]
    | Annotated[ToolInputErrorChunk, Tag("tool-input-error")]
    | Annotated[ToolApprovalRequestChunk, Tag("tool-approval-request")]
    | Annotated[ToolApprovalResponseChunk, Tag("tool-approval-response")]
    | Annotated[ToolOutputAvailableChunk, Tag("tool-output-available")]
    | Annotated[ToolOutputErrorChunk, Tag("tool-output-error")]
    | Annotated[ToolOutputDeniedChunk, Tag("tool-output-denied")]
    | Annotated[SourceUrlChunk, Tag("source-url")]
    | Annotated[SourceDocumentChunk, Tag("source-document")]
    | Annotated[FileChunk, Tag("file")]
    | Annotated[ReasoningFileChunk, Tag("reasoning-file")]
    | Annotated[CustomChunk, Tag("custom")]
    | Annotated[SteeringMessageChunk, Tag("steering-message")]
    | Annotated[DataChunk, Tag("data")],
    Discriminator(
        _chunk_tag,
        custom_error_type="invalid_chunk_type",
        custom_error_message="unknown UI message chunk type",
    ),
    Field(description="One UI Message Stream chunk, discriminated on `type`."),
]

_CHUNK_ADAPTER: TypeAdapter[UIMessageChunk] = TypeAdapter(UIMessageChunk, config=DEFERRED)


def parse_chunk(value: Any) -> UIMessageChunk:
    """Validate one chunk object (a dict from JSON). Raises `pydantic.ValidationError` naming the field."""
    return _CHUNK_ADAPTER.validate_python(value)
