"""Chat Completions stream chunks → V4 stream parts: a pure state machine.

Follows `doStream` of `@ai-sdk/openai` 4.0.46 (`src/chat/openai-chat-language-model.ts`). Chunks
arrive as the JSON objects the API sends (`chunk.to_dict()` of the SDK's models):

    first chunk with id/model/created  -> response-metadata
    delta.reasoning_content | reasoning -> reasoning-start/-delta (id "reasoning-0"), ended by text
    delta.content                      -> text-start/-delta (id "text-0")
    delta.tool_calls[i]                -> tool-input-start (first delta: id and name), tool-input-delta
    finish_reason                      -> remembered; "tool_calls" -> tool-calls, "length" -> length, …
    usage (the `choices: []` chunk that `stream_options.include_usage` asks for) -> finish usage

`finish()` ends open parts, emits each tool call (`tool-input-end`, `tool-call`) in index order,
then `finish`. A stream without a finish reason (and without an error) was cut off: `finish()`
raises a retryable `ModelCallError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue, ValidationError

from ..errors import ModelCallError
from ..stream_parts import (
    ModelStreamPart,
    UnifiedFinishReason,
    V4Error,
    V4Finish,
    V4FinishReason,
    V4ReasoningDelta,
    V4ReasoningEnd,
    V4ReasoningStart,
    V4ResponseMetadata,
    V4TextDelta,
    V4TextEnd,
    V4TextStart,
    V4ToolCall,
    V4ToolInputDelta,
    V4ToolInputEnd,
    V4ToolInputStart,
)
from .stream_common import Loose, ToolCallBuffer, chat_usage, iso_timestamp, stream_error

__all__ = ["ChatStreamState", "map_chat_finish_reason"]

Parts = list[ModelStreamPart]

TEXT_ID = "text-0"
REASONING_ID = "reasoning-0"


class _Function(Loose):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(Loose):
    index: int = 0
    id: str | None = None
    function: _Function | None = None


class _Delta(Loose):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _Choice(Loose):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(Loose):
    id: str | None = None
    model: str | None = None
    created: float | None = None
    choices: list[_Choice] = []
    usage: dict[str, JsonValue] | None = None


class ChatStreamState:
    """Turns Chat Completions chunks into V4 parts, one chunk at a time.

    Example:
        state = ChatStreamState(provider="openai")
        for chunk in chunks:
            yield from state.process(chunk)
        yield from state.finish()
    """

    def __init__(self, *, provider: str = "openai") -> None:
        self._provider = provider
        self._metadata_sent = False
        self._text_open = False
        self._reasoning_open = False
        self._tool_calls: dict[int, ToolCallBuffer] = {}
        self._finish_reason: str | None = None
        self._usage: dict[str, JsonValue] | None = None
        self._error_seen = False

    def process(self, raw: Mapping[str, Any]) -> Parts:
        """The parts for one chunk (often one)."""
        try:
            chunk = _Chunk.model_validate(raw)
        except ValidationError:
            return self.error({"message": "the Chat Completions stream sent a chunk Stepline cannot read"})
        parts = self._metadata(chunk)
        if chunk.usage is not None:
            self._usage = chunk.usage
        choice = chunk.choices[0] if chunk.choices else None
        if choice is None:
            return parts
        if choice.finish_reason is not None:
            self._finish_reason = choice.finish_reason
        if choice.delta is not None:
            parts.extend(self._delta(choice.delta))
        return parts

    def error(self, payload: dict[str, JsonValue]) -> Parts:
        """An error frame inside the stream (the SDK raises it as a bare `APIError`): an `error` part."""
        self._error_seen = True
        return [V4Error(error=stream_error(payload, provider=self._provider, api="Chat Completions"))]

    def _metadata(self, chunk: _Chunk) -> Parts:
        # Azure may send a first chunk with only prompt_filter_results: wait for one that says something.
        if self._metadata_sent or (chunk.id is None and chunk.model is None and chunk.created is None):
            return []
        self._metadata_sent = True
        return [V4ResponseMetadata(id=chunk.id, model_id=chunk.model, timestamp=iso_timestamp(chunk.created))]

    def _delta(self, delta: _Delta) -> Parts:
        parts: Parts = []
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            if not self._reasoning_open:
                self._reasoning_open = True
                parts.append(V4ReasoningStart(id=REASONING_ID))
            parts.append(V4ReasoningDelta(id=REASONING_ID, delta=reasoning))
        if delta.content:
            parts.extend(self._end_reasoning())
            if not self._text_open:
                self._text_open = True
                parts.append(V4TextStart(id=TEXT_ID))
            parts.append(V4TextDelta(id=TEXT_ID, delta=delta.content))
        for tool_delta in delta.tool_calls or []:
            parts.extend(self._tool_delta(tool_delta))
        return parts

    def _end_reasoning(self) -> Parts:
        if not self._reasoning_open:
            return []
        self._reasoning_open = False
        return [V4ReasoningEnd(id=REASONING_ID)]

    def _tool_delta(self, tool_delta: _ToolCallDelta) -> Parts:
        parts: Parts = []
        function = tool_delta.function or _Function()
        call = self._tool_calls.get(tool_delta.index)
        if call is None:
            # The first delta of a call carries its id and name; later ones only argument fragments.
            call = ToolCallBuffer(tool_delta.id or f"call_{tool_delta.index}", function.name or "")
            self._tool_calls[tool_delta.index] = call
            parts.extend(self._end_reasoning())
            parts.append(V4ToolInputStart(id=call.call_id, tool_name=call.name))
        if function.arguments:
            call.arguments += function.arguments
            parts.append(V4ToolInputDelta(id=call.call_id, delta=function.arguments))
        return parts

    def finish(self) -> Parts:
        """End open parts, emit the tool calls and `finish`; raise when the stream was cut off."""
        if self._finish_reason is None and not self._error_seen:
            raise ModelCallError(
                "the Chat Completions stream ended without a finish_reason", kind="connection", provider=self._provider
            )
        parts = self._end_reasoning()
        if self._text_open:
            self._text_open = False
            parts.append(V4TextEnd(id=TEXT_ID))
        for index in sorted(self._tool_calls):
            call = self._tool_calls[index]
            parts.append(V4ToolInputEnd(id=call.call_id))
            # A tool without parameters may come back with no arguments at all.
            parts.append(V4ToolCall(tool_call_id=call.call_id, tool_name=call.name, input=call.arguments or "{}"))
        self._tool_calls.clear()
        unified: UnifiedFinishReason = "error" if self._error_seen else map_chat_finish_reason(self._finish_reason)
        reason = V4FinishReason(unified=unified, raw=self._finish_reason)
        usage = chat_usage(self._usage)
        finish = V4Finish(usage=usage, finish_reason=reason)
        metadata = self._metadata_out()
        if metadata is not None:
            finish.provider_metadata = metadata  # set only when known: absent on the wire otherwise
        parts.append(finish)
        return parts

    def _metadata_out(self) -> dict[str, dict[str, JsonValue]] | None:
        details = self._usage.get("completion_tokens_details") if self._usage is not None else None
        if not isinstance(details, dict):
            return None
        metadata: dict[str, JsonValue] = {}
        for key, name in (
            ("accepted_prediction_tokens", "acceptedPredictionTokens"),
            ("rejected_prediction_tokens", "rejectedPredictionTokens"),
        ):
            if isinstance(details.get(key), int):
                metadata[name] = details[key]
        return {self._provider: metadata} if metadata else None


def map_chat_finish_reason(reason: str | None) -> UnifiedFinishReason:
    """`finish_reason` → unified reason (`mapOpenAIFinishReason`)."""
    match reason:
        case "stop":
            return "stop"
        case "length":
            return "length"
        case "content_filter":
            return "content-filter"
        case "tool_calls" | "function_call":
            return "tool-calls"
        case _:
            return "other"
