"""Run a step's tool calls: concurrently, after the model call, results in completion order.

`on_tool_execution_start` is awaited before each tool; if it raises (for example because a durable
"claim this tool call" write failed), the tool does not run and the call ends as a tool error. An
async-generator tool yields preliminary outputs (`preliminary=True`) before its final one. A tool
that runs past its timeout ends as a tool error; the model reads the error text next step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..protocol import stream_parts as sp
from ..protocol.model_messages import ToolResultOutput
from ..protocol.to_chunks import error_message
from . import telemetry
from .call_parts import Emit
from .callbacks import ToolExecutionEndEvent, ToolExecutionStartEvent, notify
from .config import LoopConfig
from .messages import model_output
from .request_view import masked
from .state import ToolCallRecord, ToolResultRecord
from .tool_calls import NoSuchToolError
from .tool_guard import GuardDecision, ToolInterruptedError
from .tools import ToolContext

__all__ = ["ToolTimeoutError", "execute_tools"]


class ToolTimeoutError(TimeoutError):
    """A tool ran longer than its timeout."""


async def execute_tools(
    config: LoopConfig,
    calls: Sequence[ToolCallRecord],
    *,
    emit: Emit,
    run_id: str,
    step_number: int,
    messages: list[Any],
) -> list[tuple[ToolResultRecord, ToolResultOutput | None]]:
    """Execute every call; returns `(result, model output)` pairs in completion order."""
    finished: list[tuple[ToolResultRecord, ToolResultOutput | None]] = []

    async def one(call: ToolCallRecord) -> None:
        finished.append(
            await _execute(config, call, emit=emit, run_id=run_id, step_number=step_number, messages=messages)
        )

    async with asyncio.TaskGroup() as group:
        for call in calls:
            group.create_task(one(call))
    return finished


async def _execute(
    config: LoopConfig, call: ToolCallRecord, *, emit: Emit, run_id: str, step_number: int, messages: list[Any]
) -> tuple[ToolResultRecord, ToolResultOutput | None]:
    tool = config.tool(call.tool_name)
    attributes = {
        "gen_ai.operation.name": telemetry.EXECUTE_TOOL,
        "gen_ai.tool.name": call.tool_name,
        "gen_ai.tool.call.id": call.tool_call_id,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": tool.description if tool is not None else None,
        "stepline.run_id": run_id,
        "stepline.step_number": step_number,
    }
    with telemetry.span(config.tracer, f"{telemetry.EXECUTE_TOOL} {call.tool_name}", attributes) as span:
        if config.trace_content and span.live:
            span.set("gen_ai.tool.call.arguments", telemetry.content(masked(call.input)))
        record, output = await _run_tool(
            config, call, emit=emit, run_id=run_id, step_number=step_number, messages=messages
        )
        span.set("stepline.tool.error", record.error_text is not None)
        if record.error_text is not None:
            span.error("tool_error")
        if config.trace_content and span.live:
            result = record.output if record.error_text is None else record.error_text
            span.set("gen_ai.tool.call.result", telemetry.content(masked(result)))
        return record, output


async def _run_tool(
    config: LoopConfig, call: ToolCallRecord, *, emit: Emit, run_id: str, step_number: int, messages: list[Any]
) -> tuple[ToolResultRecord, ToolResultOutput | None]:
    tool = config.tool(call.tool_name)
    common: dict[str, Any] = {
        "tool_call_id": call.tool_call_id,
        "tool_name": call.tool_name,
        "input": call.input,
        "dynamic": call.dynamic,
    }
    if tool is None or tool.execute is None:
        # Approved while the run waited, then the tool left the agent (a redeploy): the model reads
        # why, the run goes on (never a stuck or failed run).
        gone = NoSuchToolError(call.tool_name, sorted(t.name for t in config.tools if not t.client_side))
        if config.tool_guard is not None and (await config.tool_guard.before(call, step_number)).action == "run":
            await config.tool_guard.after(call, None, error_message(gone))  # its record ends as this error
        await emit(sp.ToolError(error=gone, **common))
        return ToolResultRecord(
            tool_call_id=call.tool_call_id, tool_name=call.tool_name, error_text=error_message(gone)
        ), None
    started = config.clock()
    output: Any = None
    error: BaseException | None = None
    try:
        await notify(
            config.callbacks.on_tool_execution_start,
            ToolExecutionStartEvent(run_id, step_number, call.tool_call_id, call.tool_name, call.input),
        )
        argument = tool.validate_input(call.input)
        decision = await config.tool_guard.before(call, step_number) if config.tool_guard is not None else None
        if decision is not None and decision.action != "run":
            return await _guarded_outcome(config, call, decision, emit=emit, common=common)
        context = ToolContext(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            run_id=run_id,
            messages=messages,
            tools_context=config.tools_context,
            runtime_context=config.runtime_context,
        )
        timeout = config.timeouts.for_tool(call.tool_name)
        try:
            async with asyncio.timeout(timeout):
                async for value, preliminary in tool.run(argument, context):
                    if preliminary:
                        await emit(sp.ToolResult(output=value, preliminary=True, **common))
                    else:
                        output = value
        except TimeoutError:
            raise ToolTimeoutError(f"tool {call.tool_name} timed out after {timeout} s") from None
    except Exception as caught:  # a tool's failure is the model's to read, not the run's
        error = caught
    if config.tool_guard is not None:
        # Durable first: the outcome is recorded before anyone sees it, so a retry reuses it.
        await config.tool_guard.after(call, output if error is None else None, error_message(error) if error else None)
    await notify(
        config.callbacks.on_tool_execution_end,
        ToolExecutionEndEvent(
            run_id, step_number, call.tool_call_id, call.tool_name, call.input, output, error, config.clock() - started
        ),
    )
    if error is not None:
        await emit(sp.ToolError(error=error, **common))
        return ToolResultRecord(
            tool_call_id=call.tool_call_id, tool_name=call.tool_name, error_text=error_message(error)
        ), None
    await emit(sp.ToolResult(output=output, **common))
    record = ToolResultRecord(tool_call_id=call.tool_call_id, tool_name=call.tool_name, output=output)
    custom = (
        model_output(output, tool.to_model_output, tool_call_id=call.tool_call_id, input=call.input)
        if tool.to_model_output
        else None
    )
    return record, custom


async def _guarded_outcome(
    config: LoopConfig, call: ToolCallRecord, decision: GuardDecision, *, emit: Emit, common: dict[str, Any]
) -> tuple[ToolResultRecord, ToolResultOutput | None]:
    """A tool that does not run here: an earlier attempt's outcome, or an interruption."""
    if decision.action == "refuse":
        text = error_message(
            ToolInterruptedError(f"tool {call.tool_name} was interrupted after it started; it is not run again")
        )
    else:
        text = decision.error_text
    if text is not None:
        await emit(sp.ToolError(error=text, **common))
        return ToolResultRecord(tool_call_id=call.tool_call_id, tool_name=call.tool_name, error_text=text), None
    await emit(sp.ToolResult(output=decision.output, **common))
    return ToolResultRecord(tool_call_id=call.tool_call_id, tool_name=call.tool_name, output=decision.output), None
