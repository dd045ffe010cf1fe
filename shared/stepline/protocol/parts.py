"""UIMessage and its parts: the stored, rendered form of a conversation.

Mirrors `packages/ai/src/ui/ui-messages.ts` and the per-state rules of
`packages/ai/src/ui/validate-ui-messages.ts` (`ai@7.0.173`), plus Stepline's documented extensions
(docs/protocol.md): `executionStartedAt` on tool parts and `status`/`requestedAt`/`decidedAt` on
approvals. The extensions are kept in what Stepline stores and are stripped from messages that a
client sends (`validate_ui_messages`), because the SDK strips them too and a client must never be
able to set the server's approval facts.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Self, cast

from pydantic import Discriminator, Field, JsonValue, Tag, field_validator, model_validator

from ._base import WireModel
from .chunks import Citation, ProviderMetadata

__all__ = [
    "TOOL_STATES",
    "CustomPart",
    "DataPart",
    "DynamicToolPart",
    "FilePart",
    "ReasoningFilePart",
    "ReasoningPart",
    "SourceDocumentPart",
    "SourceUrlPart",
    "SteeringMessagePart",
    "StepStartPart",
    "TextPart",
    "ToolApproval",
    "ToolPart",
    "ToolState",
    "UIMessage",
    "UIMessagePart",
    "is_tool_part",
    "tool_name_of",
]

ToolState = Literal[
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
]
TOOL_STATES: tuple[str, ...] = (
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
)


class _Part(WireModel):
    # The SDK's server-side validation strips unknown keys instead of failing; so do we.
    model_config: ClassVar[Any] = {"extra": "ignore"}


class TextPart(_Part):
    type: Literal["text"] = "text"
    text: str
    state: Literal["streaming", "done"] | None = None
    provider_metadata: ProviderMetadata | None = None
    citations: list[Citation] | None = None


class ReasoningPart(_Part):
    type: Literal["reasoning"] = "reasoning"
    text: str
    id: str | None = None
    state: Literal["streaming", "done"] | None = None
    provider_metadata: ProviderMetadata | None = None


class StepStartPart(_Part):
    """Marks where a model step begins; conversion splits assistant/tool messages here."""

    type: Literal["step-start"] = "step-start"


class SourceUrlPart(_Part):
    type: Literal["source-url"] = "source-url"
    source_id: str
    url: str
    title: str | None = None
    provider_metadata: ProviderMetadata | None = None


class SourceDocumentPart(_Part):
    type: Literal["source-document"] = "source-document"
    source_id: str
    media_type: str
    title: str
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class FilePart(_Part):
    type: Literal["file"] = "file"
    media_type: str
    url: str
    filename: str | None = None
    provider_reference: dict[str, str] | None = None
    provider_metadata: ProviderMetadata | None = None


class ReasoningFilePart(_Part):
    type: Literal["reasoning-file"] = "reasoning-file"
    media_type: str
    url: str
    provider_metadata: ProviderMetadata | None = None


class CustomPart(_Part):
    type: Literal["custom"] = "custom"
    kind: str
    provider_metadata: ProviderMetadata | None = None


class SteeringMessagePart(_Part):
    type: Literal["steering-message"] = "steering-message"
    id: str
    parts: list[TextPart | FilePart]


class DataPart(_Part):
    """`data-<name>`: application data kept in the message (transient data never is)."""

    type: str
    data: JsonValue = None
    id: str | None = None

    @field_validator("type")
    @classmethod
    def _data_prefix(cls, value: str) -> str:
        if not value.startswith("data-"):
            raise ValueError('a data part type must be "data-<name>"')
        return value


class ToolApproval(_Part):
    """The approval object of a tool part.

    `status`, `requested_at` and `decided_at` are Stepline extensions; the SDK strips them.
    """

    id: str
    approved: bool | None = None
    reason: str | None = None
    is_automatic: bool | None = None
    signature: str | None = None
    request_reason: str | None = None
    descriptor: JsonValue = None
    input_schema_input: JsonValue = None
    status: Literal["requested", "approved", "denied", "expired"] | None = None
    requested_at: int | None = None
    decided_at: int | None = None

    EXTENSIONS: ClassVar[tuple[str, ...]] = ("status", "requested_at", "decided_at")


_NEVER_BY_STATE: dict[str, tuple[str, ...]] = {
    "input-streaming": ("output", "error_text", "approval"),
    "input-available": ("output", "error_text", "approval"),
    "approval-requested": ("output", "error_text"),
    "approval-responded": ("output", "error_text"),
    "output-available": ("error_text",),
    "output-error": ("output",),
    "output-denied": ("output", "error_text"),
}


class _ToolPartBase(_Part):
    tool_call_id: str
    state: ToolState
    title: str | None = None
    tool_metadata: dict[str, JsonValue] | None = None
    provider_executed: bool | None = None
    input: JsonValue = None
    output: JsonValue = None
    error_text: str | None = None
    raw_input: JsonValue = None
    input_encoding: Literal["json", "text"] | None = None
    preliminary: bool | None = None
    call_provider_metadata: ProviderMetadata | None = None
    result_provider_metadata: ProviderMetadata | None = None
    approval: ToolApproval | None = None
    execution_started_at: int | None = None
    """Stepline extension: epoch ms when the tool really started (approval waits excluded)."""

    EXTENSIONS: ClassVar[tuple[str, ...]] = ("execution_started_at",)

    @model_validator(mode="after")
    def _state_rules(self) -> Self:
        present = self.model_fields_set
        for name in _NEVER_BY_STATE[self.state]:
            if name in present:
                alias = "errorText" if name == "error_text" else name
                raise ValueError(f'a tool part in state "{self.state}" must not have "{alias}"')
        approval = self.approval
        # `output-denied` without an approval is a validation error (`validate_ui_messages`, as the
        # SDK's validateUIMessages), but the SDK's convertToModelMessages converts it: the model allows it.
        if self.state in ("approval-requested", "approval-responded") and approval is None:
            raise ValueError(f'a tool part in state "{self.state}" needs "approval"')
        if approval is not None:
            self._check_approval(approval)
        if self.state == "output-error" and self.error_text is None:
            raise ValueError('a tool part in state "output-error" needs "errorText"')
        return self

    def _check_approval(self, approval: ToolApproval) -> None:
        decided = "approved" in approval.model_fields_set and approval.approved is not None
        match self.state:
            case "approval-requested" if decided or "reason" in approval.model_fields_set:
                raise ValueError('a tool part in state "approval-requested" has an undecided approval (no "approved")')
            case "approval-responded" if not decided:
                raise ValueError('a tool part in state "approval-responded" needs "approval.approved"')
            case "output-available" | "output-error" if approval.approved is not True:
                raise ValueError(f'a tool part in state "{self.state}" can only carry an approval with approved=true')
            case "output-denied" if approval.approved is not False:
                raise ValueError('a tool part in state "output-denied" needs an approval with approved=false')
            case _:
                pass


class ToolPart(_ToolPartBase):
    """A static tool: the tool name is encoded in `type` as `tool-<name>`."""

    type: str

    @field_validator("type")
    @classmethod
    def _tool_prefix(cls, value: str) -> str:
        if not value.startswith("tool-"):
            raise ValueError('a tool part type must be "tool-<name>"')
        return value

    @property
    def tool_name(self) -> str:
        """The tool name: everything after `tool-` (it may itself contain dashes)."""
        return self.type[len("tool-") :]


class DynamicToolPart(_ToolPartBase):
    """A tool whose name is only known at run time."""

    type: Literal["dynamic-tool"] = "dynamic-tool"
    tool_name: str
    dynamic: Literal[False] | None = None


def _part_tag(value: Any) -> str | None:
    part_type: object = (
        cast(dict[str, Any], value).get("type") if isinstance(value, dict) else getattr(value, "type", None)
    )
    if not isinstance(part_type, str):
        return None
    if part_type.startswith("tool-"):
        return "tool"
    if part_type.startswith("data-"):
        return "data"
    return part_type


UIMessagePart = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ReasoningPart, Tag("reasoning")]
    | Annotated[StepStartPart, Tag("step-start")]
    | Annotated[SourceUrlPart, Tag("source-url")]
    | Annotated[SourceDocumentPart, Tag("source-document")]
    | Annotated[FilePart, Tag("file")]
    | Annotated[ReasoningFilePart, Tag("reasoning-file")]
    | Annotated[CustomPart, Tag("custom")]
    | Annotated[SteeringMessagePart, Tag("steering-message")]
    | Annotated[DataPart, Tag("data")]
    | Annotated[ToolPart, Tag("tool")]
    | Annotated[DynamicToolPart, Tag("dynamic-tool")],
    Discriminator(
        _part_tag,
        custom_error_type="invalid_part_type",
        custom_error_message=(
            'unknown UI message part type; expected a known part type (for example "text" or "dynamic-tool") '
            'or a type starting with "data-" or "tool-"'
        ),
    ),
]


class UIMessage(WireModel):
    """One chat message as the AI SDK's `useChat` holds it."""

    model_config: ClassVar[Any] = {"extra": "ignore"}

    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[UIMessagePart] = Field(default_factory=list[UIMessagePart])
    metadata: JsonValue = None

    @model_validator(mode="after")
    def _parts_required(self) -> Self:
        if self.role != "assistant" and not self.parts:
            raise ValueError(f'a "{self.role}" message must contain at least one part')
        return self


def is_tool_part(part: UIMessagePart) -> bool:
    """True for `tool-<name>` and `dynamic-tool` parts."""
    return isinstance(part, ToolPart | DynamicToolPart)


def tool_name_of(part: ToolPart | DynamicToolPart) -> str:
    """The tool name of a static or dynamic tool part."""
    return part.tool_name
