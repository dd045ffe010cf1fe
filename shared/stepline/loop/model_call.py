"""One model call of a step: provider parts in, TextStreamParts out, retried at a safe boundary.

The call's parts are mapped to the loop's TextStreamParts as they arrive (`start-step` on the
first real part, as `streamText` does), tool calls are parsed and validated (through
`repair_tool_call` when that is configured), and approval parts are emitted right after the call
they belong to. The tools themselves run after the call (`tool_execution`).

Retry (the rule is `retry.may_retry`): a transient failure (429, 5xx,
overloaded, timeout, dropped connection, or one of these as an in-stream error event) is retried
only while nothing visible has been streamed in this step; the prompt already carries the
completed steps' tool calls and results, so completed tools never run again. Each retry is
recorded (`data-retry` part and `LoopState.retries`, numbered across the run) and waits with
exponential backoff and jitter, or as long as the provider's `retry-after` asks. After visible
output, a failure ends the step with the partial result kept (`StepFailure.retryable` is False).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from ..llm.base import LanguageModel, ModelCallOptions
from ..llm.errors import ModelCallError
from ..protocol import stream_parts as sp
from ..protocol.metadata import RetryRecord
from . import telemetry
from .call_parts import CallParts, Emit, ModelCallResult, OnToolCall
from .callbacks import ModelCallEndEvent, ModelCallStartEvent, notify
from .chat_attributes import chat_attributes, chat_result_attributes, content_attributes, output_messages
from .config import LoopConfig
from .request_view import request_view
from .retry import may_retry, retry_reason

__all__ = ["StepFailure", "backoff_delay", "run_model_call"]


class StepFailure(Exception):
    """The model call failed for good; the step ends with `finish_reason="error"`.

    `retryable`: the step may be run again from its start (`retry.may_retry`: transient, and
    nothing visible was streamed), which the durable path does once the in-step retries are spent.
    """

    def __init__(self, error: BaseException, *, retryable: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.retryable = retryable


def backoff_delay(config: LoopConfig, attempt: int, retry_after: float | None) -> float:
    """Exponential backoff with full jitter, or the provider's `retry-after` when it asked for longer."""
    ceiling = min(config.retry_max_delay, config.retry_base_delay * 2 ** (attempt - 1))
    delay = random.uniform(ceiling / 2, ceiling)
    return max(delay, retry_after or 0.0)


async def run_model_call(
    config: LoopConfig,
    model: LanguageModel,
    options: ModelCallOptions,
    *,
    emit: Emit,
    run_id: str,
    step_number: int,
    retries: list[RetryRecord],
    on_tool_call: OnToolCall,
    result: ModelCallResult | None = None,
) -> ModelCallResult:
    """Stream one model call into `emit`; raises `StepFailure` when it fails for good.

    `result` is filled in place when given, so the caller sees what `on_tool_call` added to it (approval
    parts) and how far the call got when it fails.
    """
    attempt = 0
    result = result if result is not None else ModelCallResult()
    if config.inspect or config.trace_content:
        result.request = request_view(model.provider, model.model_id, options)
    while True:
        started = config.clock()
        result.first_output_at = None
        await notify(
            config.callbacks.on_language_model_call_start,
            ModelCallStartEvent(
                run_id,
                step_number,
                attempt,
                model.provider,
                model.model_id,
                options.prompt,
                [t.name for t in options.tools],
            ),
        )
        call = CallParts(config, emit, result, list(options.prompt), on_tool_call, model.provider)
        try:
            await _attempt(config, model, options, call, step_number, attempt)
        except (ModelCallError, TimeoutError) as error:
            retryable = may_retry(error, visible=result.visible)
            reason = retry_reason(error)
            _end_attempt(config, model, result, started, error=error, reason=reason if retryable else None)
            if not retryable or attempt >= config.max_retries:
                raise StepFailure(error, retryable=retryable) from error
            attempt += 1
            number = len(retries) + 1  # numbered across the run, so numbers only grow
            retries.append(RetryRecord(reason=reason, attempt=number, at=config.clock()))
            await emit(sp.Data(name="retry", data={"reason": reason, "attempt": number}))
            await config.sleep(backoff_delay(config, attempt, getattr(error, "retry_after", None)))
            continue
        _end_attempt(config, model, result, started)
        await notify(
            config.callbacks.on_language_model_call_end,
            ModelCallEndEvent(
                run_id, step_number, result.finish_reason, result.usage, result.response_id, config.clock() - started
            ),
        )
        return result


async def _attempt(
    config: LoopConfig, model: LanguageModel, options: ModelCallOptions, call: CallParts, step_number: int, attempt: int
) -> None:
    """One attempt in its `chat {model}` span (kind CLIENT)."""
    result = call.result
    attributes = {
        **chat_attributes(model.provider, model.model_id, options),
        "stepline.step_number": step_number,
        "stepline.attempt": attempt,
    }
    with telemetry.span(config.tracer, f"{telemetry.CHAT} {model.model_id}", attributes, kind="client") as span:
        if config.trace_content and span.live and result.request is not None:
            span.update(content_attributes(result.request))
        await _stream(config, model, options, call)
        span.update(chat_result_attributes(result))
        if config.trace_content and span.live:
            span.set("gen_ai.output.messages", telemetry.content(output_messages(result)))


def _end_attempt(
    config: LoopConfig,
    model: LanguageModel,
    result: ModelCallResult,
    started: int,
    *,
    error: BaseException | None = None,
    reason: str | None = None,
) -> None:
    """Record one attempt's timings (for the inspector) and its GenAI metrics."""
    ended = config.clock()
    entry: dict[str, Any] = {"startedAt": started, "firstOutputAt": result.first_output_at, "endedAt": ended}
    if error is not None:
        entry["error"] = getattr(error, "kind", None) or type(error).__name__
    if reason is not None:
        entry["retryReason"] = reason
    result.attempts.append(entry)
    telemetry.record_model_call(
        config.meter,
        provider=model.provider,
        model=model.model_id,
        response_model=result.model_id,
        seconds=(ended - started) / 1000,
        input_tokens=None if error is not None else result.usage.input_tokens,
        output_tokens=None if error is not None else result.usage.output_tokens,
        error_type=None if error is None else type(error).__name__,
    )


async def _stream(config: LoopConfig, model: LanguageModel, options: ModelCallOptions, call: CallParts) -> None:
    chunk_timeout = config.timeouts.chunk
    if chunk_timeout is None:
        async for part in model.stream(options):
            await call.part(part)
        return
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(chunk_timeout) as deadline:
        async for part in model.stream(options):
            await call.part(part)
            deadline.reschedule(loop.time() + chunk_timeout)
