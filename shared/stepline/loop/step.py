"""One model step: the durable unit of the loop.

`run_step(config, state, emit=…)` takes the run's configuration and its state after the previous
step, streams exactly one model call (with its safe-boundary retries) and the tools that need no
human, and returns a `StepOutcome` holding the new state and what happens next. Everything the
step streams goes to `emit`: in process that is the result stream, on AWS the run's event log.

`resume_with_decisions` and `resume_with_client_outputs` apply what a paused run was waiting for
(approval decisions, or outputs of client-side tools) before the next step.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from ..llm.base import LanguageModel, ModelCallOptions, ResponseFormat
from ..llm.errors import ModelCallError, UnsupportedCapabilityError
from ..protocol import stream_parts as sp
from ..protocol.model_messages import ModelFilePart, ModelMessage, UserModelMessage
from . import telemetry
from .approval import resolve_approval, sign_approval
from .budget import BudgetStop, admit_call
from .budget_request import effective_limits, held_back
from .call_parts import Emit, ModelCallResult
from .callbacks import StepEndEvent, StepStartEvent, notify
from .config import LoopConfig, PrepareStepResult
from .messages import StepContent, instruction_messages, prompt_messages
from .model_call import StepFailure, run_model_call
from .retry import failure_text
from .state import LoopState, PendingApproval, StepOutcome, StepRecord, ToolCallRecord, ToolResultRecord
from .step_inspection import step_inspection
from .stop import should_stop
from .tool_execution import execute_tools
from .tool_order import ordered_tools

__all__ = ["run_step"]

_EXECUTABLE_FINISH = ("stop", "tool-calls")


class _StepTools:
    """Decides, as each tool call arrives, whether it runs, waits for a human or for the client."""

    def __init__(self, config: LoopConfig, emit: Emit, result: ModelCallResult) -> None:
        self.config = config
        self.emit = emit
        self.result = result
        self.to_execute: list[ToolCallRecord] = []
        self.approvals: list[PendingApproval] = []
        self.client_calls: list[ToolCallRecord] = []
        self.outputs: list[tuple[ToolResultRecord, Any]] = []

    async def on_tool_call(self, call: ToolCallRecord, error: BaseException | None) -> None:
        if call.invalid:
            if not call.provider_executed:
                await self.emit(
                    sp.ToolError(
                        tool_call_id=call.tool_call_id,
                        tool_name=call.tool_name,
                        input=call.input,
                        error=call.error_text,
                        dynamic=True,
                    )
                )
                self.outputs.append(
                    (
                        ToolResultRecord(
                            tool_call_id=call.tool_call_id, tool_name=call.tool_name, error_text=call.error_text
                        ),
                        None,
                    )
                )
            return
        tool = self.config.tool(call.tool_name)
        if tool is None or call.provider_executed:
            return
        status, reason = await resolve_approval(self.config, call.tool_name, call.input)
        if status == "not-applicable":
            (self.client_calls if tool.client_side else self.to_execute).append(call)
            return
        approval_id = self.config.new_id("aitxt")
        signature = self._sign(approval_id, call)
        tool_call = _stream_tool_call(call)
        if status == "user-approval":
            await self.emit(
                sp.ToolApprovalRequest(approval_id=approval_id, tool_call=tool_call, reason=reason, signature=signature)
            )
            self.result.content.append(("approval-request", (approval_id, call.tool_call_id, None)))
            self.approvals.append(
                PendingApproval(
                    approval_id=approval_id,
                    tool_call=call,
                    signature=signature,
                    reason=reason,
                    requested_at=self.config.clock(),
                )
            )
            return
        await self.emit(
            sp.ToolApprovalRequest(approval_id=approval_id, tool_call=tool_call, is_automatic=True, signature=signature)
        )
        approved = status == "approved"
        await self.emit(
            sp.ToolApprovalResponse(approval_id=approval_id, tool_call=tool_call, approved=approved, reason=reason)
        )
        self.result.content.append(("approval-request", (approval_id, call.tool_call_id, True)))
        self.result.content.append(("approval-response", (approval_id, approved, reason)))
        if approved:
            (self.client_calls if tool.client_side else self.to_execute).append(call)
            return
        await self.emit(sp.ToolOutputDenied(tool_call_id=call.tool_call_id, tool_name=call.tool_name))
        denied = ToolResultRecord(
            tool_call_id=call.tool_call_id, tool_name=call.tool_name, denied=True, denial_reason=reason
        )
        self.outputs.append((denied, None))

    def _sign(self, approval_id: str, call: ToolCallRecord) -> str | None:
        if self.config.approval_secret is None:
            return None
        return sign_approval(
            self.config.approval_secret,
            approval_id=approval_id,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            input=call.input,
        )


def _stream_tool_call(call: ToolCallRecord) -> sp.ToolCall:
    return sp.ToolCall(tool_call_id=call.tool_call_id, tool_name=call.tool_name, input=call.input, dynamic=call.dynamic)


async def _prepare(config: LoopConfig, state: LoopState) -> tuple[LoopConfig, LanguageModel, list[ModelMessage]]:
    messages = [*state.messages, *state.response_messages]
    if config.prepare_step is None:
        return config, config.model, messages
    prepared = config.prepare_step(
        step_number=state.step_number,
        steps=list(state.steps),
        model=config.model,
        messages=messages,
        instructions=config.instructions,
        runtime_context=config.runtime_context,
    )
    if inspect.isawaitable(prepared):
        prepared = await prepared
    if prepared is None:
        return config, config.model, messages
    assert isinstance(prepared, PrepareStepResult)
    changes: dict[str, Any] = {}
    if prepared.instructions is not None:
        changes["instructions"] = prepared.instructions
    if prepared.active_tools is not None:
        changes["active_tools"] = list(prepared.active_tools)
    if prepared.tool_choice is not None:
        changes["tool_choice"] = prepared.tool_choice
    step_config = dataclasses.replace(config, **changes) if changes else config
    return (
        step_config,
        prepared.model or config.model,
        list(prepared.messages) if prepared.messages is not None else messages,
    )


def _check_files(model: LanguageModel, messages: list[ModelMessage]) -> None:
    for message in messages:
        if not isinstance(message, UserModelMessage):
            continue
        for part in message.content:
            if isinstance(part, ModelFilePart) and not model.capabilities.accepts(part.media_type):
                raise UnsupportedCapabilityError(
                    f"capability not supported: {model.provider}:{model.model_id} cannot take {part.media_type} files",
                    provider=model.provider,
                    model_id=model.model_id,
                )


def _call_options(config: LoopConfig, messages: list[ModelMessage]) -> ModelCallOptions:
    settings = config.settings
    response_format = None
    if config.output is not None:
        response_format = ResponseFormat(schema=config.output.model_json_schema(), name=config.output.__name__)
    elif config.output_schema is not None:
        response_format = ResponseFormat(schema=config.output_schema)
    return ModelCallOptions(
        prompt=[*instruction_messages(config.instructions), *prompt_messages(messages)],
        tools=[t.definition() for t in ordered_tools(config)],
        tool_choice=config.tool_choice,
        max_output_tokens=settings.max_output_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        top_k=settings.top_k,
        presence_penalty=settings.presence_penalty,
        frequency_penalty=settings.frequency_penalty,
        stop_sequences=settings.stop_sequences,
        seed=settings.seed,
        reasoning=settings.reasoning,
        response_format=response_format,
        provider_options=dict(config.provider_options),
        headers=dict(config.headers),
        include_raw_chunks=config.include.raw_chunks,
    )


def _content(
    result: ModelCallResult, tools: _StepTools, extra_outputs: list[tuple[ToolResultRecord, Any]]
) -> StepContent:
    content = StepContent()
    for kind, value in result.content:
        if kind in ("text", "reasoning"):
            text, metadata = value
            (content.add_text if kind == "text" else content.add_reasoning)(text, metadata)
        elif kind == "tool-call":
            content.add_tool_call(value)
        elif kind == "provider-result":
            content.add_provider_result(*value)
        elif kind == "approval-request":
            approval_id, tool_call_id, automatic = value
            content.add_approval_request(approval_id, tool_call_id, is_automatic=automatic)
        elif kind == "approval-response":
            content.add_approval_response(*value)
    for record, output in [*tools.outputs, *extra_outputs]:
        content.add_result(record, output)
    return content


async def run_step(config: LoopConfig, state: LoopState, *, emit: Emit) -> StepOutcome:
    """Run the next step of `state`; never raises for a model or tool failure (the outcome says)."""
    attributes = {
        "stepline.run_id": state.run_id,
        "stepline.step_number": state.step_number,
        "gen_ai.agent.name": config.agent_name,
    }
    with telemetry.span(config.tracer, telemetry.STEP, attributes) as span:
        outcome = await _run_step(config, state, emit=emit)
        span.update(
            {
                "stepline.outcome": outcome.kind,
                "stepline.finish_reason": outcome.finish_reason,
                "stepline.error_code": outcome.error_code,
            }
        )
        if outcome.kind == "failed":
            span.error(outcome.error_code or "step_failed")
        return outcome


async def _run_step(config: LoopConfig, state: LoopState, *, emit: Emit) -> StepOutcome:
    started = config.clock()
    step_config, model, messages = await _prepare(config, state)
    step_number = state.step_number
    await notify(
        config.callbacks.on_step_start,
        StepStartEvent(state.run_id, step_number, model.provider, model.model_id, messages),
    )
    state = state.model_copy(deep=False)
    retries = list(state.retries)
    result = ModelCallResult()
    tools = _StepTools(step_config, emit, result)
    try:
        _check_files(model, messages)
        options = _call_options(step_config, messages)
        limits = effective_limits(step_config.limits, state)
        admission = admit_call(limits, step_config.budget_gate, step_config.prices, state, model, options)
        if isinstance(admission, BudgetStop):
            return await held_back(config, state, admission, emit=emit)
        try:
            result = await run_model_call(
                step_config,
                model,
                options,
                emit=emit,
                run_id=state.run_id,
                step_number=step_number,
                retries=retries,
                on_tool_call=tools.on_tool_call,
                result=result,
            )
        finally:  # priced, and counted instead of its worst case (also what a failed call reported)
            result.usage = admission.settle(result.usage)
    except (StepFailure, UnsupportedCapabilityError) as failure:
        failed = await _failed(config, state, emit, failure, result, retries)
        return dataclasses.replace(failed, inspection=step_inspection(config, result, started))
    executed: list[tuple[ToolResultRecord, Any]] = []
    if result.finish_reason in _EXECUTABLE_FINISH and result.stream_error is None and tools.to_execute:
        executed = await execute_tools(
            step_config, tools.to_execute, emit=emit, run_id=state.run_id, step_number=step_number, messages=messages
        )
    if result.step_started:
        await emit(
            sp.FinishStep(
                finish_reason=result.finish_reason,
                raw_finish_reason=result.raw_finish_reason,
                usage=_usage(result),
                provider_metadata=result.provider_metadata,
            )
        )
    content = _content(result, tools, executed)
    record = _record(step_number, result, content, [r for r, _ in [*tools.outputs, *executed]])
    include = config.include
    if include.request_messages or include.request_body:
        record = record.model_copy(
            update={
                "request_messages": options.prompt if include.request_messages else None,
                "request_body": result.request_body if include.request_body else None,
            }
        )
    state = state.model_copy(
        update={
            "response_messages": [*state.response_messages, *record.response_messages],
            "steps": [*state.steps, record],
            "usage": state.usage.plus(result.usage),
            "retries": retries,
            "pending_approvals": tools.approvals,
            "pending_client_calls": tools.client_calls,
        }
    )
    await notify(config.callbacks.on_step_end, StepEndEvent(state.run_id, record))
    outcome = await _next(config, state, result, record)
    return dataclasses.replace(outcome, inspection=step_inspection(config, result, started))


def _usage(result: ModelCallResult) -> sp.LanguageModelUsage:
    u = result.usage
    return sp.LanguageModelUsage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        reasoning_tokens=u.reasoning_tokens,
        cached_input_tokens=u.cached_input_tokens,
        cache_write_tokens=u.cache_write_tokens,
    )


def _record(
    step_number: int, result: ModelCallResult, content: StepContent, results: list[ToolResultRecord]
) -> StepRecord:
    texts = [v[0] for k, v in result.content if k == "text"]
    reasoning = [v[0] for k, v in result.content if k == "reasoning"]
    return StepRecord(
        step_number=step_number,
        finish_reason=result.finish_reason,
        raw_finish_reason=result.raw_finish_reason,
        text="".join(texts),
        reasoning_text="".join(reasoning) if reasoning else None,
        tool_calls=result.tool_calls,
        tool_results=results,
        usage=result.usage,
        warnings=result.warnings,
        response_id=result.response_id,
        model_id=result.model_id,
        provider_metadata=result.provider_metadata,
        response_messages=content.messages(),
    )


async def _next(config: LoopConfig, state: LoopState, result: ModelCallResult, record: StepRecord) -> StepOutcome:
    if result.stream_error is not None:
        # An error the provider reported inside the stream: the step ended normally (finish follows).
        return StepOutcome(
            "failed",
            state,
            finish_reason="error",
            error_text=failure_text(result.stream_error),
            error_code="stream_error",
        )
    if state.pending_approvals:
        return StepOutcome("await-approval", state, finish_reason=result.finish_reason)
    if state.pending_client_calls:
        return StepOutcome("await-client", state, finish_reason=result.finish_reason)
    client_calls = [c for c in record.tool_calls if not c.provider_executed]
    answered = {r.tool_call_id for r in record.tool_results}
    all_answered = bool(client_calls) and all(c.tool_call_id in answered for c in client_calls)
    if all_answered and not await should_stop(config.stop_when, state.steps[state.segment_start :]):
        return StepOutcome("continue", state, finish_reason=result.finish_reason)
    return StepOutcome("finished", state, finish_reason=result.finish_reason)


async def _failed(
    config: LoopConfig,
    state: LoopState,
    emit: Emit,
    failure: StepFailure | UnsupportedCapabilityError,
    result: ModelCallResult,
    retries: list[Any],
) -> StepOutcome:
    error = failure.error if isinstance(failure, StepFailure) else failure
    await emit(sp.StreamError(error=error))
    if result.step_started:
        await emit(sp.FinishStep(finish_reason="error", usage=_usage(result)))
    code = (
        error.kind
        if isinstance(error, ModelCallError)
        else ("unsupported_capability" if isinstance(error, UnsupportedCapabilityError) else None)
    )
    retryable = isinstance(failure, StepFailure) and failure.retryable  # `retry.may_retry`, decided once
    failed = state.model_copy(update={"retries": retries})
    text = failure_text(error)
    return StepOutcome("failed", failed, finish_reason="error", error_text=text, error_code=code, retryable=retryable)
