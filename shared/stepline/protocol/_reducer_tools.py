"""The reducer's tool parts: a tool call's input, approval and output chunks (the SDK's tool cases).

`updateToolPart` / `updateDynamicToolPart` of `process-ui-message-stream.ts` are `_update_tool_part`;
each tool chunk has a handler here that `UIMessageReducer.apply` (reducer.py) dispatches to.
Streamed input is appended to a `PartialJson` and computed only when the message is read.
"""

from __future__ import annotations

from typing import Any

from ..errors import UIMessageStreamError
from ._reducer_state import (
    OUTPUT_STATES,
    UNSET,
    LazyInput,
    MessageState,
    Part,
    PartialToolCall,
    approval_id_of,
    assign,
    given,
    is_static_tool,
    is_tool,
    or_unset,
    tool_name_of,
)
from .chunks import (
    ToolApprovalRequestChunk,
    ToolApprovalResponseChunk,
    ToolInputAvailableChunk,
    ToolInputDeltaChunk,
    ToolInputErrorChunk,
    ToolInputStartChunk,
    ToolOutputAvailableChunk,
    ToolOutputDeniedChunk,
    ToolOutputErrorChunk,
)
from .partial_json import PartialJson


class ToolParts(MessageState):
    """The tool chunk handlers, on top of the message state."""

    def _update_tool_part(
        self, dynamic: bool, fields: dict[str, Any], existing: Part | None = None, *, flush: bool = True
    ) -> Part:
        state: str = fields["state"]
        tool_call_id: str = fields["toolCallId"]
        part = existing
        if part is None:
            for candidate in self._current_step_parts():
                is_match = candidate["type"] == "dynamic-tool" if dynamic else is_static_tool(candidate)
                if is_match and candidate["toolCallId"] == tool_call_id:
                    part = candidate
                    break
        provider_metadata = fields.get("providerMetadata")
        metadata_key = "resultProviderMetadata" if state in OUTPUT_STATES else "callProviderMetadata"
        if part is not None:
            if flush:
                self._flush_part(part)
            else:
                self._lazy_inputs.pop(id(part), None)
            part["state"] = state
            if dynamic:
                part["toolName"] = fields["toolName"]
            else:
                part["type"] = f"tool-{fields['toolName']}"
            for key in ("input", "output", "errorText", "rawInput"):
                assign(part, key, fields.get(key, UNSET))
            assign(part, "inputEncoding", or_unset(fields.get("inputEncoding")))
            assign(part, "preliminary", or_unset(fields.get("preliminary")))
            if fields.get("title") is not None:
                part["title"] = fields["title"]
            if fields.get("toolMetadata") is not None:
                part["toolMetadata"] = fields["toolMetadata"]
            if fields.get("providerExecuted") is not None:
                part["providerExecuted"] = fields["providerExecuted"]
            if provider_metadata is not None:
                part[metadata_key] = provider_metadata
            return part
        new_part: Part = (
            {"type": "dynamic-tool", "toolName": fields["toolName"]}
            if dynamic
            else {"type": f"tool-{fields['toolName']}"}
        )
        part = new_part
        part["toolCallId"] = tool_call_id
        part["state"] = state
        keys = (
            "title",
            "toolMetadata",
            "input",
            "inputEncoding",
            "output",
            "errorText",
            "providerExecuted",
            "preliminary",
        )
        for key in keys if dynamic else (*keys, "rawInput"):
            value = fields.get(key, UNSET)
            if value is not UNSET and not (value is None and key not in ("input", "output")):
                part[key] = value
        if provider_metadata is not None:
            part[metadata_key] = provider_metadata
        self._parts.append(part)
        return part

    def _tool_input_start(self, chunk: ToolInputStartChunk) -> bool:
        self._partial_tools[chunk.tool_call_id] = PartialToolCall(
            json=PartialJson(),
            tool_name=chunk.tool_name,
            input_encoding=chunk.input_encoding,
            dynamic=bool(chunk.dynamic),
            title=chunk.title,
            tool_metadata=chunk.tool_metadata,
        )
        self._update_tool_part(
            bool(chunk.dynamic),
            {
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
                "state": "input-streaming",
                "inputEncoding": chunk.input_encoding,
                "providerExecuted": chunk.provider_executed,
                "title": chunk.title,
                "toolMetadata": chunk.tool_metadata,
                "providerMetadata": chunk.provider_metadata,
            },
        )
        return True

    def _tool_input_delta(self, chunk: ToolInputDeltaChunk) -> bool:
        partial = self._partial_tools.get(chunk.tool_call_id)
        if partial is None:
            raise UIMessageStreamError(
                chunk_type="tool-input-delta",
                chunk_id=chunk.tool_call_id,
                message=(
                    f'Received tool-input-delta for missing tool call with ID "{chunk.tool_call_id}". '
                    'Ensure a "tool-input-start" chunk is sent before any "tool-input-delta" chunks.'
                ),
            )
        partial.json.append(chunk.input_text_delta)
        part = self._update_tool_part(
            partial.dynamic,
            {
                "toolCallId": chunk.tool_call_id,
                "toolName": partial.tool_name,
                "state": "input-streaming",
                "inputEncoding": partial.input_encoding,
                "title": partial.title,
                "toolMetadata": partial.tool_metadata,
            },
            flush=False,  # the previous partial value is replaced, so it is never computed
        )
        # The partial input and raw text are computed when the message is read, not per delta.
        self._lazy_inputs[id(part)] = LazyInput(part, partial)
        return True

    def _tool_input_available(self, chunk: ToolInputAvailableChunk) -> bool:
        self._update_tool_part(
            bool(chunk.dynamic),
            {
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
                "state": "input-available",
                "input": given(chunk, "input"),
                "providerExecuted": chunk.provider_executed,
                "providerMetadata": chunk.provider_metadata,
                "title": chunk.title,
                "toolMetadata": chunk.tool_metadata,
            },
        )
        return True

    def _tool_input_error(self, chunk: ToolInputErrorChunk) -> bool:
        existing = next(
            (p for p in self._current_step_parts() if is_tool(p) and p["toolCallId"] == chunk.tool_call_id),
            None,
        )
        dynamic = existing["type"] == "dynamic-tool" if existing is not None else bool(chunk.dynamic)
        self._update_tool_part(
            dynamic,
            {
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
                "state": "output-error",
                "input": given(chunk, "input"),
                "errorText": chunk.error_text,
                "providerExecuted": chunk.provider_executed,
                "providerMetadata": chunk.provider_metadata,
                "toolMetadata": chunk.tool_metadata,
            },
        )
        return True

    def _approval_request(self, chunk: ToolApprovalRequestChunk) -> bool:
        part = self._find_tool_invocation(chunk.tool_call_id)
        self._flush_part(part)
        part["state"] = "approval-requested"
        approval: dict[str, Any] = {"id": chunk.approval_id}
        if chunk.approval_descriptor is not None:
            approval["descriptor"] = chunk.approval_descriptor
        if "input_schema_input" in chunk.model_fields_set:
            approval["inputSchemaInput"] = chunk.input_schema_input
        if chunk.reason is not None:
            approval["requestReason"] = chunk.reason
        if chunk.is_automatic is True:
            approval["isAutomatic"] = True
        if chunk.signature is not None:
            approval["signature"] = chunk.signature
        part["approval"] = approval
        return True

    def _approval_response(self, chunk: ToolApprovalResponseChunk) -> bool:
        part = next(
            (p for p in self._parts if is_tool(p) and approval_id_of(p) == chunk.approval_id),
            None,
        )
        if part is None:
            raise UIMessageStreamError(
                chunk_type="tool-approval-response",
                chunk_id=chunk.approval_id,
                message=f'No tool invocation found for approval ID "{chunk.approval_id}".',
            )
        self._flush_part(part)
        approval: dict[str, Any] = dict(part.get("approval") or {"id": chunk.approval_id})
        approval["id"] = chunk.approval_id
        approval["approved"] = chunk.approved
        if chunk.reason is not None:
            approval["reason"] = chunk.reason
        part["state"] = "approval-responded"
        part["approval"] = approval
        if chunk.provider_executed is not None:
            part["providerExecuted"] = chunk.provider_executed
        if chunk.provider_metadata is not None:
            part["callProviderMetadata"] = chunk.provider_metadata
        return True

    def _tool_output_denied(self, chunk: ToolOutputDeniedChunk) -> bool:
        part = self._find_tool_invocation(chunk.tool_call_id)
        self._flush_part(part)
        part["state"] = "output-denied"
        return True

    def _tool_output(self, chunk: ToolOutputAvailableChunk | ToolOutputErrorChunk) -> bool:
        part = self._find_tool_invocation(chunk.tool_call_id)
        self._flush_part(part)
        dynamic = part["type"] == "dynamic-tool"
        fields: dict[str, Any] = {
            "toolCallId": chunk.tool_call_id,
            "toolName": tool_name_of(part),
            "input": part.get("input", UNSET),
            "providerExecuted": chunk.provider_executed,
            "providerMetadata": chunk.provider_metadata,
            "title": part.get("title"),
            "toolMetadata": chunk.tool_metadata if chunk.tool_metadata is not None else part.get("toolMetadata"),
        }
        if isinstance(chunk, ToolOutputAvailableChunk):
            fields.update(state="output-available", output=chunk.output, preliminary=chunk.preliminary)
        else:
            fields.update(state="output-error", errorText=chunk.error_text)
            if not dynamic:
                fields["rawInput"] = part.get("rawInput", UNSET)
        self._update_tool_part(dynamic, fields, existing=part)
        return True
