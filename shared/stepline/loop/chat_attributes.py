"""The GenAI semantic-convention attributes of a `chat {model}` span.

What was asked (`gen_ai.request.*`: the settings that were sent), what came back
(`gen_ai.response.*`, `gen_ai.usage.*`) and, only with content capture on, the content in the
conventions' message shape: `gen_ai.system_instructions` and `gen_ai.input.messages` /
`gen_ai.output.messages` (a list of `{role, parts}` whose parts are `text`, `reasoning`,
`tool_call` and `tool_call_response`), `gen_ai.tool.definitions`. Content comes from the masked,
sized request view (`request_view`), so it is never rawer than what the inspector shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..llm.base import ModelCallOptions
from .request_view import response_view
from .telemetry import AttributeValue, content

if TYPE_CHECKING:
    from .call_parts import ModelCallResult

__all__ = ["chat_attributes", "chat_result_attributes", "content_attributes", "output_messages"]


def chat_attributes(provider: str, model_id: str, options: ModelCallOptions) -> dict[str, AttributeValue | None]:
    """The request side of a chat span."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model_id,
        "gen_ai.request.max_tokens": options.max_output_tokens,
        "gen_ai.request.temperature": options.temperature,
        "gen_ai.request.top_p": options.top_p,
        "gen_ai.request.top_k": options.top_k,
        "gen_ai.request.presence_penalty": options.presence_penalty,
        "gen_ai.request.frequency_penalty": options.frequency_penalty,
        "gen_ai.request.stop_sequences": list(options.stop_sequences) if options.stop_sequences else None,
        "gen_ai.request.seed": options.seed,
        "gen_ai.output.type": "json" if options.response_format is not None else "text",
    }


def chat_result_attributes(result: ModelCallResult) -> dict[str, AttributeValue | None]:
    """The response side of a chat span: ids, finish reason and tokens."""
    usage = result.usage
    return {
        "gen_ai.response.id": result.response_id,
        "gen_ai.response.model": result.model_id,
        "gen_ai.response.finish_reasons": [result.finish_reason],
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
    }


def _part(part: Mapping[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind in ("text", "reasoning"):
        return {"type": kind, "content": part.get("text", "")}
    if kind == "tool-call":
        return {
            "type": "tool_call",
            "id": part.get("toolCallId"),
            "name": part.get("toolName"),
            "arguments": part.get("input"),
        }
    if kind == "tool-result":
        return {"type": "tool_call_response", "id": part.get("toolCallId"), "response": part.get("output")}
    return {"type": str(kind), **{k: v for k, v in part.items() if k != "type"}}


def _conventions_message(message: Mapping[str, Any]) -> dict[str, Any]:
    raw = message.get("content")
    parts: list[dict[str, Any]]
    if isinstance(raw, str):
        parts = [{"type": "text", "content": raw}]
    else:
        parts = [_part(cast(Mapping[str, Any], p)) for p in cast(Sequence[Any], raw or []) if isinstance(p, Mapping)]
    return {"role": message.get("role"), "parts": parts}


def content_attributes(request: Mapping[str, Any]) -> dict[str, AttributeValue | None]:
    """Opt-in content of a chat span's request, from its masked view."""
    instructions = [
        part
        for message in cast(Sequence[Mapping[str, Any]], request.get("instructions") or [])
        for part in _conventions_message(message)["parts"]
    ]
    messages = [_conventions_message(m) for m in cast(Sequence[Mapping[str, Any]], request.get("messages") or [])]
    tools = cast(Sequence[Mapping[str, Any]], request.get("tools") or [])
    definitions = [
        {
            "type": t.get("type"),
            "name": t.get("name"),
            "description": t.get("description"),
            "parameters": t.get("inputSchema"),
        }
        for t in tools
    ]
    return {
        "gen_ai.system_instructions": content(instructions) if instructions else None,
        "gen_ai.input.messages": content(messages),
        "gen_ai.tool.definitions": content(definitions) if definitions else None,
    }


def output_messages(result: ModelCallResult) -> list[dict[str, Any]]:
    """The answer in the conventions' output message shape (masked and sized like the inspector's)."""
    view = response_view(
        texts=[v[0] for k, v in result.content if k == "text"],
        reasoning=[v[0] for k, v in result.content if k == "reasoning"],
        tool_calls=[
            {"toolCallId": c.tool_call_id, "toolName": c.tool_name, "input": c.input} for c in result.tool_calls
        ],
        finish_reason=result.finish_reason,
        usage={},
        response_id=None,
        model_id=None,
    )
    parts: list[dict[str, Any]] = []
    if view.get("reasoning"):
        parts.append({"type": "reasoning", "content": view["reasoning"]})
    if view.get("text"):
        parts.append({"type": "text", "content": view["text"]})
    for call in cast(Sequence[Mapping[str, Any]], view.get("toolCalls") or []):
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("toolCallId"),
                "name": call.get("toolName"),
                "arguments": call.get("input"),
            }
        )
    return [{"role": "assistant", "parts": parts, "finish_reason": result.finish_reason}]
