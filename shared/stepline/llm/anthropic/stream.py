"""Anthropic Messages stream events → LanguageModelV4 stream parts, as a pure state machine.

After the stream transform of `@ai-sdk/anthropic` (`src/anthropic-language-model.ts`,
`doStream`). Feed it each server-sent event (`event:` name and `data:` text) in order; it returns
the parts each event yields:

    message_start                 response-metadata (id, model); input and cache token counts
    content_block_start/-delta/-stop
      text                        text-start / text-delta / text-end (citations at the end)
      thinking                    reasoning-start / -delta / -end; the signature_delta arrives
                                  before the stop and rides on reasoning-end's provider metadata
      redacted_thinking           reasoning-start / -end carrying `{"anthropic": {"redactedData"}}`
      tool_use                    tool-input-start / -delta (input_json_delta) / -end, then
                                  tool-call with the JSON text ("{}" when none came)
      server_tool_use, mcp_tool_use   the same, provider-executed (code execution's sub-tools
                                  are `code_execution` calls whose input names them: `server_results`)
      *_tool_result, mcp_tool_result  tool-result (provider-executed tools); web search results also
                                  `source` parts (`server_results`)
    citations_delta               kept for text-end; a document citation is a `source` at once, a
                                  web citation one at message_stop when no search results came
    message_delta                 stop reason, usage running totals
    message_stop                  finish
    error                         error (a `ModelCallError` classified from the provider's `{type,
                                  message}`: `overloaded_error` is retryable), then finish "error"
    ping, unknown events          nothing (a `raw` part for every event when asked)

`close()` after the body ends raises a retryable `ModelCallError` if the stream stopped before
`message_stop` or an `error` event: a cut stream must not pass for a finished one.
Pure: pydantic, the standard library and `stepline` only.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import JsonValue

from ...protocol._json import dumps, loads_strict
from ...protocol.chunks import ProviderMetadata
from ..errors import ModelCallError, in_stream_error
from ..stream_parts import (
    ModelStreamPart,
    V4Error,
    V4Finish,
    V4FinishReason,
    V4Raw,
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
    V4ToolResult,
    V4Usage,
)
from .fields import as_dict, as_str, some
from .server_results import (
    SERVER_TOOL_NAMES,
    CitationDocument,
    citation_of,
    citation_source,
    programmatic_input,
    server_tool_result,
)
from .usage import finish_reason, usage_from_anthropic

__all__ = [
    "AnthropicStreamState",
]

_TOOL_USE_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


@dataclass
class _Block:
    """One open content block, by its `index`."""

    kind: Literal["text", "reasoning", "tool"]
    id: str
    tool_name: str = ""
    input: str = ""
    initial_input: str = ""
    provider_executed: bool | None = None
    metadata: ProviderMetadata | None = None
    citations: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    input_type: str | None = None
    """Code execution's sub-tool, written into the input's first delta as its `type`."""


@dataclass
class AnthropicStreamState:
    """The state of one streamed message. `feed` each event, then `close` when the body ends."""

    uses_json_tool: bool = False
    include_raw: bool = False
    new_id: Callable[[], str] = field(default=lambda: secrets.token_urlsafe(12))
    """Ids of `source` parts (the SDK's are random too)."""
    documents: list[CitationDocument] = field(default_factory=list[CitationDocument])
    """What a citation's `document_index` points at: the prompt's citable files, then fetched pages."""
    _blocks: dict[int, _Block] = field(default_factory=dict[int, _Block])
    _tool_names: dict[str, str] = field(default_factory=dict[str, str])
    _usage: dict[str, Any] = field(default_factory=dict[str, Any])
    _stop_reason: str | None = None
    _stop_sequence: str | None = None
    _error_type: str | None = None
    _web_citations: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _web_results: bool = False
    _finished: bool = False

    def feed(self, event: str | None, data: str) -> list[ModelStreamPart]:
        """The parts one server-sent event yields."""
        if not data.strip():
            return []
        try:
            parsed = loads_strict(data)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            message = f"an {event or 'unnamed'} event was not a JSON object"
            return [V4Error(error={"type": "invalid_chunk", "message": message})]
        payload = as_dict(parsed)
        raw: list[ModelStreamPart] = [V4Raw(raw_value=payload)] if self.include_raw else []
        return raw + self._dispatch(str(payload.get("type") or event), payload)

    def close(self) -> list[ModelStreamPart]:
        """The parts due when the body ends; raises if the stream was cut short."""
        if self._finished:
            return []
        if self._error_type is not None:
            self._finished = True
            return [
                V4Finish(usage=self._v4_usage(), finish_reason=V4FinishReason(unified="error", raw=self._error_type))
            ]
        raise ModelCallError(
            "the Anthropic stream ended before message_stop", kind="connection", provider="anthropic", retryable=True
        )

    def _dispatch(self, kind: str, payload: dict[str, Any]) -> list[ModelStreamPart]:
        match kind:
            case "message_start":
                return self._message_start(as_dict(payload.get("message")))
            case "content_block_start":
                return self._block_start(_index(payload), as_dict(payload.get("content_block")))
            case "content_block_delta":
                return self._block_delta(_index(payload), as_dict(payload.get("delta")))
            case "content_block_stop":
                return self._block_stop(_index(payload))
            case "message_delta":
                return self._message_delta(as_dict(payload.get("delta")), as_dict(payload.get("usage")))
            case "message_stop":
                self._finished = True
                return [*self._fallback_sources(), self._finish()]
            case "error":
                error = as_dict(payload.get("error")) or payload
                self._error_type = str(error.get("type") or "error")
                classified = in_stream_error(
                    [error.get("type")], error.get("message"), provider="anthropic", label="Anthropic"
                )
                return [V4Error(error=classified)]
            case _:
                return []  # ping, and events newer than this adapter

    # --- message ---------------------------------------------------------------------------

    def _message_start(self, message: dict[str, Any]) -> list[ModelStreamPart]:
        self._usage.update(as_dict(message.get("usage")))
        if isinstance(message.get("stop_reason"), str):
            self._stop_reason = message["stop_reason"]
        return [V4ResponseMetadata(**some(id=as_str(message.get("id")), model_id=as_str(message.get("model"))))]

    def _message_delta(self, delta: dict[str, Any], usage: dict[str, Any]) -> list[ModelStreamPart]:
        # message_delta carries running totals: a field it repeats replaces the earlier value.
        self._usage.update({key: value for key, value in usage.items() if value is not None})
        if isinstance(delta.get("stop_reason"), str):
            self._stop_reason = delta["stop_reason"]
        self._stop_sequence = as_str(delta.get("stop_sequence"))
        return []

    def _v4_usage(self) -> V4Usage:
        return usage_from_anthropic(self._usage)

    def _finish(self) -> V4Finish:
        metadata: ProviderMetadata | None = (
            {"anthropic": {"stopSequence": self._stop_sequence}} if self._stop_sequence is not None else None
        )
        return V4Finish(
            usage=self._v4_usage(),
            finish_reason=finish_reason(self._stop_reason, json_tool=self.uses_json_tool),
            **some(provider_metadata=metadata),
        )

    # --- content blocks ----------------------------------------------------------------------

    def _block_start(self, index: int, block: dict[str, Any]) -> list[ModelStreamPart]:
        kind = str(block.get("type"))
        block_id = str(index)
        if kind == "text" or (kind == "tool_use" and self.uses_json_tool and block.get("name") == "json"):
            self._blocks[index] = _Block("text", block_id)
            initial = block.get("text")
            start: list[ModelStreamPart] = [V4TextStart(id=block_id)]
            return start + ([V4TextDelta(id=block_id, delta=initial)] if isinstance(initial, str) and initial else [])
        if kind == "thinking":
            self._blocks[index] = _Block("reasoning", block_id)
            signature = block.get("signature")
            if isinstance(signature, str) and signature:
                self._blocks[index].metadata = {"anthropic": {"signature": signature}}
            initial = block.get("thinking")
            start = [V4ReasoningStart(id=block_id)]
            return start + (
                [V4ReasoningDelta(id=block_id, delta=initial)] if isinstance(initial, str) and initial else []
            )
        if kind == "redacted_thinking":
            metadata: ProviderMetadata = {"anthropic": {"redactedData": as_str(block.get("data"))}}
            self._blocks[index] = _Block("reasoning", block_id, metadata=metadata)
            return [V4ReasoningStart(id=block_id, provider_metadata=metadata)]
        if kind in _TOOL_USE_BLOCKS:
            return self._tool_start(index, kind, block)
        if kind.endswith("_tool_result"):
            return self._tool_result(kind, block)
        return []

    def _tool_start(self, index: int, kind: str, block: dict[str, Any]) -> list[ModelStreamPart]:
        tool_id, name = str(block.get("id")), str(block.get("name"))
        provider_executed = True if kind != "tool_use" else None
        input_type = None
        if kind == "server_tool_use" and name in SERVER_TOOL_NAMES:
            name, input_type = SERVER_TOOL_NAMES[name]
        metadata: ProviderMetadata | None = None
        if kind == "mcp_tool_use":
            metadata = {"anthropic": {"type": "mcp-tool-use", "serverName": as_str(block.get("server_name"))}}
        initial = block.get("input")
        self._tool_names[tool_id] = name
        self._blocks[index] = _Block(
            "tool",
            tool_id,
            tool_name=name,
            initial_input=dumps(initial) if isinstance(initial, dict) and initial else "",
            provider_executed=provider_executed,
            metadata=metadata,
            input_type=input_type,
        )
        return [V4ToolInputStart(id=tool_id, tool_name=name, **some(provider_executed=provider_executed))]

    def _tool_result(self, kind: str, block: dict[str, Any]) -> list[ModelStreamPart]:
        mapped = server_tool_result(kind, block, self.new_id)
        if mapped is not None:
            if mapped.document is not None:
                self.documents.append(mapped.document)
            self._web_results = self._web_results or mapped.web_results
            return mapped.parts
        return [self._other_tool_result(kind, block)]

    def _other_tool_result(self, kind: str, block: dict[str, Any]) -> V4ToolResult:
        tool_call_id = str(block.get("tool_use_id"))
        content: JsonValue = block.get("content")
        if kind == "mcp_tool_result":
            is_error = block.get("is_error") is True
        else:
            is_error = isinstance(content, dict) and str(content.get("type", "")).endswith("_error")
        name = self._tool_names.get(tool_call_id, kind.removesuffix("_tool_result"))
        return V4ToolResult(
            tool_call_id=tool_call_id, tool_name=name, result=content, **some(is_error=is_error or None)
        )

    def _block_delta(self, index: int, delta: dict[str, Any]) -> list[ModelStreamPart]:
        block = self._blocks.get(index)
        if block is None:
            return []
        match delta.get("type"), block.kind:
            case "text_delta", "text":
                return [V4TextDelta(id=block.id, delta=str(delta.get("text", "")))]
            case "input_json_delta", "text":  # the forced JSON tool: its input is the answer
                text = str(delta.get("partial_json", ""))
                return [V4TextDelta(id=block.id, delta=text)] if text else []
            case "citations_delta", "text":
                citation = as_dict(delta.get("citation"))
                block.citations.append(citation)
                if citation.get("type") == "web_search_result_location":
                    self._web_citations.append(citation)
                else:
                    source = citation_source(citation, self.documents, self.new_id)
                    return [source] if source is not None else []
            case "thinking_delta", "reasoning":
                return [V4ReasoningDelta(id=block.id, delta=str(delta.get("thinking", "")))]
            case "signature_delta", "reasoning":
                previous = (block.metadata or {}).get("anthropic", {}).get("signature")
                signature = (previous if isinstance(previous, str) else "") + str(delta.get("signature", ""))
                block.metadata = {"anthropic": {"signature": signature}}
            case "input_json_delta", "tool":
                text = str(delta.get("partial_json", ""))
                if text:
                    if block.input_type is not None and not block.input and not block.initial_input:
                        # Code execution's sub-tool travels in the input, as the AI SDK writes it.
                        text = f'{{"type": "{block.input_type}",{text[1:]}'
                    block.input += text
                    return [V4ToolInputDelta(id=block.id, delta=text)]
            case _:
                pass
        return []

    def _text_end(self, block: _Block) -> V4TextEnd:
        """Citations as the SDK ends a text: mapped, and raw in provider metadata to be sent back."""
        if not block.citations:
            return V4TextEnd(id=block.id)
        return V4TextEnd(
            id=block.id,
            citations=[citation_of(citation, self.documents) for citation in block.citations],
            provider_metadata={"anthropic": {"citations": cast(JsonValue, block.citations)}},
        )

    def _fallback_sources(self) -> list[ModelStreamPart]:
        """Web citations as sources, when no search result of this message gave them already."""
        citations, self._web_citations = self._web_citations, []
        if self._web_results:
            return []
        sources = [citation_source(citation, self.documents, self.new_id) for citation in citations]
        return [source for source in sources if source is not None]

    def _block_stop(self, index: int) -> list[ModelStreamPart]:
        block = self._blocks.pop(index, None)
        if block is None:
            return []
        if block.kind == "text":
            return [self._text_end(block)]
        if block.kind == "reasoning":
            return [V4ReasoningEnd(id=block.id, **some(provider_metadata=block.metadata))]
        parts: list[ModelStreamPart] = []
        if not block.input and block.initial_input:
            # The whole input came with content_block_start (programmatic tool calls): stream it once.
            block.input = block.initial_input
            parts.append(V4ToolInputDelta(id=block.id, delta=block.input))
        text = block.input or "{}"
        call = V4ToolCall(
            tool_call_id=block.id,
            tool_name=block.tool_name,
            input=programmatic_input(text) if block.input_type == "programmatic-tool-call" else text,
            **some(provider_executed=block.provider_executed, provider_metadata=block.metadata),
        )
        return [*parts, V4ToolInputEnd(id=block.id), call]


def _index(payload: dict[str, Any]) -> int:
    index = payload.get("index")
    return index if isinstance(index, int) else -1
