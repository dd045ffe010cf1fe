"""Content blocks for the Anthropic Messages API: files, tool-result content, and the conversion context.

Files become `image` or `document` blocks (by URL, base64, text or an uploaded file id; a `data:`
URL is sent as base64, a wildcard type like `image/*` is made exact from the data's first bytes).
A media type the model cannot take raises `UnsupportedCapabilityError` naming the part and what
the model does take. `PromptContext` carries what one conversion needs and what it reports
back: warnings, betas, and the count of cache breakpoints (the API takes at most four).

Pure: pydantic, the standard library and `stepline` only.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import assert_never

from pydantic import JsonValue

from ...protocol._json import dumps
from ...protocol.model_messages import (
    DataFileData,
    ModelFilePart,
    ProviderOptions,
    ReferenceFileData,
    TextFileData,
    ToolResultOutput,
    ToolResultPart,
    UrlFileData,
)
from ..base import ModelCapabilities
from ..errors import UnsupportedCapabilityError
from .options import Warning, parse_cache_control, parse_file_part_options, to_snake_wire

__all__ = ["IMAGE_TYPES", "Block", "PromptContext", "file_block", "tool_result_block"]

Block = dict[str, JsonValue]
MAX_CACHE_BREAKPOINTS = 4
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_MAGIC = {"iVBORw0KGgo": "image/png", "/9j/": "image/jpeg", "R0lGOD": "image/gif", "UklGR": "image/webp"}
_MAGIC_PDF = "JVBERi0"
DENIED_TEXT = "Tool call execution denied."


@dataclass
class PromptContext:
    """What the conversion needs to know, and what it reports back (warnings, betas)."""

    model_id: str
    capabilities: ModelCapabilities
    send_reasoning: bool = True
    warnings: list[Warning] = field(default_factory=list[Warning])
    betas: list[str] = field(default_factory=list[str])
    breakpoints: int = 0

    def add_beta(self, beta: str) -> None:
        if beta not in self.betas:
            self.betas.append(beta)

    def warn(self, message: str) -> None:
        self.warnings.append({"type": "other", "message": message})

    def cache_control(self, provider_options: ProviderOptions | None, where: str) -> JsonValue:
        """The block's `cache_control`, or None; past the fourth breakpoint a warning instead."""
        value = parse_cache_control(provider_options, where)
        if value is None:
            return None
        self.breakpoints += 1
        if self.breakpoints > MAX_CACHE_BREAKPOINTS:
            self.warnings.append(
                {
                    "type": "unsupported",
                    "feature": "cacheControl breakpoint limit",
                    "details": f"Anthropic takes at most {MAX_CACHE_BREAKPOINTS} cache breakpoints; "
                    f"{where} was sent without one.",
                }
            )
            return None
        return to_snake_wire(value)


def file_block(part: ModelFilePart, context: PromptContext, where: str) -> Block:
    """An `image` or `document` block for a user file part."""
    data = part.data
    if isinstance(data, UrlFileData) and data.url.startswith("data:"):
        media_type, data = _from_data_url(data.url, part.media_type, context, where)
    else:
        media_type = _resolve_media_type(part.media_type, data)
    _check_accepted(media_type, context, where, part.filename)
    source = _source(media_type, data, context, where)
    if media_type.startswith("image/"):
        return {"type": "image", "source": source}
    return _document(source, part, where)


def _from_data_url(
    url: str, declared: str, context: PromptContext, where: str
) -> tuple[str, DataFileData | TextFileData]:
    header, _, payload = url[len("data:") :].partition(",")
    if not header.endswith(";base64"):
        raise UnsupportedCapabilityError(
            f"{where}: only base64 data URLs can be sent to Anthropic", provider="anthropic", model_id=context.model_id
        )
    data = DataFileData(data=payload)
    media_type = header.removesuffix(";base64") or declared
    return _resolve_media_type(media_type if "*" not in media_type else declared, data), data


def _resolve_media_type(media_type: str, data: UrlFileData | DataFileData | TextFileData | ReferenceFileData) -> str:
    """A wildcard type (`image/*`) of inline data, made exact from the data's first bytes."""
    if not media_type.endswith("/*") or not isinstance(data, DataFileData):
        return media_type
    for prefix, detected in _MAGIC.items():
        if data.data.startswith(prefix):
            return detected
    return "application/pdf" if data.data.startswith(_MAGIC_PDF) else media_type


def _check_accepted(media_type: str, context: PromptContext, where: str, filename: str | None) -> None:
    takes = context.capabilities.input_media_types
    if media_type.endswith("/*"):  # by URL or file id: the API finds the exact type itself
        major = media_type.split("/", 1)[0]
        if any(accepted == "*/*" or accepted.startswith(f"{major}/") for accepted in takes):
            return
    elif context.capabilities.accepts(media_type) and (
        media_type in IMAGE_TYPES or not media_type.startswith("image/")
    ):
        return
    name = f" ({filename})" if filename else ""
    raise UnsupportedCapabilityError(
        f"{where}: {context.model_id} cannot take a {media_type} file{name}; it takes {', '.join(takes) or 'no files'}",
        provider="anthropic",
        model_id=context.model_id,
    )


def _source(
    media_type: str,
    data: UrlFileData | DataFileData | TextFileData | ReferenceFileData,
    context: PromptContext,
    where: str,
) -> Block:
    match data:
        case UrlFileData():
            return {"type": "url", "url": data.url}
        case ReferenceFileData():
            file_id = data.reference.get("anthropic")
            if file_id is None:
                raise UnsupportedCapabilityError(
                    f"{where}: the file reference has no Anthropic file id",
                    provider="anthropic",
                    model_id=context.model_id,
                )
            context.add_beta("files-api-2025-04-14")
            return {"type": "file", "file_id": file_id}
        case TextFileData():
            return {"type": "text", "media_type": "text/plain", "data": data.text}
        case DataFileData():
            if media_type == "text/plain":
                return {"type": "text", "media_type": "text/plain", "data": _decode_text(data.data, context, where)}
            return {"type": "base64", "media_type": media_type, "data": data.data}
        case _:
            assert_never(data)


def _decode_text(data: str, context: PromptContext, where: str) -> str:
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise UnsupportedCapabilityError(
            f"{where}: a text/plain file must be base64 of UTF-8 text", provider="anthropic", model_id=context.model_id
        ) from None


def _document(source: Block, part: ModelFilePart, where: str) -> Block:
    options = parse_file_part_options(part.provider_options, where)
    block: Block = {"type": "document", "source": source}
    title = options.title or part.filename
    if title is not None:
        block["title"] = title
    if options.context:
        block["context"] = options.context
    if options.citations is not None and options.citations.enabled:
        block["citations"] = {"enabled": True}
    return block


def tool_result_block(part: ToolResultPart, context: PromptContext) -> Block:
    """A `tool_result` block; error outputs set `is_error`, a denial sends its reason as text."""
    output: ToolResultOutput = part.output
    block: Block = {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": None}
    match output.type:
        case "text" | "error-text":
            block["content"] = output.value
        case "json" | "error-json":
            block["content"] = dumps(output.value)
        case "execution-denied":
            block["content"] = output.reason or DENIED_TEXT
        case "content":
            block["content"] = list[JsonValue](_content_items(output.value, context))
    if output.type in ("error-text", "error-json"):
        block["is_error"] = True
    return block


def _content_items(items: list[dict[str, JsonValue]], context: PromptContext) -> list[Block]:
    blocks: list[Block] = []
    for item in items:
        converted = _content_item(item)
        if converted is None:
            context.warn(f"a tool result content item of type {item.get('type')!r} cannot be sent to Anthropic")
        else:
            blocks.append(converted)
    return blocks


def _content_item(item: dict[str, JsonValue]) -> Block | None:
    kind, media_type = item.get("type"), item.get("mediaType")
    data, url = item.get("data"), item.get("url")
    if isinstance(data, dict):  # ai v7 `file` items: {type: "file", mediaType, data: {type, data | url}}
        data, url = data.get("data"), data.get("url")
    if kind == "text" and isinstance(item.get("text"), str):
        return {"type": "text", "text": item["text"]}
    is_image = kind in ("image-data", "image-url", "media") or (
        isinstance(media_type, str) and media_type.startswith("image/")
    )
    target = "image" if is_image else "document"
    if isinstance(url, str):
        return {"type": target, "source": {"type": "url", "url": url}}
    if isinstance(data, str) and isinstance(media_type, str) and (is_image or media_type == "application/pdf"):
        return {"type": target, "source": {"type": "base64", "media_type": media_type, "data": data}}
    return None
