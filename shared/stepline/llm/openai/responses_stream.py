"""Responses API stream events → V4 stream parts: a pure state machine.

Follows `doStream` of `@ai-sdk/openai` 4.0.46 (`src/responses/openai-responses-language-model.ts`)
for messages, reasoning and function calls (4.0.118 for the built-in tools and annotations).
Events arrive as the JSON objects the API sends (`event.to_dict()` of the SDK's event models),
so a test can feed recorded events directly:

    response.created                          -> response-metadata
    output_item.added   message               -> text-start        (id = item id)
    output_text.delta                         -> text-delta
    output_item.done    message               -> text-end
    output_item.added   reasoning             -> reasoning-start   (id = "<item id>:0")
    reasoning_summary_part.added  (index > 0) -> reasoning-end of the previous part, reasoning-start
    reasoning_summary_text.delta              -> reasoning-delta   (id = "<item id>:<summary index>")
    output_item.done    reasoning             -> reasoning-end with {"openai": {itemId, reasoningEncryptedContent}}
    output_item.added   function_call         -> tool-input-start  (id = call id)
    function_call_arguments.delta             -> tool-input-delta
    output_item.done    function_call         -> tool-input-end, tool-call (input = the arguments text)
    output_item.done    compaction            -> custom "openai.compaction"
    OpenAI's built-in tools (web_search_call, code_interpreter_call, file_search_call,
    image_generation_call) and output_text.annotation.added: see `responses_tool_stream`
    response.completed / .incomplete           -> remembered for finish (usage, finish reason)
    response.failed, error                    -> error part (a classified ModelCallError); finish "error"

`finish()` closes what is still open and emits `finish`. A stream that ends without a terminal
event (and without an error) was cut off: `finish()` raises a retryable `ModelCallError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pydantic import JsonValue, ValidationError

from ..errors import ModelCallError
from ..stream_parts import (
    ModelStreamPart,
    UnifiedFinishReason,
    V4Custom,
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
from .responses_tool_stream import ProviderToolStream
from .responses_tools import ToolNames
from .stream_common import Loose, ToolCallBuffer, iso_timestamp, responses_usage, stream_error

__all__ = ["ResponsesStreamState", "map_responses_finish_reason"]

Parts = list[ModelStreamPart]


class _Item(Loose):
    type: str
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    encrypted_content: str | None = None


class _IncompleteDetails(Loose):
    reason: str | None = None


class _ResponseError(Loose):
    code: str | None = None
    message: str | None = None


class _Response(Loose):
    id: str | None = None
    model: str | None = None
    created_at: float | None = None
    status: str | None = None
    incomplete_details: _IncompleteDetails | None = None
    error: _ResponseError | None = None
    usage: dict[str, JsonValue] | None = None
    service_tier: str | None = None


class _Event(Loose):
    type: str
    item: _Item | None = None
    output_index: int | None = None
    item_id: str | None = None
    delta: str | None = None
    summary_index: int | None = None
    response: _Response | None = None
    code: str | None = None
    message: str | None = None
    param: str | None = None
    error: dict[str, JsonValue] | None = None


class ResponsesStreamState:
    """Turns Responses API events into V4 parts, one event at a time.

    Example:
        state = ResponsesStreamState(provider="openai")
        for event in events:
            yield from state.process(event)
        yield from state.finish()
    """

    def __init__(self, *, provider: str = "openai", tool_names: ToolNames | None = None) -> None:
        self._provider = provider
        self._tools = ProviderToolStream(provider=provider, tool_names=tool_names or ToolNames())
        self._open_texts: set[str] = set()
        self._reasoning: dict[str, int] = {}  # item id -> summary index of the open reasoning part
        self._tool_calls: dict[int, ToolCallBuffer] = {}  # output index -> call in progress
        self._has_function_call = False
        self._metadata_sent = False
        self._terminal: _Event | None = None
        self._error_seen = False

    # --- events ---------------------------------------------------------------------------------

    def process(self, raw: Mapping[str, Any]) -> Parts:
        """The parts for one event (often none)."""
        try:
            event = _Event.model_validate(raw)
        except ValidationError:
            return self.error({"message": "the OpenAI Responses stream sent an event Stepline cannot read"})
        match event.type:
            case "response.created" | "response.in_progress":
                return self._metadata(event)
            case "response.output_item.added":
                return self._item_added(event) + self._tools.item_added(_raw_item(raw), event.output_index)
            case "response.output_item.done":
                return self._item_done(event) + self._tools.item_done(_raw_item(raw), event.output_index)
            case "response.code_interpreter_call_code.delta":
                return self._tools.code_delta(event.output_index, event.delta or "")
            case "response.code_interpreter_call_code.done":
                return self._tools.code_done(event.output_index, event.code)
            case "response.image_generation_call.partial_image":
                image = raw.get("partial_image_b64")
                return self._tools.partial_image(event.item_id, image if isinstance(image, str) else None)
            case "response.output_text.annotation.added":
                annotation = raw.get("annotation")
                found = cast(dict[str, Any], annotation) if isinstance(annotation, dict) else None
                return self._tools.annotation(found)
            case "response.output_text.delta":
                return self._text_delta(event)
            case "response.reasoning_summary_part.added":
                return self._summary_part_added(event)
            case "response.reasoning_summary_text.delta":
                return self._reasoning_delta(event)
            case "response.function_call_arguments.delta":
                return self._arguments_delta(event)
            case "response.completed" | "response.incomplete" | "response.failed":
                return self._terminal_event(event)
            case "error":
                return self.error(_error_payload(event))
            case _:
                return []

    def error(self, payload: dict[str, JsonValue]) -> Parts:
        """An error frame inside the stream (also the SDK's in-stream `APIError`): an `error` part."""
        self._error_seen = True
        return [V4Error(error=stream_error(payload, provider=self._provider, api="Responses"))]

    def _metadata(self, event: _Event) -> Parts:
        response = event.response
        if self._metadata_sent or response is None:
            return []
        self._metadata_sent = True
        return [
            V4ResponseMetadata(id=response.id, model_id=response.model, timestamp=iso_timestamp(response.created_at))
        ]

    def _item_added(self, event: _Event) -> Parts:
        item = event.item
        if item is None or (item.id is None and item.type != "function_call"):
            return []
        match item.type:
            case "message":
                assert item.id is not None
                self._open_texts.add(item.id)
                self._tools.message_started()
                return [V4TextStart(id=item.id, provider_metadata=self._item_metadata(item.id))]
            case "reasoning":
                assert item.id is not None
                self._reasoning[item.id] = 0
                return [V4ReasoningStart(id=f"{item.id}:0", provider_metadata=self._reasoning_metadata(item.id, None))]
            case "function_call" if event.output_index is not None:
                call = ToolCallBuffer(item.call_id or item.id or f"call_{event.output_index}", item.name or "")
                self._tool_calls[event.output_index] = call
                return [V4ToolInputStart(id=call.call_id, tool_name=call.name)]
            case _:
                return []

    def _item_done(self, event: _Event) -> Parts:
        item = event.item
        if item is None:
            return []
        match item.type:
            case "message" if item.id in self._open_texts:
                assert item.id is not None
                self._open_texts.discard(item.id)
                citations, annotations = self._tools.message_done()
                metadata = {self._provider: {"itemId": item.id, **annotations}}
                return [V4TextEnd(id=item.id, citations=citations, provider_metadata=metadata)]
            case "reasoning" if item.id in self._reasoning:
                assert item.id is not None
                index = self._reasoning.pop(item.id)
                metadata = self._reasoning_metadata(item.id, item.encrypted_content)
                return [V4ReasoningEnd(id=f"{item.id}:{index}", provider_metadata=metadata)]
            case "function_call":
                return self._function_call_done(event, item)
            case "compaction" if item.id is not None:
                compaction: dict[str, JsonValue] = {
                    "type": "compaction",
                    "itemId": item.id,
                    "encryptedContent": item.encrypted_content,
                }
                return [V4Custom(kind="openai.compaction", provider_metadata={self._provider: compaction})]
            case _:
                return []

    def _function_call_done(self, event: _Event, item: _Item) -> Parts:
        call = self._tool_calls.pop(event.output_index, None) if event.output_index is not None else None
        parts: Parts = []
        if call is None:
            call = ToolCallBuffer(item.call_id or item.id or "call", item.name or "")
            parts.append(V4ToolInputStart(id=call.call_id, tool_name=call.name))
        arguments = item.arguments if item.arguments is not None else call.arguments
        self._has_function_call = True
        parts.append(V4ToolInputEnd(id=call.call_id))
        # A tool without parameters may come back with no arguments at all.
        tool_call = V4ToolCall(tool_call_id=call.call_id, tool_name=item.name or call.name, input=arguments or "{}")
        if item.id is not None:
            tool_call.provider_metadata = self._item_metadata(item.id)
        parts.append(tool_call)
        return parts

    def _text_delta(self, event: _Event) -> Parts:
        if event.item_id is None or not event.delta:
            return []
        parts: Parts = []
        if event.item_id not in self._open_texts:
            # Some OpenAI-compatible servers skip output_item.added; open the text here.
            self._open_texts.add(event.item_id)
            parts.append(V4TextStart(id=event.item_id, provider_metadata=self._item_metadata(event.item_id)))
        parts.append(V4TextDelta(id=event.item_id, delta=event.delta))
        return parts

    def _summary_part_added(self, event: _Event) -> Parts:
        item_id, index = event.item_id, event.summary_index
        if item_id is None or index is None or self._reasoning.get(item_id, index) == index:
            return []
        previous = self._reasoning[item_id]
        self._reasoning[item_id] = index
        metadata = self._reasoning_metadata(item_id, None)
        return [
            V4ReasoningEnd(id=f"{item_id}:{previous}", provider_metadata=metadata),
            V4ReasoningStart(id=f"{item_id}:{index}", provider_metadata=metadata),
        ]

    def _reasoning_delta(self, event: _Event) -> Parts:
        if event.item_id is None or event.delta is None:
            return []
        index = event.summary_index or 0
        parts: Parts = []
        if event.item_id not in self._reasoning:
            self._reasoning[event.item_id] = index
            metadata = self._reasoning_metadata(event.item_id, None)
            parts.append(V4ReasoningStart(id=f"{event.item_id}:{index}", provider_metadata=metadata))
        parts.append(V4ReasoningDelta(id=f"{event.item_id}:{index}", delta=event.delta))
        return parts

    def _arguments_delta(self, event: _Event) -> Parts:
        call = self._tool_calls.get(event.output_index) if event.output_index is not None else None
        if call is None or not event.delta:
            return []
        call.arguments += event.delta
        return [V4ToolInputDelta(id=call.call_id, delta=event.delta)]

    def _terminal_event(self, event: _Event) -> Parts:
        self._terminal = event
        response = event.response
        parts = self._metadata(event)
        if event.type == "response.failed" and response is not None and response.error is not None:
            parts.extend(self.error(response.error.model_dump(exclude_none=True)))
        return parts

    # --- the end --------------------------------------------------------------------------------

    def finish(self) -> Parts:
        """Close open parts and emit `finish`; raise when the stream was cut off."""
        if self._terminal is None and not self._error_seen:
            message = "the OpenAI Responses stream ended before response.completed"
            raise ModelCallError(message, kind="connection", provider=self._provider)
        parts = self._tools.finish()
        parts.extend(self._close_open_parts())
        response = self._terminal.response if self._terminal is not None else None
        reason = self._finish_reason(response)
        usage = responses_usage(response.usage if response is not None else None)
        metadata: dict[str, JsonValue] = {}
        if response is not None and response.id is not None:
            metadata["responseId"] = response.id
        if response is not None and response.service_tier is not None:
            metadata["serviceTier"] = response.service_tier
        finish = V4Finish(usage=usage, finish_reason=reason)
        if metadata:
            finish.provider_metadata = {self._provider: metadata}  # set only when known: absent on the wire otherwise
        parts.append(finish)
        return parts

    def _close_open_parts(self) -> Parts:
        parts: Parts = [V4TextEnd(id=text_id) for text_id in sorted(self._open_texts)]
        parts.extend(V4ReasoningEnd(id=f"{item_id}:{index}") for item_id, index in self._reasoning.items())
        for call in self._tool_calls.values():
            parts.append(V4ToolInputEnd(id=call.call_id))
        self._open_texts.clear()
        self._reasoning.clear()
        self._tool_calls.clear()
        return parts

    def _finish_reason(self, response: _Response | None) -> V4FinishReason:
        if self._error_seen or response is None or response.status == "failed":
            code = response.error.code if response is not None and response.error is not None else None
            return V4FinishReason(unified="error", raw=code)
        reason = response.incomplete_details.reason if response.incomplete_details is not None else None
        unified = map_responses_finish_reason(reason, has_function_call=self._has_function_call)
        return V4FinishReason(unified=unified, raw=reason)

    def _item_metadata(self, item_id: str) -> dict[str, dict[str, JsonValue]]:
        return {self._provider: {"itemId": item_id}}

    def _reasoning_metadata(self, item_id: str, encrypted: str | None) -> dict[str, dict[str, JsonValue]]:
        return {self._provider: {"itemId": item_id, "reasoningEncryptedContent": encrypted}}


def map_responses_finish_reason(reason: str | None, *, has_function_call: bool) -> UnifiedFinishReason:
    """`incomplete_details.reason` → unified reason (`mapOpenAIResponseFinishReason`)."""
    match reason:
        case None:
            return "tool-calls" if has_function_call else "stop"
        case "max_output_tokens":
            return "length"
        case "content_filter":
            return "content-filter"
        case _:
            return "tool-calls" if has_function_call else "other"


def _raw_item(raw: Mapping[str, Any]) -> dict[str, Any]:
    item = raw.get("item")
    return cast(dict[str, Any], item) if isinstance(item, dict) else {}


def _error_payload(event: _Event) -> dict[str, JsonValue]:
    # Two shapes exist: {"type": "error", "code", "message", "param"} and {"type": "error", "error": {...}}.
    if event.error is not None:
        return event.error
    payload: dict[str, JsonValue] = {"message": event.message or "error"}
    if event.code is not None:
        payload["code"] = event.code
    if event.param is not None:
        payload["param"] = event.param
    return payload
