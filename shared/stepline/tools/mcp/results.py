"""An MCP tool result as a Stepline tool output, and that output as what the model reads.

The output (the tool part's `output`, stored with the message) is JSON:

- the result's `structuredContent` when the tool returns one (its declared output schema);
- else the text, when every content block is text;
- else `{"content": [...]}` with one item per block: `{"type": "text", "text"}`,
  `{"type": "image" | "audio", "mediaType", "data"}` (base64), `{"type": "resource", "uri",
  "mediaType"?, "text" | "data"}` (an embedded resource) and `{"type": "resource-link", "uri",
  "name", "mediaType"?}`.

`to_model_output` gives the model the `content` form as the SDK's content output (text items, and
images and PDFs as `file` items with their data), so a vision model sees the image instead of its
base64; the other two forms reach the model as JSON and text as usual.
"""

from __future__ import annotations

from typing import Any, cast

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from pydantic import JsonValue

__all__ = ["output_of", "to_model_output"]


def output_of(result: CallToolResult) -> JsonValue:
    """The tool output for a successful result."""
    if result.structured_content is not None:
        return cast(JsonValue, result.structured_content)
    if all(isinstance(block, TextContent) for block in result.content):
        return "\n".join(cast(TextContent, block).text for block in result.content)
    return {"content": [_item(block) for block in result.content]}


def _item(block: Any) -> dict[str, JsonValue]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return {"type": kind, "mediaType": block.mime_type, "data": block.data}
    if isinstance(block, EmbeddedResource):
        return _resource(block.resource)
    if isinstance(block, ResourceLink):
        link: dict[str, JsonValue] = {"type": "resource-link", "uri": str(block.uri), "name": block.name}
        if block.mime_type:
            link["mediaType"] = block.mime_type
        return link
    return {"type": "text", "text": f"[an MCP content block of type {getattr(block, 'type', '?')}]"}


def _resource(contents: TextResourceContents | BlobResourceContents) -> dict[str, JsonValue]:
    item: dict[str, JsonValue] = {"type": "resource", "uri": str(contents.uri)}
    if contents.mime_type:
        item["mediaType"] = contents.mime_type
    if isinstance(contents, TextResourceContents):
        item["text"] = contents.text
    else:
        item["data"] = contents.blob
    return item


def to_model_output(_tool_call_id: str, _input: Any, output: Any) -> dict[str, Any]:
    """What the model reads for `output` (the SDK's `ToolResultOutput` wire form)."""
    if isinstance(output, str):
        return {"type": "text", "value": output}
    fields = cast(dict[str, Any], output) if isinstance(output, dict) else {}
    items = fields.get("content") if len(fields) == 1 else None
    if not isinstance(items, list):
        return {"type": "json", "value": output}
    return {"type": "content", "value": [_model_item(item) for item in cast(list[dict[str, Any]], items)]}


def _model_item(item: dict[str, Any]) -> dict[str, Any]:
    kind, media_type = item.get("type"), item.get("mediaType")
    if kind == "text":
        return {"type": "text", "text": item.get("text", "")}
    sendable = isinstance(media_type, str) and (media_type.startswith("image/") or media_type == "application/pdf")
    if isinstance(item.get("data"), str) and sendable:
        return {"type": "file", "mediaType": media_type, "data": {"type": "data", "data": item["data"]}}
    if kind == "resource" and isinstance(item.get("text"), str):
        return {"type": "text", "text": f"{item['uri']}:\n{item['text']}"}
    described = item.get("uri") or media_type or kind
    return {"type": "text", "text": f"[{kind} {described}: not shown to the model]"}
