"""Prompt pieces both OpenAI APIs share: tool arguments and outputs as text, files as data URLs.

The tool-output rules are `@ai-sdk/openai` 4.0.46's (`convert-to-openai-chat-messages.ts`,
`convert-to-openai-responses-input.ts`): text and error text as they are, JSON compact, a denied
execution as its reason (or "Tool call execution denied."). Pure.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from pydantic import JsonValue

from ...protocol._json import dumps
from ...protocol.model_messages import (
    ContentOutput,
    DataFileData,
    ErrorJsonOutput,
    ErrorTextOutput,
    ExecutionDeniedOutput,
    JsonOutput,
    ModelFilePart,
    ProviderOptions,
    ReferenceFileData,
    TextFileData,
    TextOutput,
    ToolCallPart,
    ToolResultOutput,
)
from ..base import ModelCapabilities
from ..errors import UnsupportedCapabilityError

__all__ = [
    "DENIED_TOOL_OUTPUT",
    "FileTarget",
    "file_base64",
    "file_reference_id",
    "openai_options_of",
    "resolve_media_type",
    "string_option",
    "tool_call_arguments",
    "tool_output_text",
    "tool_result_text",
]

DENIED_TOOL_OUTPUT = "Tool call execution denied."

# Leading base64 characters of common image formats, to resolve an `image/*` media type.
_IMAGE_SIGNATURES: tuple[tuple[str, str], ...] = (
    ("iVBORw0KGg", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
)


def openai_options_of(options: ProviderOptions | None, provider: str = "openai") -> Mapping[str, JsonValue]:
    """The `provider` entry of a part's or message's provider options (empty when absent)."""
    if options is None:
        return {}
    return options.get(provider) or {}


def string_option(options: Mapping[str, JsonValue], key: str) -> str | None:
    """`options[key]` when it is a string, else None."""
    value = options.get(key)
    return value if isinstance(value, str) else None


def tool_call_arguments(part: ToolCallPart) -> str:
    """The JSON text of a tool call's input; a call without input sends `{}`."""
    return dumps({} if part.input is None else part.input)


def tool_output_text(
    output: TextOutput | ErrorTextOutput | ExecutionDeniedOutput | JsonOutput | ErrorJsonOutput,
) -> str:
    """A tool result as the text OpenAI receives (`function_call_output.output` / `role: tool` content)."""
    match output:
        case TextOutput() | ErrorTextOutput():
            return output.value
        case ExecutionDeniedOutput():
            return output.reason if output.reason is not None else DENIED_TOOL_OUTPUT
        case JsonOutput() | ErrorJsonOutput():
            return dumps(output.value)


def tool_result_text(output: ToolResultOutput) -> str:
    """Like `tool_output_text`, with content items serialised as JSON (what Chat Completions gets)."""
    if isinstance(output, ContentOutput):
        return dumps(output.value)
    return tool_output_text(output)


def resolve_media_type(part: ModelFilePart) -> str:
    """The part's media type, with `image/*` resolved from the image's first bytes where possible."""
    media_type = part.media_type
    if media_type in ("image/*", "image") and isinstance(part.data, DataFileData):
        for prefix, resolved in _IMAGE_SIGNATURES:
            if part.data.data.startswith(prefix):
                return resolved
    return media_type


def file_base64(data: DataFileData | TextFileData) -> str:
    """Base64 content of inline file data (text data is UTF-8 encoded first)."""
    if isinstance(data, DataFileData):
        return data.data
    return base64.b64encode(data.text.encode()).decode("ascii")


class FileTarget:
    """Who receives a file, for error messages: provider, model id and API label."""

    __slots__ = ("api_label", "capabilities", "model_id", "provider")

    def __init__(self, *, provider: str, model_id: str, api_label: str, capabilities: ModelCapabilities) -> None:
        self.provider = provider
        self.model_id = model_id
        self.api_label = api_label
        self.capabilities = capabilities

    def unsupported(self, what: str, hint: str = "") -> UnsupportedCapabilityError:
        """An error saying this model on this API cannot take `what`."""
        message = f"{self.model_id} on {self.api_label} cannot take {what}"
        return UnsupportedCapabilityError(
            message + (f"; {hint}" if hint else ""), provider=self.provider, model_id=self.model_id
        )


def file_reference_id(data: ReferenceFileData, target: FileTarget) -> str:
    """The OpenAI file id of an uploaded-file reference."""
    file_id = data.reference.get(target.provider)
    if file_id is None:
        raise target.unsupported(
            "a file reference without an OpenAI file id", f"known providers: {sorted(data.reference)}"
        )
    return file_id
