"""Provider-executed tool calls and results in an assistant message → Responses input items (pure).

Follows `convert-to-openai-responses-input.ts` of `@ai-sdk/openai` 4.0.118. OpenAI ran these tools
itself and keeps their output items with the response, so what goes back is a reference:

    tool-call   (providerExecuted)     {"type": "item_reference", "id": itemId} when stored and the
                                       call carries an `itemId` (the four built-in tools' calls do
                                       not: their call id *is* the item id, sent with the result)
    tool-result web_search             {"type": "item_reference", "id": itemId or the call id};
                                       with `store: false` the `web_search_call` item rebuilt from
                                       the result (action, sources)
    tool-result file_search,           {"type": "item_reference", "id": itemId or the call id};
      code_interpreter,                with `store: false` nothing (OpenAI has no way to take them
      image_generation                 back inline) and a warning says so

Nothing is sent in a conversation (`conversation`: the items already live there) or for a denied
execution (no item exists).
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from ...protocol.model_messages import ExecutionDeniedOutput, JsonOutput, ToolResultPart
from .options import CallWarning, other_warning
from .prompt import openai_options_of, string_option
from .responses_context import ResponsesInputContext

__all__ = ["provider_call_item", "provider_result_items"]

Item = dict[str, Any]

_WEB_SEARCH = frozenset({"web_search", "web_search_preview"})


def provider_call_item(item_id: str | None, context: ResponsesInputContext) -> Item | None:
    """The input item for a provider-executed call with OpenAI item id `item_id`, if any."""
    if item_id is None or context.has_conversation or not context.store:
        return None
    return {"type": "item_reference", "id": item_id}


def provider_result_items(
    part: ToolResultPart, context: ResponsesInputContext, warnings: list[CallWarning]
) -> list[Item]:
    """The input items for the result of a tool OpenAI ran (an assistant `tool-result` part)."""
    if _denied(part) or context.has_conversation:
        return []
    item_id = string_option(openai_options_of(part.provider_options, context.provider), "itemId") or part.tool_call_id
    if context.store:
        return [{"type": "item_reference", "id": item_id}]
    if context.tool_names.to_provider(part.tool_name) in _WEB_SEARCH:
        call = _web_search_call(part, item_id)
        if call is not None:
            return [call]
    message = f"Results for OpenAI tool {part.tool_name} are not sent to the API when store is false"
    warnings.append(other_warning(message))
    return []


def _denied(part: ToolResultPart) -> bool:
    output = part.output
    if isinstance(output, ExecutionDeniedOutput):
        return True
    value = output.value if isinstance(output, JsonOutput) else None
    return isinstance(value, dict) and value.get("type") == "execution-denied"


def _web_search_call(part: ToolResultPart, item_id: str) -> Item | None:
    """The `web_search_call` item a web search result came from (`convertWebSearchToolResultOutput`)."""
    output = part.output
    if not isinstance(output, JsonOutput) or not isinstance(output.value, dict):
        return None
    action = output.value.get("action")
    if not isinstance(action, dict):
        return None
    sources = output.value.get("sources")
    item: Item = {"type": "web_search_call", "id": item_id, "status": "completed"}
    match action.get("type"):
        case "search":
            search: dict[str, JsonValue] = {"type": "search"}
            for key in ("query", "queries"):
                if action.get(key) is not None:
                    search[key] = action[key]
            if sources is not None:
                search["sources"] = sources
            item["action"] = search
        case "openPage":
            item["action"] = {"type": "open_page", "url": action.get("url")}
        case "findInPage":
            item["action"] = {"type": "find_in_page", "url": action.get("url"), "pattern": action.get("pattern")}
        case _:
            return None
    return item
