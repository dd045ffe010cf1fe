"""A model request and its response as plain JSON: what the run inspector shows and spans may carry.

`request_view` is the call as the loop sent it to the model adapter: the instructions, the
messages, every tool with its input schema, the tool choice, the settings, the provider options
and the extra headers. `response_view` summarises what came back: text, reasoning, tool calls,
the finish reason, tokens and the response's ids. Both are masked (`store.redaction.Redactor`:
secret-named keys such as `authorization` or `api_key`, and credential-shaped strings anywhere)
and sized: a file's bytes become their media type and length, and a string longer than
`MAX_STRING` is cut with a note of how much was left out. Pure: JSON in, JSON out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from pydantic import JsonValue

from ..llm.base import FunctionTool, ModelCallOptions, ProviderTool, ToolDefinition
from ..protocol.model_messages import ModelMessage, SystemModelMessage
from ..store.redaction import Redactor

__all__ = ["MAX_STRING", "masked", "message_views", "request_view", "response_view"]

MAX_STRING: Final = 32_000
"""Characters kept of one string (a message's text, a tool result); the rest is counted, not kept."""

_REDACTOR: Final = Redactor()
_BINARY_KEYS: Final = frozenset({"data", "base64"})


def _sized(value: Any) -> Any:
    """`value` with file bytes replaced by their length and long strings cut."""
    if isinstance(value, str):
        return (
            value if len(value) <= MAX_STRING else f"{value[:MAX_STRING]}… [{len(value) - MAX_STRING} more characters]"
        )
    if isinstance(value, Mapping):
        entries = cast(Mapping[str, Any], value)
        binary = entries.get("type") in ("file", "data", "reasoning-file", "image", "media")
        out: dict[str, Any] = {}
        for key, item in entries.items():
            if binary and key in _BINARY_KEYS and isinstance(item, str):
                out[key] = f"[{len(item)} characters of base64 omitted]"
            elif binary and key in _BINARY_KEYS and isinstance(item, Mapping):
                out[key] = _sized_file_data(cast(Mapping[str, Any], item))
            else:
                out[key] = _sized(item)
        return out
    if isinstance(value, list | tuple):
        return [_sized(item) for item in cast(Sequence[Any], value)]
    return value


def _sized_file_data(data: Mapping[str, Any]) -> dict[str, Any]:
    inner = data.get("data")
    if data.get("type") == "data" and isinstance(inner, str):
        return {**data, "data": f"[{len(inner)} characters of base64 omitted]"}
    return {key: _sized(item) for key, item in data.items()}


def masked(value: Any) -> JsonValue:
    """`value` sized (file bytes dropped, long strings cut) and masked: safe to show or to put in a span."""
    return cast(JsonValue, _REDACTOR.redact(_sized(value)))


_clean = masked


def message_views(messages: Sequence[ModelMessage]) -> list[JsonValue]:
    """The messages in their wire form (as the AI SDK writes `ModelMessage`s), sized and masked."""
    return [_clean(message.to_wire()) for message in messages]


def _tool_view(tool: ToolDefinition) -> dict[str, Any]:
    if isinstance(tool, FunctionTool):
        view: dict[str, Any] = {"type": "function", "name": tool.name, "inputSchema": tool.input_schema}
        if tool.description is not None:
            view["description"] = tool.description
        if tool.strict is not None:
            view["strict"] = tool.strict
        if tool.provider_options:
            view["providerOptions"] = tool.provider_options
        return view
    assert isinstance(tool, ProviderTool)
    return {"type": "provider", "id": tool.id, "name": tool.name, "args": tool.args}


def _settings(options: ModelCallOptions) -> dict[str, Any]:
    values: dict[str, Any] = {
        "maxOutputTokens": options.max_output_tokens,
        "temperature": options.temperature,
        "topP": options.top_p,
        "topK": options.top_k,
        "presencePenalty": options.presence_penalty,
        "frequencyPenalty": options.frequency_penalty,
        "stopSequences": options.stop_sequences,
        "seed": options.seed,
        "reasoning": options.reasoning,
    }
    if options.response_format is not None:
        values["responseFormat"] = {
            "type": options.response_format.type,
            "name": options.response_format.name,
            "schema": options.response_format.schema,
        }
    return {key: value for key, value in values.items() if value is not None}


def request_view(provider: str, model_id: str, options: ModelCallOptions) -> dict[str, JsonValue]:
    """The request of one model call as sent to the adapter, masked and sized."""
    instructions = [m for m in options.prompt if isinstance(m, SystemModelMessage)]
    messages = [m for m in options.prompt if not isinstance(m, SystemModelMessage)]
    view: dict[str, Any] = {
        "provider": provider,
        "model": model_id,
        "instructions": message_views(instructions),
        "messages": message_views(messages),
        "tools": [_tool_view(tool) for tool in options.tools],
        "settings": _settings(options),
    }
    if options.tool_choice is not None:
        view["toolChoice"] = options.tool_choice
    if options.provider_options:
        view["providerOptions"] = options.provider_options
    if options.headers:
        view["headers"] = options.headers
    return cast(dict[str, JsonValue], _clean(view))


def response_view(
    *,
    texts: Sequence[str],
    reasoning: Sequence[str],
    tool_calls: Sequence[Mapping[str, Any]],
    finish_reason: str,
    usage: Mapping[str, Any],
    response_id: str | None,
    model_id: str | None,
) -> dict[str, JsonValue]:
    """What the model answered, summarised: text, reasoning, tool calls, finish reason, tokens."""
    view: dict[str, Any] = {
        "text": "".join(texts),
        "toolCalls": list(tool_calls),
        "finishReason": finish_reason,
        "usage": dict(usage),
    }
    if reasoning:
        view["reasoning"] = "".join(reasoning)
    if response_id is not None:
        view["responseId"] = response_id
    if model_id is not None:
        view["modelId"] = model_id
    return cast(dict[str, JsonValue], _clean(view))
