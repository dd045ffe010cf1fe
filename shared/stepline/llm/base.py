"""The language model port: one streaming call in, provider-neutral stream parts out.

The vocabulary is the AI SDK's `LanguageModelV4StreamPart` (`@ai-sdk/provider`
`src/language-model/v4/language-model-v4-stream-part.ts`, as `ai@7.0.173` ships it), as pydantic
models with the same JSON shape (in `stream_parts`), so a scripted model can play
back JSON scripts written for the SDK's `MockLanguageModelV4` and every provider adapter speaks the
same parts:

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
from typing import Literal, Protocol, runtime_checkable

from pydantic import JsonValue

from ..protocol.model_messages import ModelMessage, ProviderOptions
from .stream_parts import ModelStreamPart

__all__ = [
    "CountsTokens",
    "FunctionTool",
    "LanguageModel",
    "ModelCallOptions",
    "ModelCapabilities",
    "ProviderTool",
    "ResponseFormat",
    "ToolChoice",
    "ToolDefinition",
    "close_model",
]

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


@runtime_checkable
class CountsTokens(Protocol):
    """A model whose provider counts a request's input tokens exactly (Anthropic's count endpoint)."""

    async def count_tokens(self, options: ModelCallOptions) -> int:
        """The input tokens of the request `stream(options)` would send; raises `ModelCallError`."""
        ...


async def close_model(model: LanguageModel) -> None:
    """Release a model's connections (SDK clients belong to an event loop); a no-op when it holds none.

    Adapters that keep clients implement `async def aclose()`; whoever owns the event loop calls
    this before the loop ends.
    """
    close = getattr(model, "aclose", None)
    if close is not None:
        await close()
