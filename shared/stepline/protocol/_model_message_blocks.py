"""Building blocks of `to_model_messages`: one UI part, or one assistant step, at a time.

Each function follows a branch of `convertToModelMessages` (`packages/ai/src/ui/convert-to-model-messages.ts`)
or `createToolModelOutput` (`packages/ai/src/prompt/create-tool-model-output.ts`) of `ai@7.0.173`.
JavaScript's difference between an absent key and a `null` one is kept: where the SDK copies a
value as it is (`filename: part.filename`), the field is copied only if the UI part had it
(`_given`); where the SDK tests `!= null`, only a non-null value is copied (`_not_none`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from stepline.errors import MessageConversionError

from ._base import DEFERRED
from ._url_href import url_href
from .model_messages import (
    AssistantContentPart,
    AssistantModelMessage,
    ErrorJsonOutput,
    ErrorTextOutput,
    ExecutionDeniedOutput,
    JsonOutput,
    ModelCustomPart,
    ModelFilePart,
    ModelMessage,
    ModelReasoningFilePart,
    ModelReasoningPart,
    ModelTextPart,
    ReferenceFileData,
    TextOutput,
    ToolApprovalRequestPart,
    ToolApprovalResponsePart,
    ToolCallPart,
    ToolContentPart,
    ToolModelMessage,
    ToolResultOutput,
    ToolResultPart,
    UrlFileData,
)
from .parts import (
    CustomPart,
    DataPart,
    DynamicToolPart,
    FilePart,
    ReasoningFilePart,
    ReasoningPart,
    TextPart,
    ToolApproval,
    ToolPart,
)

UNAVAILABLE_TOOL_OUTPUT = "Tool output omitted because the tool is no longer available."
DENIED_TOOL_OUTPUT = "Tool call execution denied."
_QUIET_SKIPS = frozenset({"source-url", "source-document"})  # dropped by design: citations, not content

ResolvedReasoning = Literal["preserve", "drop", "auto-drop", "text", "strict"]
DataPartConverter = Callable[[DataPart], ModelTextPart | ModelFilePart | None]
AnyToolPart = ToolPart | DynamicToolPart
BlockPart = TextPart | CustomPart | FilePart | ReasoningFilePart | ReasoningPart | ToolPart | DynamicToolPart | DataPart
_OUTPUT: TypeAdapter[ToolResultOutput] = TypeAdapter(ToolResultOutput, config=DEFERRED)


@dataclass(frozen=True)
class Conversion:
    """The options of one conversion, and the parts it skipped (for one summary warning)."""

    tools: Mapping[str, object] | None
    convert_data_part: DataPartConverter | None
    reasoning: ResolvedReasoning
    fail_on_unsupported: bool
    skipped: list[str] = field(default_factory=list[str])

    def unsupported(self, where: str, part_type: str) -> None:
        """A part the model message cannot hold: raise under the "fail" policy, else skip it."""
        if self.fail_on_unsupported:
            raise MessageConversionError(f"{where}: a {part_type!r} part cannot be converted to a model message")
        if part_type not in _QUIET_SKIPS:
            self.skipped.append(f"{where} ({part_type})")

    def data(self, part: DataPart, where: str) -> ModelTextPart | ModelFilePart | None:
        """A data part through the application's converter; without one it is unsupported."""
        if self.convert_data_part is None:
            self.unsupported(where, part.type)
            return None
        return self.convert_data_part(part)


def _given(model: BaseModel, **sources: str) -> dict[str, Any]:
    """`{target: value}` for every `target="source_field"` that was set on `model` (null included)."""
    return {target: getattr(model, source) for target, source in sources.items() if source in model.model_fields_set}


def _not_none(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def file_href(url: str, where: str) -> str:
    """`new URL(url).href`, or a `MessageConversionError` where the SDK throws `TypeError: Invalid URL`."""
    try:
        return url_href(url)
    except ValueError as error:
        shown = url if len(url) <= 80 else url[:77] + "..."
        raise MessageConversionError(f"{where}: invalid file URL {shown!r}: not an absolute URL") from error


def user_content(part: TextPart | FilePart, where: str) -> ModelTextPart | ModelFilePart:
    """A user text or file part (`convertUserContentUIPart`)."""
    if isinstance(part, TextPart):
        return ModelTextPart(text=part.text, **_not_none(provider_options=part.provider_metadata))
    data = (
        ReferenceFileData(reference=part.provider_reference)
        if part.provider_reference is not None
        else UrlFileData(url=file_href(part.url, where))
    )
    return ModelFilePart(
        media_type=part.media_type,
        data=data,
        **_given(part, filename="filename"),
        **_not_none(provider_options=part.provider_metadata),
    )


def assistant_step(block: Sequence[tuple[str, BlockPart]], conversion: Conversion) -> list[ModelMessage]:
    """One step of an assistant message: an assistant message, then the tool message answering it."""
    messages: list[ModelMessage] = []
    content = [item for where, part in block for item in _assistant_content(part, where, conversion)]
    if content:
        messages.append(AssistantModelMessage(content=content))
    results = [
        item
        for _, part in block
        if isinstance(part, ToolPart | DynamicToolPart)
        for item in _tool_results(part, conversion)
    ]
    if results:
        messages.append(ToolModelMessage(content=results))
    return messages


def _assistant_content(part: BlockPart, where: str, conversion: Conversion) -> list[AssistantContentPart]:
    match part:
        case TextPart() | FilePart():
            return [user_content(part, where)]
        case CustomPart():
            return [ModelCustomPart(kind=part.kind, **_not_none(provider_options=part.provider_metadata))]
        case ReasoningPart() | ReasoningFilePart():
            return _reasoning(part, where, conversion)
        case ToolPart() | DynamicToolPart():
            return _tool_call_content(part, conversion)
        case DataPart():
            converted = conversion.data(part, where)
            return [] if converted is None else [converted]


def _reasoning(
    part: ReasoningPart | ReasoningFilePart, where: str, conversion: Conversion
) -> list[AssistantContentPart]:
    match conversion.reasoning:
        case "drop":
            return []
        case "auto-drop":
            conversion.skipped.append(f"{where} ({part.type})")
            return []
        case "strict":
            raise MessageConversionError(
                f"{where}: a {part.type!r} part cannot be carried: the model does not accept reasoning history"
            )
        case "text":
            return [ModelTextPart(text=part.text)] if isinstance(part, ReasoningPart) and part.text else []
        case "preserve":
            pass
    options = _given(part, provider_options="provider_metadata")
    if isinstance(part, ReasoningPart):
        return [ModelReasoningPart(text=part.text, **options)]
    data = UrlFileData(url=file_href(part.url, where))
    return [ModelReasoningFilePart(media_type=part.media_type, data=data, **options)]


def _tool_call_content(part: AnyToolPart, conversion: Conversion) -> list[AssistantContentPart]:
    if part.state == "input-streaming":
        return []
    content: list[AssistantContentPart] = [_tool_call(part)]
    if part.approval is not None:
        content.append(_approval_request(part.tool_call_id, part.approval))
    if part.provider_executed is True and part.state in ("output-available", "output-error"):
        # A provider-executed result stays in the assistant message, next to its call.
        metadata = part.result_provider_metadata
        metadata = part.call_provider_metadata if metadata is None else metadata
        output = ErrorJsonOutput(value=part.error_text) if part.state == "output-error" else _output(part, conversion)
        content.append(
            ToolResultPart(
                tool_call_id=part.tool_call_id,
                tool_name=part.tool_name,
                output=output,
                **_not_none(provider_options=metadata),
            )
        )
    return content


def _tool_call(part: AnyToolPart) -> ToolCallPart:
    metadata = part.call_provider_metadata
    if metadata is None and part.state == "output-error":
        metadata = part.result_provider_metadata
    # A failed call may have no parsed input; the SDK then falls back to the raw input text.
    fallback = part.state == "output-error" and part.input is None
    return ToolCallPart(
        tool_call_id=part.tool_call_id,
        tool_name=part.tool_name,
        **(_given(part, input="raw_input") if fallback else _given(part, input="input")),
        **_given(part, provider_executed="provider_executed"),
        **_not_none(provider_options=metadata),
    )


def _approval_request(tool_call_id: str, approval: ToolApproval) -> ToolApprovalRequestPart:
    return ToolApprovalRequestPart(
        approval_id=approval.id,
        tool_call_id=tool_call_id,
        **_given(approval, is_automatic="is_automatic", input_schema_input="input_schema_input"),
        **_not_none(reason=approval.request_reason, signature=approval.signature),
    )


def _tool_results(part: AnyToolPart, conversion: Conversion) -> list[ToolContentPart]:
    content: list[ToolContentPart] = []
    approval = part.approval
    if approval is not None and approval.approved is not None:
        content.append(
            ToolApprovalResponsePart(
                approval_id=approval.id,
                approved=approval.approved,
                **_given(approval, reason="reason"),
                **_given(part, provider_executed="provider_executed"),
            )
        )
        if part.state == "approval-responded" and approval.approved is False:
            content.append(_result(part, ExecutionDeniedOutput(**_given(approval, reason="reason"))))
    if part.provider_executed is True:
        return content  # its result, if any, is already in the assistant message
    match part.state:
        case "output-denied":
            reason = None if approval is None else approval.reason
            content.append(_result(part, ErrorTextOutput(value=DENIED_TOOL_OUTPUT if reason is None else reason)))
        case "output-error":
            error = "unknown error" if part.error_text is None else part.error_text
            content.append(_result(part, ErrorTextOutput(value=error)))
        case "output-available":
            content.append(_result(part, _output(part, conversion)))
        case _:
            pass
    return content


def _result(part: AnyToolPart, output: ToolResultOutput) -> ToolResultPart:
    return ToolResultPart(
        tool_call_id=part.tool_call_id,
        tool_name=part.tool_name,
        output=output,
        **_not_none(provider_options=part.call_provider_metadata),
    )


def _output(part: AnyToolPart, conversion: Conversion) -> ToolResultOutput:
    """A successful tool output as the model sees it (`createToolModelOutput`, errorMode "none")."""
    tool = None if conversion.tools is None else conversion.tools.get(part.tool_name)
    if tool is None and isinstance(part, DynamicToolPart) and part.dynamic is False:
        # A static tool that was removed: never show the model its unfiltered raw output.
        return TextOutput(value=UNAVAILABLE_TOOL_OUTPUT)
    to_model_output = getattr(tool, "to_model_output", None)
    if callable(to_model_output):
        return _OUTPUT.validate_python(to_model_output(part.tool_call_id, part.input, part.output))
    output = part.output
    return TextOutput(value=output) if isinstance(output, str) else JsonOutput(value=output)
