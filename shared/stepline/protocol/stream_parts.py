"""TextStreamPart: what a streamText-style agent loop emits, before it becomes UI chunks.

Mirrors the `TextStreamPart` union of `packages/ai/src/generate-text/stream-text-result.ts`
(`ai@7.0.173`); the class names follow the SDK's part `type` tags, so the mapping to UI chunks reads
one-to-one (`TextDelta` is `text-delta`, `ToolCall` is `tool-call`, …). These are
in-process values (an error is an exception object), so they are frozen dataclasses rather than
wire models; `to_chunks.to_ui_message_chunk` turns them into the UI Message Stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import JsonValue

from .chunks import Citation, ProviderMetadata

__all__ = [
    "Abort",
    "Custom",
    "Data",
    "File",
    "Finish",
    "FinishStep",
    "GeneratedFile",
    "LanguageModelUsage",
    "Raw",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningFile",
    "ReasoningStart",
    "Source",
    "Start",
    "StartStep",
    "StreamError",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "TextStreamPart",
    "ToolApprovalRequest",
    "ToolApprovalResponse",
    "ToolCall",
    "ToolError",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolOutputDenied",
    "ToolResult",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class LanguageModelUsage:
    """Token usage. A count the provider did not report is None, never 0."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GeneratedFile:
    """A file the model produced; it travels to the client as a data URL."""

    media_type: str
    base64: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Start:
    """The whole run starts (`start`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    """The whole run ends (`finish`)."""

    finish_reason: str
    raw_finish_reason: str | None = None
    total_usage: LanguageModelUsage = field(default_factory=LanguageModelUsage)


@dataclass(frozen=True, slots=True, kw_only=True)
class StartStep:
    """A model step starts (`start-step`). Request details never reach the UI."""

    request: dict[str, Any] = field(default_factory=dict[str, Any])
    warnings: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishStep:
    """A model step ends (`finish-step`). Usage and response details never reach the UI chunk."""

    finish_reason: str
    raw_finish_reason: str | None = None
    usage: LanguageModelUsage = field(default_factory=LanguageModelUsage)
    provider_metadata: ProviderMetadata | None = None
    response: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True, slots=True, kw_only=True)
class Abort:
    """The run was aborted on purpose (`abort`)."""

    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """A stream-level error (`error`). `error` is the exception; the UI only sees `on_error(error)`."""

    error: object


@dataclass(frozen=True, slots=True, kw_only=True)
class Data:
    """Stepline extension (no SDK counterpart): application data, sent as a `data-<name>` chunk.

    The loop uses it for `data-retry` (one per automatic retry, `{reason, attempt}`).
    """

    name: str
    data: JsonValue
    id: str | None = None
    transient: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Raw:
    """A raw provider event (`raw`); never reaches the UI."""

    raw_value: JsonValue


@dataclass(frozen=True, slots=True, kw_only=True)
class TextStart:
    id: str
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextEnd:
    id: str
    citations: tuple[Citation, ...] | None = None
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningStart:
    id: str
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta:
    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningEnd:
    id: str
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class File:
    """A file the model generated (`file`)."""

    file: GeneratedFile
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningFile:
    """A file produced while reasoning (`reasoning-file`)."""

    file: GeneratedFile
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """A source reference (`source`), by URL or by document."""

    id: str
    source_type: Literal["url", "document"]
    url: str | None = None
    title: str | None = None
    media_type: str | None = None
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Custom:
    """Provider-specific content; `kind` is `{provider}.{provider-type}`."""

    kind: str
    provider_metadata: ProviderMetadata | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _ToolFlags:
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    tool_metadata: dict[str, JsonValue] | None = None
    dynamic: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputStart(_ToolFlags):
    id: str
    tool_name: str
    input_encoding: Literal["json", "text"] | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputDelta:
    id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputEnd:
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall(_ToolFlags):
    """A complete tool call. `invalid` calls (unknown tool, bad input) carry the `error`."""

    tool_call_id: str
    tool_name: str
    input: JsonValue
    title: str | None = None
    invalid: bool = False
    error: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult(_ToolFlags):
    tool_call_id: str
    tool_name: str
    input: JsonValue
    output: JsonValue
    preliminary: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolError(_ToolFlags):
    """A tool failed. For provider-executed tools `error` is the provider's value (string or JSON)."""

    tool_call_id: str
    tool_name: str
    input: JsonValue
    error: object


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputDenied:
    tool_call_id: str
    tool_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApprovalRequest:
    approval_id: str
    tool_call: ToolCall
    reason: str | None = None
    is_automatic: bool | None = None
    signature: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApprovalResponse:
    approval_id: str
    tool_call: ToolCall
    approved: bool
    reason: str | None = None
    provider_executed: bool | None = None


TextStreamPart = (
    Start
    | Finish
    | StartStep
    | FinishStep
    | Abort
    | StreamError
    | Data
    | Raw
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | File
    | ReasoningFile
    | Source
    | Custom
    | ToolInputStart
    | ToolInputDelta
    | ToolInputEnd
    | ToolCall
    | ToolResult
    | ToolError
    | ToolOutputDenied
    | ToolApprovalRequest
    | ToolApprovalResponse
)
"""Every part a streamText-style loop emits."""
