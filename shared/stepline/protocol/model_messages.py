"""ModelMessage: the prompt form a language model receives, in the AI SDK's JSON shape.

Mirrors `ModelMessage` of `@ai-sdk/provider-utils` (`src/types/model-message.ts` and the files it
imports: `content-part.ts`, `file-data.ts`, `tool-approval-request.ts`, `tool-approval-response.ts`)
as `ai@7.0.173` ships it. Field names are snake_case in Python and camelCase on the wire;
`to_wire()` omits every field that was never set, as `JSON.stringify` omits `undefined`.

Two simplifications: a file URL is the string that `new URL(url).href` gives (the SDK holds a `URL`
object, whose JSON form is that string), and user/assistant content is always a list of parts
(never the SDK's bare-string shorthand, which `convertToModelMessages` never produces).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue

from ._base import WireModel

__all__ = [
    "AssistantContentPart",
    "AssistantModelMessage",
    "ContentOutput",
    "DataFileData",
    "ErrorJsonOutput",
    "ErrorTextOutput",
    "ExecutionDeniedOutput",
    "JsonOutput",
    "ModelCustomPart",
    "ModelFileData",
    "ModelFilePart",
    "ModelMessage",
    "ModelReasoningFilePart",
    "ModelReasoningPart",
    "ModelTextPart",
    "ProviderOptions",
    "ReferenceFileData",
    "SystemModelMessage",
    "TextFileData",
    "TextOutput",
    "ToolApprovalRequestPart",
    "ToolApprovalResponsePart",
    "ToolCallPart",
    "ToolContentPart",
    "ToolModelMessage",
    "ToolResultOutput",
    "ToolResultPart",
    "UrlFileData",
    "UserContentPart",
]

ProviderOptions = dict[str, dict[str, JsonValue]]
"""Provider-specific options keyed by provider name (`{"openai": {...}}`)."""


# --- file data -------------------------------------------------------------------------------


class UrlFileData(WireModel):
    """File content at a URL (`url` is the normalised absolute URL, `new URL(url).href`)."""

    type: Literal["url"] = "url"
    url: str


class ReferenceFileData(WireModel):
    """A file already uploaded to providers: provider name → provider file id."""

    type: Literal["reference"] = "reference"
    reference: dict[str, str]


class DataFileData(WireModel):
    """Inline file content as a base64 string."""

    type: Literal["data"] = "data"
    data: str


class TextFileData(WireModel):
    """Inline text file content."""

    type: Literal["text"] = "text"
    text: str


ModelFileData = Annotated[UrlFileData | ReferenceFileData | DataFileData | TextFileData, Field(discriminator="type")]


# --- content parts ---------------------------------------------------------------------------


class ModelTextPart(WireModel):
    """Text content (`TextPart`)."""

    type: Literal["text"] = "text"
    text: str
    provider_options: ProviderOptions | None = None


class ModelFilePart(WireModel):
    """A file (`FilePart`)."""

    type: Literal["file"] = "file"
    media_type: str
    data: ModelFileData
    filename: str | None = None
    provider_options: ProviderOptions | None = None


class ModelReasoningPart(WireModel):
    """Reasoning text of an earlier assistant step (`ReasoningPart`)."""

    type: Literal["reasoning"] = "reasoning"
    text: str
    provider_options: ProviderOptions | None = None


class ModelReasoningFilePart(WireModel):
    """A file the model produced while reasoning (`ReasoningFilePart`)."""

    type: Literal["reasoning-file"] = "reasoning-file"
    media_type: str
    data: UrlFileData | DataFileData = Field(discriminator="type")
    provider_options: ProviderOptions | None = None


class ModelCustomPart(WireModel):
    """Provider-specific content identified by `kind` (`CustomPart`)."""

    type: Literal["custom"] = "custom"
    kind: str
    provider_options: ProviderOptions | None = None


class ToolCallPart(WireModel):
    """A tool call the assistant made (`ToolCallPart`); `input` is absent when the call had none."""

    type: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    tool_name: str
    input: JsonValue = None
    provider_executed: bool | None = None
    provider_options: ProviderOptions | None = None


class TextOutput(WireModel):
    """A tool result given to the model as text."""

    type: Literal["text"] = "text"
    value: str
    provider_options: ProviderOptions | None = None


class JsonOutput(WireModel):
    """A tool result given to the model as JSON."""

    type: Literal["json"] = "json"
    value: JsonValue
    provider_options: ProviderOptions | None = None


class ErrorTextOutput(WireModel):
    """A failed tool call, described as text."""

    type: Literal["error-text"] = "error-text"
    value: str
    provider_options: ProviderOptions | None = None


class ErrorJsonOutput(WireModel):
    """A failed tool call, described as JSON."""

    type: Literal["error-json"] = "error-json"
    value: JsonValue
    provider_options: ProviderOptions | None = None


class ExecutionDeniedOutput(WireModel):
    """A tool call the user did not approve."""

    type: Literal["execution-denied"] = "execution-denied"
    reason: str | None = None
    provider_options: ProviderOptions | None = None


class ContentOutput(WireModel):
    """A tool result made of content items (`text`, `file`, `image-url`, ... as the SDK defines them)."""

    type: Literal["content"] = "content"
    value: list[dict[str, JsonValue]]


ToolResultOutput = Annotated[
    TextOutput | JsonOutput | ErrorTextOutput | ErrorJsonOutput | ExecutionDeniedOutput | ContentOutput,
    Field(discriminator="type"),
]


class ToolResultPart(WireModel):
    """The result of a tool call (`ToolResultPart`)."""

    type: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    tool_name: str
    output: ToolResultOutput
    provider_options: ProviderOptions | None = None


class ToolApprovalRequestPart(WireModel):
    """The assistant asks for approval before running a tool call (`ToolApprovalRequest`)."""

    type: Literal["tool-approval-request"] = "tool-approval-request"
    approval_id: str
    tool_call_id: str
    reason: str | None = None
    is_automatic: bool | None = None
    signature: str | None = None
    input_schema_input: JsonValue = None


class ToolApprovalResponsePart(WireModel):
    """The decision on an approval request (`ToolApprovalResponse`)."""

    type: Literal["tool-approval-response"] = "tool-approval-response"
    approval_id: str
    approved: bool
    reason: str | None = None
    provider_executed: bool | None = None


UserContentPart = Annotated[ModelTextPart | ModelFilePart, Field(discriminator="type")]
AssistantContentPart = Annotated[
    ModelTextPart
    | ModelCustomPart
    | ModelFilePart
    | ModelReasoningPart
    | ModelReasoningFilePart
    | ToolCallPart
    | ToolResultPart
    | ToolApprovalRequestPart,
    Field(discriminator="type"),
]
ToolContentPart = Annotated[ToolResultPart | ToolApprovalResponsePart, Field(discriminator="type")]


# --- messages --------------------------------------------------------------------------------


class _Message(WireModel):
    def model_post_init(self, context: Any, /) -> None:
        # `role` is the discriminator of a message: always on the wire, even when defaulted.
        super().model_post_init(context)
        self.__pydantic_fields_set__.add("role")


class SystemModelMessage(_Message):
    """System instructions (`SystemModelMessage`)."""

    role: Literal["system"] = "system"
    content: str
    provider_options: ProviderOptions | None = None


class UserModelMessage(_Message):
    """What the user said (`UserModelMessage`)."""

    role: Literal["user"] = "user"
    content: list[UserContentPart]
    provider_options: ProviderOptions | None = None


class AssistantModelMessage(_Message):
    """One assistant step: text, reasoning, tool calls and provider-executed results."""

    role: Literal["assistant"] = "assistant"
    content: list[AssistantContentPart]
    provider_options: ProviderOptions | None = None


class ToolModelMessage(_Message):
    """Results of and approval decisions on the tool calls of the preceding assistant message."""

    role: Literal["tool"] = "tool"
    content: list[ToolContentPart]
    provider_options: ProviderOptions | None = None


ModelMessage = Annotated[
    SystemModelMessage | UserModelMessage | AssistantModelMessage | ToolModelMessage,
    Field(discriminator="role"),
]
"""One message of a model prompt; `TypeAdapter(list[ModelMessage])` validates a wire list."""
