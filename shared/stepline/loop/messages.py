"""Model messages the loop builds: the prompt of a step and the messages a step adds.

A step's prompt is the instructions, the conversation, and the response messages of the
completed steps. Approval parts are the loop's bookkeeping and are stripped before a provider
sees the prompt (as `streamText` does). A step adds at most one assistant message (text,
reasoning, tool calls, approval requests, provider-executed results) and one tool message (tool
results, denials, approval responses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue, TypeAdapter

from ..protocol._base import DEFERRED
from ..protocol.chunks import ProviderMetadata
from ..protocol.model_messages import (
    AssistantContentPart,
    AssistantModelMessage,
    ErrorTextOutput,
    ExecutionDeniedOutput,
    JsonOutput,
    ModelMessage,
    ModelReasoningPart,
    ModelTextPart,
    SystemModelMessage,
    TextOutput,
    ToolApprovalRequestPart,
    ToolApprovalResponsePart,
    ToolCallPart,
    ToolContentPart,
    ToolModelMessage,
    ToolResultOutput,
    ToolResultPart,
)
from .config import Instructions
from .state import ToolCallRecord, ToolResultRecord

__all__ = ["StepContent", "instruction_messages", "model_output", "prompt_messages"]

_OUTPUT: TypeAdapter[ToolResultOutput] = TypeAdapter(ToolResultOutput, config=DEFERRED)


def instruction_messages(instructions: Instructions | None) -> list[SystemModelMessage]:
    """The system messages for `instructions` (a string, one message, or several blocks)."""
    if instructions is None:
        return []
    if isinstance(instructions, str):
        return [SystemModelMessage(content=instructions)]
    if isinstance(instructions, SystemModelMessage):
        return [instructions]
    return list(instructions)


def prompt_messages(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """The messages as a provider sees them: approval parts removed, emptied messages dropped.

    Messages without approval parts are passed through as they are (no copy): this runs on every
    step over the whole conversation.
    """
    out: list[ModelMessage] = []
    for message in messages:
        if isinstance(message, AssistantModelMessage | ToolModelMessage) and any(
            isinstance(p, ToolApprovalRequestPart | ToolApprovalResponsePart) for p in message.content
        ):
            kept = [p for p in message.content if not isinstance(p, ToolApprovalRequestPart | ToolApprovalResponsePart)]
            if kept:
                out.append(message.model_copy(update={"content": kept}))
        else:
            out.append(message)
    return out


def model_output(
    output: JsonValue, to_model_output: Any = None, *, tool_call_id: str = "", input: Any = None
) -> ToolResultOutput:
    """How a tool output is shown to the model: strings as text, anything else as JSON."""
    if to_model_output is not None:
        custom: Any = to_model_output(tool_call_id, input, output)
        return _OUTPUT.validate_python(custom) if isinstance(custom, dict) else custom
    if isinstance(output, str):
        return TextOutput(value=output)
    return JsonOutput(value=output)


def _options(metadata: ProviderMetadata | None) -> dict[str, Any]:
    return {} if metadata is None else {"provider_options": metadata}


@dataclass
class StepContent:
    """What a step produced, in stream order, for its response messages."""

    assistant: list[AssistantContentPart] = field(default_factory=list[AssistantContentPart])
    tool: list[ToolContentPart] = field(default_factory=list[ToolContentPart])

    def add_text(self, text: str, metadata: ProviderMetadata | None) -> None:
        if text:
            self.assistant.append(ModelTextPart(text=text, **_options(metadata)))

    def add_reasoning(self, text: str, metadata: ProviderMetadata | None) -> None:
        self.assistant.append(ModelReasoningPart(text=text, **_options(metadata)))

    def add_tool_call(self, call: ToolCallRecord) -> None:
        extra: dict[str, Any] = _options(call.provider_metadata)
        if call.provider_executed is not None:
            extra["provider_executed"] = call.provider_executed
        self.assistant.append(
            ToolCallPart(tool_call_id=call.tool_call_id, tool_name=call.tool_name, input=call.input, **extra)
        )

    def add_approval_request(self, approval_id: str, tool_call_id: str, *, is_automatic: bool | None = None) -> None:
        extra: dict[str, Any] = {} if is_automatic is None else {"is_automatic": is_automatic}
        self.assistant.append(ToolApprovalRequestPart(approval_id=approval_id, tool_call_id=tool_call_id, **extra))

    def add_approval_response(self, approval_id: str, approved: bool, reason: str | None) -> None:
        extra: dict[str, Any] = {} if reason is None else {"reason": reason}
        self.tool.append(ToolApprovalResponsePart(approval_id=approval_id, approved=approved, **extra))

    def add_provider_result(self, result: ToolResultRecord, metadata: ProviderMetadata | None) -> None:
        output: ToolResultOutput = (
            ErrorTextOutput(value=result.error_text) if result.error_text is not None else model_output(result.output)
        )
        self.assistant.append(
            ToolResultPart(
                tool_call_id=result.tool_call_id, tool_name=result.tool_name, output=output, **_options(metadata)
            )
        )

    def add_result(self, result: ToolResultRecord, output: ToolResultOutput | None = None) -> None:
        if result.denied:
            chosen: ToolResultOutput = (
                ExecutionDeniedOutput(reason=result.denial_reason) if result.denial_reason else ExecutionDeniedOutput()
            )
        elif result.error_text is not None:
            chosen = ErrorTextOutput(value=result.error_text)
        else:
            chosen = output if output is not None else model_output(result.output)
        self.tool.append(ToolResultPart(tool_call_id=result.tool_call_id, tool_name=result.tool_name, output=chosen))

    def messages(self) -> list[ModelMessage]:
        """This step's assistant message and tool message (each only when it has content)."""
        out: list[ModelMessage] = []
        if self.assistant:
            out.append(AssistantModelMessage(content=list(self.assistant)))
        if self.tool:
            out.append(ToolModelMessage(content=list(self.tool)))
        return out
