"""Provider-executed tool calls and results → the `server_tool_use` and `*_tool_result` blocks sent back.

After `convertToAnthropicPrompt` of `@ai-sdk/anthropic` (`src/convert-to-anthropic-prompt.ts`,
4.0.105): the inverse of `server_results`. Anthropic wants a server tool's call and result back
exactly as it sent them (a search result's `encrypted_content` is what lets a later answer cite
it), so the camelCase results the stream produced are spelt the API's way again:

    code_execution {type: bash_code_execution | text_editor_code_execution, …}
                          → server_tool_use named after the sub-tool, without `type`
    code_execution {type: programmatic-tool-call, code}  → server_tool_use code_execution {code}
    web_search result     → web_search_tool_result [{url, title, page_age, encrypted_content, type}]
    web_fetch result      → web_fetch_tool_result {type, url, retrieved_at, content: {…, source:
                            {type, media_type, data}}}
    code_execution result → code_execution_tool_result, bash_code_execution_tool_result or
                            text_editor_code_execution_tool_result, by the result's `type`
    an error              → the tool's `*_tool_result_error` with its `error_code`

An error arrives as `error-json` (the SDK's shape, and a UI message's `errorText` on the next turn)
or as `error-text` holding the same JSON (a step of this run). Other provider-executed tools keep
the generic `<tool>_tool_result` block with the output's value.

Pure: pydantic, the standard library and `stepline` only.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import JsonValue

from ...protocol._json import loads_strict
from ...protocol.model_messages import ErrorJsonOutput, ErrorTextOutput, JsonOutput, ToolCallPart, ToolResultPart
from .content import Block, PromptContext
from .fields import as_dict, dict_list, pick

__all__ = ["server_tool_result_block", "server_tool_use_block"]

_SUB_TOOLS = ("bash_code_execution", "text_editor_code_execution")


def server_tool_use_block(part: ToolCallPart, tool_input: JsonValue) -> Block:
    """The `server_tool_use` block of a provider-executed call (`tool_input` already an object)."""
    name: str = part.tool_name
    if name == "code_execution" and isinstance(tool_input, dict):
        kind = tool_input.get("type")
        if kind in _SUB_TOOLS or kind == "programmatic-tool-call":
            name = str(kind) if kind in _SUB_TOOLS else name
            tool_input = {key: value for key, value in tool_input.items() if key != "type"}
    return {"type": "server_tool_use", "id": part.tool_call_id, "name": name, "input": tool_input}


def server_tool_result_block(part: ToolResultPart, context: PromptContext, where: str) -> Block | None:
    """The `*_tool_result` block of a provider-executed result, or None (with a warning) when it cannot go."""
    output = part.output
    if not isinstance(output, JsonOutput | ErrorJsonOutput | ErrorTextOutput):
        context.warn(f"{where}: a provider-executed {output.type} result cannot be sent to Anthropic")
        return None
    block: Block = {"tool_use_id": part.tool_call_id}
    error = None if isinstance(output, JsonOutput) else _error_info(output.value)
    match part.tool_name:
        case "web_search" | "web_fetch":
            block["type"] = f"{part.tool_name}_tool_result"
            if error is not None:
                code = error.get("errorCode")
                code = code if isinstance(code, str) else "unavailable"
                block["content"] = {"type": f"{part.tool_name}_tool_result_error", "error_code": code}
            elif part.tool_name == "web_search":
                block["content"] = [_search_result(item) for item in dict_list(output.value)]
            else:
                block["content"] = _fetch_result(as_dict(output.value))
        case "code_execution":
            if error is not None:
                code = error.get("errorCode")
                code = code if isinstance(code, str) else "unknown"
                kind = (
                    "code_execution"
                    if error.get("type") == "code_execution_tool_result_error"
                    else "bash_code_execution"
                )
                block.update(
                    {
                        "type": f"{kind}_tool_result",
                        "content": {"type": f"{kind}_tool_result_error", "error_code": code},
                    }
                )
            else:
                block.update(_code_result(as_dict(output.value)))
        case _:
            if isinstance(output, ErrorTextOutput):
                context.warn(f"{where}: a provider-executed error-text result cannot be sent to Anthropic")
                return None
            block = {"type": f"{part.tool_name}_tool_result", "tool_use_id": part.tool_call_id, "content": output.value}
    return {"type": block.pop("type"), **block}


def _search_result(item: dict[str, Any]) -> JsonValue:
    return {
        **pick(item, url="url", title="title", page_age="pageAge", encrypted_content="encryptedContent"),
        **pick(item, type="type"),
    }


def _fetch_result(value: dict[str, Any]) -> JsonValue:
    document = as_dict(value.get("content"))
    source = as_dict(document.get("source"))
    content: dict[str, JsonValue] = {
        "type": "document",
        **pick(document, title="title", citations="citations"),
        "source": pick(source, type="type", media_type="mediaType", data="data"),
    }
    return {"type": "web_fetch_result", **pick(value, url="url", retrieved_at="retrievedAt"), "content": content}


def _code_result(value: dict[str, Any]) -> Block:
    kind = value.get("type")
    if kind in ("code_execution_result", "encrypted_code_execution_result"):
        stdout = "stdout" if kind == "code_execution_result" else "encrypted_stdout"
        fields = pick(value, type="type", **{stdout: stdout}, stderr="stderr", return_code="return_code")
        return {"type": "code_execution_tool_result", "content": {**fields, "content": value.get("content") or []}}
    if kind == "bash_code_execution_result":
        # Key order as the SDK keeps it: prompt caching needs the same bytes every time.
        fields = pick(
            value, type="type", stdout="stdout", stderr="stderr", return_code="return_code", content="content"
        )
        return {"type": "bash_code_execution_tool_result", "content": fields}
    if kind == "bash_code_execution_tool_result_error":
        return {"type": "bash_code_execution_tool_result", "content": cast(JsonValue, value)}
    return {"type": "text_editor_code_execution_tool_result", "content": cast(JsonValue, value)}


def _error_info(value: JsonValue) -> dict[str, Any]:
    """`{type, errorCode}` from an error output: an object, or the JSON text of one."""
    if isinstance(value, str):
        try:
            value = loads_strict(value)
        except ValueError:
            return {}
    return as_dict(value)
