"""Continue a paused run: apply approval decisions or client tool outputs (docs/loop.md, "Approvals").

Decisions are re-checked against the run's own pending approvals (`approval.check_decisions`) and
the approval policy is asked again (a policy that now denies turns an approval into a denial, as
`streamText` does). Approved calls run exactly once here, denied ones become `execution-denied`
results, and everything lands in the same step's tool message, so the next step continues the
same assistant message. Decisions for only some pending approvals are fine: the rest stay pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from ..errors import StepLineError
from ..protocol import stream_parts as sp
from ..protocol.model_messages import ModelMessage, ToolContentPart, ToolModelMessage
from .approval import ApprovalDecision, check_decisions, resolve_approval
from .config import LoopConfig
from .messages import StepContent
from .model_call import Emit
from .state import LoopState, ToolCallRecord, ToolResultRecord
from .tool_execution import execute_tools

__all__ = ["ClientToolOutput", "InvalidClientOutputError", "resume_with_client_outputs", "resume_with_decisions"]


class InvalidClientOutputError(StepLineError):
    """A client tool output for a call the run is not waiting for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientToolOutput:
    """The output (or error text) a client supplies for a client-side tool call."""

    tool_call_id: str
    output: JsonValue = None
    error_text: str | None = None


def _with_tool_content(state: LoopState, content: StepContent, results: list[ToolResultRecord]) -> LoopState:
    """Append tool parts to the last step's tool message (or start one) and to its record."""
    new_parts: list[ToolContentPart] = list(content.tool)
    messages: list[ModelMessage] = list(state.response_messages)
    if messages and isinstance(messages[-1], ToolModelMessage):
        messages[-1] = messages[-1].model_copy(update={"content": [*messages[-1].content, *new_parts]})
    elif new_parts:
        messages.append(ToolModelMessage(content=new_parts))
    steps = list(state.steps)
    if steps:
        last = steps[-1]
        step_messages = list(last.response_messages)
        if step_messages and isinstance(step_messages[-1], ToolModelMessage):
            step_messages[-1] = step_messages[-1].model_copy(
                update={"content": [*step_messages[-1].content, *new_parts]}
            )
        elif new_parts:
            step_messages.append(ToolModelMessage(content=new_parts))
        steps[-1] = last.model_copy(
            update={"tool_results": [*last.tool_results, *results], "response_messages": step_messages}
        )
    return state.model_copy(update={"response_messages": messages, "steps": steps, "segment_start": len(steps)})


async def resume_with_decisions(
    config: LoopConfig, state: LoopState, decisions: Sequence[ApprovalDecision], *, emit: Emit
) -> LoopState:
    """Apply decisions; runs approved tools (their outputs are emitted) and records denials."""
    matched = check_decisions(state.pending_approvals, decisions, secret=config.approval_secret)
    decided = {pending.approval_id for pending, _ in matched}
    content = StepContent()
    results: list[ToolResultRecord] = []
    to_execute: list[ToolCallRecord] = []
    client_calls = list(state.pending_client_calls)
    for pending, decision in matched:
        call = pending.tool_call
        approved, reason = decision.approved, decision.reason
        if approved:
            status, policy_reason = await resolve_approval(config, call.tool_name, call.input)
            if status == "denied":
                approved, reason = False, policy_reason
        content.add_approval_response(pending.approval_id, approved, reason)
        tool = config.tool(call.tool_name)
        if approved and tool is not None and tool.client_side:
            client_calls.append(call)
        elif approved:
            to_execute.append(call)
        else:
            await emit(sp.ToolOutputDenied(tool_call_id=call.tool_call_id, tool_name=call.tool_name))
            denied = ToolResultRecord(
                tool_call_id=call.tool_call_id, tool_name=call.tool_name, denied=True, denial_reason=reason
            )
            results.append(denied)
            content.add_result(denied)
    if to_execute:
        messages: list[Any] = [*state.messages, *state.response_messages]
        executed = await execute_tools(
            config,
            to_execute,
            emit=emit,
            run_id=state.run_id,
            step_number=max(state.step_number - 1, 0),
            messages=messages,
        )
        for record, output in executed:
            results.append(record)
            content.add_result(record, output)
    remaining = [p for p in state.pending_approvals if p.approval_id not in decided]
    state = _with_tool_content(state, content, results)
    return state.model_copy(update={"pending_approvals": remaining, "pending_client_calls": client_calls})


async def resume_with_client_outputs(
    config: LoopConfig, state: LoopState, outputs: Sequence[ClientToolOutput], *, emit: Emit
) -> LoopState:
    """Record outputs of client-side tools (the `addToolOutput` flow)."""
    waiting = {c.tool_call_id: c for c in state.pending_client_calls}
    content = StepContent()
    results: list[ToolResultRecord] = []
    for output in outputs:
        call = waiting.pop(output.tool_call_id, None)
        if call is None:
            raise InvalidClientOutputError(f"tool call {output.tool_call_id!r} is not waiting for a client output")
        record = ToolResultRecord(
            tool_call_id=call.tool_call_id, tool_name=call.tool_name, output=output.output, error_text=output.error_text
        )
        common: dict[str, Any] = {
            "tool_call_id": call.tool_call_id,
            "tool_name": call.tool_name,
            "input": call.input,
            "dynamic": call.dynamic,
        }
        if output.error_text is not None:
            await emit(sp.ToolError(error=output.error_text, **common))
        else:
            await emit(sp.ToolResult(output=output.output, **common))
        results.append(record)
        content.add_result(record)
    state = _with_tool_content(state, content, results)
    return state.model_copy(update={"pending_client_calls": list(waiting.values())})
